"""Kafka's request quotas on the embedded coordinator (KIP-124, KIP-219, KIP-546).

The arithmetic is pure and checked on a fake clock against the numbers of Kafka's own tests
(``ClientRequestQuotaManagerTest``, ``ClientQuotaManagerTest``); the rest with a real
coordinator on 127.0.0.1: a client hammering it with expensive requests from another process,
under a ``request_percentage`` quota, gets ``throttle_time_ms`` and is muted, while a
librdkafka group and a raw member's heartbeats beside it carry on; Kafka's own
``kafka-configs`` sets and describes quotas as docs/operations.md shows it; quotas survive a
restart; the APIs are authorized as Kafka authorizes them.

Run as a script (``python test_quotas.py hammer ...``) this file is the hammering client.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka_tools import _recv

HAMMER_TOPICS = 1000  # a Metadata request naming them all takes the server tens of ms


def metadata_request(topics: int) -> Any:
    """Metadata naming ``topics`` topics t0, t1, ...: built afresh by the server each time."""
    return MetadataRequest(
        version=12,
        topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=f"t{i}") for i in range(topics)],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def call(sock: socket.socket, request: Any, response_cls: Any, client_id: str = "quota-test") -> Any:
    """One request and its answer, through kafka-python's message classes."""
    request.with_header(correlation_id=7, client_id=client_id)
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    size = int.from_bytes(_recv(sock, 4), "big")
    return response_cls.decode(_recv(sock, size), version=request.API_VERSION, header=True)


def hammer(bootstrap: str, client_id: str, seconds: float, connections: int) -> None:
    """Send Metadata naming HAMMER_TOPICS topics back to back, ignoring throttle_time_ms, on
    ``connections`` connections for ``seconds``; print ``hammering`` when it starts, then, as
    JSON, each answer's connection, when its request was sent, when its bytes arrived and its
    throttle_time_ms."""
    host, port = bootstrap.rsplit(":", 1)
    request = metadata_request(HAMMER_TOPICS)
    answers: list[tuple[int, float, float, int]] = []
    socks = [socket.create_connection((host, int(port)), timeout=30) for _ in range(connections)]
    print("hammering", flush=True)
    end = time.monotonic() + seconds

    def run(index: int) -> None:
        with socks[index] as sock:
            while time.monotonic() < end:
                request.with_header(correlation_id=index, client_id=client_id)
                data = bytes(request.encode(header=True, framed=True))
                sent = time.monotonic()
                sock.sendall(data)
                size = int.from_bytes(_recv(sock, 4), "big")
                body = _recv(sock, size)
                arrived = time.monotonic()
                answer = MetadataResponse.decode(body, version=12, header=True)
                answers.append((index, sent, arrived, answer.throttle_time_ms))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(json.dumps(answers))


if __name__ == "__main__" and sys.argv[1:2] == ["hammer"]:
    hammer(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]))
    sys.exit(0)


import pytest  # noqa: E402 - the hammer above runs without pytest
from kafka_tools import _connect, run_kafka_configs_lines  # noqa: E402
from member_processes import (  # noqa: E402
    MemberProcess,
    owned_exactly_once,
    running_members,
    wait_for,
)
from test_sasl import PASSWORD, authenticate  # noqa: E402

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings  # noqa: E402
from coordinator_api._protocol import ErrorCode  # noqa: E402
from coordinator_api.server import _wire, recording_membership  # noqa: E402
from coordinator_api.server._messages import HeartbeatResult  # noqa: E402
from coordinator_api.server._quotas import (  # noqa: E402
    DEFAULT,
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    ClientQuotas,
    FilterComponent,
    InvalidQuotaError,
    QuotaAlteration,
    QuotaChange,
    QuotaEntity,
    SampledRate,
    percent_seconds,
    throttle_time_ms,
)
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users  # noqa: E402
from coordinator_api.server._store import SqliteStore  # noqa: E402

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0, heartbeat_hold_ms=0)
NONE = ErrorCode.NONE
INVALID_REQUEST = ErrorCode.INVALID_REQUEST
REFUSED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


# --- the arithmetic, as Kafka's tests have it ---------------------------------------------------


def percent(millis: float) -> float:
    """Handling time in ms as request_percentage counts it (Kafka's tests' millisToPercent)."""
    return percent_seconds(round(millis * 1_000_000))


class Clock:
    """Kafka's MockTime: milliseconds that move only when told."""

    def __init__(self) -> None:
        self.ms = 1_700_000_000_000

    def sleep(self, ms: int) -> None:
        self.ms += ms


def set_quota(
    quotas: ClientQuotas, entity: QuotaEntity, value: float | None, key: str = "request_percentage"
) -> None:
    quotas.apply([QuotaChange(entity, key, value)])


