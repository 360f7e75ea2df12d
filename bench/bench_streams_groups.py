"""Benchmark incremental streams groups: the embedded coordinator against Apache Kafka's broker.

The same ``StreamsGroupMember(group_protocol="incremental", source_topics=...)`` members (real
ones, each polling on its own thread in this process) form a group of N on each server: the
embedded coordinator (``python -m coordinator_api serve``, a process of its own), where they
speak this project's GroupHeartbeat, and a one-broker Apache Kafka 4 cluster, where they speak
KIP-1071's StreamsGroupHeartbeat and the broker assigns. Each group has 4 tasks per member after
a scale-out (two subtopologies, each reading one topic). Then, ``--repeats`` times, one member
joins (scale-out) and, once the group is balanced, one of the first members closes (scale-in).

For each change it reports, from the members' own callbacks: **task-seconds without an owner**
(the sum over tasks of the time from their revocation to their next assignment), the time
until every task is owned again, and the time until the group is balanced (every member within
one task of the others). Both servers get the same session and heartbeat interval; Kafka's
group gets ``streams.assignment.interval.ms`` 0 (its default is 1,000 ms; the embedded
coordinator computes a target on the heartbeat that changed the group), so the comparison is
like for like.

Run from the repository root::

    python bench/bench_streams_groups.py                 # N = 3 and 10: about two minutes
    python bench/bench_streams_groups.py --quick         # a smoke test: seconds
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench_incremental import EMBEDDED, KAFKA, BenchError, Server, start_embedded, start_kafka, stop_server
from coordinator_streams import StreamsGroupMember, Task, TaskId

SUBTOPOLOGIES = 2
TASKS_PER_MEMBER = 4
SERVERS = {
    EMBEDDED: "embedded coordinator (GroupHeartbeat)",
    KAFKA: "Apache Kafka broker (StreamsGroupHeartbeat)",
}
CHANGES = ("scale-out", "scale-in")


@dataclass
class Ownership:
    """Who owns each task, from the members' callbacks, with the time each task lost its owner."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    owner: dict[TaskId, str] = field(default_factory=dict)
    released_at: dict[TaskId, float] = field(default_factory=dict)
    unowned_seconds: float = 0.0
    last_owned_again: float = 0.0
    moved: int = 0
    problems: list[str] = field(default_factory=list)

    def assigned(self, name: str, tasks: frozenset[TaskId]) -> None:
        now = time.monotonic()
        with self.lock:
            for task in tasks:
                holder = self.owner.get(task)
                if holder is not None and holder != name:
                    self.problems.append(f"{task} given to {name} while {holder} runs it")
                if holder is None and task in self.released_at:
                    self.unowned_seconds += now - self.released_at.pop(task)
                    self.last_owned_again = now
                    self.moved += 1
                self.owner[task] = name

    def released(self, name: str, tasks: frozenset[TaskId]) -> None:
        now = time.monotonic()
        with self.lock:
            for task in tasks:
                if self.owner.get(task) == name:
                    del self.owner[task]
                    self.released_at[task] = now

    def start_change(self) -> None:
        with self.lock:
            self.unowned_seconds, self.last_owned_again, self.moved = 0.0, 0.0, 0


class Group:
    """N members of one streams group on one server, each polled by a thread of its own."""

    def __init__(
        self, server: Server, group_id: str, tasks: list[Task], source: dict[int, list[str]]
    ) -> None:
        self.server, self.group_id, self.tasks, self.source = server, group_id, tasks, source
        self.ownership = Ownership()
        self.members: dict[str, StreamsGroupMember] = {}
        self._threads: dict[str, tuple[threading.Event, threading.Thread]] = {}
        self._next = 0

    def add(self, args: argparse.Namespace) -> str:
        name = f"m{self._next}"
        self._next += 1
        own = self.ownership
        member = StreamsGroupMember(
            self.group_id,
            self.server.address,
            process_id=name,
            tasks=self.tasks,
            client_id=name,
            group_protocol="incremental",
            source_topics=self.source,
            on_tasks_assigned=lambda t: own.assigned(name, t.active),
            on_tasks_revoked=lambda t: own.released(name, t),
            on_tasks_lost=lambda t: own.released(name, t),
            session_timeout_ms=args.session_timeout_ms,
            heartbeat_interval_ms=args.heartbeat_interval_ms,
            rebalance_timeout_ms=args.rebalance_timeout_ms,
        )
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                member.poll(0.01)

        thread = threading.Thread(target=run, name=name, daemon=True)
        self.members[name] = member
        self._threads[name] = (stop, thread)
        thread.start()
        return name

    def remove(self, name: str) -> None:
        stop, thread = self._threads.pop(name)
        stop.set()
        thread.join()
        self.members.pop(name).close()

    def close(self) -> None:
        for name in list(self.members):
            self.remove(name)

    def balanced(self) -> bool:
        counts = [len(m.tasks().active) for m in self.members.values()]
        with self.ownership.lock:
            owned = len(self.ownership.owner)
        return owned == len(self.tasks) and max(counts) - min(counts) <= 1

    def wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        start = time.monotonic()
        while not done():
            if time.monotonic() - start > timeout:
                raise BenchError(f"{self.server.kind}: {what} not within {timeout} s")
            time.sleep(0.002)
        if self.ownership.problems:
            raise BenchError(f"{self.server.kind}: {self.ownership.problems}")


