#!/usr/bin/env python3
"""Benchmark: incremental (KIP-848) against classic cooperative rebalancing, same client workload.

A group of N members consumes one topic of ``--partitions-per-member`` x N partitions. Once it
is stable, one member joins (scale out), the group settles, then one of the original members
leaves (scale in). With ``--changes`` the bench can also measure a second member joining one
heartbeat interval after a first (``scale-out-2``, as in a rolling start: the first change is
still reaching the members when the second comes); the two then leave, unmeasured. For each
change the bench measures, from the members' point of view:

* **partition-seconds without an owner**: the number of partitions that no member owns,
  integrated over time from the change until the group is stable again;
* **time until every partition is owned again** (the last moment that number went back to 0);
* **time until the group is stable**: every partition owned by exactly one member and every
  member at the same epoch (incremental) or synced in the same generation (classic), with no
  change for 1.5 heartbeat intervals (every member heartbeats at least once in that time, so a
  change still pending would have shown); the figure is the time of the last change.

The same simulated members run against:

* ``ours``: ConsumerGroupHeartbeat on the embedded coordinator (server-side ``uniform``);
* ``kafka``: the same against Apache Kafka 4's broker (one KRaft node, ``uniform``, the
  same consumer-group session and heartbeat interval);
* ``mock``: the same against librdkafka's mock cluster (its own ``range`` target assignment);
* ``classic-held``: classic JoinGroup/SyncGroup with ``cooperative-sticky`` on the embedded
  coordinator with its default held heartbeats, members heartbeating again as soon as a
  SyncGroup is answered (what this project's members do);
* ``classic``: the same with heartbeats answered at once (``heartbeat_hold_ms=0``, Kafka's
  classic coordinator) and members heartbeating every interval (Kafka's Java consumer).

Members are simulated at the protocol level, in this one asyncio process, one TCP connection
each, requests built and answers decoded with kafka-python's message classes and this
project's schema classes (``coordinator_api.server.schemas``). An incremental member owns what
the last answer gave it, revokes what an answer took away at once and then heartbeats at once
with what it owns (Kafka's consumer acknowledges a reconciliation that way), otherwise every
interval. A classic member is a KIP-429 consumer: it keeps what it owns through a rebalance,
revokes what its new assignment lacks and rejoins at once when it revoked anything.

Also: ConsumerGroupHeartbeats answered per second (back to back, M members) on ours, the
mock and Kafka. Ours is then the embedded coordinator that answers heartbeats at once, with its
network thread unless ``--no-network-thread`` (docs/coordinator.md, "The network thread").

Run ``python bench/bench_incremental.py --help``; bench/README.md has the method and caveats.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import math
import os
import platform
import random
import re
import statistics
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from coordinator_consumer import (
    Cluster,
    assign_cooperative_sticky,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_consumer import TopicPartition as ConsumerTopicPartition
from heartbeat_load import HeartbeatLoop, heartbeat_back_to_back, take_frames
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from coordinator_api import CoordinatorConfig
from coordinator_api._protocol import ErrorCode
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "bench" / "results" / "incremental.json"
HOST = "127.0.0.1"
CLIENT_ID = "bench-incremental"
CONSUMER_GROUP_HEARTBEAT_KEY = 68
CONSUMER_GROUP_HEARTBEAT_VERSION = 1  # the member brings its own id (KIP-1082); the mock serves v1 only
JOIN_VERSION, SYNC_VERSION, HEARTBEAT_VERSION, LEAVE_VERSION = 5, 3, 3, 3
METADATA_VERSION = 12  # the first with topic ids
COOPERATIVE = "cooperative-sticky"
RETRIABLE = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
}

# Servers (processes) and variants (a protocol on a server, the table's columns).
EMBEDDED, EMBEDDED_AT_ONCE, KAFKA, MOCK = "embedded", "embedded-at-once", "kafka", "mock"
INCREMENTAL, CLASSIC = "incremental", "classic"
LEAN, FULL = "lean", "full"  # the heartbeat rate's shapes of heartbeat (--heartbeat-shape)


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    protocol: str
    server: str
    heartbeat_after_sync: bool = False  # classic only: what this project's members do


VARIANTS = {
    v.key: v
    for v in (
        Variant("ours", "incremental, embedded coordinator", INCREMENTAL, EMBEDDED),
        Variant("kafka", "incremental, Apache Kafka broker", INCREMENTAL, KAFKA),
        Variant("mock", "incremental, librdkafka mock", INCREMENTAL, MOCK),
        Variant(
            "classic-held",
            "classic cooperative, embedded, held heartbeats",
            CLASSIC,
            EMBEDDED,
            heartbeat_after_sync=True,
        ),
        Variant("classic", "classic cooperative, embedded, heartbeats at once", CLASSIC, EMBEDDED_AT_ONCE),
    )
}
OURS = "ours"
INCREMENTAL_ON = {EMBEDDED: OURS, KAFKA: "kafka", MOCK: "mock"}  # the incremental variant of each server
PEERS = ("kafka", "mock", "classic-held", "classic")
SCENARIOS = ("scale-out", "scale-in", "scale-out-2")
DEFAULT_SCENARIOS = SCENARIOS[:2]
QUIET_INTERVALS = 1.5  # a group is stable once nothing changed for this many heartbeat intervals


class BenchError(RuntimeError):
    """The benchmark cannot go on (a server did not start or misbehaved)."""


def now() -> float:
    return time.perf_counter()


# --- one connection, several requests in flight ------------------------------------------------


class Connection(asyncio.Protocol):
    """One client connection; answers are matched to requests by correlation id.

    Several requests may be in flight, as in a real client: a classic member that leaves while
    the embedded coordinator holds its heartbeat sends LeaveGroup on the same connection.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._pending: dict[int, asyncio.Future[bytes]] = {}
        self._next_id = 0
        self.lost: BaseException | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.lost = exc or ConnectionResetError("connection closed by the server")
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(self.lost)
        self._pending.clear()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        for payload in take_frames(self._buffer):
            (correlation_id,) = struct.unpack_from(">i", payload)
            waiter = self._pending.pop(correlation_id, None)
            if waiter is not None and not waiter.done():  # else: its caller was cancelled
                waiter.set_result(payload)

    async def call(self, request: Any, response_cls: Any) -> Any:
        """Send ``request`` and return the decoded answer."""
        if self.transport is None:
            raise self.lost or ConnectionError("not connected")
        self._next_id += 1
        correlation_id = self._next_id
        request.with_header(correlation_id=correlation_id, client_id=CLIENT_ID)
        waiter: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
        self._pending[correlation_id] = waiter
        self.transport.write(bytes(request.encode(header=True, framed=True)))
        payload = await waiter
        return response_cls.decode(payload, version=request.version, header=True)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def connect(address: str) -> Connection:
    """Open a connection and say hello with ApiVersions v0 (untimed, as a client's bootstrap)."""
    host, _, port = address.rpartition(":")
    if host != HOST:
        raise BenchError(f"refusing to connect to {address}: only {HOST} is allowed")
    _, conn = await asyncio.get_running_loop().create_connection(Connection, host, int(port))
    reply = await asyncio.wait_for(conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse), 60)
    if reply.error_code != 0:
        raise BenchError(f"ApiVersions to {address} failed with error {reply.error_code}")
    return conn


async def api_versions(address: str) -> dict[int, tuple[int, int]]:
    conn = await connect(address)
    try:
        reply = await conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse)
    finally:
        conn.close()
    return {k.api_key: (k.min_version, k.max_version) for k in reply.api_keys}


def _uuid_int(value: Any) -> int:
    if isinstance(value, uuid.UUID):
        return value.int
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(value, "big")
    return uuid.UUID(str(value)).int


async def topic_id(address: str, topic: str) -> uuid.UUID:
    """The topic's id, from Metadata v12 (ConsumerGroupHeartbeat names topics by id)."""
    conn = await connect(address)
    try:
        for _ in range(300):
            reply = await conn.call(
                MetadataRequest(
                    version=METADATA_VERSION,
                    topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                ),
                MetadataResponse,
            )
            for t in reply.topics:
                if t.name == topic and t.error_code == 0 and _uuid_int(t.topic_id) != 0:
                    return uuid.UUID(int=_uuid_int(t.topic_id))
            await asyncio.sleep(0.2)
    finally:
        conn.close()
    raise BenchError(f"{address} has no topic id for {topic}")


# --- who owns what ---------------------------------------------------------------------------------


class Ownership:
    """Owners per partition, from the members' point of view, and the integrals over time.

    ``unowned_seconds`` is the partition-seconds without an owner since :meth:`open_window`;
    ``overlap_seconds`` the partition-seconds with two or more owners (always 0 for a correct
    protocol: a partition is consumed by one member at a time).
    """

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions
        self.count = [0] * partitions
        self.unowned = partitions
        self.multi = 0
        self._last = now()
        self.unowned_seconds = 0.0
        self.overlap_seconds = 0.0
        self.max_unowned = partitions
        self.max_owners = 0
        self.acquisitions = 0
        self.last_change = self._last
        self.last_all_owned = self._last if partitions == 0 else 0.0

    def _advance(self, t: float) -> None:
        dt = t - self._last
        if dt > 0:
            self.unowned_seconds += self.unowned * dt
            self.overlap_seconds += self.multi * dt
            self._last = t

    def open_window(self) -> None:
        t = now()
        self._advance(t)
        self.unowned_seconds = self.overlap_seconds = 0.0
        self.max_unowned = self.unowned
        self.max_owners = max(self.count, default=0)
        self.acquisitions = 0

    def acquire(self, partitions: set[int]) -> None:
        if not partitions:
            return
        t = now()
        self._advance(t)
        for p in partitions:
            c = self.count[p]
            if c == 0:
                self.unowned -= 1
            elif c == 1:
                self.multi += 1
            self.count[p] = c + 1
            self.max_owners = max(self.max_owners, c + 1)
        self.acquisitions += len(partitions)
        self.last_change = t
        if self.unowned == 0:
            self.last_all_owned = t

    def release(self, partitions: set[int]) -> None:
        if not partitions:
            return
        t = now()
        self._advance(t)
        for p in partitions:
            c = self.count[p]
            if c <= 0:
                raise BenchError(f"partition {p} released by a member that does not own it")
            if c == 1:
                self.unowned += 1
            elif c == 2:
                self.multi -= 1
            self.count[p] = c - 1
        self.max_unowned = max(self.max_unowned, self.unowned)
        self.last_change = t

    def close_window(self) -> None:
        self._advance(now())

    def owned_exactly_once(self) -> bool:
        return self.unowned == 0 and self.multi == 0