def test_a_new_rate_is_measured_over_at_least_ten_whole_windows() -> None:
    rate = SampledRate()
    rate.record(5.0, 0)
    assert rate.window_ms(0) == 10_000  # 0 elapsed, counted as 10 whole windows
    assert rate.measure(0) == pytest.approx(0.5)
    for second in range(1, 13):
        rate.record(1.0, second * 1000)
    # At 12 s the first sample's slot (of 11 + 1) is reused, and the sample of 1 s, 11 windows
    # old, is cleared: 11 samples of 1 over the 10 s since the oldest left began.
    assert rate.window_ms(12_000) == 10_000
    assert rate.measure(12_000) == pytest.approx(11.0 / 10)
    rate.record(1.0, 12_500)  # into the current sample
    assert rate.window_ms(12_500) == 10_500
    assert rate.measure(12_500) == pytest.approx(12.0 / 10.5)
    # Quiet for 11 windows: every sample is cleared, and the span is 10 windows again.
    assert rate.measure(23_500) == 0.0
    assert rate.window_ms(23_500) == 10_000


def test_throttle_time_is_kafkas_formula_rounded_half_up() -> None:
    # (O - T) / T * W: 10.2 ms/s over a 10 ms/s quota measured over 10.5 s.
    assert throttle_time_ms(1.02, 1.0, 10_500) == 210
    assert throttle_time_ms(1.5, 1.0, 1) == 1  # 0.5 rounds up, as Java's Math.round
    assert throttle_time_ms(600, 500, 10_500) == 2100


def test_request_percentage_throttles_as_kafkas_client_request_quota_manager_test() -> None:
    """Kafka's ClientRequestQuotaManagerTest.testRequestPercentageQuotaViolation, step by step."""
    clock, quotas = Clock(), ClientQuotas()
    set_quota(quotas, QuotaEntity("ANONYMOUS", "test-client"), 1.0)
    for _ in range(10):  # 4 ms a second is within 1% (10 ms a second)
        assert quotas.record("ANONYMOUS", "test-client", percent(4), clock.ms) == 0
        clock.sleep(1000)
    # A spike: (4 * 10 + 67.1) / 10.5 s = 10.2 ms/s; (10.2 - 10) / 10 * 10.5 s = 210 ms.
    clock.sleep(500)
    assert quotas.record("ANONYMOUS", "test-client", percent(67.1), clock.ms) == 210
    clock.sleep(210)
    for _ in range(11):  # delays go on until the spike's sample rolls over
        quotas.record("ANONYMOUS", "test-client", percent(4), clock.ms)
        clock.sleep(1000)
    assert quotas.record("ANONYMOUS", "test-client", 0.0, clock.ms) == 0
    # A spike needing more than a window to come back under: throttled for one window at most.
    assert quotas.record("ANONYMOUS", "test-client", percent(500), clock.ms) == 1000
    for _ in range(10):
        clock.sleep(1000)
        assert quotas.record("ANONYMOUS", "test-client", 0.0, clock.ms) == 1000
    clock.sleep(1000)
    assert quotas.record("ANONYMOUS", "test-client", 0.0, clock.ms) == 0


def test_quota_precedence_as_kafkas_client_quota_manager_test() -> None:
    """Kafka's ClientQuotaManagerTest.testQuotaConfigPrecedence: which quota applies, and which
    clients share a measurement, as quotas are set and removed."""
    clock, quotas = Clock(), ClientQuotas()

    def check(user: str, client: str, bound: float | None, value: float, throttled: bool) -> None:
        assert quotas.limit(user, client) == bound, (user, client)
        throttle = quotas.record(user, client, value * 11, clock.ms)
        assert (throttle > 0) == throttled, (user, client, value, throttle)

    for entity, value in (
        (QuotaEntity(DEFAULT), 1000),
        (QuotaEntity(client_id=DEFAULT), 2000),
        (QuotaEntity(DEFAULT, DEFAULT), 3000),
        (QuotaEntity("userA"), 4000),
        (QuotaEntity("userA", "client1"), 5000),
        (QuotaEntity("userB"), 6000),
        (QuotaEntity("userB", "client1"), 7000),
        (QuotaEntity("userB", DEFAULT), 8000),
        (QuotaEntity("userC"), 10000),
        (QuotaEntity(client_id="client1"), 9000),
    ):
        set_quota(quotas, entity, value)
    check("userA", "client1", 5000, 4500, False)  # (user, client) over user
    check("userA", "client2", 4000, 4500, True)  # user over client and the defaults
    check("userA", "client3", 4000, 0, True)  # a user's quota is shared by its clients
    check("userA", "client1", 5000, 0, False)  # (user, client) is its own
    check("userB", "client1", 7000, 8000, True)
    check("userB", "client2", 8000, 7000, False)  # (user, default client): one per client
    check("userB", "client3", 8000, 7000, False)
    check("userD", "client1", 3000, 3500, True)  # (default user, default client)
    check("userD", "client2", 3000, 2500, False)
    check("userE", "client1", 3000, 2500, False)
    set_quota(quotas, QuotaEntity(DEFAULT, DEFAULT), None)  # back to the default user's
    check("userD", "client1", 1000, 0, False)  # another measurement: starts afresh
    check("userE", "client4", 1000, 1500, True)
    check("userF", "client4", 1000, 800, False)  # the default user's quota: per user
    check("userF", "client5", 1000, 800, True)
    set_quota(quotas, QuotaEntity(DEFAULT), None)  # back to the default client id's
    check("userF", "client4", 2000, 0, False)  # per client id, whoever the user
    check("userF", "client5", 2000, 0, False)
    check("userF", "client5", 2000, 2500, True)
    check("userG", "client5", 2000, 0, True)
    set_quota(quotas, QuotaEntity("userA"), 8000)
    set_quota(quotas, QuotaEntity("userA", "client1"), 10000)
    check("userA", "client2", 8000, 0, False)
    check("userA", "client2", 8000, 4500, True)  # the new quota, with what was counted before
    check("userA", "client1", 10000, 0, False)
    check("userA", "client1", 10000, 6000, True)
    set_quota(quotas, QuotaEntity("userA", "client1"), None)
    check("userA", "client6", 8000, 0, True)  # the user's shared quota again
    set_quota(quotas, QuotaEntity("userA", "client6"), 11000)
    check("userA", "client6", 11000, 8500, False)
    set_quota(quotas, QuotaEntity("userA", DEFAULT), 12000)
    set_quota(quotas, QuotaEntity("userA", "client6"), None)
    check("userA", "client6", 12000, 4000, True)


