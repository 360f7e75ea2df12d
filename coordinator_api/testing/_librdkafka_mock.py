"""Typed ctypes wrapper around librdkafka's built-in mock Kafka cluster.

The mock cluster is an independent implementation of the Kafka wire protocol
that ships inside librdkafka.  Tests and benchmarks use it as a peer to compare
our own server against.  The shared library is the one bundled in the
``confluent-kafka`` wheel, located at run time next to the installed
``confluent_kafka`` package; nothing is loaded at import time.

The mock API is documented by librdkafka as experimental and outside its ABI
guarantees, so every symbol is looked up explicitly and a missing symbol is
reported as :class:`LibrdkafkaMockUnavailable` instead of crashing.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
from pathlib import Path
from types import TracebackType
from typing import Final, TypeVar

__all__ = [
    "KAFKA_PYTHON_API_VERSION",
    "LibrdkafkaMockCluster",
    "LibrdkafkaMockError",
    "LibrdkafkaMockUnavailable",
]

KAFKA_PYTHON_API_VERSION: Final[tuple[int, int]] = (2, 3)
"""``api_version`` that kafka-python clients must be given for the mock.

Empirically, with kafka-python 3.0.12 and the librdkafka 2.16 bundled in
confluent-kafka 2.16.1: the mock implements ApiVersions only up to v2 and
answers a newer ApiVersions request with an UNSUPPORTED_VERSION reply that
kafka-python cannot decode, so it drops the connection and bootstrap times
out.  Auto-detection (``api_version=None``) sends ApiVersions v4 and any
``api_version >= (2, 4)`` sends v3; both fail.  ``(2, 3)`` makes kafka-python
send ApiVersions v2, after which the versions of all other APIs are
negotiated from the mock's answer as usual.
"""

_LOOPBACK_HOST: Final = "127.0.0.1"

# Values from rdkafka.h.
_RD_KAFKA_PRODUCER: Final = 0
_RD_KAFKA_CONF_OK: Final = 0
_RD_KAFKA_RESP_ERR_NO_ERROR: Final = 0

_ERRSTR_SIZE: Final = 512

# Syslog level 3 (LOG_ERR): the default (6) prints a CONFWARN notice on
# stderr because the internal handle has no bootstrap.servers, which is
# expected here; real errors (e.g. a listener failing to bind) still show.
_LOG_LEVEL: Final = "3"

# Shared-library name patterns used by the wheel repair tools: auditwheel
# (Linux, "librdkafka-<hash>.so.1"), delocate (macOS) and delvewheel (Windows).
_LIBRARY_GLOBS: Final = ("librdkafka*.so*", "librdkafka*.dylib", "librdkafka*.dll")

_REQUIRED_SYMBOLS: Final = (
    "rd_kafka_conf_new",
    "rd_kafka_conf_set",
    "rd_kafka_conf_destroy",
    "rd_kafka_new",
    "rd_kafka_destroy",
    "rd_kafka_err2str",
    "rd_kafka_mock_cluster_new",
    "rd_kafka_mock_cluster_destroy",
    "rd_kafka_mock_cluster_bootstraps",
    "rd_kafka_mock_topic_create",
    "rd_kafka_mock_coordinator_set",
)


_ClusterT = TypeVar("_ClusterT", bound="LibrdkafkaMockCluster")


class LibrdkafkaMockUnavailable(RuntimeError):
    """The librdkafka shared library or one of its mock symbols is unavailable."""


class LibrdkafkaMockError(RuntimeError):
    """A librdkafka mock call failed.

    Attributes:
        operation: The C function (or step) that failed.
        code: The ``rd_kafka_resp_err_t`` value, or ``None`` when the failure
            carries no error code (e.g. ``rd_kafka_new`` returning NULL).
    """

    def __init__(self, operation: str, message: str, code: int | None = None) -> None:
        self.operation = operation
        self.code = code
        suffix = "" if code is None else f" (rd_kafka_resp_err_t {code})"
        super().__init__(f"{operation} failed: {message}{suffix}")


class _Librdkafka:
    """Typed bindings for the subset of the librdkafka C API used here.

    ctypes calls return ``Any``; each method converts the result to a precise
    type so the rest of the module stays checked under ``mypy --strict``.
    """

    def __init__(self, path: Path) -> None:
        try:
            lib = ctypes.CDLL(os.fspath(path))
        except OSError as exc:
            raise LibrdkafkaMockUnavailable(f"cannot load librdkafka from {path}: {exc}") from exc
        missing = [name for name in _REQUIRED_SYMBOLS if not hasattr(lib, name)]
        if missing:
            raise LibrdkafkaMockUnavailable(
                f"librdkafka at {path} lacks mock-cluster symbols: {', '.join(missing)}"
            )
        self.path = path
        self._lib = lib
        c_void_p, c_char_p, c_int = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int

        lib.rd_kafka_conf_new.argtypes = []
        lib.rd_kafka_conf_new.restype = c_void_p
        lib.rd_kafka_conf_set.argtypes = [c_void_p, c_char_p, c_char_p, c_char_p, ctypes.c_size_t]
        lib.rd_kafka_conf_set.restype = c_int
        lib.rd_kafka_conf_destroy.argtypes = [c_void_p]
        lib.rd_kafka_conf_destroy.restype = None
        lib.rd_kafka_new.argtypes = [c_int, c_void_p, c_char_p, ctypes.c_size_t]
        lib.rd_kafka_new.restype = c_void_p
        lib.rd_kafka_destroy.argtypes = [c_void_p]
        lib.rd_kafka_destroy.restype = None
        lib.rd_kafka_err2str.argtypes = [c_int]
        lib.rd_kafka_err2str.restype = c_char_p
        lib.rd_kafka_mock_cluster_new.argtypes = [c_void_p, c_int]
        lib.rd_kafka_mock_cluster_new.restype = c_void_p
        lib.rd_kafka_mock_cluster_destroy.argtypes = [c_void_p]
        lib.rd_kafka_mock_cluster_destroy.restype = None
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [c_void_p]
        lib.rd_kafka_mock_cluster_bootstraps.restype = c_char_p
        lib.rd_kafka_mock_topic_create.argtypes = [c_void_p, c_char_p, c_int, c_int]
        lib.rd_kafka_mock_topic_create.restype = c_int
        lib.rd_kafka_mock_coordinator_set.argtypes = [c_void_p, c_char_p, c_char_p, ctypes.c_int32]
        lib.rd_kafka_mock_coordinator_set.restype = c_int
        # Optional: older librdkafka builds lack broker up/down control.
        for name in ("rd_kafka_mock_broker_set_down", "rd_kafka_mock_broker_set_up"):
            if hasattr(lib, name):
                func = getattr(lib, name)
                func.argtypes = [c_void_p, ctypes.c_int32]
                func.restype = c_int
        if hasattr(lib, "rd_kafka_mock_broker_set_rack"):
            lib.rd_kafka_mock_broker_set_rack.argtypes = [c_void_p, ctypes.c_int32, c_char_p]
            lib.rd_kafka_mock_broker_set_rack.restype = c_int

    def has_symbol(self, name: str) -> bool:
        return hasattr(self._lib, name)

    def conf_new(self) -> int | None:
        result: int | None = self._lib.rd_kafka_conf_new()
        return result

    def conf_set(self, conf: int, name: str, value: str) -> None:
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        res = int(
            self._lib.rd_kafka_conf_set(
                conf, name.encode("utf-8"), value.encode("utf-8"), errstr, _ERRSTR_SIZE
            )
        )
        if res != _RD_KAFKA_CONF_OK:
            detail = errstr.value.decode("utf-8", "replace") or f"rd_kafka_conf_res_t {res}"
            raise LibrdkafkaMockError("rd_kafka_conf_set", f"{name}={value!r}: {detail}")

    def conf_destroy(self, conf: int) -> None:
        self._lib.rd_kafka_conf_destroy(conf)

    def new_producer(self, conf: int) -> int:
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        rk: int | None = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not rk:
            detail = errstr.value.decode("utf-8", "replace") or "unknown error"
            raise LibrdkafkaMockError("rd_kafka_new", detail)
        return rk

    def destroy(self, rk: int) -> None:
        self._lib.rd_kafka_destroy(rk)

    def err2str(self, err: int) -> str:
        text: bytes | None = self._lib.rd_kafka_err2str(err)
        return text.decode("utf-8", "replace") if text else f"error {err}"

    def mock_cluster_new(self, rk: int, brokers: int) -> int | None:
        result: int | None = self._lib.rd_kafka_mock_cluster_new(rk, brokers)
        return result

    def mock_cluster_destroy(self, mcluster: int) -> None:
        self._lib.rd_kafka_mock_cluster_destroy(mcluster)

    def mock_cluster_bootstraps(self, mcluster: int) -> str:
        text: bytes | None = self._lib.rd_kafka_mock_cluster_bootstraps(mcluster)
        return text.decode("utf-8") if text else ""

    def mock_topic_create(self, mcluster: int, name: str, partitions: int, rf: int) -> int:
        return int(self._lib.rd_kafka_mock_topic_create(mcluster, name.encode("utf-8"), partitions, rf))

    def mock_coordinator_set(self, mcluster: int, key_type: str, key: str, broker_id: int) -> int:
        return int(
            self._lib.rd_kafka_mock_coordinator_set(
                mcluster, key_type.encode("utf-8"), key.encode("utf-8"), broker_id
            )
        )

    def mock_broker_set(self, symbol: str, mcluster: int, broker_id: int, *args: bytes) -> int:
        return int(getattr(self._lib, symbol)(mcluster, broker_id, *args))


def _find_bundled_library() -> Path:
    """Locate the librdkafka shared library bundled with confluent-kafka.

    ``find_spec`` only resolves the package location; it does not import
    ``confluent_kafka`` (and hence does not load its C extension).
    """
    try:
        spec = importlib.util.find_spec("confluent_kafka")
    except (ImportError, ValueError) as exc:
        raise LibrdkafkaMockUnavailable(f"cannot locate confluent_kafka: {exc}") from exc
    if spec is None or not spec.submodule_search_locations:
        raise LibrdkafkaMockUnavailable(
            "confluent_kafka is not installed; the librdkafka mock cluster needs its wheel"
        )
    candidates: list[Path] = []
    for location in spec.submodule_search_locations:
        package_dir = Path(location)
        for folder in (
            package_dir.parent / "confluent_kafka.libs",
            package_dir / ".libs",
            package_dir / ".dylibs",
        ):
            if folder.is_dir():
                for pattern in _LIBRARY_GLOBS:
                    candidates.extend(sorted(folder.glob(pattern)))
    if not candidates:
        searched = ", ".join(spec.submodule_search_locations)
        raise LibrdkafkaMockUnavailable(
            "no bundled librdkafka found next to confluent_kafka "
            f"(searched confluent_kafka.libs, .libs, .dylibs around {searched}); "
            "a confluent-kafka built against a system librdkafka needs library_path="
        )
    return candidates[0]


@functools.cache
def _load(path: Path | None) -> _Librdkafka:
    # Cached so repeated clusters share one set of ctypes declarations; the
    # dynamic loader would return the same handle anyway.
    return _Librdkafka(path if path is not None else _find_bundled_library())


class LibrdkafkaMockCluster:
    """A librdkafka mock Kafka cluster listening on 127.0.0.1.

    The cluster runs on librdkafka's own threads inside this process.  Broker
    ids are ``1..brokers``.  All listeners are on loopback: librdkafka binds
    every mock broker to ``INADDR_LOOPBACK`` on a kernel-chosen port and offers
    no setting to choose another address, and :meth:`start` verifies that every
    advertised bootstrap address is ``127.0.0.1``.

    kafka-python clients must be created with
    ``api_version=KAFKA_PYTHON_API_VERSION`` (``(2, 3)``): the mock implements
    ApiVersions only up to v2 and kafka-python 3.0.12 cannot decode its reply to
    newer ApiVersions requests, so auto-detection and ``api_version >= (2, 4)``
    fail to bootstrap.  ``rdkafka_mock.h`` documents CreateTopics as unsupported
    by the mock; use :meth:`create_topic`.

    Use as a context manager, or call :meth:`start` and :meth:`close`::

        with LibrdkafkaMockCluster(brokers=3) as cluster:
            cluster.create_topic("events", partitions=6)
            consumer = KafkaConsumer(
                bootstrap_servers=cluster.bootstrap_servers,
                api_version=KAFKA_PYTHON_API_VERSION,
            )

    The object is not thread-safe: start and close it from one thread.
    """

    def __init__(self, brokers: int = 1, *, library_path: str | os.PathLike[str] | None = None) -> None:
        """Configure a cluster without starting it.

        Args:
            brokers: Number of mock brokers, at least 1.
            library_path: librdkafka shared library to use instead of the one
                bundled in the confluent-kafka wheel.

        Raises:
            ValueError: If ``brokers`` is less than 1.
        """
        if brokers < 1:
            raise ValueError(f"brokers must be >= 1, got {brokers}")
        self._brokers = brokers
        self._library_path = Path(library_path) if library_path is not None else None
        self._lib: _Librdkafka | None = None
        self._rk: int | None = None
        self._mcluster: int | None = None
        self._bootstrap_servers: str | None = None

    @property
    def brokers(self) -> int:
        """Number of brokers in the cluster; their ids are ``1..brokers``."""
        return self._brokers

    @property
    def started(self) -> bool:
        """Whether the cluster is running."""
        return self._mcluster is not None

    def start(self) -> None:
        """Create the librdkafka handle and the mock cluster.

        Raises:
            LibrdkafkaMockUnavailable: If librdkafka or its mock API is missing.
            LibrdkafkaMockError: If librdkafka fails to create the handle or
                cluster, or a listener is not on 127.0.0.1.
            RuntimeError: If the cluster was already started.
        """
        if self._mcluster is not None:
            raise RuntimeError("LibrdkafkaMockCluster already started")
        lib = _load(self._library_path)
        conf = lib.conf_new()
        if not conf:
            raise LibrdkafkaMockError("rd_kafka_conf_new", "returned NULL")
        try:
            lib.conf_set(conf, "log_level", _LOG_LEVEL)
            rk = lib.new_producer(conf)
        except BaseException:
            # rd_kafka_new takes ownership of conf only on success.
            lib.conf_destroy(conf)
            raise
        mcluster = lib.mock_cluster_new(rk, self._brokers)
        if not mcluster:
            lib.destroy(rk)
            raise LibrdkafkaMockError(
                "rd_kafka_mock_cluster_new", f"could not create a {self._brokers}-broker cluster"
            )
        self._lib, self._rk, self._mcluster = lib, rk, mcluster
        try:
            self._bootstrap_servers = lib.mock_cluster_bootstraps(mcluster)
            self._check_loopback(self._bootstrap_servers)
        except BaseException:
            self.close()
            raise

    def _check_loopback(self, bootstrap_servers: str) -> None:
        # Defence in depth: a future librdkafka could bind elsewhere, and the
        # test suite must never talk to anything but this host's loopback.
        addresses = bootstrap_servers.split(",") if bootstrap_servers else []
        if len(addresses) != self._brokers:
            raise LibrdkafkaMockError(
                "rd_kafka_mock_cluster_bootstraps",
                f"expected {self._brokers} addresses, got {bootstrap_servers!r}",
            )
        for address in addresses:
            host, _, port = address.rpartition(":")
            if host != _LOOPBACK_HOST or not port.isdigit():
                raise LibrdkafkaMockError(
                    "rd_kafka_mock_cluster_bootstraps",
                    f"mock listener {address!r} is not on {_LOOPBACK_HOST}",
                )

    def close(self) -> None:
        """Destroy the mock cluster, then the librdkafka handle.

        Idempotent; calling it on a cluster that was never started is a no-op.
        The cluster must go first because it is owned by the handle's
        bookkeeping.
        """
        lib, mcluster, rk = self._lib, self._mcluster, self._rk
        self._mcluster = None
        self._rk = None
        self._bootstrap_servers = None
        if lib is None:
            return
        if mcluster is not None:
            lib.mock_cluster_destroy(mcluster)
        if rk is not None:
            lib.destroy(rk)

    def __enter__(self: _ClusterT) -> _ClusterT:
        """Start the cluster and return it."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the cluster."""
        self.close()

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``127.0.0.1:port`` listeners, one per broker.

        Raises:
            RuntimeError: If the cluster is not running.
        """
        if self._bootstrap_servers is None:
            raise RuntimeError("LibrdkafkaMockCluster is not started")
        return self._bootstrap_servers

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        """Create a topic directly in the mock (it has no CreateTopics API).

        Args:
            name: Topic name.
            partitions: Number of partitions, at least 1.
            replication_factor: Replicas per partition, between 1 and the
                number of brokers.  librdkafka would silently clamp a larger
                value; it is rejected here, as a real Kafka broker would.

        Raises:
            ValueError: If ``partitions`` or ``replication_factor`` is out of
                range.
            LibrdkafkaMockError: If librdkafka rejects the topic, e.g. because
                it already exists.
            RuntimeError: If the cluster is not running.
        """
        if partitions < 1:
            raise ValueError(f"partitions must be >= 1, got {partitions}")
        if not 1 <= replication_factor <= self._brokers:
            raise ValueError(f"replication_factor must be in 1..{self._brokers}, got {replication_factor}")
        lib, mcluster = self._running()
        err = lib.mock_topic_create(mcluster, name, partitions, replication_factor)
        self._check("rd_kafka_mock_topic_create", err, f"topic {name!r}")

    def set_group_coordinator(self, group_id: str, broker_id: int) -> None:
        """Make ``broker_id`` the coordinator reported for consumer group ``group_id``.

        Without this the mock picks a broker by hashing the group id.  The
        broker id is not validated by librdkafka; an id with no broker makes
        FindCoordinator fail for the group.

        Raises:
            LibrdkafkaMockError: If librdkafka rejects the request.
            RuntimeError: If the cluster is not running.
        """
        lib, mcluster = self._running()
        err = lib.mock_coordinator_set(mcluster, "group", group_id, broker_id)
        self._check("rd_kafka_mock_coordinator_set", err, f"group {group_id!r}")

    def set_broker_down(self, broker_id: int) -> None:
        """Disconnect broker ``broker_id`` and refuse new connections to it.

        Partition leadership does not move.  ``-1`` means all brokers.

        Raises:
            LibrdkafkaMockUnavailable: If this librdkafka lacks the function.
            LibrdkafkaMockError: If the broker does not exist.
            RuntimeError: If the cluster is not running.
        """
        self._broker_set("rd_kafka_mock_broker_set_down", broker_id)

    def set_broker_up(self, broker_id: int) -> None:
        """Let broker ``broker_id`` accept connections again (``-1``: all).

        Raises:
            LibrdkafkaMockUnavailable: If this librdkafka lacks the function.
            LibrdkafkaMockError: If the broker does not exist.
            RuntimeError: If the cluster is not running.
        """
        self._broker_set("rd_kafka_mock_broker_set_up", broker_id)

    def set_broker_rack(self, broker_id: int, rack: str) -> None:
        """Put broker ``broker_id`` in ``rack`` (reported in Metadata, for rack-aware assignors).

        Raises:
            LibrdkafkaMockUnavailable: If this librdkafka lacks the function.
            LibrdkafkaMockError: If the broker does not exist.
            RuntimeError: If the cluster is not running.
        """
        self._broker_set("rd_kafka_mock_broker_set_rack", broker_id, rack.encode())

    def _broker_set(self, symbol: str, broker_id: int, *args: bytes) -> None:
        lib, mcluster = self._running()
        if not lib.has_symbol(symbol):
            raise LibrdkafkaMockUnavailable(f"librdkafka at {lib.path} has no {symbol}")
        err = lib.mock_broker_set(symbol, mcluster, broker_id, *args)
        self._check(symbol, err, f"broker {broker_id}")

    def _running(self) -> tuple[_Librdkafka, int]:
        if self._lib is None or self._mcluster is None:
            raise RuntimeError("LibrdkafkaMockCluster is not started")
        return self._lib, self._mcluster

    def _check(self, operation: str, err: int, what: str) -> None:
        if err != _RD_KAFKA_RESP_ERR_NO_ERROR:
            lib, _ = self._running()
            raise LibrdkafkaMockError(operation, f"{what}: {lib.err2str(err)}", code=err)

    def __repr__(self) -> str:
        state = self._bootstrap_servers if self._bootstrap_servers is not None else "stopped"
        return f"{type(self).__name__}(brokers={self._brokers}, {state})"