@dataclass
class Group:
    """What the members of one group share: the topic, the ownership, a change counter."""

    group_id: str
    variant: Variant
    address: str
    topic: str
    topic_id: uuid.UUID
    partitions: int
    interval_s: float
    session_ms: int
    rebalance_timeout_ms: int
    ownership: Ownership
    members: list[Any] = field(default_factory=list)
    version: int = 0
    last_change: float = field(default_factory=now)
    requests: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    def touched(self) -> None:
        self.version += 1
        self.last_change = now()

    def stable(self) -> bool:
        """Every partition owned once and every member agreeing (see the module docstring)."""
        if not self.ownership.owned_exactly_once() or not self.members or self.balance() > 1:
            return False  # every assignor here balances one topic to within one partition
        if self.variant.protocol == INCREMENTAL:
            epochs = {m.epoch for m in self.members}
            return len(epochs) == 1 and next(iter(epochs)) > 0 and all(m.acked() for m in self.members)
        generations = {m.synced_generation for m in self.members}
        return len(generations) == 1 and all(m.state == "stable" for m in self.members)

    def balance(self) -> int:
        counts = [len(m.owned) for m in self.members]
        return max(counts) - min(counts) if counts else 0


# --- an incremental (KIP-848) member -------------------------------------------------------------


def steady_heartbeat(
    group_id: str, member_id: str, epoch: int, partitions: Any = None, **restated: Any
) -> Any:
    """A member's ConsumerGroupHeartbeat once it is in the group: its id and epoch, and what it
    owns only if that changed (``partitions``; None: unchanged); ``restated``: other fields
    given again."""
    fields: dict[str, Any] = {
        "instance_id": None,
        "rack_id": None,
        "rebalance_timeout_ms": -1,
        "subscribed_topic_names": None,
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": partitions,
    }
    fields.update(restated)
    return ConsumerGroupHeartbeatRequest(
        version=CONSUMER_GROUP_HEARTBEAT_VERSION,
        group_id=group_id,
        member_id=member_id,
        member_epoch=epoch,
        **fields,
    )


def restating_heartbeat(
    group_id: str, member_id: str, epoch: int, owned: list[int], full: dict[str, Any]
) -> Any:
    """A steady heartbeat that gives every field, each what the member joined with or owns, as
    this project's members send every heartbeat (``--heartbeat-shape full``)."""
    topic_id = uuid.UUID(full["topic_id"])
    owns = ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=topic_id, partitions=owned)
    return steady_heartbeat(
        group_id,
        member_id,
        epoch,
        [owns],
        rebalance_timeout_ms=full["rebalance_timeout_ms"],
        subscribed_topic_names=[full["topic"]],
        subscribed_topic_regex="",  # as the members joined (see IncrementalMember._request)
    )


class IncrementalMember:
    """A KIP-848 consumer at the protocol level.

    It joins with epoch 0 and its subscription; afterwards it sends only its id and epoch, and
    the partitions it owns when they changed since it last reported them. An answer's
    assignment replaces what it owns: what the answer took away is revoked at once (it stops
    owning it), what is new is owned at once, and the next heartbeat goes out at once to
    acknowledge (Kafka's consumer does the same after a reconciliation); otherwise it heartbeats
    every interval the coordinator gave.
    """

    def __init__(self, group: Group, conn: Connection) -> None:
        self.group = group
        self.conn = conn
        self.member_id = uuid.uuid4().hex  # v1: the member brings its own id (KIP-1082)
        self.epoch = 0
        self.owned: set[int] = set()
        self.reported: frozenset[int] | None = None
        self.interval_s = group.interval_s
        self.joining = True  # until an answer accepts it; again after being fenced
        self.task: asyncio.Task[None] | None = None
        self._in_flight = False  # a heartbeat sent and not yet answered
        self._stopping = False  # stop after the answer in flight
        self._next_at = 0.0

    def acked(self) -> bool:
        return self.reported == frozenset(self.owned)

    def start(self, delay: float = 0.0) -> None:
        self._next_at = now() + delay
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self, *, answered: bool = False) -> None:
        """Stop heartbeating. A heartbeat in flight is dropped, or with ``answered`` its answer
        is awaited and acted on first, so that the member keeps the epoch the coordinator last
        gave it (an answer dropped may have moved it on)."""
        if self.task is None:
            return
        task, self.task = self.task, None
        if answered and self._in_flight:
            self._stopping = True  # the task ends once it has acted on the answer
        else:
            task.cancel()
        await asyncio.wait([task])  # ended, cancelled, or failed already: never raises here
        self._stopping = False
        if not task.cancelled() and task.exception() is not None:
            self.group.errors[f"member task: {task.exception()!r}"] += 1

    def _request(self) -> Any:
        g = self.group
        if self.epoch == 0:
            # Joining, or still at epoch 0 on the mock (which keeps a new member there until
            # its whole target is free, and refuses an epoch-0 heartbeat without the
            # subscription): the full request.
            self.reported = frozenset()
            return ConsumerGroupHeartbeatRequest(
                version=CONSUMER_GROUP_HEARTBEAT_VERSION,
                group_id=g.group_id,
                member_id=self.member_id,
                member_epoch=0,
                instance_id=None,
                rack_id=None,
                rebalance_timeout_ms=g.rebalance_timeout_ms,
                subscribed_topic_names=[g.topic],
                # An empty regex beside the names, as librdkafka's consumer sends: the mock
                # aborts on names with a null regex (what Kafka's Java consumer sends).
                subscribed_topic_regex="",
                server_assignor=None,
                topic_partitions=[],
            )
        owned = frozenset(self.owned)
        partitions = None
        if owned != self.reported:
            partitions = (
                [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=g.topic_id, partitions=sorted(owned))]
                if owned
                else []
            )
            self.reported = owned
        return steady_heartbeat(g.group_id, self.member_id, self.epoch, partitions)

    def _apply(self, assignment: Any) -> None:
        g = self.group
        wanted: set[int] = set()
        for tp in assignment.topic_partitions:
            if _uuid_int(tp.topic_id) == g.topic_id.int:
                wanted.update(tp.partitions)
        revoked, added = self.owned - wanted, wanted - self.owned
        if revoked:
            g.ownership.release(revoked)  # revoke first (onPartitionsRevoked) ...
            self.owned -= revoked
        if added:
            g.ownership.acquire(added)  # ... then take the new ones (onPartitionsAssigned)
            self.owned |= added
        if revoked or added:
            g.touched()

    def _lose_all(self) -> None:
        if self.owned:
            self.group.ownership.release(self.owned)
            self.owned = set()
            self.group.touched()

    async def heartbeat_once(self) -> Any:
        """Send one heartbeat and act on its answer; returns the answer."""
        g = self.group
        g.requests += 1
        reply = await self.conn.call(self._request(), ConsumerGroupHeartbeatResponse)
        error = reply.error_code
        if error == 0:
            self.joining = False
            self.interval_s = (
                reply.heartbeat_interval_ms / 1000 if reply.heartbeat_interval_ms > 0 else g.interval_s
            )
            if reply.member_epoch != self.epoch:
                self.epoch = reply.member_epoch
                g.touched()
            if reply.assignment is not None:
                self._apply(reply.assignment)
        elif error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            g.errors[ErrorCode(error).name] += 1
            self._lose_all()  # onPartitionsLost, then rejoin with epoch 0
            self.epoch = 0
            self.joining = True
            g.touched()
        else:
            g.errors[_error_name(error)] += 1
        return reply

    async def _run(self) -> None:
        while True:
            delay = self._next_at - now()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = now()
            self._in_flight = True
            try:
                reply = await self.heartbeat_once()
            except (ConnectionError, OSError) as exc:
                self.group.errors[f"connection: {type(exc).__name__}"] += 1
                raise
            finally:
                self._in_flight = False
            if self._stopping:
                return
            error = reply.error_code
            if error in RETRIABLE:
                self._next_at = now() + 0.1
            elif error not in (0, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
                self._next_at = sent + self.interval_s  # counted in the group's errors
            elif self.joining or not self.acked():
                self._next_at = now()  # rejoin, or acknowledge a reconciliation, at once
            else:
                self._next_at = sent + self.interval_s

    async def leave(self) -> None:
        """Stop, give up every partition, then leave (epoch -1), as a closing consumer does."""
        await self.stop()
        self._lose_all()
        g = self.group
        g.requests += 1
        request = steady_heartbeat(g.group_id, self.member_id, -1)  # epoch -1: leave
        reply = await asyncio.wait_for(self.conn.call(request, ConsumerGroupHeartbeatResponse), 60)
        if reply.error_code != 0:
            g.errors[f"leave: {_error_name(reply.error_code)}"] += 1


# --- a classic cooperative (KIP-429) member ------------------------------------------------------


class ClassicMember:
    """A cooperative consumer on JoinGroup/SyncGroup at the protocol level.

    It rejoins keeping what it owns, listing it (and its generation) in its subscription; the
    leader runs this project's ``cooperative-sticky`` assignor, which leaves a partition that
    moves out of its new owner's assignment until the old owner has revoked it; a member that
    revoked something rejoins at once so that the next generation can hand it over.
    """

    def __init__(self, group: Group, conn: Connection) -> None:
        self.group = group
        self.conn = conn
        self.member_id = ""
        self.generation = -1
        self.synced_generation = -1
        self.state = "joining"
        self.owned: set[int] = set()
        self.task: asyncio.Task[None] | None = None
        self._start_delay = 0.0

    @property
    def epoch(self) -> int:  # for a uniform view in the results
        return self.synced_generation

    def acked(self) -> bool:
        return self.state == "stable"

    def start(self, delay: float = 0.0) -> None:
        self._start_delay = delay
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self.task is not None:
            task, self.task = self.task, None
            task.cancel()
            await asyncio.wait([task])  # cancelled, or failed already: never raises here
            if not task.cancelled() and task.exception() is not None:
                self.group.errors[f"member task: {task.exception()!r}"] += 1

    def _set_state(self, state: str) -> None:
        if state != self.state:
            self.state = state
            self.group.touched()

    def _lose_all(self) -> None:
        if self.owned:
            self.group.ownership.release(self.owned)
            self.owned = set()
            self.group.touched()

    async def _call(self, request: Any, response_cls: Any) -> Any:
        self.group.requests += 1
        return await self.conn.call(request, response_cls)

    async def _run(self) -> None:
        if self._start_delay > 0:
            await asyncio.sleep(self._start_delay)
        while True:
            synced_at = await self._join_and_sync()
            await self._heartbeat_until_rebalance(synced_at)

    def _subscription(self) -> bytes:
        g = self.group
        return encode_subscription(
            [g.topic],
            owned=[ConsumerTopicPartition(g.topic, p) for p in sorted(self.owned)],
            generation=self.generation,
        )

    def _assign(self, reply: Any) -> dict[str, bytes]:
        """The leader's work: cooperative-sticky over every member's subscription."""
        g = self.group
        subscriptions = [
            decode_subscription(m.member_id, m.group_instance_id, bytes(m.metadata)) for m in reply.members
        ]
        assignment = assign_cooperative_sticky(subscriptions, Cluster(partitions={g.topic: g.partitions}))
        return {member: encode_assignment(tps) for member, tps in assignment.items()}

    async def _join_and_sync(self) -> float:
        g = self.group
        while True:
            self._set_state("joining")
            reply = await self._call(
                JoinGroupRequest(
                    version=JOIN_VERSION,
                    group_id=g.group_id,
                    session_timeout_ms=g.session_ms,
                    rebalance_timeout_ms=g.rebalance_timeout_ms,
                    member_id=self.member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[
                        JoinGroupRequest.JoinGroupRequestProtocol(
                            name=COOPERATIVE, metadata=self._subscription()
                        )
                    ],
                ),
                JoinGroupResponse,
            )
            error = reply.error_code
            if error == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id = reply.member_id
                continue
            if error != 0:
                g.errors[f"JoinGroup: {_error_name(error)}"] += 1
                if error == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id, self.generation = "", -1
                    self._lose_all()
                await asyncio.sleep(0.1 if error in RETRIABLE else 0)
                continue
            self.member_id = reply.member_id
            self.generation = reply.generation_id
            assignments = self._assign(reply) if reply.leader == self.member_id else {}
            self._set_state("syncing")
            sync = await self._call(
                SyncGroupRequest(
                    version=SYNC_VERSION,
                    group_id=g.group_id,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocol_name=COOPERATIVE,
                    assignments=[
                        SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                        for m, a in assignments.items()
                    ],
                ),
                SyncGroupResponse,
            )
            error = sync.error_code
            if error != 0:
                # REBALANCE_IN_PROGRESS is no error: another rebalance began while this member
                # synced (a cooperative member that revoked rejoins at once), so it rejoins.
                if error != ErrorCode.REBALANCE_IN_PROGRESS:
                    g.errors[f"SyncGroup: {_error_name(error)}"] += 1
                if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                    self._lose_all()
                    self.generation = -1
                    if error == ErrorCode.UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                continue  # REBALANCE_IN_PROGRESS: rejoin, keeping what it owns
            tps, _ = decode_assignment(bytes(sync.assignment))
            assigned = {tp.partition for tp in tps if tp.topic == g.topic}
            revoked, added = self.owned - assigned, assigned - self.owned
            if revoked:
                g.ownership.release(revoked)
                self.owned -= revoked
            if added:
                g.ownership.acquire(added)
                self.owned |= added
            self.synced_generation = self.generation
            self.state = "stable"
            g.touched()
            if revoked:
                continue  # KIP-429: rejoin at once, so the next generation hands them over
            return now()

    async def _heartbeat_until_rebalance(self, synced_at: float) -> None:
        g = self.group
        next_at = synced_at if self.group.variant.heartbeat_after_sync else synced_at + g.interval_s
        while True:
            delay = next_at - now()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = now()
            reply = await self._call(
                HeartbeatRequest(
                    version=HEARTBEAT_VERSION,
                    group_id=g.group_id,
                    generation_id=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                ),
                HeartbeatResponse,
            )
            error = reply.error_code
            if error == 0:
                next_at = sent + g.interval_s  # a held heartbeat answered late: the next goes at once
            elif error == ErrorCode.REBALANCE_IN_PROGRESS:
                return
            elif error in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID):
                g.errors[f"Heartbeat: {_error_name(error)}"] += 1
                self._lose_all()
                self.generation = -1
                if error == ErrorCode.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                return
            else:
                g.errors[f"Heartbeat: {_error_name(error)}"] += 1
                next_at = now() + 0.1

    async def leave(self) -> None:
        """Stop, revoke everything, then LeaveGroup, as a closing consumer does."""
        await self.stop()
        self._lose_all()
        reply = await asyncio.wait_for(
            self._call(
                LeaveGroupRequest(
                    version=LEAVE_VERSION,
                    group_id=self.group.group_id,
                    members=[
                        LeaveGroupRequest.MemberIdentity(member_id=self.member_id, group_instance_id=None)
                    ],
                ),
                LeaveGroupResponse,
            ),
            60,
        )
        if reply.error_code != 0:
            self.group.errors[f"leave: {_error_name(reply.error_code)}"] += 1


