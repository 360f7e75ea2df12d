"""Topics that change while a group consumes them, on the embedded coordinator and on Apache
Kafka 4's brokers, with either group protocol: partitions added (``kafka-topics --alter
--partitions``) reach the group's members, and a topic deleted (``kafka-topics --delete``)
leaves them. With the classic protocol the group's leader sees the change at its next metadata
check and rejoins (as Kafka's consumer does); with KIP-848's the coordinator sees it and moves
the group to a new epoch. kafka-python's admin client, a real client of both servers, makes
the changes."""

from __future__ import annotations

import uuid

import pytest
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient, NewPartitions
from member_processes import wait_for
from poll_threads import PollThreads

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

SETTINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 10_000}
CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def two_members(bootstrap: str, group_protocol: str, topics: list[str]) -> list[ConsumerGroupMember]:
    group = f"changing-{uuid.uuid4().hex[:8]}"
    return [
        ConsumerGroupMember(
            group,
            bootstrap,
            topics=topics,
            group_protocol=group_protocol,
            metadata_max_age_ms=500,  # the classic leader's metadata check (Kafka's default: 5 min)
            client_id=f"m{i}",
            **SETTINGS,  # type: ignore[arg-type]
        )
        for i in range(2)
    ]


def partitions_added_to_a_topic_reach_the_groups_members(bootstrap: str, group_protocol: str) -> None:
    topic = f"grown-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    members = two_members(bootstrap, group_protocol, [topic])

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


def a_deleted_topic_leaves_the_groups_members(bootstrap: str, group_protocol: str) -> None:
    kept, gone = f"kept-{uuid.uuid4().hex[:8]}", f"gone-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, kept, 2)
    create_topic(bootstrap, gone, 2)
    members = two_members(bootstrap, group_protocol, [kept, gone])

    def owned() -> list[set[tuple[str, int]]]:
        return [m.assignment() for m in members]

    def settled_on(topics: list[str]) -> bool:
        every = {(t, p) for t in topics for p in range(2)}
        mine = owned()
        share = len(every) // 2
        return all(len(m) == share for m in mine) and mine[0] | mine[1] == every

    with PollThreads(members, close=lambda m: m.close(timeout=5)):
        wait_for(lambda: settled_on([kept, gone]), 60, "the two members to share both topics")
        before = [m.generation().generation_id for m in members]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.delete_topics([gone])
        finally:
            admin.close()
        wait_for(lambda: settled_on([kept]), 60, f"each member to own one partition of {kept} only")
        assert all(m.generation().generation_id > b for m, b in zip(members, before, strict=True))


SCENARIOS = {
    "partitions added": partitions_added_to_a_topic_reach_the_groups_members,
    "topic deleted": a_deleted_topic_leaves_the_groups_members,
}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_on_the_embedded_coordinator(scenario: str, group_protocol: str) -> None:
    with EmbeddedCoordinator(config=CONFIG) as coordinator:
        SCENARIOS[scenario](coordinator.bootstrap_servers, group_protocol)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("group_protocol", ["classic", "consumer"])
def test_on_kafka(kafka_cluster: KafkaCluster, scenario: str, group_protocol: str) -> None:
    SCENARIOS[scenario](kafka_cluster.bootstrap_servers, group_protocol)
