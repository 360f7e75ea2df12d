"""A member process of a streams group: a simulated application restoring state in real time.

Run as ``python streams_member.py --bootstrap HOST:PORT --name d``. It joins group ``streams``
with the high-availability assignor over ``--subtopologies`` x ``--partitions`` stateful tasks
whose changelogs hold ``--records`` records each, restored at ``--restore-rate`` records per
second. It prints one JSON line per event: ``assigned`` (with ``owned``, the active tasks, and
the lag each newly assigned active had when it arrived), ``revoked``, ``lost``, ``running`` (the
active tasks it processes, whenever that set changes) and ``rejoin``. SIGTERM closes it.
With ``--group-protocol incremental`` it asks for the incremental protocol instead (its reports
say which standby tasks it keeps), and with ``--source-topics PREFIX`` too, subtopology ``s``
reading topic ``PREFIX-s``: on a Kafka cluster, a streams group of KIP-1071.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from coordinator_streams import (
    AssignmentConfig,
    MemberTasks,
    SimulatedApplication,
    StreamsGroupMember,
    Task,
    TaskId,
)

from coordinator_api import CoordinatorApiError
from coordinator_api._signals import stop_event

lock = threading.Lock()


def report(name: str, **fields: Any) -> None:
    with lock:
        print(json.dumps({"t": time.time(), "name": name, **fields}), flush=True)


def names(tasks: frozenset[TaskId]) -> list[str]:
    return [str(t) for t in sorted(tasks)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="streams")
    parser.add_argument("--subtopologies", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--records", type=int, default=2_000)
    parser.add_argument("--restore-rate", type=float, default=1_000.0)
    parser.add_argument("--acceptable-lag", type=int, default=50)
    parser.add_argument("--max-warmups", type=int, default=2)
    parser.add_argument("--standbys", type=int, default=0)
    parser.add_argument("--probe-ms", type=int, default=1_500)
    parser.add_argument("--session-ms", type=int, default=3_000)
    parser.add_argument("--heartbeat-ms", type=int, default=300)
    parser.add_argument("--group-protocol", default="classic", choices=["classic", "incremental"])
    parser.add_argument("--source-topics", default=None, help="PREFIX: the incremental protocol")
    args = parser.parse_args()
    incremental: dict[str, Any] = {}
    if args.group_protocol == "incremental" or args.source_topics is not None:
        incremental["group_protocol"] = "incremental"
    if args.source_topics is not None:
        incremental["source_topics"] = {s: [f"{args.source_topics}-{s}"] for s in range(args.subtopologies)}
    stop = stop_event(signal.SIGTERM)
    tasks = [Task(TaskId(s, p)) for s in range(args.subtopologies) for p in range(args.partitions)]
    app = SimulatedApplication(
        tasks, changelog_records=args.records, restore_rate=args.restore_rate, now=time.monotonic()
    )

    def assigned(new: MemberTasks) -> None:
        app.advance(time.monotonic())
        added = new.active - app.tasks.active
        lags = {str(t): app.lag(t) for t in sorted(added)}
        app.assign(new)
        report(
            args.name,
            event="assigned",
            owned=names(new.active),
            standby=names(new.standby),
            warmup=names(new.warmup),
            added_lags=lags,
            generation=member.generation().generation_id,
        )

    def revoked(tasks: frozenset[TaskId]) -> None:
        app.assign(MemberTasks(app.tasks.active - tasks, app.tasks.standby, app.tasks.warmup))
        report(args.name, event="revoked", tasks=names(tasks), owned=names(app.tasks.active))

    def lost(tasks: frozenset[TaskId]) -> None:
        app.assign(MemberTasks())
        report(args.name, event="lost", tasks=names(tasks), owned=[])

    def lags() -> dict[TaskId, int]:
        app.advance(time.monotonic())
        return app.lags()

    member = StreamsGroupMember(
        args.group,
        args.bootstrap,
        process_id=args.name,
        tasks=tasks,
        config=AssignmentConfig(
            acceptable_recovery_lag=args.acceptable_lag,
            max_warmup_replicas=args.max_warmups,
            num_standby_replicas=args.standbys,
            probing_rebalance_interval_ms=args.probe_ms,
        ),
        task_lags=lags,
        on_tasks_assigned=assigned,
        on_tasks_revoked=revoked,
        on_tasks_lost=lost,
        warmup_check_interval_ms=100,
        client_id=args.name,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        rebalance_timeout_ms=5_000,
        **incremental,
    )
    report(args.name, event="started")
    running: frozenset[TaskId] = frozenset()
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        try:
            member.poll(0.05)
        except CoordinatorApiError as exc:
            report(args.name, event="error", error=type(exc).__name__, message=str(exc))
            time.sleep(0.2)
            continue
        app.advance(time.monotonic())
        # Cooperative: tasks keep running through a rebalance until revoked or lost.
        now_running = app.running()
        if now_running != running:
            running = now_running
            report(args.name, event="running", tasks=names(running))
    member.close()
    report(args.name, event="closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
