"""The servers bench/bench_leader.py measures: the embedded coordinator, Kafka, ZooKeeper, etcd.

Each runs as a child process bound to 127.0.0.1 on a free port, with its data in a temporary
directory, and is stopped (SIGTERM, then SIGKILL) by :meth:`PeerServer.stop`, which
:func:`atexit` also calls for every server still running when the interpreter exits.

* ZooKeeper: ``java -cp "<pyspark>/jars/*" org.apache.zookeeper.server.ZooKeeperServerMain
  zoo.cfg``, from the jars shipped inside the pyspark wheel (the ``spark`` extra), standalone.
* etcd: Debian's ``etcd-server`` package (``/usr/bin/etcd``), one member.
* the embedded coordinator: ``python -m coordinator_api serve --port 0 ...``.
* Apache Kafka: a one-broker :class:`coordinator_api.testing.KafkaCluster` (one KRaft
  broker+controller JVM; the jars fetched once with ``mvn``), whose group coordinator serves the
  same ``coordinator_leader`` candidates as the embedded coordinator does.

A server that cannot be started here (no java, no pyspark, no etcd binary, no Kafka jars) raises
:class:`PeerUnavailable` with the reason, which the benchmark prints instead of figures.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import http.client
import importlib.metadata
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from coordinator_api.testing import free_port

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"


class PeerUnavailable(RuntimeError):
    """This server cannot run on this machine (the message says why)."""


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(REPO), str(REPO / "plugins"), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    return env


_RUNNING: set[PeerServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()


class PeerServer(abc.ABC):
    """A server child process with a log file and a temporary data directory."""

    kind = "server"

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.log_path = log_dir / f"{self.kind}-server.log"
        self.address = ""
        self.version = "unknown"
        self.notes: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # --- life cycle -----------------------------------------------------------------------------

    def start(self) -> PeerServer:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._tmp = tempfile.TemporaryDirectory(prefix=f"bench-leader-{self.kind}-")
        try:
            self._start(Path(self._tmp.name))
        except BaseException:
            self.stop()
            raise
        return self

    @abc.abstractmethod
    def _start(self, data_dir: Path) -> None:
        """Spawn the server with its data under ``data_dir`` and wait until it serves."""

    def _spawn(self, argv: list[str], *, pipe_stdout: bool = False, **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` in a session of its own; its output (stderr only, if ``pipe_stdout``) is logged."""
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - lives as long as the server
        self._log.write(("$ " + " ".join(argv) + "\n").encode())
        self._log.flush()
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if pipe_stdout else self._log,
            stderr=self._log,
            start_new_session=True,
            **kwargs,
        )
        _RUNNING.add(self)
        return self.process

    def _check_alive(self, what: str) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise PeerUnavailable(
                f"{what} exited with status {self.process.returncode} while starting; see {self.log_path}"
            )

    def stop(self) -> None:
        _RUNNING.discard(self)
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> PeerServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_for_port(server: PeerServer, port: int, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        server._check_alive(what)
        try:
            with socket.create_connection((HOST, port), timeout=1.0):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise PeerUnavailable(
                    f"{what} did not listen on {HOST}:{port} within {timeout:.0f} s"
                ) from None
            time.sleep(0.1)


# --- ZooKeeper --------------------------------------------------------------------------------------


def pyspark_jars() -> Path:
    """The jars directory of the installed pyspark wheel (which ships ZooKeeper's jars)."""
    try:
        import pyspark
    except ImportError:
        raise PeerUnavailable(
            "pyspark is not installed (pip install -e '.[spark]'): no ZooKeeper jars"
        ) from None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not any(jars.glob("zookeeper-[0-9]*.jar")):
        raise PeerUnavailable(f"no zookeeper-*.jar under {jars}")
    return jars


class ZooKeeperServer(PeerServer):
    """A standalone ZooKeeper server from pyspark's jars.

    :param tick_ms: ZooKeeper's ``tickTime``. Sessions expire in buckets of one tick, and the
        negotiable session timeouts are bounded by ``minSessionTimeout``/``maxSessionTimeout``,
        set here from ``min_session_ms``/``max_session_ms`` so the requested timeouts are granted
        unchanged (the default tickTime of 2000 ms would forbid sessions under 4 s).
    """

    kind = "zookeeper"

    def __init__(
        self, log_dir: Path, *, tick_ms: int = 200, min_session_ms: int = 400, max_session_ms: int = 120_000
    ) -> None:
        super().__init__(log_dir)
        self.tick_ms = tick_ms
        self.min_session_ms = min_session_ms
        self.max_session_ms = max_session_ms

    def _start(self, data_dir: Path) -> None:
        java = shutil.which("java")
        if java is None:
            raise PeerUnavailable("no `java` on PATH: cannot run ZooKeeper")
        jars = pyspark_jars()
        jar = sorted(jars.glob("zookeeper-[0-9]*.jar"))[0]
        match = re.match(r"zookeeper-(.+)\.jar$", jar.name)
        self.version = match.group(1) if match else jar.name
        port = free_port()
        config = data_dir / "zoo.cfg"
        (data_dir / "data").mkdir()
        config.write_text(
            "\n".join(
                [
                    f"tickTime={self.tick_ms}",
                    f"dataDir={data_dir / 'data'}",
                    f"clientPort={port}",
                    f"clientPortAddress={HOST}",
                    f"minSessionTimeout={self.min_session_ms}",
                    f"maxSessionTimeout={self.max_session_ms}",
                    "maxClientCnxns=0",
                    # No AdminServer (an HTTP server on 8080) and no four-letter-word commands.
                    "admin.enableServer=false",
                    "4lw.commands.whitelist=",
                    "",
                ]
            )
        )
        log4j = data_dir / "log4j2.properties"
        log4j.write_text(
            "rootLogger.level = WARN\nrootLogger.appenderRef.stdout.ref = console\n"
            "appender.console.type = Console\nappender.console.name = console\n"
            "appender.console.layout.type = PatternLayout\n"
            "appender.console.layout.pattern = %d{ISO8601} %p %c{1}: %m%n\n"
        )
        argv = [
            java,
            "-Xmx256m",
            f"-Dlog4j2.configurationFile={log4j}",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-cp",
            f"{jars}/*",
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(config),
        ]
        self._spawn(argv)
        _wait_for_port(self, port, "ZooKeeper")
        self.address = f"{HOST}:{port}"
        self.notes.append(
            f"ZooKeeper {self.version} standalone from pyspark's jars, tickTime={self.tick_ms} ms, "
            f"session timeouts {self.min_session_ms}..{self.max_session_ms} ms negotiable, "
            "transaction log fsync on (default)"
        )


# --- etcd -------------------------------------------------------------------------------------------


def find_etcd(binary: str | None = None) -> str:
    """The etcd server binary, or :class:`PeerUnavailable` saying how to get it."""
    candidates = [binary] if binary else [shutil.which("etcd"), "/usr/bin/etcd"]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    where = binary or "PATH or /usr/bin/etcd"
    raise PeerUnavailable(
        f"etcd is not installed (no etcd binary at {where}); on Debian: apt-get install etcd-server"
    )


class EtcdServer(PeerServer):
    """A one-member etcd cluster, reached through its grpc-gateway JSON API (``/v3/...``)."""

    kind = "etcd"

    def __init__(self, log_dir: Path, *, binary: str | None = None) -> None:
        super().__init__(log_dir)
        self.binary = binary

    def _start(self, data_dir: Path) -> None:
        etcd = find_etcd(self.binary)
        done = subprocess.run([etcd, "--version"], check=False, capture_output=True, text=True, timeout=30)
        match = re.search(r"etcd Version: (\S+)", done.stdout)
        self.version = match.group(1) if match else "unknown"
        client_port, peer_port = free_port(), free_port()
        client, peer = f"http://{HOST}:{client_port}", f"http://{HOST}:{peer_port}"
        argv = [
            etcd,
            "--name",
            "default",
            "--data-dir",
            str(data_dir / "etcd"),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"default={peer}",
        ]
        self._spawn(argv)
        _wait_for_port(self, client_port, "etcd")
        deadline = time.monotonic() + 60
        while not self._healthy(client_port):
            self._check_alive("etcd")
            if time.monotonic() > deadline:
                raise PeerUnavailable(f"etcd did not become healthy; see {self.log_path}")
            time.sleep(0.1)
        self.address = f"{HOST}:{client_port}"
        self.notes.append(
            f"etcd {self.version}, one member, default --heartbeat-interval 100 / --election-timeout "
            "1000 (so leases shorter than 2 s are raised to 2 s), JSON gateway /v3/..."
        )

    @staticmethod
    def _healthy(port: int) -> bool:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/health")
            body = conn.getresponse().read()
            conn.close()
        except OSError:
            return False
        return b'"true"' in body


# --- the embedded coordinator ----------------------------------------------------------------------


class EmbeddedCoordinatorServer(PeerServer):
    """``python -m coordinator_api serve --port 0`` with no initial rebalance delay."""

    kind = "coordinator"

    def __init__(self, log_dir: Path, *, min_session_ms: int = 1000) -> None:
        super().__init__(log_dir)
        self.min_session_ms = min_session_ms

    def _start(self, data_dir: Path) -> None:
        argv = [
            sys.executable,
            "-m",
            "coordinator_api",
            "serve",
            "--port",
            "0",
            "--initial-rebalance-delay-ms",
            "0",
            "--min-session-timeout-ms",
            str(self.min_session_ms),
        ]
        self._spawn(argv, pipe_stdout=True, env=child_env(), cwd=REPO)
        assert self._log is not None
        found: list[str] = []
        process, log = self.process, self._log

        def read_stdout() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                if not found:
                    match = re.search(rb"listening on (\S+:\d+)", line)
                    if match:
                        found.append(match.group(1).decode())
                try:
                    log.write(line)
                    log.flush()
                except ValueError:  # the log was closed by stop()
                    return

        threading.Thread(target=read_stdout, daemon=True).start()
        deadline = time.monotonic() + 60
        while not found:
            self._check_alive("the embedded coordinator")
            if time.monotonic() > deadline:
                raise PeerUnavailable(f"the embedded coordinator did not start; see {self.log_path}")
            time.sleep(0.02)
        self.address = found[0]
        self.version = importlib.metadata.version("coordinator-api")
        self.notes.append("started with: python " + " ".join(argv[1:]))


# --- Apache Kafka -----------------------------------------------------------------------------------


class KafkaBrokerServer(PeerServer):
    """A one-broker Apache Kafka 4 cluster (``KafkaCluster(brokers=1)``) for ``coordinator_leader``.

    One broker is enough here: the benchmark fails candidates, not brokers, and a group has one
    coordinator whatever the cluster's size. The broker allows sessions from ``min_session_ms``
    and starts rebalances of new groups at once (``group.initial.rebalance.delay.ms=0``), as
    the embedded coordinator is started with.
    """

    kind = "kafka"

    def __init__(self, log_dir: Path, *, min_session_ms: int = 1000, heap_mb: int = 384) -> None:
        super().__init__(log_dir)
        self.min_session_ms = min_session_ms
        self.heap_mb = heap_mb
        self.cluster: Any = None

    def _start(self, data_dir: Path) -> None:
        try:
            from coordinator_api.testing import KAFKA_VERSION, KafkaCluster, KafkaToolsMissing
        except ImportError as exc:
            raise PeerUnavailable(f"coordinator_api.testing.KafkaCluster is not importable ({exc})") from None
        config = {
            "group.initial.rebalance.delay.ms": "0",
            "group.min.session.timeout.ms": str(self.min_session_ms),
        }
        cluster = KafkaCluster(brokers=1, heap_mb=self.heap_mb, broker_config=config)
        try:
            cluster.start()
        except KafkaToolsMissing as exc:
            raise PeerUnavailable(str(exc)) from None
        except Exception as exc:
            raise PeerUnavailable(f"the Kafka broker did not start: {str(exc).splitlines()[0]}") from None
        self.cluster = cluster
        _RUNNING.add(self)
        self.process = cluster.broker(1).process
        self.address = cluster.bootstrap_servers
        self.version = str(KAFKA_VERSION)
        self.notes.append(
            f"Apache Kafka {KAFKA_VERSION}, KafkaCluster(brokers=1, heap_mb={self.heap_mb}): one KRaft "
            "broker+controller JVM, " + ", ".join(f"{k}={v}" for k, v in config.items())
        )

    def stop(self) -> None:
        _RUNNING.discard(self)
        cluster, self.cluster = self.cluster, None
        self.process = None
        if cluster is not None:
            log = cluster.broker(1).directory / "logs" / "server.log"
            with contextlib.suppress(OSError):  # the cluster's directory goes with it: keep the log
                shutil.copyfile(log, self.log_path)
            cluster.close()
        super().stop()
