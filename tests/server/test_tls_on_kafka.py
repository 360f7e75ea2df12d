"""TLS and SASL over TLS on the embedded coordinator against Apache Kafka's broker configured the
same way: one single-node Kafka cluster with SSL, SASL_SSL and SASL_PLAINTEXT listeners (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512, one user) and one embedded coordinator with the same three
listeners, both from the same ``TlsSettings`` (one test CA's PEM files, client certificates
requested) and the same user.

kafka-python and librdkafka join a group and describe it over each protocol and mechanism and
see the same answers from both; a wrong password is refused alike (the same error and message,
and the connection closed); a client that does not trust the CA fails the TLS handshake on both,
and a client certificate from another CA is refused on both. Apache Kafka's Java consumer
(JavaMember.java) joins over SASL_SSL on both; its admin client (JavaAuthProbe.java) authenticates
with each mechanism over SASL_PLAINTEXT and SASL_SSL on both, and a wrong password fails it with
Kafka's own authentication error and message on both.

Two differences are pinned down where they show (both in how a refusal looks, not in what is
refused): the embedded coordinator also sends the CA's certificate when ``cafile`` holds it, and
it closes the connection without a TLS alert when it refuses a client certificate.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trustme
from certificates import issue_pki
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient
from kafka_tools import JVM_OPTIONS, _connect
from member_processes import MemberProcess, running_members, wait_for
from test_sasl import PASSWORD, authenticate
from test_sasl_on_kafka import closed
from test_tls import API_VERSIONS_V0

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, Listener, SaslSettings, TlsSettings
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users
from coordinator_api.testing import KafkaCluster, kafka_classpath
from coordinator_api.testing._jvm import compiled

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
USER = "alice"
TOPIC = "t"
PARTITIONS = 2
SERVERS = ("kafka", "ours")
PROTOCOL_IDS = ["SSL", *(f"SASL_SSL-{m}" for m in MECHANISMS)]
# Kafka's SCRAM server's words for a wrong password, before the mechanism's name.
SCRAM_FAILED = "Authentication failed during authentication due to invalid credentials with SASL mechanism"
# librdkafka's log lines (handshake and authentication failures) are not the test's output.
QUIET = {"log_level": 0}


@dataclass(frozen=True)
class Secured:
    """The listeners under test: (server, security protocol) -> bootstrap servers, and the
    test CA's files (``ca``, ``server``, ``client``), another CA's certificate (``stranger``)
    and a client certificate it issued (``stranger-client``)."""

    bootstrap: Mapping[tuple[str, str], str]
    files: Mapping[str, Path]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    folder = tmp_path_factory.mktemp("tls-on-kafka")
    files = issue_pki(trustme.CA(), folder)
    stranger = trustme.CA()
    files["stranger"] = folder / "stranger-ca.pem"
    stranger.cert_pem.write_to_path(files["stranger"])
    files["stranger-client"] = folder / "stranger-client.pem"
    stranger_client = stranger.issue_cert("client@example.com", common_name="client")
    stranger_client.private_key_and_cert_chain_pem.write_to_path(files["stranger-client"])
    users: dict[str, Any] = {}
    add_user(users, USER, PASSWORD, SCRAM_MECHANISMS)
    save_users(folder / "users.json", users)
    # Client certificates are asked for and checked, not required (ssl.client.auth=requested).
    tls = TlsSettings(certfile=files["server"], cafile=files["ca"], client_auth="requested")
    sasl = SaslSettings(users_file=folder / "users.json", mechanisms=MECHANISMS)
    listeners = [
        Listener(name="SSL", tls=tls),
        Listener(name="SASL_SSL", tls=tls, sasl=sasl),
        Listener(name="SASL_PLAINTEXT", sasl=sasl),
    ]
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    with (
        KafkaCluster(brokers=1, sasl_users={USER: PASSWORD}, tls=tls) as kafka,
        EmbeddedCoordinator(config=config, topics={TOPIC: PARTITIONS}, listeners=listeners) as ours,
    ):
        kafka.create_topic(TOPIC, PARTITIONS)
        yield Secured(
            {
                ("kafka", "SSL"): kafka.ssl_bootstrap_servers,
                ("kafka", "SASL_SSL"): kafka.sasl_ssl_bootstrap_servers,
                ("kafka", "SASL_PLAINTEXT"): kafka.sasl_bootstrap_servers,
                ("ours", "SSL"): ours.bootstrap_servers_of("SSL"),
                ("ours", "SASL_SSL"): ours.bootstrap_servers_of("SASL_SSL"),
                ("ours", "SASL_PLAINTEXT"): ours.bootstrap_servers_of("SASL_PLAINTEXT"),
            },
            files,
        )


def rdkafka_settings(cafile: Path, mechanism: str | None, password: str = PASSWORD) -> dict[str, Any]:
    settings: dict[str, Any] = {"security.protocol": "ssl", "ssl.ca.location": str(cafile), **QUIET}
    if mechanism is not None:
        settings.update(
            {
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": mechanism,
                "sasl.username": USER,
                "sasl.password": password,
            }
        )
    return settings


def kafka_python_settings(cafile: Path, mechanism: str | None) -> dict[str, Any]:
    settings: dict[str, Any] = {"security_protocol": "SSL", "ssl_cafile": str(cafile)}
    if mechanism is not None:
        settings.update(
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": mechanism,
                "sasl_plain_username": USER,
                "sasl_plain_password": PASSWORD,
            }
        )
    return settings


def first_rdkafka_error(bootstrap: str, settings: Mapping[str, Any], timeout: float = 20) -> KafkaError:
    """The first error librdkafka reports (its error callback) for a client with ``settings``."""
    errors: list[KafkaError] = []
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, **settings, "error_cb": errors.append}
    admin = AdminClient(config)
    deadline = time.monotonic() + timeout
    while not errors:
        assert time.monotonic() < deadline, f"librdkafka reported no error from {bootstrap}"
        admin.poll(0.1)
    return errors[0]


def protocol_of(mechanism: str | None) -> str:
    return "SSL" if mechanism is None else "SASL_SSL"


@pytest.mark.parametrize("mechanism", [None, *MECHANISMS], ids=PROTOCOL_IDS)
def test_librdkafka_joins_and_kafka_python_describes_the_group_alike(
    secured: Secured, mechanism: str | None
) -> None:
    protocol = protocol_of(mechanism)
    group = f"{protocol}-{mechanism or 'certificate-only'}"
    consumers = {
        server: Consumer(
            {
                "bootstrap.servers": secured.bootstrap[server, protocol],
                "group.id": group,
                "partition.assignment.strategy": "range",
                **rdkafka_settings(secured.files["ca"], mechanism),
            }
        )
        for server in SERVERS
    }
    try:
        for consumer in consumers.values():
            consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while not all(len(c.assignment()) == PARTITIONS for c in consumers.values()):
            assert time.monotonic() < deadline, f"librdkafka did not join {group} on both over {protocol}"
            for consumer in consumers.values():
                consumer.poll(0.05)
        seen = {}
        for server in SERVERS:
            admin = KafkaAdminClient(
                bootstrap_servers=secured.bootstrap[server, protocol],
                request_timeout_ms=10_000,
                **kafka_python_settings(secured.files["ca"], mechanism),
            )
            try:
                listed = [g for g in admin.list_groups() if g["group_id"] == group]
                described = admin.describe_groups([group])[group]
            finally:
                admin.close()
            seen[server] = (
                listed,
                described["error"],
                described["group_state"],
                described["protocol_type"],
                described["protocol_data"],
                [m["member_assignment"]["assigned_partitions"] for m in described["members"]],
            )
        assert seen["ours"] == seen["kafka"]
        assert seen["kafka"] == (
            [
                {
                    "group_id": group,
                    "protocol_type": "consumer",
                    "group_state": "Stable",
                    "group_type": "classic",
                }
            ],
            None,
            "Stable",
            "consumer",
            "range",
            [[{"topic": TOPIC, "partitions": [0, 1]}]],
        )
    finally:
        for consumer in consumers.values():
            consumer.close()


def tls_connection(bootstrap: str, cafile: Path) -> ssl.SSLSocket:
    """A TLS connection that checks the server's certificate against ``cafile``."""
    raw = _connect(bootstrap)
    try:
        return ssl.create_default_context(cafile=str(cafile)).wrap_socket(
            raw, server_hostname=bootstrap.rsplit(":", 1)[0]
        )
    except BaseException:
        raw.close()
        raise


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_is_refused_alike_over_sasl_ssl(secured: Secured, mechanism: str) -> None:
    answers: dict[str, Any] = {}
    for server in SERVERS:
        bootstrap = secured.bootstrap[server, "SASL_SSL"]
        sock = tls_connection(bootstrap, secured.files["ca"])
        try:
            error, message = authenticate(sock, mechanism, USER, "wrong-pass")
            answers[server] = (error, message, closed(sock))
        finally:
            sock.close()
        refusal = first_rdkafka_error(
            bootstrap, rdkafka_settings(secured.files["ca"], mechanism, password="wrong-pass")
        )
        assert message is not None and message in refusal.str(), (server, refusal.str())
        answers[server + " librdkafka"] = refusal.code()
    assert answers["ours"] == answers["kafka"]
    assert answers["ours librdkafka"] == answers["kafka librdkafka"] == KafkaError._AUTHENTICATION
    expected = (
        "Authentication failed: Invalid username or password"
        if mechanism == "PLAIN"
        else f"{SCRAM_FAILED} {mechanism}"
    )
    assert answers["kafka"] == (ErrorCode.SASL_AUTHENTICATION_FAILED, expected, True)


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_a_client_that_does_not_trust_the_ca_fails_the_handshake_alike(
    secured: Secured, protocol: str
) -> None:
    failures: dict[str, Any] = {}
    for server in SERVERS:
        bootstrap = secured.bootstrap[server, protocol]
        with pytest.raises(ssl.SSLCertVerificationError) as refused:
            tls_connection(bootstrap, secured.files["stranger"]).close()
        failures[server] = (refused.value.verify_code, refused.value.verify_message)
        mechanism = None if protocol == "SSL" else "SCRAM-SHA-256"
        failure = first_rdkafka_error(bootstrap, rdkafka_settings(secured.files["stranger"], mechanism))
        assert "certificate verify failed" in failure.str(), failure.str()
        # _SSL, or _TRANSPORT when librdkafka meets the failed handshake in a write: a race
        # in the client, seen with either server (rdkafka_ssl.c reports both).
        assert failure.code() in {KafkaError._SSL, KafkaError._TRANSPORT}, failure.str()
    # Both refuse, for a different reason in OpenSSL's words. Kafka sends its keystore's chain,
    # the server's certificate alone, so the client cannot find the issuer. The embedded
    # coordinator's OpenSSL completes a chain given without its CA from the certificates it
    # loaded to check clients' (TlsSettings.cafile), so it sends the CA too, which the client
    # finds self-signed and untrusted. Python's ssl module cannot turn that off
    # (SSL_MODE_NO_AUTO_CHAIN); a certfile holding the whole chain makes both send the same.
    assert failures["kafka"] == (20, "unable to get local issuer certificate")
    assert failures["ours"] == (19, "self-signed certificate in certificate chain")


