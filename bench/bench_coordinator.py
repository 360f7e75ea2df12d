#!/usr/bin/env python3
"""Benchmark: the embedded coordinator against librdkafka's mock cluster, same client workload.

Both servers run in their own processes (``python -m coordinator_api serve`` and a small child
running :class:`coordinator_api.testing.LibrdkafkaMockCluster`). The load generator speaks the
Kafka protocol through kafka-python 3's message classes over asyncio sockets, one TCP
connection per simulated member:

* **A, time to a stable generation**: N members of a fresh group send JoinGroup at once
  (rejoining with the given id after MEMBER_ID_REQUIRED), followers send SyncGroup as soon as
  their JoinGroup answer arrives, the leader sends SyncGroup with a range assignment for every
  member once every follower's SyncGroup is on the wire. Measured from the first JoinGroup
  sent to the last SyncGroup answer received (median of ``--repeats`` fresh groups).
* **B, heartbeats per second**: M members of a stable group each send Heartbeat back to back
  (the next one as soon as the answer arrives) for T seconds, from 1 and/or 2 load-generator
  processes; answered heartbeats per second.

Run ``python bench/bench_coordinator.py --help``; see bench/README.md for the method and the
caveats (notably: the mock completes a join phase only when its own timer fires).
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import json
import multiprocessing
import os
import platform
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
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "bench" / "results" / "coordinator.json"
CLIENT_ID = "bench"
TOPIC = "bench"
PARTITIONS = 64
PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "range"
SESSION_TIMEOUT_MS = 30_000
REBALANCE_TIMEOUT_MS = 30_000
HOST = "127.0.0.1"

# Kafka error codes the load generator reacts to.
NONE = 0
UNKNOWN_MEMBER_ID = 25
REBALANCE_IN_PROGRESS = 27
MEMBER_ID_REQUIRED = 79

API_NAMES = {10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
API_VERSIONS_KEY = 18

EMBEDDED = "embedded"
MOCK = "mock"
SERVER_LABELS = {EMBEDDED: "embedded coordinator", MOCK: "librdkafka mock"}


class BenchError(RuntimeError):
    """The benchmark cannot go on (a server misbehaved or did not start)."""


# --- one Kafka connection -------------------------------------------------------------------------


class KafkaConnection(asyncio.Protocol):
    """One client connection with at most one request in flight, like one group member's."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiter: asyncio.Future[bytes] | None = None
        self._correlation_id = 0
        self.lost: BaseException | None = None

    # asyncio callbacks
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.lost = exc or ConnectionResetError("connection closed by the server")
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(self.lost)

    def data_received(self, data: bytes) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= 4:
            (size,) = struct.unpack_from(">i", buffer)
            if len(buffer) < 4 + size:
                break
            payload = bytes(buffer[4 : 4 + size])
            del buffer[: 4 + size]
            self.on_payload(payload)

    def on_payload(self, payload: bytes) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is None or waiter.done():
            raise BenchError("a response arrived with no request in flight")
        waiter.set_result(payload)

    # requests
    def send(self, request: Any) -> asyncio.Future[bytes]:
        """Encode and write ``request`` now; the future gets the response payload."""
        if self.transport is None:
            raise self.lost or ConnectionError("not connected")
        if self._waiter is not None:
            raise BenchError("one request at a time per connection")
        self._correlation_id += 1
        request.with_header(correlation_id=self._correlation_id, client_id=CLIENT_ID)
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(bytes(request.encode(header=True, framed=True)))
        return self._waiter

    def decode(self, payload: bytes, request: Any, response_cls: Any) -> Any:
        response = response_cls.decode(payload, version=request.version, header=True)
        if response.header.correlation_id != self._correlation_id:
            raise BenchError(f"correlation id {response.header.correlation_id} != {self._correlation_id}")
        return response

    async def call(self, request: Any, response_cls: Any) -> Any:
        return self.decode(await self.send(request), request, response_cls)

    def close(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.cancel()  # nobody waits for it any more
        if self.transport is not None:
            self.transport.close()


async def connect(address: str, factory: Any = KafkaConnection) -> Any:
    host, _, port = address.rpartition(":")
    if host != HOST:
        raise BenchError(f"refusing to connect to {address}: only {HOST} is allowed")
    _, protocol = await asyncio.get_running_loop().create_connection(factory, host, int(port))
    return protocol


async def connect_many(
    address: str, count: int, hello_version: int, factory: Any = KafkaConnection, parallel: int = 2
) -> list[Any]:
    """Open ``count`` connections, each confirmed by an ApiVersions round trip (not timed).

    Only ``parallel`` handshakes run at once: the mock listens with a backlog of 5 and accepts
    one connection per poll loop, so a burst of connects overflows its accept queue and the
    kernel drops or resets the surplus.
    """
    connections: list[Any] = [None] * count
    gate = asyncio.Semaphore(parallel)

    async def one(i: int) -> None:
        async with gate:
            conn = await connect(address, factory)
            reply = await asyncio.wait_for(
                conn.call(ApiVersionsRequest(version=hello_version), ApiVersionsResponse), 30
            )
            if reply.error_code != NONE:
                raise BenchError(f"ApiVersions v{hello_version} failed with error {reply.error_code}")
            connections[i] = conn

    await asyncio.gather(*(one(i) for i in range(count)))
    return connections


# --- protocol versions ---------------------------------------------------------------------------


async def api_versions(address: str) -> dict[int, tuple[int, int]]:
    """Send ApiVersions v0 and return {api key: (min, max)}."""
    conn = await connect(address)
    try:
        response = await conn.call(ApiVersionsRequest(version=0), ApiVersionsResponse)
    finally:
        conn.close()
    if response.error_code != NONE:
        raise BenchError(f"ApiVersions v0 to {address} failed with error {response.error_code}")
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def common_versions(
    ours: dict[int, tuple[int, int]], theirs: dict[int, tuple[int, int]]
) -> dict[int, tuple[int, int]]:
    """{api key: (lowest, highest)} version range that both servers announce."""
    chosen = {}
    for key in (API_VERSIONS_KEY, *API_NAMES):
        if key not in ours or key not in theirs:
            raise BenchError(f"api key {key} is not offered by both servers")
        low = max(ours[key][0], theirs[key][0])
        high = min(ours[key][1], theirs[key][1])
        if low > high:
            raise BenchError(f"api key {key}: no common version ({ours[key]} vs {theirs[key]})")
        chosen[key] = (low, high)
    return chosen


async def probe_version(address: str, key: int, version: int) -> str | None:
    """Whether the server reads a well-formed request of this version: None if so, else why not.

    Every probe is shaped so that a server that misreads it fails safely (no probe puts a
    member into a real group): JoinGroup creates a throw-away group (a parked request counts
    as read: the mock answers a first join only after its initial rebalance delay), the others
    name a group that does not exist, and SyncGroup carries no assignment.
    """
    missing = f"bench-probe-missing-{uuid.uuid4().hex[:8]}"
    if key == 10:
        request: Any = FindCoordinatorRequest(version=version, key=missing, key_type=0)
        response_cls: Any = FindCoordinatorResponse
    elif key == 11:
        request = JoinGroupRequest(
            version=version,
            group_id=f"bench-probe-{uuid.uuid4().hex[:8]}",
            session_timeout_ms=1000,
            rebalance_timeout_ms=1000,
            member_id="",
            group_instance_id=None,
            protocol_type=PROTOCOL_TYPE,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=PROTOCOL_NAME, metadata=SUBSCRIPTION)],
        )
        response_cls = JoinGroupResponse
    elif key == 14:
        request = SyncGroupRequest(
            version=version,
            group_id=missing,
            generation_id=1,
            member_id="probe",
            group_instance_id=None,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=PROTOCOL_NAME,
            assignments=[],
        )
        response_cls = SyncGroupResponse
    elif key == 12:
        request = HeartbeatRequest(
            version=version, group_id=missing, generation_id=1, member_id="probe", group_instance_id=None
        )
        response_cls = HeartbeatResponse
    else:
        request = leave_request(Versions(0, 0, 0, 0, 0, version), missing, "probe")
        response_cls = LeaveGroupResponse
    conn = await connect(address)
    try:
        payload = await asyncio.wait_for(asyncio.shield(conn.send(request)), 0.5 if key == 11 else 5)
    except asyncio.TimeoutError:
        return None if key == 11 else "no answer within 5 s"
    except ConnectionError:
        return "the server closed the connection"
    finally:
        conn.close()
    try:
        conn.decode(payload, request, response_cls)
    except Exception as exc:
        return f"answer cannot be decoded as v{version} ({type(exc).__name__}: {exc})"
    return None


