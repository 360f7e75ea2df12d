"""A consumer-group member built on coordinator_api.Coordinator, wire compatible with Kafka's."""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import kafka.errors
from kafka.protocol.metadata import MetadataRequest

from coordinator_api import (
    ConfigurationError,
    Coordinator,
    GroupSubscription,
    JoinedMember,
    PluginRegistry,
    installed_plugins,
)
from coordinator_consumer._model import Assignor, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import validate_assignment
from coordinator_consumer._protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

PartitionsCallback = Callable[[frozenset[TopicPartition]], None]

log = logging.getLogger("coordinator_consumer")

#: Kafka's default ``metadata.max.age.ms``: how often a pattern subscription looks for new topics.
DEFAULT_METADATA_MAX_AGE_MS = 300_000


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

    **Racks.** As leader, the member reads the racks of each partition's replicas from the
    cluster's Metadata (each broker's ``rack``, each partition's ``replica_nodes``) and gives
    them to the assignor, which matches members' racks to them when Kafka's rule says it helps
    (KIP-881; :mod:`coordinator_consumer._racks`). Members advertise their rack with ``rack``
    (``client.rack`` in Kafka; ConsumerProtocolSubscription v3).

    **Patterns.** With ``pattern``, the member subscribes to every topic whose whole name
    matches. Like Kafka's consumer, it looks at the cluster's topics again every
    ``metadata_max_age_ms`` (checked in :meth:`poll`) and rejoins when the matching set changed,
    so a topic created later is assigned in the next rebalance.

    **Topics that change.** With the classic protocol the group's leader, like Kafka's consumer,
    looks at the partition counts of the topics it assigned every ``metadata_max_age_ms`` and
    rejoins when one changed or the topic is gone, so partitions added later (``kafka-topics
    --alter --partitions``) are assigned, and a deleted topic's taken away, in the next
    rebalance. With ``group_protocol="consumer"`` the coordinator notices, and tells the members
    at their next heartbeats.

    :param topics: the topics to subscribe to, or
    :param pattern: a regular expression over the topic names the cluster reports.
    :param assignor: ``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``, ``uniform``,
        or an assignor another plugin registers for protocol type ``consumer`` (found by name in
        the plugin registry; such an assignor runs eagerly).
    :param rack: this member's rack, for rack-aware assignment.
    :param plugins: where assignors are found by name (default: the installed plugins,
        :func:`coordinator_api.installed_plugins`).
    :param group_protocol: ``"classic"`` (the default: JoinGroup/SyncGroup, the leader runs
        ``assignor``) or ``"consumer"``: Kafka 4's incremental protocol (KIP-848,
        ``group.protocol=consumer``), where the coordinator assigns and each member reconciles
        on its own; ``assignor`` is then not used, and a ``pattern`` is evaluated by the
        coordinator (RE2/J syntax on Kafka's brokers, Python's ``re`` on the embedded one).
    :param remote_assignor: with ``group_protocol="consumer"``, the coordinator's assignor to
        ask for (``uniform`` or ``range``, Kafka's ``group.remote.assignor``); None takes the
        coordinator's default.
    :param options: the settings of :class:`~coordinator_api.Coordinator`; among them
        ``metadata_max_age_ms`` (default 300000, as Kafka's) also sets how often a pattern
        subscription is checked for new or deleted topics.
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
        plugins: PluginRegistry | None = None,
        group_protocol: str = "classic",
        remote_assignor: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(group_id, bootstrap_servers, group_protocol=group_protocol, **options)
        if (topics is None) == (pattern is None):
            raise ConfigurationError(f"group {group_id!r}: give topics or a pattern, not both or neither")
        if remote_assignor is not None and group_protocol != "consumer":
            raise ConfigurationError(
                f"group {group_id!r}: remote_assignor is for group_protocol='consumer'; the classic "
                "protocol's leader runs `assignor`"
            )
        self._incremental = group_protocol == "consumer"
        self._remote_assignor = remote_assignor
        self._topic_names: dict[bytes, str] = {}  # topic id -> name, for the incremental protocol
        self._plugins = plugins if plugins is not None else installed_plugins()
        self._plugins.assignors.choose(PROTOCOL_TYPE, assignor, group_id=group_id)
        self._topics = frozenset(topics or ())
        self._pattern = re.compile(pattern) if pattern is not None else None
        self._assignor_name = assignor
        self._cooperative = assignor == "cooperative-sticky"
        self._rack = rack
        self._assigned = on_partitions_assigned
        self._revoked = on_partitions_revoked
        self._lost_cb = on_partitions_lost
        self._lock = threading.Lock()
        self._owned: frozenset[TopicPartition] = frozenset()
        self._owned_generation = -1
        max_age_ms = options.get("metadata_max_age_ms", DEFAULT_METADATA_MAX_AGE_MS)
        if not isinstance(max_age_ms, int) or max_age_ms <= 0:
            raise ConfigurationError(
                f"group {group_id!r}: metadata_max_age_ms must be a positive integer, got {max_age_ms!r}"
            )
        self._metadata_max_age_s = max_age_ms / 1000
        self._joined_topics: frozenset[str] | None = None  # what the last JoinGroup subscribed to
        # As leader: each topic's partition count the assignment was made with (None: the
        # topic did not exist); None while not the leader.
        self._assigned_counts: dict[str, int | None] | None = None
        self._next_topics_check = 0.0

    # --- the Coordinator contract ------------------------------------------------------------------

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        with self._lock:
            owned, generation = sorted(self._owned), self._owned_generation
        topics = self._subscribed_topics()
        self._joined_topics = topics
        self._next_topics_check = time.monotonic() + self._metadata_max_age_s
        subscription = encode_subscription(
            sorted(topics), owned=owned, generation=generation, rack=self._rack
        )
        return [(self._assignor_name, subscription)]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
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
        cluster = self._cluster(topics)
        self._assigned_counts = {t: cluster.partitions.get(t) for t in topics}
        assignor: Assignor = self._plugins.assignors.get(PROTOCOL_TYPE, protocol)
        assignment = assignor(subscriptions, cluster)
        validate_assignment(assignment, subscriptions, cluster)
        return {member_id: encode_assignment(list(parts)) for member_id, parts in assignment.items()}

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        self._assigned_counts = None  # set again if this member leads the next generation
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

    def on_leave_prepare(self) -> None:
        # Leaving (close, leave_group, max poll interval): hand everything back first, as
        # Kafka's consumer does, so the next owners start after this member has stopped.
        with self._lock:
            revoked, self._owned = self._owned, frozenset()
            self._owned_generation = -1
        if revoked and self._revoked is not None:
            self._revoked(revoked)

    def group_subscription(self) -> GroupSubscription:
        return GroupSubscription(
            topics=None if self._pattern is not None else tuple(sorted(self._topics)),
            regex=None if self._pattern is None else self._pattern.pattern,
            server_assignor=self._remote_assignor,
            rack_id=self._rack,
        )

    def on_reconcile(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[bytes, int]],
        assigned: frozenset[tuple[bytes, int]],
    ) -> None:
        names = self._names_of({topic_id for topic_id, _ in revoked | assigned})
        gone = frozenset(TopicPartition(names[t], p) for t, p in revoked)
        new = frozenset(TopicPartition(names[t], p) for t, p in assigned)
        with self._lock:
            self._owned -= gone
            self._owned_generation = member_epoch
        if gone and self._revoked is not None:
            self._revoked(gone)
        with self._lock:
            self._owned |= new
        if new and self._assigned is not None:
            self._assigned(new)

    def on_lost(self, reason: str) -> None:
        with self._lock:
            lost, self._owned = self._owned, frozenset()
            self._owned_generation = -1
        if lost and self._lost_cb is not None:
            self._lost_cb(lost)

    # --- the application's view ---------------------------------------------------------------------

    def poll(self, timeout: float = 0.0) -> None:
        """Follow the group (see :meth:`Coordinator.poll <coordinator_api.Coordinator.poll>`); first
        rejoin if the cluster's topics changed for the group (checked every
        ``metadata_max_age_ms``: :meth:`_check_topics`; with ``group_protocol="consumer"`` the
        coordinator does that)."""
        if not self._incremental:
            self._check_topics()
        super().poll(timeout)

    def assignment(self) -> set[tuple[str, int]]:
        """The partitions this member owns now, as (topic, partition) pairs."""
        with self._lock:
            return {(tp.topic, tp.partition) for tp in self._owned}

    def commit(self, offsets: Mapping[tuple[str, int], int]) -> None:
        """Commit offsets for owned partitions, fenced by this member's generation.

        :raises CommitFailedError: the coordinator refused (e.g. the member's generation is
            stale: it must not process these partitions any more).
        """
        self.commit_offsets(offsets)

    # --- helpers --------------------------------------------------------------------------------------

    def _subscribed_topics(self) -> frozenset[str]:
        if self._pattern is None:
            return self._topics
        pattern = self._pattern
        return frozenset(t for t in self._cluster(None).partitions if pattern.fullmatch(t))

    def _check_topics(self) -> None:
        """Every ``metadata_max_age_ms``, as Kafka's consumer on its metadata refresh: with a
        pattern, rejoin when the topics matching it changed; as the group's leader, rejoin when a
        topic it assigned has another partition count now (``kafka-topics --alter
        --partitions``) or is gone, so that the next assignment follows."""
        joined = self._joined_topics if self._pattern is not None else None
        assigned = self._assigned_counts
        if (joined is None and assigned is None) or time.monotonic() < self._next_topics_check:
            return
        self._next_topics_check = time.monotonic() + self._metadata_max_age_s
        try:
            cluster = self._cluster(None if joined is not None or assigned is None else assigned)
        except (ConnectionError, kafka.errors.KafkaError) as exc:
            # As Kafka's consumer: a failed refresh is retried at the next one, the group goes on.
            log.warning("group %s: cannot list the cluster's topics (%s); retrying later", self.group_id, exc)
            return
        reasons = []
        if joined is not None and self._pattern is not None:
            pattern = self._pattern
            topics = frozenset(t for t in cluster.partitions if pattern.fullmatch(t))
            if topics != joined:
                added, removed = sorted(topics - joined), sorted(joined - topics)
                reasons.append(
                    f"the topics matching {pattern.pattern!r} changed (new: {added}, gone: {removed})"
                )
        if assigned is not None:
            counts = {t: cluster.partitions.get(t) for t in assigned}
            if counts != assigned:
                changed = ", ".join(
                    f"{t} {assigned[t]} -> {n}" for t, n in sorted(counts.items()) if n != assigned[t]
                )
                reasons.append(f"the partition counts of the assigned topics changed ({changed})")
        if reasons:
            self.request_rejoin("; ".join(reasons))

    def _names_of(self, topic_ids: set[bytes]) -> dict[bytes, str]:
        """Topic names by id (the incremental protocol names topics by id), from the cluster's
        Metadata, looked up again when an id is new."""
        if not topic_ids <= self._topic_names.keys():
            response = self.send_request(MetadataRequest(topics=None, allow_auto_topic_creation=False))
            for topic in response.topics:
                if topic.error_code == 0 and topic.name:
                    self._topic_names[topic.topic_id.bytes] = topic.name
        missing = topic_ids - self._topic_names.keys()
        if missing:
            raise ConfigurationError(
                f"group {self.group_id!r}: the coordinator assigned partitions of topic ids the cluster's "
                f"Metadata does not name: {sorted(str(uuid.UUID(bytes=t)) for t in missing)}"
            )
        return self._topic_names

    def _cluster(self, topics: Iterable[str] | None) -> Cluster:
        """Partition counts and replica racks from the cluster's Metadata (None: every topic)."""
        requested = (
            None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t) for t in sorted(topics)]
        )
        response = self.send_request(MetadataRequest(topics=requested, allow_auto_topic_creation=False))
        broker_racks = {b.node_id: b.rack for b in response.brokers if getattr(b, "rack", None)}
        partitions: dict[str, int] = {}
        replica_racks: dict[TopicPartition, frozenset[str]] = {}
        for topic in response.topics:
            if topic.error_code != 0:
                continue
            partitions[topic.name] = len(topic.partitions)
            if not broker_racks:
                continue
            for partition in topic.partitions:
                racks = frozenset(broker_racks[n] for n in partition.replica_nodes if n in broker_racks)
                if racks:
                    replica_racks[TopicPartition(topic.name, partition.partition_index)] = racks
        return Cluster(partitions=partitions, replica_racks=replica_racks)
