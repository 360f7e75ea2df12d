"""A real Apache Kafka 4 cluster on 127.0.0.1 for tests and benchmarks.

:class:`KafkaCluster` runs 1 or 3 KRaft nodes, each a combined broker and controller in its own
Java process with a small heap, on free loopback ports. The jars come from Maven Central through
the ordinary Maven client: ``mvn dependency:copy-dependencies`` on the small pom shipped beside
this module (``kafka/pom.xml``, which pins the version) copies them into a cache directory once;
every later cluster starts from that cache with no network.

Faults are real: :meth:`KafkaCluster.stop_broker` is a controlled shutdown (SIGTERM),
:meth:`~KafkaCluster.kill_broker` a SIGKILL, :meth:`~KafkaCluster.pause_broker` a SIGSTOP, and
:meth:`~KafkaCluster.start_broker` restarts a node on its old ports and log directory. On Linux
each broker is started under ``setpriv --pdeathsig KILL`` so that no broker outlives the process
that started it, even when that process is killed; :meth:`~KafkaCluster.close` stops them all
and removes the cluster's directory.

Needs ``java`` (17 or newer) and ``mvn`` on ``PATH``; without them :class:`KafkaToolsMissing`
says in one line what to install.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final, TypeVar

from coordinator_api._inspect import find_coordinator, group_configs
from coordinator_api.server._tls import TlsSettings
from coordinator_api.testing._jvm import SharedClasses, cache_root, shared_classes

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = [
    "KAFKA_VERSION",
    "KafkaBroker",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaToolsMissing",
    "kafka_classpath",
]

_POM: Final = Path(__file__).parent / "kafka" / "pom.xml"
_LOOPBACK: Final = "127.0.0.1"
log = logging.getLogger(__name__)
_STORAGE_TOOL: Final = "kafka.tools.StorageTool"
_BROKER: Final = "kafka.Kafka"
_OFFSETS_PARTITIONS: Final = 6  # few partitions of __consumer_offsets: quick to create and load
_PROBE_TIMEOUT_MS: Final = 5000  # how long one poll of a starting cluster may wait (_probe)
_SASL_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # of a SASL listener (sasl_users)
_STANDARD_AUTHORIZER: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
# The principal of every PLAINTEXT connection, the nodes' own among them (see ``authorizer``).
_NODES_PRINCIPAL: Final = "User:ANONYMOUS"

TEST_JVM_OPTIONS: Final[tuple[str, ...]] = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
)
"""The brokers' JVM options for tests: one GC thread and the C1 compiler only, which start fast
and stay small on a 2-core machine. A benchmark that measures the broker as it runs in
production passes ``jvm_options`` without ``-XX:TieredStopAtLevel=1``."""

KAFKA_VERSION: Final[str] = re.search(  # type: ignore[union-attr]
    r"<kafka\.version>([^<]+)</kafka\.version>", _POM.read_text(encoding="utf-8")
).group(1)
"""The Apache Kafka release the cluster runs, pinned in ``kafka/pom.xml``."""

_INSTALL_HINT: Final = "install a JDK 17+ and Maven (Debian: apt-get install openjdk-17-jdk-headless maven)"

_LOG4J2: Final = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.org.name = org.apache.kafka
logger.org.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

_ClusterT = TypeVar("_ClusterT", bound="KafkaCluster")


class KafkaToolsMissing(RuntimeError):
    """``java`` or ``mvn`` is not on ``PATH``, so Apache Kafka cannot be fetched or run."""


class KafkaClusterError(RuntimeError):
    """A broker did not start, stop or become ready in time; the message ends with its log."""


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise KafkaToolsMissing(
            f"Apache Kafka {KAFKA_VERSION} for tests needs `{tool}` on PATH: {_INSTALL_HINT}"
        )
    return path


def kafka_classpath(cache_dir: str | os.PathLike[str] | None = None) -> str:
    """The Java classpath of Apache Kafka :data:`KAFKA_VERSION`, fetched with Maven once.

    The jars are copied into ``<cache>/kafka-<version>-<pom digest>/libs``, where ``<cache>`` is
    ``cache_dir``, else ``$COORDINATOR_API_KAFKA_CACHE``, else ``~/.cache/coordinator-api``. A
    lock file keeps concurrent test processes from fetching twice; a half-finished fetch is
    never used (the directory is renamed into place when complete).

    :raises KafkaToolsMissing: ``java`` or ``mvn`` is not on ``PATH``.
    :raises KafkaClusterError: Maven could not resolve the jars; the message has its output.
    """
    _require("java")
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    digest = hashlib.sha256(_POM.read_bytes()).hexdigest()[:12]  # another pom, other jars
    home = root / f"kafka-{KAFKA_VERSION}-{digest}"
    libs = home / "libs"
    classpath = f"{libs}{os.sep}*"
    if libs.is_dir():
        return classpath
    mvn = _require("mvn")
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if libs.is_dir():  # fetched by another process while this one waited
            return classpath
        partial = Path(tempfile.mkdtemp(prefix="libs-", dir=home))
        pom = partial / "pom.xml"
        shutil.copyfile(_POM, pom)
        result = subprocess.run(
            [
                mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
                f"-DoutputDirectory={partial / 'jars'}", "-DincludeScope=runtime",
            ],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if result.returncode != 0 or not any((partial / "jars").glob("kafka_2.13-*.jar")):
            shutil.rmtree(partial, ignore_errors=True)
            raise KafkaClusterError(
                f"mvn could not fetch Apache Kafka {KAFKA_VERSION} (exit {result.returncode}):\n"
                + (result.stdout + result.stderr)[-4000:]
            )
        (partial / "jars").rename(libs)
        shutil.rmtree(partial, ignore_errors=True)
    return classpath


#: JVM options for a short-lived Kafka tool: a small heap and no JIT tiers beyond C1 start it
#: fastest on a loaded machine.
TOOL_JVM_OPTIONS: Final = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData")
#: Each run of a tool starts a JVM; on two loaded cores that alone can take several seconds.
TOOL_TIMEOUT_S: Final = 120


def run_kafka_tool(
    main: str, *args: str, timeout: float = TOOL_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """Run the Apache Kafka tool whose main class is ``main`` (``kafka-consumer-groups`` is
    ``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand``) with ``args``, from
    :func:`kafka_classpath`'s jars, and wait for it; its classes are mapped from the archive an
    earlier run of it recorded (three times quicker to start).

    :raises subprocess.TimeoutExpired: it ran longer than ``timeout`` seconds.
    """
    classpath = kafka_classpath()
    shared = shared_classes(main, classpath)
    returncode = -1
    try:
        done = subprocess.run(
            ["java", *TOOL_JVM_OPTIONS, *shared.options, "-cp", classpath, main, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        returncode = done.returncode
        return done
    finally:
        shared.ended(returncode)


_START_ATTEMPTS: Final = 3
_PORT_TAKEN: Final = "Address already in use"
_PICKED_PORTS: set[int] = set()  # handed out by this process, perhaps not bound yet


def _ephemeral_ports() -> tuple[int, int]:
    """The range the kernel picks local ports from (outgoing connections, listeners on 0)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A port free on 127.0.0.1 now, for a server another process binds later (a broker, after
    its storage is formatted, seconds later). It is picked below the kernel's ephemeral range: a
    port the kernel hands out (bind to 0) could meanwhile become the local port of any process's
    outgoing connection, and the server would fail with "Address already in use". Never one
    handed out before by this process."""
    low, _ = _ephemeral_ports()
    candidates = range(max(1024, low - 16384), low) if low > 2048 else range(0)
    for _ in range(200):
        port = random.choice(candidates) if candidates else 0
        if port in _PICKED_PORTS:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((_LOOPBACK, port))
            except OSError:
                continue
            port = int(s.getsockname()[1])
        _PICKED_PORTS.add(port)
        return port
    raise KafkaClusterError("no free port on loopback below the ephemeral range")


def _stopped(pid: int) -> bool | None:
    """Whether the process is stopped (SIGSTOP delivered), from /proc; None where there is no
    /proc to read (the signal is then taken as delivered)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None
    return state in ("T", "t")


