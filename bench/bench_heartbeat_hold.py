"""How soon members learn of a rebalance, with and without the embedded coordinator's held
heartbeats, for three clients: kafka-python's KafkaConsumer, librdkafka (confluent-kafka) and
this project's Coordinator.

A group of two members of one client shares a topic; one member leaves (close, LeaveGroup) and
the bench measures the time until the other has every partition again (its assignment callback
ran). The coordinator answers heartbeats at once (``heartbeat_hold_ms=0``, as Kafka's classic
coordinator does) or holds them until the group changes (the default). Same machine, same run.

    python bench/bench_heartbeat_hold.py            # 5 trials per cell, about 2 minutes
    python bench/bench_heartbeat_hold.py --quick    # 2 trials, short intervals
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from kafka.errors import KafkaError

from coordinator_api import Coordinator, CoordinatorConfig, EmbeddedCoordinator, JoinedMember

TOPIC = "hold"
PARTITIONS = 4


class _Rebalanced:
    """When a member last got a full assignment."""

    def __init__(self) -> None:
        self.full_at: float | None = None
        self.event = threading.Event()

    def assigned(self, partitions: int) -> None:
        if partitions == PARTITIONS:
            self.full_at = time.monotonic()
            self.event.set()


class _Pair:
    """Two members of one client kind: start both, let them settle, close one, time the other."""

    def __init__(self, kind: str, bootstrap: str, group: str, session_ms: int, heartbeat_ms: int) -> None:
        self.kind = kind
        self.bootstrap = bootstrap
        self.group = group
        self.session_ms = session_ms
        self.heartbeat_ms = heartbeat_ms
        self.stop = [threading.Event(), threading.Event()]
        self.closed = [threading.Event(), threading.Event()]
        self.owned = [0, 0]
        self.survivor = _Rebalanced()
        self.threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in (0, 1)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def settled(self) -> bool:
        return self.owned[0] + self.owned[1] == PARTITIONS and min(self.owned) > 0

    def _on_assigned(self, index: int, count: int) -> None:
        self.owned[index] = count
        if index == 1 and self.stop[0].is_set():
            self.survivor.assigned(count)

    def _run(self, index: int) -> None:
        runner: Callable[[int], None] = getattr(self, f"_run_{self.kind.replace('-', '_')}")
        try:
            runner(index)
        finally:
            self.closed[index].set()

    def _run_kafka_python(self, index: int) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer
        from kafka.coordinator.assignors.range import RangePartitionAssignor

        pair, owned = self, set()

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                owned.difference_update(tp.partition for tp in revoked)

            def on_partitions_assigned(self, assigned: Any) -> None:
                owned.update(tp.partition for tp in assigned)
                pair._on_assigned(index, len(owned))

            def on_partitions_lost(self, lost: Any) -> None:
                owned.difference_update(tp.partition for tp in lost)

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=f"bench-{index}",
            session_timeout_ms=self.session_ms,
            heartbeat_interval_ms=self.heartbeat_ms,
            partition_assignment_strategy=[RangePartitionAssignor],
            enable_auto_commit=False,
        )
        # kafka-python 3.0.12 needs the topic's metadata before it joins, and polls of 500 ms
        # (shorter ones now and then lose its own SyncGroup answer; see tests/server/kafka_member.py).
        while not consumer.partitions_for_topic(TOPIC):
            time.sleep(0.05)
        consumer.subscribe([TOPIC], listener=Listener())
        while not self.stop[index].is_set():
            with contextlib.suppress(KafkaError):
                consumer.poll(timeout_ms=500)
        consumer.close()

    def _run_librdkafka(self, index: int) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "session.timeout.ms": self.session_ms,
                "heartbeat.interval.ms": self.heartbeat_ms,
                "enable.auto.commit": False,
                "log_level": 0,
            }
        )
        consumer.subscribe([TOPIC], on_assign=lambda c, parts: self._on_assigned(index, len(parts)))
        while not self.stop[index].is_set():
            consumer.poll(0.02)
        consumer.close()

    def _run_coordinator_api(self, index: int) -> None:
        pair = self

        class Member(Coordinator):
            def protocol_type(self) -> str:
                return "bench"

            def metadata(self) -> list[tuple[str, bytes]]:
                return [("split", b"")]

            def perform_assignment(
                self, leader_id: str, protocol: str, members: list[JoinedMember]
            ) -> dict[str, bytes]:
                ids = sorted(m.member_id for m in members)
                return {
                    m: json.dumps(list(range(i, PARTITIONS, len(ids)))).encode() for i, m in enumerate(ids)
                }

            def on_join_complete(
                self, generation: int, member_id: str, protocol: str, assignment: bytes
            ) -> None:
                pair._on_assigned(index, len(json.loads(assignment)))

        member = Member(
            self.group,
            self.bootstrap,
            session_timeout_ms=self.session_ms,
            heartbeat_interval_ms=self.heartbeat_ms,
            client_id=f"bench-{index}",
        )
        while not self.stop[index].is_set():
            member.poll(0.02)
        member.close()


def measure(kind: str, hold_ms: int, trials: int, session_ms: int, heartbeat_ms: int) -> list[float]:
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0, min_session_timeout_ms=500, heartbeat_hold_ms=hold_ms
    )
    samples: list[float] = []
    with EmbeddedCoordinator(topics={TOPIC: PARTITIONS}, config=config) as server:
        for trial in range(trials):
            pair = _Pair(
                kind, server.bootstrap_servers, f"{kind}-{hold_ms}-{trial}", session_ms, heartbeat_ms
            )
            pair.start()
            deadline = time.monotonic() + 60
            while not pair.settled():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{kind}: the pair did not settle")
                time.sleep(0.01)
            # Leave at points spread evenly over the heartbeat cycle, after a stable interval.
            time.sleep(heartbeat_ms / 1000 * (1 + (trial + 0.5) / trials))
            left_at = time.monotonic()
            pair.stop[0].set()
            if not pair.survivor.event.wait(session_ms / 1000 + 30):
                raise RuntimeError(f"{kind}: the survivor never took every partition")
            assert pair.survivor.full_at is not None
            samples.append((pair.survivor.full_at - left_at) * 1000)
            pair.stop[1].set()
            for done in pair.closed:
                done.wait(30)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 trials per cell and short intervals")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--session-ms", type=int, default=10_000)
    parser.add_argument("--heartbeat-ms", type=int, default=3_000)
    parser.add_argument("--clients", nargs="+", default=["kafka-python", "librdkafka", "coordinator-api"])
    args = parser.parse_args()
    if args.quick:
        args.trials, args.session_ms, args.heartbeat_ms = 2, 3000, 1000
    logging.basicConfig(level=logging.CRITICAL)
    rows = []
    for kind in args.clients:
        for hold in (0, 5000):
            samples = measure(kind, hold, args.trials, args.session_ms, args.heartbeat_ms)
            rows.append((kind, hold, samples))
            print(
                f"{kind:16} hold {hold:5} ms: " + ", ".join(f"{s:.0f}" for s in samples) + " ms", flush=True
            )
    print()
    print(
        f"Time from a member's LeaveGroup to the other member holding every partition "
        f"(session {args.session_ms} ms, heartbeat {args.heartbeat_ms} ms, {args.trials} trials):"
    )
    print()
    print("| client | answered at once: mean / max (ms) | held: mean / max (ms) | ratio held / at once |")
    print("| --- | ---: | ---: | ---: |")
    for kind in args.clients:
        at_once = next(s for k, h, s in rows if k == kind and h == 0)
        held = next(s for k, h, s in rows if k == kind and h > 0)
        ratio = statistics.mean(held) / statistics.mean(at_once)
        print(
            f"| {kind} | {statistics.mean(at_once):.0f} / {max(at_once):.0f} | "
            f"{statistics.mean(held):.0f} / {max(held):.0f} | {ratio:.2f}x |"
        )


if __name__ == "__main__":
    main()
