"""The incremental protocol's heartbeats on the wire, for the incremental member machine:
ConsumerGroupHeartbeat (KIP-848) for consumer groups, and this project's GroupHeartbeat (the
same reconciliation, in Kafka's framing) for groups of any other protocol type, whose members
declare the group's resources; or, where the coordinator serves Kafka's StreamsGroupHeartbeat
(KIP-1071) but not GroupHeartbeat, that, for members whose resources are the tasks of a Kafka
Streams topology.

The request and response classes are generated from JSON schemas by kafka-python's schema
mechanism (:mod:`coordinator_api.server.schemas`), like every other message; this module only
fills them in from the machine's actions and turns answers into the machine's events. The
machine names a resource as (key, index): for consumer groups the key is the topic id, for the
other protocol types the resource group's name in UTF-8. ConsumerGroupHeartbeat version 1 is
required: the member brings its own member id (KIP-1082), as Kafka 4's consumer does.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kafka.protocol.metadata import ApiVersionsRequest

from coordinator_api._errors import ConfigurationError
from coordinator_api._membership import _incremental as i
from coordinator_api._membership._driver import CoordinatorConnection
from coordinator_api._membership._incremental import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    GroupHeartbeatAnswered,
    IncrementalSettings,
    ReleaseHeldHeartbeat,
    SendGroupHeartbeat,
)
from coordinator_api._membership._machine import Action, FindCoordinator, LeaveAnswered, RequestKind
from coordinator_api._protocol import MAX_GROUP_RESOURCES, ApiKey, ErrorCode, StreamsGroupStatus
from coordinator_api.server.schemas import (
    ConsumerGroupHeartbeatRequest,
    GroupHeartbeatRequest,
    StreamsGroupHeartbeatRequest,
)

log = logging.getLogger("coordinator_api.membership")

#: The first version in which a member brings its own member id.
MIN_VERSION = 1


CONSUMER = "consumer"

#: The settings of a changelog topic the broker creates for a streams group, as Kafka Streams
#: gives a key-value store's changelog (sorted by name, as it sends them).
CHANGELOG_TOPIC_CONFIGS = (("cleanup.policy", "compact"), ("message.timestamp.type", "CreateTime"))


@dataclass(frozen=True, kw_only=True)
class KafkaStreamsGroup:
    """How a member whose resources are the tasks of a Kafka Streams topology (one resource
    group per subtopology, named by its id; resource ``(id, p)`` is the task reading partition
    ``p`` of its source topics) joins a streams group of KIP-1071 on a coordinator that serves
    Kafka's StreamsGroupHeartbeat instead of this project's GroupHeartbeat: Apache Kafka's
    brokers from 4.2. The coordinator then counts each subtopology's tasks from its source
    topics' partitions and assigns the active tasks, and the standby tasks of stateful
    subtopologies when the group's ``streams.num.standby.replicas`` asks for them, each on
    another process than the task's active one.

    A standby task comes to the member as a resource too, of the resource group named by its
    subtopology's id and :attr:`STANDBY` (standby task ``p`` of subtopology ``"0"`` is
    ``("0/standby", p)``), and is reconciled like an active one: the member owns it from its
    acknowledgement on, and the coordinator hands it on (as an active task of this process,
    say) only once a heartbeat no longer lists it. Warmup tasks are not taken (Apache Kafka
    4.3's assignor places none).

    :ivar source_topics: the topics each subtopology reads, by subtopology id (every resource
        group of the subscription, and no other).
    :ivar process_id: the application instance the member runs in (members of one instance
        share it).
    :ivar client_tags: the member's placement tags.
    :ivar changelog_topics: the changelog topics of each stateful subtopology's state stores,
        by subtopology id (some of those of ``source_topics``), which makes the subtopology
        stateful to the coordinator. The broker creates them, as many partitions as the
        subtopology has tasks, with the broker's replication factor and the settings Kafka
        Streams gives a key-value store's changelog (compacted, with create times).
    :raises ConfigurationError: a subtopology without topics, an empty topic name or process
        id, changelog topics for a subtopology without source topics, or a subtopology id
        with :attr:`STANDBY` in it.
    """

    source_topics: Mapping[str, tuple[str, ...]]
    process_id: str
    client_tags: Mapping[str, str] = field(default_factory=dict)
    changelog_topics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    #: What the resource group of a subtopology's standby tasks adds to the subtopology's id
    #: (and, on a coordinator that serves GroupHeartbeat, the number of the replica from the
    #: second on: ``"0/standby2"``).
    STANDBY: ClassVar[str] = "/standby"

    @classmethod
    def standby_of(cls, group: str) -> str | None:
        """The subtopology whose standby tasks resource group ``group`` holds (``"0"`` for
        ``"0/standby"`` or ``"0/standby2"``), or None if it holds active tasks."""
        subtopology, marker, replica = group.partition(cls.STANDBY)
        if marker and (not replica or (replica.isdigit() and int(replica) >= 2)):
            return subtopology
        return None

    def __post_init__(self) -> None:
        if not isinstance(self.process_id, str) or not self.process_id:
            raise ConfigurationError(f"process_id must be a non-empty string, got {self.process_id!r}")
        for subtopology, topics in self.source_topics.items():
            if not topics or not all(isinstance(t, str) and t for t in topics):
                raise ConfigurationError(
                    f"subtopology {subtopology!r}: source topics must be non-empty names, got {topics!r}"
                )
            if self.STANDBY in subtopology:
                raise ConfigurationError(
                    f"subtopology {subtopology!r}: an id with {self.STANDBY!r} names standby tasks"
                )
        for subtopology, topics in self.changelog_topics.items():
            if subtopology not in self.source_topics:
                raise ConfigurationError(
                    f"subtopology {subtopology!r} has changelog topics but no source topics"
                )
            if not topics or not all(isinstance(t, str) and t for t in topics):
                raise ConfigurationError(
                    f"subtopology {subtopology!r}: changelog topics must be non-empty names, got {topics!r}"
                )


@dataclass(frozen=True, kw_only=True)
class GroupSubscription:
    """What a member of an incremental group subscribes to.

    A consumer group's member gives topic names or a regular expression (evaluated by the
    coordinator, in its own regex dialect: RE2/J on Kafka's brokers). A member of any other
    protocol type gives ``resources``: the group's resource groups, each with how many
    resources it has (``{"leadership": 1}``, ``{"tasks-0": 8, "tasks-1": 4}``); resource
    ``(name, i)`` exists for ``i`` in ``range(count)``; ``metadata``, what its protocol type's
    server-side assignor reads of it (a new value is a new target); and ``list_owners=True``
    to learn who owns every resource (:meth:`Coordinator.resource_owners`; for small groups of
    resources: every answer carries the list). ``kafka_streams``, for resources that are the
    tasks of a Kafka Streams topology: how to join a streams group of KIP-1071 on a coordinator
    that serves those but not GroupHeartbeat (Apache Kafka's brokers).

    :raises ConfigurationError: a resource group with an empty name or a count below 1, more
        than :data:`~coordinator_api._protocol.MAX_GROUP_RESOURCES` resources in all, or
        ``kafka_streams`` naming other subtopologies than the resource groups of active tasks.
    """

    topics: tuple[str, ...] | None = None
    regex: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None
    resources: Mapping[str, int] | None = None
    metadata: bytes = b""
    list_owners: bool = False
    kafka_streams: KafkaStreamsGroup | None = None

    def __post_init__(self) -> None:
        streams = self.kafka_streams
        if streams is not None:
            active = sorted(g for g in self.resources or () if streams.standby_of(g) is None)
            if sorted(streams.source_topics) != active:
                raise ConfigurationError(
                    f"kafka_streams: source topics for subtopologies {sorted(streams.source_topics)}, "
                    f"resource groups of active tasks {active}: they must be the same"
                )
        if self.resources is None:
            return
        for name, count in self.resources.items():
            if not isinstance(name, str) or not name.strip():
                raise ConfigurationError(f"resource group names must be non-empty strings, got {name!r}")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ConfigurationError(
                    f"resource group {name!r}: count must be an integer >= 1, got {count!r}"
                )
        if sum(self.resources.values()) > MAX_GROUP_RESOURCES:
            raise ConfigurationError(
                f"at most {MAX_GROUP_RESOURCES} resources in all, got {sum(self.resources.values())}"
            )


def heartbeat_request(
    settings: IncrementalSettings,
    subscription: GroupSubscription,
    action: SendGroupHeartbeat,
    protocol_type: str = CONSUMER,
    *,
    kafka_streams: bool = False,
    endpoint_epoch: int = 0,
) -> Any:
    """The full request for ``action`` (every field given, so every answer has the assignment):
    a ConsumerGroupHeartbeat for a consumer group, a StreamsGroupHeartbeat if ``kafka_streams``,
    else a GroupHeartbeat."""
    leaving = action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    owned: dict[bytes, list[int]] = {}
    for key, index in sorted(action.owned):
        owned.setdefault(key, []).append(index)
    if kafka_streams:
        return _streams_request(settings, subscription, action, owned, endpoint_epoch)
    if protocol_type != CONSUMER:
        declared = subscription.resources or {}
        return GroupHeartbeatRequest(
            group_id=settings.group_id,
            protocol_type=protocol_type,
            member_id=action.member_id,
            member_epoch=action.member_epoch,
            instance_id=settings.group_instance_id,
            rack_id=None if leaving else subscription.rack_id,
            rebalance_timeout_ms=-1 if leaving else settings.rebalance_timeout_ms,
            server_assignor=None if leaving else subscription.server_assignor,
            metadata=None if leaving else subscription.metadata,
            list_owners=subscription.list_owners and not leaving,
            resources=None
            if leaving
            else [GroupHeartbeatRequest.ResourceGroup(name=n, count=c) for n, c in sorted(declared.items())],
            owned_resources=None
            if leaving
            else [GroupHeartbeatRequest.Resources(name=k.decode(), indexes=i) for k, i in owned.items()],
        )
    topic = ConsumerGroupHeartbeatRequest.TopicPartitions
    return ConsumerGroupHeartbeatRequest(
        group_id=settings.group_id,
        member_id=action.member_id,
        member_epoch=action.member_epoch,
        instance_id=settings.group_instance_id,
        rack_id=None if leaving else subscription.rack_id,
        rebalance_timeout_ms=-1 if leaving else settings.rebalance_timeout_ms,
        subscribed_topic_names=None if leaving or subscription.topics is None else list(subscription.topics),
        subscribed_topic_regex=None if leaving else subscription.regex,
        server_assignor=None if leaving else subscription.server_assignor,
        topic_partitions=None
        if leaving
        else [topic(topic_id=uuid.UUID(bytes=tid), partitions=parts) for tid, parts in owned.items()],
        min_version=MIN_VERSION,
    )


def _streams_request(
    settings: IncrementalSettings,
    subscription: GroupSubscription,
    action: SendGroupHeartbeat,
    owned: dict[bytes, list[int]],
    endpoint_epoch: int,
) -> Any:
    """A StreamsGroupHeartbeat: as Kafka's brokers require, the topology on a join only, and the
    owned tasks empty there; every other field given. Owned resources of a :attr:`STANDBY
    <KafkaStreamsGroup.STANDBY>` group are standby tasks."""
    streams = subscription.kafka_streams
    assert streams is not None
    leaving = action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    joining = action.member_epoch == JOIN_EPOCH
    request = StreamsGroupHeartbeatRequest
    topology = None
    # A changelog topic as Kafka Streams declares a key-value store's: partitions and
    # replication factor left to the broker, its own settings sorted by name.
    changelog_configs = [request.KeyValue(key=k, value=v) for k, v in CHANGELOG_TOPIC_CONFIGS]
    if joining:
        topology = request.Topology(
            epoch=0,
            subtopologies=[
                request.Topology.Subtopology(
                    subtopology_id=subtopology,
                    source_topics=list(topics),
                    source_topic_regex=[],
                    state_changelog_topics=[
                        request.Topology.Subtopology.TopicInfo(
                            name=name, partitions=0, replication_factor=-1, topic_configs=changelog_configs
                        )
                        for name in sorted(streams.changelog_topics.get(subtopology, ()))
                    ],
                    repartition_sink_topics=[],
                    repartition_source_topics=[],
                    copartition_groups=[],
                )
                for subtopology, topics in sorted(streams.source_topics.items())
            ],
        )
    active: list[Any] = []
    standby: list[Any] = []
    for key, indexes in () if joining else owned.items():
        name = key.decode()
        of = KafkaStreamsGroup.standby_of(name)
        tasks = active if of is None else standby
        tasks.append(request.TaskIds(subtopology_id=name if of is None else of, partitions=indexes))
    return request(
        group_id=settings.group_id,
        member_id=action.member_id,
        member_epoch=action.member_epoch,
        endpoint_information_epoch=endpoint_epoch,
        rack_id=None if leaving else subscription.rack_id,
        rebalance_timeout_ms=-1 if leaving else settings.rebalance_timeout_ms,
        topology=topology,
        active_tasks=None if leaving else active,
        standby_tasks=None if leaving else standby,
        warmup_tasks=None if leaving else [],
        process_id=None if leaving else streams.process_id,
        client_tags=None
        if leaving
        else [request.KeyValue(key=k, value=v) for k, v in sorted(streams.client_tags.items())],
    )


def heartbeat_answered(sent_at: int, response: Any) -> GroupHeartbeatAnswered:
    """The machine's event for a ConsumerGroupHeartbeat, GroupHeartbeat or StreamsGroupHeartbeat
    response (a streams group's standby tasks as resources of their :attr:`STANDBY
    <KafkaStreamsGroup.STANDBY>` groups; warmup tasks are not taken)."""
    assignment: Assignment | None = None
    if response.API_KEY == ApiKey.STREAMS_GROUP_HEARTBEAT:
        if response.active_tasks is not None:  # the three lists come together
            standby = KafkaStreamsGroup.STANDBY
            assignment = frozenset(
                (t.subtopology_id.encode(), partition)
                for t in response.active_tasks
                for partition in t.partitions
            ) | frozenset(
                ((t.subtopology_id + standby).encode(), partition)
                for t in response.standby_tasks or ()
                for partition in t.partitions
            )
    elif response.assignment is not None and response.API_KEY == ApiKey.GROUP_HEARTBEAT:
        assignment = frozenset(
            (r.name.encode(), index) for r in response.assignment.resources for index in r.indexes
        )
    elif response.assignment is not None:
        assignment = frozenset(
            (t.topic_id.bytes, partition)
            for t in response.assignment.topic_partitions
            for partition in t.partitions
        )
    return GroupHeartbeatAnswered(
        sent_at,
        response.error_code,
        response.error_message or "",
        response.member_epoch,
        response.heartbeat_interval_ms,
        assignment,
    )


class IncrementalWire(CoordinatorConnection[i.Event]):
    """The incremental machine's network actions as kafka-python requests to the group's
    coordinator: FindCoordinator, and ConsumerGroupHeartbeat (GroupHeartbeat for a protocol
    type other than ``consumer``, StreamsGroupHeartbeat once :meth:`coordinator_serves` chose
    it) to join, stay and leave."""

    def __init__(
        self,
        settings: IncrementalSettings,
        subscription: GroupSubscription,
        *,
        protocol_type: str = CONSUMER,
        connection_options: dict[str, Any],
        request_timeout_ms: int,
    ) -> None:
        super().__init__(
            settings.group_id, connection_options=connection_options, request_timeout_ms=request_timeout_ms
        )
        self._settings = settings
        #: What the heartbeats say the member subscribes to; replaced (application thread) when
        #: it changes, read when each heartbeat is sent.
        self.subscription = subscription
        self._protocol_type = protocol_type
        #: Who owns each resource, from the latest answer that said (GroupHeartbeat with
        #: ``list_owners``): (resource group, index) -> (member id, its payload).
        self.owners: dict[tuple[str, int], tuple[str, bytes]] = {}
        # Heartbeats (not leaves) handed to the connection, and the one after which to release
        # a held heartbeat (ReleaseHeldHeartbeat); both under the lock, as the machine's actions
        # are sent from the threads that fed it events.
        self._sending = threading.RLock()
        self._heartbeats_sent = 0
        self._release_after: int | None = None
        #: StreamsGroupHeartbeat instead of GroupHeartbeat (set by :meth:`coordinator_serves`),
        #: the newest endpoint information epoch its answers gave, and their latest statuses.
        self.kafka_streams = False
        self._endpoint_epoch = 0
        self._streams_status: frozenset[tuple[int, str]] = frozenset()

    @property
    def api_key(self) -> ApiKey:
        """The heartbeat API this wire speaks."""
        if self._protocol_type == CONSUMER:
            return ApiKey.CONSUMER_GROUP_HEARTBEAT
        return ApiKey.STREAMS_GROUP_HEARTBEAT if self.kafka_streams else ApiKey.GROUP_HEARTBEAT

    def coordinator_serves(self) -> bool:
        """Whether the group's coordinator serves this wire's heartbeat API (asks it for its
        ApiVersions; application thread). Apache Kafka's brokers serve ConsumerGroupHeartbeat
        from 4.0 and StreamsGroupHeartbeat from 4.2, never GroupHeartbeat: a subscription with
        :class:`KafkaStreamsGroup` of a member that is not static (Kafka's streams groups have
        no static members yet) takes StreamsGroupHeartbeat where GroupHeartbeat is missing.

        :raises Exception: kafka-python's error when the coordinator cannot be reached.
        """
        request = ApiVersionsRequest(client_software_name="coordinator-api", client_software_version="1")
        response = self.call(request, to_coordinator=True)
        served = {api.api_key for api in response.api_keys}
        if self.api_key in served:
            return True
        if (
            self._protocol_type != CONSUMER
            and self.subscription.kafka_streams is not None
            and self._settings.group_instance_id is None
            and ApiKey.STREAMS_GROUP_HEARTBEAT in served
        ):
            self.kafka_streams = True
            log.info(
                "group %s: the coordinator serves Kafka Streams groups (StreamsGroupHeartbeat, KIP-1071), "
                "not GroupHeartbeat: joining as a member of a streams group",
                self._settings.group_id,
            )
            return True
        return False

    def send(self, action: Action, sent_at: int, deliver: Callable[[i.Event], object]) -> None:
        if isinstance(action, FindCoordinator):
            self.find(deliver)
        elif isinstance(action, ReleaseHeldHeartbeat):
            with self._sending:
                if self._heartbeats_sent >= action.after:
                    self._release_held()
                else:  # that heartbeat is still being sent on another thread: right after it
                    self._release_after = action.after
        elif isinstance(action, SendGroupHeartbeat):
            request = heartbeat_request(
                self._settings,
                self.subscription,
                action,
                self._protocol_type,
                kafka_streams=self.kafka_streams,
                endpoint_epoch=self._endpoint_epoch,
            )
            if action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                self._request(
                    self._to_coordinator(request, self._request_timeout_ms),
                    RequestKind.LEAVE,
                    lambda r: LeaveAnswered(r.error_code),
                    deliver,
                )
                return
            with self._sending:  # in the order the machine sent them, with the release behind
                # An answer later than the session is useless: fail it and reconnect.
                self._request(
                    self._to_coordinator(request, self._settings.session_timeout_ms),
                    RequestKind.HEARTBEAT,
                    lambda r: heartbeat_answered(sent_at, self._note_answer(r)),
                    deliver,
                )
                self._heartbeats_sent += 1
                if self._release_after == self._heartbeats_sent:
                    self._release_after = None
                    self._release_held()

    def _release_held(self) -> None:
        """See :class:`ReleaseHeldHeartbeat`. Fire and forget: the next heartbeat finds out what
        is wrong."""
        if self._coordinator_node is None:
            return
        request = ApiVersionsRequest(client_software_name="coordinator-api", client_software_version="1")
        future = self._manager.call_soon(self._to_coordinator(request, self._request_timeout_ms))
        future.add_errback(lambda _exc: None)

    def _note_answer(self, response: Any) -> Any:
        """Keeps what a heartbeat's answer says beside the machine's event: the owners it
        lists, or a streams group's endpoint epoch and status."""
        if response.API_KEY == ApiKey.STREAMS_GROUP_HEARTBEAT:
            self._note_streams_status(response)
        elif getattr(response, "owners", None) is not None:
            # Replaced whole (one reference), so readers on other threads see one answer's list.
            self.owners = {(o.name, o.index): (o.member_id, bytes(o.metadata)) for o in response.owners}
        return response

    def _note_streams_status(self, response: Any) -> None:
        """Logs what a streams group's coordinator says of the group (a missing source topic: no
        tasks until it exists), once each time it changes."""
        if response.error_code != ErrorCode.NONE:
            return
        self._endpoint_epoch = response.endpoint_information_epoch
        status = frozenset((s.status_code, s.status_detail) for s in response.status or ())
        if status != self._streams_status:
            self._streams_status = status
            for code, detail in sorted(status):
                try:
                    name = StreamsGroupStatus(code).name
                except ValueError:
                    name = f"status {code}"
                # A delayed assignment waits out the group's assignment interval: no trouble.
                delayed = code == StreamsGroupStatus.ASSIGNMENT_DELAYED
                log.log(
                    logging.INFO if delayed else logging.WARNING,
                    "group %s: the coordinator says %s: %s",
                    self._settings.group_id,
                    name,
                    detail,
                )