Member = IncrementalMember | ClassicMember


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"


# --- servers ---------------------------------------------------------------------------------------


@dataclass
class Server:
    kind: str
    address: str
    pid: int
    notes: list[str]
    process: subprocess.Popen[str] | None = None
    cluster: Any = None
    lines: list[str] = field(default_factory=list)
    incremental: bool = True  # serves ConsumerGroupHeartbeat


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


def _start_child(kind: str, argv: list[str], log_path: Path, notes: list[str], stdin: Any = None) -> Server:
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - the child writes to it until it stops
    process = subprocess.Popen(
        argv, stdin=stdin, stdout=subprocess.PIPE, stderr=log, text=True, env=_child_env(), cwd=REPO
    )
    found: list[str] = []
    lines: list[str] = []

    def read_stdout() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if not found:
                match = re.search(r"listening on (\S+:\d+)", line)
                if match:
                    found.append(match.group(1))
            lines.append(line)
            log.write(line)
            log.flush()

    threading.Thread(target=read_stdout, daemon=True).start()
    deadline = time.monotonic() + 60
    while not found:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise BenchError(f"{kind} server did not start; see {log_path}")
        time.sleep(0.02)
    return Server(kind=kind, address=found[0], pid=process.pid, notes=notes, process=process, lines=lines)


def start_embedded(
    kind: str, results: Path, topics: dict[str, int], args: argparse.Namespace, hold_ms: int | None
) -> Server:
    """``python -m coordinator_api serve`` with a config file naming every setting that matters."""
    settings = {
        "initial_rebalance_delay_ms": 0,
        "min_session_timeout_ms": min(1000, args.session_timeout_ms),
        "consumer_group_session_timeout_ms": args.session_timeout_ms,
        "consumer_group_heartbeat_interval_ms": args.heartbeat_interval_ms,
    }
    if hold_ms is not None:
        settings["heartbeat_hold_ms"] = hold_ms
    if hold_ms == 0 and args.network_thread:
        settings["network_thread"] = "true"  # steady heartbeats answered in C (docs/coordinator.md)
    widest = max(topics.values(), default=0)
    if widest > CoordinatorConfig().max_partitions_per_topic:  # 5 per member past 2,000 members
        settings["max_partitions_per_topic"] = widest
    config = results / f"incremental-{kind}.toml"
    config.write_text(
        "[coordinator]\n"
        + "".join(f"{k} = {v}\n" for k, v in settings.items())
        + "\n[topics]\n"
        + "".join(f'"{name}" = {count}\n' for name, count in topics.items()),
        encoding="utf-8",
    )
    argv = [sys.executable, "-m", "coordinator_api", "--log-level", args.embedded_log_level]
    argv += ["serve", "--port", "0", "--config", str(config)]
    if args.embedded_profile is not None:  # cProfile writes it when the server exits (SIGTERM)
        argv[1:1] = ["-m", "cProfile", "-o", f"{args.embedded_profile}.{kind}"]
    notes = ["python " + " ".join(argv[1:]) + " with " + ", ".join(f"{k}={v}" for k, v in settings.items())]
    return _start_child(kind, argv, results / f"incremental-{kind}.log", notes)


def start_mock(results: Path, topics: dict[str, int], args: argparse.Namespace) -> Server:
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve-mock"]
    argv += ["--mock-topics", ",".join(f"{n}:{c}" for n, c in topics.items())]
    argv += ["--session-timeout-ms", str(args.session_timeout_ms)]
    argv += ["--heartbeat-interval-ms", str(args.heartbeat_interval_ms)]
    notes = [
        f"LibrdkafkaMockCluster(brokers=1); rd_kafka_mock_set_group_consumer_session_timeout_ms("
        f"{args.session_timeout_ms}), rd_kafka_mock_set_group_consumer_heartbeat_interval_ms("
        f"{args.heartbeat_interval_ms})"
    ]
    return _start_child(MOCK, argv, results / "incremental-mock.log", notes, stdin=subprocess.PIPE)


def serve_mock(args: argparse.Namespace) -> int:
    """Child process: librdkafka's mock cluster with the consumer-group settings, until stdin closes."""
    from coordinator_api.testing import LibrdkafkaMockCluster

    with LibrdkafkaMockCluster(brokers=1) as cluster:
        for spec in args.mock_topics.split(","):
            name, _, count = spec.rpartition(":")
            cluster.create_topic(name, int(count))
        # Not wrapped by LibrdkafkaMockCluster: the same, already loaded, library.
        lib = ctypes.CDLL(str(cluster._lib.path))  # type: ignore[union-attr]
        for symbol, value in (
            ("rd_kafka_mock_set_group_consumer_session_timeout_ms", args.session_timeout_ms),
            ("rd_kafka_mock_set_group_consumer_heartbeat_interval_ms", args.heartbeat_interval_ms),
        ):
            fn = getattr(lib, symbol)
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int]
            fn.restype = None
            fn(cluster._mcluster, value)
        print(f"mock listening on {cluster.bootstrap_servers}", flush=True)
        for _ in sys.stdin:
            pass
    return 0


def kafka_broker_config(args: argparse.Namespace) -> dict[str, str]:
    """The consumer-group settings of the embedded coordinator, as Kafka broker settings."""
    return {
        "group.consumer.heartbeat.interval.ms": str(args.heartbeat_interval_ms),
        "group.consumer.min.heartbeat.interval.ms": str(min(100, args.heartbeat_interval_ms)),
        "group.consumer.session.timeout.ms": str(args.session_timeout_ms),
        "group.consumer.min.session.timeout.ms": str(min(500, args.session_timeout_ms)),
        "group.initial.rebalance.delay.ms": "0",
        # Kafka 4.3 recomputes a consumer group's target assignment at most this often (default
        # 1000 ms, in a background thread); the embedded coordinator does so on the heartbeat
        # that changed the group, so the like-for-like setting is 0.
        "group.consumer.assignment.interval.ms": str(args.kafka_assignment_interval_ms),
    }


