"""Partitions added to a topic while a group consumes it (``kafka-topics --alter --partitions``)
reach the group's members, on the embedded coordinator and on Apache Kafka 4's brokers, with
either group protocol: with the classic one the group's leader sees the new partition count at
its next metadata check and rejoins (as Kafka's consumer does); with KIP-848's the coordinator
sees it and moves the group to a new epoch. The partitions are added by kafka-python's admin
client, a real client of both servers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient, NewPartitions
from member_processes import wait_for
from poll_threads import PollThreads

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

SETTINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 10_000}
CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)


@pytest.fixture(params=["embedded", "kafka"])
def bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """Where the group runs: an embedded coordinator, or the suite's Kafka cluster."""
    if request.param == "kafka":
        cluster: KafkaCluster = request.getfixturevalue("kafka_cluster")
        yield cluster.bootstrap_servers
    else:
        with EmbeddedCoordinator(config=CONFIG) as coordinator:
            yield coordinator.bootstrap_servers


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_partitions_added_to_a_topic_reach_the_groups_members(bootstrap: str, group_protocol: str) -> None:
    topic, group = f"grown-{uuid.uuid4().hex[:8]}", f"growing-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    members = [
        ConsumerGroupMember(
            group,
            bootstrap,
            topics=[topic],
            group_protocol=group_protocol,
            metadata_max_age_ms=500,  # the classic leader's metadata check (Kafka's default: 5 min)
            client_id=f"m{i}",
            **SETTINGS,  # type: ignore[arg-type]
        )
        for i in range(2)
    ]

    def settled_on(count: int) -> bool:
        owned = [m.assignment() for m in members]
        every = {(topic, p) for p in range(count)}
        return all(len(mine) == count // 2 for mine in owned) and owned[0] | owned[1] == every

    with PollThreads(members, close=lambda m: m.close(timeout=5)):
        wait_for(lambda: settled_on(2), 60, "each member to own one of the two partitions")
        before = [m.generation().generation_id for m in members]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_partitions({topic: NewPartitions(6)})
        finally:
            admin.close()
        wait_for(lambda: settled_on(6), 60, "each member to own three of the six partitions")
        assert all(m.generation().generation_id > b for m, b in zip(members, before, strict=True))
