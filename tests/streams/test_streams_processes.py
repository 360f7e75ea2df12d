"""End to end: four real member processes on the embedded coordinator, one joining late; three
on the incremental protocol with standbys, one killed; three in a streams group of KIP-1071 on
Apache Kafka, one killed."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

from member_processes import MemberProcess, running_members, wait_for

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

STREAMS_MEMBER = Path(__file__).parent / "streams_member.py"
TASKS = 12
OPTIONS = {"records": 1_500, "restore_rate": 1_000, "acceptable_lag": 50, "max_warmups": 2, "probe_ms": 1_500}


def start(coordinator: EmbeddedCoordinator, name: str) -> MemberProcess:
    return MemberProcess("", coordinator.bootstrap_servers, name, script=STREAMS_MEMBER, **OPTIONS)


def running(member: MemberProcess) -> frozenset[str]:
    events = member.events("running")
    return frozenset(events[-1]["tasks"]) if events else frozenset()


def overlaps(members: list[MemberProcess]) -> list[str]:
    """Tasks two members held as active at the same moment, by their own reports."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for member in members:
        since: dict[str, float] = {}
        for report in member.reports:
            if "owned" not in report:
                continue
            owned = set(report["owned"])
            for task in owned - since.keys():
                since[task] = report["t"]
            for task in set(since) - owned:
                spans.setdefault(task, []).append((since.pop(task), report["t"], member.name))
        for task, start_t in since.items():  # until it was killed, if it was
            spans.setdefault(task, []).append((start_t, member.ended_at, member.name))
    problems = []
    for task, intervals in spans.items():
        intervals.sort()
        problems += [
            f"{task}: {a[2]} until {a[1]:.3f}, {b[2]} from {b[0]:.3f}"
            for a, b in itertools.pairwise(intervals)
            if b[0] < a[1] and a[2] != b[2]
        ]
    return problems


def timeline(members: list[MemberProcess], since: float) -> str:
    """What each member was given and gave back after ``since``, in order (docs/streams.md
    shows one)."""
    rows = []
    for member in members:
        for r in member.reports:
            if r["t"] < since or r.get("event") not in ("assigned", "revoked"):
                continue
            if r["event"] == "assigned":
                what = f"active {' '.join(r['owned']) or '-'}"
                what += f"; warmup {' '.join(r['warmup'])}" if r["warmup"] else ""
                what += f"; standby {' '.join(r['standby'])}" if r["standby"] else ""
                lags = [f"{task} {lag}" for task, lag in r["added_lags"].items() if lag is not None]
                what += f"; records behind on arrival: {', '.join(lags)}" if lags and r["standby"] else ""
                what += f" (generation {r['generation']})"
            else:
                what = f"revoked {' '.join(r['tasks'])}"
            rows.append((r["t"], f"{r['t'] - since:8.3f} s  {member.name}  {what}"))
    return "\n".join(text for _, text in sorted(rows))


def test_a_fourth_member_warms_up_before_it_takes_over(coordinator: EmbeddedCoordinator) -> None:
    members = [start(coordinator, name) for name in ("a", "b", "c")]
    with running_members(members):
        # Members that join a moment apart warm up too; wait until the three share the tasks.
        wait_for(
            lambda: [len(running(m)) for m in members] == [4, 4, 4], 20, "three members running 4 tasks each"
        )
        joined_at = time.time()
        late = start(coordinator, "d")
        members.append(late)
        wait_for(
            lambda: (
                [len(running(m)) for m in members] == [3, 3, 3, 3]
                and len(frozenset().union(*(running(m) for m in members))) == TASKS
            ),
            25,
            "four members running three tasks each",
        )
        diagnostics = "\n".join(f"{m.name}: {m.reports}\n{m.stderr_text()[-2000:]}" for m in members)
        # Every active task handed over after the join arrived caught up (it had warmed up).
        for member in members:
            for report in member.events("assigned"):
                if report["t"] > joined_at:
                    assert all(lag is not None and lag <= 50 for lag in report["added_lags"].values()), (
                        member.name,
                        report,
                    )
        assert late.events("assigned")[0]["owned"] == [], diagnostics
        assert any(r["warmup"] for r in late.events("assigned")), diagnostics
        assert overlaps(members) == [], diagnostics
        # The three old members never stopped running a task before its new owner ran it.
        handed_over = set().union(
            *(r["tasks"] for m in members[:3] for r in m.events("revoked") if r["t"] > joined_at)
        )
        assert handed_over == running(late), diagnostics
        print(f"\nstreams scale-out timeline (d joins at 0 s):\n{timeline(members, joined_at)}")