def start_kafka(topics: dict[str, int], args: argparse.Namespace) -> Server:
    """One KRaft broker+controller of Apache Kafka 4 with the topics."""
    from kafka.admin import KafkaAdminClient, NewPartitions

    from coordinator_api.testing import KAFKA_VERSION, TEST_JVM_OPTIONS, KafkaCluster

    # The tests' brokers run C1 only (-XX:TieredStopAtLevel=1) for a quick start; a benchmark
    # runs the broker as in production, with the C2 compiler too (--quick, a smoke test: C1 only).
    jvm = [o for o in TEST_JVM_OPTIONS if args.quick or o != "-XX:TieredStopAtLevel=1"]
    config = kafka_broker_config(args)
    cluster = KafkaCluster(brokers=1, heap_mb=args.kafka_heap_mb, jvm_options=jvm, broker_config=config)
    cluster.start()
    try:
        for name, count in topics.items():
            # KRaft refuses more than 10,000 records in one batch: big topics grow in steps.
            first = min(count, 5000)
            cluster.create_topic(name, first, replication_factor=1)
            if count > first:
                admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers, client_id=CLIENT_ID)
                try:
                    admin.create_partitions({name: NewPartitions(total_count=count)})
                finally:
                    admin.close()
        broker = cluster.broker(1)
        notes = [
            f"Apache Kafka {KAFKA_VERSION}: KafkaCluster(brokers=1, heap_mb={args.kafka_heap_mb}), "
            + ("C1 only (--quick)" if args.quick else "C2 enabled")
            + "; broker config "
            + ", ".join(f"{k}={v}" for k, v in config.items())
        ]
        assert broker.pid is not None
        return Server(kind=KAFKA, address=broker.address, pid=broker.pid, notes=notes, cluster=cluster)
    except BaseException:
        cluster.close()
        raise


def stop_server(server: Server, results: Path) -> None:
    if server.cluster is not None:
        log = server.cluster.broker(1).directory / "logs" / "server.log"
        if log.exists():
            (results / "incremental-kafka.log").write_bytes(log.read_bytes())
        server.cluster.close()
        return
    process = server.process
    if process is None or process.poll() is not None:
        return
    if server.kind == MOCK:
        assert process.stdin is not None
        process.stdin.close()
    else:
        process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- CPU accounting -----------------------------------------------------------------------------


