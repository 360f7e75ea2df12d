"""More partitions for a topic (CreatePartitions, ``kafka-topics --alter --partitions``) on the
embedded coordinator: its answers beside Apache Kafka 4's (the suite's cluster), Kafka's own
kafka-topics against it, and the new partitions kept across a restart. The consumer groups that
get the new partitions: tests/consumer/test_topic_changes.py; ACLs: tests/server/test_acls.py."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka_tools import call, kafka_topics

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._protocol import ApiKey, ErrorCode
from coordinator_api.testing import KafkaCluster

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)
Grow = CreatePartitionsRequest.CreatePartitionsTopic
Assignment = CreatePartitionsRequest.CreatePartitionsTopic.CreatePartitionsAssignment
# Kafka 4.3.1's controller answers an unknown topic without words (ReplicationControlManager
# throws UnknownTopicOrPartitionException without a message), as this coordinator does; in one
# run of this test a broker of the suite's cluster answered it with the error's own words.
UNKNOWN_TOPIC_WORDS = "This server does not host this topic-partition."


def grow(name: str, count: int, *brokers: list[int]) -> Any:
    """A topic of a CreatePartitions: ``count`` partitions in all, the new ones on ``brokers``
    (one list per new partition), or where the server likes if none are given."""
    assignments = [Assignment(broker_ids=b) for b in brokers] if brokers else None
    return Grow(name=name, count=count, assignments=assignments)


def create_partitions(*topics: Any, validate_only: bool = False, version: int = 3) -> Any:
    return CreatePartitionsRequest(
        version=version, topics=list(topics), timeout_ms=30_000, validate_only=validate_only
    )


def partition_counts(bootstrap: str, names: list[str]) -> dict[str, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {t["name"]: len(t["partitions"]) for t in admin.describe_topics(names)}
    finally:
        admin.close()


def transcript(bootstrap: str, prefix: str, node: int) -> list[object]:
    """The same requests on either server: each answer as (topic, error, message), the topics'
    prefix written ``p`` and the server's own broker id ``<node>``, then the partition counts
    every client sees afterwards."""
    a, b = f"{prefix}-a", f"{prefix}-b"

    def said(request: Any) -> list[tuple[str, str, str | None]]:
        answer = call(bootstrap, request, CreatePartitionsResponse)
        return [
            (
                r.name.replace(prefix, "p"),
                ErrorCode(r.error_code).name,
                None
                if r.error_message in (None, UNKNOWN_TOPIC_WORDS)
                else r.error_message.replace(prefix, "p").replace(f"broker {node} ", "broker <node> "),
            )
            for r in answer.results
        ]

    seen: list[object] = [
        said(create_partitions(grow(a, 4), validate_only=True)),  # checked, not done
        said(create_partitions(grow(a, 4))),
        said(create_partitions(grow(a, 4), version=0)),  # as many as it has
        said(create_partitions(grow(a, 3))),  # fewer
        said(create_partitions(grow(f"{prefix}-nowhere", 3))),
        said(create_partitions(grow(b, 3), grow(b, 4))),  # one topic twice: one answer
        said(create_partitions(grow(b, 4, [node]))),  # two new partitions, one assignment
        said(create_partitions(grow(b, 3, []))),
        said(create_partitions(grow(b, 3, [99]))),  # a broker that does not exist
        said(create_partitions(grow(b, 3, [node, node]))),
        said(create_partitions(grow(b, 3, [node]))),
    ]
    deadline = time.monotonic() + 30  # Kafka's brokers learn of new partitions from its controller
    while (counts := partition_counts(bootstrap, [a, b])) != {a: 4, b: 3} and time.monotonic() < deadline:
        time.sleep(0.2)
    seen.append(sorted((name.replace(prefix, "p"), count) for name, count in counts.items()))
    topic = DescribeConfigsRequest.DescribeConfigsResource
    described = call(
        bootstrap,
        DescribeConfigsRequest(
            version=4,
            resources=[topic(resource_type=2, resource_name=f"{prefix}-nowhere", configuration_keys=None)],
            include_synonyms=False,
            include_documentation=False,
        ),
        DescribeConfigsResponse,
    )
    seen.append([(ErrorCode(r.error_code).name, r.error_message, r.configs) for r in described.results])
    versions = call(bootstrap, ApiVersionsRequest(version=2), ApiVersionsResponse)
    seen.append(
        [(k.min_version, k.max_version) for k in versions.api_keys if k.api_key == ApiKey.CREATE_PARTITIONS]
    )
    return seen


def test_create_partitions_is_answered_as_kafka_answers_it(kafka_cluster: KafkaCluster) -> None:
    prefix = f"grow-{uuid.uuid4().hex[:8]}"
    for name in (f"{prefix}-a", f"{prefix}-b"):
        kafka_cluster.create_topic(name, 2, replication_factor=1)
    node = kafka_cluster.brokers[0].node_id
    on_kafka = transcript(kafka_cluster.bootstrap_servers, prefix, node)
    topics = {f"{prefix}-a": 2, f"{prefix}-b": 2}
    with EmbeddedCoordinator(topics=topics, config=CONFIG) as coordinator:
        here = transcript(coordinator.bootstrap_servers, prefix, CONFIG.node_id)
    assert here == on_kafka
    # What the transcripts hold, in Kafka's words.
    assert here[:11] == [
        [("p-a", "NONE", None)],
        [("p-a", "NONE", None)],
        [("p-a", "INVALID_PARTITIONS", "Topic already has 4 partition(s).")],
        [
            (
                "p-a",
                "INVALID_PARTITIONS",
                "The topic p-a currently has 4 partition(s); 3 would not be an increase.",
            )
        ],
        [("p-nowhere", "UNKNOWN_TOPIC_OR_PARTITION", None)],
        [("p-b", "INVALID_REQUEST", "Duplicate topic name.")],
        [
            (
                "p-b",
                "INVALID_REPLICA_ASSIGNMENT",
                "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.",
            )
        ],
        [
            (
                "p-b",
                "INVALID_REPLICA_ASSIGNMENT",
                "The manual partition assignment includes an empty replica list.",
            )
        ],
        [
            (
                "p-b",
                "INVALID_REPLICA_ASSIGNMENT",
                "The manual partition assignment includes broker 99, but no such broker is registered.",
            )
        ],
        [
            (
                "p-b",
                "INVALID_REPLICA_ASSIGNMENT",
                "The manual partition assignment includes the broker <node> more than once.",
            )
        ],
        [("p-b", "NONE", None)],
    ]
    assert here[11:13] == [[("p-a", 4), ("p-b", 3)], [("UNKNOWN_TOPIC_OR_PARTITION", "", [])]]


def test_kafka_topics_alters_and_describes_a_topic_of_the_embedded_coordinator(tmp_path: Path) -> None:
    """Kafka's own kafka-topics: --alter gives the topic more partitions, --describe shows them
    (with no configs: the embedded coordinator keeps no log), and a restart keeps them."""
    with EmbeddedCoordinator(topics={"orders": 2}, config=CONFIG, data_dir=tmp_path) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        altered = kafka_topics(bootstrap, "--alter", "--topic", "orders", "--partitions", "6")
        assert altered.returncode == 0, altered
        described = kafka_topics(bootstrap, "--describe", "--topic", "orders")
        assert described.returncode == 0, described
        header, *partitions = described.stdout.strip().splitlines()
        assert "PartitionCount: 6" in header and "ReplicationFactor: 1" in header, described
        assert [line.split()[3] for line in partitions] == [str(p) for p in range(6)], described
        refused = kafka_topics(bootstrap, "--alter", "--topic", "orders", "--partitions", "4")
        assert refused.returncode == 1
        assert "The topic orders currently has 6 partition(s); 4 would not be an increase." in refused.output
        with pytest.raises(ConfigurationError, match=r"Topic already has 6 partition\(s\)\."):
            coordinator.create_partitions("orders", 6)
    with EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path) as restarted:
        assert partition_counts(restarted.bootstrap_servers, ["orders"]) == {"orders": 6}
        restarted.create_partitions("orders", 8)
        assert partition_counts(restarted.bootstrap_servers, ["orders"]) == {"orders": 8}
