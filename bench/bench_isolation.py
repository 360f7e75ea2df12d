#!/usr/bin/env python3
"""Benchmark: does an attack on the server disturb a healthy group beside it, or its memory?

Issue 15's attacks, each against a server that also serves a healthy group:

* **A**: CreateTopics of one topic as wide as the embedded coordinator allows
  (``max_partitions_per_topic``, 10,000), then 20 connections each pipelining 50 Metadata
  requests for every topic and never reading an answer;
* **B**: 8 connections each announcing a request of ``max_request_bytes`` and sending 60 MB of
  it, never the rest (``queued_max_request_bytes`` bounds what all connections hold together);
* **C**: 300 connections each announcing a request and trickling one byte of it every 2 s
  (``request_arrival_timeout_ms`` bounds how long a request may take to arrive);
* **D**: 100,000 JoinGroups with empty member ids and 30-minute sessions to one group (KIP-394:
  each is answered MEMBER_ID_REQUIRED with an id the server keeps for the session;
  ``max_pending_members`` bounds them per group), and beside them a real member's first join
  to that group.

The healthy group beside it: two librdkafka consumers (confluent-kafka, classic protocol,
10 s sessions) in threads of this process, with rebalance callbacks and librdkafka's own
rebalance count, and a heartbeat probe, a one-member classic group on its own connection that
heartbeats every 100 ms and times each round trip. Measured for a few seconds before the attack
(baseline) and during it: the probe's p50 / p99 / max round trip, whether every probe heartbeat
was answered, whether the librdkafka group rebalanced, and the server process's peak RSS (psutil)
against the configured budget. Issue 15's goal: the probe's p99 within 50 ms during every attack,
no rebalance, and memory growth within the budget.

Servers, same run, same attacks: the embedded coordinator (``python -m coordinator_api serve``
with a config file that sets every budget) and Apache Kafka 4's broker (``KafkaCluster(brokers=1)``)
with Kafka's own equivalents set to the same values (``queued.max.request.bytes``,
``socket.request.max.bytes``, ``max.connections.per.ip``, ``connections.max.idle.ms``); Kafka has no
counterpart of ``request_arrival_timeout_ms``, ``max_pending_members`` or
``max_partitions_per_topic``, which the table says. Each attack runs in a child process of this
script, so the probe's process never waits on the attacker's GIL.

Run ``python bench/bench_isolation.py --help``; docs/benchmarks.md ("Attacks beside a healthy group")
has the method, the latest table and the caveats.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psutil  # type: ignore[import-untyped]
from bench_incremental import (
    BenchError,
    CpuWindow,
    Server,
    _child_env,
    _error_name,
    _librdkafka_version,
    _markdown,
    _start_child,
    ratio_text,
    stop_server,
)
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription
from kafka.protocol.metadata import MetadataRequest

from coordinator_api._protocol import ErrorCode

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "bench" / "results" / "isolation.json"
HOST = "127.0.0.1"
CLIENT_ID = "bench-isolation"
MiB = 1 << 20
EMBEDDED, KAFKA = "embedded", "kafka"
SERVER_LABELS = {EMBEDDED: "embedded coordinator", KAFKA: "Apache Kafka broker"}
ATTACKS = ("A", "B", "C", "D")
ATTACK_LABELS = {
    "A": "A: wide topic, Metadata flood",
    "B": "B: 8 partial 60 MB requests",
    "C": "C: 300 trickling requests",
    "D": "D: 100,000 pending member ids",
}
GOAL_P99_MS = 50.0  # issue 15: a healthy group's heartbeat answered within 50 ms at the 99th percentile

HEALTHY_TOPIC = "healthy"
HEALTHY_PARTITIONS = 4
WIDE_TOPIC = "wide"
JOIN_VERSION, SYNC_VERSION, HEARTBEAT_VERSION = 5, 3, 3  # served by both servers
METADATA_VERSION = 9
CREATE_TOPICS_VERSION, CREATE_PARTITIONS_VERSION = 2, 1
SUBSCRIPTION = bytes(ConsumerProtocolSubscription(version=0, topics=[HEALTHY_TOPIC], user_data=b"").encode())
RETRIABLE = {
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.REBALANCE_IN_PROGRESS,
}
# An attack whose active part must finish inside its window (the window is extended until it
# has): A creates its topic and sends its floods, D sends all its JoinGroups. B and C run for the
# window and are then stopped.
MUST_FINISH = frozenset({"A", "D"})


def now() -> float:
    # CLOCK_MONOTONIC: the same clock in the attacker's process, so its timestamps compare.
    return time.monotonic()


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if host != HOST:
        raise BenchError(f"refusing to connect to {address}: only {HOST} is allowed")
    return host, int(port)


# --- the wire, on blocking sockets ------------------------------------------------------------------


def request_bytes(request: Any, correlation_id: int) -> bytes:
    """``request`` encoded with its header, framed (kafka-python's message classes)."""
    request.with_header(correlation_id=correlation_id, client_id=CLIENT_ID)
    return bytes(request.encode(header=True, framed=True))


def raw_header(api_key: int, api_version: int, correlation_id: int = 7) -> bytes:
    """A non-flexible request header, as an attacker writes it by hand."""
    client = b"attacker"
    return struct.pack(">hhih", api_key, api_version, correlation_id, len(client)) + client


def read_exact(stream: IO[bytes], n: int) -> bytes:
    data = stream.read(n)
    if data is None or len(data) < n:
        raise ConnectionError("the server closed the connection")
    return data


def read_frame(stream: IO[bytes]) -> bytes:
    (size,) = struct.unpack(">i", read_exact(stream, 4))
    return read_exact(stream, size)


def still_open(sock: socket.socket) -> bool:
    """True unless the server has closed or reset ``sock`` (nothing is consumed)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)  # a socket with a timeout would wait for data first, even with MSG_DONTWAIT
    try:
        return bool(sock.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        sock.settimeout(timeout)


class RawClient:
    """One blocking connection that sends a request and reads its answer, one at a time."""

    def __init__(self, address: str, timeout: float) -> None:
        self.sock = socket.create_connection(split_address(address), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._reader = self.sock.makefile("rb")
        self._correlation = 0

    def call(self, request: Any, response_cls: Any) -> tuple[Any, float]:
        """Send ``request``; return the decoded answer and when its last byte arrived."""
        self._correlation += 1
        self.sock.sendall(request_bytes(request, self._correlation))
        payload = read_frame(self._reader)
        arrived = now()
        response = response_cls.decode(payload, version=request.version, header=True)
        if response.header.correlation_id != self._correlation:
            raise BenchError(f"answer {response.header.correlation_id} to request {self._correlation}")
        return response, arrived

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._reader.close()
            self.sock.close()


# --- the healthy group: a heartbeat probe ---------------------------------------------------------


@dataclass
class Beat:
    """One probe heartbeat: when it was sent, its round trip once answered, and how it ended."""

    sent: float
    latency_s: float | None = None
    outcome: str = "waiting"  # "NONE", a Kafka error name, or "failed: ..." (the connection broke)


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (``q`` in 0..1); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


class HeartbeatProbe:
    """A one-member classic group on its own connection, heartbeating every ``interval_s`` and
    timing each round trip (from just before the request is written to the answer's last byte).

    The next heartbeat goes out ``interval_s`` after the previous one was sent, or as soon as it
    is answered if that took longer. A heartbeat answered with an error (the member expired while
    the server could not read its heartbeats) is recorded, and the probe joins again.
    """

    def __init__(self, address: str, group: str, session_ms: int, interval_s: float) -> None:
        self.address, self.group = address, group
        self.session_ms, self.interval_s = session_ms, interval_s
        self.beats: list[Beat] = []
        self.rejoins: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._client: RawClient | None = None
        self._member_id = ""
        self._generation = -1
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._join(deadline=now() + 60)
        self._thread = threading.Thread(target=self._run, name=f"probe-{self.group}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        client = self._client
        if client is not None:  # a heartbeat the server never answers ends here, as a failure
            with contextlib.suppress(OSError):
                client.sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(30)
        if self._client is not None:
            self._client.close()

    def _join(self, deadline: float) -> None:
        """Join (MEMBER_ID_REQUIRED, then again with the id) and sync, retrying while the
        coordinator is loading; on a fresh connection."""
        if self._client is not None:
            self._client.close()
        # A heartbeat may wait as long as the server cannot read it: the timeout only ends a hang.
        self._client = RawClient(self.address, timeout=120)
        self._member_id, self._generation = "", -1
        protocol = JoinGroupRequest.JoinGroupRequestProtocol
        while True:
            if now() > deadline:
                raise BenchError(f"the probe could not join group {self.group}")
            joined, _ = self._client.call(
                JoinGroupRequest(
                    version=JOIN_VERSION,
                    group_id=self.group,
                    session_timeout_ms=self.session_ms,
                    rebalance_timeout_ms=self.session_ms,
                    member_id=self._member_id,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocols=[protocol(name="range", metadata=SUBSCRIPTION)],
                ),
                JoinGroupResponse,
            )
            if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:
                self._member_id = joined.member_id
                continue
            if joined.error_code in RETRIABLE:
                time.sleep(0.1)
                continue
            if joined.error_code != ErrorCode.NONE:
                raise BenchError(f"probe JoinGroup: {_error_name(joined.error_code)}")
            self._member_id, self._generation = joined.member_id, joined.generation_id
            assignment = SyncGroupRequest.SyncGroupRequestAssignment
            synced, _ = self._client.call(
                SyncGroupRequest(
                    version=SYNC_VERSION,
                    group_id=self.group,
                    generation_id=self._generation,
                    member_id=self._member_id,
                    group_instance_id=None,
                    assignments=[assignment(member_id=self._member_id, assignment=b"")],
                ),
                SyncGroupResponse,
            )
            if synced.error_code == ErrorCode.NONE:
                return
            if synced.error_code not in RETRIABLE:
                raise BenchError(f"probe SyncGroup: {_error_name(synced.error_code)}")

    def _run(self) -> None:
        next_at = now()
        while not self._stop.wait(max(0.0, next_at - now())):
            beat = Beat(sent=now())
            with self.lock:
                self.beats.append(beat)
            next_at = beat.sent + self.interval_s
            try:
                assert self._client is not None
                answer, arrived = self._client.call(
                    HeartbeatRequest(
                        version=HEARTBEAT_VERSION,
                        group_id=self.group,
                        generation_id=self._generation,
                        member_id=self._member_id,
                        group_instance_id=None,
                    ),
                    HeartbeatResponse,
                )
            except (OSError, BenchError) as exc:
                beat.outcome = f"failed: {exc!r}"
                self._rejoin(beat.outcome)
                continue
            beat.latency_s = arrived - beat.sent
            beat.outcome = _error_name(answer.error_code)
            if answer.error_code != ErrorCode.NONE:
                self._rejoin(beat.outcome)

    def _rejoin(self, why: str) -> None:
        with self.lock:
            self.rejoins.append((now(), why))
        while not self._stop.is_set():
            try:
                self._join(deadline=now() + 60)
                return
            except (OSError, BenchError):
                self._stop.wait(0.5)

    def window(self, t0: float, t1: float) -> dict[str, Any]:
        """Heartbeats sent in [t0, t1): how many, how each ended, and their waits.

        One still unanswered counts with the time it has waited so far (a lower bound). The
        percentiles are corrected for coordinated omission, as HdrHistogram corrects it: a
        heartbeat that waited W stands for the ones the probe, heartbeating every interval I,
        would have sent while it waited, which would have waited W - I, W - 2I, ... (those of at
        least I). Without that, a server that stalls for 10 s costs one slow sample among a
        hundred quick ones, and its p99 would look fine. ``raw_p99_ms`` is the uncorrected one.
        """
        at = now()
        with self.lock:
            beats = [b for b in self.beats if t0 <= b.sent < t1]
            rejoins = [why for t, why in self.rejoins if t0 <= t < t1]
        waits = [
            (b.latency_s if b.latency_s is not None else at - b.sent) * 1000
            for b in beats
            if b.latency_s is not None or not b.outcome.startswith("failed")
        ]
        interval_ms = self.interval_s * 1000
        corrected = list(waits)
        for wait in waits:
            missed = wait - interval_ms
            while missed >= interval_ms:
                corrected.append(missed)
                missed -= interval_ms
        outcomes = Counter(b.outcome for b in beats)
        return {
            "sent": len(beats),
            "answered_none": outcomes.pop("NONE", 0),
            "unanswered": outcomes.pop("waiting", 0),
            "other_outcomes": dict(outcomes),
            "rejoins": rejoins,
            "p50_ms": percentile(corrected, 0.5),
            "p99_ms": percentile(corrected, 0.99),
            "max_ms": max(waits, default=None),
            "raw_p99_ms": percentile(waits, 0.99),
            "samples_with_correction": len(corrected),
        }


# --- the healthy group: librdkafka consumers ----------------------------------------------------


class LibrdkafkaMember:
    """A confluent-kafka (librdkafka) consumer of the classic protocol in its own thread. It records
    its rebalance callbacks, the errors it reports, and librdkafka's own rebalance count (from its
    statistics, ``cgrp.rebalance_cnt``)."""

    def __init__(self, address: str, group: str, name: str, session_ms: int, heartbeat_ms: int) -> None:
        self.address, self.group, self.name = address, group, name
        self.session_ms, self.heartbeat_ms = session_ms, heartbeat_ms
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, int]] = []  # (when, assigned | revoked | lost, partitions)
        self.owned = 0
        self.errors: list[tuple[float, str]] = []
        self.rebalance_cnt: list[tuple[float, int]] = []
        self.failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"librdkafka-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def _record(self, kind: str, partitions: int) -> None:
        with self.lock:
            self.events.append((now(), kind, partitions))
            self.owned = partitions if kind == "assigned" else 0

    def _error(self, text: str) -> None:
        with self.lock:
            self.errors.append((now(), text))

    def _stats(self, stats: str) -> None:
        count = json.loads(stats).get("cgrp", {}).get("rebalance_cnt")
        if isinstance(count, int):
            with self.lock:
                self.rebalance_cnt.append((now(), count))

    def _run(self) -> None:
        from confluent_kafka import Consumer

        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": self.address,
                    "group.id": self.group,
                    "client.id": self.name,
                    "group.protocol": "classic",
                    "session.timeout.ms": self.session_ms,
                    "heartbeat.interval.ms": self.heartbeat_ms,
                    "enable.auto.commit": False,
                    "statistics.interval.ms": 1000,
                    "stats_cb": self._stats,
                    "error_cb": lambda err: self._error(str(err)),
                    "log_level": 0,
                }
            )
            consumer.subscribe(
                [HEALTHY_TOPIC],
                on_assign=lambda c, tps: self._record("assigned", len(tps)),
                on_revoke=lambda c, tps: self._record("revoked", len(tps)),
                on_lost=lambda c, tps: self._record("lost", len(tps)),
            )
            while not self._stop.is_set():
                message = consumer.poll(0.1)  # no records here: callbacks and errors only
                if message is not None and message.error() is not None:
                    self._error(str(message.error()))
            consumer.close()
        except Exception as exc:
            self.failure = repr(exc)

    def count_at(self, t: float) -> int | None:
        """librdkafka's rebalance count in its last statistics before ``t``."""
        with self.lock:
            before = [c for at, c in self.rebalance_cnt if at <= t]
        return before[-1] if before else None

    def events_between(self, t0: float, t1: float) -> list[tuple[float, str, int]]:
        with self.lock:
            return [e for e in self.events if t0 <= e[0] < t1]

    def first_assigned(self) -> float | None:
        with self.lock:
            return next((t for t, kind, n in self.events if kind == "assigned" and n > 0), None)


class HealthyGroup:
    """Two librdkafka consumers of one group sharing the healthy topic."""

    def __init__(self, address: str, group: str, session_ms: int, heartbeat_ms: int) -> None:
        self.group = group
        self.members = [
            LibrdkafkaMember(address, group, f"{group}-{i}", session_ms, heartbeat_ms) for i in (0, 1)
        ]

    def start(self) -> None:
        for m in self.members:
            m.start()

    def stop(self) -> None:
        for m in self.members:
            m.stop()

    def stable(self) -> bool:
        owned = [m.owned for m in self.members]
        return min(owned) > 0 and sum(owned) == HEALTHY_PARTITIONS

    def wait_stable(self, timeout: float, quiet_s: float) -> None:
        """Until each member owns some of the partitions, all are owned, and no callback ran
        for ``quiet_s``."""
        deadline = now() + timeout
        while True:
            failures = [m.failure for m in self.members if m.failure]
            if failures:
                raise BenchError(f"healthy group {self.group}: {failures}")
            last = max((e[0] for m in self.members for e in m.events), default=now())
            if self.stable() and now() - last >= quiet_s:
                return
            if now() > deadline:
                raise BenchError(
                    f"healthy group {self.group} not stable within {timeout:.0f} s: "
                    f"owned {[m.owned for m in self.members]}"
                )
            time.sleep(0.05)

    def disturbance(self, t0: float, t1: float) -> dict[str, Any]:
        """Rebalance callbacks in [t0, t1) and librdkafka's rebalance counts across it."""
        events = [
            (m.name, kind, n, round(t - t0, 3))
            for m in self.members
            for t, kind, n in m.events_between(t0, t1)
        ]
        counts = [(m.count_at(t0), m.count_at(t1)) for m in self.members]
        grew = [b - a for a, b in counts if a is not None and b is not None]
        errors = [(m.name, text) for m in self.members for t, text in m.errors if t0 <= t < t1]
        return {
            "rebalanced": bool(events) or any(g > 0 for g in grew),
            "callbacks": events,
            "rebalance_cnt_growth": grew,
            "client_errors": errors[:20],
        }


# --- the server's memory -------------------------------------------------------------------------


class RssSampler:
    """The resident set size of a process, sampled every ``interval_s`` in a thread."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self._process = psutil.Process(pid)
        self._interval_s = interval_s
        self.samples: list[tuple[float, int]] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"rss-{pid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                rss = self._process.memory_info().rss
            except psutil.Error:
                return
            with self.lock:
                self.samples.append((now(), rss))

    def between(self, t0: float, t1: float) -> list[int]:
        with self.lock:
            return [rss for t, rss in self.samples if t0 <= t < t1]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


# --- the attacks (run in a child process: --attack-worker) ----------------------------------------


class WorkerControl:
    """The attacker's side of its conversation with the bench: ``go`` and ``stop`` arrive on
    stdin (end of input stops too); ``ready``, ``started``, ``progress``, ``done`` and the
    ``summary`` go to stdout."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._done = False
        self.started_at = 0.0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in sys.stdin:
            if line.strip() == "go":
                self.go.set()
            elif line.strip() == "stop":
                break
        self.go.set()
        self.stop.set()

    def emit(self, *words: object) -> None:
        with self._lock:
            print(*words, flush=True)

    def started(self) -> None:
        self.started_at = now()
        self.emit("started", repr(self.started_at))

    def done(self) -> None:
        if not self._done:
            self._done = True
            self.emit("done", repr(now()))

    def since_start(self) -> float:
        return now() - self.started_at


def create_topic(client: RawClient, name: str, partitions: int) -> tuple[int, str | None]:
    topic = CreateTopicsRequest.CreatableTopic
    answer, _ = client.call(
        CreateTopicsRequest(
            version=CREATE_TOPICS_VERSION,
            topics=[
                topic(name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[])
            ],
            timeout_ms=120_000,
            validate_only=False,
        ),
        CreateTopicsResponse,
    )
    (result,) = answer.topics
    return int(result.error_code), getattr(result, "error_message", None)


def attack_wide_topic_and_metadata_flood(
    address: str, p: dict[str, Any], control: WorkerControl
) -> dict[str, Any]:
    """A: the widest topic allowed, then connections pipelining Metadata for every topic, unread."""
    control.started()
    out: dict[str, Any] = {
        "partitions": p["wide_partitions"],
        "flooders": p["flooders"],
        "flood_requests": p["flood_requests"],
    }
    client = RawClient(address, timeout=300)
    code, message = create_topic(client, WIDE_TOPIC, p["wide_partitions"])
    out["create_topics"] = {
        "error": _error_name(code),
        "message": message,
        "s": round(control.since_start(), 3),
    }
    if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
        # Kafka's KRaft controller refuses more than 10,000 records in one batch, and a topic of
        # 10,000 partitions is 10,001: it is created half as wide and then grown.
        half = p["wide_partitions"] // 2
        code, message = create_topic(client, WIDE_TOPIC, half)
        grow = CreatePartitionsRequest.CreatePartitionsTopic
        grown, _ = client.call(
            CreatePartitionsRequest(
                version=CREATE_PARTITIONS_VERSION,
                topics=[grow(name=WIDE_TOPIC, count=p["wide_partitions"], assignments=None)],
                timeout_ms=120_000,
                validate_only=False,
            ),
            CreatePartitionsResponse,
        )
        out["created_in_two_steps"] = {
            "create": _error_name(code),
            "create_partitions": _error_name(grown.results[0].error_code),
            "s": round(control.since_start(), 3),
        }
    client.close()
    every_topic = b"".join(
        request_bytes(MetadataRequest(version=METADATA_VERSION, topics=None), i)
        for i in range(p["flood_requests"])
    )
    flooders = [socket.create_connection(split_address(address), timeout=30) for _ in range(p["flooders"])]
    for sock in flooders:
        sock.sendall(every_topic)  # a few hundred bytes: the socket takes it all, never read
    out["flood_sent_s"] = round(control.since_start(), 3)
    control.done()
    control.stop.wait()
    for sock in flooders:
        sock.close()
    return out


def attack_partial_requests(address: str, p: dict[str, Any], control: WorkerControl) -> dict[str, Any]:
    """B: connections each announce a request of ``max_request_bytes`` and send most of it."""
    control.started()
    size, each = p["max_request_bytes"], p["partial_bytes"]
    socks = [
        socket.create_connection(split_address(address), timeout=30) for _ in range(p["partial_connections"])
    ]
    prefix = struct.pack(">i", size) + raw_header(0, 3)  # a Produce v3, as the largest requests are
    sent = [0] * len(socks)
    closed_at: list[float | None] = [None] * len(socks)
    for i, sock in enumerate(socks):
        sock.sendall(prefix)
        sent[i] = len(prefix)
        sock.setblocking(False)
    chunk = memoryview(b"\x00" * (256 * 1024))
    last_check = 0.0
    while not control.stop.is_set():
        progress = False
        for i, sock in enumerate(socks):
            if closed_at[i] is not None or sent[i] >= each:
                continue
            try:
                sent[i] += sock.send(chunk[: min(len(chunk), each - sent[i])])
                progress = True
            except BlockingIOError:
                pass
            except OSError:
                closed_at[i] = control.since_start()
        if all(c is not None or s >= each for c, s in zip(closed_at, sent, strict=True)):
            control.done()
        if not progress:
            if now() - last_check > 0.05:
                last_check = now()
                for i, sock in enumerate(socks):
                    if closed_at[i] is None and not still_open(sock):
                        closed_at[i] = control.since_start()
            control.stop.wait(0.01)
    for sock in socks:
        sock.close()
    cut = [round(c, 2) for c in closed_at if c is not None]
    return {
        "connections": len(socks),
        "announced_bytes": size,
        "meant_to_send_bytes": each,
        "written_bytes": sum(sent),
        "written_per_connection": sent,
        "closed_by_server": len(cut),
        "closed_after_s": cut,
    }


def attack_trickle(address: str, p: dict[str, Any], control: WorkerControl) -> dict[str, Any]:
    """C: connections each start a request and send one byte of it every interval, from the moment
    each opened. A thread opens them (a server's listen backlog may hold some back for seconds)
    while the loop trickles into those already open."""
    control.started()
    interval = p["trickle_interval_s"]
    socks: list[socket.socket] = []
    opened: list[float] = []
    lock = threading.Lock()
    all_open: list[float] = []

    def open_all() -> None:
        for _ in range(p["trickle_connections"]):
            if control.stop.is_set():
                return
            sock = socket.create_connection(split_address(address), timeout=30)
            sock.sendall(struct.pack(">i", p["trickle_frame_bytes"]))  # a request never completed
            with lock:
                socks.append(sock)
                opened.append(now())
        all_open.append(control.since_start())

    opener = threading.Thread(target=open_all, daemon=True)
    opener.start()
    next_byte: list[float] = []
    closed_at: list[float | None] = []
    trickled = 0
    while not control.stop.wait(0.05):
        t = now()
        with lock:
            current = list(zip(socks, opened, strict=True))
        for i, (sock, since) in enumerate(current):
            if i == len(next_byte):
                next_byte.append(since + interval)
                closed_at.append(None)
            if closed_at[i] is not None:
                continue
            if not still_open(sock):
                closed_at[i] = t - since
            elif t >= next_byte[i]:
                next_byte[i] += interval
                try:
                    sock.send(b"\x00")
                    trickled += 1
                except OSError:
                    closed_at[i] = t - since
    opener.join(60)
    for sock in socks:
        sock.close()
    cut = sorted(c for c in closed_at if c is not None)
    return {
        "connections": len(socks),
        "all_open_s": round(all_open[0], 2) if all_open else None,
        "bytes_trickled": trickled,
        "closed_by_server": len(cut),
        "closed_after_s_min": round(cut[0], 2) if cut else None,
        "closed_after_s_median": round(statistics.median(cut), 2) if cut else None,
        "closed_after_s_max": round(cut[-1], 2) if cut else None,
    }


def attack_pending_member_ids(address: str, p: dict[str, Any], control: WorkerControl) -> dict[str, Any]:
    """D: JoinGroups with an empty member id to one group, pipelined on several connections."""
    protocol = JoinGroupRequest.JoinGroupRequestProtocol
    join = request_bytes(
        JoinGroupRequest(
            version=JOIN_VERSION,
            group_id=p["attacked_group"],
            session_timeout_ms=p["pending_session_ms"],
            rebalance_timeout_ms=30_000,
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[protocol(name="range", metadata=SUBSCRIPTION)],
        ),
        1,
    )
    counts: Counter[int] = Counter()
    lock = threading.Lock()
    failures: list[str] = []
    total, connections, window = p["joins"], p["join_connections"], p["join_window"]
    quotas = [total // connections + (1 if i < total % connections else 0) for i in range(connections)]

    def one_connection(quota: int) -> None:
        try:
            sock = socket.create_connection(split_address(address), timeout=300)
            reader = sock.makefile("rb")
            while quota and not control.stop.is_set():
                batch = min(window, quota)
                sock.sendall(join * batch)
                mine: Counter[int] = Counter()
                for _ in range(batch):
                    payload = read_frame(reader)
                    # JoinGroup v5 answer: correlation id, throttle time, then the error code.
                    mine[struct.unpack_from(">h", payload, 8)[0]] += 1
                quota -= batch
                with lock:
                    counts.update(mine)
            reader.close()
            sock.close()
        except (OSError, BenchError) as exc:
            failures.append(repr(exc))

    control.started()
    threads = [threading.Thread(target=one_connection, args=(q,), daemon=True) for q in quotas]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(0.1)
        with lock:
            control.emit("progress", sum(counts.values()))
    finished_s = control.since_start()
    control.done()
    control.stop.wait()
    return {
        "joins": total,
        "answered": sum(counts.values()),
        "answers": {_error_name(code): n for code, n in sorted(counts.items())},
        "all_answered_s": round(finished_s, 2),
        "connections": connections,
        "pipelined_per_connection": window,
        "failures": failures,
    }


ATTACK_WORKERS: dict[str, Callable[[str, dict[str, Any], WorkerControl], dict[str, Any]]] = {
    "A": attack_wide_topic_and_metadata_flood,
    "B": attack_partial_requests,
    "C": attack_trickle,
    "D": attack_pending_member_ids,
}


def attack_worker(args: argparse.Namespace) -> int:
    """Child process: run one attack from ``go`` until ``stop``, then print its summary."""
    control = WorkerControl()
    control.emit("ready")
    control.go.wait()
    cpu0 = time.process_time()
    try:
        summary = ATTACK_WORKERS[args.attack_worker](
            args.attack_address, json.loads(args.attack_params), control
        )
    except Exception as exc:
        summary = {"failure": repr(exc)}
        control.done()
    summary["attacker_cpu_s"] = round(time.process_time() - cpu0, 3)
    control.emit("summary", json.dumps(summary))
    return 0


class Attacker:
    """The bench's side of an attacker child process."""

    def __init__(self, attack: str, address: str, params: dict[str, Any], log_path: Path) -> None:
        argv = [sys.executable, str(Path(__file__).resolve()), "--attack-worker", attack]
        argv += ["--attack-address", address, "--attack-params", json.dumps(params)]
        self._log = open(log_path, "a", encoding="utf-8")  # noqa: SIM115 - the child writes to it until it ends
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=_child_env(),
            cwd=REPO,
        )
        self.ready = threading.Event()
        self.started_at: float | None = None
        self.done_at: float | None = None
        self.progress = 0
        self.summary: dict[str, Any] | None = None
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            word, _, rest = line.strip().partition(" ")
            if word == "ready":
                self.ready.set()
            elif word == "started":
                self.started_at = float(rest)
            elif word == "done":
                self.done_at = float(rest)
            elif word == "progress":
                self.progress = int(rest)
            elif word == "summary":
                self.summary = json.loads(rest)
        self.ended.set()

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(OSError):
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()

    def go(self, timeout: float = 60) -> float:
        """Start the attack; return when it started (the child's clock, which is ours)."""
        if not self.ready.wait(timeout):
            raise BenchError("the attacker process did not start")
        self._send("go")
        deadline = now() + timeout
        while self.started_at is None:
            if now() > deadline or self.ended.is_set():
                raise BenchError("the attack did not start")
            time.sleep(0.005)
        return self.started_at

    def stop(self, timeout: float = 120) -> dict[str, Any]:
        self._send("stop")
        self.ended.wait(timeout)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
        return self.summary or {"failure": "the attacker process ended without a summary"}


# --- servers -----------------------------------------------------------------------------------------


def budgets(args: argparse.Namespace) -> dict[str, int]:
    """The embedded coordinator's limits, as set in its config file."""
    return {
        "max_request_bytes": args.max_request_mib * MiB,
        "queued_max_request_bytes": args.budget_mib * MiB,
        "request_arrival_timeout_ms": args.request_arrival_timeout_ms,
        "max_pending_members": args.max_pending_members,
        "max_partitions_per_topic": args.wide_partitions,
        "max_connections_per_ip": args.max_connections_per_ip,
        "connections_max_idle_ms": args.connections_max_idle_ms,
    }


def start_embedded(results: Path, args: argparse.Namespace) -> Server:
    """``python -m coordinator_api serve`` with a config file that sets every budget."""
    settings: dict[str, int] = {
        "initial_rebalance_delay_ms": 0,
        "min_session_timeout_ms": 500,
        "max_session_timeout_ms": 1_800_000,
        # Heartbeats answered at once, as Kafka's classic coordinator answers them: a held one
        # would measure the hold, not the server's responsiveness.
        "heartbeat_hold_ms": 0,
        **budgets(args),
    }
    config = results / "isolation-embedded.toml"
    config.write_text(
        "[coordinator]\n"
        + "".join(f"{k} = {v}\n" for k, v in settings.items())
        + f'\n[topics]\n"{HEALTHY_TOPIC}" = {HEALTHY_PARTITIONS}\n',
        encoding="utf-8",
    )
    argv = [sys.executable, "-m", "coordinator_api", "serve", "--port", "0", "--config", str(config)]
    notes = ["python -m coordinator_api serve with " + ", ".join(f"{k}={v}" for k, v in settings.items())]
    return _start_child(EMBEDDED, argv, results / "isolation-embedded.log", notes)


def kafka_settings(args: argparse.Namespace) -> dict[str, str]:
    """Kafka's own equivalents of the embedded coordinator's limits, set to the same values."""
    limits = budgets(args)
    return {
        "queued.max.request.bytes": str(limits["queued_max_request_bytes"]),
        "socket.request.max.bytes": str(limits["max_request_bytes"]),
        "max.connections.per.ip": str(limits["max_connections_per_ip"]),
        "connections.max.idle.ms": str(limits["connections_max_idle_ms"]),
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "500",
        "group.max.session.timeout.ms": "1800000",
    }


def start_kafka(args: argparse.Namespace) -> Server:
    """One KRaft broker+controller of Apache Kafka 4, C2 JIT on (C1 only with --quick, a smoke
    test), the limits set as ours."""
    from coordinator_api.testing import KAFKA_VERSION, TEST_JVM_OPTIONS, KafkaCluster

    jvm = [o for o in TEST_JVM_OPTIONS if args.quick or o != "-XX:TieredStopAtLevel=1"]
    config = kafka_settings(args)
    cluster = KafkaCluster(brokers=1, heap_mb=args.kafka_heap_mb, jvm_options=jvm, broker_config=config)
    cluster.start()
    try:
        cluster.create_topic(HEALTHY_TOPIC, HEALTHY_PARTITIONS, replication_factor=1)
        broker = cluster.broker(1)
        assert broker.pid is not None
        notes = [
            f"Apache Kafka {KAFKA_VERSION}: KafkaCluster(brokers=1, heap_mb={args.kafka_heap_mb}), "
            + ("C1 only (--quick)" if args.quick else "C2 enabled")
            + "; "
            + ", ".join(f"{k}={v}" for k, v in config.items())
        ]
        return Server(kind=KAFKA, address=broker.address, pid=broker.pid, notes=notes, cluster=cluster)
    except BaseException:
        cluster.close()
        raise


def stop(server: Server, results: Path) -> None:
    if server.cluster is not None:
        log = server.cluster.broker(1).directory / "logs" / "server.log"
        if log.exists():
            shutil.copyfile(log, results / "isolation-kafka.log")
        server.cluster.close()
    else:
        stop_server(server, results)


@dataclass
class Target:
    """A running server with its healthy group, its probe and its memory sampler."""

    server: Server
    healthy: HealthyGroup
    probe: HeartbeatProbe
    rss: RssSampler


def attach(server: Server, args: argparse.Namespace) -> Target:
    """Start the healthy group and the probe on ``server``, and wait until the group is stable."""
    healthy = HealthyGroup(
        server.address, f"healthy-{server.kind}", args.session_timeout_ms, args.heartbeat_ms
    )
    healthy.start()
    probe = HeartbeatProbe(
        server.address, f"probe-{server.kind}", args.session_timeout_ms, args.probe_interval_ms / 1000
    )
    try:
        probe.start()
        healthy.wait_stable(timeout=90, quiet_s=1.0)
    except BaseException:
        probe.stop()
        healthy.stop()
        raise
    return Target(server=server, healthy=healthy, probe=probe, rss=RssSampler(server.pid))


def detach(target: Target) -> None:
    """Stop the probe (its member stays until its session ends), the consumers and the sampler."""
    target.probe.stop()
    target.healthy.stop()
    target.rss.stop()


# --- one attack against one server -------------------------------------------------------------------


def attack_params(attack: str, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    """What the attacker process is told to do."""
    limits = budgets(args)
    return {
        "A": {
            "wide_partitions": args.wide_partitions,
            "flooders": args.flooders,
            "flood_requests": args.flood_requests,
        },
        "B": {
            "max_request_bytes": limits["max_request_bytes"],
            "partial_bytes": int(args.partial_mb * 1_000_000),
            "partial_connections": args.partial_connections,
        },
        "C": {
            "trickle_connections": args.trickle_connections,
            "trickle_interval_s": args.trickle_interval_s,
            "trickle_frame_bytes": 1000,
        },
        "D": {
            "attacked_group": f"attacked-{server.kind}",
            "joins": args.joins,
            "join_connections": args.join_connections,
            "join_window": args.join_window,
            "pending_session_ms": 1_800_000,
        },
    }[attack]


def notes_for(attack: str, kind: str, args: argparse.Namespace) -> list[str]:
    """What differs between the servers for this attack, for the table's notes."""
    if kind != KAFKA:
        return []
    return {
        "A": [f"Kafka has no max_partitions_per_topic: the same {args.wide_partitions:,}-partition topic"],
        "B": [
            f"queued.max.request.bytes set to our budget ({args.budget_mib} MiB; Kafka's default is "
            f"unbounded: each connection would get a {args.max_request_mib} MiB buffer as soon as its "
            f"size is read, {args.partial_connections * args.max_request_mib} MiB in all, more than the "
            f"broker's {args.kafka_heap_mb} MB heap)"
        ],
        "C": [
            "Kafka has no request_arrival_timeout_ms: only connections.max.idle.ms, which each byte resets"
        ],
        "D": ["Kafka has no max_pending_members: it keeps every id for its session"],
    }[attack]


def measure(attack: str, target: Target, args: argparse.Namespace, results: Path) -> dict[str, Any]:
    """One attack against one server: baseline, attack window, the few seconds after; a failure is
    recorded in the run, not raised."""
    server = target.server
    run: dict[str, Any] = {
        "attack": attack,
        "server": server.kind,
        "notes": notes_for(attack, server.kind, args),
    }
    budget = args.budget_mib * MiB
    run["budget_bytes"] = budget
    attacker: Attacker | None = None
    first_join: LibrdkafkaMember | None = None
    try:
        # Recovered from the previous attack, if it disturbed anything.
        target.healthy.wait_stable(timeout=120, quiet_s=1.0)
        attacker = Attacker(
            attack, server.address, attack_params(attack, server, args), results / "isolation-attacker.log"
        )
        if not attacker.ready.wait(60):
            raise BenchError("the attacker process did not start")
        b0 = now()
        time.sleep(args.baseline_seconds)
        b1 = now()
        cpu = CpuWindow(server.pid)
        t0 = attacker.go()
        first_join_started = math.inf
        deadline = t0 + args.max_attack_seconds
        while True:
            t = now()
            if (
                attack == "D"
                and first_join is None
                and (attacker.progress >= args.first_join_after or attacker.done_at is not None)
            ):
                first_join = LibrdkafkaMember(
                    server.address,
                    f"attacked-{server.kind}",
                    f"first-join-{server.kind}",
                    args.session_timeout_ms,
                    args.heartbeat_ms,
                )
                first_join_started = now()
                first_join.start()
            ends = [t0 + args.attack_seconds]
            if attack in MUST_FINISH:
                ends.append(attacker.done_at + 1.0 if attacker.done_at is not None else math.inf)
            if first_join is not None:
                ends.append(first_join_started + args.first_join_seconds)
            if t >= min(max(ends), deadline) or attacker.ended.is_set():
                break
            time.sleep(0.02)
        t1 = now()
        summary = attacker.stop()
        machine = cpu.figures()
        attacker_cpu = float(summary.get("attacker_cpu_s", 0.0))
        machine["attacker_cpu_s"] = attacker_cpu
        machine["others_cores"] = max(0.0, machine["others_cores"] - attacker_cpu / machine["wall_s"])
        time.sleep(args.after_seconds)  # a member that expired learns it at its next heartbeat
        t2 = now()
        if first_join is not None:
            joined_at = first_join.first_assigned()
            run["first_join"] = {
                "started_after_joins": attacker.progress,
                "assigned_after_ms": None
                if joined_at is None
                else round((joined_at - first_join_started) * 1000, 1),
                "errors": sorted({text for _, text in first_join.errors})[:5],
            }
        baseline_rss = target.rss.between(b0, b1)
        during_rss = target.rss.between(t0, t2)
        base = int(statistics.median(baseline_rss)) if baseline_rss else None
        peak = max(during_rss) if during_rss else None
        growth = None if base is None or peak is None else peak - base
        run.update(
            {
                "baseline": {
                    "seconds": round(b1 - b0, 2),
                    "probe": target.probe.window(b0, b1),
                    "rss_bytes": base,
                },
                "during": {
                    "seconds": round(t1 - t0, 2),
                    "probe": target.probe.window(t0, t1),
                    "rss_peak_bytes": peak,
                    "rss_growth_bytes": growth,
                },
                "after_seconds": round(t2 - t1, 2),
                "healthy_group": target.healthy.disturbance(t0, t2),
                "attacker": summary,
                "machine": machine,
                "load_average": os.getloadavg(),
            }
        )
        if summary.get("failure"):
            run["failure"] = f"attacker: {summary['failure']}"
    except BenchError as exc:
        run["failure"] = str(exc)
    finally:
        if attacker is not None and not attacker.ended.is_set():
            attacker.stop()
        if first_join is not None:
            first_join.stop()
    print_run(run)
    return run


def print_run(run: dict[str, Any]) -> None:
    label = f"{run['attack']} on {run['server']:<8}"
    if run.get("failure") and "during" not in run:
        print(f"  {label}: FAILED: {run['failure']}", flush=True)
        return
    probe, base = run["during"]["probe"], run["baseline"]["probe"]
    growth = run["during"]["rss_growth_bytes"]
    print(
        f"  {label}: probe p99 {_ms(probe['p99_ms'])} (baseline {_ms(base['p99_ms'])}), "
        f"max {_ms(probe['max_ms'])}, {probe['answered_none']}/{probe['sent']} answered; rebalanced "
        f"{'yes' if run['healthy_group']['rebalanced'] else 'no'}; "
        f"RSS {_mib(growth, sign=True)} of {_mib(run['budget_bytes'])}; "
        f"attacker {json.dumps({k: v for k, v in run['attacker'].items() if not isinstance(v, list)})}",
        flush=True,
    )


# --- the run -----------------------------------------------------------------------------------------


def run_all(args: argparse.Namespace, results: Path) -> dict[str, Any]:
    report: dict[str, Any] = {
        "load_average_start": os.getloadavg(),
        "budgets": budgets(args),
        "servers": {},
        "runs": [],
    }
    started = now()
    targets: dict[str, Target] = {}
    servers: list[Server] = []
    try:
        for kind in args.servers:
            try:
                server = start_embedded(results, args) if kind == EMBEDDED else start_kafka(args)
            except Exception as exc:  # Kafka needs java and mvn: its column says why it is missing
                report["servers"][kind] = {"failure": repr(exc)}
                print(f"{kind}: not started: {exc!r}", flush=True)
                continue
            servers.append(server)
            report["servers"][kind] = {"address": server.address, "notes": server.notes}
            print(f"{kind}: {server.address}; {'; '.join(server.notes)}", flush=True)
            try:
                targets[kind] = attach(server, args)
            except (BenchError, OSError) as exc:
                report["servers"][kind]["failure"] = f"the healthy group did not form: {exc}"
                print(f"{kind}: {report['servers'][kind]['failure']}", flush=True)
        report["setup_s"] = round(now() - started, 1)
        for index, attack in enumerate(args.attacks):
            order = list(targets)
            if index % 2:
                order.reverse()  # alternate which server goes first, so slow drift hits both alike
            print(f"\n{ATTACK_LABELS[attack]}", flush=True)
            for kind in order:
                report["runs"].append(measure(attack, targets[kind], args, results))
    finally:
        for target in targets.values():
            detach(target)
        for server in servers:
            stop(server, results)
    report["load_average_end"] = os.getloadavg()
    report["wall_seconds"] = round(now() - started, 1)
    return report


# --- the table ---------------------------------------------------------------------------------------


def _ms(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.1f} ms" if value < 100 else f"{value:,.0f} ms"


def _mib(value: float | None, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value / MiB:+,.1f} MiB" if sign else f"{value / MiB:,.1f} MiB"


def _growth_ratio(ours: float | None, peer: float | None) -> str:
    """ours / Kafka for memory growth; a server that did not grow has no meaningful ratio."""
    if ours is None or peer is None or peer <= 0:
        return "n/a (Kafka did not grow)" if peer is not None and peer <= 0 else "n/a"
    return ratio_text(max(ours, 0.0), peer)


def _run(report: dict[str, Any], attack: str, kind: str) -> dict[str, Any] | None:
    return next((r for r in report["runs"] if r["attack"] == attack and r["server"] == kind), None)


def _measured(run: dict[str, Any] | None) -> bool:
    return run is not None and "during" in run


def table(report: dict[str, Any]) -> str:
    header = [
        "attack",
        "server",
        "probe p99 during / baseline",
        "p50 during",
        "max during",
        "probe heartbeats answered",
        "librdkafka group rebalanced",
        "server RSS growth / budget",
    ]
    rows = [header]
    kinds = [k for k in (EMBEDDED, KAFKA) if k in report["config"]["servers"]]
    for attack in report["config"]["attacks"]:
        for kind in kinds:
            run = _run(report, attack, kind)
            label = [ATTACK_LABELS[attack], SERVER_LABELS[kind]]
            if run is None:
                why = report["servers"].get(kind, {}).get("failure", "not run")
                rows.append([*label, f"not run: {why[:60]}", "", "", "", "", ""])
                continue
            if not _measured(run):
                rows.append([*label, f"failed: {run.get('failure', '')[:60]}", "", "", "", "", ""])
                continue
            probe, base = run["during"]["probe"], run["baseline"]["probe"]
            answered = f"{probe['answered_none']} / {probe['sent']}"
            if probe["unanswered"]:
                answered += f" ({probe['unanswered']} unanswered)"
            if probe["other_outcomes"]:
                answered += (
                    " (" + ", ".join(f"{n} {o[:30]}" for o, n in probe["other_outcomes"].items()) + ")"
                )
            growth = run["during"]["rss_growth_bytes"]
            rows.append(
                [
                    *label,
                    f"{_ms(probe['p99_ms'])} / {_ms(base['p99_ms'])}",
                    _ms(probe["p50_ms"]),
                    _ms(probe["max_ms"]),
                    answered,
                    "yes" if run["healthy_group"]["rebalanced"] else "no",
                    f"{_mib(growth, sign=True)} (peak {_mib(run['during']['rss_peak_bytes'])}) / "
                    f"{_mib(run['budget_bytes'])}",
                ]
            )
        if EMBEDDED in kinds and KAFKA in kinds:
            ours, kafka = _run(report, attack, EMBEDDED), _run(report, attack, KAFKA)
            if _measured(ours) and _measured(kafka):
                assert ours is not None
                assert kafka is not None
                rows.append(
                    [
                        ATTACK_LABELS[attack],
                        "ours / Kafka",
                        ratio_text(ours["during"]["probe"]["p99_ms"], kafka["during"]["probe"]["p99_ms"]),
                        ratio_text(ours["during"]["probe"]["p50_ms"], kafka["during"]["probe"]["p50_ms"]),
                        ratio_text(ours["during"]["probe"]["max_ms"], kafka["during"]["probe"]["max_ms"]),
                        "",
                        "",
                        _growth_ratio(
                            ours["during"]["rss_growth_bytes"], kafka["during"]["rss_growth_bytes"]
                        ),
                    ]
                )
    return _markdown(rows)


def attack_detail(run: dict[str, Any]) -> str:
    """What the attack did and what the server made of it, in one line."""
    a = run["attacker"]
    if "failure" in a:
        return f"attacker failed: {a['failure']}"
    if run["attack"] == "A":
        created = a.get("create_topics", {})
        text = f"CreateTopics({a.get('partitions')}): {created.get('error')} after {created.get('s')} s"
        if a.get("created_in_two_steps"):
            text += f" ({created.get('message')}), then in two steps: {a['created_in_two_steps']}"
        flood = f"{a.get('flooders')} x {a.get('flood_requests')} Metadata requests"
        return f"{text}; {flood} sent at {a.get('flood_sent_s')} s"
    if run["attack"] == "B":
        return (
            f"{a.get('connections')} connections wrote {_mib(a.get('written_bytes'))} in all (the rest "
            f"never left the attacker); closed by the server: {a.get('closed_by_server')}"
            + (f", after {a.get('closed_after_s')} s" if a.get("closed_by_server") else "")
        )
    if run["attack"] == "C":
        return (
            f"{a.get('connections')} connections (all open after {a.get('all_open_s')} s), "
            f"{a.get('bytes_trickled')} bytes trickled; closed by the server: {a.get('closed_by_server')}"
            + (
                f", {a.get('closed_after_s_min')}-{a.get('closed_after_s_max')} s after they opened"
                if a.get("closed_by_server")
                else ""
            )
        )
    return (
        f"{a.get('answered')} of {a.get('joins')} JoinGroups answered in {a.get('all_answered_s')} s: "
        f"{a.get('answers')}; the real member's first join: {run.get('first_join')}"
    )


def details(report: dict[str, Any]) -> list[str]:
    """What each attack did and what each server made of it, one line per run."""
    return [f"{r['attack']} on {r['server']}: {attack_detail(r)}" for r in report["runs"] if _measured(r)]


def goals(report: dict[str, Any]) -> list[str]:
    """Issue 15's goals per attack and server: met or not."""
    lines = []
    for run in report["runs"]:
        if not _measured(run):
            continue
        probe = run["during"]["probe"]
        p99, growth, budget = probe["p99_ms"], run["during"]["rss_growth_bytes"], run["budget_bytes"]
        all_answered = probe["answered_none"] == probe["sent"] > 0
        checks = [
            f"p99 {_ms(p99)} {'met' if p99 is not None and p99 <= GOAL_P99_MS else 'NOT met'} "
            f"(goal ≤ {GOAL_P99_MS:.0f} ms)",
            "every probe heartbeat answered: " + ("met" if all_answered else "NOT met"),
            "no rebalance: " + ("NOT met" if run["healthy_group"]["rebalanced"] else "met"),
            f"memory {_mib(growth, sign=True)} "
            + ("met" if growth is not None and growth <= budget else "NOT met")
            + f" (goal ≤ {_mib(budget)})",
        ]
        lines.append(f"{run['attack']} on {run['server']}: " + "; ".join(checks))
    return lines


def machine_load(report: dict[str, Any]) -> dict[str, Any]:
    windows = [r["machine"] for r in report["runs"] if _measured(r)]

    def med(key: str) -> float | None:
        values = [w[key] for w in windows]
        return statistics.median(values) if values else None

    return {
        "attack_windows": len(windows),
        "others_cores_median": med("others_cores"),
        "machine_busy_cores_median": med("machine_busy_cores"),
        "server_cores_median": statistics.median([w["server_cpu_s"] / w["wall_s"] for w in windows])
        if windows
        else None,
    }


def render(report: dict[str, Any], output: Path) -> int:
    """Print the table, the attacks' details, the goals and the machine's load; store them in the
    report; 1 if any run failed."""
    report["table"] = table(report)
    report["details"] = details(report)
    report["goals"] = goals(report)
    report["machine_load"] = machine_load(report)
    print()
    print(report["table"])
    print("\nwhat each attack did:")
    for line in report["details"]:
        print(f"  - {line}")
    notes = sorted({n for r in report["runs"] for n in r.get("notes", [])})
    if notes:
        print("\nnotes:")
        for note in notes:
            print(f"  - {note}")
    print("\ngoals (issue 15):")
    for line in report["goals"]:
        print(f"  - {line}")
    load = report["machine_load"]
    if load["attack_windows"]:
        print(
            f"\nduring the attacks (median): other processes {load['others_cores_median']:.2f} cores, "
            f"the server {load['server_cores_median']:.2f}, the whole machine "
            f"{load['machine_busy_cores_median']:.2f} of {os.cpu_count()} cores"
        )
    print(
        f"\nload average {report['load_average_start'][0]:.2f} at the start, "
        f"{report['load_average_end'][0]:.2f} at the end; wall time {report['wall_seconds']:.1f} s; "
        f"results in {output}"
    )
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    return 1 if any(r.get("failure") for r in report["runs"]) else 0


# --- command line ------------------------------------------------------------------------------------


def _choices(known: tuple[str, ...]) -> Callable[[str], list[str]]:
    def parse(text: str) -> list[str]:
        chosen = [x.strip() for x in text.split(",") if x.strip()]
        if not chosen or set(chosen) - set(known):
            raise argparse.ArgumentTypeError(f"a comma list of {', '.join(known)}")
        return [k for k in known if k in chosen]

    return parse


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Issue 15's attacks beside a healthy group: heartbeat latency, rebalances and server "
        "memory, on the embedded coordinator and Apache Kafka's broker."
    )
    p.add_argument(
        "--servers",
        type=_choices((EMBEDDED, KAFKA)),
        default=None,
        help="embedded,kafka (default both; --quick: embedded)",
    )
    p.add_argument("--attacks", type=_choices(ATTACKS), default=list(ATTACKS), help="a comma list of A,B,C,D")
    p.add_argument("--baseline-seconds", type=float, default=5.0)
    p.add_argument(
        "--attack-seconds",
        type=float,
        default=20.0,
        help="each attack's window (A and D: at least until done)",
    )
    p.add_argument("--max-attack-seconds", type=float, default=300.0)
    p.add_argument(
        "--after-seconds", type=float, default=4.0, help="watched for rebalances after each attack"
    )
    p.add_argument("--probe-interval-ms", type=int, default=100)
    p.add_argument(
        "--session-timeout-ms", type=int, default=10_000, help="the healthy group's and the probe's"
    )
    p.add_argument("--heartbeat-ms", type=int, default=3000, help="librdkafka's heartbeat.interval.ms")
    p.add_argument(
        "--wide-partitions",
        type=int,
        default=10_000,
        help="A: the topic's width, and max_partitions_per_topic",
    )
    p.add_argument("--flooders", type=int, default=20)
    p.add_argument("--flood-requests", type=int, default=50)
    p.add_argument(
        "--max-request-mib", type=int, default=64, help="max_request_bytes / socket.request.max.bytes"
    )
    p.add_argument(
        "--budget-mib", type=int, default=128, help="queued_max_request_bytes / queued.max.request.bytes"
    )
    p.add_argument("--partial-connections", type=int, default=8)
    p.add_argument("--partial-mb", type=float, default=60.0, help="B: MB each connection sends (10^6 bytes)")
    p.add_argument("--trickle-connections", type=int, default=300)
    p.add_argument("--trickle-interval-s", type=float, default=2.0)
    p.add_argument("--request-arrival-timeout-ms", type=int, default=10_000)
    p.add_argument("--joins", type=int, default=100_000)
    p.add_argument("--join-connections", type=int, default=10)
    p.add_argument(
        "--join-window", type=int, default=1000, help="D: JoinGroups pipelined per connection before reading"
    )
    p.add_argument("--max-pending-members", type=int, default=1000)
    p.add_argument(
        "--first-join-after",
        type=int,
        default=None,
        help="D: answers before the real member joins (default 2 x max pending)",
    )
    p.add_argument(
        "--first-join-seconds", type=float, default=15.0, help="D: how long the real member is given"
    )
    p.add_argument("--max-connections-per-ip", type=int, default=1000)
    p.add_argument("--connections-max-idle-ms", type=int, default=600_000)
    p.add_argument("--kafka-heap-mb", type=int, default=512)
    p.add_argument("--quick", action="store_true", help="small sizes, about 1 s per attack, embedded only")
    p.add_argument("--output", type=Path, default=None, help=f"JSON results (default {DEFAULT_OUTPUT})")
    p.add_argument("--render", type=Path, default=None, help="print the tables of a stored JSON report again")
    p.add_argument("--attack-worker", choices=ATTACKS, default=None, help=argparse.SUPPRESS)
    p.add_argument("--attack-address", default="", help=argparse.SUPPRESS)
    p.add_argument("--attack-params", default="{}", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.servers = args.servers or [EMBEDDED]
        args.baseline_seconds = 0.75
        args.attack_seconds = 1.25
        args.after_seconds = 0.5
        args.heartbeat_ms = 500
        args.max_request_mib = 8
        args.budget_mib = 16
        args.partial_mb = 6.0
        args.trickle_interval_s = 0.25
        args.request_arrival_timeout_ms = 600
        args.joins = 3000
        args.first_join_seconds = 1.0
        args.kafka_heap_mb = 512
    args.servers = args.servers or [EMBEDDED, KAFKA]
    if args.first_join_after is None:
        args.first_join_after = 2 * args.max_pending_members
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.attack_worker is not None:
        return attack_worker(args)
    if args.render is not None:
        return render(json.loads(args.render.read_text()), args.render)
    output = args.output or DEFAULT_OUTPUT
    results = output.parent
    results.mkdir(parents=True, exist_ok=True)
    (results / "isolation-attacker.log").write_text("")
    print(
        f"isolation: attacks {','.join(args.attacks)} on {','.join(args.servers)}; baseline "
        f"{args.baseline_seconds} s, attack {args.attack_seconds} s; budget {args.budget_mib} MiB, max "
        f"request {args.max_request_mib} MiB; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cpus",
        flush=True,
    )
    report = run_all(args, results)
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
    return render(report, output)


if __name__ == "__main__":
    sys.exit(main())
