"""The member processes of ``coordinator-api demo``, one per group member, each in its own
interpreter::

    python -m coordinator_demo._members KIND BOOTSTRAP NAME OPTIONS_JSON

``KIND`` is ``partitions`` (a custom :class:`~coordinator_api.Coordinator`), ``leader`` (a
``coordinator_leader.LeaderElection`` candidate), ``consumer`` (a
``coordinator_consumer.ConsumerGroupMember``) or ``streams`` (a
``coordinator_streams.StreamsGroupMember`` running a ``SimulatedApplication``). Each prints one
JSON report per line on stdout (``t`` is ``time.monotonic()``, one clock for every process of
the machine, so the demo can order the reports of different processes), with ``member`` and
``event``. SIGTERM and SIGINT close the member gracefully (it leaves its group); a member whose
parent (the demo, which runs the coordinator) is gone stops by itself, and on Linux the kernel
kills it when the demo dies (``PR_SET_PDEATHSIG``), even while it is paused with SIGSTOP.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator_api import Coordinator, CoordinatorApiError, JoinedMember, decode, encode, payload
from coordinator_api._signals import stop_event

_PR_SET_PDEATHSIG = 1


class _Reporter:
    """One JSON line per report; callbacks on other threads report too, hence the lock."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()

    def __call__(self, event: str, **fields: Any) -> None:
        line = json.dumps({"t": time.monotonic(), "member": self.name, "event": event, **fields})
        with self._lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