def test_nothing_is_measured_until_a_request_percentage_is_set_and_then_until_restart() -> None:
    quotas = ClientQuotas()
    set_quota(quotas, QuotaEntity("alice"), 1024.0, key="producer_byte_rate")
    assert not quotas.enabled  # a byte rate has no effect here
    set_quota(quotas, QuotaEntity(client_id="c"), 5.0)
    assert quotas.enabled and quotas.limit("bob", "c") == 5.0 and quotas.limit("bob", "d") is None
    set_quota(quotas, QuotaEntity(client_id="c"), None)
    assert quotas.enabled, "as Kafka's quotasEnabled: on until a restart"
    assert quotas.record("bob", "c", 1e9, 0) == 0  # no quota applies: no throttle


def alteration(entity: tuple[tuple[str, str | None], ...], *ops: tuple[str, float, bool]) -> QuotaAlteration:
    return QuotaAlteration(entity, ops)


ALICE = (("user", "alice"),)
SET_50 = ("request_percentage", 50.0, False)


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ((), (SET_50,), "Invalid empty client quota entity"),
        (
            (("user", "a"), ("user", "b")),
            (SET_50,),
            "Invalid client quota entity, duplicate entity entry user",
        ),
        ((("group", "g"),), (SET_50,), "Unhandled client quota entity type: group"),
        ((("ip", "10.0.0.1"),), (("connection_creation_rate", 5.0, False),), "ip quotas"),
        ((("client-id", ""),), (SET_50,), "Empty client-id not supported"),
        (ALICE, (("fetch_rate", 5.0, False),), "Invalid configuration key fetch_rate"),
        (ALICE, (("request_percentage", 0.0, False),), "Quota request_percentage must be greater than 0"),
        (
            ALICE,
            (("request_percentage", math.nan, False),),
            "Quota request_percentage must be a finite number",
        ),
        (ALICE, (("producer_byte_rate", 1.5, False),), "producer_byte_rate cannot be a fractional value."),
        (ALICE, (SET_50, SET_50), "Duplicate quota key request_percentage"),
    ],
)
def test_alterations_are_refused_as_kafkas_controller_refuses_them(
    entity: tuple[tuple[str, str | None], ...], ops: tuple[tuple[str, float, bool], ...], message: str
) -> None:
    quotas = ClientQuotas()
    outcomes, changes = quotas.alter([alteration(entity, *ops)])
    assert [(o.entity, o.error) for o in outcomes] == [(entity, INVALID_REQUEST)]
    assert outcomes[0].message is not None and outcomes[0].message.startswith(message), outcomes[0].message
    assert changes == []


