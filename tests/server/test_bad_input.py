"""Malformed, hostile and nonsensical traffic against the real embedded coordinator over TCP.

The contract under test: the server answers a malformed request with a Kafka error code or
closes only that connection; it never blocks other clients, never grows memory without
bound, and the other groups keep working. Well-formed requests are encoded with kafka-python's
message classes; malformed ones are written on raw sockets.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaError
from kafka.protocol.admin import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from coordinator_api import CoordinatorConfig, CoordinatorStartError, EmbeddedCoordinator
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import MembershipEvent, recording_membership
from coordinator_api.server._listeners import is_loopback

HOST = "127.0.0.1"
IO_TIMEOUT_S = 5.0
CLOSE_TIMEOUT_S = 3.0
# Time bounds here only detect a hang; speed is bench/'s business. A bystander member (a group
# of its own, heartbeating throughout) has this session; a round trip longer than a third of it
# (the heartbeat interval Kafka clients use) means the server stopped serving one client while it
# dealt with another, and a busy server could expire a healthy member: HANG_S (3 s; a loaded
# 2-core machine answers in milliseconds).
BYSTANDER_SESSION_MS = 9_000
HANG_S = BYSTANDER_SESSION_MS / 3 / 1000
MiB = 1 << 20
MAX_REQUEST = MiB  # max_request_bytes of the servers here

NONE = ErrorCode.NONE
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
INCONSISTENT_GROUP_PROTOCOL = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
INVALID_GROUP_ID = ErrorCode.INVALID_GROUP_ID
UNKNOWN_MEMBER_ID = ErrorCode.UNKNOWN_MEMBER_ID
INVALID_SESSION_TIMEOUT = ErrorCode.INVALID_SESSION_TIMEOUT
REBALANCE_IN_PROGRESS = ErrorCode.REBALANCE_IN_PROGRESS
UNSUPPORTED_VERSION = ErrorCode.UNSUPPORTED_VERSION
INVALID_REQUEST = ErrorCode.INVALID_REQUEST
UNKNOWN_TOPIC_ID = ErrorCode.UNKNOWN_TOPIC_ID
GROUP_ID_NOT_FOUND = ErrorCode.GROUP_ID_NOT_FOUND

# The api keys and version ranges the server advertises (coordinator_api/server/_wire.py).
SUPPORTED = {
    0: (3, 9),
    1: (4, 12),
    2: (1, 7),
    3: (0, 12),
    8: (2, 10),
    9: (1, 10),
    10: (0, 6),
    11: (0, 9),
    12: (0, 4),
    13: (0, 5),
    14: (0, 5),
    15: (0, 6),
    16: (0, 5),
    17: (1, 1),
    18: (0, 4),
    19: (2, 7),
    20: (1, 6),  # DeleteTopics (v0 removed in Kafka 4.0)
    32: (1, 4),  # DescribeConfigs, IncrementalAlterConfigs, ListConfigResources: groups' configs
    29: (1, 3),  # DescribeAcls, CreateAcls, DeleteAcls: SECURITY_DISABLED without the authorizer
    30: (1, 3),
    31: (1, 3),
    36: (0, 2),
    37: (0, 3),  # CreatePartitions
    42: (0, 2),
    44: (0, 1),
    47: (0, 0),  # OffsetDelete
    48: (0, 1),  # DescribeClientQuotas, AlterClientQuotas
    49: (0, 1),
    50: (0, 0),  # DescribeUserScramCredentials (kafka-configs --describe of users asks)
    68: (0, 1),
    69: (0, 1),
    74: (0, 1),
    10068: (0, 0),  # GroupHeartbeat, this project's own
    10069: (0, 0),  # GroupDescribe, this project's own
}

SUBSCRIPTION = bytes(ConsumerProtocolSubscription(version=0, topics=["events"], user_data=b"").encode())
RANGE = (("range", SUBSCRIPTION),)

# Bad inputs get their own server each, with the short sessions of the shared FAST_CONFIG.
# Heartbeats are answered at once here (test_held_heartbeats_* below turn holding on), so that a
# raw client's blocking call never waits on a hold.
BASE = {"initial_rebalance_delay_ms": 0, "min_session_timeout_ms": 500, "heartbeat_hold_ms": 0}


# --- wire helpers ---------------------------------------------------------------------------


def encode(request: Any, correlation_id: int = 1, client_id: str = "bad-input") -> bytes:
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


def raw_header(api_key: int, api_version: int, correlation_id: int = 7, client_id: bytes = b"raw") -> bytes:
    """A request header v1 (non-flexible), as every version starts it."""
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client_id)) + client_id


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def recv_exact(sock: socket.socket, n: int) -> bytes | None:
    """``n`` bytes, or None if the peer closed first."""
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def recv_frame(sock: socket.socket) -> bytes:
    size_bytes = recv_exact(sock, 4)
    assert size_bytes is not None, "the server closed a connection it should have answered"
    (size,) = struct.unpack(">i", size_bytes)
    assert 0 < size < 64 * MiB, f"nonsensical response size {size}"
    payload = recv_exact(sock, size)
    assert payload is not None, "the server closed the connection mid-response"
    return payload


def call(sock: socket.socket, request: Any, response_cls: Any, correlation_id: int = 1) -> Any:
    """Send one request and decode its answer at the request's version."""
    version = request.API_VERSION
    sock.sendall(encode(request, correlation_id))
    response = response_cls.decode(recv_frame(sock), version=version, header=True)
    assert response.header.correlation_id == correlation_id
    return response


def wait_closed(sock: socket.socket, timeout: float = CLOSE_TIMEOUT_S) -> bytes:
    """Read until the server closes; return whatever it sent first. Fails on a timeout."""
    received = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while True:
            sock.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = sock.recv(65536)
            if not chunk:
                return bytes(received)
            received += chunk
    except (ConnectionResetError, BrokenPipeError):
        return bytes(received)
    except TimeoutError:
        pytest.fail(f"the server kept the connection open for more than {timeout} s")


def assert_closed_without_answer(sock: socket.socket) -> None:
    assert wait_closed(sock) == b"", "the server answered instead of closing the connection"


def still_open(sock: socket.socket) -> bool:
    """True if the server has neither closed nor reset ``sock`` (nothing is read)."""
    sock.setblocking(False)
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.setblocking(True)
        sock.settimeout(IO_TIMEOUT_S)


def api_versions_round_trip(sock: socket.socket, correlation_id: int = 99, version: int = 3) -> float:
    """One healthy ApiVersions exchange; return how long it took."""
    started = time.monotonic()
    response = call(sock, ApiVersionsRequest(version=version), ApiVersionsResponse, correlation_id)
    elapsed = time.monotonic() - started
    assert response.error_code == NONE
    assert {k.api_key for k in response.api_keys} == set(SUPPORTED)
    return elapsed


def rss() -> int:
    gc.collect()
    return psutil.Process().memory_info().rss


def server_side_sockets(port: int) -> int:
    """Server-side sockets of this process on ``port``, the listener excluded."""
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.laddr and c.laddr.port == port and c.status != psutil.CONN_LISTEN
    )