async def working_versions(
    addresses: dict[str, str], announced: dict[int, tuple[int, int]]
) -> tuple[dict[int, int], list[str]]:
    """Highest version of each group API that every server announces *and* reads correctly."""
    chosen = {API_VERSIONS_KEY: announced[API_VERSIONS_KEY][1]}
    findings = []
    for key, name in API_NAMES.items():
        low, high = announced[key]
        version = high
        while version >= low:
            failures = {kind: await probe_version(a, key, version) for kind, a in addresses.items()}
            broken = {kind: why for kind, why in failures.items() if why}
            if not broken:
                break
            for kind, why in broken.items():
                findings.append(
                    f"{SERVER_LABELS[kind]} announces {name} up to v{high} "
                    f"but fails a well-formed v{version} request: {why}"
                )
            version -= 1
        if version < low:
            raise BenchError(f"no {name} version works on both servers")
        chosen[key] = version
    return chosen, findings


# --- requests -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Versions:
    api_versions: int
    find_coordinator: int
    join: int
    sync: int
    heartbeat: int
    leave: int

    @classmethod
    def from_keys(cls, chosen: dict[int, int]) -> Versions:
        return cls(
            api_versions=chosen[API_VERSIONS_KEY],
            find_coordinator=chosen[10],
            join=chosen[11],
            sync=chosen[14],
            heartbeat=chosen[12],
            leave=chosen[13],
        )


SUBSCRIPTION = bytes(ConsumerProtocolSubscription(version=0, topics=[TOPIC], user_data=None).encode())


def join_request(v: Versions, group_id: str, member_id: str) -> Any:
    return JoinGroupRequest(
        version=v.join,
        group_id=group_id,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        member_id=member_id,
        group_instance_id=None,
        protocol_type=PROTOCOL_TYPE,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=PROTOCOL_NAME, metadata=SUBSCRIPTION)],
    )


def sync_request(
    v: Versions, group_id: str, generation: int, member_id: str, assignments: dict[str, bytes]
) -> Any:
    return SyncGroupRequest(
        version=v.sync,
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        protocol_type=PROTOCOL_TYPE,
        protocol_name=PROTOCOL_NAME,
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in assignments.items()
        ],
    )


def heartbeat_request(v: Versions, group_id: str, generation: int, member_id: str) -> Any:
    return HeartbeatRequest(
        version=v.heartbeat,
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
    )


def leave_request(v: Versions, group_id: str, member_id: str) -> Any:
    if v.leave >= 3:
        return LeaveGroupRequest(
            version=v.leave,
            group_id=group_id,
            members=[LeaveGroupRequest.MemberIdentity(member_id=member_id, group_instance_id=None)],
        )
    return LeaveGroupRequest(version=v.leave, group_id=group_id, member_id=member_id)


