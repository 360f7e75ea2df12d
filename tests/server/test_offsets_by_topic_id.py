"""OffsetCommit and OffsetFetch v10, which name topics by topic id instead of by name (Kafka 4's
clients use them), answered as Apache Kafka 4.3.1 answers them.

The same requests go to the suite's Kafka cluster and to the embedded coordinator, each naming
the topics by the ids that server gave them (Metadata v12); every answer is reduced to what a
client reads, ids put back as the names they stand for, and the two compared. A commit's answer
is compared in order (Kafka answers the topics and partitions that fail its checks first); a
fetch's as a set (Kafka lists a group's topics in its own hash order). A topic asked twice in
one commit is answered twice, as the group coordinator answers each entry, unless something
failed KafkaApis's own checks: its answer then has one entry per topic.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.consumer import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka_tools import _call, _connect

from coordinator_api import EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

PARTITIONS = {"a": 2, "b": 1}
UNKNOWN = uuid.UUID("01234567-89ab-cdef-0123-456789abcdef")  # no topic has these ids
OTHER_UNKNOWN = uuid.UUID("fedcba98-7654-3210-fedc-ba9876543210")
ZERO = uuid.UUID(int=0)

# A topic as a request names it: one of PARTITIONS' names, or one of the ids above.
TopicRef = str | uuid.UUID

COMMIT_TOPIC = OffsetCommitRequest.OffsetCommitRequestTopic
COMMIT_PARTITION = COMMIT_TOPIC.OffsetCommitRequestPartition
FETCH_GROUP = OffsetFetchRequest.OffsetFetchRequestGroup
FETCH_TOPIC = FETCH_GROUP.OffsetFetchRequestTopics


class Server:
    """One server under test: a connection to each group's coordinator, and its topics' ids."""

    def __init__(self, coordinator_of: Callable[[str], str], prefix: str) -> None:
        self.coordinator_of = coordinator_of  # a group's coordinator's address
        self.connections: dict[str, socket.socket] = {}
        self.prefix = prefix  # the topic names on this server are prefix + PARTITIONS' names
        metadata = _call(
            self.sock(""),
            MetadataRequest(
                version=12,
                topics=[
                    MetadataRequest.MetadataRequestTopic(topic_id=None, name=prefix + t) for t in PARTITIONS
                ],
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            ),
            MetadataResponse,
        )
        self.ids = {t.name.removeprefix(prefix): t.topic_id for t in metadata.topics}
        assert sorted(self.ids) == sorted(PARTITIONS), metadata
        self.names = {topic_id: name for name, topic_id in self.ids.items()}

    def sock(self, group: str) -> socket.socket:
        address = self.coordinator_of(group)
        if address not in self.connections:
            self.connections[address] = _connect(address)
        return self.connections[address]

    def topic_id(self, topic: TopicRef) -> uuid.UUID:
        return topic if isinstance(topic, uuid.UUID) else self.ids[topic]

    def read(self, topic_id: uuid.UUID | None) -> str:
        """The name a topic id in an answer stands for (kafka-python reads a zero id as None)."""
        if topic_id is None:
            return "zero id"
        return self.names.get(topic_id, "unknown id" if topic_id == UNKNOWN else "other unknown id")

    def commit(
        self, group: str, topics: list[tuple[TopicRef, list[int]]], *, version: int = 10, generation: int = -1
    ) -> list[tuple[str, list[tuple[int, int]]]]:
        request = OffsetCommitRequest(
            version=version,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id="",
            group_instance_id=None,
            topics=[
                COMMIT_TOPIC(
                    name=self.prefix + topic if isinstance(topic, str) else "",
                    topic_id=self.topic_id(topic),
                    partitions=[
                        COMMIT_PARTITION(
                            partition_index=p, committed_offset=10 + p, committed_metadata=f"m{p}"
                        )
                        for p in partitions
                    ],
                )
                for topic, partitions in topics
            ],
        )
        answer = _call(self.sock(group), request, OffsetCommitResponse)
        return [
            (
                self.read(t.topic_id) if version >= 10 else t.name.removeprefix(self.prefix),
                [(p.partition_index, p.error_code) for p in t.partitions],
            )
            for t in answer.topics
        ]

    def fetch(self, group: str, topics: list[tuple[TopicRef, list[int]]] | None) -> tuple[int, set[Any]]:
        request = OffsetFetchRequest(
            version=10,
            groups=[
                FETCH_GROUP(
                    group_id=group,
                    member_id=None,
                    member_epoch=-1,
                    topics=None
                    if topics is None
                    else [FETCH_TOPIC(topic_id=self.topic_id(t), partition_indexes=ps) for t, ps in topics],
                )
            ],
            require_stable=False,
        )
        (answer,) = _call(self.sock(group), request, OffsetFetchResponse).groups
        return answer.error_code, {
            (
                self.read(t.topic_id),
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata,
                p.error_code,
            )
            for t in answer.topics
            for p in t.partitions
        }


def battery(server: Server, group: str) -> list[tuple[str, object]]:
    """Every request of the comparison, with its answer."""
    absent = group + "-never-used"
    steps: list[tuple[str, Callable[[], object]]] = [
        ("commit a 0, 1", lambda: server.commit(group, [("a", [0, 1])])),
        ("commit an unknown id, then b", lambda: server.commit(group, [(UNKNOWN, [0, 1]), ("b", [0])])),
        (
            "commit an unknown id, a, another unknown id",
            lambda: server.commit(group, [(UNKNOWN, [0]), ("a", [0]), (OTHER_UNKNOWN, [3])]),
        ),
        ("commit a 1 and 7 (no partition 7)", lambda: server.commit(group, [("a", [1, 7])])),
        ("commit the zero id", lambda: server.commit(group, [(ZERO, [0])])),
        ("commit a 0, then a again, 1", lambda: server.commit(group, [("a", [0]), ("a", [1])])),
        (
            "commit a 7 (no partition 7), then b, then a again, 0",
            lambda: server.commit(group, [("a", [7]), ("b", [0]), ("a", [0])]),
        ),
        ("commit an unknown id twice", lambda: server.commit(group, [(UNKNOWN, [0]), (UNKNOWN, [1])])),
        (
            "commit v9 by name, a 0, then a again, 1",
            lambda: server.commit(group, [("a", [0]), ("a", [1])], version=9),
        ),
        (
            "commit v9 by name, a 0, then a again, 1 and 7",
            lambda: server.commit(group, [("a", [0]), ("a", [1, 7])], version=9),
        ),
        ("commit a with no partition", lambda: server.commit(group, [("a", [])])),
        (
            "commit v9 by name, a 1 and 7",
            lambda: server.commit(group, [("a", [1, 7]), ("b", [0])], version=9),
        ),
        (
            "commit with a generation to a group that does not exist",
            lambda: server.commit(absent, [("a", [0, 7]), (UNKNOWN, [0])], generation=5),
        ),
        ("fetch a 0, 1, 3 and b 0, 5", lambda: server.fetch(group, [("a", [0, 1, 3]), ("b", [0, 5])])),
        (
            "fetch an unknown id, a, the zero id",
            lambda: server.fetch(group, [(UNKNOWN, [0]), ("a", [0]), (ZERO, [0])]),
        ),
        ("fetch every offset", lambda: server.fetch(group, None)),
        ("fetch from a group never used", lambda: server.fetch(absent, [("a", [0])])),
    ]
    return [(label, step()) for label, step in steps]


@pytest.mark.kafka_python
def test_offsets_named_by_topic_id_are_answered_as_kafka_answers_them(kafka: KafkaCluster) -> None:
    prefix, group = "offsets-by-id-", "offsets-by-id"
    for name, partitions in PARTITIONS.items():
        kafka.create_topic(prefix + name, partitions)
    on_kafka = battery(
        Server(lambda g: kafka.broker(kafka.coordinator_of(g or group)).address, prefix), group
    )
    topics = {prefix + name: partitions for name, partitions in PARTITIONS.items()}
    with EmbeddedCoordinator(topics=topics) as coordinator:
        ours = battery(Server(lambda _: coordinator.bootstrap_servers, prefix), group)
    for (label, expected), (_, answered) in zip(on_kafka, ours, strict=True):
        assert answered == expected, f"{label}: Kafka answered {expected}, the coordinator {answered}"
    # What the battery saw, so that a wrong battery cannot pass unnoticed.
    answers = dict(ours)
    assert answers["commit an unknown id, a, another unknown id"] == [
        ("unknown id", [(0, 100)]),
        ("other unknown id", [(3, 100)]),
        ("a", [(0, 0)]),
    ]
    assert answers["commit a 1 and 7 (no partition 7)"] == [("a", [(7, 3), (1, 0)])]
    # A topic asked twice: answered twice when nothing fails Kafka's own checks, else once.
    assert answers["commit a 0, then a again, 1"] == [("a", [(0, 0)]), ("a", [(1, 0)])]
    assert answers["commit v9 by name, a 0, then a again, 1 and 7"] == [("a", [(7, 3), (0, 0), (1, 0)])]
    # What fails Kafka's own checks first, in the order asked; the group's refusal for the rest.
    assert answers["commit with a generation to a group that does not exist"] == [
        ("a", [(7, 3), (0, 69)]),
        ("unknown id", [(0, 100)]),
    ]
    error, fetched = answers["fetch an unknown id, a, the zero id"]  # type: ignore[misc]
    assert (error, fetched) == (
        0,
        {("unknown id", 0, -1, -1, "", 100), ("a", 0, 10, -1, "m0", 0), ("zero id", 0, -1, -1, "", 100)},
    )