class _Lifetime:
    """Until when the member runs: SIGTERM, SIGINT or the end of the demo process."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self.stop = stop_event(signal.SIGTERM, signal.SIGINT)
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    def running(self) -> bool:
        return not self.stop.is_set() and os.getppid() == self.parent


# --- partitions: a custom Coordinator -----------------------------------------------------------


@payload(version=1)
@dataclass(frozen=True)
class _Share:
    partitions: tuple[int, ...]


class PartitionOwner(Coordinator):
    """A member that owns a share of ``partitions`` partitions, round robin by member id."""

    def __init__(
        self,
        group: str,
        name: str,
        bootstrap_servers: str,
        partitions: int,
        session_ms: int,
        report: _Reporter,
    ) -> None:
        super().__init__(
            group,
            bootstrap_servers,
            client_id=name,
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=500,
            rebalance_timeout_ms=10_000,
        )
        self.partitions = partitions
        self.owned: tuple[int, ...] = ()
        self.report = report

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
        self.report("revoked", generation=generation, partitions=list(self.owned))
        self.owned = ()

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        self.owned = decode(_Share, assignment).partitions
        self.report("assigned", generation=generation, partitions=list(self.owned), member_id=member_id)

    def on_lost(self, reason: str) -> None:
        # Runs on the heartbeat thread, e.g. right after a pause: stop working at once.
        self.report("lost", partitions=list(self.owned), reason=reason)


def _partitions(
    bootstrap: str, name: str, options: dict[str, Any], life: _Lifetime, report: _Reporter
) -> None:
    """Join, then work on the owned partitions while the lease holds (a ``worked`` report for
    each round of work, which the demo checks for overlaps)."""
    member = PartitionOwner(
        options["group"], name, bootstrap, int(options["partitions"]), int(options["session_ms"]), report
    )
    while life.running():
        member.poll(0.1)
        # Stamped when the lease was checked: a pause (SIGSTOP) between the check and the report
        # must not date the work after the lease ran out, when another member may have it.
        checked_at = time.monotonic()
        generation = member.generation_if_stable()
        if generation is not None and member.owned:
            report("worked", t=checked_at, generation=generation.generation_id, partitions=list(member.owned))
    member.close()


# --- leader: a LeaderElection candidate ----------------------------------------------------------


def _leader(bootstrap: str, name: str, options: dict[str, Any], life: _Lifetime, report: _Reporter) -> None:
    """Stand for election; report being elected (with the epoch), stepping down, and whom this
    candidate believes leads whenever that changes."""
    from coordinator_leader import LeaderElection

    election = LeaderElection(
        options["group"],
        bootstrap,
        name,
        session_timeout_ms=int(options["session_ms"]),
        on_elected=lambda epoch: report("elected", epoch=epoch),
        on_revoked=lambda: report("revoked"),
        client_id=f"leader-{name}",
    )
    with election:
        known: tuple[str | None, int] | None = None
        while life.running():
            seen = (election.leader(), election.epoch())
            if seen != known:
                known = seen
                report("leader", leader=seen[0], epoch=seen[1])
            life.stop.wait(0.01)
        report("closing")
    report("closed")


# --- consumer: a ConsumerGroupMember (KIP-848) ---------------------------------------------------


def _consumer(bootstrap: str, name: str, options: dict[str, Any], life: _Lifetime, report: _Reporter) -> None:
    """A consumer-group member of Kafka 4's incremental protocol: the coordinator assigns, and
    each member gives up or takes only what moves."""
    from coordinator_consumer import ConsumerGroupMember, TopicPartition

    def callback(event: str) -> Callable[[frozenset[TopicPartition]], None]:
        return lambda parts: report(
            event, partitions=sorted(tp.partition for tp in parts), member_id=member.member_id
        )

    member = ConsumerGroupMember(
        options["group"],
        bootstrap,
        topics=[options["topic"]],
        group_protocol="consumer",
        remote_assignor="uniform",
        client_id=name,
        session_timeout_ms=int(options["session_ms"]),
        heartbeat_interval_ms=500,
        rebalance_timeout_ms=5_000,
        on_partitions_assigned=callback("assigned"),
        on_partitions_revoked=callback("revoked"),
        on_partitions_lost=callback("lost"),
    )
    while life.running():
        try:
            member.poll(0.05)
        except CoordinatorApiError as exc:
            report("error", error=type(exc).__name__, message=str(exc))
            life.stop.wait(0.2)
    member.close()
    report("closed")


# --- streams: a StreamsGroupMember with a simulated application ---------------------------------


def _streams(bootstrap: str, name: str, options: dict[str, Any], life: _Lifetime, report: _Reporter) -> None:
    """A streams instance whose state stores restore at a fixed rate (``SimulatedApplication``);
    it reports its assignments (with the lag of each newly assigned active task), revocations,
    and the active tasks it runs (a stateful one only once restored) whenever they change."""
    from coordinator_streams import (
        AssignmentConfig,
        MemberTasks,
        SimulatedApplication,
        StreamsGroupMember,
        Task,
        TaskId,
    )

    tasks = [
        Task(TaskId(s, p))
        for s in range(int(options["subtopologies"]))
        for p in range(int(options["partitions"]))
    ]
    records = int(options["records"])
    app = SimulatedApplication(
        tasks,
        changelog_records=records,
        restore_rate=float(options["restore_rate"]),
        now=time.monotonic(),
        restored=dict.fromkeys((t.id for t in tasks), records) if options.get("restored") else None,
    )
    lock = threading.Lock()

    def names(ids: frozenset[TaskId]) -> list[str]:
        return [str(t) for t in sorted(ids)]

    def assigned(new: MemberTasks) -> None:
        with lock:
            app.advance(time.monotonic())
            lags = {str(t): app.lag(t) for t in sorted(new.active - app.tasks.active)}
            app.assign(new)
        report(
            "assigned",
            active=names(new.active),
            warmup=names(new.warmup),
            standby=names(new.standby),
            added_lags=lags,
            generation=member.generation().generation_id,
        )

    def revoked(gone: frozenset[TaskId]) -> None:
        with lock:
            app.assign(MemberTasks(app.tasks.active - gone, app.tasks.standby, app.tasks.warmup))
            active = app.tasks.active
        report("revoked", tasks=names(gone), active=names(active))

    def lost(gone: frozenset[TaskId]) -> None:
        with lock:
            app.assign(MemberTasks())
        report("lost", tasks=names(gone), active=[])

    def lags() -> dict[TaskId, int]:
        with lock:
            app.advance(time.monotonic())
            return app.lags()

    member = StreamsGroupMember(
        options["group"],
        bootstrap,
        process_id=name,
        tasks=tasks,
        config=AssignmentConfig(
            acceptable_recovery_lag=int(options["acceptable_lag"]),
            max_warmup_replicas=int(options["max_warmups"]),
            probing_rebalance_interval_ms=int(options["probe_ms"]),
        ),
        task_lags=lags,
        on_tasks_assigned=assigned,
        on_tasks_revoked=revoked,
        on_tasks_lost=lost,
        warmup_check_interval_ms=100,
        client_id=name,
        session_timeout_ms=int(options["session_ms"]),
        heartbeat_interval_ms=300,
        rebalance_timeout_ms=5_000,
    )
    running: frozenset[TaskId] = frozenset()
    while life.running():
        try:
            member.poll(0.05)
        except CoordinatorApiError as exc:
            report("error", error=type(exc).__name__, message=str(exc))
            life.stop.wait(0.2)
            continue
        with lock:
            app.advance(time.monotonic())
            now_running = app.running()
        if now_running != running:  # cooperative: tasks run on through a rebalance until revoked
            running = now_running
            report("running", tasks=names(running))
    member.close()
    report("closed")


_KINDS: dict[str, Callable[[str, str, dict[str, Any], _Lifetime, _Reporter], None]] = {
    "partitions": _partitions,
    "leader": _leader,
    "consumer": _consumer,
    "streams": _streams,
}


def main(argv: list[str]) -> None:
    kind, bootstrap, name, options_json = argv
    options: dict[str, Any] = json.loads(options_json)
    life = _Lifetime(int(options["parent"]))
    if not life.running():
        return  # the demo ended before this process got going
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    report = _Reporter(name)
    report("started", pid=os.getpid())
    _KINDS[kind](bootstrap, name, options, life, report)


if __name__ == "__main__":
    main(sys.argv[1:])