def range_assignment(member_ids: list[str]) -> dict[str, bytes]:
    """Kafka's range assignor over the one topic, encoded with kafka-python's consumer protocol."""
    ids = sorted(member_ids)
    per, extra = divmod(PARTITIONS, len(ids))
    out: dict[str, bytes] = {}
    start = 0
    for i, member_id in enumerate(ids):
        count = per + (1 if i < extra else 0)
        parts = list(range(start, start + count))
        start += count
        topics = [ConsumerProtocolAssignment.TopicPartition(topic=TOPIC, partitions=parts)] if parts else []
        out[member_id] = bytes(
            ConsumerProtocolAssignment(version=0, assigned_partitions=topics, user_data=None).encode()
        )
    return out


# --- metric A: a group forms --------------------------------------------------------------------


@dataclass
class Member:
    conn: KafkaConnection
    member_id: str = ""
    generation: int = -1


@dataclass
class GroupRun:
    """Bookkeeping of one group forming, shared by its member tasks."""

    group_id: str
    size: int
    versions: Versions
    heartbeat_interval_s: float
    leader_wait_s: float
    leader_delay_s: float
    t_first_join: float | None = None
    t_stable: float | None = None
    stable_generation: int | None = None
    done: asyncio.Event = field(default_factory=asyncio.Event)
    generation_sizes: dict[int, int] = field(default_factory=dict)
    synced: Counter[int] = field(default_factory=Counter)
    follower_syncs_sent: Counter[int] = field(default_factory=Counter)
    follower_sync_waiters: dict[int, tuple[int, asyncio.Event]] = field(default_factory=dict)
    join_answered: dict[int, tuple[float, float]] = field(default_factory=dict)  # first, last
    requests: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    leader_wait_timeouts: int = 0

    def record_join_answer(self, generation: int) -> None:
        now = time.perf_counter()
        first, _ = self.join_answered.get(generation, (now, now))
        self.join_answered[generation] = (first, now)

    def record_error(self, api: str, code: int) -> None:
        self.errors[f"{api}:{code}"] += 1

    def _check_stable(self, generation: int) -> None:
        if (
            not self.done.is_set()
            and self.generation_sizes.get(generation) == self.size
            and self.synced[generation] == self.size
        ):
            self.t_stable = time.perf_counter()
            self.stable_generation = generation
            self.done.set()

    def follower_sync_sent(self, generation: int) -> None:
        self.follower_syncs_sent[generation] += 1
        waiter = self.follower_sync_waiters.get(generation)
        if waiter is not None and self.follower_syncs_sent[generation] >= waiter[0]:
            waiter[1].set()

    async def wait_for_followers(self, generation: int, followers: int) -> None:
        if self.follower_syncs_sent[generation] >= followers:
            return
        event = asyncio.Event()
        self.follower_sync_waiters[generation] = (followers, event)
        try:
            await asyncio.wait_for(event.wait(), self.leader_wait_s)
        except asyncio.TimeoutError:
            self.leader_wait_timeouts += 1


async def run_member(run: GroupRun, member: Member) -> None:
    """A consumer's classic-protocol loop: join, sync, heartbeat until the group is stable."""
    v = run.versions
    conn = member.conn
    while True:
        request = join_request(v, run.group_id, member.member_id)
        future = conn.send(request)
        if run.t_first_join is None:
            run.t_first_join = time.perf_counter()
        run.requests["JoinGroup"] += 1
        join = conn.decode(await future, request, JoinGroupResponse)
        if join.error_code == MEMBER_ID_REQUIRED:
            run.requests["MEMBER_ID_REQUIRED"] += 1
            member.member_id = join.member_id
            continue
        if join.error_code != NONE:
            run.record_error("JoinGroup", join.error_code)
            if join.error_code == UNKNOWN_MEMBER_ID:
                member.member_id = ""
            elif join.error_code != REBALANCE_IN_PROGRESS:
                raise BenchError(f"JoinGroup failed with error {join.error_code}")
            continue
        member.member_id = join.member_id
        member.generation = generation = join.generation_id
        run.record_join_answer(generation)
        if join.leader == member.member_id:
            run.generation_sizes[generation] = len(join.members)
            # Followers first: the mock drops a SyncGroup that reaches it after the leader's.
            await run.wait_for_followers(generation, len(join.members) - 1)
            if run.leader_delay_s:
                await asyncio.sleep(run.leader_delay_s)
            assignments = range_assignment([m.member_id for m in join.members])
            request = sync_request(v, run.group_id, generation, member.member_id, assignments)
            future = conn.send(request)
        else:
            request = sync_request(v, run.group_id, generation, member.member_id, {})
            future = conn.send(request)
            run.follower_sync_sent(generation)
        run.requests["SyncGroup"] += 1
        sync = conn.decode(await future, request, SyncGroupResponse)
        if sync.error_code != NONE:
            run.record_error("SyncGroup", sync.error_code)
            if sync.error_code == UNKNOWN_MEMBER_ID:
                member.member_id = ""
            continue  # rejoin, as a consumer would
        run.synced[generation] += 1
        run._check_stable(generation)
        # In the group; heartbeat (as a consumer would) until the whole group is stable.
        while not run.done.is_set():
            try:
                await asyncio.wait_for(run.done.wait(), run.heartbeat_interval_s)
                break
            except asyncio.TimeoutError:
                pass
            run.requests["Heartbeat"] += 1
            request = heartbeat_request(v, run.group_id, generation, member.member_id)
            hb = await conn.call(request, HeartbeatResponse)
            if hb.error_code != NONE:
                run.record_error("Heartbeat", hb.error_code)
                if hb.error_code == UNKNOWN_MEMBER_ID:
                    member.member_id = ""
                break  # rejoin
        if run.done.is_set():
            return


