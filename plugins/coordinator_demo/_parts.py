"""The parts of ``coordinator-api demo`` that run member processes: a custom Coordinator, a
leader election, a consumer group and a streams group (the Spark part is in _spark.py).

Each part starts its members (coordinator_demo/_members.py), narrates what they report as
it happens, puts the group through a change or two, waits until the group has settled after
each, prints the time it took, and checks the plugin's promise from the members' own reports.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator_demo._fleet import Context, CoordinatorEvent, DemoError, Member, seconds

# --- 1. a custom Coordinator --------------------------------------------------------------------

GROUP = "demo"
SESSION_TIMEOUT_MS = 3000


def run_coordinator(ctx: Context, members: int, partitions: int) -> bool:
    """Members that own a share of the partitions: SIGKILL one, pause one past its session and
    resume it, stop one gracefully; after each change every partition must be owned by exactly
    one live member, and no partition may be worked on by two members at once."""
    fleet, say = ctx.fleet, ctx.narrator
    owned: dict[str, list[int]] = {}
    in_group: dict[str, bool] = {}
    wall_start = time.time()

    changed = [0.0]  # when ownership last changed

    def on_report(member: Member, report: dict[str, Any]) -> None:
        event = report["event"]
        if event == "assigned":
            owned[member.name] = list(report["partitions"])
        elif event in ("revoked", "lost"):
            owned[member.name] = []
        if event in ("assigned", "revoked", "lost"):
            changed[0] = report["t"]
        if event == "lost":
            say.event(
                f"{member.name} reports its partitions {report['partitions']} lost and stops working "
                "on them (its lease ran out while it was paused)",
                at=report["t"],
            )

    def on_event(item: CoordinatorEvent) -> None:
        e = item.event
        if e.group_id == GROUP and e.kind == "expired":
            say.event(f"the coordinator expires {fleet.name_of(e.member_id)}'s session", at=item.t)
        elif e.group_id == GROUP and e.kind == "left":
            say.event(f"{fleet.name_of(e.member_id)} leaves the group (LeaveGroup)", at=item.t)

    fleet.on_report, fleet.on_coordinator_event = on_report, on_event
    names = [f"member-{i}" for i in range(1, members + 1)]
    group = {
        n: fleet.start("partitions", n, group=GROUP, partitions=partitions, session_ms=SESSION_TIMEOUT_MS)
        for n in names
    }
    for n in names:
        owned[n], in_group[n] = [], True
    say.event(f"started {', '.join(names)} (session {SESSION_TIMEOUT_MS / 1000:.0f} s)")
    victim, sleeper, leaver = names[-1], names[-2], names[-3]

    def kill() -> None:
        fleet.kill(group[victim])
        in_group[victim], owned[victim] = False, []
        say.event(f"SIGKILL {victim}")

    def pause() -> None:
        fleet.pause(group[sleeper])
        in_group[sleeper] = False  # for the group, until it is back
        say.event(f"SIGSTOP {sleeper}; it stays paused until the coordinator has expired it")

    def resume() -> None:
        fleet.resume(group[sleeper])
        in_group[sleeper] = True
        say.event(f"SIGCONT {sleeper}")

    def leave() -> None:
        fleet.terminate(group[leaver])
        in_group[leaver], owned[leaver] = False, []
        say.event(f"SIGTERM {leaver}: it closes and leaves the group")

    def settled(alive: int) -> Callable[[], bool]:
        def check() -> bool:
            live = [n for n in names if in_group[n]]
            mine = sorted(p for n in live for p in owned[n])
            return len(live) == alive and mine == list(range(partitions)) and all(owned[n] for n in live)

        return check

    session = f"session {SESSION_TIMEOUT_MS / 1000:.0f} s"
    steps: list[tuple[str, str, Callable[[], None] | None, int]] = [
        ("all members joined", "all members joined", None, members),
        (
            f"{victim} killed with SIGKILL (its session expires)",
            f"{victim} SIGKILLed ({session})",
            kill,
            members - 1,
        ),
        (
            f"{sleeper} paused with SIGSTOP past its session",
            f"{sleeper} paused past its {session}",
            pause,
            members - 2,
        ),
        (
            f"{sleeper} resumed: it reports its partitions lost, then rejoins",
            f"{sleeper} resumed, rejoined",
            resume,
            members - 1,
        ),
        (f"{leaver} stopped gracefully (LeaveGroup)", f"{leaver} left gracefully", leave, members - 2),
    ]
    ok = True
    for title, label, action, alive in steps:
        t0 = time.monotonic()
        if action is not None:
            action()
        if action is resume:
            ok = fleet.wait(lambda: bool(group[sleeper].events("lost")), 60, f"{sleeper} to notice") and ok
        done = fleet.wait(settled(alive), 60, "waiting for every partition to have one live owner")
        took = _since(changed[0], t0)
        say.outcome(f"{title}: {'settled' if done else 'DID NOT SETTLE'} in {took:.1f} s")
        for n in names:
            state = "paused" if group[n].paused else "running" if in_group[n] else "gone"
            say.detail(f"{n:<10} {state:<8} partitions {owned[n]}")
        ctx.timing("coordinator", f"{label}: settled after", seconds(took))
        ok = ok and done
    fleet.pause_for(1.0, "collecting the last reports")
    say.event("end of the part: the members still running close")
    fleet.stop(list(group.values()))
    say.outcome(f"coordinator membership log of group {GROUP!r}")
    for _, created, event in ctx.recorder.logged():
        if event.group_id != GROUP:
            continue
        who = f" member={event.member_id}" if event.member_id else ""
        when = f"+{created - wall_start:6.2f}s"
        say.detail(f"{when} {event.kind:<10} generation={event.generation_id}{who} {event.detail}")
    problems = _worked_overlaps(list(group.values()))
    worked = sum(1 for m in group.values() for r in m.reports if r["event"] == "worked")
    say.outcome(
        f"{worked} units of work recorded; partitions worked on by two members at once: {len(problems)}"
    )
    for problem in problems:
        say.detail(problem)
    say.verdict(ok, "after each change every partition was owned by exactly one live member")
    say.verdict(not problems, "no partition was worked on by two members at once")
    ctx.timing("coordinator", "units of work recorded (0.1 s rounds)", str(worked))
    return ok and not problems


def _since(last: float, t0: float) -> float:
    """From ``t0`` to the report that settled the group (``last``), or to now if that report
    came before ``t0`` (the action itself settled it)."""
    return max(0.0, (last if last > t0 else time.monotonic()) - t0)


def _worked_overlaps(members: list[Member]) -> list[str]:
    """Partitions two members worked on at the same time, from their ``worked`` reports."""
    spans: dict[int, list[tuple[float, float, str]]] = {}
    for m in members:
        first_last: dict[tuple[int, int], list[float]] = {}
        for r in m.reports:
            if r["event"] == "worked":
                for p in r["partitions"]:
                    span = first_last.setdefault((p, r["generation"]), [r["t"], r["t"]])
                    span[1] = r["t"]
        for (p, _generation), (start, end) in first_last.items():
            spans.setdefault(p, []).append((start, end, m.name))
    problems = []
    for p, intervals in sorted(spans.items()):
        intervals.sort()
        for (_s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(intervals):
            if m1 != m2 and s2 <= e1:
                problems.append(f"partition {p}: {m1} and {m2}")
    return problems


def _overlaps(spans: dict[str, list[tuple[float, float, str]]]) -> list[str]:
    """Things (partitions, tasks) held by two members at the same moment."""
    problems = []
    for thing, intervals in sorted(spans.items()):
        intervals.sort()
        for (_s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(intervals):
            if m1 != m2 and s2 < e1:
                problems.append(f"{thing}: {m1} until {e1:.3f}, {m2} from {s2:.3f}")
    return problems


def _ownership(
    members: list[Member], holds: Callable[[dict[str, Any]], list[Any] | None]
) -> dict[str, list[tuple[float, float, str]]]:
    """For each thing, the (start, end, member) intervals in which a member held it: ``holds``
    says what a report says the member holds from then on (None: the report says nothing)."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for m in members:
        since: dict[str, float] = {}
        for report in m.reports:
            held = holds(report)
            if held is None:
                continue
            now = {str(x) for x in held}
            for thing in now - since.keys():
                since[thing] = report["t"]
            for thing in set(since) - now:
                spans.setdefault(thing, []).append((since.pop(thing), report["t"], m.name))
        for thing, start in since.items():
            spans.setdefault(thing, []).append((start, m.ended_at, m.name))
    return spans


