"""Several listeners on one embedded coordinator, as Kafka's ``listeners`` setting gives a broker:
PLAINTEXT on loopback for local services and SASL_SSL for the rest, one group state behind
both; each client is told the addresses of the listener it came in on."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from certificates import issue_pki
from confluent_kafka import Consumer
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient
from kafka.protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_tools import _call, _connect
from tcp_proxy import ProxyThread
from test_sasl import PASSWORD

from coordinator_api import (
    ConfigurationError,
    CoordinatorConfig,
    EmbeddedCoordinator,
    Listener,
    SaslSettings,
    TlsSettings,
)
from coordinator_api.server import CoordinatorServer
from coordinator_api.server._listeners import parse_listeners
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return issue_pki(trustme.CA(), tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def sasl(tmp_path_factory: pytest.TempPathFactory) -> SaslSettings:
    users: dict[str, Any] = {}
    add_user(users, "alice", PASSWORD, SCRAM_MECHANISMS)
    path = tmp_path_factory.mktemp("users") / "users.json"
    save_users(path, users)
    return SaslSettings(users_file=path)


@pytest.fixture(scope="module")
def coordinator(pki: dict[str, Path], sasl: SaslSettings) -> Iterator[EmbeddedCoordinator]:
    listeners = [
        Listener(name="INTERNAL", port=0),
        Listener(name="EXTERNAL", port=0, tls=TlsSettings(certfile=pki["server"]), sasl=sasl),
    ]
    with EmbeddedCoordinator(topics={"t": 4}, config=CONFIG, listeners=listeners) as running:
        yield running


def test_each_listener_names_its_own_address_in_metadata_and_find_coordinator(
    coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    internal = coordinator.bootstrap_servers_of("INTERNAL")
    assert coordinator.bootstrap_servers == internal  # the first listener's
    external = coordinator.bootstrap_servers_of("EXTERNAL")
    assert internal != external
    with pytest.raises(ConfigurationError, match="no listener named 'OTHER'; there are INTERNAL, EXTERNAL"):
        coordinator.bootstrap_servers_of("OTHER")
    sock = _connect(internal)
    try:
        metadata = _call(sock, MetadataRequest(version=1, topics=None), MetadataResponse)
        found = _call(sock, FindCoordinatorRequest(version=3, key="g", key_type=0), FindCoordinatorResponse)
    finally:
        sock.close()
    internal_port = int(internal.rsplit(":", 1)[1])
    assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", internal_port)]
    assert (found.host, found.port) == ("127.0.0.1", internal_port)
    # On the secured listener kafka-python (TLS, SCRAM) learns the secured address; were it told
    # the plaintext one, its requests after bootstrap would fail the TLS handshake.
    admin = KafkaAdminClient(
        bootstrap_servers=external,
        security_protocol="SASL_SSL",
        ssl_cafile=str(pki["ca"]),
        sasl_mechanism="SCRAM-SHA-256",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
    )
    try:
        brokers = admin.describe_cluster()["brokers"]
        assert [(b["host"], b["port"]) for b in brokers] == [("127.0.0.1", int(external.split(":")[1]))]
        assert "t" in admin.list_topics()
    finally:
        admin.close()


def test_one_group_across_listeners_and_only_the_plaintext_one_is_anonymous(
    coordinator: EmbeddedCoordinator, pki: dict[str, Path]
) -> None:
    # This project's member over SASL_SSL first, librdkafka over PLAINTEXT next: one group.
    remote = ConsumerGroupMember(
        "across",
        coordinator.bootstrap_servers_of("EXTERNAL"),
        topics=["t"],
        assignor="range",
        security_protocol="SASL_SSL",
        ssl_cafile=str(pki["ca"]),
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username="alice",
        sasl_plain_password=PASSWORD,
    )
    local = Consumer(
        {
            "group.id": "across",
            "bootstrap.servers": coordinator.bootstrap_servers_of("INTERNAL"),
            "partition.assignment.strategy": "range",
            "log_level": 0,
        }
    )
    try:
        deadline = time.monotonic() + 30
        while len(remote.assignment()) != 4:
            remote.poll(0.05)
            assert time.monotonic() < deadline, "the SASL_SSL member never got the topic"
        local.subscribe(["t"])
        while True:
            remote.poll(0.05)
            local.poll(0.05)
            owned = sorted(
                [*(p for _, p in remote.assignment()), *(tp.partition for tp in local.assignment())]
            )
            if owned == [0, 1, 2, 3] and local.assignment() and remote.assignment():
                break
            assert time.monotonic() < deadline, f"no shared assignment: {owned}"
    finally:
        local.close()
        remote.close()
    # A client that skips authentication gets nothing from the SASL_SSL listener.
    stranger = Consumer(
        {
            "group.id": "stranger",
            "bootstrap.servers": coordinator.bootstrap_servers_of("EXTERNAL"),
            "security.protocol": "ssl",
            "ssl.ca.location": str(pki["ca"]),
            "log_level": 0,
        }
    )
    try:
        stranger.subscribe(["t"])
        until = time.monotonic() + 2
        while time.monotonic() < until:
            stranger.poll(0.1)
            assert not stranger.assignment()
    finally:
        stranger.close()


def test_listeners_from_kafkas_notation(pki: dict[str, Path], sasl: SaslSettings) -> None:
    tls = TlsSettings(certfile=pki["server"])
    parsed = parse_listeners(
        "INTERNAL://127.0.0.1:9092, external://[::1]:9093",
        protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:sasl_ssl",
        advertised="EXTERNAL://coordinator.example.com:19093",
        tls=tls,
        sasl=sasl,
    )
    assert [
        (lis.name, lis.host, lis.port, lis.security_protocol, lis.client_host, lis.advertised_port)
        for lis in parsed
    ] == [
        ("INTERNAL", "127.0.0.1", 9092, "PLAINTEXT", "127.0.0.1", None),
        ("EXTERNAL", "::1", 9093, "SASL_SSL", "coordinator.example.com", 19093),
    ]
    # Port 0 advertises the port listened on (the one a listener on port 0 is given).
    assert parse_listeners("PLAINTEXT://127.0.0.1:0", advertised="PLAINTEXT://h:0")[0].advertised_port is None
    assert parsed[1].tls is tls and parsed[1].sasl is sasl and parsed[0].tls is None


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("", {}, "got nothing"),
        ("PLAINTEXT:9092", {}, "expected NAME://HOST:PORT"),
        ("PLAINTEXT://127.0.0.1:99999", {}, "port must be 0..65535"),
        ("INTERNAL://127.0.0.1:1", {}, "listener INTERNAL has no security protocol"),
        ("A://127.0.0.1:1", {"protocol_map": "A:TLS"}, "PROTOCOL one of PLAINTEXT"),
        ("SSL://127.0.0.1:1", {}, r"needs TLS certificates \(--ssl-certfile\)"),
        ("SASL_PLAINTEXT://127.0.0.1:1", {}, r"needs SASL users \(--sasl-users-file\)"),
        ("PLAINTEXT://127.0.0.1:1,PLAINTEXT://127.0.0.1:2", {}, "name PLAINTEXT is used twice"),
        (
            "PLAINTEXT://127.0.0.1:1,SSL://127.0.0.1:1",
            {"tls": "yes"},
            "listeners PLAINTEXT and SSL both listen on 127.0.0.1:1",
        ),
        ("PLAINTEXT://127.0.0.1:1", {"tls": "yes"}, "no listener is SSL or SASL_SSL"),
        ("PLAINTEXT://127.0.0.1:1", {"advertised": "OTHER://h:1"}, "OTHER is not one of the listeners"),
        ("PLAINTEXT://127.0.0.1:1", {"advertised": "PLAINTEXT://:2"}, "PLAINTEXT needs a host"),
    ],
)
def test_bad_listener_settings_are_refused_in_one_line(
    spec: str, options: dict[str, Any], message: str, pki: dict[str, Path]
) -> None:
    if options.get("tls") == "yes":
        options = {**options, "tls": TlsSettings(certfile=pki["server"])}
    with pytest.raises(ConfigurationError, match=message):
        parse_listeners(spec, **options)


@pytest.mark.parametrize("port", [0, -1, 65536, True, "9092", 9.5])
def test_a_bad_advertised_port_is_refused(port: Any) -> None:
    with pytest.raises(ConfigurationError, match=r"advertised_port must be 1\.\.65535"):
        Listener(advertised_port=port)


def test_clients_are_told_the_advertised_port() -> None:
    """Metadata and FindCoordinator name the advertised port, not the one listened on: a client
    that bootstraps at the listener itself then reaches the group's coordinator at the
    advertised address (here a TCP proxy on 127.0.0.1, as a NAT or a container's published port
    would forward)."""
    with ProxyThread() as proxy:
        listener = Listener(port=0, advertised_port=proxy.port)
        with EmbeddedCoordinator(listeners=[listener], config=CONFIG) as coordinator:
            proxy.target = ("127.0.0.1", coordinator.port)
            assert coordinator.port != proxy.port
            assert coordinator.bootstrap_servers == f"127.0.0.1:{proxy.port}"
            admin = KafkaAdminClient(
                bootstrap_servers=f"127.0.0.1:{coordinator.port}", client_id="told-the-advertised-port"
            )
            try:
                assert admin.describe_cluster()["brokers"] == [
                    {"broker_id": 0, "host": "127.0.0.1", "port": proxy.port, "rack": None}
                ]
                assert (
                    admin.describe_groups(["behind-the-proxy"])["behind-the-proxy"]["group_state"] == "Dead"
                )
            finally:
                admin.close()
            assert "told-the-advertised-port" in proxy.clients  # it followed the advertised port


@pytest.mark.parametrize("host", ["0.0.0.0", "", "10.1.2.3"])
def test_anonymous_access_beyond_loopback_is_off_unless_asked_for(host: str, sasl: SaslSettings) -> None:
    # Only constructed, never started: tests listen on 127.0.0.1 alone.
    with pytest.raises(ConfigurationError, match="anonymous access there is off by default"):
        CoordinatorServer(listeners=[Listener(host=host)])
    CoordinatorServer(listeners=[Listener(host=host, allow_anonymous=True)])
    CoordinatorServer(listeners=[Listener(host=host, sasl=sasl)])
    # With the authorizer closed to principals no ACL names, the ACLs decide for User:ANONYMOUS.
    CoordinatorServer(listeners=[Listener(host=host)], config=CoordinatorConfig(authorizer=True))
    with pytest.raises(ConfigurationError, match="anonymous access"):
        CoordinatorServer(
            listeners=[Listener(host=host)],
            config=CoordinatorConfig(authorizer=True, allow_everyone_if_no_acl_found=True),
        )
    with pytest.raises(ConfigurationError, match="either listeners or host"):
        CoordinatorServer(port=9092, listeners=[Listener()])


def serve(*flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator_api", "serve", *flags],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_serve_listens_on_every_listener_and_names_each() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "coordinator_api",
            "serve",
            "--listeners",
            "INTERNAL://127.0.0.1:0,REPLICA://127.0.0.1:0",
            "--listener-security-protocol-map",
            "INTERNAL:PLAINTEXT,REPLICA:PLAINTEXT",
            "--advertised-listeners",
            "REPLICA://localhost:0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first, second = process.stdout.readline(), process.stdout.readline()
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert first.startswith("coordinator listening on 127.0.0.1:"), first
    assert first.rstrip().endswith("(listener INTERNAL, PLAINTEXT)"), first
    port = second.split()[3].split(":")[1]
    assert second.rstrip().endswith(f"(listener REPLICA, PLAINTEXT; clients connect to localhost:{port})"), (
        second
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--listeners", "PLAINTEXT://127.0.0.1:0", "--port", "0"],
            "either --listeners or --host and --port",
        ),
        (["--advertised-listeners", "PLAINTEXT://h:0"], "need --listeners"),
        (["--listeners", "SASL_SSL://127.0.0.1:0"], "needs TLS certificates"),
        (["--host", "0.0.0.0", "--port", "0"], "anonymous access there is off by default"),
    ],
)
def test_serve_refuses_bad_listener_flags_in_one_line(flags: list[str], message: str) -> None:
    done = serve(*flags)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_serve_takes_its_listeners_and_their_security_from_the_config_file(
    pki: dict[str, Path], sasl: SaslSettings, tmp_path: Path
) -> None:
    # docs/coordinator.md's [server] table, as written but for free ports, with the page's files.
    (example,) = [
        block
        for block in re.findall(
            r"```toml\n(.*?)```", (ROOT / "docs" / "coordinator.md").read_text(), re.DOTALL
        )
        if block.startswith("[server]")
    ]
    (tmp_path / "coordinator.toml").write_text(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:0", example))
    shutil.copy(pki["server"], tmp_path / "server.pem")
    shutil.copy(sasl.users_file, tmp_path / "users.json")
    process = subprocess.Popen(
        [sys.executable, "-m", "coordinator_api", "serve", "--config", "coordinator.toml"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        internal, external = process.stdout.readline(), process.stdout.readline()
        assert internal.rstrip().endswith("(listener INTERNAL, PLAINTEXT)"), internal
        assert external.rstrip().endswith("(listener EXTERNAL, SASL_SSL)"), external
        admin = KafkaAdminClient(
            bootstrap_servers=external.split()[3],
            security_protocol="SASL_SSL",
            ssl_cafile=str(pki["ca"]),
            sasl_mechanism="SCRAM-SHA-512",  # the file's only mechanism
            sasl_plain_username="alice",
            sasl_plain_password=PASSWORD,
        )
        try:
            assert admin.list_topics() == []
        finally:
            admin.close()
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.mark.parametrize(
    ("server_table", "message"),
    [
        (
            'hosts = "127.0.0.1"',
            "unknown [server] setting hosts; known: advertised_listeners, allow_anonymous",
        ),
        ('port = "9092"', "[server] port must be int, got '9092'"),
        ("allow_anonymous = 1", "[server] allow_anonymous must be bool, got 1"),
        ("listeners = [1]", "[server] listeners must be a list of strings, got [1]"),
        ("port = 70000", "[server] port must be 0..65535, got 70000"),
        (
            'ssl_client_auth = "maybe"',
            "--ssl-keyfile, --ssl-cafile and --ssl-client-auth need --ssl-certfile",
        ),
    ],
)
def test_a_bad_server_table_is_refused_in_one_line(server_table: str, message: str, tmp_path: Path) -> None:
    config = tmp_path / "coordinator.toml"
    config.write_text(f"[server]\n{server_table}\n")
    done = serve("--config", str(config))
    assert done.returncode == 2
    assert message in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_flag_overrides_the_server_table(tmp_path: Path) -> None:
    config = tmp_path / "coordinator.toml"
    config.write_text('[server]\nhost = "127.0.0.1"\nport = 1\n')  # port 1 would need root
    process = subprocess.Popen(
        [sys.executable, "-m", "coordinator_api", "serve", "--config", str(config), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("coordinator listening on 127.0.0.1:") and not line.rstrip().endswith(":1"), (
            line
        )
    finally:
        process.terminate()
        process.wait(timeout=30)
