"""The embedded coordinator over TLS (Kafka's SSL security protocol), with real clients:
librdkafka and this project's member in one group, kafka-python's admin client, each verifying
the server's certificate; client certificates when the listener requires them. Certificates
come from a test CA (trustme)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trustme
from certificates import certified_member, issue_pki
from confluent_kafka import Consumer
from coordinator_consumer import ConsumerGroupMember
from cryptography import x509
from kafka.admin import KafkaAdminClient
from member_processes import MemberProcess, owned_exactly_once, wait_for

from coordinator_api import (
    ConfigurationError,
    CoordinatorConfig,
    EmbeddedCoordinator,
    GroupJoinError,
    TlsSettings,
)
from coordinator_api.server._tls import certificate_principal

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)
# ApiVersions v0, correlation id 1, no client id: the smallest request a client sends first.
API_VERSIONS_V0 = b"\x00\x00\x00\x0a" + b"\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def pki(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The CA, the server's certificate for 127.0.0.1 and a client's, as PEM files."""
    return issue_pki(ca, tmp_path_factory.mktemp("pki"))


@pytest.fixture
def tls_coordinator(pki: dict[str, Path]) -> Iterator[EmbeddedCoordinator]:
    tls = TlsSettings(certfile=pki["server"])
    with EmbeddedCoordinator(topics={"t": 4}, config=CONFIG, tls=tls) as running:
        yield running


def wait_for_assignment(
    poll: Callable[[], object], assigned: Callable[[], bool], what: str, timeout: float = 30
) -> None:
    deadline = time.monotonic() + timeout
    while not assigned():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        poll()


def test_librdkafka_and_our_member_share_a_group_and_kafka_python_sees_it_over_tls(
    tls_coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    bootstrap = tls_coordinator.bootstrap_servers
    ca_file = str(pki["ca"])
    # One protocol both members support: range.
    ours = ConsumerGroupMember(
        "secure", bootstrap, topics=["t"], assignor="range", security_protocol="SSL", ssl_cafile=ca_file
    )
    rdkafka = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "secure",
            "security.protocol": "ssl",
            "ssl.ca.location": ca_file,
            "partition.assignment.strategy": "range",
            "log_level": 0,
        }
    )
    try:
        rdkafka.subscribe(["t"])

        def poll() -> None:
            ours.poll(0.05)
            rdkafka.poll(0.05)

        def split() -> bool:
            owned = [
                *(p for _, p in ours.assignment()),
                *(p.partition for p in rdkafka.assignment()),
            ]
            return sorted(owned) == [0, 1, 2, 3] and len(ours.assignment()) > 0

        wait_for_assignment(poll, split, "both clients to share the topic over TLS")
        # kafka-python's admin client sees the group over TLS too.
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, security_protocol="SSL", ssl_cafile=ca_file)
        try:
            assert [g["group_id"] for g in admin.list_groups()] == ["secure"]
        finally:
            admin.close()
    finally:
        ours.close()
        rdkafka.close()