async def open_members(address: str, count: int, v: Versions, group_id: str) -> list[Member]:
    """Connect and introduce every member (ApiVersions, FindCoordinator): not timed."""
    conns = await connect_many(address, count, v.api_versions)

    async def find(conn: KafkaConnection) -> None:
        found = await conn.call(
            FindCoordinatorRequest(version=v.find_coordinator, key=group_id, key_type=0),
            FindCoordinatorResponse,
        )
        if found.error_code != NONE or f"{found.host}:{found.port}" != address:
            raise BenchError(f"FindCoordinator: error {found.error_code}, {found.host}:{found.port}")

    await asyncio.gather(*(find(c) for c in conns))
    return [Member(conn=c) for c in conns]


async def leave_and_close(members: list[Member], v: Versions, group_id: str) -> Counter[int]:
    """Take every member out (LeaveGroup, not timed) so no session expires during later runs."""
    codes: Counter[int] = Counter()

    async def leave(member: Member) -> None:
        if not member.member_id or member.conn.transport is None:
            return
        try:
            request = leave_request(v, group_id, member.member_id)
            response = await asyncio.wait_for(member.conn.call(request, LeaveGroupResponse), 10)
            codes[response.error_code] += 1
        except (Exception, asyncio.TimeoutError):
            codes[-1] += 1

    await asyncio.gather(*(leave(m) for m in members))
    for m in members:
        m.conn.close()
    return codes


class CpuWindow:
    """CPU used during a measurement by the server, by the load generator, and by anything else.

    The machine may be shared: ``background_cpu_cores`` (busy CPU time used by neither the
    server nor the load generator, per second of wall time) says how much other work competed.
    """

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.t0 = time.perf_counter()
        self.busy0 = self._busy()
        self.self0 = time.process_time()
        self.server0 = process_cpu(server_pid)

    @staticmethod
    def _busy() -> float:
        import psutil

        t = psutil.cpu_times()
        idle = t.idle + getattr(t, "iowait", 0.0)
        guest = getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)  # already counted in user
        return float(sum(t) - idle - guest)

    def stop(self) -> CpuWindow:
        self.elapsed = time.perf_counter() - self.t0
        self.busy = self._busy() - self.busy0
        self.server = process_cpu(self.server_pid) - self.server0
        self.mine = time.process_time() - self.self0
        return self

    def figures(self, workers_cpu_s: float = 0.0) -> dict[str, float | None]:
        """``workers_cpu_s``: CPU time of load-generator processes other than this one."""
        loadgen = self.mine + workers_cpu_s
        background = self.busy - self.server - loadgen
        return {
            "server_cpu_s": self.server,
            "loadgen_cpu_s": loadgen,
            # CPU times tick every 10 ms: over a shorter window the share of others means nothing.
            "background_cpu_cores": max(0.0, background) / self.elapsed if self.elapsed >= 0.5 else None,
        }


def process_cpu(pid: int) -> float:
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return float("nan")
    return float(t.user + t.system)


@dataclass
class Server:
    kind: str
    address: str
    process: subprocess.Popen[str]
    notes: list[str] = field(default_factory=list)


async def form_group(
    server: Server,
    size: int,
    v: Versions,
    args: argparse.Namespace,
    *,
    keep: bool = False,
) -> tuple[dict[str, Any], list[Member], str]:
    """Form one fresh group of ``size`` members; return its figures (and members if ``keep``)."""
    group_id = f"bench-{size}-{uuid.uuid4().hex[:12]}"
    members = await open_members(server.address, size, v, group_id)
    run = GroupRun(
        group_id=group_id,
        size=size,
        versions=v,
        heartbeat_interval_s=args.heartbeat_interval_ms / 1000,
        leader_wait_s=args.leader_wait_ms / 1000,
        leader_delay_s=args.leader_sync_delay_ms / 1000,
    )
    window = CpuWindow(server.process.pid)
    tasks = [asyncio.create_task(run_member(run, m)) for m in members]
    failure = None
    try:
        await asyncio.wait_for(asyncio.gather(*tasks), args.trial_timeout)
    except asyncio.TimeoutError:
        failure = f"no stable generation of {size} within {args.trial_timeout} s"
    except Exception as exc:  # a member hit something unexpected
        failure = f"{type(exc).__name__}: {exc}"
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    ok = failure is None and run.t_stable is not None and run.t_first_join is not None
    cpu = window.stop().figures()
    figures: dict[str, Any] = {
        "group_id": group_id,
        "members": size,
        "ok": ok,
        "failure": failure,
        "ms": None,
        "join_phase_ms": None,
        "sync_phase_ms": None,
        "generation": run.stable_generation,
        "generation_sizes": {str(g): n for g, n in sorted(run.generation_sizes.items())},
        "requests": dict(run.requests),
        "errors": dict(run.errors),
        "leader_wait_timeouts": run.leader_wait_timeouts,
        **cpu,
    }
    if ok:
        assert run.t_stable is not None
        assert run.t_first_join is not None
        _, last_join = run.join_answered[run.stable_generation]  # type: ignore[index]
        figures["ms"] = (run.t_stable - run.t_first_join) * 1000
        # From the first JoinGroup sent to the last JoinGroup answer of the stable generation,
        # then on to the last SyncGroup answer.
        figures["join_phase_ms"] = (last_join - run.t_first_join) * 1000
        figures["sync_phase_ms"] = (run.t_stable - last_join) * 1000
    if not keep or not figures["ok"]:
        figures["leave"] = {str(k): n for k, n in (await leave_and_close(members, v, group_id)).items()}
        members = []
    return figures, members, group_id


# --- metric B: heartbeats -----------------------------------------------------------------------


