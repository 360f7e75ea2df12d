"""Records read from a Kafka-protocol cluster (librdkafka's mock) under ConsumerGroupMember's management."""

from __future__ import annotations

import threading
import time
from typing import Any

from coordinator_consumer import AssignedConsumer, ConsumerGroupMember
from kafka import KafkaConsumer, KafkaProducer

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

        seen: dict[str, set[int]] = {"r0": set(), "r1": set()}
        stop = threading.Event()
        errors: list[BaseException] = []

        def read(name: str, reader: AssignedConsumer) -> None:
            while not stop.is_set():
                try:
                    for record in reader.poll(0.2):
                        seen[name].add(int(record.value))
                    reader.commit()
                except Exception as exc:
                    errors.append(exc)
                    time.sleep(0.1)

        threads = [
            threading.Thread(target=read, args=(n, r), daemon=True)
            for n, r in zip(seen, readers, strict=True)
        ]
        for t in threads:
            t.start()
        try:
            deadline = time.monotonic() + 60
            settled: Any = None
            while time.monotonic() < deadline:
                owned = [r.member.assignment() for r in readers]
                if seen["r0"] | seen["r1"] == set(range(40)) and all(owned) and not owned[0] & owned[1]:
                    settled = owned
                    break
                time.sleep(0.1)
        finally:
            stop.set()
            for t in threads:
                t.join()
            for r in readers:
                r.member.close(timeout=5)
                r.consumer.close()
        assert settled is not None, f"seen {sorted(seen['r0'] | seen['r1'])}, errors {errors[:3]}"
        assert settled[0] | settled[1] == {("orders", p) for p in range(4)}
