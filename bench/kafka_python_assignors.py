"""kafka-python's assignors on this project's inputs: the adapters the benchmark and the tests share.

kafka-python's assignors take a ``ClusterMetadata`` and ``JoinGroupResponseMember`` objects whose
metadata is a decoded ``ConsumerProtocolSubscription`` (or, for its sticky assignor, one carrying
``StickyAssignorUserData``). These functions build those from our ``Subscription`` and
``Cluster`` and turn the answer back into our ``Assignment``, so one input can go to ours and to
kafka-python's, in ``bench/bench_assignors.py`` and in the equivalence tests of
``tests/consumer/test_range_roundrobin.py`` (pytest puts ``bench/`` on ``sys.path``: the
``pythonpath`` setting in ``pyproject.toml``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from kafka.cluster import ClusterMetadata
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer import ConsumerProtocolSubscription
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.metadata import MetadataResponse
from kafka.structs import TopicPartition as KafkaTopicPartition

__all__ = ["FORMS", "from_kafka", "kafka_cluster", "kafka_members", "kafka_python_assign"]

#: How a kafka-python assignor gets the previous assignment: not at all ("plain": range,
#: roundrobin), in ``StickyAssignorUserData`` ("sticky") or as owned partitions with their
#: generation, ConsumerProtocolSubscription v2 ("cooperative").
FORMS = ("plain", "sticky", "cooperative")


def kafka_cluster(partitions: Mapping[str, int]) -> ClusterMetadata:
    """A kafka-python ClusterMetadata fed a MetadataResponse, as a real consumer's is."""
    v = 1
    wire_partition = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    response = MetadataResponse(
        version=v,
        brokers=[
            MetadataResponse.MetadataResponseBroker(
                node_id=0, host="localhost", port=9092, rack=None, version=v
            )
        ],
        controller_id=0,
        topics=[
            MetadataResponse.MetadataResponseTopic(
                error_code=0,
                name=topic,
                is_internal=False,
                partitions=[
                    wire_partition(
                        error_code=0,
                        partition_index=p,
                        leader_id=0,
                        replica_nodes=[0],
                        isr_nodes=[0],
                        version=v,
                    )
                    for p in range(count)
                ],
                version=v,
            )
            for topic, count in partitions.items()
        ],
    )
    cluster = ClusterMetadata()
    cluster.update_metadata(response)
    return cluster


def kafka_members(form: str, subscriptions: Sequence[Subscription]) -> list[Any]:
    """Our subscriptions as kafka-python's JoinGroup members, metadata in ``form`` (:data:`FORMS`).

    Static members come first: kafka-python splits static from dynamic members with
    ``itertools.groupby``, which only groups neighbours, so interleaved static and dynamic
    members would lose some of them (kafka-python 3.0.12). The order is otherwise kept.
    """
    if form not in FORMS:
        raise ValueError(f"form must be one of {', '.join(FORMS)}, not {form!r}")
    members = []
    for s in sorted(subscriptions, key=lambda s: s.group_instance_id is None):
        topics = sorted(s.topics)
        if form == "sticky":
            owned = [KafkaTopicPartition(p.topic, p.partition) for p in s.owned] if s.owned else None
            metadata = StickyPartitionAssignor._metadata(topics, owned, s.generation)
        elif form == "cooperative":
            by_topic: dict[str, list[int]] = {}
            for p in s.owned:
                by_topic.setdefault(p.topic, []).append(p.partition)
            metadata = ConsumerProtocolSubscription(
                version=2,
                topics=topics,
                user_data=b"",
                owned_partitions=[
                    ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=sorted(ps))
                    for t, ps in sorted(by_topic.items())
                ],
                generation_id=s.generation,
            )
        else:
            metadata = ConsumerProtocolSubscription(version=0, topics=topics, user_data=b"")
        members.append(
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=s.member_id, group_instance_id=s.group_instance_id, metadata=metadata
            )
        )
    return members


def from_kafka(result: Mapping[str, Any]) -> Assignment:
    """kafka-python's answer (member id -> ConsumerProtocolAssignment) as our Assignment."""
    return {
        m: tuple(TopicPartition(p.topic, p.partition) for p in sorted(a.partitions()))
        for m, a in result.items()
    }


def kafka_python_assign(
    assignor: Any, subscriptions: Sequence[Subscription], cluster: Cluster, form: str = "plain"
) -> Assignment:
    """Run a kafka-python assignor (class or instance) on our inputs, all conversions included."""
    members = kafka_members(form, subscriptions)
    return from_kafka(assignor.assign(kafka_cluster(dict(cluster.partitions)), members))