class HeartbeatConnection(KafkaConnection):
    """Sends the next Heartbeat from the callback that receives the previous answer."""

    def __init__(self, state: dict[str, Any], v: Versions, group_id: str, generation: int, member_id: str):
        super().__init__()
        self.state = state
        self.v = v
        self.group_id = group_id
        self.generation = generation
        self.member_id = member_id
        self.request: Any = None
        self.idle: asyncio.Future[None] | None = None

    def fire(self) -> None:
        self.request = heartbeat_request(self.v, self.group_id, self.generation, self.member_id)
        self.send(self.request)

    def on_payload(self, payload: bytes) -> None:
        if self.request is None:  # the hello before the run
            super().on_payload(payload)
            return
        self._waiter = None
        state = self.state
        try:
            response = self.decode(payload, self.request, HeartbeatResponse)
        except Exception as exc:
            state["failure"] = f"{type(exc).__name__}: {exc}"
            state["errors"]["undecodable"] += 1
            self.close()
            return
        if state["running"]:
            if response.error_code == NONE:
                state["ok"] += 1
            else:
                state["errors"][response.error_code] += 1
            self.fire()
        elif self.idle is not None and not self.idle.done():
            self.idle.set_result(None)


def heartbeat_worker(pipe: Any, params: dict[str, Any]) -> None:
    """A load-generator process: its share of the members heartbeat back to back."""
    try:
        pipe.send(asyncio.run(_heartbeat_worker(pipe, params)))
    except BaseException as exc:  # report instead of dying silently
        pipe.send({"error": f"{type(exc).__name__}: {exc}"})
    finally:
        pipe.close()


async def _heartbeat_worker(pipe: Any, params: dict[str, Any]) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    v = Versions(**params["versions"])
    state: dict[str, Any] = {"running": False, "ok": 0, "errors": Counter()}
    generation, group_id = params["generation"], params["group_id"]
    ids = iter(params["member_ids"])
    conns: list[HeartbeatConnection] = await connect_many(
        params["address"],
        len(params["member_ids"]),
        v.api_versions,
        lambda: HeartbeatConnection(state, v, group_id, generation, next(ids)),
        parallel=params["connect_parallel"],
    )
    pipe.send("ready")
    start_at = await loop.run_in_executor(None, pipe.recv)  # wall-clock start shared by workers
    await asyncio.sleep(max(0.0, start_at - time.time()))
    cpu0, t0 = time.process_time(), time.perf_counter()
    state["running"] = True
    for conn in conns:
        conn.fire()
    await asyncio.sleep(params["seconds"] - (time.perf_counter() - t0))
    state["running"] = False
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    for conn in conns:  # let the last answers in, then close
        if conn._waiter is not None:
            conn.idle = loop.create_future()
    pending = [c.idle for c in conns if c.idle is not None]
    if pending:
        await asyncio.wait(pending, timeout=5)
    for conn in conns:
        conn.close()
    if "failure" in state:
        raise BenchError(state["failure"])
    return {
        "ok": state["ok"],
        "errors": {str(k): n for k, n in state["errors"].items()},
        "seconds": elapsed,
        "cpu_s": cpu,
        "connections": len(conns),
    }


async def _recv(pipe: Any, timeout: float) -> Any:
    if not await asyncio.get_running_loop().run_in_executor(None, pipe.poll, timeout):
        raise BenchError(f"a heartbeat worker sent nothing for {timeout:g} s")
    return pipe.recv()