class CpuWindow:
    """CPU used by a server, by this process and by the whole machine over a window."""

    def __init__(self, server_pid: int | None) -> None:
        self._server = psutil.Process(server_pid) if server_pid else None
        self._me = psutil.Process()
        self._t0 = time.monotonic()
        self._server0 = self._cpu(self._server)
        self._me0 = self._cpu(self._me)
        self._machine0 = psutil.cpu_times()

    @staticmethod
    def _cpu(process: psutil.Process | None) -> float:
        if process is None:
            return 0.0
        times = process.cpu_times()
        return float(times.user + times.system)

    def figures(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        machine1 = psutil.cpu_times()
        busy = sum(getattr(machine1, f) - getattr(self._machine0, f) for f in ("user", "system", "nice"))
        busy += sum(
            getattr(machine1, f, 0.0) - getattr(self._machine0, f, 0.0) for f in ("irq", "softirq", "steal")
        )
        server = self._cpu(self._server) - self._server0
        me = self._cpu(self._me) - self._me0
        return {
            "wall_s": wall,
            "server_cpu_s": server,
            "loadgen_cpu_s": me,
            "machine_busy_cores": busy / wall if wall > 0 else 0.0,
            "others_cores": max(0.0, busy - server - me) / wall if wall > 0 else 0.0,
        }


# --- one group, its trials ------------------------------------------------------------------------


def new_member(group: Group, conn: Connection) -> Member:
    if group.variant.protocol == INCREMENTAL:
        return IncrementalMember(group, conn)
    return ClassicMember(group, conn)


def join_now(group: Group, conn: Connection) -> Member:
    """A new member on ``conn`` joins ``group`` at once."""
    member = new_member(group, conn)
    group.members.append(member)
    group.touched()
    member.start(0.0)
    return member


async def leave_now(group: Group, member: Member) -> None:
    """``member`` leaves ``group`` and closes its connection."""
    group.members.remove(member)
    group.touched()
    await member.leave()
    member.conn.close()


async def connect_many(address: str, count: int) -> list[Connection]:
    """``count`` connections, two handshakes at a time (the mock listens with a backlog of 5)."""
    gate = asyncio.Semaphore(2)

    async def one() -> Connection:
        async with gate:
            return await connect(address)

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def settle(group: Group, quiet_s: float, timeout_s: float, expected_members: int) -> float:
    """Wait until the group is stable and nothing changed for ``quiet_s``; return the last change."""
    deadline = now() + timeout_s
    while True:
        t = now()
        if (
            len(group.members) == expected_members
            and group.stable()
            and t - group.last_change >= quiet_s
            and t - group.ownership.last_change >= quiet_s
        ):
            return max(group.last_change, group.ownership.last_change)
        if t > deadline:
            raise BenchError(
                f"{group.variant.key} group of {expected_members} not stable within {timeout_s:.0f} s: "
                f"{group.ownership.unowned} unowned, {group.ownership.multi} owned twice, "
                f"states {Counter(getattr(m, 'state', m.epoch) for m in group.members).most_common(5)}, "
                f"errors {dict(group.errors)}"
            )
        for m in group.members:
            if m.task is not None and m.task.done() and not m.task.cancelled() and m.task.exception():
                raise BenchError(f"a member of {group.group_id} failed: {m.task.exception()!r}")
        await asyncio.sleep(0.01)


async def form_group(group: Group, size: int, timeout_s: float) -> float:
    """Start ``size`` members, spread over one heartbeat interval (classic: all at once)."""
    t0 = now()
    conns = await connect_many(group.address, size)
    rng = random.Random(size)
    for conn in conns:
        member = new_member(group, conn)
        group.members.append(member)
        delay = rng.uniform(0, group.interval_s) if group.variant.protocol == INCREMENTAL else 0.0
        member.start(delay)
    await settle(group, QUIET_INTERVALS * group.interval_s, timeout_s, size)
    return now() - t0


async def run_trial(
    group: Group,
    scenario: str,
    size: int,
    quiet_s: float,
    timeout_s: float,
    leaver: Member | None,
    server_pid: int | None = None,
) -> dict[str, Any]:
    """One change (a member joins, or ``leaver`` leaves, or a second member joins an interval
    after a first) and what it cost until stable again."""
    g = group
    joins = scenario in ("scale-out", "scale-out-2")
    joiner_conn = await connect(g.address) if joins else None
    if scenario == "scale-out-2":
        # The first join, not measured; the measured one comes an interval after it, while the
        # first is still reaching the members (every member moves to its epoch within about
        # an interval).
        join_now(g, await connect(g.address))
        await asyncio.sleep(g.interval_s)
    requests0, errors0 = g.requests, Counter(g.errors)
    members_before = len(g.members)
    before = [sorted(m.owned) for m in g.members] if size <= 10 else None
    cpu = CpuWindow(server_pid)
    g.ownership.open_window()
    t0 = now()
    if joins:
        assert joiner_conn is not None
        join_now(g, joiner_conn)
        expected = members_before + 1
    else:
        assert leaver is not None
        await leave_now(g, leaver)
        expected = members_before - 1
    settled_at = await settle(g, quiet_s, timeout_s, expected)
    g.ownership.close_window()
    o = g.ownership
    all_owned_at = o.last_all_owned if o.last_all_owned >= t0 else t0
    return {
        "scenario": scenario,
        "members_before": members_before,
        "members_after": expected,
        "stable_ms": (settled_at - t0) * 1000,
        "all_owned_ms": (all_owned_at - t0) * 1000,
        "unowned_partition_seconds": o.unowned_seconds,
        "max_unowned": o.max_unowned,
        "partitions_acquired": o.acquisitions,
        "overlap_partition_seconds": o.overlap_seconds,
        "max_owners": o.max_owners,
        "owned_exactly_once": o.owned_exactly_once(),
        "owners_per_partition": dict(Counter(o.count)),
        "balance_max_minus_min": g.balance(),
        "epochs": sorted({m.epoch for m in g.members}),
        # Small groups only: who owned what before and after (what moved, and where).
        "owned_before": before,
        "owned_after": [sorted(m.owned) for m in g.members] if before is not None else None,
        "requests": g.requests - requests0,
        "errors": dict(Counter(g.errors) - errors0),
        "machine": cpu.figures(),
    }


async def measure_variant(
    variant: Variant, server: Server, size: int, topic: str, tid: uuid.UUID, args: argparse.Namespace
) -> dict[str, Any]:
    """Form one group of ``size``, then ``--repeats`` x (scale out, scale in) on it."""
    interval_s = args.heartbeat_interval_ms / 1000

    def new_group() -> Group:
        return Group(
            group_id=f"inc-{variant.key}-{size}-{uuid.uuid4().hex[:8]}",
            variant=variant,
            address=server.address,
            topic=topic,
            topic_id=tid,
            partitions=args.partitions_per_member * size,
            interval_s=interval_s,
            session_ms=args.session_timeout_ms,
            rebalance_timeout_ms=args.rebalance_timeout_ms,
            ownership=Ownership(args.partitions_per_member * size),
        )

    group = new_group()
    out: dict[str, Any] = {"variant": variant.key, "members": size, "partitions": group.partitions}
    quiet_s = QUIET_INTERVALS * interval_s
    rng = random.Random(args.seed + size)
    trials: list[dict[str, Any]] = []
    formation_failures: list[str] = []
    out["formation_failures"] = formation_failures
    try:
        # Forming is not measured. A group that does not settle is recorded and a fresh one
        # formed (the embedded coordinator can strand partitions while many members join at
        # once: see docs/benchmarks.md), up to --formation-attempts times.
        for attempt in range(args.formation_attempts):
            try:
                out["formation_s"] = await form_group(group, size, args.trial_timeout)
                break
            except BenchError as exc:
                formation_failures.append(str(exc))
                print(f"  {variant.key:<12} N={size:<5} formation attempt {attempt + 1} failed: {exc}")
                out["errors_before_retry"] = dict(group.errors)
                await dissolve(group)
                if attempt + 1 == args.formation_attempts:
                    raise
                group = new_group()
        originals = list(group.members)
        for repeat in range(args.repeats):
            for scenario in args.changes:
                leaver = None
                if scenario == "scale-in":
                    present = [m for m in originals if m in group.members]
                    leaver = present[rng.randrange(len(present))]
                    originals.remove(leaver)
                # The change comes at a random point of the members' heartbeat cycles, not at a
                # fixed offset from the last change (which would bias every figure alike).
                await asyncio.sleep(rng.uniform(0, interval_s))
                trial = await run_trial(
                    group, scenario, size, quiet_s, args.trial_timeout, leaver, server.pid
                )
                trial["repeat"] = repeat
                trials.append(trial)
                print(
                    f"  {variant.key:<12} N={size:<5} {scenario:<9} #{repeat}: "
                    f"unowned {trial['unowned_partition_seconds']:.3f} partition-s, "
                    f"all owned {trial['all_owned_ms']:.0f} ms, stable {trial['stable_ms']:.0f} ms, "
                    f"{trial['partitions_acquired']} acquired, max unowned {trial['max_unowned']}, "
                    f"max owners {trial['max_owners']}, errors {trial['errors'] or 0}",
                    flush=True,
                )
                if scenario == "scale-out-2":
                    await leave_unmeasured(group, group.members[-2:], quiet_s, args.trial_timeout)
        out["final"] = {
            "members": len(group.members),
            "owned_exactly_once": group.ownership.owned_exactly_once(),
            "owners_per_partition": dict(Counter(group.ownership.count)),
            "balance_max_minus_min": group.balance(),
        }
    except BenchError as exc:
        out["failure"] = str(exc)
        print(f"  {variant.key:<12} N={size:<5} FAILED: {exc}", flush=True)
    finally:
        out["trials"] = trials
        out["errors"] = dict(group.errors)
        await dissolve(group)
    return out


async def leave_unmeasured(group: Group, leavers: list[Member], quiet_s: float, timeout_s: float) -> None:
    """``leavers`` leave, and the group settles again, outside any trial."""
    for m in leavers:
        await leave_now(group, m)
    await settle(group, quiet_s, timeout_s, len(group.members))


async def dissolve(group: Group) -> None:
    """Every member leaves (so the next group does not share the server with expiring ones)."""

    async def one(m: Member) -> None:
        try:
            await asyncio.wait_for(m.leave(), 30)
        except (Exception, asyncio.TimeoutError):
            await m.stop()
        m.conn.close()

    members, group.members = list(group.members), []
    gate = asyncio.Semaphore(50)

    async def gated(m: Member) -> None:
        async with gate:
            await one(m)

    await asyncio.gather(*(gated(m) for m in members))


# --- heartbeats per second ------------------------------------------------------------------------


class RateGroup:
    """A stable group of ``--heartbeat-members`` on one server, and its heartbeat-rate runs."""

    def __init__(
        self, server: Server, label: str, topic: str, tid: uuid.UUID, args: argparse.Namespace
    ) -> None:
        size = args.heartbeat_members
        self.server = server
        self.label = label
        self.group = Group(
            group_id=f"inc-hb-{label}-{uuid.uuid4().hex[:8]}",
            variant=Variant(label, label, INCREMENTAL, server.kind),
            address=server.address,
            topic=topic,
            topic_id=tid,
            partitions=args.partitions_per_member * size,
            interval_s=args.heartbeat_interval_ms / 1000,
            session_ms=args.session_timeout_ms,
            rebalance_timeout_ms=args.rebalance_timeout_ms,
            ownership=Ownership(args.partitions_per_member * size),
        )
        self.runs: list[dict[str, Any]] = []
        self.out: dict[str, Any] = {"server": label, "members": size, "runs": self.runs}

    async def run_once(self, args: argparse.Namespace) -> None:
        """The members send ConsumerGroupHeartbeat back to back for ``--heartbeat-seconds``."""
        members = [m for m in self.group.members if isinstance(m, IncrementalMember)]
        started_s = time.monotonic()
        answered, errors, figures = await blast_heartbeats(self.server, self.group, members, args)
        for m in members:
            m.start(0.0)
        per_second = answered / args.heartbeat_seconds
        self.runs.append(
            {
                "started_s": started_s,
                "answered": answered,
                "errors": dict(errors),
                "per_second": per_second,
                "server_cpu_us_per_heartbeat": figures["server_cpu_s"] / answered * 1e6 if answered else None,
                **figures,
            }
        )
        print(
            f"  heartbeats {self.label:<6} {len(members)} members: {per_second:,.0f}/s, "
            f"errors {dict(errors) or 0}, "
            f"server {figures['server_cpu_s'] / figures['wall_s']:.2f} cores, load generator "
            f"{figures['loadgen_cpu_s'] / figures['wall_s']:.2f} cores, "
            f"others {figures['others_cores']:.2f}",
            flush=True,
        )

    def failed(self, exc: BenchError) -> None:
        self.out["failure"] = str(exc)
        print(f"  heartbeats {self.label}: FAILED: {exc}", flush=True)

    def result(self) -> dict[str, Any]:
        rates = [r["per_second"] for r in self.runs]
        cpu_per = [
            r["server_cpu_us_per_heartbeat"]
            for r in self.runs
            if r["server_cpu_us_per_heartbeat"] is not None
        ]
        self.out["best_per_second"] = max(rates) if rates else None
        self.out["median_per_second"] = statistics.median(rates) if rates else None
        self.out["median_server_cpu_us_per_heartbeat"] = statistics.median(cpu_per) if cpu_per else None
        return self.out


async def heartbeat_rates(
    servers: list[tuple[str, Server, uuid.UUID]], topic: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Each server's stable group of M members sends ConsumerGroupHeartbeat back to back for T
    seconds, ``--heartbeat-repeats`` times; the servers take turns run by run (in an order that
    rotates), so that a change in the machine's load weighs on every server alike."""
    groups = [RateGroup(server, label, topic, tid, args) for label, server, tid in servers]
    running: list[RateGroup] = []
    try:
        for rg in groups:
            try:
                await form_group(rg.group, args.heartbeat_members, args.trial_timeout)
                running.append(rg)
            except BenchError as exc:
                rg.failed(exc)
        for round_ in range(args.heartbeat_repeats):
            shift = round_ % len(running) if running else 0
            for rg in running[shift:] + running[:shift]:
                try:
                    await rg.run_once(args)
                except BenchError as exc:
                    rg.failed(exc)
                    running.remove(rg)  # no more turns for it
                await asyncio.sleep(args.heartbeat_interval_ms / 1000)
        for rg in running:
            rg.out["owned_exactly_once"] = rg.group.ownership.owned_exactly_once()
    finally:
        for rg in groups:
            await dissolve(rg.group)
    return [rg.result() for rg in groups]


async def blast_heartbeats(
    server: Server, group: Group, members: list[IncrementalMember], args: argparse.Namespace
) -> tuple[int, Counter[str], dict[str, float]]:
    """The members send heartbeats back to back for ``--heartbeat-seconds``, from
    ``--heartbeat-generators`` processes of their own (``heartbeat_load.HeartbeatLoop``: cheap
    enough that the server holds a core and sets the rate): answered, errors by name, and the
    CPU figures of the run (:class:`CpuWindow`, the processes' CPU counted as the load
    generator's).

    Each process is told how many connections to open, opens them and says ``ready``; the
    members keep heartbeating meanwhile, since starting the processes can take longer than a
    session on a loaded machine. Once all are ready the members stop (each heartbeat in flight
    answered first, so that every epoch is the coordinator's), and the processes are given the
    members and one start time just ahead, so that they all send for the same
    ``--heartbeat-seconds``."""
    shares = [
        s for s in (members[i :: args.heartbeat_generators] for i in range(args.heartbeat_generators)) if s
    ]
    workers = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            str(Path(__file__).resolve()),
            "--heartbeat-worker",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=_child_env(),
            cwd=REPO,
        )
        for _ in shares
    ]
    try:
        for worker, share in zip(workers, shares, strict=True):
            assert worker.stdin is not None
            opening = {"address": server.address, "connections": len(share)}
            worker.stdin.write(json.dumps(opening).encode() + b"\n")
        for worker in workers:
            assert worker.stdout is not None
            said = await asyncio.wait_for(worker.stdout.readline(), args.trial_timeout)
            if said.strip() != b"ready":
                raise BenchError(f"a heartbeat generator said {said!r} instead of ready")
        await asyncio.gather(*(m.stop(answered=True) for m in members))
        cpu = CpuWindow(server.pid)
        start = time.time() + 0.2
        jobs = [
            {
                "group_id": group.group_id,
                "members": [[m.member_id, m.epoch, sorted(m.owned)] for m in share],
                "full": None
                if args.heartbeat_shape == LEAN
                else {
                    "topic": group.topic,
                    "topic_id": str(group.topic_id),
                    "rebalance_timeout_ms": group.rebalance_timeout_ms,
                },
                "seconds": args.heartbeat_seconds,
                "start": start,
            }
            for share in shares
        ]
        outputs = await asyncio.gather(
            *(w.communicate(json.dumps(job).encode() + b"\n") for w, job in zip(workers, jobs, strict=True))
        )
        figures = cpu.figures()
    finally:
        for worker in workers:
            if worker.returncode is None:
                worker.kill()
                await worker.wait()
    answered = 0
    errors: Counter[str] = Counter()
    cpu_s = 0.0
    for worker, (stdout, _) in zip(workers, outputs, strict=True):
        if worker.returncode != 0:
            raise BenchError(f"a heartbeat generator exited with {worker.returncode}")
        result = json.loads(stdout)
        answered += result["answered"]
        errors.update(result["errors"])
        cpu_s += result["cpu_s"]
    figures["loadgen_cpu_s"] += cpu_s
    figures["others_cores"] = max(0.0, figures["others_cores"] - cpu_s / figures["wall_s"])
    return answered, errors, figures


def heartbeat_worker() -> int:
    """One heartbeat generator (``--heartbeat-worker``), told by JSON lines on stdin: first the
    address and how many connections to open, then, after it printed ``ready``, the group, the
    members with their epochs, the seconds and the start time (seconds since the epoch). It
    prints the counts as JSON, the errors by name. With ``full`` (the topic, its id and the
    rebalance timeout) each heartbeat restates the member's subscription and what it owns."""
    opening = json.loads(sys.stdin.readline())

    async def run() -> dict[str, Any]:
        conns = await connect_many(opening["address"], opening["connections"])
        print("ready", flush=True)
        loop = asyncio.get_running_loop()
        job = json.loads(await loop.run_in_executor(None, sys.stdin.readline))
        start = job["start"]
        end = start + job["seconds"]
        beats = []
        full = job["full"]
        for conn, (member_id, epoch, owned) in zip(conns, job["members"], strict=True):
            assert conn.transport is not None
            request = (
                steady_heartbeat(job["group_id"], member_id, epoch)
                if full is None
                else restating_heartbeat(job["group_id"], member_id, epoch, owned, full)
            )
            beats.append(
                HeartbeatLoop(conn.transport, request, ConsumerGroupHeartbeatResponse, CLIENT_ID, end)
            )
        _, cpu_s = await heartbeat_back_to_back(beats, start)
        for conn in conns:
            conn.close()
        errors: Counter[str] = Counter()
        for beat in beats:
            errors.update({_error_name(code): n for code, n in beat.errors.items()})
        return {"answered": sum(b.answered for b in beats), "errors": dict(errors), "cpu_s": cpu_s}

    print(json.dumps(asyncio.run(run())))
    return 0


