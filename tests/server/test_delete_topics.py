"""Deleting topics (DeleteTopics, ``kafka-topics --delete``) on the embedded coordinator: its
answers beside Apache Kafka 4's (the suite's cluster), every group's committed offsets of a
deleted topic gone with it, Kafka's own kafka-topics against it, and a restart that remembers.
Groups that consume a topic while it is deleted: tests/consumer/test_topic_changes.py; ACLs:
tests/server/test_acls_on_kafka.py."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.protocol.admin import DeleteTopicsRequest, DeleteTopicsResponse
from kafka.structs import OffsetAndMetadata, TopicPartition
from kafka_tools import call, kafka_topics

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._protocol import ErrorCode
from coordinator_api.testing import KafkaCluster

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)
ZERO = uuid.UUID(int=0)
PATIENCE_S = 30.0  # Kafka's brokers and group coordinator learn of a deletion from its controller


def admin_of(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap)


def until(done: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + PATIENCE_S
    while not (found := done()):
        assert time.monotonic() < deadline, f"waited {PATIENCE_S} s for {what}"
        time.sleep(0.2)
    return found


def topic_ids(bootstrap: str, names: list[str]) -> dict[str, uuid.UUID]:
    admin = admin_of(bootstrap)
    try:
        return {t["name"]: uuid.UUID(str(t["topic_id"])) for t in admin.describe_topics(names)}
    finally:
        admin.close()


def transcript(bootstrap: str, prefix: str) -> list[object]:
    """The same requests on either server, each answer sorted (Kafka shuffles them) as (topic,
    topic id, error, message) with the prefix written ``p`` and ids named by their topic; then
    what is left of the topics and of a group's committed offsets."""
    names = [f"{prefix}-{x}" for x in "abcde"]
    ids = topic_ids(bootstrap, names)
    known = {topic_id: f"id of {name.replace(prefix, 'p')}" for name, topic_id in ids.items()}
    known[ZERO] = "-"
    stranger = uuid.uuid4()
    known[stranger] = "a stranger's id"
    group = f"{prefix}-readers"
    admin = admin_of(bootstrap)
    try:
        committed = {TopicPartition(n, 0): OffsetAndMetadata(7, "", -1) for n in names[:2]}
        admin.alter_group_offsets(group, committed)
    finally:
        admin.close()

    def said(*topics: tuple[str | None, uuid.UUID], version: int = 6) -> list[tuple[object, ...]]:
        if version >= 6:
            state = DeleteTopicsRequest.DeleteTopicState
            request = DeleteTopicsRequest(
                version=version, topics=[state(name=n, topic_id=i) for n, i in topics], timeout_ms=30_000
            )
        else:
            named = [n for n, _ in topics]
            request = DeleteTopicsRequest(version=version, topic_names=named, timeout_ms=30_000)
        answer = call(bootstrap, request, DeleteTopicsResponse)
        return sorted(
            (
                r.name and r.name.replace(prefix, "p"),
                known.get(getattr(r, "topic_id", None) or ZERO, "?"),
                ErrorCode(r.error_code).name,
                r.error_message and r.error_message.replace(prefix, "p"),
            )
            for r in answer.responses
        )

    a, b, c, d, e = names
    seen: list[object] = [
        said((a, ZERO)),
        said((a, ZERO)),  # gone
        said((None, ids[b])),  # by its id
        said((None, stranger)),
        said((c, ids[c])),  # both ways at once
        said((None, ZERO)),  # neither
        said((c, ZERO), (c, ZERO)),  # twice by name
        said((None, ids[c]), (None, ids[c])),  # twice by id
        said((c, ZERO), (None, ids[c])),  # by name and by id: one answer
        said((d, ZERO), version=5),  # names only, with messages
        said((e, ZERO), (f"{prefix}-nowhere", ZERO), version=1),  # no messages
    ]

    def left() -> list[str] | None:
        admin = admin_of(bootstrap)
        try:
            topics = sorted(t.replace(prefix, "p") for t in admin.list_topics() if t.startswith(prefix))
            offsets = admin.list_group_offsets(group)[group]
        finally:
            admin.close()
        return topics if topics == ["p-c"] and not offsets else None

    seen.append(until(left, "the deleted topics and their offsets to be gone"))
    return seen


def test_delete_topics_is_answered_as_kafka_answers_it(kafka_cluster: KafkaCluster) -> None:
    prefix = f"gone-{uuid.uuid4().hex[:8]}"
    names = [f"{prefix}-{x}" for x in "abcde"]
    for name in names:
        kafka_cluster.create_topic(name, 1, replication_factor=1)
    on_kafka = transcript(kafka_cluster.bootstrap_servers, prefix)
    with EmbeddedCoordinator(topics=dict.fromkeys(names, 1), config=CONFIG) as coordinator:
        here = transcript(coordinator.bootstrap_servers, prefix)
    assert here == on_kafka
    unknown = "This server does not host this topic-partition."
    assert here == [
        [("p-a", "id of p-a", "NONE", None)],
        [("p-a", "-", "UNKNOWN_TOPIC_OR_PARTITION", unknown)],
        [("p-b", "id of p-b", "NONE", None)],
        [(None, "a stranger's id", "UNKNOWN_TOPIC_ID", "This server does not host this topic ID.")],
        [("p-c", "id of p-c", "INVALID_REQUEST", "You may not specify both topic name and topic id.")],
        [(None, "-", "INVALID_REQUEST", "Neither topic name nor id were specified.")],
        [("p-c", "-", "INVALID_REQUEST", "Duplicate topic name.")],
        [(None, "id of p-c", "INVALID_REQUEST", "Duplicate topic id.")],
        [
            (
                "p-c",
                "id of p-c",
                "INVALID_REQUEST",
                "The provided topic name maps to an ID that was already supplied.",
            )
        ],
        [("p-d", "-", "NONE", None)],
        [("p-e", "-", "NONE", None), ("p-nowhere", "-", "UNKNOWN_TOPIC_OR_PARTITION", None)],
        ["p-c"],
    ]


def test_kafka_topics_deletes_a_topic_of_the_embedded_coordinator(tmp_path: Path) -> None:
    """Kafka's own kafka-topics --delete; the topic and its committed offsets stay gone after a
    restart, and a topic of that name created again is a new topic (a new id)."""
    topics = {"orders": 2, "audit": 1}
    with EmbeddedCoordinator(topics=topics, config=CONFIG, data_dir=tmp_path) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        old_id = topic_ids(bootstrap, ["orders"])["orders"]
        admin = admin_of(bootstrap)
        try:
            offsets = {TopicPartition(t, 0): OffsetAndMetadata(3, "", -1) for t in ("orders", "audit")}
            admin.alter_group_offsets("readers", offsets)
        finally:
            admin.close()
        deleted = kafka_topics(bootstrap, "--delete", "--topic", "orders")
        assert deleted.returncode == 0, deleted
        listed = kafka_topics(bootstrap, "--list")
        assert listed.stdout.split() == ["audit"], listed
    with EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path) as restarted:
        admin = admin_of(restarted.bootstrap_servers)
        try:
            assert admin.list_topics() == ["audit"]
            assert admin.list_group_offsets("readers")["readers"] == {
                TopicPartition("audit", 0): OffsetAndMetadata(3, "", -1)
            }
        finally:
            admin.close()
        restarted.create_topic("orders", 4)
        assert topic_ids(restarted.bootstrap_servers, ["orders"])["orders"] != old_id
