"""SASL on the embedded coordinator against Apache Kafka's broker configured the same way
(SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, one user): the same clients,
the same bytes, the same answers."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka.errors import CoordinatorLoadInProgressError
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.sasl import SaslHandshakeRequest, SaslHandshakeResponse
from kafka_tools import _call, _connect
from test_sasl import PASSWORD, authenticate

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users
from coordinator_api.testing import KafkaCluster

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The SASL listener of each: name -> bootstrap servers."""
    users: dict[str, Any] = {}
    add_user(users, "alice", PASSWORD, SCRAM_MECHANISMS)
    users_file = tmp_path_factory.mktemp("sasl") / "users.json"
    save_users(users_file, users)
    sasl = SaslSettings(users_file=users_file, mechanisms=MECHANISMS)
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    with (
        KafkaCluster(brokers=1, sasl_users={"alice": PASSWORD}) as kafka,
        EmbeddedCoordinator(config=config, sasl=sasl) as ours,
    ):
        yield {"kafka": kafka.sasl_bootstrap_servers, "ours": ours.bootstrap_servers}


def closed(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (waits up to its timeout for it to)."""
    try:
        return sock.recv(1) == b""
    except OSError:
        return True


def refused(bootstrap: str, mechanism: str, user: str, password: str) -> tuple[int, str | None, bool]:
    sock = _connect(bootstrap)
    try:
        error, message = authenticate(sock, mechanism, user, password)
        return error, message, closed(sock) if error else False
    finally:
        sock.close()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_wrong_passwords_and_unknown_users_get_kafkas_answer(servers: dict[str, str], mechanism: str) -> None:
    for user, password in (("alice", "wrong-pass"), ("mallory", PASSWORD), ("alice", PASSWORD)):
        kafka = refused(servers["kafka"], mechanism, user, password)
        assert refused(servers["ours"], mechanism, user, password) == kafka, (user, password)
    assert kafka == (ErrorCode.NONE, "", False)  # alice with her password is in, on both


def test_an_unsupported_mechanism_and_requests_before_authenticating(servers: dict[str, str]) -> None:
    answers = {}
    for name, bootstrap in servers.items():
        sock = _connect(bootstrap)
        try:
            answer = _call(sock, SaslHandshakeRequest(version=1, mechanism="GSSAPI"), SaslHandshakeResponse)
            answers[name] = (answer.error_code, sorted(answer.mechanisms))
        finally:
            sock.close()
        sock = _connect(bootstrap)
        try:  # a request other than ApiVersions or the handshake first: the connection closes
            with pytest.raises((ConnectionError, OSError)):
                _call(sock, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
        finally:
            sock.close()
    assert answers["ours"] == answers["kafka"] == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, sorted(MECHANISMS))


def list_groups(admin: KafkaAdminClient, timeout_s: float = 30) -> Any:
    """ListGroups, asked again while the broker answers COORDINATOR_LOAD_IN_PROGRESS, which
    Kafka's brokers do while their group coordinator loads its partitions after a start (a
    retriable error; kafka-python's admin client does not retry it). Authenticated either way."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return admin.list_groups()
        except CoordinatorLoadInProgressError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_and_librdkafka_authenticate_alike(servers: dict[str, str], mechanism: str) -> None:
    for name, bootstrap in servers.items():
        admin = KafkaAdminClient(
            bootstrap_servers=bootstrap,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
            request_timeout_ms=10_000,
        )
        try:
            assert isinstance(list_groups(admin), list), name
        finally:
            admin.close()
        rdkafka = AdminClient(
            {
                "bootstrap.servers": bootstrap,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism,
                "sasl.username": "alice",
                "sasl.password": PASSWORD,
            }
        )
        assert rdkafka.list_topics(timeout=10).brokers, name
