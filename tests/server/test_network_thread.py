"""The network thread (``CoordinatorConfig.network_thread``): a thread in C reads and writes the
connections of a plaintext listener and answers each connection's steady heartbeat itself, as
the server last answered it; the server renews the sessions of the members it answered, and
forgets every remembered answer before anything that could change one.

Real TCP clients on 127.0.0.1: raw ones (kafka-python's message classes on sockets) where the
test needs to see each answer, librdkafka consumers of both protocols where it needs real ones.
test_bad_input.py runs its malformed-traffic tests against this thread too."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from kafka.protocol.consumer import HeartbeatRequest, HeartbeatResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from member_processes import wait_for
from test_bad_input import Sockets, encode, recv_frame, stable_raw_member

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._protocol import ErrorCode
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse

SESSION_MS = 1500
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    min_session_timeout_ms=500,
    heartbeat_hold_ms=0,
    network_thread=True,
    consumer_group_session_timeout_ms=SESSION_MS,
    consumer_group_heartbeat_interval_ms=500,
    consumer_group_min_session_timeout_ms=500,
    consumer_group_min_heartbeat_interval_ms=100,
)
PARTITIONS = 4


@pytest.fixture
def coordinator() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(topics={"t": PARTITIONS}, config=CONFIG) as running:
        yield running


@dataclass
class RawMember:
    """A member of consumer group ``g`` (KIP-848) on a socket of its own, one request at a time."""

    port: int
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: list[Any] = field(default_factory=list)
    correlation_id: int = 0
    sock: socket.socket = field(init=False)

    def __post_init__(self) -> None:
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def request(self, *, joining: bool = False, with_owned: bool = False) -> Any:
        """A ConsumerGroupHeartbeat: the first subscribes; ``with_owned`` acknowledges what the
        member owns; otherwise it is the steady one (nothing but who and which epoch)."""
        topic_partitions = ConsumerGroupHeartbeatRequest.TopicPartitions
        return ConsumerGroupHeartbeatRequest(
            version=1,
            group_id="g",
            member_id=self.member_id,
            member_epoch=self.epoch,
            instance_id=None,
            rack_id=None,
            rebalance_timeout_ms=60_000 if joining else -1,
            subscribed_topic_names=["t"] if joining else None,
            subscribed_topic_regex=None,
            server_assignor=None,
            topic_partitions=[]
            if joining
            else [topic_partitions(topic_id=o.topic_id, partitions=o.partitions) for o in self.owned]
            if with_owned
            else None,
        )

    def heartbeat(self, *, joining: bool = False, with_owned: bool = False) -> Any:
        """Send :meth:`request` and take its answer."""
        self.correlation_id += 1
        self.sock.sendall(encode(self.request(joining=joining, with_owned=with_owned), self.correlation_id))
        answer = ConsumerGroupHeartbeatResponse.decode(recv_frame(self.sock), version=1, header=True)
        assert answer.header.correlation_id == self.correlation_id
        if answer.error_code == ErrorCode.NONE:
            self.epoch = answer.member_epoch
            if answer.assignment is not None:
                self.owned = list(answer.assignment.topic_partitions)
        return answer

    def join(self) -> None:
        """Join and acknowledge until the member is steady at its group's epoch."""
        answer = self.heartbeat(joining=True)
        assert answer.error_code == ErrorCode.NONE, answer
        for _ in range(10):
            answer = self.heartbeat(with_owned=True)
            assert answer.error_code == ErrorCode.NONE, answer
            if answer.assignment is None:
                return
        pytest.fail("the member did not settle")

    def partitions(self) -> set[int]:
        return {p for o in self.owned for p in o.partitions}

    def close(self) -> None:
        self.sock.close()


def test_steady_heartbeats_are_answered_by_the_thread_and_keep_the_session(
    coordinator: EmbeddedCoordinator,
) -> None:
    member = RawMember(coordinator.port)
    try:
        member.join()
        assert member.partitions() == set(range(PARTITIONS))
        before = coordinator.network_thread_answers
        sent = 0
        started = time.monotonic()
        # Three sessions long: answered NONE at the same epoch throughout. Had the server expired
        # the member, it would have forgotten the thread's answer first, and answered
        # UNKNOWN_MEMBER_ID itself.
        while time.monotonic() - started < 3 * SESSION_MS / 1000:
            answer = member.heartbeat()
            sent += 1
            assert (answer.error_code, answer.member_epoch) == (ErrorCode.NONE, member.epoch), answer
            time.sleep(0.002)
        answered_there = coordinator.network_thread_answers - before
        # The server answers a steady heartbeat again after each session timer it runs.
        assert answered_there >= sent * 0.9, (answered_there, sent)
        # Silent past its session, the member is gone.
        time.sleep(2 * SESSION_MS / 1000)
        assert member.heartbeat().error_code == ErrorCode.UNKNOWN_MEMBER_ID
    finally:
        member.close()