def test_alterations_change_only_what_changes() -> None:
    quotas = ClientQuotas()
    both = (("user", None), ("client-id", "c"))
    outcomes, changes = quotas.alter(
        [
            alteration(ALICE, SET_50, ("producer_byte_rate", 1024.0, False)),
            alteration(both, ("consumer_byte_rate", 2048.0, False), ("controller_mutation_rate", 0.5, False)),
            alteration(ALICE, SET_50),  # the same entity again: refused
        ]
    )
    assert [o.error for o in outcomes] == [NONE, NONE, INVALID_REQUEST]
    assert outcomes[2].message == "Ignoring duplicate entity user 'alice'"
    quotas.apply(changes)
    assert quotas.configured() == {
        QuotaEntity("alice"): {"request_percentage": 50.0, "producer_byte_rate": 1024.0},
        QuotaEntity(DEFAULT, "c"): {"consumer_byte_rate": 2048.0, "controller_mutation_rate": 0.5},
    }
    # Setting a value a key has, or removing a key that is not set (any key), changes nothing.
    _, nothing = quotas.alter(
        [alteration(ALICE, SET_50, ("consumer_byte_rate", 0.0, True), ("x", 0.0, True))]
    )
    assert nothing == []
    _, removal = quotas.alter(
        [alteration(ALICE, ("request_percentage", 0.0, True), ("producer_byte_rate", 0, True))]
    )
    quotas.apply(removal)
    assert QuotaEntity("alice") not in quotas.configured()  # no key left: no entity


def test_describe_filters_as_kafkas_client_quotas_image() -> None:
    quotas = ClientQuotas()
    entities = [
        QuotaEntity("alice"),
        QuotaEntity(DEFAULT),
        QuotaEntity("alice", "c"),
        QuotaEntity(client_id="c"),
        QuotaEntity(client_id=DEFAULT),
    ]
    quotas.apply([QuotaChange(e, "request_percentage", 10.0 + i) for i, e in enumerate(entities)])

    def found(*components: tuple[str, int, str | None], strict: bool = False) -> list[QuotaEntity]:
        matched = quotas.describe([FilterComponent(*c) for c in components], strict=strict)
        return [entity for entity, _ in matched]

    assert found() == sorted(entities, key=QuotaEntity.sort_key)
    assert found(strict=True) == []
    assert found(("user", MATCH_EXACT, "alice")) == [QuotaEntity("alice"), QuotaEntity("alice", "c")]
    assert found(("user", MATCH_EXACT, "alice"), strict=True) == [QuotaEntity("alice")]
    assert found(("user", MATCH_DEFAULT, None)) == [QuotaEntity(DEFAULT)]
    assert found(("user", MATCH_SPECIFIED, None), strict=True) == [QuotaEntity(DEFAULT), QuotaEntity("alice")]
    assert found(("client-id", MATCH_SPECIFIED, None), ("user", MATCH_EXACT, "alice")) == [
        QuotaEntity("alice", "c")
    ]
    assert found(("ip", MATCH_SPECIFIED, None)) == []
    for components, error in (
        ([("user", MATCH_EXACT, None)], INVALID_REQUEST),
        ([("user", MATCH_DEFAULT, "x")], INVALID_REQUEST),
        ([("user", 7, None)], INVALID_REQUEST),
        ([("user", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)], INVALID_REQUEST),
        ([("ip", MATCH_SPECIFIED, None), ("user", MATCH_SPECIFIED, None)], INVALID_REQUEST),
        ([("group", MATCH_SPECIFIED, None)], ErrorCode.UNSUPPORTED_VERSION),
    ):
        with pytest.raises(InvalidQuotaError) as refused:
            quotas.describe([FilterComponent(*c) for c in components], strict=False)
        assert refused.value.error is error


def test_a_throttled_heartbeat_answer_is_encoded_afresh_and_not_remembered() -> None:
    cache = _wire.HeartbeatCodecCache()
    frame = _wire.Frame(12, 4, 99)
    plain = cache.response(frame, HeartbeatResult(error=NONE))
    throttled = cache.response(frame, HeartbeatResult(error=NONE), 250)
    assert HeartbeatResponse.decode(throttled[4:], version=4, header=True).throttle_time_ms == 250
    again = cache.response(frame, HeartbeatResult(error=NONE))
    assert again == plain
    assert HeartbeatResponse.decode(again[4:], version=4, header=True).throttle_time_ms == 0


def test_stored_quotas_come_back_and_unreadable_rows_are_skipped(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path)
    kept = [
        QuotaChange(QuotaEntity("alice"), "request_percentage", 50.0),
        QuotaChange(QuotaEntity(DEFAULT, "c"), "producer_byte_rate", 1024.0),
    ]
    store.change_client_quotas(kept)
    store.change_client_quotas([QuotaChange(QuotaEntity(client_id=DEFAULT), "request_percentage", 5.0)])
    store.change_client_quotas([QuotaChange(QuotaEntity(client_id=DEFAULT), "request_percentage", None)])
    store.close()
    with sqlite3.connect(tmp_path / "coordinator.sqlite3") as db:
        db.execute("INSERT INTO client_quotas VALUES ('not json', 'request_percentage', 1.0)")
        db.execute("""INSERT INTO client_quotas VALUES ('{"user": "bob"}', 'fetch_rate', 1.0)""")
    store = SqliteStore(tmp_path)
    try:
        assert sorted(store.load_client_quotas(), key=lambda c: c.key) == sorted(kept, key=lambda c: c.key)
        assert len(store.problems) == 2
    finally:
        store.close()


