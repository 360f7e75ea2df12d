"""Benchmark the streams assignors: availability on a simulated clock, and assignor time.

Part 1, **availability**, runs the same scenarios with the high-availability assignor (KIP-441:
warmups, probing rebalances) and the eager sticky baseline (Kafka Streams before KIP-441), in
the same run, on :class:`coordinator_streams.GroupSimulation`'s clock (1 s ticks):

* ``scale-out``: 3 members run 36 stateful tasks (changelogs of 600,000 records, restored at
  10,000 records/s: 60 s per task); a 4th member joins;
* ``scale-out+standby``: the same with one standby per task;
* ``crash+standby``: 4 members with one standby each; one crashes;
* ``scale-in``: 4 members, no standbys; one leaves.

For each it reports **task downtime** (task-seconds during which a task had no running active:
no member had it restored and assigned), the worst single task's downtime, the **rebalances
until balanced** (until stateful actives per thread differ by at most one and no move is
pending) and the time until then. Probing interval 60 s, ``max_warmup_replicas`` 2,
``acceptable_recovery_lag`` 10,000. Rebalances take no time in the simulation, for both.

Part 2, **assignor time**: one call of each assignor on a settled group of M members with one
standby per task, then one member replaced by a new one (the common "a member restarted
elsewhere" case); median of repeats, garbage collector on. Sizes 10 x 100, 100 x 1,000,
1,000 x 10,000 (members x tasks); the goal for the last is at most 200 ms.

Run from the repository root::

    PYTHONPATH=plugins:. python bench/bench_streams.py            # about a minute
    PYTHONPATH=plugins:. python bench/bench_streams.py --quick    # seconds
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coordinator_streams import (
    AssignmentConfig,
    ClientState,
    GroupSimulation,
    StreamsAssignor,
    Task,
    TaskAssignment,
    TaskId,
    assign_tasks,
    assign_tasks_eager_sticky,
)

CONTENDERS: dict[str, StreamsAssignor] = {
    "high-availability": assign_tasks,
    "eager-sticky": assign_tasks_eager_sticky,
}
SIZES = [(10, 100), (100, 1_000), (1_000, 10_000)]
QUICK_SIZES = [(10, 100), (100, 1_000)]
GOAL_MS = 200.0


@dataclass(frozen=True)
class Availability:
    downtime: float
    worst_task: float
    rebalances: int
    seconds_to_balance: float


def scenario(name: str, assignor: StreamsAssignor, records: int, rate: float) -> Availability:
    standbys = 1 if "standby" in name else 0
    config = AssignmentConfig(
        acceptable_recovery_lag=10_000,
        max_warmup_replicas=2,
        num_standby_replicas=standbys,
        probing_rebalance_interval_ms=60_000,
    )
    tasks = [Task(TaskId(s, p)) for s in range(3) for p in range(12)]
    sim = GroupSimulation(tasks, assignor, config, changelog_records=records, restore_rate=rate)
    initial = "abc" if name.startswith("scale-out") else "abcd"
    for member in initial:
        sim.join(member)
    if not sim.run_until_settled(100_000):
        raise RuntimeError(f"{name}: the initial group did not settle")
    sim.run(3 * records / rate)  # standbys placed by the last moves finish restoring too
    before = dict(sim.downtime)
    rebalances, start = sim.rebalances, sim.now
    if name.startswith("scale-out"):
        sim.join("d")
    elif name.startswith("crash"):
        sim.leave("b", crash=True)
    else:
        sim.leave("d")
    if not sim.run_until_settled(100_000):
        raise RuntimeError(f"{name}: did not settle")
    if not sim.balanced():
        raise RuntimeError(f"{name}: settled unbalanced")
    lost = [sim.downtime[t] - before[t] for t in before]
    return Availability(sum(lost), max(lost), sim.rebalances - rebalances, sim.now - start)


def settled(members: int, tasks: int) -> tuple[list[ClientState], list[Task], AssignmentConfig]:
    config = AssignmentConfig(num_standby_replicas=1)
    topology = [Task(TaskId(t // 100, t % 100)) for t in range(tasks)]
    fresh = [ClientState(member_id=f"m{i:05d}", process_id=f"p{i:05d}") for i in range(members)]
    first = assign_tasks(fresh, topology, config)
    clients = [
        ClientState(
            member_id=c.member_id,
            process_id=c.process_id,
            lags=dict.fromkeys(first.members[c.member_id].standby, 0),
            previous_active=first.members[c.member_id].active,
            previous_standby=first.members[c.member_id].standby,
        )
        for c in fresh
    ]
    # One member restarted elsewhere: a new process id without state.
    clients[-1] = ClientState(member_id="m-new", process_id="p-new")
    return clients, topology, config


def timed(call: Callable[[], TaskAssignment], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller state and sizes: seconds")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    records, rate = (60_000, 10_000.0) if args.quick else (600_000, 10_000.0)
    sizes = QUICK_SIZES if args.quick else SIZES
    print(f"# Python {platform.python_version()} on {platform.machine()}, {platform.system()}")
    print(f"# state per task: {records:,} records restored at {rate:,.0f} records/s ({records / rate:.0f} s)")
    print()
    print(
        "| scenario | assignor | task downtime (task-s) | worst task (s) | rebalances until balanced "
        "| seconds until balanced | downtime ratio (baseline / ours) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in ("scale-out", "scale-out+standby", "crash+standby", "scale-in"):
        results = {label: scenario(name, fn, records, rate) for label, fn in CONTENDERS.items()}
        ours, base = results["high-availability"], results["eager-sticky"]
        ratio = (
            "no downtime either"
            if base.downtime == ours.downtime == 0
            else ("inf (ours 0)" if ours.downtime == 0 else f"{base.downtime / ours.downtime:.1f}x")
        )
        for label, r in results.items():
            print(
                f"| {name} | {label} | {r.downtime:,.0f} | {r.worst_task:,.0f} | {r.rebalances} "
                f"| {r.seconds_to_balance:,.0f} | {ratio if label == 'high-availability' else ''} |"
            )
    print()
    print("| members x tasks | assignor | time (ms) | per member (us) | ratio (eager-sticky / ours) | goal |")
    print("|---|---|---:|---:|---:|---|")
    for members, tasks in sizes:
        clients, topology, config = settled(members, tasks)
        times = {
            label: timed(lambda fn=fn, c=clients, t=topology, k=config: fn(c, t, k), args.repeats)
            for label, fn in CONTENDERS.items()
        }
        ours = times["high-availability"]
        for label, ms in times.items():
            goal = ""
            if label == "high-availability" and (members, tasks) == (1_000, 10_000):
                goal = f"<= {GOAL_MS:.0f} ms: {'met' if ms <= GOAL_MS else 'MISSED'}"
            ratio = f"{times['eager-sticky'] / ours:.2f}" if label == "high-availability" else ""
            per_member = ms * 1000 / members
            print(f"| {members:,} x {tasks:,} | {label} | {ms:.1f} | {per_member:.0f} | {ratio} | {goal} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
