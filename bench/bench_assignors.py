"""Benchmark the consumer assignors beside kafka-python's, on the same inputs, in the same run.

For each size (members x partitions; topics of 100 partitions, every member subscribed to all)
and each assignor, three cases are timed:

* ``full``: nobody owns anything yet;
* ``join``: the group is settled on the assignor's own assignment and one member joins;
* ``leave``: the same settled group, and one member leaves.

For each it reports the median time, the peak memory allocated during the call (tracemalloc, in
a separate, untimed run), the balance (max - min partitions per member) and, for join and leave,
the partitions taken from members that stay, beside the minimum any balanced assignor must take
(``sum(max(0, owned - quota))``, the larger quotas going to the members that own the most).

Pairs: sticky / kafka-python ``StickyPartitionAssignor``; cooperative-sticky / kafka-python
``CooperativeStickyAssignor``; uniform (KIP-848, server side) / kafka-python's sticky, its
closest relative (kafka-python has no uniform assignor); range and roundrobin / kafka-python's
(ours only when ``coordinator_consumer._range`` / ``_roundrobin`` exist). kafka-python's sticky
assignors are skipped above 1,000 x 10,000 (they are O(P * M) per step: about 15 s there).

Each assignor gets its inputs in its own form, built before the clock starts: ours
``Subscription`` objects, kafka-python's ``JoinGroupResponseMember`` objects with decoded
``ConsumerProtocolSubscription`` metadata (previous assignment in ``StickyAssignorUserData`` for
its sticky assignor, ``owned_partitions`` and ``generation_id`` for its cooperative one) and a
``ClusterMetadata`` fed a ``MetadataResponse`` (the adapters of ``bench/kafka_python_assignors.py``,
which the equivalence tests use too). The garbage collector stays on, as in a real
leader; a call shorter than 50 ms is repeated in a loop and averaged. The ratio column is
kafka-python's time divided by ours.

Run from the repository root::

    PYTHONPATH=plugins:. python bench/bench_assignors.py                 # default grid, minutes
    PYTHONPATH=plugins:. python bench/bench_assignors.py --quick         # seconds
    PYTHONPATH=plugins:. python bench/bench_assignors.py --grid 1000x10000 10000x100000 --repeats 5
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from coordinator_consumer._model import Assignment, Cluster, Subscription
from coordinator_consumer._sticky import assign_cooperative_sticky, assign_sticky
from coordinator_consumer._uniform import assign_uniform
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka_python_assignors import from_kafka, kafka_cluster, kafka_members

DEFAULT_GRID = ["10x100", "100x1000", "1000x10000", "10000x100000"]
QUICK_GRID = ["10x100", "100x1000"]
#: Above this many members x partitions kafka-python's sticky assignors are not run.
KAFKA_STICKY_LIMIT = 1_000 * 10_000
#: Above it, of ours only the uniform, range and roundrobin assignors run (the brief's grid).
BIG = 1_000 * 10_000
PARTITIONS_PER_TOPIC = 100
LOOP_SECONDS = 0.05
SLOW_SECONDS = 2.0  # a call slower than this is not repeated
CASES = ("full", "join", "leave")

OursFn = Callable[[Sequence[Subscription], Cluster], Assignment]


def _optional(module: str, name: str) -> OursFn | None:
    try:
        found: OursFn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None
    return found


@dataclass(frozen=True)
class Pair:
    name: str
    ours: OursFn | None
    peer_name: str
    peer: Callable[[], Any]  # a new kafka-python assignor per call
    peer_form: str  # "plain", "sticky" or "cooperative": how kafka-python gets the previous assignment
    cooperative: bool
    peer_is_sticky: bool
    ours_at_big_sizes: bool


PAIRS = [
    Pair("sticky", assign_sticky, "sticky", StickyPartitionAssignor, "sticky", False, True, False),
    Pair(
        "cooperative-sticky",
        assign_cooperative_sticky,
        "cooperative-sticky",
        CooperativeStickyAssignor,
        "cooperative",
        True,
        True,
        False,
    ),
    Pair("uniform", assign_uniform, "sticky", StickyPartitionAssignor, "sticky", False, True, True),
    Pair(
        "range",
        _optional("coordinator_consumer._range", "assign_range"),
        "range",
        RangePartitionAssignor,
        "plain",
        False,
        False,
        True,
    ),
    Pair(
        "roundrobin",
        _optional("coordinator_consumer._roundrobin", "assign_roundrobin"),
        "roundrobin",
        RoundRobinPartitionAssignor,
        "plain",
        False,
        False,
        True,
    ),
]


@dataclass
class Result:
    ms: float | None = None
    runs: int = 0
    peak_mib: float | None = None
    balance: int | None = None
    moved: int | None = None
    minimum: int | None = None
    note: str = ""


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def make_group(members: int, partitions: int) -> tuple[list[Subscription], Cluster]:
    n_topics = max(1, partitions // PARTITIONS_PER_TOPIC)
    per_topic, extra = divmod(partitions, n_topics)
    cluster = Cluster(partitions={f"topic-{t:05d}": per_topic + (t < extra) for t in range(n_topics)})
    topics = frozenset(cluster.partitions)
    return [Subscription(member_id=f"member-{m:06d}", topics=topics) for m in range(members)], cluster


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def timed(call: Callable[[], Any], repeats: int) -> tuple[float, int, Any]:
    """Median milliseconds per call over ``repeats`` (looping calls shorter than LOOP_SECONDS)."""
    gc.collect()
    started = time.perf_counter()
    result = call()
    first = time.perf_counter() - started
    if first >= SLOW_SECONDS:
        return first * 1e3, 1, result
    loops = max(1, int(LOOP_SECONDS / max(first, 1e-6)))
    samples = []
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        for _ in range(loops):
            call()
        samples.append((time.perf_counter() - started) / loops)
    return statistics.median(samples) * 1e3, repeats * loops, result


def peak_mib(call: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def balance(assignment: Assignment) -> int:
    counts = [len(p) for p in assignment.values()]
    return max(counts) - min(counts) if counts else 0


def moved(before: Assignment, after: Assignment) -> int:
    return sum(len(set(before[m]) - set(after[m])) for m in after if m in before)


def minimum_moves(before: Assignment, after_members: Sequence[str], partitions: int) -> int:
    old = sorted((len(before.get(m, ())) for m in after_members), reverse=True)
    q, r = divmod(partitions, len(old))
    return sum(max(0, o - (q + 1 if k < r else q)) for k, o in enumerate(old))


def with_owned(
    subscriptions: Sequence[Subscription], assignment: Assignment, generation: int
) -> list[Subscription]:
    return [replace(s, owned=assignment[s.member_id], generation=generation) for s in subscriptions]


def scenarios(subscriptions: list[Subscription], settled: Assignment) -> dict[str, list[Subscription]]:
    """The join and leave inputs, from a settled assignment (generation 1)."""
    base = with_owned(subscriptions, settled, 1)
    newcomer = Subscription(member_id="member-joining", topics=subscriptions[0].topics)
    return {"join": [*base, newcomer], "leave": base[1:]}


def run_contender(
    label: str,
    call_for: Callable[[list[Subscription]], Callable[[], Assignment]],
    subscriptions: list[Subscription],
    partitions: int,
    repeats: int,
    cooperative: bool,
) -> dict[str, Result]:
    """Full, join and leave for one assignor; inputs prepared before each timing."""
    results: dict[str, Result] = {}
    call = call_for(subscriptions)
    ms, runs, full = timed(call, repeats)
    results["full"] = Result(ms=ms, runs=runs, peak_mib=peak_mib(call), balance=balance(full))
    _progress(label, "full", results["full"])
    settled, generation = full, 1
    if cooperative:  # a cooperative group needs a second round to give out what round one held back
        for _ in range(3):
            nxt = call_for(with_owned(subscriptions, settled, generation))()
            generation += 1
            if nxt == settled:
                break
            settled = nxt
    for case, inputs in scenarios(subscriptions, settled).items():
        call = call_for(inputs)
        ms, runs, after = timed(call, repeats)
        results[case] = Result(
            ms=ms,
            runs=runs,
            peak_mib=peak_mib(call),
            balance=balance(after),
            moved=moved(settled, after),
            minimum=minimum_moves(settled, [s.member_id for s in inputs], partitions),
        )
        _progress(label, case, results[case])
    return results


def _progress(label: str, case: str, r: Result) -> None:
    print(
        f"  {label:<34} {case:<5} {r.ms:10.2f} ms ({r.runs} runs)  peak {r.peak_mib:8.2f} MiB  "
        f"max-min {r.balance}" + (f"  moved {r.moved} (min {r.minimum})" if r.moved is not None else ""),
        file=sys.stderr,
        flush=True,
    )


def ours_caller(fn: OursFn, cluster: Cluster) -> Callable[[list[Subscription]], Callable[[], Assignment]]:
    def call_for(inputs: list[Subscription]) -> Callable[[], Assignment]:
        return lambda: fn(inputs, cluster)

    return call_for


def peer_caller(
    pair: Pair, cluster: ClusterMetadata
) -> Callable[[list[Subscription]], Callable[[], Assignment]]:
    def call_for(inputs: list[Subscription]) -> Callable[[], Assignment]:
        members = kafka_members(pair.peer_form, inputs)
        # Converting the answer back is outside kafka-python's work, but inside the timed call;
        # it costs well under 1 % of its time at every size measured.
        return lambda: from_kafka(pair.peer().assign(cluster, members))

    return call_for


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def _ms(r: Result | None) -> str:
    if r is None or r.ms is None:
        return "—"
    text = f"{r.ms:,.3f}" if r.ms < 1 else f"{r.ms:,.1f}"
    return text + (" (1 run)" if r.runs == 1 else "")


def _mib(r: Result | None) -> str:
    return "—" if r is None or r.peak_mib is None else f"{r.peak_mib:,.1f}"


def _moved(r: Result | None) -> str:
    if r is None or r.moved is None:
        return "—" if r is None else ""
    return f"{r.moved:,} ({r.minimum:,})"


def _ratio(ours: Result | None, peer: Result | None) -> str:
    if ours is None or peer is None or not ours.ms or peer.ms is None:
        return "—"
    return f"{peer.ms / ours.ms:,.0f}x" if peer.ms / ours.ms >= 10 else f"{peer.ms / ours.ms:,.1f}x"


def table(rows: list[tuple[str, str, Pair, Result | None, Result | None, str]]) -> str:
    lines = [
        "| members x partitions | case | ours | ours ms | kafka-python | kafka-python ms | ratio | "
        "ours peak MiB | kafka-python peak MiB | ours max-min | kafka-python max-min | "
        "ours moved (min) | kafka-python moved (min) |",
        "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, case, pair, ours, peer, peer_note in rows:
        peer_ms = _ms(peer) if peer is not None else peer_note or "—"
        lines.append(
            f"| {size} | {case} | {'—' if ours is None else pair.name} | {_ms(ours)} | {pair.peer_name} | "
            f"{peer_ms} | {_ratio(ours, peer)} | {_mib(ours)} | {_mib(peer)} | "
            f"{'—' if ours is None else ours.balance} | {'—' if peer is None else peer.balance} | "
            f"{_moved(ours)} | {_moved(peer)} |"
        )
    return "\n".join(lines)


def parse_size(text: str) -> tuple[int, int]:
    members, _, partitions = text.lower().replace(",", "").replace("_", "").partition("x")
    return int(members), int(partitions)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help=f"grid {' '.join(QUICK_GRID)}, one repeat")
    parser.add_argument("--grid", nargs="+", metavar="MxP", help=f"sizes (default: {' '.join(DEFAULT_GRID)})")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats per measurement (default 3)")
    args = parser.parse_args(argv)
    grid = args.grid or (QUICK_GRID if args.quick else DEFAULT_GRID)
    repeats = 1 if args.quick and args.repeats == 3 else max(1, args.repeats)

    import kafka

    print(
        f"Python {platform.python_version()}, kafka-python {kafka.__version__}, {os.cpu_count()} CPUs; "
        f"repeats {repeats}",
        file=sys.stderr,
    )
    rows: list[tuple[str, str, Pair, Result | None, Result | None, str]] = []
    notes: list[str] = []
    for size_text in grid:
        n_members, n_partitions = parse_size(size_text)
        size = f"{n_members:,} x {n_partitions:,}"
        print(f"{size}:", file=sys.stderr, flush=True)
        subscriptions, cluster = make_group(n_members, n_partitions)
        k_cluster = kafka_cluster(cluster.partitions)
        big = n_members * n_partitions > BIG
        peer_runs: dict[str, dict[str, Result]] = {}
        for pair in PAIRS:
            if big and not pair.ours_at_big_sizes:
                continue
            ours = (
                run_contender(
                    f"ours {pair.name}",
                    ours_caller(pair.ours, cluster),
                    subscriptions,
                    n_partitions,
                    repeats,
                    pair.cooperative,
                )
                if pair.ours is not None
                else None
            )
            peer: dict[str, Result] | None = None
            peer_note = ""
            if pair.peer_is_sticky and n_members * n_partitions > KAFKA_STICKY_LIMIT:
                peer_note = "skipped"
                note = (
                    f"kafka-python's {pair.peer_name} assignor is skipped above 1,000 x 10,000 members x "
                    "partitions: it is O(P x M) per step (about 15 s per call at 1,000 x 10,000)."
                )
                if note not in notes:
                    notes.append(note)
            elif pair.peer_form + pair.peer_name in peer_runs:  # the same peer already measured here
                peer = peer_runs[pair.peer_form + pair.peer_name]
            else:
                peer = run_contender(
                    f"kafka-python {pair.peer_name}",
                    peer_caller(pair, k_cluster),
                    subscriptions,
                    n_partitions,
                    repeats,
                    pair.cooperative,
                )
                peer_runs[pair.peer_form + pair.peer_name] = peer
            if ours is None:
                notes.append(f"ours {pair.name}: coordinator_consumer has no such assignor yet.")
            for case in CASES:
                rows.append(
                    (
                        size,
                        case,
                        pair,
                        None if ours is None else ours[case],
                        None if peer is None else peer[case],
                        peer_note,
                    )
                )

    print()
    print(table(rows))
    print()
    print("Times are medians in milliseconds per call (the ratio is kafka-python's over ours); peak MiB is")
    print("what tracemalloc saw allocated during one call; max-min is the spread of partitions per member;")
    print("moved counts partitions taken from members that stay, beside the minimum any balanced assignor")
    print("must take. Cooperative rows are round one (what moves is held back until the next round).")
    print("kafka-python has no uniform (KIP-848) assignor; the uniform rows compare with its sticky one.")
    for note in dict.fromkeys(notes):
        print(f"* {note}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