async def heartbeat_run(
    server: Server, v: Versions, group_id: str, members: list[Member], procs: int, seconds: float
) -> dict[str, Any]:
    ctx = multiprocessing.get_context("spawn")
    generation = members[0].generation
    workers = []
    for i in range(procs):
        share = [m.member_id for m in members[i::procs]]
        parent, child = ctx.Pipe()
        params = {
            "address": server.address,
            "group_id": group_id,
            "generation": generation,
            "member_ids": share,
            "versions": v.__dict__,
            "seconds": seconds,
            "connect_parallel": max(1, 4 // procs),
        }
        process = ctx.Process(target=heartbeat_worker, args=(child, params), daemon=True)
        process.start()
        child.close()
        workers.append((process, parent))
    try:
        for _, pipe in workers:
            ready = await _recv(pipe, 60)
            if ready != "ready":
                raise BenchError(f"heartbeat worker failed to start: {ready}")
        start_at = time.time() + 0.3
        for _, pipe in workers:
            pipe.send(start_at)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        window = CpuWindow(server.process.pid)
        await asyncio.sleep(seconds)
        window.stop()
        reports = [await _recv(pipe, 30) for _, pipe in workers]
    finally:
        for process, pipe in workers:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
            pipe.close()
    for report in reports:
        if "error" in report:
            raise BenchError(f"heartbeat worker failed: {report['error']}")
    ok = sum(r["ok"] for r in reports)
    errors: Counter[str] = Counter()
    for r in reports:
        errors.update(r["errors"])
    elapsed = max(r["seconds"] for r in reports)
    cpu = window.figures(workers_cpu_s=sum(r["cpu_s"] for r in reports))
    return {
        "members": len(members),
        "loadgen_processes": procs,
        "seconds": elapsed,
        "answered": ok,
        "per_second": ok / elapsed,
        "errors": dict(errors),
        # CPU per second of the run, in cores: is the server or the load generator the limit?
        "server_cpu_cores": window.server / window.elapsed,
        # Less sensitive to other load on the machine than the rate itself.
        "server_cpu_us_per_heartbeat": window.server / ok * 1e6 if ok else None,
        "loadgen_cpu_cores": [r["cpu_s"] / r["seconds"] for r in reports],
        "background_cpu_cores": cpu["background_cpu_cores"],
    }


# --- the servers ----------------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env


_EMBEDDED_INLINE = """
import asyncio, signal
from coordinator_api.server import CoordinatorConfig, CoordinatorServer
async def main():
    server = CoordinatorServer(host="127.0.0.1", port=0, topics={"bench": %d},
        config=CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=1000,
                                 heartbeat_hold_ms=0))
    await server.start()
    print(f"coordinator listening on {server.bootstrap_servers}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.close()
asyncio.run(main())
"""


def _start(kind: str, argv: list[str], log_path: Path, notes: list[str], stdin: Any = None) -> Server:
    log = open(log_path, "w")  # noqa: SIM115 - lives as long as the server
    process = subprocess.Popen(
        argv, stdin=stdin, stdout=subprocess.PIPE, stderr=log, text=True, env=_child_env(), cwd=REPO
    )
    found: list[str] = []

    def read_stdout() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if not found:
                match = re.search(r"listening on (\S+:\d+)", line)
                if match:
                    found.append(match.group(1))
            log.write(line)

    threading.Thread(target=read_stdout, daemon=True).start()
    deadline = time.monotonic() + 30
    while not found:
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise BenchError(f"{kind} server did not start; see {log_path}")
        time.sleep(0.02)
    return Server(kind=kind, address=found[0], process=process, notes=notes)


def start_embedded(results_dir: Path, log_level: str | None) -> Server:
    cli = [sys.executable, "-m", "coordinator_api"]
    has_cli = (
        subprocess.run(
            [*cli, "serve", "--help"],
            check=False,
            capture_output=True,
            env=_child_env(),
            cwd=REPO,
            timeout=60,
        ).returncode
        == 0
    )
    if has_cli:
        argv = [*cli]
        if log_level:
            argv += ["--log-level", log_level]
        argv += [
            "serve",
            "--port",
            "0",
            "--initial-rebalance-delay-ms",
            "0",
            "--min-session-timeout-ms",
            "1000",
            # Heartbeats answered at once, as by the mock and by Kafka: B measures request handling.
            "--heartbeat-hold-ms",
            "0",
            "--topic",
            f"{TOPIC}:{PARTITIONS}",
        ]
        notes = ["started with: python " + " ".join(argv[1:])]
    else:
        argv = [sys.executable, "-c", _EMBEDDED_INLINE % PARTITIONS]
        notes = ["`coordinator_api serve` unavailable: started CoordinatorServer inline"]
    return _start(EMBEDDED, argv, results_dir / "embedded-server.log", notes)


def start_mock(results_dir: Path, initial_delay_ms: int | None) -> Server:
    argv = [sys.executable, str(Path(__file__).resolve()), "--serve-mock"]
    if initial_delay_ms is not None:
        argv += ["--mock-initial-rebalance-delay-ms", str(initial_delay_ms)]
    notes = [
        "group.initial.rebalance.delay.ms = "
        + (f"{initial_delay_ms} (set)" if initial_delay_ms is not None else "3000 (librdkafka default)")
    ]
    return _start(MOCK, argv, results_dir / "mock-server.log", notes, stdin=subprocess.PIPE)


def stop(server: Server) -> None:
    process = server.process
    if process.poll() is None:
        if server.kind == MOCK:
            assert process.stdin is not None
            process.stdin.close()  # the mock child exits when its stdin closes
        else:
            process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_mock(initial_delay_ms: int | None) -> int:
    """Child process: run librdkafka's mock cluster until stdin closes."""
    from coordinator_api.testing import LibrdkafkaMockCluster

    with LibrdkafkaMockCluster(brokers=1) as cluster:
        cluster.create_topic(TOPIC, PARTITIONS)
        if initial_delay_ms is not None:
            # Not wrapped by LibrdkafkaMockCluster: call rd_kafka_mock_group_initial_rebalance_delay_ms
            # on the same (already loaded) library.
            lib = ctypes.CDLL(str(cluster._lib.path))  # type: ignore[union-attr]
            fn = lib.rd_kafka_mock_group_initial_rebalance_delay_ms
            fn.argtypes = [ctypes.c_void_p, ctypes.c_int32]
            fn.restype = None
            fn(cluster._mcluster, initial_delay_ms)
        print(f"mock listening on {cluster.bootstrap_servers}", flush=True)
        sys.stdin.read()
    return 0


def librdkafka_version() -> str:
    try:
        from coordinator_api.testing._librdkafka_mock import _find_bundled_library

        lib = ctypes.CDLL(str(_find_bundled_library()))
        lib.rd_kafka_version_str.restype = ctypes.c_char_p
        return str(lib.rd_kafka_version_str().decode())
    except Exception as exc:  # informational only
        return f"unknown ({exc})"


# --- the run ---------------------------------------------------------------------------------------


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _cores(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} cores"


def background_load(seconds: float = 1.0) -> float:
    """Busy CPU (in cores) on this machine before the servers start."""
    window = CpuWindow(os.getpid())
    time.sleep(seconds)
    return window.stop().figures()["background_cpu_cores"] or 0.0


async def run_benchmark(args: argparse.Namespace, results_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    idle_check = background_load()
    if idle_check > 0.25:
        print(
            f"warning: other processes keep {idle_check:.2f} of {os.cpu_count()} cores busy; "
            "figures will be lower and noisier than on an idle machine",
            flush=True,
        )
    servers = {EMBEDDED: start_embedded(results_dir, args.embedded_log_level)}
    try:
        servers[MOCK] = start_mock(results_dir, args.mock_initial_rebalance_delay_ms)
        offered = {kind: await api_versions(s.address) for kind, s in servers.items()}
        announced = common_versions(offered[EMBEDDED], offered[MOCK])
        chosen, findings = await working_versions({k: s.address for k, s in servers.items()}, announced)
        v = Versions.from_keys(chosen)
        print(
            "protocol versions announced by both: "
            + ", ".join(f"{API_NAMES[k]} v{announced[k][1]}" for k in API_NAMES)
            + f", ApiVersions v{announced[API_VERSIONS_KEY][1]}",
            flush=True,
        )
        for finding in findings:
            print(f"  ! {finding}", flush=True)
        print(
            "protocol versions used against both: "
            + ", ".join(f"{API_NAMES[k]} v{chosen[k]}" for k in API_NAMES)
            + f", ApiVersions v{chosen[API_VERSIONS_KEY]}",
            flush=True,
        )
        report: dict[str, Any] = {
            "versions_offered": {
                k: {str(key): list(r) for key, r in sorted(o.items()) if key in (18, *API_NAMES)}
                for k, o in offered.items()
            },
            "versions_announced_by_both": {
                API_NAMES.get(k, "ApiVersions"): high for k, (_, high) in announced.items()
            },
            "versions_used": {API_NAMES.get(k, "ApiVersions"): n for k, n in chosen.items()},
            "version_findings": findings,
            "background_cpu_cores_before_start": idle_check,
            "join": [],
            "heartbeat": [],
        }

        # Metric A: sizes x repeats, the two servers alternating.
        for size in args.members:
            samples: dict[str, list[dict[str, Any]]] = {EMBEDDED: [], MOCK: []}
            for _ in range(args.repeats):
                for kind, server in servers.items():
                    figures, _, _ = await form_group(server, size, v, args)
                    samples[kind].append(figures)
                    if figures["ok"]:
                        shown = (
                            f"{figures['ms']:9.1f} ms (join phase {figures['join_phase_ms']:.1f}, "
                            f"sync phase {figures['sync_phase_ms']:.1f})"
                        )
                    else:
                        shown = f"FAILED ({figures['failure']})"
                    print(
                        f"  join {size:>4} members  {SERVER_LABELS[kind]:<21} {shown}"
                        f"  generation {figures['generation']}"
                        f"  cpu: server {figures['server_cpu_s']:.2f} s, load-gen "
                        f"{figures['loadgen_cpu_s']:.2f} s, other {_cores(figures['background_cpu_cores'])}"
                        f"  errors {figures['errors'] or '-'}",
                        flush=True,
                    )
            report["join"].append(
                {
                    "members": size,
                    **{
                        kind: {
                            "median_ms": median([s["ms"] for s in runs if s["ok"]]),
                            "median_join_phase_ms": median([s["join_phase_ms"] for s in runs if s["ok"]]),
                            "median_sync_phase_ms": median([s["sync_phase_ms"] for s in runs if s["ok"]]),
                            "failures": sum(not s["ok"] for s in runs),
                            "samples": runs,
                        }
                        for kind, runs in samples.items()
                    },
                }
            )

        # Metric B: one stable group per server; runs alternate between the servers.
        if args.heartbeat_members > 0 and args.heartbeat_seconds > 0:
            size = args.heartbeat_members
            groups: dict[str, tuple[list[Member], str]] = {}
            runs: dict[tuple[str, int], list[dict[str, Any]]] = {
                (kind, procs): [] for kind in servers for procs in args.heartbeat_procs
            }
            try:
                for kind, server in servers.items():
                    figures, members, group_id = await form_group(server, size, v, args, keep=True)
                    if not figures["ok"]:
                        raise BenchError(f"{kind}: no stable heartbeat group: {figures['failure']}")
                    groups[kind] = (members, group_id)
                for _ in range(args.repeats):
                    for procs in args.heartbeat_procs:
                        for kind, server in servers.items():
                            members, group_id = groups[kind]
                            row = await heartbeat_run(
                                server, v, group_id, members, procs, args.heartbeat_seconds
                            )
                            runs[(kind, procs)].append(row)
                            print(
                                f"  heartbeat {size:>4} members, {procs} load-gen proc(s)  "
                                f"{SERVER_LABELS[kind]:<21} {row['per_second']:>9,.0f}/s  "
                                f"cpu: server {row['server_cpu_cores']:.2f} "
                                f"({row['server_cpu_us_per_heartbeat'] or 0:.1f} µs/heartbeat), load-gen "
                                + "+".join(f"{u:.2f}" for u in row["loadgen_cpu_cores"])
                                + f", other {_cores(row['background_cpu_cores'])}"
                                + f"  errors {row['errors'] or '-'}",
                                flush=True,
                            )
            finally:
                for members, group_id in groups.values():
                    await leave_and_close(members, v, group_id)
            for procs in args.heartbeat_procs:
                report["heartbeat"].append(
                    {
                        "members": size,
                        "loadgen_processes": procs,
                        **{
                            kind: {
                                # Other processes can only take throughput away: the best run is
                                # the one they disturbed least.
                                "best_per_second": max(r["per_second"] for r in runs[(kind, procs)]),
                                "median_per_second": median([r["per_second"] for r in runs[(kind, procs)]]),
                                "median_server_cpu_us_per_heartbeat": median(
                                    [
                                        r["server_cpu_us_per_heartbeat"]
                                        for r in runs[(kind, procs)]
                                        if r["server_cpu_us_per_heartbeat"] is not None
                                    ]
                                ),
                                "samples": runs[(kind, procs)],
                            }
                            for kind in servers
                        },
                    }
                )
        report["servers"] = {kind: {"address": s.address, "notes": s.notes} for kind, s in servers.items()}
    finally:
        for server in servers.values():
            stop(server)
    report["wall_seconds"] = time.perf_counter() - started
    return report


def ratio_text(ours: float | None, mock: float | None, lower_is_better: bool) -> str:
    if not ours or not mock:
        return "n/a"
    r = ours / mock
    if lower_is_better:
        verdict = "ours better" if r < 1 else "ours worse"
        return f"{r:.3g}x (lower is better: {verdict})"
    verdict = "ours better" if r > 1 else "ours worse"
    return f"{r:.3g}x (higher is better: {verdict})"


def _ms_cell(figures: dict[str, Any], key: str) -> str:
    value = figures[key]
    text = f"{value:,.1f} ms" if value is not None else "failed"
    return text + (f" ({figures['failures']} failed)" if figures["failures"] else "")


def table(report: dict[str, Any]) -> str:
    """The results as a Markdown table."""
    rows = [("metric", "size", "embedded coordinator", "librdkafka mock", "ratio ours / mock")]
    for key, label in (
        ("median_ms", "time to stable generation (median)"),
        ("median_sync_phase_ms", "… of which after the join phase closed (median)"),
    ):
        for row in report["join"]:
            ours, mock = row[EMBEDDED], row[MOCK]
            rows.append(
                (
                    label,
                    f"{row['members']} members",
                    _ms_cell(ours, key),
                    _ms_cell(mock, key),
                    ratio_text(ours[key], mock[key], lower_is_better=True),
                )
            )
    for row in report["heartbeat"]:
        ours, mock = row[EMBEDDED], row[MOCK]
        procs = row["loadgen_processes"]
        rows.append(
            (
                f"heartbeats/s, {procs} load-gen process{'es' if procs > 1 else ''} (best; median)",
                f"{row['members']} members",
                f"{ours['best_per_second']:,.0f}/s; {ours['median_per_second']:,.0f}/s",
                f"{mock['best_per_second']:,.0f}/s; {mock['median_per_second']:,.0f}/s",
                ratio_text(ours["best_per_second"], mock["best_per_second"], lower_is_better=False),
            )
        )
    for row in report["heartbeat"]:
        ours, mock = row[EMBEDDED], row[MOCK]
        procs = row["loadgen_processes"]
        key = "median_server_cpu_us_per_heartbeat"
        rows.append(
            (
                f"server CPU per heartbeat, {procs} load-gen process{'es' if procs > 1 else ''} (median)",
                f"{row['members']} members",
                f"{ours[key]:.1f} µs" if ours[key] is not None else "n/a",
                f"{mock[key]:.1f} µs" if mock[key] is not None else "n/a",
                ratio_text(ours[key], mock[key], lower_is_better=True),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Embedded coordinator vs librdkafka mock cluster: group formation time "
        "and heartbeat rate, same client workload."
    )
    p.add_argument("--members", type=int, nargs="+", default=[10, 100, 500], help="group sizes for metric A")
    p.add_argument("--heartbeat-members", type=int, default=100, help="members heartbeating in metric B")
    p.add_argument("--heartbeat-seconds", type=float, default=5.0, help="duration of each heartbeat run")
    p.add_argument(
        "--heartbeat-procs",
        type=int,
        nargs="+",
        default=[1, 2],
        help="load-generator process counts for metric B (each measured against both servers)",
    )
    p.add_argument("--repeats", type=int, default=3, help="fresh groups per size (the median is reported)")
    p.add_argument("--quick", action="store_true", help="tiny sizes for a smoke test")
    p.add_argument("--output", type=Path, default=None, help=f"JSON results (default {DEFAULT_OUTPUT})")
    p.add_argument(
        "--heartbeat-interval-ms",
        type=int,
        default=3000,
        help="while metric A waits for the rest of the group, a synced member heartbeats this often "
        "(Kafka's heartbeat.interval.ms default) to learn of a new rebalance",
    )
    p.add_argument(
        "--leader-wait-ms",
        type=int,
        default=5000,
        help="longest the leader waits for every follower's SyncGroup to be sent before its own",
    )
    p.add_argument(
        "--leader-sync-delay-ms",
        type=float,
        default=1.0,
        help="after every follower's SyncGroup is sent, the leader waits this long before its own "
        "(the mock answers INVALID_REQUEST to a follower SyncGroup it reads after the leader's)",
    )
    p.add_argument(
        "--trial-timeout", type=float, default=120.0, help="seconds before a group counts as failed"
    )
    p.add_argument(
        "--mock-initial-rebalance-delay-ms",
        type=int,
        default=None,
        help="set the mock's group.initial.rebalance.delay.ms (librdkafka default 3000)",
    )
    p.add_argument(
        "--embedded-log-level",
        default=None,
        help="--log-level for the embedded coordinator (default: the CLI's own, INFO)",
    )
    p.add_argument("--serve-mock", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.members = [3]
        args.heartbeat_members = 4
        args.heartbeat_seconds = 1.0
        args.repeats = 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.serve_mock:
        return serve_mock(args.mock_initial_rebalance_delay_ms)
    output = args.output or DEFAULT_OUTPUT
    output.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"embedded coordinator vs librdkafka mock: members {args.members}, repeats {args.repeats}, "
        f"heartbeats {args.heartbeat_members} members x {args.heartbeat_seconds:g} s "
        f"with {args.heartbeat_procs} load-gen process(es)",
        flush=True,
    )
    report = asyncio.run(run_benchmark(args, output.parent))
    report["config"] = {
        "members": args.members,
        "repeats": args.repeats,
        "heartbeat_members": args.heartbeat_members,
        "heartbeat_seconds": args.heartbeat_seconds,
        "heartbeat_procs": args.heartbeat_procs,
        "heartbeat_interval_ms": args.heartbeat_interval_ms,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
        "topic": f"{TOPIC}:{PARTITIONS}",
        "quick": args.quick,
    }
    import kafka

    report["environment"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "kafka_python": kafka.__version__,
        "librdkafka": librdkafka_version(),
    }
    text = table(report)
    print()
    print(text)
    print(f"\nwall time {report['wall_seconds']:.1f} s; results in {output}")
    report["table"] = text
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    failed = any(row[k]["failures"] for row in report["join"] for k in (EMBEDDED, MOCK))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