# --- a cross-check with real clients -----------------------------------------------------------


class RealConsumers:
    """librdkafka consumers (confluent-kafka), one thread each: ``group.protocol=consumer``, or
    with ``protocol`` the classic protocol's settings (cooperative-sticky).

    Each reports, from inside its rebalance callbacks, what it is given and what it gives up,
    stamped with this process's monotonic clock; the figures are computed from that log the way
    the simulated members' are computed live.
    """

    def __init__(
        self, address: str, group_id: str, topic: str, partitions: int, protocol: dict[str, Any] | None = None
    ) -> None:
        self.address, self.group_id, self.topic, self.partitions = address, group_id, topic, partitions
        self.protocol = protocol or {"group.protocol": "consumer"}
        self.lock = threading.Lock()
        self.events: list[tuple[float, int, str, frozenset[int]]] = []
        self.owned: dict[int, set[int]] = {}
        self.threads: dict[int, tuple[threading.Thread, threading.Event]] = {}
        self.failures: list[str] = []

    def _record(self, member: int, kind: str, partitions: list[int]) -> None:
        with self.lock:
            self.events.append((now(), member, kind, frozenset(partitions)))
            mine = self.owned.setdefault(member, set())
            if kind == "assigned":
                mine.update(partitions)
            else:
                mine.difference_update(partitions)

    def _run(self, member: int, stop: threading.Event) -> None:
        from confluent_kafka import Consumer

        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": self.address,
                    "group.id": self.group_id,
                    "client.id": f"bench-real-{member}",
                    "enable.auto.commit": False,
                    "log_level": 0,
                    **self.protocol,
                }
            )

            def on_assign(c: Any, tps: Any) -> None:
                self._record(member, "assigned", [tp.partition for tp in tps if tp.topic == self.topic])
                c.incremental_assign(tps)

            def on_revoke(c: Any, tps: Any) -> None:
                self._record(member, "revoked", [tp.partition for tp in tps if tp.topic == self.topic])
                c.incremental_unassign(tps)

            def on_lost(c: Any, tps: Any) -> None:
                self._record(member, "lost", [tp.partition for tp in tps if tp.topic == self.topic])

            consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
            while not stop.is_set():
                consumer.poll(0.05)  # no records (the embedded coordinator has no log): callbacks only
            consumer.close()  # revokes (on_revoke) and leaves
        except Exception as exc:
            self.failures.append(f"consumer {member}: {exc!r}")

    def start(self, member: int) -> None:
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(member, stop), daemon=True)
        self.threads[member] = (thread, stop)
        thread.start()

    def stop(self, member: int) -> None:
        thread, stop = self.threads.pop(member)
        stop.set()
        thread.join(60)

    def counts(self) -> list[int]:
        with self.lock:
            count = [0] * self.partitions
            for member in self.threads:
                for p in self.owned.get(member, ()):
                    count[p] += 1
            return count

    def stable_since(self) -> float | None:
        """When the ownership last changed, if every partition has one owner and loads are even."""
        with self.lock:
            members = [self.owned.get(m, set()) for m in self.threads]
            last = self.events[-1][0] if self.events else None
        count = self.counts()
        loads = [len(o) for o in members]
        if last is None or any(c != 1 for c in count) or not loads or max(loads) - min(loads) > 1:
            return None
        return last

    def figures(self, t0: float, t1: float) -> dict[str, Any]:
        """Partition-seconds without an owner and the last change, from the log, over [t0, t1]."""
        with self.lock:
            events = sorted(self.events)
        count = [0] * self.partitions
        unowned_seconds = overlap_seconds = 0.0
        last_t, last_change, max_owners, max_unowned = t0, t0, 0, 0
        for t, _, kind, partitions in events:
            if t > t0:
                unowned = sum(1 for c in count if c == 0)
                unowned_seconds += unowned * (t - last_t)
                overlap_seconds += sum(1 for c in count if c > 1) * (t - last_t)
                last_t, last_change = t, t
            delta = 1 if kind == "assigned" else -1
            for p in partitions:
                count[p] += delta
            if t > t0:
                max_owners = max(max_owners, *count)
                max_unowned = max(max_unowned, sum(1 for c in count if c == 0))
        unowned_seconds += sum(1 for c in count if c == 0) * max(0.0, t1 - last_t)
        return {
            "unowned_partition_seconds": unowned_seconds,
            "overlap_partition_seconds": overlap_seconds,
            "all_owned_ms": (last_change - t0) * 1000,
            "max_owners": max_owners,
            "max_unowned": max_unowned,
            "owned_exactly_once": all(c == 1 for c in count),
        }


async def real_client_check(
    server: Server, variant: str, topic: str, partitions: int, args: argparse.Namespace
) -> dict[str, Any]:
    """``--real-clients`` librdkafka consumers: formed, then one joins, then one leaves. The
    ``variant`` says the protocol and the server: an incremental one, or ``classic-held``
    (classic cooperative-sticky consumers, on the embedded coordinator with held heartbeats)."""
    protocol = None
    if VARIANTS[variant].protocol == CLASSIC:
        protocol = {
            "group.protocol": "classic",
            "partition.assignment.strategy": COOPERATIVE,
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": args.heartbeat_interval_ms,
        }
    label = VARIANTS[variant].server
    group_id = f"inc-real-{variant}-{uuid.uuid4().hex[:8]}"
    real = RealConsumers(server.address, group_id, topic, partitions, protocol)
    quiet = QUIET_INTERVALS * args.heartbeat_interval_ms / 1000
    size = args.real_clients
    out: dict[str, Any] = {
        "server": label,
        "variant": variant,
        "members": size,
        "partitions": partitions,
        "trials": [],
    }

    async def settled(timeout: float) -> float:
        deadline = now() + timeout
        while now() < deadline:
            if real.failures:
                raise BenchError("; ".join(real.failures))
            since = real.stable_since()
            if since is not None and now() - since >= quiet:
                return since
            await asyncio.sleep(0.05)
        raise BenchError(f"real consumers on {label} not stable within {timeout:.0f} s: {real.counts()}")

    try:
        for member in range(size):
            real.start(member)
        await settled(2 * args.trial_timeout)
        rng = random.Random(args.seed)
        for scenario in DEFAULT_SCENARIOS:
            await asyncio.sleep(rng.uniform(0, args.heartbeat_interval_ms / 1000))
            t0 = now()
            if scenario == "scale-out":
                real.start(size)
            else:
                await asyncio.to_thread(real.stop, 0)
            settled_at = await settled(args.trial_timeout)
            trial = {"scenario": scenario, **real.figures(t0, settled_at)}
            trial["stable_ms"] = trial["all_owned_ms"]
            out["trials"].append(trial)
            print(
                f"  real librdkafka consumers, {variant:<12} {scenario:<9}: "
                f"unowned {trial['unowned_partition_seconds']:.3f} partition-s, all owned "
                f"{trial['all_owned_ms']:.0f} ms, max owners {trial['max_owners']}",
                flush=True,
            )
        out["final_owned_exactly_once"] = all(c == 1 for c in real.counts())
    except BenchError as exc:
        out["failure"] = str(exc)
        print(f"  real librdkafka consumers, {variant}: FAILED: {exc}", flush=True)
    finally:
        await asyncio.gather(*(asyncio.to_thread(real.stop, m) for m in list(real.threads)))
    return out


# --- the run --------------------------------------------------------------------------------------


def topic_name(size: int) -> str:
    return f"bench-inc-{size}"


HB_TOPIC = "bench-inc-hb"
REAL_TOPIC = "bench-inc-real"


