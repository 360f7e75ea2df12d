"""ConsumerGroupHeartbeat (KIP-848) on the wire, for the incremental member machine.

The request and response classes are generated from Kafka's JSON schemas by kafka-python's
schema mechanism (:mod:`coordinator_api.server.schemas`), like every other message; this module
only fills them in from the machine's actions and turns answers into the machine's events.
Version 1 is required: the member brings its own member id (KIP-1082), as Kafka 4's consumer
does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator_api._membership import _incremental as i
from coordinator_api._membership._driver import CoordinatorConnection
from coordinator_api._membership._incremental import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    GroupHeartbeatAnswered,
    IncrementalSettings,
    SendGroupHeartbeat,
)
from coordinator_api._membership._machine import Action, FindCoordinator, LeaveAnswered, RequestKind
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest

#: The first version in which a member brings its own member id.
MIN_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class GroupSubscription:
    """What a member of a consumer group subscribes to: topic names or a regular expression
    (evaluated by the coordinator, in its own regex dialect: RE2/J on Kafka's brokers)."""

    topics: tuple[str, ...] | None = None
    regex: str | None = None
    server_assignor: str | None = None
    rack_id: str | None = None


def heartbeat_request(
    settings: IncrementalSettings, subscription: GroupSubscription, action: SendGroupHeartbeat
) -> Any:
    """The full request for ``action`` (every field given, so every answer has the assignment)."""
    leaving = action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    topic = ConsumerGroupHeartbeatRequest.TopicPartitions
    owned: dict[bytes, list[int]] = {}
    for topic_id, partition in sorted(action.owned):
        owned.setdefault(topic_id, []).append(partition)
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
    if response.assignment is not None:
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
    coordinator: FindCoordinator, and ConsumerGroupHeartbeat to join, stay and leave."""

    def __init__(
        self,
        settings: IncrementalSettings,
        subscription: GroupSubscription,
        *,
        connection_options: dict[str, Any],
        request_timeout_ms: int,
    ) -> None:
        super().__init__(
            settings.group_id, connection_options=connection_options, request_timeout_ms=request_timeout_ms
        )
        self._settings = settings
        self._subscription = subscription

    def send(self, action: Action, sent_at: int, deliver: Callable[[i.Event], object]) -> None:
        if isinstance(action, FindCoordinator):
            self.find(deliver)
        elif isinstance(action, SendGroupHeartbeat):
            request = heartbeat_request(self._settings, self._subscription, action)
            if action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                self._request(
                    self._to_coordinator(request, self._request_timeout_ms),
                    RequestKind.LEAVE,
                    lambda r: LeaveAnswered(r.error_code),
                    deliver,
                )
            else:
                # An answer later than the session is useless: fail it and reconnect.
                self._request(
                    self._to_coordinator(request, self._settings.session_timeout_ms),
                    RequestKind.HEARTBEAT,
                    lambda r: heartbeat_answered(sent_at, r),
                    deliver,
                )
