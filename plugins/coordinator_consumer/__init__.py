"""Kafka's consumer protocol as a coordinator-api plugin (protocol type ``consumer``).

Built in, and registered through the ``coordinator_api`` entry points exactly like a
third-party plugin. It provides:

* the wire format of Kafka's ConsumerProtocolSubscription v0-v3 and ConsumerProtocolAssignment,
  through kafka-python's message classes, so this plugin's members can share a group with
  kafka-python, librdkafka and Java consumers;
* assignors, pure functions over :mod:`coordinator_consumer._model`: ``range`` and
  ``roundrobin`` (as Kafka's), ``sticky`` and ``cooperative-sticky`` (balanced, then sticky;
  cooperative holds back a partition until its previous owner has revoked it), ``uniform``
  (KIP-848's server-side assignor), each optionally rack-aware; generation-aware ownership
  (KIP-792): stale and duplicate claims are not trusted;
* payload decoders, so ``coordinator-api groups GROUP`` shows a consumer group's subscriptions
  and assignments in words;
* :class:`ConsumerGroupMember`, a consumer-group member on the Coordinator API (eager or
  cooperative rebalancing, partition callbacks, generation-fenced commits).
"""

from __future__ import annotations

from coordinator_api import (
    AssignorRegistry,
    CommitFailedError,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    hookimpl,
)
from coordinator_consumer._describe import describe_assignment, describe_subscription
from coordinator_consumer._kafka_consumer import AssignedConsumer
from coordinator_consumer._member import ConsumerGroupMember
from coordinator_consumer._model import Assignment, Assignor, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import AssignmentError, owned_partitions, validate_assignment
from coordinator_consumer._protocol import (
    CLASSIC_PAYLOADS,
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_consumer._range import assign_range
from coordinator_consumer._roundrobin import assign_roundrobin
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from coordinator_consumer._sticky import assign_cooperative_sticky, assign_sticky
from coordinator_consumer._uniform import assign_uniform

ASSIGNORS: dict[str, Assignor] = {
    "range": assign_range,
    "roundrobin": assign_roundrobin,
    "sticky": assign_sticky,
    "cooperative-sticky": assign_cooperative_sticky,
    "uniform": assign_uniform,
}


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, ConsumerGroupMember)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    for name, assignor in ASSIGNORS.items():
        registry.register(PROTOCOL_TYPE, name, assignor)


@hookimpl
def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
    for name, assignor in SERVER_ASSIGNORS.items():
        registry.register(PROTOCOL_TYPE, name, assignor)
    registry.register_classic_payloads(PROTOCOL_TYPE, CLASSIC_PAYLOADS)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_subscription, assignment=describe_assignment)


__all__ = [
    "ASSIGNORS",
    "PROTOCOL_TYPE",
    "AssignedConsumer",
    "Assignment",
    "AssignmentError",
    "CommitFailedError",
    "ConsumerGroupMember",
    "Assignor",
    "Cluster",
    "ConsumerProtocolError",
    "Subscription",
    "TopicPartition",
    "assign_cooperative_sticky",
    "assign_range",
    "assign_roundrobin",
    "assign_sticky",
    "assign_uniform",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "owned_partitions",
    "validate_assignment",
]