# --- on the wire -----------------------------------------------------------------------------------


def alter(
    sock: socket.socket, *entries: tuple[tuple[tuple[str, str | None], ...], Mapping[str, float | None]]
) -> list[tuple[int, str | None]]:
    """AlterClientQuotas: each entry an entity and its keys' new values (None: remove)."""
    entry_cls = AlterClientQuotasRequest.EntryData
    request = AlterClientQuotasRequest(
        version=1,
        entries=[
            entry_cls(
                entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in entity],
                ops=[
                    entry_cls.OpData(key=k, value=0.0 if v is None else v, remove=v is None)
                    for k, v in ops.items()
                ],
            )
            for entity, ops in entries
        ],
        validate_only=False,
    )
    answer = call(sock, request, AlterClientQuotasResponse)
    return [(e.error_code, e.error_message) for e in answer.entries]


def describe(sock: socket.socket, *components: tuple[str, int, str | None], strict: bool = False) -> Any:
    request = DescribeClientQuotasRequest(
        version=1,
        components=[
            DescribeClientQuotasRequest.ComponentData(entity_type=t, match_type=m, match=n)
            for t, m, n in components
        ],
        strict=strict,
    )
    return call(sock, request, DescribeClientQuotasResponse)


def described(answer: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert answer.error_code == NONE, answer
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {v.key: v.value for v in entry.values}
        for entry in answer.entries
    }


def heavy_until_throttled(sock: socket.socket, client_id: str, limit_s: float = 10.0) -> tuple[int, float]:
    """Metadata naming HAMMER_TOPICS topics until an answer carries a throttle time; that time,
    and when the request it answered was sent (the connection's mute cannot start before)."""
    request = metadata_request(HAMMER_TOPICS)
    deadline = time.monotonic() + limit_s
    while (asked := time.monotonic()) < deadline:
        throttle = int(call(sock, request, MetadataResponse, client_id).throttle_time_ms)
        if throttle:
            return throttle, asked
    raise AssertionError(f"{client_id} was never throttled")