# --- 2. leader election -------------------------------------------------------------------------

LEADER_GROUP = "demo-leader"
LEADER_SESSION_MS = 1500


@dataclass(frozen=True)
class _Term:
    name: str
    epoch: int
    start: float
    end: float


def run_leader(ctx: Context) -> bool:
    """Three candidates; the leader SIGKILLed (crash failover once its session expires), then
    the next one stopped gracefully (immediate failover). Exactly one leader at a time, epochs
    growing."""
    fleet, say = ctx.fleet, ctx.narrator

    def on_report(member: Member, report: dict[str, Any]) -> None:
        if report["event"] == "elected":
            say.event(f"{member.name} is elected: it leads with epoch {report['epoch']}", at=report["t"])
        elif report["event"] == "revoked":
            say.event(f"{member.name} steps down", at=report["t"])

    def on_event(item: CoordinatorEvent) -> None:
        e = item.event
        if e.group_id == LEADER_GROUP and e.kind == "expired":
            say.event(f"the coordinator expires {fleet.name_of(e.member_id)}'s session", at=item.t)
        elif e.group_id == LEADER_GROUP and e.kind == "left":
            say.event(f"{fleet.name_of(e.member_id)} leaves the group (LeaveGroup)", at=item.t)

    fleet.on_report, fleet.on_coordinator_event = on_report, on_event
    names = ("l1", "l2", "l3")
    started = time.monotonic()
    candidates = [fleet.start("leader", n, group=LEADER_GROUP, session_ms=LEADER_SESSION_MS) for n in names]
    say.event(f"started candidates {', '.join(names)} (session {LEADER_SESSION_MS / 1000:.1f} s)")

    def live() -> list[Member]:
        return [m for m in candidates if not m.ended_by_demo]

    def agreed() -> tuple[Member, int] | None:
        """The leader every live candidate names, with its epoch, once it leads."""
        seen = set()
        for m in live():
            known = m.events("leader")
            if not known:
                return None
            seen.add((known[-1]["leader"], known[-1]["epoch"]))
        if len(seen) != 1:
            return None
        ((name, epoch),) = seen
        leader = next((m for m in live() if m.name == name), None)
        if leader is None:
            return None
        terms = [r for r in leader.reports if r["event"] in ("elected", "revoked")]
        return (leader, epoch) if terms and terms[-1]["event"] == "elected" else None

    def wait_agreed(what: str) -> tuple[Member, int]:
        if not fleet.wait(lambda: agreed() is not None, 30, what):
            raise DemoError(f"the candidates did not agree on a leader within 30 s ({what})")
        found = agreed()
        assert found is not None
        return found

    def successor(old: Member, since: float) -> tuple[Member, dict[str, Any]]:
        def found() -> bool:
            return any(m.events("elected", since) for m in live() if m is not old)

        if not fleet.wait(found, 30, "waiting for a successor"):
            raise DemoError(f"no successor was elected within 30 s after {old.name} went")
        return min(
            (
                (m, m.events("elected", since)[0])
                for m in live()
                if m is not old and m.events("elected", since)
            ),
            key=lambda pair: float(pair[1]["t"]),
        )

    leader, epoch = wait_agreed("waiting for the first election")
    first = leader.events("elected")[-1]["t"] - started
    followers = [m.name for m in live() if m is not leader]
    say.outcome(f"{leader.name} leads with epoch {epoch}; {' and '.join(followers)} follow it")
    ctx.timing("leader", "first election, from the candidates' start", seconds(first))

    t_kill = time.monotonic()
    fleet.kill(leader)
    say.event(
        f"SIGKILL {leader.name}, the leader: it cannot say goodbye, so a successor is elected once the "
        "coordinator has expired its session"
    )
    new, elected = successor(leader, t_kill)
    crash = elected["t"] - t_kill
    say.outcome(
        f"crash failover: {new.name} leads with epoch {elected['epoch']}, {seconds(crash)} after the SIGKILL "
        f"(session {LEADER_SESSION_MS / 1000:.1f} s)"
    )
    ctx.timing(
        "leader", f"crash failover (SIGKILL; session {LEADER_SESSION_MS / 1000:.1f} s)", seconds(crash)
    )
    leader, epoch = wait_agreed("waiting for the survivors to agree")

    t_term = time.monotonic()
    fleet.terminate(leader)
    say.event(f"SIGTERM {leader.name}, the leader: it steps down and leaves the group")
    new, elected = successor(leader, t_term)
    graceful = elected["t"] - t_term
    say.outcome(
        f"graceful failover: {new.name} leads with epoch {elected['epoch']}, "
        f"{seconds(graceful)} after the SIGTERM"
    )
    ctx.timing("leader", "graceful failover (SIGTERM: step down, LeaveGroup)", seconds(graceful))
    wait_agreed("waiting for the last candidate")
    say.event("end of the part: the members still running close")
    fleet.stop(candidates)

    terms = sorted(_terms(candidates), key=lambda term: term.start)
    overlapping = [
        f"{a.name} (epoch {a.epoch}) and {b.name} (epoch {b.epoch})"
        for a, b in itertools.pairwise(terms)
        if b.start < a.end
    ]
    epochs = [term.epoch for term in terms]
    growing = all(b > a for a, b in itertools.pairwise(epochs))
    say.detail("terms: " + "; ".join(f"{t.name} epoch {t.epoch}" for t in terms))
    say.verdict(not overlapping, f"exactly one leader at a time ({len(terms)} terms, none overlapping)")
    for problem in overlapping:
        say.detail(f"overlap: {problem}")
    say.verdict(growing, f"epochs only grow: {' -> '.join(map(str, epochs))}")
    return not overlapping and growing