def test_a_plaintext_client_is_refused_and_the_listener_serves_on(
    tls_coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    host, port = tls_coordinator.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as plain:
        plain.sendall(API_VERSIONS_V0)
        assert plain.recv(4096)[:1] in (b"", b"\x15")  # closed, or a TLS alert: never an answer
    member = ConsumerGroupMember(
        "after",
        tls_coordinator.bootstrap_servers,
        topics=["t"],
        security_protocol="SSL",
        ssl_cafile=str(pki["ca"]),
    )
    try:
        wait_for_assignment(lambda: member.poll(0.05), lambda: len(member.assignment()) == 4, "a TLS member")
    finally:
        member.close()


def test_client_certificates_when_the_listener_requires_them(ca: trustme.CA, pki: dict[str, Path]) -> None:
    tls = TlsSettings(certfile=pki["server"], cafile=pki["ca"], client_auth="required")
    with EmbeddedCoordinator(topics={"t": 2}, config=CONFIG, tls=tls) as coordinator:
        host, port = coordinator.bootstrap_servers.rsplit(":", 1)
        anonymous = ssl.create_default_context(cafile=str(pki["ca"]))
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            api_versions_without_a_certificate(anonymous, host, int(port))
        member = certified_member(coordinator.bootstrap_servers, pki)
        try:
            wait_for_assignment(lambda: member.poll(0.05), lambda: len(member.assignment()) == 2, "a member")
        finally:
            member.close()


def test_a_client_certificate_names_the_principal_the_acls_check(
    ca: trustme.CA, pki: dict[str, Path], tmp_path: Path
) -> None:
    # As Kafka's default ssl.principal.mapping.rules: User: and the subject in RFC 2253 form.
    pem = pki["client"].read_bytes()
    client = x509.load_pem_x509_certificate(pem[pem.index(b"-----BEGIN CERTIFICATE-----") :])
    principal = f"User:{client.subject.rfc4514_string()}"
    assert principal.startswith("User:CN=client,")
    other = tmp_path / "other.pem"
    stranger = ca.issue_cert("other@example.com", common_name="other")
    stranger.private_key_and_cert_chain_pem.write_to_path(other)
    tls = TlsSettings(certfile=pki["server"], cafile=pki["ca"], client_auth="required")
    config = CoordinatorConfig(initial_rebalance_delay_ms=0, authorizer=True, super_users=(principal,))
    with EmbeddedCoordinator(topics={"t": 2}, config=config, tls=tls) as coordinator:

        def member(certfile: Path) -> ConsumerGroupMember:
            return ConsumerGroupMember(
                "certified",
                coordinator.bootstrap_servers,
                topics=["t"],
                security_protocol="SSL",
                ssl_cafile=str(pki["ca"]),
                ssl_certfile=str(certfile),
            )

        allowed = member(pki["client"])
        try:
            wait_for_assignment(
                lambda: allowed.poll(0.05), lambda: len(allowed.assignment()) == 2, "a member"
            )
        finally:
            allowed.close()
        refused = member(other)  # no ACL names its principal, and it is no super user
        try:
            with pytest.raises(GroupJoinError, match="GROUP_AUTHORIZATION_FAILED"):
                poll_for(refused, seconds=30)
        finally:
            refused.close()


def test_the_principal_escapes_a_subject_as_rfc_2253_does() -> None:
    subject = ((("countryName", "DE"),), (("organizationName", "a, b+c"),), (("commonName", " x;"),))
    assert certificate_principal({"subject": subject}) == "User:CN=\\ x\\;,O=a\\, b\\+c,C=DE"
    assert certificate_principal({}) is None and certificate_principal(None) is None


def poll_for(member: ConsumerGroupMember, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        member.poll(0.05)


def api_versions_without_a_certificate(context: ssl.SSLContext, host: str, port: int) -> None:
    with (
        socket.create_connection((host, port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as wrapped,
    ):
        wrapped.sendall(API_VERSIONS_V0)
        if not wrapped.recv(4):  # with TLS 1.3 the refusal comes at the first read
            raise ConnectionResetError("closed")


def test_unusable_tls_settings_are_refused_in_one_line(pki: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"TLS: cannot use .*missing\.pem"):
        TlsSettings(certfile=tmp_path / "missing.pem")
    with pytest.raises(ConfigurationError, match="needs cafile"):
        TlsSettings(certfile=pki["server"], client_auth="required")
    with pytest.raises(ConfigurationError, match="client_auth must be one of none, requested, required"):
        TlsSettings(certfile=pki["server"], client_auth="always")  # type: ignore[arg-type]


def test_apache_kafkas_java_consumer_joins_over_tls(
    tls_coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    # A PEM truststore (Kafka's ssl.truststore.type=PEM); Java checks the host name too.
    members = [
        MemberProcess(
            "java",
            tls_coordinator.bootstrap_servers,
            f"tls-{i}",
            group="java-tls",
            topic="t",
            ssl_ca=pki["ca"],
        )
        for i in range(2)
    ]
    try:
        wait_for(lambda: owned_exactly_once(members, 4), 60, "two Java consumers to share the topic over TLS")
    finally:
        for member in members:
            member.terminate()


def test_serve_speaks_tls_with_its_ssl_flags_and_refuses_bad_files_in_one_line(
    pki: dict[str, Path], tmp_path: Path
) -> None:
    cli = [sys.executable, "-m", "coordinator_api"]
    missing = subprocess.run(
        [*cli, "serve", "--port", "0", "--ssl-certfile", str(tmp_path / "nope.pem")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert missing.returncode == 2
    (line,) = missing.stderr.splitlines()
    assert line.startswith("coordinator-api: error: TLS: cannot use ") and "nope.pem" in line
    server = subprocess.Popen(
        [*cli, "serve", "--port", "0", "--topic", "t:2", "--ssl-certfile", str(pki["server"])],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert server.stdout is not None
        listening = server.stdout.readline()
        bootstrap = listening.strip().rsplit(" ", 1)[-1]
        assert listening.startswith("coordinator listening on 127.0.0.1:"), listening
        member = ConsumerGroupMember(
            "served", bootstrap, topics=["t"], security_protocol="SSL", ssl_cafile=str(pki["ca"])
        )
        try:
            wait_for_assignment(lambda: member.poll(0.05), lambda: len(member.assignment()) == 2, "a member")
        finally:
            member.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