async def run(args: argparse.Namespace, results: Path) -> dict[str, Any]:
    topics = {topic_name(n): args.partitions_per_member * n for n in args.members}
    if args.heartbeat_members > 0:
        topics[HB_TOPIC] = args.partitions_per_member * args.heartbeat_members
    if args.real_clients > 0:
        topics[REAL_TOPIC] = args.partitions_per_member * args.real_clients
    variants = [VARIANTS[k] for k in args.variants]
    needed = {v.server for v in variants}
    if args.heartbeat_members > 0 or args.real_clients > 0:
        needed |= {EMBEDDED, MOCK, KAFKA} & set(args.heartbeat_servers)
    if args.heartbeat_members > 0 and EMBEDDED in args.heartbeat_servers:
        needed.add(EMBEDDED_AT_ONCE)  # back-to-back heartbeats with nothing new would be held
    servers: dict[str, Server] = {}
    report: dict[str, Any] = {
        "load_average_start": os.getloadavg(),
        "network_thread": args.network_thread,
        "heartbeat_shape": args.heartbeat_shape,
    }
    started = time.monotonic()
    kafka_thread: asyncio.Future[Server] | None = None
    try:
        if KAFKA in needed:
            kafka_thread = asyncio.ensure_future(asyncio.to_thread(start_kafka, topics, args))
        if EMBEDDED in needed:
            servers[EMBEDDED] = start_embedded(EMBEDDED, results, topics, args, None)
        if EMBEDDED_AT_ONCE in needed:
            servers[EMBEDDED_AT_ONCE] = start_embedded(EMBEDDED_AT_ONCE, results, topics, args, 0)
        if MOCK in needed:
            servers[MOCK] = start_mock(results, topics, args)
        if kafka_thread is not None:
            servers[KAFKA] = await kafka_thread
        report["servers"] = {k: {"address": s.address, "notes": s.notes} for k, s in servers.items()}
        for kind, server in servers.items():
            versions = await api_versions(server.address)
            low, high = versions.get(CONSUMER_GROUP_HEARTBEAT_KEY, (1, 0))
            server.incremental = low <= CONSUMER_GROUP_HEARTBEAT_VERSION <= high
            report["servers"][kind]["consumer_group_heartbeat_versions"] = (
                [low, high] if CONSUMER_GROUP_HEARTBEAT_KEY in versions else None
            )
            print(f"{kind}: {server.address}; {'; '.join(server.notes)}", flush=True)
            if not server.incremental:
                print(f"  {kind} does not serve ConsumerGroupHeartbeat v1: its column is 'not supported'")
        topic_ids: dict[str, dict[str, uuid.UUID]] = {}
        for kind, server in servers.items():
            topic_ids[kind] = {t: await topic_id(server.address, t) for t in topics}
        report["setup_s"] = time.monotonic() - started

        groups: list[dict[str, Any]] = []
        report["groups"] = groups
        for index, size in enumerate(args.members):
            rotated = variants[index % len(variants) :] + variants[: index % len(variants)]
            print(f"\nN = {size} members, {args.partitions_per_member * size} partitions", flush=True)
            for variant in rotated:
                server = servers[variant.server]
                if variant.protocol == INCREMENTAL and not server.incremental:
                    groups.append({"variant": variant.key, "members": size, "not_supported": True})
                    continue
                tid = topic_ids[variant.server][topic_name(size)]
                groups.append(await measure_variant(variant, server, size, topic_name(size), tid, args))

        rates: list[dict[str, Any]] = []
        report["heartbeat_rates"] = rates
        if args.heartbeat_members > 0:
            print(
                f"\n{args.heartbeat_shape} ConsumerGroupHeartbeats back to back, "
                f"{args.heartbeat_members} members",
                flush=True,
            )
            measured: list[tuple[str, Server, uuid.UUID]] = []
            for kind in args.heartbeat_servers:
                # The embedded coordinator's rate is measured with heartbeats answered at once,
                # as Kafka's broker and the mock answer them: a held one waits for news.
                serving = EMBEDDED_AT_ONCE if kind == EMBEDDED else kind
                if not servers[serving].incremental:
                    rates.append({"server": kind, "not_supported": True})
                    continue
                measured.append((kind, servers[serving], topic_ids[serving][HB_TOPIC]))
            rates.extend(await heartbeat_rates(measured, HB_TOPIC, args))
        real: list[dict[str, Any]] = []
        report["real_clients"] = real
        if args.real_clients > 0:
            print(f"\nreal librdkafka consumers, {args.real_clients}", flush=True)
            checks = [(kind, INCREMENTAL_ON[kind]) for kind in args.heartbeat_servers]
            if EMBEDDED in args.heartbeat_servers:
                checks.append((EMBEDDED, "classic-held"))  # the same clients, classic, same server
            for kind, variant in checks:
                server = servers[kind]
                if VARIANTS[variant].protocol == INCREMENTAL and not server.incremental:
                    real.append({"server": kind, "variant": variant, "not_supported": True})
                    continue
                real.append(await real_client_check(server, variant, REAL_TOPIC, topics[REAL_TOPIC], args))
    finally:
        if kafka_thread is not None and KAFKA not in servers:  # another server failed to start
            with contextlib.suppress(Exception):
                servers[KAFKA] = await kafka_thread
        for server in servers.values():
            stop_server(server, results)
    report["load_average_end"] = os.getloadavg()
    report["wall_seconds"] = time.monotonic() - started
    return report


# --- the table ------------------------------------------------------------------------------------


def report_changes(report: dict[str, Any]) -> list[str]:
    """The changes a report measured (``--changes``; reports from before it: the default)."""
    return list(dict.fromkeys(report.get("config", {}).get("changes") or DEFAULT_SCENARIOS))


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarize(report: dict[str, Any]) -> dict[tuple[int, str, str], dict[str, Any]]:
    """(members, scenario, variant) -> medians of the trials; 'not supported' and failures kept."""
    out: dict[tuple[int, str, str], dict[str, Any]] = {}
    for g in report["groups"]:
        for scenario in report_changes(report):
            key = (g["members"], scenario, g["variant"])
            if g.get("not_supported"):
                out[key] = {"not_supported": True}
                continue
            trials = [t for t in g.get("trials", []) if t["scenario"] == scenario]
            out[key] = {
                "trials": len(trials),
                "failure": g.get("failure"),
                **{
                    metric: _median([t[metric] for t in trials])
                    for metric in (
                        "unowned_partition_seconds",
                        "all_owned_ms",
                        "stable_ms",
                        "partitions_acquired",
                    )
                },
            }
    return out


METRICS = (
    ("unowned_partition_seconds", "partition-seconds without an owner (median)", "partition-s"),
    ("all_owned_ms", "time until every partition is owned again (median)", "ms"),
    ("stable_ms", "time until the group is stable (median)", "ms"),
)


def _cell(summary: dict[str, Any] | None, metric: str, unit: str) -> str:
    if summary is None:
        return "n/a"
    if summary.get("not_supported"):
        return "not supported"
    value = summary.get(metric)
    if value is None:
        return "failed" if summary.get("failure") else "n/a"
    return f"{value:,.3f} {unit}" if unit == "partition-s" else f"{value:,.0f} {unit}"


def ratio_text(ours: float | None, peer: float | None) -> str:
    """ours / peer for a lower-is-better figure."""
    if ours is None or peer is None:
        return "n/a"
    if peer == 0:
        return "n/a (peer 0)" if ours else "1x (both 0)"
    r = ours / peer
    text = f"{r:.2f}x" if 0.1 <= r < 10 else f"{r:.3g}x"
    return f"{text} (better)" if r < 1 else f"{text} (worse)" if r > 1 else f"{text} (same)"


def table(report: dict[str, Any], variants: list[str]) -> str:
    summary = summarize(report)
    peers = [p for p in PEERS if p in variants]
    shown = [OURS, *peers] if OURS in variants else peers
    header = ["metric", "N", "change", *(VARIANTS[v].label for v in shown)]
    if OURS in variants:
        header += [f"ours / {p}" for p in peers]
    rows = [header]
    sizes = sorted({g["members"] for g in report["groups"]})
    for metric, label, unit in METRICS:
        for size in sizes:
            for scenario in report_changes(report):
                cells = {v: summary.get((size, scenario, v)) for v in shown}
                row = [label, f"{size:,}", scenario, *(_cell(cells[v], metric, unit) for v in shown)]
                if OURS in variants:
                    ours = (cells[OURS] or {}).get(metric)
                    row += [
                        "not supported"
                        if (cells[p] or {}).get("not_supported")
                        else ratio_text(ours, (cells[p] or {}).get(metric))
                        for p in peers
                    ]
                rows.append(row)
    return _markdown(rows)


def heartbeat_table(report: dict[str, Any]) -> str:
    rates = {r["server"]: r for r in report.get("heartbeat_rates", [])}
    if not rates:
        return ""
    ours = "embedded coordinator" + (", network thread" if report.get("network_thread") else "")
    labels = {EMBEDDED: ours, MOCK: "librdkafka mock", KAFKA: "Apache Kafka broker"}
    kinds = [k for k in (EMBEDDED, MOCK, KAFKA) if k in rates]
    header = [
        "metric",
        "members",
        *(labels[k] for k in kinds),
        *(f"ours / {k}" for k in kinds if k != EMBEDDED),
    ]
    members = next((r["members"] for r in rates.values() if "members" in r), 0)

    def cell(r: dict[str, Any], key: str, fmt: str) -> str:
        if r.get("not_supported"):
            return "not supported"
        return fmt.format(r[key]) if r.get(key) is not None else "failed"

    ours = rates.get(EMBEDDED, {})
    rows = [header]
    rows.append(
        [
            f"{report.get('heartbeat_shape', LEAN)} ConsumerGroupHeartbeats answered per second "
            "(best; median)",
            str(members),
            *(
                "not supported"
                if rates[k].get("not_supported")
                else cell(rates[k], "best_per_second", "{:,.0f}/s")
                + "; "
                + cell(rates[k], "median_per_second", "{:,.0f}/s")
                for k in kinds
            ),
            *(
                _higher_ratio(ours.get("best_per_second"), rates[k].get("best_per_second"))
                if not rates[k].get("not_supported")
                else "not supported"
                for k in kinds
                if k != EMBEDDED
            ),
        ]
    )
    rows.append(
        [
            "server CPU per heartbeat (median)",
            str(members),
            *(cell(rates[k], "median_server_cpu_us_per_heartbeat", "{:.1f} µs") for k in kinds),
            *(
                ratio_text(
                    ours.get("median_server_cpu_us_per_heartbeat"),
                    rates[k].get("median_server_cpu_us_per_heartbeat"),
                )
                if not rates[k].get("not_supported")
                else "not supported"
                for k in kinds
                if k != EMBEDDED
            ),
        ]
    )
    return _markdown(rows)


def real_client_table(report: dict[str, Any]) -> str:
    """The librdkafka cross-check, beside the simulated members' figures for the same size."""
    real = [r for r in report.get("real_clients", []) if r.get("trials") or r.get("failure")]
    if not real:
        return ""
    labels = {
        OURS: "embedded coordinator",
        "mock": "librdkafka mock",
        "kafka": "Apache Kafka broker",
        "classic-held": "embedded coordinator, classic cooperative (held heartbeats)",
    }
    simulated = summarize(report)
    rows = [
        [
            "server",
            "members",
            "change",
            "librdkafka: partition-s without owner",
            "librdkafka: all owned",
            "simulated, same N: partition-s",
            "simulated, same N: all owned",
        ]
    ]
    for r in real:
        variant = r.get("variant") or INCREMENTAL_ON[r["server"]]  # a report from before "variant"
        if r.get("failure"):
            failed = f"failed: {r['failure'][:60]}"
            rows.append([labels[variant], str(r["members"]), "forming", failed, "", "", ""])
        for t in r["trials"]:
            sim = simulated.get((r["members"], t["scenario"], variant)) or {}
            sim_unowned, sim_owned = sim.get("unowned_partition_seconds"), sim.get("all_owned_ms")
            rows.append(
                [
                    labels[variant],
                    str(r["members"]),
                    t["scenario"],
                    f"{t['unowned_partition_seconds']:.3f}",
                    f"{t['all_owned_ms']:,.0f} ms",
                    "n/a" if sim_unowned is None else f"{sim_unowned:.3f}",
                    "n/a" if sim_owned is None else f"{sim_owned:,.0f} ms",
                ]
            )
    return _markdown(rows)


def _higher_ratio(ours: float | None, peer: float | None) -> str:
    if ours is None or peer is None or peer == 0:
        return "n/a"
    r = ours / peer
    text = f"{r:.2f}x" if 0.1 <= r < 10 else f"{r:.3g}x"
    return f"{text} ({'better' if r > 1 else 'worse' if r < 1 else 'same'})"