def _terms(candidates: list[Member]) -> list[_Term]:
    """Each candidate's terms, from its ``elected`` to its ``revoked`` (or its SIGKILL)."""
    terms = []
    for m in candidates:
        opened: tuple[float, int] | None = None
        for r in m.reports:
            if r["event"] == "elected":
                opened = (r["t"], r["epoch"])
            elif r["event"] == "revoked" and opened is not None:
                terms.append(_Term(m.name, opened[1], opened[0], r["t"]))
                opened = None
        if opened is not None:
            terms.append(_Term(m.name, opened[1], opened[0], m.ended_at))
    return terms


# --- 3. a consumer group (KIP-848) --------------------------------------------------------------

CONSUMER_GROUP = "demo-consumers"
CONSUMER_TOPIC = "demo-events"
CONSUMER_PARTITIONS = 12
CONSUMER_SESSION_MS = 3000  # the coordinator's consumer_group_session_timeout_ms


def run_consumer(ctx: Context) -> bool:
    """Members of Kafka 4's incremental consumer protocol come and go; a change moves only the
    partitions it has to, and the members keep the others without a pause."""
    fleet, say = ctx.fleet, ctx.narrator
    owned: dict[str, set[int]] = {}

    changed = [0.0]  # when ownership last changed

    def on_report(member: Member, report: dict[str, Any]) -> None:
        event, parts = report["event"], report.get("partitions", [])
        mine = owned.setdefault(member.name, set())
        if event in ("assigned", "revoked", "lost"):
            changed[0] = report["t"]
        if event == "assigned":
            mine |= set(parts)
            say.event(f"{member.name} is assigned {parts}, owns {sorted(mine)}", at=report["t"])
        elif event == "revoked":
            mine -= set(parts)
            say.event(f"{member.name} gives up {parts}, keeps {sorted(mine)}", at=report["t"])
        elif event == "lost":
            mine.clear()
            say.event(f"{member.name} lost {parts}", at=report["t"])
        elif event == "error":
            say.event(f"{member.name}: {report['error']}: {report['message']}", at=report["t"])

    def on_event(item: CoordinatorEvent) -> None:
        e = item.event
        if e.group_id == CONSUMER_GROUP and e.kind == "expired":
            say.event(f"the coordinator expires {fleet.name_of(e.member_id)}'s session", at=item.t)

    fleet.on_report, fleet.on_coordinator_event = on_report, on_event
    members: dict[str, Member] = {}

    def start(*names: str) -> Callable[[], None]:
        def action() -> None:
            for n in names:
                members[n] = fleet.start(
                    "consumer", n, group=CONSUMER_GROUP, topic=CONSUMER_TOPIC, session_ms=CONSUMER_SESSION_MS
                )
                owned[n] = set()
            say.event(f"started {', '.join(names)}")

        return action

    def leave(name: str) -> Callable[[], None]:
        def action() -> None:
            fleet.terminate(members[name])
            say.event(f"SIGTERM {name}: it gives its partitions back and leaves")

        return action

    def kill(name: str) -> Callable[[], None]:
        def action() -> None:
            fleet.kill(members[name])
            owned[name] = set()
            say.event(
                f"SIGKILL {name}: its partitions wait until its "
                f"{CONSUMER_SESSION_MS / 1000:.0f} s session runs out"
            )

        return action

    def live() -> list[str]:
        return [n for n, m in members.items() if not m.ended_by_demo]

    def settled() -> bool:
        names = live()
        counts = [len(owned[n]) for n in names]
        held = sorted(p for n in names for p in owned[n])
        return (
            bool(names)
            and held == list(range(CONSUMER_PARTITIONS))
            and min(counts) >= 1
            and max(counts) - min(counts) <= 1
        )

    def owners() -> dict[int, str]:
        return {p: n for n in live() for p in owned[n]}

    steps = [
        ("c1, c2 and c3 joined", start("c1", "c2", "c3")),
        ("c4 joined", start("c4")),
        ("c2 left gracefully", leave("c2")),
        (f"c3 SIGKILLed (session {CONSUMER_SESSION_MS / 1000:.0f} s)", kill("c3")),
    ]
    ok = True
    for index, (title, action) in enumerate(steps):
        before = owners()
        t0 = time.monotonic()
        action()
        if not fleet.wait(settled, 30, "waiting for a balanced assignment, every partition owned once"):
            raise DemoError(f"{title}: the group did not settle within 30 s")
        took = _since(changed[0], t0)
        after = owners()
        ctx.timing("consumer", f"{title}: settled after", seconds(took))
        if index == 0:
            say.outcome(f"{title}: settled in {seconds(took)}: " + _shares(after))
            continue
        moved = sorted(p for p in after if before.get(p) != after[p])
        kept = set(after) - set(moved)
        # The partitions that stayed were never revoked or reassigned during the change.
        touched = sorted(
            {
                p
                for m in members.values()
                for r in m.reports
                if t0 <= r["t"] and r["event"] in ("assigned", "revoked", "lost")
                for p in r["partitions"]
                if p in kept
            }
        )
        fewest = CONSUMER_PARTITIONS - sum(
            min(sum(1 for o in before.values() if o == n), sum(1 for o in after.values() if o == n))
            for n in live()
        )
        say.outcome(
            f"{title}: settled in {seconds(took)}: {len(kept)} of {CONSUMER_PARTITIONS} partitions stayed "
            f"with their members, {len(moved)} moved {moved} (the fewest a balanced assignment allows: "
            f"{fewest}); " + _shares(after)
        )
        ctx.timing("consumer", f"{title}: partitions moved / kept", f"{len(moved)} / {len(kept)}")
        if touched:
            say.verdict(False, f"partitions {touched} stayed with their members but were revoked meanwhile")
            ok = False
    say.event("end of the part: the members still running close")
    fleet.stop(list(members.values()))
    problems = _overlaps(_consumer_spans(list(members.values())))
    say.verdict(ok, "members kept the partitions that did not move, with no revocation and no pause")
    say.verdict(not problems, "no partition was owned by two members at once")
    for problem in problems:
        say.detail(problem)
    return ok and not problems


