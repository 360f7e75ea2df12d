"""Benchmark the server-side task assignors of incremental streams groups: this project's
``sticky`` (:func:`coordinator_streams.assign_tasks_sticky`, which the embedded coordinator runs)
against Apache Kafka's (the StickyTaskAssignor of its group coordinator, which a Kafka 4.2+
broker runs for streams groups of KIP-1071), on the same groups.

N members, each a process of its own with one thread; two stateful subtopologies of 3N
partitions each (6 active tasks a member) and ``--standbys`` standby replicas of every task. Two
cases: **scratch** (nobody holds anything: a group forming) and **leave** (the group settled on
its scratch assignment, then one member gone: the target a leave makes). Each assignor is timed
``--runs`` times per case after as many untimed calls, ours with CPython's collector set as
``coordinator-api serve`` sets it (the process the embedded coordinator runs the assignor in),
Kafka's in a JVM of its own (``bench/StreamsTaskAssignorBench.java``, compiled against the Kafka
jars the test suite fetches, default JVM settings), so both run warm. It also prints what the
assignments look like: the spread of active tasks per member, the standbys placed, and the
active tasks a leave moved from members that stayed.

Run from the repository root::

    python bench/bench_streams_assignors.py                 # N = 10, 100, 1,000: under a minute
    python bench/bench_streams_assignors.py --quick         # a smoke test: seconds
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coordinator_streams import assign_tasks_sticky, encode_member_metadata, standby_group

from coordinator_api import AssignmentSpec, KafkaStreamsGroup
from coordinator_api._cli import _collect_for_serving
from coordinator_api.testing import kafka_classpath
from coordinator_api.testing._jvm import compiled

SUBTOPOLOGIES = 2
TASKS_PER_MEMBER = 6
JAVA_BENCH = Path(__file__).with_name("StreamsTaskAssignorBench.java")
Resource = tuple[str, int]


def name(i: int) -> str:
    return f"m{i:04d}"


def counts_for(members: int, standbys: int) -> dict[str, int]:
    partitions = TASKS_PER_MEMBER * members // SUBTOPOLOGIES
    counts = {str(s): partitions for s in range(SUBTOPOLOGIES)}
    for s in range(SUBTOPOLOGIES):
        for replica in range(1, standbys + 1):
            counts[standby_group(s, replica)] = partitions
    return counts


def spec(member_id: str, counts: Mapping[str, int], current: Sequence[Resource] = ()) -> AssignmentSpec:
    return AssignmentSpec(
        member_id=member_id,
        instance_id=None,
        rack=None,
        topics=frozenset(counts),
        current=frozenset(current),
        metadata=encode_member_metadata(member_id, 1),
    )


def actives(resources: Sequence[Resource]) -> set[Resource]:
    return {r for r in resources if KafkaStreamsGroup.standby_of(r[0]) is None}


def shape(
    result: Mapping[str, Sequence[Resource]], before: Mapping[str, Sequence[Resource]] | None
) -> dict[str, int]:
    """What ``StreamsTaskAssignorBench`` prints of Kafka's assignment, of ours."""
    active = {member: actives(resources) for member, resources in result.items()}
    sizes = [len(tasks) for tasks in active.values()]
    moved = 0
    if before is not None:
        for member, resources in before.items():
            if member in active:
                moved += len(actives(resources) - active[member])
    return {
        "active_spread": max(sizes) - min(sizes),
        "standbys": sum(len(rs) for rs in result.values()) - sum(sizes),
        "moved": moved,
    }


def timed(members: list[AssignmentSpec], counts: Mapping[str, int], runs: int) -> tuple[list[float], Any]:
    result = None
    for _ in range(runs):
        result = assign_tasks_sticky(members, counts)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = assign_tasks_sticky(members, counts)
        times.append((time.perf_counter() - start) * 1000)
    return sorted(times), result


def ours(members: int, standbys: int, runs: int) -> dict[str, dict[str, float]]:
    counts = counts_for(members, standbys)
    times, first = timed([spec(name(i), counts) for i in range(members)], counts, runs)
    out = {"scratch": {"median_ms": statistics.median(times), "best_ms": times[0], **shape(first, None)}}
    settled = [spec(name(i), counts, first[name(i)]) for i in range(1, members)]
    times, after = timed(settled, counts, runs)
    out["leave"] = {"median_ms": statistics.median(times), "best_ms": times[0], **shape(after, first)}
    return out


def kafkas(members: int, standbys: int, runs: int) -> dict[str, dict[str, float]]:
    classpath = kafka_classpath()
    classes = compiled(JAVA_BENCH, classpath)
    partitions = TASKS_PER_MEMBER * members // SUBTOPOLOGIES
    argv = ["java", "-cp", f"{classpath}{os.pathsep}{classes}", JAVA_BENCH.stem]
    argv += [str(members), str(SUBTOPOLOGIES), str(partitions), str(standbys), str(runs)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{JAVA_BENCH.name} failed:\n{done.stdout}{done.stderr[-3000:]}")
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line.pop("case"): line for line in lines}


def table(figures: Mapping[str, Any]) -> str:
    rows = [
        "| members | case | ours, median (best) | Kafka's, median (best) | ours / Kafka's "
        "| active spread, ours / Kafka's | standbys placed, ours / Kafka's "
        "| active tasks moved, ours / Kafka's |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n, by_case in figures.items():
        for case in ("scratch", "leave"):
            o, k = by_case["ours"][case], by_case["kafka"][case]
            rows.append(
                f"| {int(n):,} | {case} | {o['median_ms']:.2f} ms ({o['best_ms']:.2f}) "
                f"| {k['median_ms']:.2f} ms ({k['best_ms']:.2f}) | {o['median_ms'] / k['median_ms']:.1f}x "
                f"| {o['active_spread']} / {k['active_spread']} | {o['standbys']:,} / {k['standbys']:,} "
                f"| {o['moved']} / {k['moved']} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--members", type=int, nargs="+", default=[10, 100, 1000], help="group sizes N")
    p.add_argument("--standbys", type=int, default=1, help="standby replicas of each task")
    p.add_argument("--runs", type=int, default=20, help="timed calls per case (after as many untimed)")
    p.add_argument("--quick", action="store_true", help="N = 10 and 100, 3 runs: a smoke test")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.members, args.runs = [10, 100], 3
    print(f"python {platform.python_version()} on {platform.machine()}, {sys.platform}")
    print(f"ours: {_collect_for_serving()}")
    figures: dict[int, dict[str, Any]] = {}
    for n in args.members:
        figures[n] = {"ours": ours(n, args.standbys, args.runs), "kafka": kafkas(n, args.standbys, args.runs)}
        print(f"N = {n}: {json.dumps(figures[n])}", flush=True)
    print()
    print(table(figures))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
