"""Benchmark coordinator_spark beside plain Spark, on the same data, in the same run.

Three measurements:

* **Allocator time**: :func:`coordinator_spark.allocate` for 100,000 Zipf-weighted units over
  10, 100 and 1,000 single-core executors, a fresh allocation and a sticky one after an
  executor left (median of ``--repeats``). Goal: at most 200 ms for 100,000 x 1,000.
* **Skewed makespan**: units whose costs follow a Zipf law (unit ``k`` of the ranking costs
  ``c / k**s``; the units are shuffled, so the heavy ones land anywhere), each processed by
  sleeping for its cost. Timed: :func:`coordinator_spark.distribute` with the costs as weights,
  plain ``sc.parallelize(units, n).map(process)``, ``repartition(n)`` and, for reference,
  ``sc.parallelize(units, len(units))`` (one task per unit, Spark's own dynamic balancing).
  ``n`` is the number of task slots. Goal: at most 0.7x plain Spark's makespan.
* **Even makespan**: the same with equal costs, for distribute's overhead. Goal: at most 5%.

Sleeping stands for I/O-bound work (API pages, downloads, model calls) and keeps the figures
independent of how busy the machine's cores are; ``--busy`` burns CPU instead.

Run from the repository root (Java 17 and the ``spark`` extra installed)::

    PYTHONPATH=plugins:. python bench/bench_spark.py            # about 3 minutes
    PYTHONPATH=plugins:. python bench/bench_spark.py --quick    # about 30 s, for the smoke test
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from coordinator_spark import Executor, WorkUnit, allocate, distribute


def zipf_costs(count: int, total_seconds: float, exponent: float, seed: int) -> list[float]:
    """``count`` costs summing to ``total_seconds``, the k-th largest proportional to 1/k**s,
    in a random order."""
    raw = [1.0 / (k**exponent) for k in range(1, count + 1)]
    scale = total_seconds / sum(raw)
    costs = [r * scale for r in raw]
    random.Random(seed).shuffle(costs)
    return costs


def time_allocator(
    units: int, executor_counts: Sequence[int], repeats: int
) -> list[tuple[int, float, float]]:
    """(executors, fresh ms, sticky-after-a-leave ms), medians."""
    weights = zipf_costs(units, float(units), 1.1, seed=3)
    work = [WorkUnit(f"unit-{i:06d}", w) for i, w in enumerate(weights)]
    rows = []
    for count in executor_counts:
        executors = [Executor(f"e{j:04d}", host=f"h{j % 50}") for j in range(count)]
        fresh, sticky = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            first = allocate(executors, work)
            fresh.append(time.perf_counter() - started)
            previous = {u: e for e, us in first.items() for u in us}
            started = time.perf_counter()
            allocate(executors[1:], work, previous)
            sticky.append(time.perf_counter() - started)
        rows.append((count, statistics.median(fresh) * 1000, statistics.median(sticky) * 1000))
    return rows


def make_process(costs: dict[str, float], busy: bool) -> Callable[[Any], str]:
    def process(unit: Any) -> str:
        unit_id = unit.id if isinstance(unit, WorkUnit) else unit
        cost = costs[unit_id]
        if busy:
            deadline = time.perf_counter() + cost
            while time.perf_counter() < deadline:
                pass
        else:
            time.sleep(cost)
        return unit_id

    return process


def makespans(
    spark: Any, costs: dict[str, float], slots: int, busy: bool, reference: bool
) -> dict[str, float]:
    """Wall time of each way of running the same units, in seconds."""
    sc = spark.sparkContext
    ids = list(costs)
    process = make_process(costs, busy)
    timed: dict[str, float] = {}

    started = time.perf_counter()
    plain = sc.parallelize(ids, slots).map(process).collect()
    timed["plain parallelize(units, n)"] = time.perf_counter() - started
    assert sorted(plain) == sorted(ids)

    started = time.perf_counter()
    repartitioned = sc.parallelize(ids).repartition(slots).map(process).collect()
    timed["repartition(n)"] = time.perf_counter() - started
    assert sorted(repartitioned) == sorted(ids)

    if reference:
        started = time.perf_counter()
        one_each = sc.parallelize(ids, len(ids)).map(process).collect()
        timed["parallelize(units, len(units))"] = time.perf_counter() - started
        assert sorted(one_each) == sorted(ids)

    started = time.perf_counter()
    run = distribute(spark, [WorkUnit(i, costs[i]) for i in ids], process, slots=slots)
    timed["coordinator_spark.distribute"] = time.perf_counter() - started
    assert sorted(run.results()) == sorted(ids)
    assert run.duplicates == 0
    return timed


def start_spark(master: str) -> Any:
    import pyspark
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_HOME", str(Path(pyspark.__file__).parent))
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master(master)
        .appName("bench-spark")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def table(title: str, timed: dict[str, float], baseline: str) -> list[str]:
    lines = [f"### {title}", "", "| method | makespan (s) | vs plain |", "| --- | ---: | ---: |"]
    for name, seconds in timed.items():
        lines.append(f"| {name} | {seconds:.2f} | {seconds / timed[baseline]:.2f}x |")
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small workloads, for the smoke test")
    parser.add_argument("--master", default="local[4]", help="Spark master (default local[4])")
    parser.add_argument("--units", type=int, default=200, help="units of the skewed and even workloads")
    parser.add_argument("--seconds", type=float, default=60.0, help="total cost of each workload")
    parser.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of the skewed costs")
    parser.add_argument("--busy", action="store_true", help="burn CPU instead of sleeping")
    parser.add_argument("--repeats", type=int, default=5, help="allocator timing repeats")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.quick:
        args.units, args.seconds, args.repeats = 20, 2.0, 1
    allocator_units = 10_000 if args.quick else 100_000

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus; {args.master}")
    lines = [
        f"### Allocator time, {allocator_units:,} Zipf-weighted units",
        "",
        "| executors | fresh (ms) | after a leave (ms) |",
        "| ---: | ---: | ---: |",
    ]
    for count, fresh, sticky in time_allocator(allocator_units, (10, 100, 1_000), args.repeats):
        lines.append(f"| {count:,} | {fresh:.0f} | {sticky:.0f} |")
    lines.append("")

    spark = start_spark(args.master)
    try:
        slots = spark.sparkContext.defaultParallelism
        skewed = zipf_costs(args.units, args.seconds, args.zipf, args.seed)
        costs = {f"unit-{i:04d}": c for i, c in enumerate(skewed)}
        # Warm the Python workers up so that neither side pays their start.
        spark.sparkContext.parallelize(range(slots), slots).map(lambda x: x).collect()
        timed = makespans(spark, costs, slots, args.busy, reference=True)
        ideal = max(args.seconds / slots, *skewed)
        lines += table(
            f"Skewed makespan: {args.units} units, Zipf s={args.zipf}, {args.seconds:.0f} s of work over "
            f"{slots} slots (ideal {ideal:.2f} s)",
            timed,
            "plain parallelize(units, n)",
        )
        even = {f"unit-{i:04d}": args.seconds / args.units for i in range(args.units)}
        timed = makespans(spark, even, slots, args.busy, reference=False)
        overhead = timed["coordinator_spark.distribute"] / timed["plain parallelize(units, n)"] - 1
        lines += table(
            f"Even makespan: {args.units} units of {args.seconds / args.units:.2f} s over {slots} slots "
            f"(distribute's overhead {overhead:+.1%})",
            timed,
            "plain parallelize(units, n)",
        )
    finally:
        spark.stop()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