def wait_for(condition: Callable[[], bool], timeout: float, what: str, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


# --- group helpers (raw members) -----------------------------------------------------------


def join_request(
    version: int,
    group: str,
    *,
    member_id: str = "",
    session_ms: int = 10_000,
    rebalance_ms: int = 10_000,
    protocol_type: str = "consumer",
    protocols: tuple[tuple[str, bytes], ...] = RANGE,
) -> Any:
    protocol = JoinGroupRequest.JoinGroupRequestProtocol
    return JoinGroupRequest(
        version=version,
        group_id=group,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=None,
        protocol_type=protocol_type,
        protocols=[protocol(name=name, metadata=metadata) for name, metadata in protocols],
        reason=None,
    )


@dataclass
class RawMember:
    sock: socket.socket
    group: str
    member_id: str = ""
    generation: int = -1
    correlation: int = 0
    version: int = 1

    def next_id(self) -> int:
        self.correlation += 1
        return self.correlation

    def join(self, **options: Any) -> Any:
        request = join_request(self.version, self.group, member_id=self.member_id, **options)
        response = call(self.sock, request, JoinGroupResponse, self.next_id())
        if response.error_code == NONE:
            self.member_id, self.generation = response.member_id, response.generation_id
        return response

    def sync(self, assignments: dict[str, bytes] | None = None) -> Any:
        assignment_cls = SyncGroupRequest.SyncGroupRequestAssignment
        request = SyncGroupRequest(
            version=self.version,
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            assignments=[assignment_cls(member_id=m, assignment=a) for m, a in (assignments or {}).items()],
        )
        return call(self.sock, request, SyncGroupResponse, self.next_id())

    def heartbeat(self) -> int:
        request = HeartbeatRequest(
            version=self.version, group_id=self.group, generation_id=self.generation, member_id=self.member_id
        )
        return int(call(self.sock, request, HeartbeatResponse, self.next_id()).error_code)


def stable_raw_member(connect: Sockets, group: str, **options: Any) -> RawMember:
    """A one-member group, joined and synced: Stable."""
    member = RawMember(connect(), group)
    joined = member.join(**options)
    assert joined.error_code == NONE, joined
    assert member.sync({member.member_id: b"all"}).error_code == NONE
    return member


def describe(sock: socket.socket, *groups: str) -> dict[str, Any]:
    response = call(sock, DescribeGroupsRequest(version=0, groups=list(groups)), DescribeGroupsResponse, 77)
    return {g.group_id: g for g in response.groups}


class Sockets:
    """Every socket a test opens, closed at teardown."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.opened: list[socket.socket] = []

    def __call__(self, timeout: float = IO_TIMEOUT_S) -> socket.socket:
        sock = socket.create_connection((HOST, self.port), timeout=timeout)
        self.opened.append(sock)
        return sock

    def close_all(self) -> None:
        for sock in self.opened:
            with contextlib.suppress(OSError):
                sock.close()
        self.opened.clear()


@contextlib.contextmanager
def server(**config: Any) -> Iterator[tuple[EmbeddedCoordinator, Sockets]]:
    settings_ = {**BASE, "connections_max_idle_ms": 600_000, **config}
    with EmbeddedCoordinator(topics={"events": 12}, config=CoordinatorConfig(**settings_)) as running:
        sockets = Sockets(running.port)
        try:
            yield running, sockets
        finally:
            sockets.close_all()


@pytest.fixture(params=[False, True], ids=["event-loop", "network-thread"])
def srv(request: pytest.FixtureRequest) -> Iterator[tuple[EmbeddedCoordinator, Sockets]]:
    # Read by the event loop, or by the network thread (test_network_thread.py) that passes
    # everything but a steady heartbeat on to it.
    with server(max_request_bytes=MAX_REQUEST, network_thread=request.param) as pair:
        yield pair


# --- 1. malformed frames close only their own connection ------------------------------------

MALFORMED: dict[str, bytes] = {
    "length-2**31-1": struct.pack(">i", 2**31 - 1) + b"\x00" * 16,
    "length-max_request_bytes+1": struct.pack(">i", MAX_REQUEST + 1) + raw_header(18, 0),
    "length-zero": struct.pack(">i", 0) + raw_header(18, 0),
    "length-minus-1": struct.pack(">i", -1) + raw_header(18, 0),
    "length-int32-min": struct.pack(">i", -(2**31)) + raw_header(18, 0),
    "header-cut-mid-correlation-id": frame(struct.pack(">hh", 18, 0) + b"\x00\x00"),
    "header-only-api-key": frame(struct.pack(">h", 18)),
    "client-id-length-past-the-end": frame(struct.pack(">hhih", 11, 1, 7, 200) + b"abc"),
    "unknown-api-key-999": frame(raw_header(999, 0)),
    "unknown-api-key-57": frame(raw_header(57, 0)),
    "unknown-api-key-negative": frame(raw_header(-1, 0)),
    "joingroup-v99": frame(raw_header(11, 99) + b"\x00" * 32),
    "joingroup-v-1": frame(raw_header(11, -1) + b"\x00" * 32),
    "produce-v0-below-min": frame(raw_header(0, 0) + b"\x00" * 32),
    "joingroup-garbage-after-header": frame(raw_header(11, 5) + b"\x7f\xff" + b"\xab" * 10),
    "offsetcommit-garbage-after-header": frame(raw_header(8, 2) + b"\x00\x05ab"),
    "heartbeat-body-missing": frame(raw_header(12, 0)),
    "flexible-apiversions-garbage": frame(raw_header(18, 3) + b"\x00" + b"\xff" * 20),
}


@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_frame_closes_only_its_connection(
    srv: tuple[EmbeddedCoordinator, Sockets], name: str
) -> None:
    _, connect = srv
    healthy = connect()
    api_versions_round_trip(healthy, 1)  # opened and used before the bad traffic
    bad = connect()
    bad.sendall(MALFORMED[name])
    assert_closed_without_answer(bad)
    # The connection that was open all along, and a new one, are both still served.
    api_versions_round_trip(healthy, 2)
    api_versions_round_trip(connect(), 3)


@pytest.mark.parametrize("how", ["half-close", "close"])
@pytest.mark.parametrize(
    "partial",
    [
        pytest.param(
            struct.pack(">i", 100) + b"\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01", id="100-announced-10-sent"
        ),
        pytest.param(struct.pack(">i", 100)[:2], id="length-prefix-cut"),
        pytest.param(struct.pack(">i", 20) + struct.pack(">hh", 11, 1) + b"\x00", id="header-cut-mid-field"),
    ],
)
def test_truncated_frame_then_eof_is_cleaned_up(
    srv: tuple[EmbeddedCoordinator, Sockets], partial: bytes, how: str
) -> None:
    coordinator, connect = srv
    healthy = connect()
    api_versions_round_trip(healthy, 1)
    bad = connect()
    bad.sendall(partial)
    time.sleep(0.05)
    assert still_open(bad), "a frame in progress is not a reason to close"
    if how == "half-close":
        bad.shutdown(socket.SHUT_WR)
        assert_closed_without_answer(bad)
    else:
        bad.close()
    # No server-side socket is left behind (not even in CLOSE_WAIT): only the healthy one.
    wait_for(
        lambda: server_side_sockets(coordinator.port) == 1, CLOSE_TIMEOUT_S, "the server to drop the socket"
    )
    api_versions_round_trip(healthy, 2)


def test_api_versions_unsupported_version_answers_v0_with_error_35(
    srv: tuple[EmbeddedCoordinator, Sockets],
) -> None:
    _, connect = srv
    sock = connect()
    # v99 with a body the server cannot know how to read: it must not try (KIP-511).
    sock.sendall(frame(raw_header(18, 99, correlation_id=4242) + b"\x03\xff\xfe\x00garbage"))
    response = ApiVersionsResponse.decode(recv_frame(sock), version=0, header=True)
    assert response.header.correlation_id == 4242
    assert response.error_code == UNSUPPORTED_VERSION
    listed = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert listed == SUPPORTED
    # The client then retries on the same connection with a version from the list.
    api_versions_round_trip(sock, 5, version=listed[18][1])
    api_versions_round_trip(sock, 6, version=0)


def test_trailing_bytes_after_a_whole_request_are_tolerated_or_closed(
    srv: tuple[EmbeddedCoordinator, Sockets],
) -> None:
    """Either answer is within the contract; the server must not hang or break others."""
    _, connect = srv
    sock = connect()
    payload = encode(ApiVersionsRequest(version=0), 3)[4:] + b"trailing garbage"
    sock.sendall(frame(payload))
    sock.shutdown(socket.SHUT_WR)
    answered = wait_closed(sock)
    if answered:
        response = ApiVersionsResponse.decode(answered[4:], version=0, header=True)
        assert response.header.correlation_id == 3
    api_versions_round_trip(connect())


def test_kafka_python_clients_work_after_every_kind_of_bad_traffic(
    srv: tuple[EmbeddedCoordinator, Sockets],
) -> None:
    coordinator, connect = srv
    admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap_servers, request_timeout_ms=5000)
    consumer = None
    try:
        assert admin.list_groups() == []
        bad = []
        for payload in MALFORMED.values():
            sock = connect()
            sock.sendall(payload)
            bad.append(sock)
        for sock in bad:
            assert_closed_without_answer(sock)
        # The admin client's connection predates the bad traffic and is still served.
        assert admin.list_groups() == []
        assert admin.describe_groups(["nobody"])["nobody"]["group_state"] == "Dead"
        consumer = KafkaConsumer(bootstrap_servers=coordinator.bootstrap_servers, request_timeout_ms=5000)
        assert consumer.partitions_for_topic("events") == set(range(12))
    finally:
        admin.close()
        if consumer is not None:
            consumer.close()


# --- 2. random bytes -------------------------------------------------------------------------


def _with_valid_header() -> st.SearchStrategy[bytes]:
    """Framed: a header the server can route (mostly supported keys and versions), random body."""
    keys = st.sampled_from([*SUPPORTED, 4, 57, 999, -1])

    def build(
        key: int, version: int, correlation: int, client: bytes, flexible_tag: bool, body: bytes
    ) -> bytes:
        header = raw_header(key, version, correlation, client) + (b"\x00" if flexible_tag else b"")
        return frame(header + body)

    return st.builds(
        build,
        keys,
        st.integers(-2, 14),
        st.integers(-(2**31), 2**31 - 1),
        st.binary(max_size=12),
        st.booleans(),
        st.binary(max_size=200),
    )


RANDOM_TRAFFIC = st.one_of(
    st.binary(min_size=1, max_size=64),  # unframed
    st.binary(max_size=256).map(frame),  # framed with the right length
    _with_valid_header(),
)


@pytest.mark.parametrize("network_thread", [False, True], ids=["event-loop", "network-thread"])
def test_random_bytes_never_break_the_server(network_thread: bool) -> None:
    with server(max_request_bytes=MiB, network_thread=network_thread) as (coordinator, connect):
        bystander = stable_raw_member(connect, "bystander", session_ms=60_000)
        checker = connect()

        @settings(
            max_examples=300,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
            database=None,
            # No shrinking: the server is shared, so once an input breaks it every later one
            # fails too; the first failing input is the culprit, a shrunk one would not be.
            phases=[Phase.explicit, Phase.generate],
        )
        @given(RANDOM_TRAFFIC)
        @example(b"\xff\xff\xff\xff")
        @example(b"\x80\x00\x00\x00\x00\x00\x00\x00")
        @example(frame(raw_header(18, 99)))
        @example(frame(raw_header(11, 0) + b"\xff" * 40))
        @example(frame(raw_header(3, 12) + b"\x00" + b"\xff" * 40))
        def check(data: bytes) -> None:
            sock = socket.create_connection((HOST, coordinator.port), timeout=IO_TIMEOUT_S)
            try:
                sock.sendall(data)
                # At EOF the server answers what it can and then closes: it never hangs on.
                sock.shutdown(socket.SHUT_WR)
                wait_closed(sock)
            finally:
                sock.close()
            api_versions_round_trip(checker)
            assert bystander.heartbeat() == NONE

        check()
        api_versions_round_trip(connect())
        assert describe(connect(), "bystander")["bystander"].group_state == "Stable"


@pytest.mark.parametrize("together", [False, True], ids=["later", "in-one-write"])
def test_held_heartbeat_is_answered_first_when_the_client_pipelines_another_request(together: bool) -> None:
    # Later: the heartbeat is held until the next request arrives. In one write: both reach the
    # server in one read, and the heartbeat, held at first, is answered at once because its
    # connection already has the next request waiting.
    hold_ms = 10_000
    with server(heartbeat_hold_ms=hold_ms) as (_, connect):
        member = stable_raw_member(connect, "held", session_ms=60_000)
        heartbeat = HeartbeatRequest(
            version=1, group_id="held", generation_id=member.generation, member_id=member.member_id
        )
        started = time.monotonic()
        if together:
            member.sock.sendall(encode(heartbeat, 501) + encode(ApiVersionsRequest(version=0), 502))
        else:
            member.sock.sendall(encode(heartbeat, 501))
            time.sleep(0.2)  # the heartbeat is held: nothing comes back yet
            member.sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                member.sock.recv(1)
            member.sock.setblocking(True)
            member.sock.settimeout(IO_TIMEOUT_S)
            member.sock.sendall(encode(ApiVersionsRequest(version=0), 502))
        first = HeartbeatResponse.decode(recv_frame(member.sock), version=1, header=True)
        second = ApiVersionsResponse.decode(recv_frame(member.sock), version=0, header=True)
        assert (first.header.correlation_id, first.error_code) == (501, NONE)
        assert (second.header.correlation_id, second.error_code) == (502, NONE)
        assert time.monotonic() - started < hold_ms / 2000  # released by the second request, not the hold


def test_held_heartbeat_of_one_member_returns_rebalance_in_progress_when_another_joins() -> None:
    with server(heartbeat_hold_ms=10_000) as (_, connect):
        member = stable_raw_member(connect, "held-join", session_ms=60_000)
        heartbeat = HeartbeatRequest(
            version=1, group_id="held-join", generation_id=member.generation, member_id=member.member_id
        )
        member.sock.sendall(encode(heartbeat, 601))
        time.sleep(0.1)
        newcomer = RawMember(connect(), "held-join")
        newcomer.sock.sendall(encode(join_request(1, "held-join", member_id=""), 1))
        answer = HeartbeatResponse.decode(recv_frame(member.sock), version=1, header=True)
        assert (answer.header.correlation_id, answer.error_code) == (601, REBALANCE_IN_PROGRESS)


# --- 3. idle connections ---------------------------------------------------------------------


@pytest.mark.parametrize("network_thread", [False, True], ids=["event-loop", "network-thread"])
def test_idle_connections_are_closed_and_never_delay_others(network_thread: bool) -> None:
    idle_s = 0.5
    with server(connections_max_idle_ms=int(idle_s * 1000), network_thread=network_thread) as (
        coordinator,
        connect,
    ):
        opened_at = time.monotonic()
        silent: list[tuple[float, socket.socket]] = [
            (time.monotonic(), connect(timeout=CLOSE_TIMEOUT_S)) for _ in range(50)
        ]
        stalled = connect()  # stalled inside a request: a length prefix and half a header
        silent.append((time.monotonic(), stalled))
        stalled.sendall(struct.pack(">i", 64) + b"\x00\x12\x00")
        time.sleep(0.1)
        # None is closed before it was idle for idle_s. Its age is taken after the check (the
        # server's clock for it started later than ours), so a slow machine lets the server close
        # the oldest legitimately, and the check still applies to every socket.
        early = [
            age
            for opened, sock in silent
            if not still_open(sock) and (age := time.monotonic() - opened) < idle_s
        ]
        assert not early, f"{len(early)} connection(s) closed after only {max(early):.3f} s idle"
        idle = [sock for _, sock in silent[:-1]]
        busy = connect()
        # A request trickling in a byte at a time is slow, not silent: it must not be cut off.
        trickle = connect()
        request = ApiVersionsRequest(version=0)
        request.with_header(correlation_id=31, client_id="trickle" * 4)
        trickled, trickle_bytes = 0, bytes(request.encode(header=True, framed=True))
        round_trips: list[float] = []
        trickle_started = time.monotonic()
        # A connection that keeps talking is never idle, however long it lives; and while 50
        # silent connections wait to be reaped, every other client is served at once.
        while time.monotonic() - opened_at < 3 * idle_s or trickled < len(trickle_bytes):
            round_trips.append(api_versions_round_trip(busy, len(round_trips)))
            round_trips.append(api_versions_round_trip(connect(), 1))
            if trickled < len(trickle_bytes):
                try:
                    trickle.sendall(trickle_bytes[trickled : trickled + 1])
                except OSError as exc:
                    pytest.fail(f"a request trickling in was cut off after {trickled} bytes: {exc!r}")
                trickled += 1
            time.sleep(0.05)
        assert max(round_trips) < HANG_S, f"slowest round trip {max(round_trips):.3f} s"
        assert time.monotonic() - trickle_started > 2 * idle_s
        answer = ApiVersionsResponse.decode(recv_frame(trickle), version=0, header=True)
        assert (answer.header.correlation_id, answer.error_code) == (31, NONE)
        for sock in [*idle, stalled]:
            assert_closed_without_answer(sock)
        api_versions_round_trip(busy)
        # Once everyone falls silent, every connection is reaped.
        wait_for(lambda: server_side_sockets(coordinator.port) == 0, 3, "every idle socket to be closed")


# --- 4. a member that disconnects mid-rebalance ----------------------------------------------


@dataclass
class Bystander:
    """A member of another group that heartbeats all along and records each round trip."""

    member: RawMember
    latencies: list[float] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        def run() -> None:
            while not self.stop.wait(0.1):
                started = time.monotonic()
                try:
                    error = self.member.heartbeat()
                except (OSError, AssertionError) as exc:
                    self.errors.append(-999)
                    self.latencies.append(float("inf"))
                    logging.getLogger(__name__).warning("bystander heartbeat failed: %r", exc)
                    return
                self.latencies.append(time.monotonic() - started)
                self.errors.append(error)

        self.thread = threading.Thread(target=run, name="bystander", daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(5)
        assert self.errors, "the bystander never heartbeated"
        assert set(self.errors) == {NONE}, f"bystander heartbeat errors: {sorted(set(self.errors))}"
        assert max(self.latencies) < HANG_S, f"slowest bystander heartbeat {max(self.latencies):.3f} s"


CONSUMER_SESSION_MS = 3000
CONSUMER_REBALANCE_MS = 3000  # kafka-python's max_poll_interval_ms is its rebalance timeout


@dataclass
class ConsumerThread:
    bootstrap: str
    name: str
    assignment: set[int] = field(default_factory=set)
    stop: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None
    thread: threading.Thread | None = None

    def start(self) -> None:
        def run() -> None:
            consumer = None
            try:
                consumer = KafkaConsumer(
                    bootstrap_servers=self.bootstrap,
                    group_id="rebalancing",
                    client_id=self.name,
                    session_timeout_ms=CONSUMER_SESSION_MS,
                    heartbeat_interval_ms=300,
                    max_poll_interval_ms=CONSUMER_REBALANCE_MS,
                    request_timeout_ms=5000,
                    enable_auto_commit=False,
                )
                # Partitions known before the first join, as kafka_member.py does: a leader that
                # joins without them rejoins when they come, and kafka-python 3.0.12 can stall in
                # that rejoin (tests/member_processes.py, kafka_python_join_stall).
                while not self.stop.is_set() and not consumer.partitions_for_topic("events"):
                    time.sleep(0.05)
                consumer.subscribe(["events"])
                while not self.stop.is_set():
                    with contextlib.suppress(KafkaError):  # no log here: fetches fail, membership goes on
                        consumer.poll(timeout_ms=500)
                    self.assignment = {tp.partition for tp in consumer.assignment()}
            except BaseException as exc:
                self.failure = exc
            finally:
                if consumer is not None:
                    consumer.close()

        self.thread = threading.Thread(target=run, name=self.name, daemon=True)
        self.thread.start()

    def join(self) -> BaseException | None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(10)
        return self.failure


def test_member_disconnecting_mid_rebalance_does_not_stall_kafka_python_group() -> None:
    with recording_membership() as membership, server() as (coordinator, connect):
        bystander = Bystander(stable_raw_member(connect, "bystander", session_ms=BYSTANDER_SESSION_MS))
        bystander.start()
        consumers = [ConsumerThread(coordinator.bootstrap_servers, f"kp-{i}") for i in range(2)]
        admin = connect()
        try:
            for c in consumers:
                c.start()

            def stable_with(count: int) -> bool:
                g = describe(admin, "rebalancing")["rebalancing"]
                return g.group_state == "Stable" and len(g.members) == count

            wait_for(lambda: stable_with(2), 15, "two kafka-python consumers to settle")
            consumer_ids = {m.member_id for m in describe(admin, "rebalancing")["rebalancing"].members}

            # A third member joins and dies at once: its JoinGroup starts a rebalance and is
            # parked (the consumers have not rejoined yet) when its connection goes away.
            intruder = connect()
            intruder.sendall(
                encode(
                    join_request(1, "rebalancing", session_ms=800, rebalance_ms=800), 1, client_id="intruder"
                )
            )
            intruder.close()

            def intruders() -> list[MembershipEvent]:
                return [e for e in membership.of("joined") if (e.member_id or "").startswith("intruder")]

            wait_for(lambda: bool(intruders()), 3, "the intruder's JoinGroup to reach the group")
            # The parked intruder holds the rebalance at most until the rebalance timeout; the
            # consumers then rejoin and sync within a session. A group slower than that is stuck.
            settle_s = (CONSUMER_REBALANCE_MS + CONSUMER_SESSION_MS) / 1000 + HANG_S
            wait_for(lambda: stable_with(2), settle_s, "the remaining consumers to reach a stable generation")
            described = describe(admin, "rebalancing")["rebalancing"]
            assert {m.member_id for m in described.members} == consumer_ids
            wait_for(
                lambda: sorted(p for c in consumers for p in c.assignment) == list(range(12)),
                5,
                "the consumers to own every partition once",
            )
            (intruder_joined,) = intruders()
            intruder_id = intruder_joined.member_id
            assert any(
                e.member_id == intruder_id and e.kind in ("removed", "expired") for e in membership.events
            )
            generations = membership.of("generation", "rebalancing")
            assert generations[-1].detail.endswith("members=2")
        finally:
            for c in consumers:
                c.stop.set()
            failures = {c.name: c.join() for c in consumers}
            bystander.stop.set()
        assert failures == dict.fromkeys(failures), failures
        bystander.finish()


def test_member_disconnecting_with_parked_join_or_sync_raw() -> None:
    """Deterministic raw variant: the survivor rejoins and syncs to a new stable generation."""
    with server() as (coordinator, connect):
        port = coordinator.port
        bystander = Bystander(stable_raw_member(connect, "bystander", session_ms=BYSTANDER_SESSION_MS))
        bystander.start()
        survivor = stable_raw_member(connect, "raw", session_ms=5_000, rebalance_ms=1_000)
        # (a) A newcomer's JoinGroup is parked; it disconnects before the survivor rejoins.
        newcomer = connect()
        newcomer.sendall(encode(join_request(1, "raw", session_ms=600, rebalance_ms=600), 1))
        wait_for(lambda: survivor.heartbeat() == REBALANCE_IN_PROGRESS, 3, "the rebalance to start")
        open_before = server_side_sockets(port)
        newcomer.close()
        # Only once the server has seen the close does the survivor rejoin (else the join
        # could legitimately complete with the newcomer still in it).
        wait_for(lambda: server_side_sockets(port) < open_before, 3, "the server to drop the newcomer")
        joined = survivor.join(session_ms=5_000, rebalance_ms=1_000)
        assert joined.error_code == NONE
        assert [m.member_id for m in joined.members] == [survivor.member_id]  # the newcomer is gone
        assert joined.generation_id == 2
        assert survivor.sync({survivor.member_id: b"all"}).error_code == NONE
        assert survivor.heartbeat() == NONE

        # (b) A follower's SyncGroup is parked waiting for the leader; it disconnects.
        follower = RawMember(connect(), "raw")
        follower.sock.sendall(encode(join_request(1, "raw", session_ms=600, rebalance_ms=600), 1))
        wait_for(lambda: survivor.heartbeat() == REBALANCE_IN_PROGRESS, 3, "the second rebalance")
        assert survivor.join(session_ms=5_000, rebalance_ms=1_000).error_code == NONE
        follower_join = JoinGroupResponse.decode(recv_frame(follower.sock), version=1, header=True)
        assert follower_join.error_code == NONE
        follower.member_id, follower.generation = follower_join.member_id, follower_join.generation_id
        follower.sock.sendall(
            encode(
                SyncGroupRequest(
                    version=1,
                    group_id="raw",
                    generation_id=follower.generation,
                    member_id=follower.member_id,
                    assignments=[],
                ),
                2,
            )
        )
        time.sleep(0.1)
        follower.sock.close()
        assert survivor.sync({survivor.member_id: b"all", follower.member_id: b""}).error_code == NONE
        # The follower's session runs out; the survivor is told, rejoins alone, and is Stable.
        wait_for(lambda: survivor.heartbeat() == REBALANCE_IN_PROGRESS, 5, "the follower's session to expire")
        joined = survivor.join(session_ms=5_000, rebalance_ms=1_000)
        assert joined.error_code == NONE
        assert [m.member_id for m in joined.members] == [survivor.member_id]
        assert survivor.sync({survivor.member_id: b"all"}).error_code == NONE
        assert describe(connect(), "raw")["raw"].group_state == "Stable"
        bystander.finish()


# --- 5. memory stays bounded -----------------------------------------------------------------

RSS_BOUND = 64 * MiB


def produce_request_of_size(version: int, payload_size: int) -> bytes:
    """A well-formed Produce request whose framed payload is exactly ``payload_size`` bytes."""

    def build(records: bytes) -> bytes:
        partition = ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)
        topic = ProduceRequest.TopicProduceData(name="events", partition_data=[partition])
        request = ProduceRequest(
            version=version, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[topic]
        )
        return encode(request, 5)

    overhead = len(build(b"")) - 4
    wire = build(b"\x00" * (payload_size - overhead))
    assert len(wire) == payload_size + 4
    return wire


def test_slow_maximal_request_and_many_partial_frames_keep_memory_bounded() -> None:
    with server(max_request_bytes=MiB) as (coordinator, connect):
        api_versions_round_trip(connect())  # warm up the code paths before measuring
        before = rss()
        # One request of exactly max_request_bytes, streamed slowly.
        whole = produce_request_of_size(3, MiB)
        slow = connect()
        sent = 0
        chunk = 32 * 1024
        while sent < len(whole) * 3 // 4:
            slow.sendall(whole[sent : sent + chunk])
            sent += chunk
            time.sleep(0.01)
        # Many connections, each announcing the maximum and sending a little of it.
        partial = [connect() for _ in range(200)]
        for sock in partial:
            sock.sendall(struct.pack(">i", MiB) + raw_header(0, 3) + b"\x00" * (16 * 1024))
        checker = connect()
        assert api_versions_round_trip(checker) < HANG_S
        time.sleep(0.3)  # let the server read everything it was sent
        grown = rss() - before
        assert grown < RSS_BOUND, f"the server grew by {grown / MiB:.0f} MiB"
        assert all(still_open(s) for s in [slow, *partial]), "legal partial frames must not be closed"
        # The slow request completes: a size of exactly max_request_bytes is accepted.
        slow.sendall(whole[sent:])
        response = ProduceResponse.decode(recv_frame(slow), version=3, header=True)
        assert [p.error_code for t in response.responses for p in t.partition_responses] == [INVALID_REQUEST]
        for sock in partial:
            sock.close()
        wait_for(
            lambda: server_side_sockets(coordinator.port) <= 3, 5, "the partial connections to be dropped"
        )
        api_versions_round_trip(checker)
        api_versions_round_trip(connect())


def test_pipelining_behind_a_parked_join_keeps_memory_bounded() -> None:
    with server(max_request_bytes=MiB) as (_, connect):
        stable_raw_member(connect, "parked", session_ms=30_000, rebalance_ms=30_000)
        pipelined = [connect() for _ in range(3)]
        for sock in pipelined:
            sock.sendall(encode(join_request(1, "parked", session_ms=30_000, rebalance_ms=30_000), 1))
        time.sleep(0.2)
        before = rss()
        header = raw_header(18, 0)
        one = memoryview(frame(header + b"\x00" * (MiB - len(header))))
        assert len(one) == MiB + 4
        for sock in pipelined:
            sock.setblocking(False)
            sent, progress_at = 0, time.monotonic()
            # Until 40 requests are out, or the server stops reading for 0.3 s.
            while sent < 40 * len(one) and time.monotonic() - progress_at < 0.3:
                offset = sent % len(one)
                try:
                    sent += sock.send(one[offset : offset + 256 * 1024])
                    progress_at = time.monotonic()
                except BlockingIOError:
                    time.sleep(0.01)
            sock.setblocking(True)
        time.sleep(0.3)
        grown = rss() - before
        api_versions_round_trip(connect())
        assert grown < RSS_BOUND, f"3 connections made the server grow by {grown / MiB:.0f} MiB"


# --- 6. Produce, Fetch and ListOffsets get INVALID_REQUEST -----------------------------------


def produce(version: int, acks: int = 1) -> Any:
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1024)
    builder.append(timestamp=None, key=b"k", value=b"v")
    builder.close()
    records = bytes(builder.buffer())
    topic_cls = ProduceRequest.TopicProduceData
    partition_cls = topic_cls.PartitionProduceData
    return ProduceRequest(
        version=version,
        transactional_id=None,
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            topic_cls(
                name="events", partition_data=[partition_cls(index=p, records=records) for p in (0, 5)]
            ),
            topic_cls(name="no-such-topic", partition_data=[partition_cls(index=0, records=records)]),
        ],
    )


def fetch(version: int) -> Any:
    topic_cls = FetchRequest.FetchTopic
    partition_cls = topic_cls.FetchPartition
    return FetchRequest(
        version=version,
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 16,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            topic_cls(
                topic=name,
                partitions=[
                    partition_cls(
                        partition=p,
                        fetch_offset=0,
                        log_start_offset=-1,
                        partition_max_bytes=1 << 15,
                        current_leader_epoch=-1,
                    )
                    for p in partitions
                ],
            )
            for name, partitions in (("events", (0, 11)), ("no-such-topic", (3,)))
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def list_offsets(version: int) -> Any:
    topic_cls = ListOffsetsRequest.ListOffsetsTopic
    partition_cls = topic_cls.ListOffsetsPartition
    return ListOffsetsRequest(
        version=version,
        replica_id=-1,
        isolation_level=0,
        topics=[
            topic_cls(
                name=name,
                partitions=[
                    partition_cls(partition_index=p, timestamp=-1, current_leader_epoch=-1)
                    for p in partitions
                ],
            )
            for name, partitions in (("events", (0, 7)), ("no-such-topic", (0,)))
        ],
    )


def produce_errors(response: Any) -> list[tuple[str, int, int]]:
    return [(t.name, p.index, p.error_code) for t in response.responses for p in t.partition_responses]


def fetch_errors(response: Any) -> list[tuple[str, int, int]]:
    return [(t.topic, p.partition_index, p.error_code) for t in response.responses for p in t.partitions]


def list_offsets_errors(response: Any) -> list[tuple[str, int, int]]:
    return [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions]


LOG_CASES = (
    [pytest.param(produce, ProduceResponse, produce_errors, v, id=f"produce-v{v}") for v in range(3, 10)]
    + [pytest.param(fetch, FetchResponse, fetch_errors, v, id=f"fetch-v{v}") for v in range(4, 13)]
    + [
        pytest.param(list_offsets, ListOffsetsResponse, list_offsets_errors, v, id=f"listoffsets-v{v}")
        for v in range(1, 8)
    ]
)


@pytest.mark.parametrize(("build", "response_cls", "errors", "version"), LOG_CASES)
def test_log_apis_answer_invalid_request_and_keep_the_connection(
    srv: tuple[EmbeddedCoordinator, Sockets],
    build: Callable[[int], Any],
    response_cls: Any,
    errors: Callable[[Any], list[tuple[str, int, int]]],
    version: int,
) -> None:
    _, connect = srv
    sock = connect()
    for correlation_id in (11, 12):  # twice: the connection stays open and in step
        response = call(sock, build(version), response_cls, correlation_id)
        found = errors(response)
        assert len({(topic, partition) for topic, partition, _ in found}) == len(found) == 3, found
        assert {code for _, _, code in found} == {INVALID_REQUEST}, found
        if response_cls is FetchResponse and version >= 7:
            assert response.error_code == INVALID_REQUEST
    api_versions_round_trip(sock, 13)


@pytest.mark.parametrize("version", range(3, 10))
def test_produce_acks_0_gets_no_response_and_the_connection_stays_usable(
    srv: tuple[EmbeddedCoordinator, Sockets], version: int
) -> None:
    _, connect = srv
    sock = connect()
    sock.sendall(encode(produce(version, acks=0), 21) + encode(produce(version, acks=0), 22))
    # The next frame on the wire answers the ApiVersions that follows, not the produces.
    api_versions_round_trip(sock, 23)
    response = call(sock, produce(version, acks=1), ProduceResponse, 24)
    assert {code for _, _, code in produce_errors(response)} == {INVALID_REQUEST}


# --- 7. decodable nonsense in group requests gets Kafka error codes --------------------------


def offset_commit(version: int, group: str, commits: list[tuple[str, int]], generation: int = -1) -> Any:
    topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
    partition_cls = topic_cls.OffsetCommitRequestPartition
    by_topic: dict[str, list[int]] = {}
    for topic, partition in commits:
        by_topic.setdefault(topic, []).append(partition)
    return OffsetCommitRequest(
        version=version,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            topic_cls(
                name=topic,
                partitions=[
                    partition_cls(
                        partition_index=p,
                        committed_offset=42,
                        committed_leader_epoch=-1,
                        commit_timestamp=-1,
                        committed_metadata="",
                    )
                    for p in partitions
                ],
            )
            for topic, partitions in by_topic.items()
        ],
    )


@pytest.mark.parametrize("version", [0, 1, 5, 9], ids=lambda v: f"joingroup-v{v}")
def test_nonsense_join_group_gets_error_codes_on_an_open_connection(
    srv: tuple[EmbeddedCoordinator, Sockets], version: int
) -> None:
    _, connect = srv
    sock = connect()
    cases: list[tuple[dict[str, Any], str, int]] = [
        ({"session_ms": -5}, "g", INVALID_SESSION_TIMEOUT),
        ({"session_ms": 0}, "g", INVALID_SESSION_TIMEOUT),
        ({"session_ms": 499}, "g", INVALID_SESSION_TIMEOUT),
        ({"session_ms": 2**31 - 1}, "g", INVALID_SESSION_TIMEOUT),
        ({}, "", INVALID_GROUP_ID),
        ({"member_id": "nobody-knows-me"}, "no-such-group", UNKNOWN_MEMBER_ID),
        ({"protocol_type": ""}, "g", INCONSISTENT_GROUP_PROTOCOL),
        ({"protocols": ()}, "g", INCONSISTENT_GROUP_PROTOCOL),
    ]
    if version >= 1:
        cases.append(({"rebalance_ms": -5}, "g", INVALID_REQUEST))
    for correlation_id, (options, group, expected) in enumerate(cases, start=1):
        request = join_request(version, group, **options)
        response = call(sock, request, JoinGroupResponse, correlation_id)
        assert response.error_code == expected, (options, group, response)
        assert response.members == []
    # None of that left a group behind or closed the connection.
    listed = describe(sock, "g", "no-such-group")
    assert {g.group_state for g in listed.values()} == {"Dead"}
    api_versions_round_trip(sock)


@pytest.mark.parametrize("low", [True, False], ids=["lowest-versions", "highest-versions"])
def test_nonsense_group_requests_get_error_codes_on_an_open_connection(
    srv: tuple[EmbeddedCoordinator, Sockets], low: bool
) -> None:
    _, connect = srv
    sock = connect()

    def v(api_key: int) -> int:
        return SUPPORTED[api_key][0 if low else 1]

    sync = call(
        sock,
        SyncGroupRequest(
            version=v(14),
            group_id="no-such-group",
            generation_id=1,
            member_id="m",
            assignments=[],
            group_instance_id=None,
            protocol_type=None,
            protocol_name=None,
        ),
        SyncGroupResponse,
        1,
    )
    assert sync.error_code == UNKNOWN_MEMBER_ID
    heartbeat = call(
        sock,
        HeartbeatRequest(
            version=v(12), group_id="no-such-group", generation_id=1, member_id="m", group_instance_id=None
        ),
        HeartbeatResponse,
        2,
    )
    assert heartbeat.error_code == UNKNOWN_MEMBER_ID
    member_identity = LeaveGroupRequest.MemberIdentity
    leave = call(
        sock,
        LeaveGroupRequest(
            version=v(13),
            group_id="no-such-group",
            member_id="m",
            members=[member_identity(member_id="m", group_instance_id=None, reason=None)],
        ),
        LeaveGroupResponse,
        3,
    )
    leave_errors = [leave.error_code] if v(13) < 3 else [m.error_code for m in leave.members]
    assert leave_errors == [UNKNOWN_MEMBER_ID]

    commits = [("no-such-topic", 0), ("events", -1), ("events", 12), ("events", 2**31 - 1)]
    by_name = min(v(8), 9)  # from v10 OffsetCommit names topics by id (below)
    committed = call(sock, offset_commit(by_name, "offsets-only", commits), OffsetCommitResponse, 4)
    found = {(t.name, p.partition_index): p.error_code for t in committed.topics for p in t.partitions}
    assert found == dict.fromkeys(commits, UNKNOWN_TOPIC_OR_PARTITION)
    no_group = call(sock, offset_commit(by_name, "", [("events", 0)]), OffsetCommitResponse, 5)
    assert [p.error_code for t in no_group.topics for p in t.partitions] == [INVALID_GROUP_ID]
    if v(8) >= 10:  # an id no topic has, and the zero id (which kafka-python reads as None)
        by_id = offset_commit(v(8), "offsets-only", [("x", 0), ("", 1)])
        by_id.topics[0].topic_id = uuid.UUID(int=7)
        answered = call(sock, by_id, OffsetCommitResponse, 5)
        found = {(t.topic_id, p.partition_index): p.error_code for t in answered.topics for p in t.partitions}
        assert found == {(uuid.UUID(int=7), 0): UNKNOWN_TOPIC_ID, (None, 1): UNKNOWN_TOPIC_ID}

    deleted = call(
        sock, DeleteGroupsRequest(version=v(42), groups_names=["no-such-group"]), DeleteGroupsResponse, 6
    )
    assert [r.error_code for r in deleted.results] == [GROUP_ID_NOT_FOUND]
    topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
    for correlation_id, (group, expected) in enumerate(
        (("no-such-group", GROUP_ID_NOT_FOUND), ("", INVALID_GROUP_ID), ("offsets-only", GROUP_ID_NOT_FOUND)),
        start=7,
    ):
        request = OffsetDeleteRequest(
            version=v(47),
            group_id=group,
            topics=[
                topic_cls(
                    name="events", partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=0)]
                )
            ],
        )
        forgotten = call(sock, request, OffsetDeleteResponse, correlation_id)
        assert (forgotten.error_code, forgotten.topics) == (expected, []), group
    # The failed commits stored nothing, so they left no group behind.
    assert describe(sock, "offsets-only")["offsets-only"].group_state == "Dead"
    api_versions_round_trip(sock)


def test_duplicate_protocol_names_do_not_lock_out_the_rest_of_the_group(
    srv: tuple[EmbeddedCoordinator, Sockets],
) -> None:
    _, connect = srv
    leader = stable_raw_member(connect, "dup", session_ms=5_000, rebalance_ms=5_000)
    odd = connect()
    doubled = (("range", SUBSCRIPTION), ("range", SUBSCRIPTION))
    odd.sendall(encode(join_request(1, "dup", session_ms=1000, rebalance_ms=1000, protocols=doubled), 1))
    wait_for(lambda: leader.heartbeat() == REBALANCE_IN_PROGRESS, 3, "the rebalance to start")
    # Kafka treats a member's protocols as a set: the leader's rejoin completes the generation.
    rejoined = leader.join(session_ms=5_000, rebalance_ms=1000)
    assert rejoined.error_code == NONE, rejoined
    assert rejoined.generation_id == 2
    assert len(rejoined.members) == 2


def test_create_topics_rejects_an_absurd_partition_count(srv: tuple[EmbeddedCoordinator, Sockets]) -> None:
    _, connect = srv
    sock = connect()
    topic_cls = CreateTopicsRequest.CreatableTopic
    request = CreateTopicsRequest(
        version=2,
        topics=[
            topic_cls(name="bomb", num_partitions=2**31 - 1, replication_factor=1, assignments=[], configs=[])
        ],
        timeout_ms=1000,
        validate_only=True,
    )
    response = call(sock, request, CreateTopicsResponse, 1)
    # Never send Metadata here: with the bug present it would hang the server.
    assert [t.error_code for t in response.topics] != [NONE]


# --- the data directory -------------------------------------------------------------------------


def test_a_second_coordinator_on_the_same_data_directory_refuses_to_start(tmp_path: Path) -> None:
    """Two coordinators on one data directory would overwrite each other's state: the second
    stops with one line naming the first; once the first is gone, the directory is free."""
    with EmbeddedCoordinator(data_dir=tmp_path):
        with pytest.raises(
            CoordinatorStartError, match=rf"in use by another coordinator \(process {os.getpid()}\)"
        ):
            EmbeddedCoordinator(data_dir=tmp_path).start()
        second = subprocess.run(
            [sys.executable, "-m", "coordinator_api", "serve", "--port", "0", "--data-dir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode != 0
        assert f"in use by another coordinator (process {os.getpid()})" in second.stderr
        assert len(second.stderr.strip().splitlines()) == 1, second.stderr
    with EmbeddedCoordinator(data_dir=tmp_path) as again:  # released on stop
        assert again.bootstrap_servers


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("", False),
        ("::", False),
        ("10.1.2.3", False),
        ("coordinator.example.com", False),
    ],
)
def test_serve_warns_about_every_address_but_loopback(host: str, loopback: bool) -> None:
    # Which listen addresses get the warning that anyone who reaches the port can do anything
    # (tests never listen beyond 127.0.0.1, so the rule is checked on its own).
    assert is_loopback(host) is loopback


def test_a_request_that_never_finishes_arriving_is_cut_off_however_it_trickles() -> None:
    # One byte every 100 ms into a frame that would take 100 s: each byte resets the idle
    # timer, but the request must arrive whole within request_arrival_timeout_ms (here 1 s).
    # 10 s only detects a hang.
    with server(request_arrival_timeout_ms=1000) as (_, connect):
        trickle = connect(timeout=CLOSE_TIMEOUT_S)
        trickle.sendall(struct.pack(">i", 1000))
        started, sent, cut = time.monotonic(), 0, None
        while time.monotonic() - started < 10:
            try:
                trickle.sendall(b"\x00")
                sent += 1
            except OSError:
                cut = time.monotonic() - started
                break
            if not still_open(trickle):
                cut = time.monotonic() - started
                break
            time.sleep(0.1)
        assert cut is not None, f"still open after {sent} trickled bytes"
        assert cut >= 1.0, (cut, sent)
        busy = connect()  # everyone else is served as usual
        api_versions_round_trip(busy)


def test_all_connections_together_hold_no_more_request_bytes_than_the_budget() -> None:
    # Eight clients each announce a request of the maximum size and send most of it, never the
    # rest: without a budget the server would hold 8 x 7 MiB. Over 16 MiB it stops reading
    # those connections (small requests are still read), until their arrival deadline cuts
    # them off; a bystander's round trips stay quick throughout.
    limit = 8 * MiB
    config = {
        "max_request_bytes": limit,
        "queued_max_request_bytes": 2 * limit,
        "request_arrival_timeout_ms": 3000,
    }
    with server(**config) as (_, connect):
        checker = connect()
        api_versions_round_trip(checker)
        before = rss()
        chunk = memoryview(b"\x00" * (256 * 1024))
        senders = []
        for _ in range(8):
            sock = connect()
            sock.sendall(struct.pack(">i", limit) + raw_header(0, 3))
            sock.setblocking(False)
            senders.append(sock)
        sent = [0] * len(senders)
        progress_at = time.monotonic()
        while time.monotonic() - progress_at < 0.5:
            for i, sock in enumerate(senders):
                if sent[i] >= 7 * MiB:
                    continue
                try:
                    sent[i] += sock.send(chunk)
                    progress_at = time.monotonic()
                except BlockingIOError:
                    pass
            assert api_versions_round_trip(checker) < HANG_S
        grown = rss() - before
        # The server held at most the budget (16 MiB) and a little per connection; the sockets'
        # buffers hold the rest, what the server stopped reading (without the budget it grows
        # by all of it, about 56 MiB).
        assert grown < 2 * limit + 16 * MiB, f"the server grew by {grown / MiB:.0f} MiB"
        assert api_versions_round_trip(connect()) < HANG_S  # a new client gets in
        # The partial requests' deadline frees the budget; the server serves on.
        wait_for(lambda: not any(still_open(s) for s in senders), 10, "the partial requests to be cut off")
        api_versions_round_trip(checker)


def test_more_connections_from_one_address_than_allowed_are_closed_at_once() -> None:
    with server(max_connections_per_ip=3) as (coordinator, connect):
        first = [connect() for _ in range(3)]
        for sock in first:
            api_versions_round_trip(sock)
        extra = connect()
        assert recv_exact(extra, 4) is None  # closed by the server, unanswered
        for sock in first:
            api_versions_round_trip(sock)  # the others are served on
        first.pop().close()
        wait_for(lambda: server_side_sockets(coordinator.port) <= 2, 5, "the closed connection to go")
        api_versions_round_trip(connect())


def test_clients_flooding_metadata_for_every_topic_do_not_stall_a_healthy_group() -> None:
    # A topic of 50,000 partitions makes Metadata for every topic the server's most expensive
    # answer (about 0.3 s to encode here). Twenty clients pipeline 50 such requests each and never
    # read: encoded once per request, that is minutes of event-loop time, and the bystander's
    # sessions would run out; encoded once and copied, its heartbeats stay quick.
    with server(max_partitions_per_topic=50_000) as (_, connect):
        bystander = Bystander(stable_raw_member(connect, "bystander", session_ms=BYSTANDER_SESSION_MS))
        sock = connect()
        topic_cls = CreateTopicsRequest.CreatableTopic
        created = call(
            sock,
            CreateTopicsRequest(
                version=2,
                topics=[
                    topic_cls(
                        name="wide", num_partitions=50_000, replication_factor=1, assignments=[], configs=[]
                    )
                ],
                timeout_ms=1000,
                validate_only=False,
            ),
            CreateTopicsResponse,
        )
        assert [t.error_code for t in created.topics] == [NONE]
        bystander.start()
        every_topic = b"".join(encode(MetadataRequest(version=9, topics=None), i) for i in range(50))
        flooders = [connect() for _ in range(20)]
        for flooder in flooders:
            flooder.sendall(every_topic)
        time.sleep(3)  # the bystander heartbeats every 0.1 s meanwhile
        bystander.finish()
        answer = MetadataResponse.decode(recv_frame(flooders[0]), version=9, header=True)
        assert sum(len(t.partitions) for t in answer.topics) == 50_000 + 12


def test_a_client_pipelining_thousands_of_requests_takes_turns_with_the_others() -> None:
    # One request per connection per turn of the event loop, as a Kafka broker's selector: a
    # client that pipelines 20,000 requests (one read brings 18,000 of them) must not be answered
    # whole before another client's single request. Counted, not timed: when the other client
    # has its answer, most of the pipelined answers are not even written yet (served all at once,
    # at least the 18,000 of the first read would be).
    pipelined = 20_000
    with server() as (_, connect):
        probe = connect()
        probe.sendall(encode(ApiVersionsRequest(version=0), 1))
        size = 4 + len(recv_frame(probe))  # every ApiVersions v0 answer is this long
        greedy = connect()
        greedy.sendall(b"".join(encode(ApiVersionsRequest(version=0), i) for i in range(pipelined)))
        time.sleep(0.01)  # the greedy requests are read first
        call(probe, ApiVersionsRequest(version=0), ApiVersionsResponse)
        greedy.setblocking(False)
        written = bytearray()
        with contextlib.suppress(BlockingIOError):
            while chunk := greedy.recv(1 << 20):
                written += chunk
        greedy.setblocking(True)
        assert len(written) // size < pipelined // 2, len(written) // size
        # ...and every one of them is answered in the end.
        assert recv_exact(greedy, pipelined * size - len(written)) is not None
