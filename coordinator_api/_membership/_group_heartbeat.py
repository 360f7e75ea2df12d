"""The incremental protocol's heartbeats on the wire, for the incremental member machine:
ConsumerGroupHeartbeat (KIP-848) for consumer groups, and this project's GroupHeartbeat (the
same reconciliation, in Kafka's framing) for groups of any other protocol type, whose members
declare the group's resources.

The request and response classes are generated from JSON schemas by kafka-python's schema
mechanism (:mod:`coordinator_api.server.schemas`), like every other message; this module only
fills them in from the machine's actions and turns answers into the machine's events. The
machine names a resource as (key, index): for consumer groups the key is the topic id, for the
other protocol types the resource group's name in UTF-8. ConsumerGroupHeartbeat version 1 is
required: the member brings its own member id (KIP-1082), as Kafka 4's consumer does.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest

from coordinator_api._errors import ConfigurationError
from coordinator_api._membership import _incremental as i
from coordinator_api._membership._driver import CoordinatorConnection
from coordinator_api._membership._incremental import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    GroupHeartbeatAnswered,
    IncrementalSettings,
    ReleaseHeldHeartbeat,
    SendGroupHeartbeat,
)
from coordinator_api._membership._machine import Action, FindCoordinator, LeaveAnswered, RequestKind
from coordinator_api._protocol import MAX_GROUP_RESOURCES, ApiKey
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest, GroupHeartbeatRequest

#: The first version in which a member brings its own member id.
MIN_VERSION = 1


CONSUMER = "consumer"


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
    resources: every answer carries the list).

    :raises ConfigurationError: a resource group with an empty name or a count below 1, or more
        than :data:`~coordinator_api._protocol.MAX_GROUP_RESOURCES` resources in all.
    """

    topics: tuple[str, ...] | None = None
    regex: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None
    resources: Mapping[str, int] | None = None
    metadata: bytes = b""
    list_owners: bool = False

    def __post_init__(self) -> None:
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
) -> Any:
    """The full request for ``action`` (every field given, so every answer has the assignment):
    a ConsumerGroupHeartbeat for a consumer group, else a GroupHeartbeat."""
    leaving = action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    owned: dict[bytes, list[int]] = {}
    for key, index in sorted(action.owned):
        owned.setdefault(key, []).append(index)
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


def heartbeat_answered(sent_at: int, response: Any) -> GroupHeartbeatAnswered:
    """The machine's event for a ConsumerGroupHeartbeat response."""
    assignment: Assignment | None = None
    if response.assignment is not None and response.API_KEY == ApiKey.GROUP_HEARTBEAT:
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
    type other than ``consumer``) to join, stay and leave."""

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

    @property
    def api_key(self) -> ApiKey:
        """The heartbeat API this wire speaks."""
        return ApiKey.CONSUMER_GROUP_HEARTBEAT if self._protocol_type == CONSUMER else ApiKey.GROUP_HEARTBEAT

    def coordinator_serves(self) -> bool:
        """Whether the group's coordinator serves this wire's heartbeat API (asks it for its
        ApiVersions; application thread). Apache Kafka's brokers serve ConsumerGroupHeartbeat
        from 4.0, never GroupHeartbeat.

        :raises Exception: kafka-python's error when the coordinator cannot be reached.
        """
        request = ApiVersionsRequest(client_software_name="coordinator-api", client_software_version="1")
        response = self.call(request, to_coordinator=True)
        return any(api.api_key == self.api_key for api in response.api_keys)

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
            request = heartbeat_request(self._settings, self.subscription, action, self._protocol_type)
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
                    lambda r: heartbeat_answered(sent_at, self._note_owners(r)),
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

    def _note_owners(self, response: Any) -> Any:
        if getattr(response, "owners", None) is not None:
            # Replaced whole (one reference), so readers on other threads see one answer's list.
            self.owners = {(o.name, o.index): (o.member_id, bytes(o.metadata)) for o in response.owners}
        return response