def test_a_change_reaches_a_member_the_thread_answered(coordinator: EmbeddedCoordinator) -> None:
    first = RawMember(coordinator.port)
    second = RawMember(coordinator.port)
    try:
        first.join()
        epoch = first.epoch
        before = coordinator.network_thread_answers
        for _ in range(20):
            assert first.heartbeat().member_epoch == epoch
        assert coordinator.network_thread_answers - before >= 19
        # A newcomer: the first member's next heartbeat is answered with what it must revoke,
        # not with the answer the thread remembered.
        assert second.heartbeat(joining=True).error_code == ErrorCode.NONE
        revoke = first.heartbeat()
        assert revoke.error_code == ErrorCode.NONE
        assert revoke.assignment is not None and len(first.partitions()) == PARTITIONS // 2
        # Both settle: every partition owned once, the newcomer's from the first's revocation.
        first.heartbeat(with_owned=True)
        for _ in range(10):
            if len(second.partitions()) == PARTITIONS // 2:
                break
            second.heartbeat(with_owned=True)
        assert first.partitions() | second.partitions() == set(range(PARTITIONS))
        assert not first.partitions() & second.partitions()
        # Steady again at the new epoch, and answered by the thread again.
        first.heartbeat()
        settled = coordinator.network_thread_answers
        for _ in range(5):
            assert first.heartbeat().member_epoch == first.epoch > epoch
        assert coordinator.network_thread_answers - settled >= 4
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("together", [True, False], ids=["in-one-write", "one-after-the-other"])
def test_answers_keep_the_order_of_the_requests(coordinator: EmbeddedCoordinator, together: bool) -> None:
    member = RawMember(coordinator.port)
    try:
        member.join()
        member.heartbeat()  # remembered by the thread from now on
        steady = member.heartbeat()
        # A request the server answers, then the steady heartbeat the thread would answer: the
        # thread answers it only after the server's answer has gone out.
        member.correlation_id += 2
        versions = encode(ApiVersionsRequest(version=3), member.correlation_id - 1)
        beat = encode(member.request(), member.correlation_id)
        if together:
            member.sock.sendall(versions + beat)
        else:
            member.sock.sendall(versions)
            member.sock.sendall(beat)
        first = ApiVersionsResponse.decode(recv_frame(member.sock), version=3, header=True)
        second = ConsumerGroupHeartbeatResponse.decode(recv_frame(member.sock), version=1, header=True)
        assert (first.header.correlation_id, first.error_code) == (member.correlation_id - 1, 0)
        assert (second.header.correlation_id, second.error_code) == (member.correlation_id, 0)
        assert second.member_epoch == steady.member_epoch
    finally:
        member.close()


def test_librdkafka_consumers_heartbeats_are_answered_by_the_thread(coordinator: EmbeddedCoordinator) -> None:
    # A KIP-848 consumer's steady heartbeats name only the member and its epoch: the thread
    # answers them. Then two classic consumers heartbeating every 100 ms share a group: the
    # first is answered by the thread until the second joins, and learns of that rebalance from
    # its next heartbeat (REBALANCE_IN_PROGRESS, from the server, the thread's answer
    # forgotten), so both end with two partitions each.
    def consumer(group: str, **settings: str) -> Consumer:
        bootstrap = coordinator.bootstrap_servers
        client = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0, **settings})
        client.subscribe(["t"])
        return client

    clients: list[Consumer] = []

    def until(what: str, condition: Callable[[], bool]) -> None:
        def polled() -> bool:
            for client in clients:
                client.poll(0.05)  # errors from fetches (the coordinator keeps no log) included
            return condition()

        wait_for(polled, 30, what)

    incremental = consumer("incremental", **{"group.protocol": "consumer"})
    clients.append(incremental)
    try:
        until("a consumer", lambda: len(incremental.assignment()) == PARTITIONS)
        before = coordinator.network_thread_answers
        until(
            "the thread to answer the KIP-848 consumer's heartbeats",
            lambda: coordinator.network_thread_answers - before >= 3,
        )
        classic = {
            "heartbeat.interval.ms": "100",
            "session.timeout.ms": "6000",
            "partition.assignment.strategy": "range",
        }
        first = consumer("classic", **classic)
        clients.append(first)
        until("one classic consumer", lambda: len(first.assignment()) == PARTITIONS)
        before = coordinator.network_thread_answers
        until(
            "the thread to answer the classic consumer's heartbeats",
            lambda: coordinator.network_thread_answers - before >= 10,
        )
        second = consumer("classic", **classic)
        clients.append(second)
        until(
            "the classic group to rebalance",
            lambda: (
                len(first.assignment()) == len(second.assignment()) == PARTITIONS // 2
                and len(incremental.assignment()) == PARTITIONS
            ),
        )
        owned = {p.partition for c in (first, second) for p in c.assignment()}
        assert owned == set(range(PARTITIONS))
    finally:
        for client in clients:
            client.close()


