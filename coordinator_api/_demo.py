"""The main job on one machine: an embedded coordinator and a group of real member processes.

``coordinator-api demo`` starts the embedded coordinator and member processes, each a
:class:`~coordinator_api.Coordinator` in its own interpreter that owns a share of 12 partitions
and works on them. It then puts the group through what production does to it: a member killed
with SIGKILL (its session expires), a member paused past its session and resumed (it learns it
lost its partitions before acting again, then rejoins), and a graceful leave. After each change
it waits until every partition is owned by exactly one live member, and at the end it prints
the coordinator's membership log and checks that no partition was worked on by two members at
the same time.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from coordinator_api._coordinator import Coordinator
from coordinator_api._payload import decode, encode, payload
from coordinator_api._types import JoinedMember
from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator, MembershipEvent

GROUP = "demo"
SESSION_TIMEOUT_MS = 3000


@payload(version=1)
@dataclass(frozen=True)
class _Share:
    partitions: tuple[int, ...]


class PartitionOwner(Coordinator):
    """A member that owns a share of ``partitions`` partitions, round robin by member id."""

    def __init__(self, name: str, bootstrap_servers: str, partitions: int) -> None:
        super().__init__(
            GROUP,
            bootstrap_servers,
            client_id=name,
            session_timeout_ms=SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=500,
            rebalance_timeout_ms=10_000,
        )
        self.name = name
        self.partitions = partitions
        self.owned: tuple[int, ...] = ()

    def protocol_type(self) -> str:
        return "demo-partitions"

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("round-robin", b"")]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        ids = sorted(m.member_id for m in members)
        return {
            member_id: encode(_Share(tuple(range(i, self.partitions, len(ids)))))
            for i, member_id in enumerate(ids)
        }

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        self._report("revoked", generation=generation, partitions=list(self.owned))
        self.owned = ()

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        self.owned = decode(_Share, assignment).partitions
        self._report("assigned", generation=generation, partitions=list(self.owned))

    def on_lost(self, reason: str) -> None:
        # Runs on the heartbeat thread, e.g. right after a pause: stop working at once.
        self._report("lost", partitions=list(self.owned), reason=reason)

    def _report(self, event: str, **fields: Any) -> None:
        print(json.dumps({"t": time.time(), "member": self.name, "event": event, **fields}), flush=True)


def member_main(bootstrap_servers: str, name: str, partitions: int) -> None:
    """One member process: join, then work on the owned partitions while the lease holds."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    member = PartitionOwner(name, bootstrap_servers, partitions)
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        member.poll(0.1)
        generation = member.generation_if_stable()
        if generation is not None and member.owned:
            member._report("worked", generation=generation.generation_id, partitions=list(member.owned))
    member.close()


@dataclass
class _Member:
    name: str
    process: subprocess.Popen[str]
    partitions: list[int] = field(default_factory=list)
    reports: list[dict[str, Any]] = field(default_factory=list)
    alive: bool = True
    paused: bool = False


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[float, MembershipEvent]] = []

    def emit(self, record: logging.LogRecord) -> None:
        doc = getattr(record, "membership_event", None)
        if doc is not None:
            self.events.append((record.created, MembershipEvent(**doc)))