def java_member(
    secured: Secured, server: str, name: str, group: str, mechanism: str, password: str = PASSWORD
) -> MemberProcess:
    return MemberProcess(
        "java",
        secured.bootstrap[server, "SASL_SSL"],
        name,
        group=group,
        topic=TOPIC,
        ssl_ca=secured.files["ca"],
        sasl_mechanism=mechanism,
        sasl_user=USER,
        sasl_password=password,
    )


def test_apache_kafkas_java_consumer_joins_over_sasl_ssl_alike(secured: Secured) -> None:
    """A Java consumer per server (a JVM each starts slowly, so both at once), alone in its
    group over SASL_SSL with SCRAM-SHA-512, gets the whole topic; authentication with every
    mechanism, and its refusal, is the next test's (one JVM for every case)."""
    joining = [
        java_member(secured, server, f"{server}-java", "java-sasl-ssl", "SCRAM-SHA-512") for server in SERVERS
    ]
    with running_members(joining):
        wait_for(
            lambda: all(m.owned == {0, 1} for m in joining),
            90,
            "each Java member to get the whole topic over SASL_SSL",
        )
    assert all(not m.events("error") for m in joining)


PROBE = Path(__file__).with_name("JavaAuthProbe.java")


def test_the_java_client_authenticates_with_each_mechanism_over_tls_and_without_alike(
    secured: Secured,
) -> None:
    """Kafka's Java admin client, one JVM for every case (JavaAuthProbe.java): each mechanism
    over SASL_PLAINTEXT and SASL_SSL on both servers describes the cluster and lists the groups;
    a wrong password fails alike on both, with Kafka's own exception and message."""
    cases = []
    for server in SERVERS:
        for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            ca = str(secured.files["ca"]) if protocol == "SASL_SSL" else ""
            bootstrap = secured.bootstrap[server, protocol]
            for mechanism in MECHANISMS:
                cases.append(
                    [f"{server} {protocol} {mechanism}", bootstrap, protocol, mechanism, USER, PASSWORD, ca]
                )
            cases.append(
                [f"{server} {protocol} wrong", bootstrap, protocol, "SCRAM-SHA-512", USER, "wrong", ca]
            )
    kafka = kafka_classpath()
    done = subprocess.run(
        ["java", *JVM_OPTIONS, "-cp", f"{kafka}{os.pathsep}{compiled(PROBE, kafka)}", PROBE.stem],
        input="".join("\t".join(case) + "\n" for case in cases),
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # The client library may log to standard output too: the probe's lines are its JSON objects.
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"label": ')]
    results = {r["label"]: r for r in map(json.loads, lines)}
    assert set(results) == {case[0] for case in cases}, done.stdout
    for server in SERVERS:
        for protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            for mechanism in MECHANISMS:
                assert results[f"{server} {protocol} {mechanism}"]["ok"] is True, results
            wrong = results[f"{server} {protocol} wrong"]
            assert (wrong["ok"], wrong["error"]) == (False, "SaslAuthenticationException"), wrong
            assert wrong["message"] == f"{SCRAM_FAILED} SCRAM-SHA-512", wrong


def handshake_with(bootstrap: str, cafile: Path, certfile: Path | None) -> tuple[str, str]:
    """Connect over TLS presenting ``certfile`` (if any) and send ApiVersions: ("answered", "")
    or ("refused", why)."""
    context = ssl.create_default_context(cafile=str(cafile))
    if certfile is not None:
        context.load_cert_chain(str(certfile))
    raw = _connect(bootstrap)
    try:
        with context.wrap_socket(raw, server_hostname=bootstrap.rsplit(":", 1)[0]) as sock:
            sock.sendall(API_VERSIONS_V0)
            # With TLS 1.3 a refused certificate shows at the first read, as an alert or the close.
            return ("answered", "") if sock.recv(4) else ("refused", "closed")
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError) as exc:
        return "refused", repr(exc)
    finally:
        raw.close()


