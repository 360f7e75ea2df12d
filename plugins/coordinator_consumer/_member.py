"""A consumer-group member built on coordinator_api.Coordinator, wire compatible with Kafka's."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafka.protocol.consumer.group import OffsetCommitRequest
from kafka.protocol.metadata import MetadataRequest

from coordinator_api import ConfigurationError, Coordinator, GroupError, JoinedMember
from coordinator_consumer._model import Assignor, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import validate_assignment
from coordinator_consumer._protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

PartitionsCallback = Callable[[frozenset[TopicPartition]], None]


class CommitFailedError(GroupError):
    """The coordinator refused an offset commit (a stale generation, an unknown member...)."""


class ConsumerGroupMember(Coordinator):
    """A member of a Kafka consumer group (protocol type ``consumer``).

    It speaks Kafka's consumer protocol (ConsumerProtocolSubscription v3, generation-aware owned
    partitions), so one group can mix it with kafka-python, librdkafka and Java consumers that
    use the same assignor name::

        member = ConsumerGroupMember("orders", bootstrap, topics=["orders"], assignor="range")
        member.ensure_active_group(30)
        while running:
            member.poll(1.0)
            for tp in member.assignment():
                ...

    With ``cooperative-sticky`` a rebalance keeps the partitions that do not move: a partition
    moving to another member is revoked (``on_partitions_revoked``) in one round and assigned in
    the next. With the other (eager) assignors every partition is revoked when a rebalance
    starts. ``on_partitions_lost`` runs on the heartbeat thread when the lease runs out.

    :param topics: the topics to subscribe to, or
    :param pattern: a regular expression over the topic names the cluster reports.
    :param assignor: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky`` or ``uniform``.
    :param rack: this member's rack, for rack-aware assignment.
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        *,
        topics: Iterable[str] | None = None,
        pattern: str | None = None,
        assignor: str = "cooperative-sticky",
        rack: str | None = None,
        on_partitions_assigned: PartitionsCallback | None = None,
        on_partitions_revoked: PartitionsCallback | None = None,
        on_partitions_lost: PartitionsCallback | None = None,
        **options: Any,
    ) -> None:
        from coordinator_consumer import ASSIGNORS

        super().__init__(group_id, bootstrap_servers, **options)
        if (topics is None) == (pattern is None):
            raise ConfigurationError(f"group {group_id!r}: give topics or a pattern, not both or neither")
        if assignor not in ASSIGNORS:
            known = ", ".join(sorted(ASSIGNORS))
            raise ConfigurationError(
                f"group {group_id!r}: unknown assignor {assignor!r}; choose one of {known}"
            )
        self._topics = frozenset(topics or ())
        self._pattern = re.compile(pattern) if pattern is not None else None
        self._assignor_name = assignor
        self._assignor: Assignor = ASSIGNORS[assignor]
        self._cooperative = assignor == "cooperative-sticky"
        self._rack = rack
        self._assigned = on_partitions_assigned
        self._revoked = on_partitions_revoked
        self._lost_cb = on_partitions_lost
        self._lock = threading.Lock()
        self._owned: frozenset[TopicPartition] = frozenset()
        self._owned_generation = -1

    # --- the Coordinator contract ------------------------------------------------------------------

    def protocol_type(self) -> str:
        return "consumer"

    def metadata(self) -> list[tuple[str, bytes]]:
        with self._lock:
            owned, generation = sorted(self._owned), self._owned_generation
        subscription = encode_subscription(
            sorted(self._subscribed_topics()), owned=owned, generation=generation, rack=self._rack
        )
        return [(self._assignor_name, subscription)]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        from coordinator_consumer import ASSIGNORS

        subscriptions = []
        for member in members:
            try:
                subscriptions.append(
                    decode_subscription(member.member_id, member.group_instance_id, member.metadata)
                )
            except ConsumerProtocolError:
                # Not a consumer-protocol member: it subscribes to nothing and gets nothing.
                subscriptions.append(Subscription(member_id=member.member_id, topics=frozenset()))
        topics = frozenset().union(*(s.topics for s in subscriptions))
        cluster = Cluster(partitions=self._partition_counts(topics))
        assignment = ASSIGNORS[protocol](subscriptions, cluster)
        validate_assignment(assignment, subscriptions, cluster)
        return {member_id: encode_assignment(list(parts)) for member_id, parts in assignment.items()}

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        if self._cooperative:
            return  # cooperative: keep what does not move; revocations come with the assignment
        with self._lock:
            revoked, self._owned = self._owned, frozenset()
        if revoked and self._revoked is not None:
            self._revoked(revoked)

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        partitions, _user_data = decode_assignment(assignment)
        new = frozenset(partitions)
        with self._lock:
            old = self._owned
            revoked, added = old - new, new - old
            self._owned, self._owned_generation = new, generation
        if revoked and self._revoked is not None:
            self._revoked(revoked)
        if added and self._assigned is not None:
            self._assigned(added)
        if self._cooperative and revoked:
            # What this member gave up goes to its new owner in the next round.
            self.request_rejoin("partitions were revoked and must be reassigned")

    def on_lost(self, reason: str) -> None:
        with self._lock:
            lost, self._owned = self._owned, frozenset()
            self._owned_generation = -1
        if lost and self._lost_cb is not None:
            self._lost_cb(lost)

    # --- the application's view ---------------------------------------------------------------------

    def assignment(self) -> set[tuple[str, int]]:
        """The partitions this member owns now, as (topic, partition) pairs."""
        with self._lock:
            return {(tp.topic, tp.partition) for tp in self._owned}

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit offsets for owned partitions, fenced by this member's generation.

        :raises CommitFailedError: the coordinator refused (e.g. the member's generation is
            stale: it must not process these partitions any more).
        """
        generation = self.generation()
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=-1,
                    committed_metadata="",
                )
            )
        request = OffsetCommitRequest(
            group_id=self.group_id,
            generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
        )
        response = self.send_request(request, to_coordinator=True)
        errors = sorted(
            (t.name, p.partition_index, p.error_code)
            for t in response.topics
            for p in t.partitions
            if p.error_code
        )
        if errors:
            raise CommitFailedError(
                f"offset commit refused for generation {generation.generation_id}: "
                + ", ".join(f"{t}-{p}: error {e}" for t, p, e in errors)
                + "; stop processing those partitions and poll to rejoin",
                group_id=self.group_id,
                member_id=generation.member_id,
            )

    # --- helpers --------------------------------------------------------------------------------------

    def _subscribed_topics(self) -> frozenset[str]:
        if self._pattern is None:
            return self._topics
        pattern = self._pattern
        return frozenset(t for t in self._partition_counts(None) if pattern.fullmatch(t))

    def _partition_counts(self, topics: Iterable[str] | None) -> dict[str, int]:
        """Partition counts from the cluster's Metadata (None: every topic)."""
        requested = (
            None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)]
        )
        response = self.send_request(MetadataRequest(topics=requested, allow_auto_topic_creation=False))
        return {t.name: len(t.partitions) for t in response.topics if t.error_code == 0}