def _start_member(
    bootstrap: str, name: str, partitions: int, reports: queue.Queue[dict[str, Any]]
) -> _Member:
    process = subprocess.Popen(
        [sys.executable, "-m", "coordinator_api._demo", bootstrap, name, str(partitions)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            reports.put(json.loads(line))

    threading.Thread(target=pump, daemon=True).start()
    return _Member(name, process)


def _drain(members: dict[str, _Member], reports: queue.Queue[dict[str, Any]], timeout: float) -> None:
    try:
        report = reports.get(timeout=timeout)
    except queue.Empty:
        return
    member = members[str(report["member"])]
    member.reports.append(report)
    if report["event"] == "assigned":
        member.partitions = list(report["partitions"])
    elif report["event"] in ("revoked", "lost"):
        member.partitions = []


def _await(
    members: dict[str, _Member],
    reports: queue.Queue[dict[str, Any]],
    done: Callable[[], bool],
    timeout_s: float,
) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        _drain(members, reports, min(remaining, 0.2))
    return True


def _owned_exactly_once(members: dict[str, _Member], partitions: int, alive: int) -> bool:
    live = [m for m in members.values() if m.alive]
    owned = sorted(p for m in live for p in m.partitions)
    return len(live) == alive and owned == list(range(partitions)) and all(m.partitions for m in live)


def _overlaps(members: dict[str, _Member]) -> list[str]:
    """Partitions two members worked on at the same time, from their ``worked`` reports."""
    spans: dict[int, list[tuple[float, float, str]]] = {}
    for m in members.values():
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


def _show(title: str, members: dict[str, _Member]) -> None:
    print(f"\n== {title}")
    for m in members.values():
        state = "paused" if m.paused else "running" if m.alive else "gone"
        print(f"   {m.name:<10} {state:<8} partitions {m.partitions}")


def run_demo(*, members: int = 3, partitions: int = 12) -> int:
    """Run the demo; return 0 when every step behaved as the group protocol promises."""
    if members < 3 or partitions < members:
        print("the demo needs at least 3 members and as many partitions as members", file=sys.stderr)
        return 2
    recorder = _Recorder()
    membership_log = logging.getLogger("coordinator_api.server.membership")
    # The demo prints the log itself at the end, whatever --log-level says.
    saved_level, saved_propagate = membership_log.level, membership_log.propagate
    membership_log.addHandler(recorder)
    membership_log.setLevel(logging.INFO)
    membership_log.propagate = False
    config = CoordinatorConfig(initial_rebalance_delay_ms=500, min_session_timeout_ms=1000)
    reports: queue.Queue[dict[str, Any]] = queue.Queue()
    ok = True
    started = time.time()
    try:
        with EmbeddedCoordinator(config=config) as coordinator:
            bootstrap = coordinator.bootstrap_servers
            print(f"embedded coordinator on {bootstrap}; group {GROUP!r} shares {partitions} partitions")
            group = {
                f"member-{i}": _start_member(bootstrap, f"member-{i}", partitions, reports)
                for i in range(1, members + 1)
            }
            victim, sleeper, leaver = f"member-{members}", f"member-{members - 1}", f"member-{members - 2}"

            def kill() -> None:
                group[victim].process.kill()
                group[victim].alive = False
                group[victim].partitions = []

            def pause() -> None:
                group[sleeper].process.send_signal(signal.SIGSTOP)
                group[sleeper].alive = False  # for the group, until it is back
                group[sleeper].paused = True

            def resume() -> None:
                group[sleeper].process.send_signal(signal.SIGCONT)
                group[sleeper].alive = True
                group[sleeper].paused = False

            def leave() -> None:
                group[leaver].process.terminate()
                group[leaver].alive = False
                group[leaver].partitions = []

            steps: list[tuple[str, Callable[[], None], int]] = [
                ("all members joined", lambda: None, members),
                (f"{victim} killed with SIGKILL (its session expires)", kill, members - 1),
                (f"{sleeper} paused with SIGSTOP past its session", pause, members - 2),
                (f"{sleeper} resumed: it reports its partitions lost, then rejoins", resume, members - 1),
                (f"{leaver} stopped gracefully (LeaveGroup)", leave, members - 2),
            ]
            try:
                for title, action, alive in steps:
                    t0 = time.monotonic()
                    action()
                    if action is resume:
                        ok = ok and _await(
                            group,
                            reports,
                            lambda: any(r["event"] == "lost" for r in group[sleeper].reports),
                            60,
                        )
                    settled = _await(
                        group, reports, partial(_owned_exactly_once, group, partitions, alive), 60
                    )
                    verdict = "settled" if settled else "DID NOT SETTLE"
                    _show(f"{title}: {verdict} in {time.monotonic() - t0:.1f} s", group)
                    ok = ok and settled
                _await(group, reports, lambda: False, 1.0)  # collect the last reports
            finally:
                for m in group.values():
                    if m.process.poll() is None:
                        m.process.send_signal(signal.SIGCONT)
                        m.process.terminate()
                for m in group.values():
                    m.process.wait(timeout=30)
    finally:
        membership_log.removeHandler(recorder)
        membership_log.setLevel(saved_level)
        membership_log.propagate = saved_propagate
    print("\n== coordinator membership log")
    for created, event in recorder.events:
        who = f" member={event.member_id}" if event.member_id else ""
        when = f"+{created - started:6.2f}s"
        print(f"   {when} {event.kind:<10} generation={event.generation_id}{who} {event.detail}")
    overlaps = _overlaps(group)
    worked = sum(1 for m in group.values() for r in m.reports if r["event"] == "worked")
    print(
        f"\n== {worked} units of work recorded; partitions worked on by two members at once: {len(overlaps)}"
    )
    for problem in overlaps:
        print(f"   {problem}")
    ok = ok and not overlaps
    if ok:
        print("\nOK: after each change every partition was owned by exactly one live member")
    else:
        print("\nFAILED: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    member_main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