def kafka_group_configs(args: argparse.Namespace) -> dict[str, int | str]:
    """The embedded coordinator's settings, as a Kafka streams group's own configs."""
    return {
        "streams.session.timeout.ms": args.session_timeout_ms,
        "streams.heartbeat.interval.ms": args.heartbeat_interval_ms,
        "streams.assignment.interval.ms": 0,
    }


def measure(server: Server, members: int, args: argparse.Namespace) -> dict[str, list[dict[str, float]]]:
    group_id = f"bench-streams-{members}"
    partitions = TASKS_PER_MEMBER * (members + 1) // SUBTOPOLOGIES
    source = {s: [f"{group_id}-source-{s}"] for s in range(SUBTOPOLOGIES)}
    if server.cluster is not None:
        for topics in source.values():
            server.cluster.create_topic(topics[0], partitions, replication_factor=1)
        server.cluster.set_group_config(group_id, kafka_group_configs(args))
    tasks = [Task(TaskId(s, p)) for s in range(SUBTOPOLOGIES) for p in range(partitions)]
    group = Group(server, group_id, tasks, source)
    results: dict[str, list[dict[str, float]]] = {change: [] for change in CHANGES}
    try:
        for _ in range(members):
            group.add(args)
        group.wait(group.balanced, args.timeout, f"a group of {members} balanced")
        for _ in range(args.repeats):
            for change in CHANGES:
                time.sleep(args.quiet_s)  # every member at its steady heartbeat
                group.ownership.start_change()
                started = time.monotonic()
                if change == "scale-out":
                    group.add(args)
                else:
                    group.remove(next(iter(group.members)))
                group.wait(group.balanced, args.timeout, f"{change} balanced")
                stable = time.monotonic() - started
                own = group.ownership
                results[change].append(
                    {
                        "unowned_task_seconds": own.unowned_seconds,
                        "all_owned_ms": max(0.0, own.last_owned_again - started) * 1000,
                        "balanced_ms": stable * 1000,
                        "tasks_moved": own.moved,
                    }
                )
                print(f"  {server.kind:8} N={members:<4} {change:9}: {results[change][-1]}", flush=True)
    finally:
        group.close()
    return results


def table(figures: dict[str, dict[int, dict[str, list[dict[str, float]]]]]) -> str:
    rows = [
        "| metric | N | change | embedded coordinator (GroupHeartbeat) | Apache Kafka broker "
        "(StreamsGroupHeartbeat) | ours / Kafka |",
        "|---|---|---|---|---|---|",
    ]
    metrics = (
        ("task-seconds without an owner", "unowned_task_seconds", "{:.3f}"),
        ("every task owned again", "all_owned_ms", "{:,.0f} ms"),
        ("the group balanced", "balanced_ms", "{:,.0f} ms"),
    )
    for label, key, fmt in metrics:
        for members in sorted(figures[EMBEDDED]):
            for change in CHANGES:
                medians = [
                    statistics.median(trial[key] for trial in figures[kind][members][change])
                    for kind in SERVERS
                ]
                ratio = f"{medians[0] / medians[1]:.2g}x" if medians[1] else "n/a"
                cells = " | ".join(fmt.format(m) for m in medians)
                rows.append(f"| {label} (median) | {members} | {change} | {cells} | {ratio} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--members", type=int, nargs="+", default=[3, 10], help="group sizes N")
    p.add_argument("--repeats", type=int, default=3, help="scale-outs and scale-ins per group")
    p.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    p.add_argument("--session-timeout-ms", type=int, default=10_000)
    p.add_argument("--rebalance-timeout-ms", type=int, default=10_000)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a group may take to balance")
    p.add_argument("--quick", action="store_true", help="one small group, one repeat, C1 only: a smoke test")
    p.add_argument("--json", type=Path, default=None, help="also write every trial's figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.members, args.repeats, args.heartbeat_interval_ms = [3], 1, 300
    args.quiet_s = 1.5 * args.heartbeat_interval_ms / 1000
    # What bench_incremental's servers read of their arguments.
    args.network_thread, args.embedded_log_level, args.embedded_profile = False, "WARNING", None
    args.kafka_heap_mb, args.kafka_assignment_interval_ms = 512, 0
    print(f"python {platform.python_version()} on {platform.machine()}, {sys.platform}")
    figures: dict[str, dict[int, dict[str, list[dict[str, float]]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-streams-groups-") as scratch:
        for kind, label in SERVERS.items():
            server = (
                start_embedded(EMBEDDED, Path(scratch), {}, args, hold_ms=None)
                if kind == EMBEDDED
                else start_kafka({}, args)
            )
            print(f"{label}: {'; '.join(server.notes)}", flush=True)
            if kind == KAFKA:
                configs = ", ".join(f"{k}={v}" for k, v in kafka_group_configs(args).items())
                print(f"  each group's configs: {configs}")
            try:
                figures[kind] = {n: measure(server, n, args) for n in args.members}
            finally:
                stop_server(server, Path(scratch))
    print()
    print(table(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