@pytest.mark.parametrize("protocol", ["SSL", "SASL_SSL"])
def test_requested_client_certificates_are_checked_alike(secured: Secured, protocol: str) -> None:
    outcomes: dict[str, list[tuple[str, str]]] = {}
    for server in SERVERS:
        bootstrap = secured.bootstrap[server, protocol]
        outcomes[server] = [
            handshake_with(bootstrap, secured.files["ca"], certfile)
            for certfile in (None, secured.files["client"], secured.files["stranger-client"])
        ]
    # No certificate, or the CA's: served. Another CA's: refused at the handshake.
    expected = ["answered", "answered", "refused"]
    assert [o[0] for o in outcomes["ours"]] == [o[0] for o in outcomes["kafka"]] == expected
    # How the refusal reaches the client differs. Kafka sends a TLS alert, certificate_unknown;
    # the embedded coordinator closes the connection without one: asyncio's TLS transport drops
    # the alert OpenSSL wrote when the handshake failed (a reset if the client's first request
    # was unread). A client then reports a disconnection, not a refused certificate.
    assert "ALERT_CERTIFICATE_UNKNOWN" in outcomes["kafka"][2][1]
    assert outcomes["ours"][2][1] == "closed" or "ConnectionResetError" in outcomes["ours"][2][1]