@dataclass
class HeartbeatProbe:
    """A classic member of its own group on a raw connection, heartbeating every 20 ms and
    recording when each heartbeat was sent, how long its answer took, and its error."""

    bootstrap: str
    samples: list[tuple[float, float, int]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        sock = _connect(self.bootstrap)
        joined = call(
            sock,
            JoinGroupRequest(
                version=3,
                group_id="probe",
                session_timeout_ms=30_000,
                rebalance_timeout_ms=30_000,
                member_id="",
                protocol_type="consumer",
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
            ),
            JoinGroupResponse,
            "probe",
        )
        assert joined.error_code == NONE, joined
        synced = call(
            sock,
            SyncGroupRequest(
                version=2,
                group_id="probe",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                assignments=[],
            ),
            SyncGroupResponse,
            "probe",
        )
        assert synced.error_code == NONE, synced
        beat = HeartbeatRequest(
            version=3,
            group_id="probe",
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            group_instance_id=None,
        )

        def run() -> None:
            with sock:
                while not self.stop.wait(0.02):
                    sent = time.monotonic()
                    answer = call(sock, beat, HeartbeatResponse, "probe")
                    self.samples.append((sent, time.monotonic() - sent, int(answer.error_code)))

        self.thread = threading.Thread(target=run, name="heartbeat-probe", daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(10)

    def latencies(self, start: float, end: float) -> list[float]:
        return sorted(took for sent, took, _ in self.samples if start <= sent < end)


def test_a_client_over_its_request_quota_is_throttled_and_muted_while_a_group_beside_it_carries_on() -> None:
    """A client (another process) sends expensive requests back to back from two connections;
    1.5 s in, its client id gets a request_percentage of 1 (10 ms of handling a second). From
    then on its answers carry throttle_time_ms, its connections are not read for that long (it
    does not wait: the coordinator makes it), and its rate drops; a raw member's heartbeats,
    slowed while it hammered, are quick again, and a librdkafka group never rebalances."""
    topics = {"orders": 4, **{f"t{i}": 1 for i in range(HAMMER_TOPICS)}}
    with (
        recording_membership() as membership,
        EmbeddedCoordinator(topics=topics, config=CONFIG) as coordinator,
    ):
        bootstrap = coordinator.bootstrap_servers
        group = [
            MemberProcess("confluent", bootstrap, name, group="healthy", topic="orders", session_ms=6000)
            for name in ("rd-0", "rd-1")
        ]
        with running_members(group):
            # Settled as the members see it, and as the coordinator has logged it: it answers the
            # SyncGroups before it logs the group's "assigned", so a member may own its partitions
            # a moment before that event is here.
            wait_for(
                lambda: (
                    owned_exactly_once(group, 4)
                    and [e.kind for e in membership.of(group="healthy")][-1:] == ["assigned"]
                ),
                30,
                "the librdkafka group to own orders",
            )
            settled = len(membership.events)
            probe = HeartbeatProbe(bootstrap)
            probe.start()
            # Run as a script, this file finds kafka_tools in tests/ as pytest's runs do.
            tests = str(Path(__file__).resolve().parents[1])
            hammering = subprocess.Popen(
                [sys.executable, __file__, "hammer", bootstrap, "hammer", "5", "2"],
                stdout=subprocess.PIPE,
                text=True,
                env={
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join(filter(None, (tests, os.environ.get("PYTHONPATH")))),
                },
            )
            try:
                assert hammering.stdout is not None and hammering.stdout.readline() == "hammering\n"
                time.sleep(1.5)  # unthrottled
                with _connect(bootstrap) as admin:
                    quota_set = time.monotonic()
                    assert alter(admin, ((("client-id", "hammer"),), {"request_percentage": 1.0})) == [
                        (NONE, None)
                    ]
                out, _ = hammering.communicate(timeout=60)
            finally:
                hammering.kill()
                probe.finish()
            assert hammering.returncode == 0
            answers = [tuple(a) for a in json.loads(out)]
            # The group beside it went on as it was: no rebalance, no member lost.
            assert [e.kind for e in membership.events[settled:] if e.group_id == "healthy"] == []
            assert owned_exactly_once(group, 4)

    before = [a for a in answers if a[2] < quota_set]
    after = [a for a in answers if a[1] > quota_set]
    assert before and all(a[3] == 0 for a in before)  # no quota yet: never throttled
    throttled = [a for a in after if a[3] > 0]
    assert throttled, f"never throttled: {after}"
    assert max(a[3] for a in throttled) <= 1000  # at most one window
    # Muted: after an answer carrying T ms, the next answer on that connection came T ms after
    # the request answered was sent (the mute starts with that answer, later), although the
    # hammer sent its next request at once.
    late_senders = []
    muted = 0
    for index in (0, 1):
        mine = sorted((a for a in answers if a[0] == index), key=lambda a: a[2])
        for answer, following in itertools.pairwise(mine):
            if answer[3] > 0:
                muted += 1
                assert following[2] - answer[1] >= answer[3] / 1000 - 0.05, (answer, following)
                if following[1] - answer[2] >= answer[3] / 2000:
                    late_senders.append((answer, following))
    # It did not wait (its next request went at once): the coordinator made it. A loaded machine
    # may keep the hammer's process off the CPU for a few tens of ms, as long as a short mute
    # (once 26 ms after an answer carrying 32 ms): that is the odd pair, never most of them.
    assert muted and len(late_senders) <= muted // 4, (muted, late_senders)
    # Slowed: once one answer was throttled, every request sent after it is (the rate counts at
    # least 10 s, so it cannot fall back under the quota within the hammer's 5 s), and there is at
    # most about one answer per second per connection. (Not compared with the unthrottled rate:
    # that is one answer per handling time, which a loaded machine stretches towards the mute;
    # a 1,000-topic Metadata took 0.2 s beside six busy processes.)
    first = min(a[2] for a in throttled)
    assert all(a[3] > 0 for a in answers if a[1] > first), answers
    late = [a for a in answers if a[2] > first]
    late_span = max(a[2] for a in answers) - first
    assert len(late) <= 2 * (late_span + 1) + 2, (len(late), late_span)
    # The heartbeats beside it: all answered, and much quicker than while it was unthrottled.
    assert {error for _, _, error in probe.samples} == {NONE}
    unthrottled = probe.latencies(min(a[1] for a in answers), quota_set)
    quiet = probe.latencies(first + 0.1, max(a[2] for a in answers))
    assert len(unthrottled) >= 5 and len(quiet) >= 20, (len(unthrottled), len(quiet))
    # A heartbeat waits at most behind one muted request's turn (tens of ms). The test process
    # also runs the coordinator's thread and librdkafka's, beside other tests' processes: an
    # odd answer that a descheduled thread made late (one took 0.56 s in a full run, the median
    # 0.96 ms) is not starvation, and a starved probe would be slow on many answers and in the median.
    slow = [took for took in quiet if took >= 0.5]
    assert statistics.median(quiet) < 0.02 and len(slow) <= max(1, len(quiet) // 50) and max(quiet) < 2, quiet
    assert statistics.median(quiet) < statistics.median(unthrottled), (unthrottled, quiet)


def test_heartbeats_and_cached_answers_carry_the_throttle_time_of_their_client() -> None:
    """Answers from the server's caches of encodings (heartbeats, Metadata of every topic) carry
    a throttled client's throttle time too, and the caches are not changed by it."""
    topics = {f"t{i}": 1 for i in range(HAMMER_TOPICS)}
    with EmbeddedCoordinator(topics=topics, config=CONFIG) as coordinator:
        with _connect(coordinator.bootstrap_servers) as admin:
            assert alter(admin, ((("client-id", "slow"),), {"request_percentage": 0.1})) == [(NONE, None)]
        slow, free = _connect(coordinator.bootstrap_servers), _connect(coordinator.bootstrap_servers)
        with slow, free:
            members = {}
            for sock, client in ((slow, "slow"), (free, "free")):
                joined = call(
                    sock,
                    JoinGroupRequest(
                        version=3,
                        group_id=client,
                        session_timeout_ms=30_000,
                        rebalance_timeout_ms=30_000,
                        member_id="",
                        protocol_type="consumer",
                        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
                    ),
                    JoinGroupResponse,
                    client,
                )
                members[client] = HeartbeatRequest(
                    version=4,
                    group_id=client,
                    generation_id=joined.generation_id,
                    member_id=joined.member_id,
                    group_instance_id=None,
                )
                call(
                    sock,
                    SyncGroupRequest(
                        version=2,
                        group_id=client,
                        generation_id=joined.generation_id,
                        member_id=joined.member_id,
                        assignments=[],
                    ),
                    SyncGroupResponse,
                    client,
                )
            assert call(free, members["free"], HeartbeatResponse, "free").throttle_time_ms == 0
            throttle, asked = heavy_until_throttled(slow, "slow")
            beat = call(slow, members["slow"], HeartbeatResponse, "slow")
            # Muted first: from the throttled answer on, which came after it was asked for (the
            # time the test took to read that answer and send the heartbeat is within the mute).
            assert time.monotonic() - asked >= throttle / 1000 - 0.05
            assert (beat.error_code, beat.throttle_time_ms > 0) == (NONE, True), beat
            every_topic = MetadataRequest(
                version=12,
                topics=None,
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
            listing = call(slow, every_topic, MetadataResponse, "slow")
            assert listing.throttle_time_ms > 0 and len(listing.topics) == HAMMER_TOPICS
            # The free member's answers, from the same caches, carry nothing.
            again = call(free, members["free"], HeartbeatResponse, "free")
            assert (again.error_code, again.throttle_time_ms) == (NONE, 0)
            assert call(free, every_topic, MetadataResponse, "free").throttle_time_ms == 0


def test_quotas_survive_a_restart_with_a_data_dir(tmp_path: Path) -> None:
    topics = {f"t{i}": 1 for i in range(HAMMER_TOPICS)}
    wanted = {
        (("client-id", "batch"),): {"request_percentage": 1.0},
        (("user", None),): {"producer_byte_rate": 1048576.0},  # no effect here
        (("user", "alice"), ("client-id", None)): {"consumer_byte_rate": 2048.0},
    }
    with (
        EmbeddedCoordinator(topics=topics, config=CONFIG, data_dir=tmp_path) as first,
        _connect(first.bootstrap_servers) as sock,
    ):
        assert alter(sock, *wanted.items()) == [(NONE, None)] * 3
        assert described(describe(sock)) == wanted
    with (
        EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path) as second,
        _connect(second.bootstrap_servers) as sock,
    ):
        assert described(describe(sock)) == wanted
        assert 0 < heavy_until_throttled(sock, "batch")[0] <= 1000  # in force from the first request


def test_unknown_keys_bad_values_and_ip_quotas_are_refused_on_the_wire() -> None:
    with EmbeddedCoordinator(config=CONFIG) as coordinator, _connect(coordinator.bootstrap_servers) as sock:
        assert alter(
            sock,
            (ALICE, {"request_percentage": 50.0}),
            ((("user", "bob"),), {"io_thread_percentage": 50.0}),
            ((("user", "carol"),), {"request_percentage": -1.0}),
            ((("ip", "10.0.0.1"),), {"connection_creation_rate": 5.0}),
        ) == [
            (NONE, None),
            (INVALID_REQUEST, "Invalid configuration key io_thread_percentage"),
            (INVALID_REQUEST, "Quota request_percentage must be greater than 0"),
            (
                INVALID_REQUEST,
                "ip quotas (connection_creation_rate) are not served by the embedded coordinator; its "
                "connections are bounded by max_connections_per_ip",
            ),
        ]
        assert described(describe(sock)) == {ALICE: {"request_percentage": 50.0}}
        refused = describe(sock, ("group", MATCH_SPECIFIED, None))
        assert (refused.error_code, refused.error_message, refused.entries) == (
            ErrorCode.UNSUPPORTED_VERSION,
            "Unsupported entity type group",
            None,
        )
        validating = AlterClientQuotasRequest(
            version=0,
            entries=[
                AlterClientQuotasRequest.EntryData(
                    entity=[
                        AlterClientQuotasRequest.EntryData.EntityData(entity_type="user", entity_name="dave")
                    ],
                    ops=[
                        AlterClientQuotasRequest.EntryData.OpData(
                            key="request_percentage", value=5.0, remove=False
                        )
                    ],
                )
            ],
            validate_only=True,
        )
        assert call(sock, validating, AlterClientQuotasResponse).entries[0].error_code == NONE
        assert described(describe(sock)) == {ALICE: {"request_percentage": 50.0}}  # only validated


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[EmbeddedCoordinator]:
    users: dict[str, Any] = {}
    for user in ("admin", "alice"):
        add_user(users, user, PASSWORD, SCRAM_MECHANISMS)
    save_users(tmp_path / "users.json", users)
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0, heartbeat_hold_ms=0, authorizer=True, super_users=("User:admin",)
    )
    topics = {f"t{i}": 1 for i in range(HAMMER_TOPICS)}
    sasl = SaslSettings(
        users_file=tmp_path / "users.json", mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    )
    with EmbeddedCoordinator(topics=topics, config=config, sasl=sasl) as running:
        yield running


def login(coordinator: EmbeddedCoordinator, user: str) -> socket.socket:
    sock: socket.socket = _connect(coordinator.bootstrap_servers)
    assert authenticate(sock, "PLAIN", user, PASSWORD)[0] == NONE
    return sock


def scram_credentials(sock: socket.socket, *users: str) -> Any:
    request = DescribeUserScramCredentialsRequest(
        version=0, users=[DescribeUserScramCredentialsRequest.UserName(name=u) for u in users] or None
    )
    return call(sock, request, DescribeUserScramCredentialsResponse)


def test_quota_apis_are_authorized_and_a_user_quota_holds_that_principal_only(
    secured: EmbeddedCoordinator,
) -> None:
    with login(secured, "alice") as alice, login(secured, "admin") as admin:
        refused = describe(alice)
        assert (refused.error_code, refused.entries) == (REFUSED, None)
        assert alter(alice, (ALICE, {"request_percentage": 1000.0})) == [
            (REFUSED, "Cluster authorization failed.")
        ]
        assert scram_credentials(alice).error_code == REFUSED
        # The admin (a super user) may; the user quota holds alice's connections, whatever their
        # client id, and not the admin's with the same client id.
        assert alter(admin, (ALICE, {"request_percentage": 1.0})) == [(NONE, None)]
        assert described(describe(admin)) == {ALICE: {"request_percentage": 1.0}}
        assert heavy_until_throttled(alice, "shared-id")[0] > 0
        request = metadata_request(HAMMER_TOPICS)
        assert all(
            call(admin, request, MetadataResponse, "shared-id").throttle_time_ms == 0 for _ in range(8)
        )
        # kafka-configs --describe of users then asks for their SCRAM credentials: only their
        # mechanisms and iteration counts, as Kafka answers.
        answer = scram_credentials(admin, "alice", "nobody")
        assert answer.error_code == NONE
        by_user = {r.user: r for r in answer.results}
        assert [(c.mechanism, c.iterations) for c in by_user["alice"].credential_infos] == [
            (1, 4096),
            (2, 4096),
        ]
        assert (by_user["nobody"].error_code, by_user["nobody"].error_message) == (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to describe a user credential that does not exist: nobody",
        )
        assert sorted(r.user for r in scram_credentials(admin).results) == ["admin", "alice"]


# --- Kafka's kafka-configs, as docs/operations.md runs it ----------------------------------------

OPERATIONS_GUIDE = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_kafka_configs_sets_and_describes_quotas_as_the_operations_guide_shows(tmp_path: Path) -> None:
    """The Quotas section's kafka-configs.sh lines, run as written (Kafka's bin/kafka-configs.sh
    runs kafka.admin.ConfigCommand; here a script of that name does, from the Kafka release the
    suite tests against), against a coordinator on a free port for the page's 127.0.0.1:9092;
    the last one prints what the page shows."""
    section = OPERATIONS_GUIDE.read_text().split("\n## Quotas\n", 1)[1].split("\n## ", 1)[0]
    commands_block, printed_block = re.findall(r"```(?:sh)?\n(.*?)```", section, re.DOTALL)[:2]
    commands = [line for line in commands_block.splitlines() if line.strip()]
    assert len(commands) == 3
    with EmbeddedCoordinator(config=CONFIG) as coordinator:
        runs = run_kafka_configs_lines(commands, coordinator.bootstrap_servers, tmp_path)
        assert [(r.returncode, r.stderr) for r in runs] == [(0, "")] * 3, runs
        assert runs[0].stdout == "Completed updating config for user alice.\n"
        assert runs[1].stdout == "Completed updating default config for clients in the cluster.\n"
        assert runs[2].stdout == printed_block
        with _connect(coordinator.bootstrap_servers) as sock:
            assert described(describe(sock)) == {
                ALICE: {"request_percentage": 50.0},
                (("client-id", None),): {"request_percentage": 200.0},
            }