def _markdown(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def goals(report: dict[str, Any]) -> list[str]:
    """The issue's goals, met or not, per group size and change."""
    summary = summarize(report)
    lines = []
    sizes = sorted({g["members"] for g in report["groups"]})
    for g in report["groups"]:
        if g["variant"] == OURS and g.get("failure"):
            lines.append(f"N={g['members']:,}: not measured on the embedded coordinator: {g['failure']}")
    for size in sizes:
        for scenario in report_changes(report):
            ours = summary.get((size, scenario, OURS)) or {}
            for classic in ("classic", "classic-held"):
                peer = summary.get((size, scenario, classic)) or {}
                a, b = ours.get("unowned_partition_seconds"), peer.get("unowned_partition_seconds")
                if a is None or b is None:
                    continue
                met = a * 10 <= b
                lines.append(
                    f"N={size:,} {scenario}: partition-seconds without an owner {a:.3f} vs {b:.3f} "
                    f"({classic}): {'met' if met else 'NOT met'} "
                    f"(goal: at least 10x fewer; {b / a if a else math.inf:.2g}x)"
                )
            kafka = summary.get((size, scenario, "kafka")) or {}
            for metric, what in (("stable_ms", "group stable"), ("all_owned_ms", "all partitions owned")):
                a, b = ours.get(metric), kafka.get(metric)
                if a is None or b is None:
                    continue
                verdict = "met" if a <= b else "parity (within 1%)" if a <= 1.01 * b else "NOT met"
                lines.append(
                    f"N={size:,} {scenario}: {what} in {a:,.0f} ms vs Kafka {b:,.0f} ms: "
                    f"{verdict} (goal: no slower than Apache Kafka's broker)"
                )
    return lines


def machine_load(report: dict[str, Any]) -> dict[str, Any]:
    """How busy the machine was during the trials: the figures are only as quiet as it was."""
    windows = [
        t["machine"] for g in report["groups"] for t in g.get("trials", []) if t["machine"]["wall_s"] > 0
    ]

    def med(key: str) -> float | None:
        return _median([w[key] for w in windows])

    loadgen = _median([w["loadgen_cpu_s"] / w["wall_s"] for w in windows])
    return {
        "trials": len(windows),
        "others_cores_median": med("others_cores"),
        "machine_busy_cores_median": med("machine_busy_cores"),
        "loadgen_cores_median": loadgen,
    }


# --- command line ---------------------------------------------------------------------------------


def _variants(text: str) -> list[str]:
    chosen = [x for x in text.split(",") if x]
    unknown = set(chosen) - set(VARIANTS)
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown variant(s) {sorted(unknown)}; known: {', '.join(VARIANTS)}"
        )
    return [k for k in VARIANTS if k in chosen]


def _changes(text: str) -> list[str]:
    chosen = [x for x in text.split(",") if x]
    if set(chosen) - set(SCENARIOS) or not chosen:
        raise argparse.ArgumentTypeError(f"known changes: {', '.join(SCENARIOS)}")
    return chosen


def _servers(text: str) -> list[str]:
    chosen = [x for x in text.split(",") if x]
    if set(chosen) - {EMBEDDED, MOCK, KAFKA}:
        raise argparse.ArgumentTypeError(f"known servers: {EMBEDDED}, {MOCK}, {KAFKA}")
    return [k for k in (EMBEDDED, MOCK, KAFKA) if k in chosen]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Incremental (KIP-848) vs classic cooperative rebalancing: partition-seconds "
        "without an owner and time to converge after a member joins or leaves, on the embedded "
        "coordinator, Apache Kafka's broker and librdkafka's mock; ConsumerGroupHeartbeat rate."
    )
    p.add_argument("--members", type=int, nargs="+", default=[10, 100, 1000], help="group sizes N")
    p.add_argument("--partitions-per-member", type=int, default=5, help="the topic has this x N partitions")
    p.add_argument(
        "--variants", type=_variants, default=list(VARIANTS), help="comma list of " + ",".join(VARIANTS)
    )
    p.add_argument(
        "--changes",
        type=_changes,
        default=list(DEFAULT_SCENARIOS),
        help="comma list of the changes each repeat makes, in order: scale-out, scale-in, and "
        "scale-out-2 (a second member joins an interval after a first; the two then leave, "
        "unmeasured); default scale-out,scale-in",
    )
    p.add_argument("--repeats", type=int, default=3, help="rounds of --changes per group")
    p.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=5000,
        help="every server's consumer-group heartbeat interval (Kafka's default), and the classic "
        "members' interval",
    )
    p.add_argument(
        "--session-timeout-ms",
        type=int,
        default=45_000,
        help="consumer-group session (Kafka's default) and classic session",
    )
    p.add_argument("--rebalance-timeout-ms", type=int, default=30_000)
    p.add_argument(
        "--trial-timeout", type=float, default=180.0, help="seconds before a change counts as failed"
    )
    p.add_argument(
        "--heartbeat-members", type=int, default=100, help="members for the heartbeat rate (0: skip)"
    )
    p.add_argument("--heartbeat-seconds", type=float, default=5.0)
    p.add_argument(
        "--heartbeat-generators",
        type=int,
        default=2,
        help="processes sending the heartbeats of the rate, the members split among them",
    )
    p.add_argument(
        "--heartbeat-shape",
        choices=[LEAN, FULL],
        default=LEAN,
        help="the rate's heartbeats: lean (id and epoch, as Kafka's and librdkafka's consumers send "
        "a steady one) or full (every field restated, as this project's members send each one)",
    )
    p.add_argument("--heartbeat-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--heartbeat-repeats", type=int, default=3)
    p.add_argument(
        "--heartbeat-servers",
        type=_servers,
        default=[EMBEDDED, MOCK, KAFKA],
        help="servers of the heartbeat rate and of the real-client check: embedded,mock,kafka",
    )
    p.add_argument(
        "--real-clients",
        type=int,
        default=10,
        help="librdkafka consumers for the real-client cross-check on each of --heartbeat-servers (0: skip)",
    )
    p.add_argument("--embedded-log-level", default="INFO")
    p.add_argument(
        "--network-thread",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the embedded coordinator that answers heartbeats at once (the heartbeat rates and the "
        "'classic' variant) answers steady ones in its network thread (default: on)",
    )
    p.add_argument("--embedded-profile", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--kafka-heap-mb", type=int, default=1024)
    p.add_argument(
        "--kafka-assignment-interval-ms",
        type=int,
        default=0,
        help="the broker's group.consumer.assignment.interval.ms (Kafka's default is 1000)",
    )
    p.add_argument(
        "--formation-attempts",
        type=int,
        default=3,
        help="fresh groups to try when one does not settle while forming (each failure is recorded)",
    )
    p.add_argument("--seed", type=int, default=1, help="which original member leaves in each scale-in")
    p.add_argument("--quick", action="store_true", help="small sizes and short intervals, for a smoke test")
    p.add_argument("--output", type=Path, default=None, help=f"JSON results (default {DEFAULT_OUTPUT})")
    p.add_argument(
        "--render", type=Path, default=None, help="print the tables and goals of a stored JSON report again"
    )
    p.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--mock-topics", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.members = [4]
        args.repeats = 1
        args.heartbeat_interval_ms = 300
        args.session_timeout_ms = 3000
        args.rebalance_timeout_ms = 10_000
        args.trial_timeout = 60.0
        args.heartbeat_members = 4
        args.heartbeat_seconds = 1.0
        args.heartbeat_repeats = 2  # two, so that the servers take turns
        args.real_clients = 4
        args.kafka_heap_mb = 512
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_mock:
        return serve_mock(args)
    if args.heartbeat_worker:
        return heartbeat_worker()
    if args.render is not None:  # tables and goals again, from a stored report
        return render(json.loads(args.render.read_text()), args.render)
    output = args.output or DEFAULT_OUTPUT
    results = output.parent
    results.mkdir(parents=True, exist_ok=True)
    print(
        f"incremental vs classic cooperative: N {args.members}, {args.partitions_per_member} partitions per "
        f"member, heartbeat {args.heartbeat_interval_ms} ms, session {args.session_timeout_ms} ms, "
        f"{args.repeats} repeat(s); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus",
        flush=True,
    )
    report = asyncio.run(run(args, results))
    import kafka

    from coordinator_api.testing import KAFKA_VERSION

    report["config"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    report["environment"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "kafka_python": kafka.__version__,
        "librdkafka": _librdkafka_version(),
        "apache_kafka": KAFKA_VERSION,
    }
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return render(report, output)


def render(report: dict[str, Any], output: Path) -> int:
    """Print the tables, goals and machine load of a report, store them in it; 1 if anything failed."""
    text = table(report, report["config"]["variants"])
    hb = heartbeat_table(report)
    real = real_client_table(report)
    report["table"] = text
    report["heartbeat_table"] = hb
    report["real_client_table"] = real
    report["goals"] = goals(report)
    report["machine_load"] = machine_load(report)
    print()
    print(text)
    for extra in (hb, real):
        if extra:
            print()
            print(extra)
    if report["goals"]:
        print("\ngoals:")
        for line in report["goals"]:
            print(f"  - {line}")
    retried = [g for g in report["groups"] if g.get("formation_failures")]
    for g in retried:
        print(
            f"\n{g['variant']} N={g['members']}: {len(g['formation_failures'])} group(s) did not settle "
            f"while forming and were replaced: {g['formation_failures'][0]}"
        )
    load = report["machine_load"]
    if load["trials"]:
        print(
            f"\nduring the trials (median): other processes {load['others_cores_median']:.2f} cores, "
            f"load generator {load['loadgen_cores_median']:.2f} cores, whole machine "
            f"{load['machine_busy_cores_median']:.2f} of {os.cpu_count()} cores"
        )
    print(
        f"\nload average {report['load_average_start'][0]:.2f} at the start, "
        f"{report['load_average_end'][0]:.2f} at the end; wall time {report['wall_seconds']:.1f} s; "
        f"results in {output}"
    )
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    failed = any(
        r.get("failure")
        for r in (*report["groups"], *report.get("heartbeat_rates", []), *report.get("real_clients", []))
    )
    return 1 if failed else 0


def _librdkafka_version() -> str:
    try:
        from coordinator_api.testing._librdkafka_mock import _find_bundled_library

        lib = ctypes.CDLL(str(_find_bundled_library()))
        lib.rd_kafka_version_str.restype = ctypes.c_char_p
        return str(lib.rd_kafka_version_str().decode())
    except Exception as exc:  # informational only
        return f"unknown ({exc})"


if __name__ == "__main__":
    sys.exit(main())
