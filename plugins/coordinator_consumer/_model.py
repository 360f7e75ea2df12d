"""The consumer protocol's assignment model: frozen inputs and outputs of every assignor.

Assignors are pure functions (ARCHITECTURE rule 1)::

    assign(subscriptions, cluster) -> {member_id: (TopicPartition, ...)}

They read nothing but their arguments, keep no state, and give the same answer for the same
input. The previous assignment reaches them the way Kafka's consumer protocol carries it: each
member's subscription lists the partitions it owns and the generation it owned them in
(ConsumerProtocolSubscription v1 and v2; KIP-792); :func:`owned_partitions` decides which of
those claims to trust.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol


@dataclass(frozen=True, order=True, slots=True)
class TopicPartition:
    topic: str
    partition: int


@dataclass(frozen=True, kw_only=True)
class Subscription:
    """One member's subscription, as the leader decodes it from the member's metadata.

    :ivar member_id: the member.
    :ivar topics: the topics it subscribes to.
    :ivar owned: the partitions it owns now (v1+), for sticky and cooperative assignors.
    :ivar generation: the generation in which it owned them (v2+); -1 when unknown.
    :ivar rack: the member's rack (v3+), for rack-aware assignment.
    :ivar group_instance_id: its static id, if any (sorting by it keeps static members stable).
    :ivar user_data: the assignor-specific bytes of the subscription, passed through.
    """

    member_id: str
    topics: frozenset[str]
    owned: tuple[TopicPartition, ...] = ()
    generation: int = -1
    rack: str | None = None
    group_instance_id: str | None = None
    user_data: bytes = b""

    @cached_property
    def owned_set(self) -> frozenset[TopicPartition]:
        """:attr:`owned` as a set, made once per subscription (a server-side assignor shows
        the coordinator's members to the assignors as the same subscriptions while they stay
        the same)."""
        return frozenset(self.owned)

    @cached_property
    def owned_topics(self) -> frozenset[str]:
        """The topics of :attr:`owned`, made once per subscription."""
        return frozenset(tp.topic for tp in self.owned)


@dataclass(frozen=True, kw_only=True)
class Cluster:
    """What the leader knows of the topics.

    :ivar partitions: topic -> partition count (topics absent here have no partitions to give).
    :ivar replica_racks: partition -> racks of its replicas, when the metadata has them; a
        rack-aware assignor prefers a member in one of those racks.
    """

    partitions: Mapping[str, int]
    replica_racks: Mapping[TopicPartition, frozenset[str]] = field(default_factory=dict)


Assignment = dict[str, tuple[TopicPartition, ...]]


class Assignor(Protocol):
    """The signature every consumer assignor has."""

    def __call__(self, subscriptions: Sequence[Subscription], cluster: Cluster) -> Assignment: ...