def test_incremental_standbys_take_over_a_killed_members_tasks_caught_up() -> None:
    """The incremental protocol on the embedded coordinator, one standby per task: c is
    SIGKILLed, and after its session a and b run its tasks; those that go to the member that
    kept their standby arrive caught up (its copy of the store was restored meanwhile), and
    nobody runs a task twice."""
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=500,
        consumer_group_session_timeout_ms=3000,  # the members' own session (their leases)
        consumer_group_heartbeat_interval_ms=300,
    )
    with EmbeddedCoordinator(config=config) as coordinator:
        members = [
            MemberProcess(
                "",
                coordinator.bootstrap_servers,
                name,
                script=STREAMS_MEMBER,
                **OPTIONS,
                group="streams-incremental-standbys",
                group_protocol="incremental",
                standbys=1,
            )
            for name in ("a", "b", "c")
        ]
        with running_members(members):

            def everything() -> frozenset[str]:
                return frozenset().union(*(m.owned for m in members))

            def placed() -> bool:
                standbys = sorted(t for m in members for t in standby(m))
                return [len(m.owned) for m in members] == [4] * 3 and standbys == sorted(everything())

            wait_for(placed, 20, "three members running 4 tasks each, each task with a standby elsewhere")
            time.sleep(1.5 * OPTIONS["records"] / OPTIONS["restore_rate"])  # the standbys restore
            a, b, c = members
            tasks, kept = everything(), {m.name: standby(m) for m in (a, b)}
            killed_at = time.time()
            c.kill()
            wait_for(lambda: a.owned | b.owned == tasks, 30, "a and b running c's tasks too")
            diagnostics = "\n".join(f"{m.name}: {m.reports}\n{m.stderr_text()[-2000:]}" for m in members)
            assert overlaps(members) == [], diagnostics
            arrived = [
                (member.name, task, lag)
                for member in (a, b)
                for report in member.events("assigned")
                if report["t"] > killed_at
                for task, lag in report["added_lags"].items()
            ]
            # Where a standby was kept its task arrives caught up; each of a and b has room for
            # two more tasks, so at least two of c's four go to their standbys.
            warm = [(name, task, lag) for name, task, lag in arrived if task in kept[name]]
            caught_up = OPTIONS["acceptable_lag"]
            assert all(lag is not None and lag <= caught_up for _, _, lag in warm), diagnostics
            assert len(warm) >= 2, diagnostics
            print(f"\nincremental with standbys, c killed at 0 s:\n{timeline(members, killed_at)}")


def standby(member: MemberProcess) -> frozenset[str]:
    """The standby tasks it said it keeps last."""
    assigned = member.events("assigned")
    return frozenset(assigned[-1]["standby"]) if assigned else frozenset()


def test_on_kafka_a_streams_group_of_kip_1071_outlives_a_killed_member(kafka: KafkaCluster) -> None:
    group, source = "streams-processes-kip-1071", "streams-processes-source"
    for subtopology in range(2):
        kafka.create_topic(f"{source}-{subtopology}", partitions=6)
    # The group's session is the members' own (3 s: their leases are counted from it).
    kafka.set_group_config(group, {"streams.heartbeat.interval.ms": 300, "streams.session.timeout.ms": 3000})
    members = [
        MemberProcess(
            "", kafka.bootstrap_servers, name, script=STREAMS_MEMBER, group=group, source_topics=source
        )
        for name in ("a", "b", "c")
    ]
    with running_members(members):
        wait_for(
            lambda: (
                sorted(len(m.owned) for m in members) == [4, 4, 4]
                and len(frozenset().union(*(m.owned for m in members))) == TASKS
            ),
            60,
            "three members of the streams group owning 4 tasks each",
        )
        a, b, c = members
        before = {m.name: m.owned for m in members}
        killed_at = time.time()
        c.kill()
        wait_for(
            lambda: a.owned | b.owned == frozenset(before["a"] | before["b"] | before["c"]),
            30,
            "the two others owning the killed member's tasks too",
        )
        diagnostics = "\n".join(f"{m.name}: {m.reports}\n{m.stderr_text()[-2000:]}" for m in members)
        assert len(a.owned) == len(b.owned) == 6, diagnostics
        assert overlaps(members) == [], diagnostics
        for member in (a, b):  # kept every task of its own, and gave up none
            assert before[member.name] <= member.owned, diagnostics
            assert not [r for r in member.events("revoked") if r["t"] > killed_at], diagnostics
        print(f"\nstreams group of KIP-1071 on Kafka, c killed at 0 s:\n{timeline(members, killed_at)}")
