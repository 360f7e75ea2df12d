"""Rack-aware assignment end to end: ConsumerGroupMember reads the racks of the replicas from a
Kafka-protocol cluster whose brokers have racks (librdkafka's mock), and every assignor puts
each partition with the member in its replica's rack."""

from __future__ import annotations

import time

from coordinator_consumer import ASSIGNORS, ConsumerGroupMember
from poll_threads import PollThreads

from coordinator_api.testing import KAFKA_PYTHON_API_VERSION, LibrdkafkaMockCluster

RACKS = {1: "a", 2: "b", 3: "c"}  # broker id -> rack


def test_every_assignor_gives_each_member_the_partitions_whose_replica_is_in_its_rack() -> None:
    with LibrdkafkaMockCluster(brokers=3) as cluster:
        for broker_id, rack in RACKS.items():
            cluster.set_broker_rack(broker_id, rack)
        cluster.create_topic("orders", 6)  # one replica each, spread over the three brokers
        # One group per assignor, all at once; in each, one member per rack.
        groups = {
            assignor: {
                rack: ConsumerGroupMember(
                    f"racks-{assignor}",
                    cluster.bootstrap_servers,
                    topics=["orders"],
                    assignor=assignor,
                    rack=rack,
                    client_id=f"{assignor}-in-{rack}",
                    session_timeout_ms=6000,
                    heartbeat_interval_ms=300,
                    api_version=KAFKA_PYTHON_API_VERSION,
                )
                for rack in ("c", "a", "b")
            }
            for assignor in sorted(ASSIGNORS)
        }
        members = [m for group in groups.values() for m in group.values()]
        # What the cluster says, read independently of the groups' leaders.
        replica_racks = members[0]._cluster(["orders"]).replica_racks
        assert sorted("".join(sorted(racks)) for racks in replica_racks.values()) == list("aabbcc")
        local = {
            r: {(tp.topic, tp.partition) for tp, racks in replica_racks.items() if r in racks} for r in "abc"
        }

        def not_local() -> dict[str, dict[str, set[tuple[str, int]]]]:
            return {
                assignor: {rack: m.assignment() for rack, m in group.items()}
                for assignor, group in groups.items()
                if any(m.assignment() != local[rack] for rack, m in group.items())
            }

        with PollThreads(members, close=lambda m: m.close(timeout=2)):
            deadline = time.monotonic() + 60
            while not_local() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not not_local(), f"not in their racks: {not_local()}; racks: {local}"