def _client_listeners(broker: KafkaBroker) -> dict[str, str]:
    """The node's client listeners, each named after its security protocol: name -> address.
    PLAINTEXT, always first, is also the brokers' own listener."""
    listeners = {
        "PLAINTEXT": broker.address,
        "SASL_PLAINTEXT": broker.sasl_address,
        "SSL": broker.ssl_address,
        "SASL_SSL": broker.sasl_ssl_address,
    }
    return {name: address for name, address in listeners.items() if address is not None}


_PEM_CERTIFICATE: Final = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)
# PKCS#8 ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY") and OpenSSL's own forms ("RSA PRIVATE KEY", ...).
_PEM_KEY: Final = re.compile(r"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.+?-----END \1PRIVATE KEY-----", re.S)


def _pem_blocks(path: Path, pattern: re.Pattern[str]) -> list[str]:
    """The PEM blocks of ``path`` that ``pattern`` matches, each ending in a newline."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise ValueError(f"tls: cannot read {path}: {exc}") from None
    return [match.group(0) + "\n" for match in pattern.finditer(text)]


def _pem_keystore(tls: TlsSettings) -> str:
    """``tls``'s key and certificate chain as Kafka's PEM keystore file holds them: one
    unencrypted PKCS#8 key (``BEGIN PRIVATE KEY``, the only unencrypted form Kafka reads), then
    the certificates, the server's first. The key is the first in its file, as Python's ssl
    module takes it.

    :raises ValueError: no certificate or no key, or a key that cannot be converted.
    """
    certfile = Path(tls.certfile)
    keyfile = Path(tls.keyfile) if tls.keyfile is not None else certfile
    certificates = _pem_blocks(certfile, _PEM_CERTIFICATE)
    keys = _pem_blocks(keyfile, _PEM_KEY)
    if not certificates:
        raise ValueError(f"tls: no certificate in {certfile}")
    if not keys:
        raise ValueError(f"tls: no private key in {keyfile}")
    key = keys[0]
    if not key.startswith("-----BEGIN PRIVATE KEY-----"):
        key = _unencrypted_pkcs8(key, tls.password, keyfile)
    return key + "".join(certificates)


def _unencrypted_pkcs8(key: str, password: str | None, source: Path) -> str:
    """``key`` (PKCS#1, SEC 1 or encrypted PKCS#8) as an unencrypted PKCS#8 key."""
    try:
        import cryptography.hazmat.primitives.serialization as pem
    except ImportError:
        raise ValueError(
            f"tls: the key in {source} is not an unencrypted PKCS#8 key (BEGIN PRIVATE KEY), the form "
            "Kafka's PEM keystore reads: install the cryptography package to have it converted, or "
            f"convert it once with `openssl pkcs8 -topk8 -nocrypt -in {source}`"
        ) from None
    encrypted = "ENCRYPTED" in key
    try:
        loaded = pem.load_pem_private_key(
            key.encode("ascii"), password.encode() if encrypted and password is not None else None
        )
    except (ValueError, TypeError) as exc:
        raise ValueError(f"tls: cannot read the key in {source}: {exc}") from None
    return loaded.private_bytes(pem.Encoding.PEM, pem.PrivateFormat.PKCS8, pem.NoEncryption()).decode("ascii")


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((_LOOPBACK, port)) == 0


@dataclass
class KafkaBroker:
    """One KRaft node of a :class:`KafkaCluster`: a broker and a controller in one process."""

    node_id: int
    port: int
    controller_port: int
    directory: Path
    sasl_port: int | None = None
    ssl_port: int | None = None
    sasl_ssl_port: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    shared_classes: SharedClasses | None = field(default=None, repr=False)
    paused: bool = False

    @property
    def recording_classes(self) -> bool:
        """This run of the broker records the archive of its classes as it exits."""
        return self.shared_classes is not None and self.shared_classes.recording is not None

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT`` of its client listener."""
        return f"{_LOOPBACK}:{self.port}"

    @property
    def sasl_address(self) -> str | None:
        """``127.0.0.1:PORT`` of its SASL_PLAINTEXT listener, if the cluster has one."""
        return None if self.sasl_port is None else f"{_LOOPBACK}:{self.sasl_port}"

    @property
    def ssl_address(self) -> str | None:
        """``127.0.0.1:PORT`` of its SSL listener, if the cluster has one (``tls``)."""
        return None if self.ssl_port is None else f"{_LOOPBACK}:{self.ssl_port}"

    @property
    def sasl_ssl_address(self) -> str | None:
        """``127.0.0.1:PORT`` of its SASL_SSL listener, if the cluster has one (``tls`` and
        ``sasl_users``)."""
        return None if self.sasl_ssl_port is None else f"{_LOOPBACK}:{self.sasl_ssl_port}"

    @property
    def running(self) -> bool:
        """Whether its process exists (it may be paused)."""
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.running and self.process is not None else None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of its server log and console output, for error messages."""
        parts = []
        for name in ("server.log", "console.log"):
            path = self.directory / "logs" / name
            if path.exists():
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
                parts.append(f"--- broker {self.node_id} {name} ---\n" + "\n".join(text))
        return "\n".join(parts)

    def lost_a_port(self) -> bool:
        """Whether it exited because one of its ports was already bound by someone else."""
        if self.process is None or self.process.poll() in (None, 0):
            return False
        for name in ("server.log", "console.log"):
            path = self.directory / "logs" / name
            if path.exists() and _PORT_TAKEN in path.read_text(encoding="utf-8", errors="replace"):
                return True
        return False


class _PortTaken(KafkaClusterError):
    """A broker could not bind a port picked free for it: the cluster may start again."""


class KafkaCluster:
    """Apache Kafka :data:`KAFKA_VERSION` in KRaft mode on 127.0.0.1, for tests and benchmarks.

    ::

        with KafkaCluster(brokers=3) as kafka:
            kafka.create_topic("events", partitions=12)
            member = MyCoordinator(bootstrap_servers=kafka.bootstrap_servers, group_id="g")
            ...
            kafka.kill_broker(kafka.coordinator_of("g"))   # SIGKILL the group's coordinator

    Every node is a combined broker and controller (a static quorum of all nodes), with
    ``__consumer_offsets`` replicated to every node (up to three), so a group survives the
    loss of its coordinator broker on a 3-node cluster. Groups get broker defaults suited to
    tests (no initial rebalance delay, sessions from 500 ms); ``broker_config`` overrides any
    ``server.properties`` entry. Ports are picked free below the kernel's ephemeral range (where
    another process's outgoing connection could take one before the broker binds it); if a
    broker still finds one of its ports taken, the cluster starts again on other ports (up to
    three times, each logged as a warning).

    :param brokers: how many nodes: 1, or 3 for fault tolerance (a majority must stay up).
    :param broker_config: extra ``server.properties`` entries for every node.
    :param sasl_users: user name -> password: every node gets a second client listener,
        SASL_PLAINTEXT (:attr:`sasl_bootstrap_servers`), where these users authenticate with
        PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (their SCRAM credentials written when the storage
        is formatted, as ``kafka-storage format --add-scram`` does). Brokers talk to each other
        over PLAINTEXT.
    :param tls: the same :class:`~coordinator_api.TlsSettings` an embedded coordinator takes:
        every node gets an SSL client listener (:attr:`ssl_bootstrap_servers`) and, with
        ``sasl_users``, a SASL_SSL one too (:attr:`sasl_ssl_bootstrap_servers`), both with these
        PEM files as Kafka's PEM keystore (``ssl.keystore.type=PEM``) and, if ``cafile`` is set,
        PEM truststore. The key is written into the node's directory as the unencrypted PKCS#8
        key Kafka reads (converted with the ``cryptography`` package if it is in another form,
        or encrypted); ``client_auth`` is ``ssl.client.auth`` on both listeners (on SASL_SSL
        Kafka applies it only listener-prefixed, which is how it is written). The certificate
        must name 127.0.0.1, since clients verify it; PLAINTEXT stays the brokers' and the
        controllers' listener.
    :param authorizer: run Kafka's ``StandardAuthorizer`` on every node
        (``authorizer.class.name``): ACLs kept in the metadata log, managed over CreateAcls,
        DescribeAcls and DeleteAcls; ``allow.everyone.if.no.acl.found`` stays false
        (``broker_config`` may change it). The nodes talk to each other and to the controllers
        over PLAINTEXT, as ``User:ANONYMOUS``, and that principal needs CLUSTER_ACTION on the
        cluster (broker registration and heartbeats, replication, the admin requests a broker
        forwards to the controller) before any ACL can be read: a controller admits only super
        users until it has loaded the metadata log. So ``User:ANONYMOUS`` is always a super
        user, and a client on the PLAINTEXT listener (:attr:`bootstrap_servers`, which this
        class's own helpers use) may do anything; clients whose permissions are under test
        authenticate on the SASL listener (``sasl_users``: ``User:<name>``) or with a client
        certificate (``tls``). An ACL change is enforced once the broker has read it from the
        metadata log, shortly after CreateAcls or DeleteAcls is answered: poll DescribeAcls,
        which lists what the broker enforces, until it shows.
    :param super_users: principals allowed everything besides ``User:ANONYMOUS``
        (``super.users``), e.g. ``("User:admin",)``; only with ``authorizer``.
    :param heap_mb: each broker's Java heap.
    :param jvm_options: the brokers' other JVM options (default :data:`TEST_JVM_OPTIONS`).
    :param cache_dir: where the jars are cached (see :func:`kafka_classpath`).
    :param start_timeout: seconds to wait for the cluster (or a restarted node) to be ready.
    """

    def __init__(
        self,
        brokers: int = 1,
        *,
        broker_config: dict[str, str] | None = None,
        sasl_users: Mapping[str, str] | None = None,
        tls: TlsSettings | None = None,
        authorizer: bool = False,
        super_users: Sequence[str] = (),
        heap_mb: int = 256,
        jvm_options: Sequence[str] = TEST_JVM_OPTIONS,
        cache_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 90.0,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"a Kafka cluster needs at least one broker, not {brokers}")
        if heap_mb < 64:
            raise ValueError(f"heap_mb={heap_mb} is too small for a Kafka broker (at least 64)")
        self._size = brokers
        self._broker_config = dict(broker_config or {})
        self._sasl_users = dict(sasl_users or {})
        for user, password in self._sasl_users.items():
            if not re.fullmatch(r"[A-Za-z0-9_.-]+", user) or not re.fullmatch(r"[A-Za-z0-9_.-]+", password):
                raise ValueError(
                    f"sasl_users: {user!r}: names and passwords of letters, digits, '_', '.' and '-' only "
                    "(they are written into JAAS and kafka-storage arguments)"
                )
        if tls is not None and not isinstance(tls, TlsSettings):
            raise TypeError(f"tls must be a TlsSettings, not {type(tls).__name__}")
        self._tls = tls
        if isinstance(super_users, str):
            raise TypeError("super_users is a sequence of principals, e.g. ('User:admin',), not a string")
        for principal in super_users:
            # ';' separates super.users; '\\' and line breaks mean something in a properties file.
            if not re.fullmatch(r"[A-Za-z]+:[^;\\\r\n]+", principal):
                raise ValueError(
                    f"super_users: {principal!r} is not TYPE:NAME (User:admin) without ';' or '\\'"
                )
        if super_users and not authorizer:
            raise ValueError(
                "super_users needs authorizer=True: without an authorizer everyone may do anything"
            )
        self._authorizer = authorizer
        self._super_users = tuple(dict.fromkeys((_NODES_PRINCIPAL, *super_users)))
        # Read, checked and converted now: a key Kafka cannot read fails here, not in a broker.
        self._keystore_pem = _pem_keystore(tls) if tls is not None else ""
        self._heap_mb = heap_mb
        self._jvm_options = tuple(jvm_options)
        self._cache_dir = cache_dir
        self._start_timeout = start_timeout
        self._directory: Path | None = None
        self._classpath = ""
        self._brokers: dict[int, KafkaBroker] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Fetch Kafka if needed, format every node's storage, start them and wait until ready.

        :raises KafkaToolsMissing: ``java`` or ``mvn`` is missing.
        :raises KafkaClusterError: a node did not start within ``start_timeout``.
        """
        if self._brokers:
            raise RuntimeError("this KafkaCluster is already started")
        self._classpath = kafka_classpath(self._cache_dir)
        for attempt in range(1, _START_ATTEMPTS + 1):
            try:
                self._start_once()
                return
            except _PortTaken as exc:
                # A port picked free may still be bound by someone else before the broker binds
                # it: start again on other ports (and say so), rather than fail the cluster.
                if attempt == _START_ATTEMPTS:
                    raise
                log.warning("a Kafka broker's port was taken; starting the cluster again: %s", exc)

    def _start_once(self) -> None:
        self._directory = Path(tempfile.mkdtemp(prefix="coordinator-api-kafka-"))
        try:
            for node_id in range(1, self._size + 1):
                directory = self._directory / f"broker-{node_id}"
                (directory / "logs").mkdir(parents=True)
                sasl_port = free_port() if self._sasl_users else None
                ssl_port = free_port() if self._tls is not None else None
                sasl_ssl_port = free_port() if self._tls is not None and self._sasl_users else None
                self._brokers[node_id] = KafkaBroker(
                    node_id,
                    free_port(),
                    free_port(),
                    directory,
                    sasl_port=sasl_port,
                    ssl_port=ssl_port,
                    sasl_ssl_port=sasl_ssl_port,
                )
            cluster_id = _kafka_uuid()
            for broker in self._brokers.values():
                self._write_config(broker)
                self._format(broker, cluster_id)
            for broker in self._brokers.values():
                self._launch(broker)
            self.wait_ready()
            # Create __consumer_offsets now and wait for a leader of every partition, so that no
            # test's first group meets COORDINATOR_NOT_AVAILABLE while the brokers load it.
            self.coordinator_of("coordinator-api-readiness-probe", timeout=self._start_timeout)
            self._wait(
                lambda: self._topic_has_leaders("__consumer_offsets", _OFFSETS_PARTITIONS),
                "__consumer_offsets to have leaders",
            )
        except KafkaClusterError as exc:
            taken = any(b.lost_a_port() for b in self._brokers.values())  # before its logs go
            self.close()
            if taken:
                raise _PortTaken(str(exc)) from exc
            raise
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every broker and remove the cluster's files.

        A broker recording the archive of its classes is stopped first, alone (SIGTERM, SIGKILL
        after a grace): it writes the archive only if it exits by itself, and its controlled
        shutdown needs the others' controller quorum. The others are then killed: their files
        go with the cluster, and told to shut down, the last of them would wait out its grace for
        a quorum that had gone."""
        for broker in self._brokers.values():
            if broker.recording_classes:
                self._end(broker, signal.SIGTERM, grace=5.0)
        for broker in self._brokers.values():
            self._end(broker, signal.SIGKILL, grace=10.0)
        self._brokers.clear()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None

    def __enter__(self: _ClusterT) -> _ClusterT:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- what it is ----------------------------------------------------------------------------

    @property
    def brokers(self) -> list[KafkaBroker]:
        """The nodes, by node id."""
        return [self._brokers[n] for n in sorted(self._brokers)]

    def broker(self, node_id: int) -> KafkaBroker:
        """The node with this id (1 to the cluster's size)."""
        try:
            return self._brokers[node_id]
        except KeyError:
            raise ValueError(f"no broker {node_id} in this cluster (nodes {sorted(self._brokers)})") from None

    @property
    def bootstrap_servers(self) -> str:
        """Every node's client listener, comma-separated, for any Kafka client."""
        if not self._brokers:
            raise RuntimeError("the KafkaCluster is not started")
        return ",".join(b.address for b in self.brokers)

    @property
    def sasl_bootstrap_servers(self) -> str:
        """Every node's SASL_PLAINTEXT listener, comma-separated (see ``sasl_users``)."""
        if not self._brokers:
            raise RuntimeError("the KafkaCluster is not started")
        addresses = [b.sasl_address for b in self.brokers if b.sasl_address is not None]
        if not addresses:
            raise RuntimeError("this KafkaCluster has no SASL listener: give it sasl_users")
        return ",".join(addresses)

    @property
    def ssl_bootstrap_servers(self) -> str:
        """Every node's SSL listener, comma-separated (see ``tls``)."""
        if not self._brokers:
            raise RuntimeError("the KafkaCluster is not started")
        addresses = [b.ssl_address for b in self.brokers if b.ssl_address is not None]
        if not addresses:
            raise RuntimeError("this KafkaCluster has no SSL listener: give it tls")
        return ",".join(addresses)

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        """Every node's SASL_SSL listener, comma-separated (see ``tls`` and ``sasl_users``)."""
        if not self._brokers:
            raise RuntimeError("the KafkaCluster is not started")
        addresses = [b.sasl_ssl_address for b in self.brokers if b.sasl_ssl_address is not None]
        if not addresses:
            raise RuntimeError("this KafkaCluster has no SASL_SSL listener: give it tls and sasl_users")
        return ",".join(addresses)

    @property
    def jvm_options(self) -> tuple[str, ...]:
        """The brokers' JVM options besides the heap and the logging setup."""
        return self._jvm_options

    @property
    def classpath(self) -> str:
        """The classpath of Kafka's jars, for running its tools and Java clients."""
        if not self._classpath:
            self._classpath = kafka_classpath(self._cache_dir)
        return self._classpath

    def coordinator_of(self, group_id: str, timeout: float = 30.0) -> int:
        """Node id of the live broker that coordinates ``group_id`` now (FindCoordinator).

        Retries until ``timeout`` seconds have passed while the cluster answers that no
        coordinator is available, or names a broker this cluster has stopped, killed or paused
        (it takes ``broker.session.timeout.ms``, 3 s here, to notice a dead broker).
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                node_id = find_coordinator(self._live_bootstrap(), group_id, timeout_ms=5000)
                broker = self._brokers.get(node_id)
                if broker is not None and broker.running and not broker.paused:
                    return node_id
                # The cluster has not yet noticed that this node is gone.
                problem: object = f"the cluster still names broker {node_id}, which is down"
            except Exception as exc:  # no coordinator yet, or kafka-python reached no broker
                problem = repr(exc)
            if time.monotonic() >= deadline:
                raise KafkaClusterError(
                    f"no live coordinator for group {group_id!r} within {timeout} s: {problem}"
                )
            time.sleep(0.2)

    def create_topic(self, name: str, partitions: int, replication_factor: int | None = None) -> None:
        """Create a topic (replicated to every node, up to three, unless told otherwise)."""
        from kafka.admin import KafkaAdminClient, NewTopic

        replicas = replication_factor if replication_factor is not None else min(3, self._size)
        admin = KafkaAdminClient(bootstrap_servers=self._live_bootstrap(), client_id="kafka-cluster")
        try:
            admin.create_topics([NewTopic(name, partitions, replicas)], timeout_ms=30_000)
        finally:
            admin.close()
        self._wait(lambda: self._topic_has_leaders(name, partitions), f"topic {name!r} to have leaders")

    def set_group_config(self, group_id: str, configs: dict[str, int | str]) -> None:
        """Set a group's own configs (KIP-848's dynamic group configs, as ``kafka-configs
        --entity-type groups`` does), e.g. ``consumer.session.timeout.ms``: with the incremental
        protocol the coordinator, not the client, decides the session and the interval.

        Returns once the group's coordinator describes them so: the controller acknowledges the
        change before the brokers have caught up with it, and a group created meanwhile would
        start with the old values."""
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

        admin = KafkaAdminClient(bootstrap_servers=self._live_bootstrap(), client_id="kafka-cluster")
        try:
            resource = ConfigResource(ConfigResourceType.GROUP, group_id, dict(configs))
            admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
        finally:
            admin.close()
        wanted = {name: str(value) for name, value in configs.items()}

        def applied() -> bool:
            described = group_configs(self._live_bootstrap(), group_id, timeout_ms=5000)
            return all(described.get(name) == value for name, value in wanted.items())

        self._wait(applied, f"group {group_id!r}'s coordinator to apply {wanted}")

    # -- faults --------------------------------------------------------------------------------

    def stop_broker(self, node_id: int, timeout: float = 60.0) -> None:
        """Controlled shutdown of one node (SIGTERM), waiting until its process has exited."""
        broker = self.broker(node_id)
        if broker.paused:
            self.resume_broker(node_id)
        self._end(broker, signal.SIGTERM, grace=timeout)

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one node: no controlled shutdown, no leadership handed over."""
        self._end(self.broker(node_id), signal.SIGKILL, grace=10.0)

    def pause_broker(self, node_id: int) -> None:
        """SIGSTOP one node, and wait until it has stopped: its sockets stay open and it
        answers nothing."""
        broker = self.broker(node_id)
        if broker.process is None or not broker.running:
            raise KafkaClusterError(f"broker {node_id} is not running")
        pid = broker.process.pid
        broker.process.send_signal(signal.SIGSTOP)
        broker.paused = True
        self._wait(lambda: _stopped(pid) is not False, f"broker {node_id} to stop")

    def resume_broker(self, node_id: int) -> None:
        """SIGCONT a paused node, and wait until it runs again."""
        broker = self.broker(node_id)
        if broker.process is not None and broker.running:
            pid = broker.process.pid
            broker.process.send_signal(signal.SIGCONT)
            self._wait(lambda: _stopped(pid) is not True, f"broker {node_id} to resume")
        broker.paused = False

    def start_broker(self, node_id: int) -> None:
        """Restart a stopped or killed node on its old ports and data, and wait until it is back."""
        broker = self.broker(node_id)
        if broker.running:
            raise KafkaClusterError(f"broker {node_id} is still running (pid {broker.pid})")
        self._launch(broker)
        self.wait_ready()

    def wait_ready(self) -> None:
        """Wait until every running node serves clients and the brokers see each other."""
        running = [b for b in self.brokers if b.running and not b.paused]
        for broker in running:
            self._wait(lambda b=broker: _accepts(b.port), f"broker {broker.node_id} to listen")  # type: ignore[misc]
        expected = {b.node_id for b in running}
        self._wait(lambda: self._registered() >= expected, f"brokers {sorted(expected)} to register")

    # -- internals -----------------------------------------------------------------------------

    def _live_bootstrap(self) -> str:
        live = [b.address for b in self.brokers if b.running and not b.paused]
        return ",".join(live) if live else self.bootstrap_servers

    def _write_config(self, broker: KafkaBroker) -> None:
        voters = ",".join(f"{b.node_id}@{_LOOPBACK}:{b.controller_port}" for b in self.brokers)
        replicas = min(3, self._size)
        listeners = _client_listeners(broker)
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(broker.node_id),
            "controller.quorum.voters": voters,
            "listeners": ",".join(f"{name}://{address}" for name, address in listeners.items())
            + f",CONTROLLER://{_LOOPBACK}:{broker.controller_port}",
            "advertised.listeners": ",".join(f"{name}://{address}" for name, address in listeners.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            # Each client listener is named after its security protocol.
            "listener.security.protocol.map": "".join(f"{name}:{name}," for name in listeners)
            + "CONTROLLER:PLAINTEXT",
            "log.dirs": str(broker.directory / "data"),
            "num.partitions": "1",
            "default.replication.factor": str(replicas),
            "offsets.topic.replication.factor": str(replicas),
            "offsets.topic.num.partitions": str(_OFFSETS_PARTITIONS),
            "transaction.state.log.replication.factor": str(replicas),
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": str(replicas),
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": "500",
            "group.consumer.min.session.timeout.ms": "500",
            "group.consumer.min.heartbeat.interval.ms": "100",
            "group.streams.initial.rebalance.delay.ms": "0",
            "group.streams.min.session.timeout.ms": "500",
            "group.streams.min.heartbeat.interval.ms": "100",
            # A killed broker is fenced, and its partitions led elsewhere, within 3 s.
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "log.cleaner.enable": "false",
            "auto.create.topics.enable": "false",
        }
        if self._sasl_users:
            settings.update(self._sasl_settings(listeners))
        if self._tls is not None:
            settings.update(self._ssl_settings(broker, listeners))
        if self._authorizer:
            settings["authorizer.class.name"] = _STANDARD_AUTHORIZER
            settings["super.users"] = ";".join(self._super_users)
        settings.update(self._broker_config)
        text = "".join(f"{key}={value}\n" for key, value in settings.items())
        (broker.directory / "server.properties").write_text(text, encoding="utf-8")
        (broker.directory / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")

    def _sasl_settings(self, listeners: Mapping[str, str]) -> dict[str, str]:
        """The mechanisms' logins on each SASL listener (SASL_PLAINTEXT, and SASL_SSL with TLS)."""
        plain_users = " ".join(f'user_{u}="{p}"' for u, p in sorted(self._sasl_users.items()))
        plain = f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
        scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        settings = {"sasl.enabled.mechanisms": ",".join(_SASL_MECHANISMS)}
        for name in listeners:
            if name.startswith("SASL_"):
                prefix = f"listener.name.{name.lower()}"
                settings[f"{prefix}.plain.sasl.jaas.config"] = plain
                settings[f"{prefix}.scram-sha-256.sasl.jaas.config"] = scram
                settings[f"{prefix}.scram-sha-512.sasl.jaas.config"] = scram
        return settings

    def _ssl_settings(self, broker: KafkaBroker, listeners: Mapping[str, str]) -> dict[str, str]:
        """The PEM keystore (and truststore) of the SSL and SASL_SSL listeners, written into the
        node's directory; both listeners ask for client certificates as ``tls.client_auth`` says."""
        assert self._tls is not None
        keystore = broker.directory / "keystore.pem"
        descriptor = os.open(keystore, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # holds a key
        with os.fdopen(descriptor, "w", encoding="ascii") as out:
            out.write(self._keystore_pem)
        settings = {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),  # no password: the key is not encrypted
            "ssl.client.auth": self._tls.client_auth,
        }
        if "SASL_SSL" in listeners:  # Kafka ignores the unprefixed ssl.client.auth on SASL_SSL
            settings["listener.name.sasl_ssl.ssl.client.auth"] = self._tls.client_auth
        if self._tls.cafile is not None:
            truststore = broker.directory / "truststore.pem"
            certificates = _pem_blocks(Path(self._tls.cafile), _PEM_CERTIFICATE)
            truststore.write_text("".join(certificates), encoding="ascii")
            settings["ssl.truststore.type"] = "PEM"
            settings["ssl.truststore.location"] = str(truststore)
        return settings

    def _java(self, broker: KafkaBroker, shared: SharedClasses, main: str, *args: str) -> list[str]:
        return [
            _require("java"),
            f"-Xms{self._heap_mb // 2}m",
            f"-Xmx{self._heap_mb}m",
            *self._jvm_options,
            *shared.options,
            "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={broker.directory / 'logs'}",
            f"-Dlog4j2.configurationFile={broker.directory / 'log4j2.properties'}",
            "-cp",
            self._classpath,
            main,
            *args,
        ]

    def _format(self, broker: KafkaBroker, cluster_id: str) -> None:
        config = str(broker.directory / "server.properties")
        scram = [
            f"--add-scram={mechanism}=[name={user},password={password}]"
            for user, password in sorted(self._sasl_users.items())
            for mechanism in _SASL_MECHANISMS
            if mechanism.startswith("SCRAM")
        ]
        shared = shared_classes(_STORAGE_TOOL, self._classpath)
        result = subprocess.run(
            self._java(broker, shared, _STORAGE_TOOL, "format", "-t", cluster_id, "-c", config, *scram),
            capture_output=True,
            text=True,
            check=False,
        )
        shared.ended(result.returncode)
        if result.returncode != 0:
            raise KafkaClusterError(
                f"formatting broker {broker.node_id}'s storage failed:\n{result.stdout}{result.stderr}"
            )

    def _launch(self, broker: KafkaBroker) -> None:
        shared = broker.shared_classes = shared_classes(_BROKER, self._classpath, record=broker.node_id == 1)
        argv = self._java(broker, shared, _BROKER, str(broker.directory / "server.properties"))
        setpriv = shutil.which("setpriv")
        if setpriv is not None:  # the kernel kills the broker when this process dies
            argv = [setpriv, "--pdeathsig", "KILL", *argv]
        with open(broker.directory / "logs" / "console.log", "ab") as console:
            broker.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT
            )
        broker.paused = False

    def _end(self, broker: KafkaBroker, sig: signal.Signals, grace: float) -> None:
        process = broker.process
        if process is None:
            return
        if process.poll() is None:
            if broker.paused and sig != signal.SIGKILL:
                process.send_signal(signal.SIGCONT)
            if broker.recording_classes:
                grace += 30.0  # it writes the archive of its classes as it exits
            process.send_signal(sig)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        broker.paused = False
        if broker.shared_classes is not None:
            broker.shared_classes.ended(process.returncode)
            broker.shared_classes = None

    def _wait(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self._start_timeout
        while True:
            for broker in self.brokers:
                if broker.process is not None and broker.process.poll() not in (None, 0, -9, -15, 143):
                    raise KafkaClusterError(
                        f"broker {broker.node_id} exited with {broker.process.returncode} while waiting "
                        f"for {what}\n{broker.log_tail()}"
                    )
            with contextlib.suppress(Exception):
                if condition():
                    return
            if time.monotonic() >= deadline:
                logs = "\n".join(b.log_tail() for b in self.brokers)
                raise KafkaClusterError(f"timed out after {self._start_timeout} s waiting for {what}\n{logs}")
            time.sleep(0.2)

    def _probe(self) -> KafkaAdminClient:
        """An admin client for a condition :meth:`_wait` polls: it gives up within 5 s, so that
        the loop soon sees a broker that exited (a port of a broker that died at start may be
        held by another process's listening socket, which accepts and never answers: with
        kafka-python's default 30 s bootstrap that cost half a minute each time)."""
        from kafka.admin import KafkaAdminClient

        return KafkaAdminClient(
            bootstrap_servers=self._live_bootstrap(),
            client_id="kafka-cluster",
            request_timeout_ms=_PROBE_TIMEOUT_MS,
            bootstrap_timeout_ms=_PROBE_TIMEOUT_MS,
        )

    def _registered(self) -> set[int]:
        admin = self._probe()
        try:
            cluster = admin.describe_cluster()
        finally:
            admin.close()
        return {b["broker_id"] for b in cluster["brokers"] if not b.get("is_fenced")}

    def _topic_has_leaders(self, name: str, partitions: int) -> bool:
        admin = self._probe()
        try:
            (topic,) = admin.describe_topics([name])
        finally:
            admin.close()
        leaders = [p["leader_id"] for p in topic["partitions"]]
        return len(leaders) == partitions and all(leader >= 0 for leader in leaders)

    def __repr__(self) -> str:
        nodes = ", ".join(
            f"{b.node_id}@{b.port}{'' if b.running else ' (down)'}{' (paused)' if b.paused else ''}"
            for b in self.brokers
        )
        return f"KafkaCluster({KAFKA_VERSION}: {nodes or 'not started'})"


def _kafka_uuid() -> str:
    """A random cluster id in Kafka's form: 16 bytes, URL-safe base64 without padding.

    Never one starting with "-" (one in 64 would): ``kafka-storage format -t -xyz`` reads it as
    an option and fails, which is why Kafka's own ``Uuid.randomUuid()`` draws again too.
    """
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