def test_the_kafka_cluster_gives_kafka_the_key_as_unencrypted_pkcs8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kafka's PEM keystore reads only PKCS#8 keys; TlsSettings takes any key Python's ssl
    reads. KafkaCluster converts it (here an encrypted SEC 1 key in a file of its own) before
    any broker starts, and without the cryptography package says in one line what to do."""
    from cryptography.hazmat.primitives import serialization

    from coordinator_api.testing._kafka_cluster import _pem_keystore

    leaf = trustme.CA().issue_cert("127.0.0.1")
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    (tmp_path / "server.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.BestAvailableEncryption(b"key-pass"),
        )
    )
    leaf.cert_chain_pems[0].write_to_path(tmp_path / "server.pem")
    tls = TlsSettings(certfile=tmp_path / "server.pem", keyfile=tmp_path / "server.key", password="key-pass")
    keystore = _pem_keystore(tls)
    assert keystore.startswith("-----BEGIN PRIVATE KEY-----")
    assert keystore.count("-----BEGIN CERTIFICATE-----") == 1
    converted = serialization.load_pem_private_key(keystore.encode(), None)
    assert converted.private_numbers() == key.private_numbers()  # type: ignore[union-attr]
    KafkaCluster(tls=tls)  # accepted without starting anything

    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.serialization", None)
    with pytest.raises(ValueError, match=r"server\.key is not an unencrypted PKCS#8 key.*openssl pkcs8"):
        KafkaCluster(tls=tls)
    with pytest.raises(TypeError, match="tls must be a TlsSettings"):
        KafkaCluster(tls={"certfile": "server.pem"})  # type: ignore[arg-type]