def test_a_raw_classic_heartbeat_is_answered_by_the_thread(coordinator: EmbeddedCoordinator) -> None:
    sockets = Sockets(coordinator.port)
    try:
        member = stable_raw_member(sockets, "classic-raw", session_ms=1000)
        assert member.heartbeat() == ErrorCode.NONE
        before = coordinator.network_thread_answers
        started = time.monotonic()
        while time.monotonic() - started < 2.5:  # past its 1 s session
            assert member.heartbeat() == ErrorCode.NONE
            time.sleep(0.005)
        assert coordinator.network_thread_answers > before
        newcomer = sockets()
        newcomer.sendall(
            encode(
                HeartbeatRequest(version=1, group_id="classic-raw", generation_id=99, member_id="nobody"), 1
            )
        )
        stale = HeartbeatResponse.decode(recv_frame(newcomer), version=1, header=True)
        assert stale.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert member.heartbeat() == ErrorCode.NONE  # an answer of the server's changes nothing
    finally:
        sockets.close_all()


def test_the_server_stops_with_the_threads_connections_open() -> None:
    running = EmbeddedCoordinator(topics={"t": PARTITIONS}, config=CONFIG).start()
    member = RawMember(running.port)
    try:
        member.join()
        member.heartbeat()
        member.heartbeat()
        running.close()
        member.sock.settimeout(5)
        assert member.sock.recv(1) == b"", "the client's connection outlived the server"
    finally:
        member.close()
        running.close()


def test_the_network_thread_needs_heartbeats_answered_at_once() -> None:
    with pytest.raises(ConfigurationError, match="heartbeat_hold_ms"):
        CoordinatorConfig(network_thread=True)
    with pytest.raises(ConfigurationError, match="network_thread must be true or false"):
        CoordinatorConfig(network_thread="yes", heartbeat_hold_ms=0)  # type: ignore[arg-type]


OUT_OF_DESCRIPTORS = """
import resource, socket, sys, time
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from test_bad_input import encode, recv_frame

config = CoordinatorConfig(heartbeat_hold_ms=0, network_thread=True)
with EmbeddedCoordinator(config=config) as coordinator:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))
    clients = []
    try:
        while len(clients) < 200:  # each costs the server three descriptors, and this process one
            clients.append(socket.create_connection(("127.0.0.1", coordinator.port), timeout=2))
    except OSError:
        pass
    time.sleep(0.5)
    busy = time.process_time()
    time.sleep(1.0)
    spent = time.process_time() - busy
    for client in clients:
        client.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    time.sleep(1.5)  # the thread accepts again a second after it ran out
    with socket.create_connection(("127.0.0.1", coordinator.port), timeout=5) as sock:
        sock.sendall(encode(ApiVersionsRequest(version=0), 5))
        answer = ApiVersionsResponse.decode(recv_frame(sock), version=0, header=True)
    print(len(clients), f"{spent:.3f}", answer.error_code)
"""


def test_the_thread_waits_when_out_of_descriptors_and_then_accepts_again(tmp_path: Path) -> None:
    # Out of descriptors, accept() fails while the listener stays ready: the thread must not
    # spin on it (asyncio's event loop pauses a second too), and must accept again after.
    script = tmp_path / "out_of_descriptors.py"
    script.write_text(OUT_OF_DESCRIPTORS)
    here = Path(__file__).parent
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(here), str(here.parent)])},
    )
    assert result.returncode == 0, result.stderr
    opened, spent, error = result.stdout.split()
    assert int(opened) >= 20  # connections were opened until the descriptors ran out
    assert float(spent) < 0.2, f"{spent} s of CPU in a second while out of descriptors"
    assert int(error) == 0