def _shares(owner_of: dict[int, str]) -> str:
    by_member: dict[str, list[int]] = {}
    for p, n in sorted(owner_of.items()):
        by_member.setdefault(n, []).append(p)
    return ", ".join(f"{n} {ps}" for n, ps in sorted(by_member.items()))


def _consumer_spans(members: list[Member]) -> dict[str, list[tuple[float, float, str]]]:
    """Ownership intervals of each partition, from the members' callbacks."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for m in members:
        since: dict[int, float] = {}
        for r in m.reports:
            if r["event"] == "assigned":
                for p in r["partitions"]:
                    since.setdefault(p, r["t"])
            elif r["event"] in ("revoked", "lost"):
                for p in r["partitions"]:
                    if p in since:
                        spans.setdefault(str(p), []).append((since.pop(p), r["t"], m.name))
        for p, start in since.items():
            spans.setdefault(str(p), []).append((start, m.ended_at, m.name))
    return spans


# --- 4. a streams group, scaling out with warmups -----------------------------------------------

STREAMS_GROUP = "demo-streams"
STREAMS_OPTIONS: dict[str, Any] = {
    "group": STREAMS_GROUP,
    "subtopologies": 2,
    "partitions": 6,
    "records": 1_500,
    "restore_rate": 1_000,
    "acceptable_lag": 50,
    "max_warmups": 2,
    "probe_ms": 1_500,
    "session_ms": 3_000,
}


def run_streams(ctx: Context) -> bool:
    """Two instances run 12 stateful tasks; two more join without state. They restore copies
    (warmups) first and take tasks over only once caught up, until the group is balanced."""
    fleet, say = ctx.fleet, ctx.narrator
    shown: dict[str, tuple[list[str], list[str]]] = {}
    changed = [0.0]  # when the tasks some member runs last changed
    running: dict[str, set[str]] = {}
    tasks = STREAMS_OPTIONS["subtopologies"] * STREAMS_OPTIONS["partitions"]
    restore_s = STREAMS_OPTIONS["records"] / STREAMS_OPTIONS["restore_rate"]

    def on_report(member: Member, report: dict[str, Any]) -> None:
        event = report["event"]
        if event == "assigned":
            now = (report["active"], report["warmup"])
            if shown.get(member.name) != now:
                shown[member.name] = now
                what = f"active {' '.join(now[0]) or '-'}" + (
                    f"; warmup {' '.join(now[1])}" if now[1] else ""
                )
                say.event(f"{member.name} (generation {report['generation']}): {what}", at=report["t"])
        elif event == "revoked":
            say.event(f"{member.name} hands over {' '.join(report['tasks'])}", at=report["t"])
        elif event == "running":
            running[member.name] = set(report["tasks"])
            changed[0] = report["t"]
        elif event == "error":
            say.event(f"{member.name}: {report['error']}: {report['message']}", at=report["t"])

    fleet.on_report, fleet.on_coordinator_event = on_report, None
    members: dict[str, Member] = {}

    def start(name: str, restored: bool) -> None:
        members[name] = fleet.start("streams", name, restored=restored, **STREAMS_OPTIONS)
        running[name] = set()

    def balanced(names: list[str]) -> Callable[[], bool]:
        share = tasks // len(names)

        def check() -> bool:
            everything = set().union(*(running[n] for n in names))
            return len(everything) == tasks and all(len(running[n]) == share for n in names)

        return check

    start("a", True)
    start("b", True)
    say.event("started a and b: they have run for a while, their state stores are restored")
    if not fleet.wait(balanced(["a", "b"]), 30, "waiting for a and b to run 6 tasks each"):
        raise DemoError("a and b did not share the tasks within 30 s")
    say.outcome(f"a runs {len(running['a'])} tasks, b {len(running['b'])}")

    t0 = time.monotonic()
    start("c", False)
    start("d", False)
    say.event(
        f"started c and d with no local state: restoring a task's store takes {restore_s:.1f} s "
        f"({STREAMS_OPTIONS['records']:,} records at {STREAMS_OPTIONS['restore_rate']:,}/s)"
    )
    names = ["a", "b", "c", "d"]
    if not fleet.wait(balanced(names), 60, "waiting until every instance runs 3 tasks"):
        raise DemoError("the streams group was not balanced within 60 s")
    took = _since(changed[0], t0)
    fleet.pause_for(0.3, "collecting the last reports")
    group = list(members.values())
    generations = sorted({r["generation"] for m in group for r in m.events("assigned", t0)})
    say.outcome(
        f"balanced after {seconds(took)}: "
        + ", ".join(f"{n} runs {len(running[n])}" for n in names)
        + f" ({len(generations)} generations since c and d joined)"
    )
    gaps = sorted(g for g in _gaps(group, t0, t0 + took).values() if g > 0)
    say.event("end of the part: the members still running close")
    fleet.stop(group)

    firsts = {n: members[n].events("assigned")[0] for n in ("c", "d") if members[n].events("assigned")}
    warm_first = (
        len(firsts) == 2
        and all(not r["active"] for r in firsts.values())
        and any(r["warmup"] for r in firsts.values())
    )
    warmups = ", ".join(f"{n} {' '.join(r['warmup']) or '-'}" for n, r in firsts.items())
    late_lags = [
        (m.name, task, lag)
        for m in group
        for r in m.events("assigned", t0)
        for task, lag in r["added_lags"].items()
    ]
    cold = [
        (n, task, lag) for n, task, lag in late_lags if lag is None or lag > STREAMS_OPTIONS["acceptable_lag"]
    ]
    problems = _overlaps(
        _ownership(group, lambda r: r["active"] if r["event"] in ("assigned", "revoked", "lost") else None)
    )
    say.verdict(
        warm_first,
        f"c and d were first given no active task, as they were caught up on none (warmups: {warmups})",
    )
    say.verdict(
        not cold,
        f"each of the {len(late_lags)} tasks that moved arrived caught up "
        f"(lag at most {STREAMS_OPTIONS['acceptable_lag']} records)",
    )
    for n, task, lag in cold:
        say.detail(f"{task} went to {n} with lag {lag}")
    say.verdict(not problems, "no task was active on two members at once")
    for problem in problems:
        say.detail(problem)
    if gaps:
        say.detail(
            f"{len(gaps)} tasks changed hands; each stopped running for {seconds(gaps[0])} to "
            f"{seconds(gaps[-1])} (median {seconds(gaps[len(gaps) // 2])}), from its old owner's "
            f"revocation to its new owner running it; handed over cold, it would stop for its whole "
            f"restore, {restore_s:.1f} s"
        )
    ctx.timing("streams", "scale-out 2 -> 4 instances: balanced after", seconds(took))
    ctx.timing("streams", "rebalances (generations) until balanced", str(len(generations)))
    ctx.timing("streams", "longest time a moved task did not run", seconds(gaps[-1] if gaps else 0.0))
    return warm_first and not cold and not problems


def _gaps(members: list[Member], since: float, until: float) -> dict[str, float]:
    """For each task, the longest time between ``since`` and ``until`` in which it ran
    nowhere, from the members' ``running`` reports."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for m in members:
        current: dict[str, float] = {}
        for r in m.reports:
            if r["event"] != "running":
                continue
            now = set(r["tasks"])
            for task in now - current.keys():
                current[task] = r["t"]
            for task in set(current) - now:
                spans.setdefault(task, []).append((current.pop(task), r["t"]))
        for task, start in current.items():
            spans.setdefault(task, []).append((start, m.ended_at if math.isfinite(m.ended_at) else until))
    gaps = {}
    for task, intervals in spans.items():
        worst, covered = 0.0, since
        for start, end in sorted(intervals):
            if end <= since:
                continue
            if start > covered:
                worst = max(worst, min(start, until) - covered)
            covered = max(covered, end)
            if covered >= until:
                break
        gaps[task] = max(worst, until - covered)
    return gaps
