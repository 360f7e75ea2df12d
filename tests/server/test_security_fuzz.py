"""Hypothesis-generated SASL exchanges and TLS handshakes against one coordinator with a
PLAINTEXT, a SASL_PLAINTEXT and an SSL listener: whatever a client sends, the server answers
with Kafka's errors or closes only that connection; a group on the plaintext listener keeps
heartbeating, and each listener keeps serving well-behaved clients."""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from certificates import issue_pki
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest
from test_bad_input import (
    CLOSE_TIMEOUT_S,
    NONE,
    Sockets,
    api_versions_round_trip,
    encode,
    raw_header,
    stable_raw_member,
    wait_closed,
)
from test_sasl import PASSWORD

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, Listener, SaslSettings, TlsSettings
from coordinator_api._protocol import ApiKey
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500, heartbeat_hold_ms=0)
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
    # The server is shared: once an input breaks it, every later one fails too, so the first
    # failing input is the culprit and shrinking would only mislead.
    phases=[Phase.explicit, Phase.generate],
)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return issue_pki(trustme.CA(), tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def coordinator(
    pki: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedCoordinator]:
    users: dict[str, Any] = {}
    add_user(users, "alice", PASSWORD, SCRAM_MECHANISMS)
    users_file = tmp_path_factory.mktemp("users") / "users.json"
    save_users(users_file, users)
    listeners = [
        Listener(name="PLAINTEXT"),
        Listener(name="SASL_PLAINTEXT", sasl=SaslSettings(users_file=users_file, mechanisms=MECHANISMS)),
        Listener(name="SSL", tls=TlsSettings(certfile=pki["server"])),
    ]
    with EmbeddedCoordinator(config=CONFIG, listeners=listeners) as running:
        yield running


def address(coordinator: EmbeddedCoordinator, listener: str) -> tuple[str, int]:
    host, port = coordinator.bootstrap_servers_of(listener).rsplit(":", 1)
    return host, int(port)


def send_and_close(where: tuple[str, int], data: bytes) -> None:
    """Send ``data``, then end the stream: the server answers what it can and closes, never
    waiting on (wait_closed fails after a few seconds)."""
    with socket.create_connection(where, timeout=CLOSE_TIMEOUT_S) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # already closed by the server: fine
        wait_closed(sock)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def sasl_request(request: Any, correlation_id: int) -> bytes:
    return encode(request, correlation_id)


# A SASL exchange as a client might send it: a handshake naming some mechanism, then tokens that
# look like each mechanism's (PLAIN's NUL-separated triple, SCRAM's comma-separated attributes)
# with arbitrary parts, or arbitrary bytes; or SASL frames with arbitrary bodies.
_TEXT = st.text(max_size=40)
_PLAIN = st.tuples(_TEXT, _TEXT, _TEXT).map(lambda t: "\x00".join(t).encode("utf-8", "surrogatepass"))
_SCRAM_FIRST = st.tuples(st.sampled_from(["n,,", "y,,", "p=x,,", ""]), _TEXT, _TEXT).map(
    lambda t: f"{t[0]}n={t[1]},r={t[2]}".encode("utf-8", "surrogatepass")
)
_SCRAM_FINAL = st.tuples(_TEXT, _TEXT, st.binary(max_size=40)).map(
    lambda t: f"c=biws,r={t[0]},p={t[1]}".encode("utf-8", "surrogatepass") + t[2]
)
_TOKEN = st.one_of(_PLAIN, _SCRAM_FIRST, _SCRAM_FINAL, st.binary(max_size=200))
_MECHANISM = st.one_of(st.sampled_from(MECHANISMS), _TEXT)
_EXCHANGE = st.tuples(_MECHANISM, st.lists(_TOKEN, max_size=3)).map(
    lambda t: (
        sasl_request(SaslHandshakeRequest(version=1, mechanism=t[0]), 1)
        + b"".join(
            sasl_request(SaslAuthenticateRequest(version=2, auth_bytes=token), 2 + i)
            for i, token in enumerate(t[1])
        )
    )
)
_GARBLED = st.tuples(
    st.sampled_from([ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE]),
    st.integers(min_value=-1, max_value=4),
    st.binary(max_size=120),
).map(lambda t: framed(raw_header(int(t[0]), t[1]) + t[2]))


def test_generated_sasl_exchanges_never_break_the_server(coordinator: EmbeddedCoordinator) -> None:
    connect = Sockets(coordinator.port)
    try:
        bystander = stable_raw_member(connect, "bystander", session_ms=60_000)
        sasl = address(coordinator, "SASL_PLAINTEXT")

        @FUZZ
        @given(st.one_of(_EXCHANGE, _GARBLED))
        @example(sasl_request(SaslAuthenticateRequest(version=2, auth_bytes=b"\x00alice\x00x"), 1))
        @example(sasl_request(SaslHandshakeRequest(version=1, mechanism="SCRAM-SHA-256"), 1) * 2)
        @example(framed(raw_header(ApiKey.SASL_AUTHENTICATE, 2) + b"\xff" * 8))
        def check(data: bytes) -> None:
            send_and_close(sasl, data)
            with socket.create_connection(sasl, timeout=CLOSE_TIMEOUT_S) as again:
                api_versions_round_trip(again)  # answered before authentication
            assert bystander.heartbeat() == NONE

        check()
    finally:
        connect.close_all()


def client_hello() -> bytes:
    """The first flight of a real TLS client (Python's ssl module) to 127.0.0.1."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


HELLO = client_hello()

# A real ClientHello cut short, with bytes changed, or with bytes after it; or anything at all.
_MUTATED_HELLO = st.tuples(
    st.integers(min_value=0, max_value=len(HELLO)),
    st.lists(st.tuples(st.integers(min_value=0, max_value=len(HELLO) - 1), st.integers(0, 255)), max_size=8),
    st.binary(max_size=64),
).map(lambda t: bytes(_changed(HELLO, t[1]))[: t[0]] + t[2])


def _changed(data: bytes, changes: list[tuple[int, int]]) -> bytearray:
    changed = bytearray(data)
    for at, value in changes:
        changed[at] = value
    return changed


def test_generated_tls_handshakes_never_break_the_server(
    coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    connect = Sockets(coordinator.port)
    try:
        bystander = stable_raw_member(connect, "tls-bystander", session_ms=60_000)
        secured = address(coordinator, "SSL")
        trusted = ssl.create_default_context(cafile=pki["ca"])

        @FUZZ
        @given(st.one_of(_MUTATED_HELLO, st.binary(min_size=1, max_size=300)))
        @example(HELLO[:5])
        @example(HELLO + HELLO)
        @example(b"\x16\x03\x01\xff\xff" + b"\x00" * 64)
        def check(data: bytes) -> None:
            send_and_close(secured, data)
            with (
                socket.create_connection(secured, timeout=CLOSE_TIMEOUT_S) as raw,
                trusted.wrap_socket(raw, server_hostname="127.0.0.1") as well_behaved,
            ):
                api_versions_round_trip(well_behaved)
            assert bystander.heartbeat() == NONE

        check()
    finally:
        connect.close_all()
