"""Records read from a Kafka-protocol cluster (librdkafka's mock) under ConsumerGroupMember's management."""

from __future__ import annotations

import time
from typing import Any

from coordinator_consumer import AssignedConsumer, CommitFailedError, ConsumerGroupMember
from kafka import KafkaConsumer, KafkaProducer
from poll_threads import PollThreads

from coordinator_api.testing import KAFKA_PYTHON_API_VERSION, LibrdkafkaMockCluster


def test_group_members_read_every_record_through_manually_assigned_consumers() -> None:
    with LibrdkafkaMockCluster(brokers=1) as cluster:
        bootstrap = cluster.bootstrap_servers
        cluster.create_topic("orders", 4)
        producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=KAFKA_PYTHON_API_VERSION)
        for i in range(40):
            producer.send("orders", value=str(i).encode(), partition=i % 4)
        producer.flush()
        producer.close()

        readers = []
        for name in ("r0", "r1"):
            member = ConsumerGroupMember(
                "readers",
                bootstrap,
                topics=["orders"],
                assignor="range",
                client_id=name,
                session_timeout_ms=6000,
                heartbeat_interval_ms=500,
                api_version=KAFKA_PYTHON_API_VERSION,
            )
            consumer = KafkaConsumer(
                bootstrap_servers=bootstrap,
                api_version=KAFKA_PYTHON_API_VERSION,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
            )
            readers.append(AssignedConsumer(member, consumer))

        seen: dict[AssignedConsumer, set[int]] = {r: set() for r in readers}

        def read(reader: AssignedConsumer) -> None:
            for record in reader.poll(0.2):
                seen[reader].add(int(record.value))
            reader.commit()

        def everything_read() -> set[int]:
            return set().union(*seen.values())

        settled: Any = None
        try:
            # A commit racing a rebalance is refused by design (the generation moved on).
            with PollThreads(readers, read, expect=(CommitFailedError,)):
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    owned = [r.member.assignment() for r in readers]
                    if everything_read() == set(range(40)) and all(owned) and not owned[0] & owned[1]:
                        settled = owned
                        break
                    time.sleep(0.1)
        finally:
            for r in readers:
                r.member.close(timeout=5)
                r.consumer.close()
        assert settled is not None, f"seen {sorted(everything_read())}"
        assert settled[0] | settled[1] == {("orders", p) for p in range(4)}
