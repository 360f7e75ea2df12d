"""SASL on the embedded coordinator: PLAIN and SCRAM-SHA-256/512 with real clients (librdkafka,
kafka-python's admin client, this project's member), plaintext and over TLS; wrong passwords,
unknown users and requests before authenticating are refused as Kafka refuses them. The users
file holds SCRAM credentials only, never a password."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme
from confluent_kafka import Consumer
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient
from kafka.net.sasl.scram import ScramClient
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from kafka_tools import _call, _connect

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings, TlsSettings
from coordinator_api._protocol import ApiKey, ErrorCode
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, load_users, save_users

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)
PASSWORD = "s3cret-pass"


@pytest.fixture(scope="module")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sasl") / "users.json"
    users: dict = {}
    add_user(users, "alice", PASSWORD, SCRAM_MECHANISMS)
    save_users(path, users)
    return path


@pytest.fixture
def coordinator(users_file: Path) -> Iterator[EmbeddedCoordinator]:
    sasl = SaslSettings(users_file=users_file, mechanisms=("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"))
    with EmbeddedCoordinator(topics={"t": 4}, config=CONFIG, sasl=sasl) as running:
        yield running


def wait_until(condition: Callable[[], bool], poll: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        poll()


def test_the_users_file_holds_no_password(users_file: Path) -> None:
    text = users_file.read_text()
    assert PASSWORD not in text and "iterations" in text
    assert users_file.stat().st_mode & 0o077 == 0  # readable by its owner only
    (alice,) = load_users(users_file).values()
    assert sorted(alice) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert all(c.accepts(PASSWORD, m) and not c.accepts("wrong", m) for m, c in alice.items())


def test_librdkafka_authenticates_and_consumes_as_a_group_member(coordinator: EmbeddedCoordinator) -> None:
    # This project's member authenticates in the SASL_SSL and `serve` tests below.
    rdkafka = Consumer(
        {
            "bootstrap.servers": coordinator.bootstrap_servers,
            "group.id": "g-scram",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": PASSWORD,
            "log_level": 0,
        }
    )
    try:
        rdkafka.subscribe(["t"])
        wait_until(
            lambda: len(rdkafka.assignment()) == 4, lambda: rdkafka.poll(0.05), "librdkafka over SCRAM"
        )
    finally:
        rdkafka.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_pythons_admin_client_authenticates_with_each_mechanism(
    coordinator: EmbeddedCoordinator, mechanism: str
) -> None:
    admin = KafkaAdminClient(
        bootstrap_servers=coordinator.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
    )
    try:
        assert admin.list_groups() == []
        assert admin.describe_cluster()["cluster_id"] == "coordinator-api"
    finally:
        admin.close()


def authenticate(sock: socket.socket, mechanism: str, user: str, password: str) -> tuple[int, str | None]:
    """SaslHandshake v1 and SaslAuthenticate v2 over a raw connection, as Kafka's clients send
    them (kafka-python's SCRAM client makes the tokens); the last answer's error and message."""
    handshake = _call(sock, SaslHandshakeRequest(version=1, mechanism=mechanism), SaslHandshakeResponse)
    assert handshake.error_code == ErrorCode.NONE
    if mechanism == "PLAIN":
        tokens = [f"\x00{user}\x00{password}".encode()]
    else:
        scram = ScramClient(user, password, mechanism)
        first = _call(
            sock,
            SaslAuthenticateRequest(version=2, auth_bytes=scram.first_message()),
            SaslAuthenticateResponse,
        )
        if first.error_code:
            return first.error_code, first.error_message
        scram.process_server_first_message(bytes(first.auth_bytes))
        tokens = [scram.final_message()]
    answer = _call(sock, SaslAuthenticateRequest(version=2, auth_bytes=tokens[0]), SaslAuthenticateResponse)
    return answer.error_code, answer.error_message


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", PASSWORD)])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_wrong_passwords_and_unknown_users_are_refused_as_kafka_refuses_them(
    coordinator: EmbeddedCoordinator, mechanism: str, user: str, password: str
) -> None:
    sock = _connect(coordinator.bootstrap_servers)
    try:
        error, message = authenticate(sock, mechanism, user, password)
        assert error == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert message == (  # Kafka's words (tests/server/test_sasl_on_kafka.py compares)
            "Authentication failed: Invalid username or password"
            if mechanism == "PLAIN"
            else "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            + mechanism
        )
        assert sock.recv(1) == b""  # and the connection is closed
    finally:
        sock.close()
    sock = _connect(coordinator.bootstrap_servers)
    try:  # the right password on a new connection: in, and served
        assert authenticate(sock, mechanism, "alice", PASSWORD) == (ErrorCode.NONE, "")
        listed = _call(sock, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
        assert listed.error_code == ErrorCode.NONE
    finally:
        sock.close()


def test_nothing_but_the_handshake_before_authenticating(coordinator: EmbeddedCoordinator) -> None:
    sock = _connect(coordinator.bootstrap_servers)
    try:
        versions = _call(
            sock,
            ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"),
            ApiVersionsResponse,
        )
        assert {ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE} <= {k.api_key for k in versions.api_keys}
        with pytest.raises(ConnectionError):  # ListGroups before authenticating: the connection closes
            _call(sock, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
    finally:
        sock.close()
    sock = _connect(coordinator.bootstrap_servers)
    try:
        answer = _call(sock, SaslHandshakeRequest(version=1, mechanism="GSSAPI"), SaslHandshakeResponse)
        assert answer.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert answer.mechanisms == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        with pytest.raises((ConnectionError, OSError)):
            _call(sock, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
    finally:
        sock.close()


def test_sasl_over_tls(users_file: Path, tmp_path: Path) -> None:
    ca = trustme.CA()
    server_pem, ca_pem = tmp_path / "server.pem", tmp_path / "ca.pem"
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(server_pem)
    ca.cert_pem.write_to_path(ca_pem)
    tls = TlsSettings(certfile=server_pem)
    sasl = SaslSettings(users_file=users_file)
    with EmbeddedCoordinator(topics={"t": 2}, config=CONFIG, tls=tls, sasl=sasl) as coordinator:
        member = ConsumerGroupMember(
            "sasl-ssl",
            coordinator.bootstrap_servers,
            topics=["t"],
            security_protocol="SASL_SSL",
            ssl_cafile=str(ca_pem),
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        )
        try:
            wait_until(
                lambda: len(member.assignment()) == 2, lambda: member.poll(0.05), "a member over SASL_SSL"
            )
        finally:
            member.close()


def test_users_are_managed_with_the_cli_and_serve_requires_them(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "coordinator_api"]
    users = tmp_path / "users.json"

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*cli, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
        )

    added = run("users", "add", "bob", "--users-file", str(users), stdin="hunter2-but-longer\n")
    assert (added.returncode, added.stdout) == (0, "user bob: SCRAM-SHA-256, SCRAM-SHA-512\n"), added.stderr
    run(
        "users",
        "add",
        "carol",
        "--users-file",
        str(users),
        "--mechanism",
        "SCRAM-SHA-512",
        stdin="pw-carol\n",
    )
    listed = run("users", "list", "--users-file", str(users), "--json")
    assert json.loads(listed.stdout) == [
        {"user": "bob", "mechanisms": ["SCRAM-SHA-256", "SCRAM-SHA-512"]},
        {"user": "carol", "mechanisms": ["SCRAM-SHA-512"]},
    ]
    assert "hunter2" not in users.read_text()
    assert run("users", "remove", "carol", "--users-file", str(users)).returncode == 0
    gone = run("users", "remove", "carol", "--users-file", str(users))
    assert (
        gone.returncode == 2 and gone.stderr.strip() == f"coordinator-api: error: no user 'carol' in {users}"
    )
    missing = run("serve", "--port", "0", "--sasl-users-file", str(tmp_path / "nobody.json"))
    assert missing.returncode == 2 and missing.stderr.startswith("coordinator-api: error: users file ")
    server = subprocess.Popen(
        [*cli, "serve", "--port", "0", "--topic", "t:2", "--sasl-users-file", str(users)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        bootstrap = server.stdout.readline().strip().rsplit(" ", 1)[-1]
        member = ConsumerGroupMember(
            "served",
            bootstrap,
            topics=["t"],
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256",
            sasl_plain_username="bob",
            sasl_plain_password="hunter2-but-longer",
        )
        try:
            wait_until(lambda: len(member.assignment()) == 2, lambda: member.poll(0.05), "a member of serve")
        finally:
            member.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
