"""Tests for the ctypes wrapper around librdkafka's mock Kafka cluster.

These drive a real mock cluster and talk to it with a real kafka-python client.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.protocol.metadata import FindCoordinatorRequest

from coordinator_api.testing._librdkafka_mock import (
    KAFKA_PYTHON_API_VERSION,
    LibrdkafkaMockCluster,
    LibrdkafkaMockError,
    LibrdkafkaMockUnavailable,
)

_CLIENT_TIMEOUTS: dict[str, int] = {"request_timeout_ms": 3000}

# FindCoordinator key_type for consumer groups.
_GROUP_KEY_TYPE = 0
_TOPIC_ALREADY_EXISTS = 36
_API_VERSIONS_KEY = 18


def _addresses(cluster: LibrdkafkaMockCluster) -> list[tuple[str, int]]:
    result = []
    for address in cluster.bootstrap_servers.split(","):
        host, _, port = address.rpartition(":")
        result.append((host, int(port)))
    return result


def _admin(cluster: LibrdkafkaMockCluster) -> Any:
    return KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap_servers,
        api_version=KAFKA_PYTHON_API_VERSION,
        bootstrap_timeout_ms=5000,
        **_CLIENT_TIMEOUTS,
    )


def _find_group_coordinator(admin: Any, group_id: str) -> Any:
    # KafkaAdminClient caches coordinators, so a second lookup through its
    # API would not hit the wire; send a raw request on its connection instead.
    manager = admin._manager
    request = FindCoordinatorRequest(key=group_id, key_type=_GROUP_KEY_TYPE)
    return manager.run(manager.send, request)


@pytest.fixture
def cluster3() -> Iterator[LibrdkafkaMockCluster]:
    with LibrdkafkaMockCluster(brokers=3) as cluster:
        yield cluster


@pytest.mark.parametrize("brokers", [1, 3])
def test_every_listener_is_loopback(brokers: int) -> None:
    with LibrdkafkaMockCluster(brokers=brokers) as cluster:
        addresses = _addresses(cluster)
        assert len(addresses) == brokers
        assert {host for host, _ in addresses} == {"127.0.0.1"}
        assert len({port for _, port in addresses}) == brokers
        for address in addresses:
            with socket.create_connection(address, timeout=2):
                pass


def test_one_broker_topic_partitions_via_consumer() -> None:
    with LibrdkafkaMockCluster() as cluster:
        cluster.create_topic("single", partitions=6)
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap_servers,
            api_version=KAFKA_PYTHON_API_VERSION,
            **_CLIENT_TIMEOUTS,
        )
        try:
            assert consumer.partitions_for_topic("single") == set(range(6))
        finally:
            consumer.close()


def test_three_broker_topic_partitions_via_admin(cluster3: LibrdkafkaMockCluster) -> None:
    cluster3.create_topic("events", partitions=6, replication_factor=3)
    admin = _admin(cluster3)
    try:
        (topic,) = admin.describe_topics(["events"])
        assert topic["error_code"] == 0
        partitions = topic["partitions"]
        assert sorted(p["partition_index"] for p in partitions) == list(range(6))
        assert all(sorted(p["replica_nodes"]) == [1, 2, 3] for p in partitions)
        # The mock picks each partition's leader among the replicas (not always all three brokers).
        assert {p["leader_id"] for p in partitions} <= {1, 2, 3}
    finally:
        admin.close()


def test_set_group_coordinator_moves_find_coordinator(cluster3: LibrdkafkaMockCluster) -> None:
    group = "moving-group"
    admin = _admin(cluster3)
    try:
        before = _find_group_coordinator(admin, group)
        assert before.error_code == 0
        assert before.node_id in {1, 2, 3}
        target = 1 if before.node_id != 1 else 2
        cluster3.set_group_coordinator(group, target)
        after = _find_group_coordinator(admin, group)
        assert after.error_code == 0
        assert after.node_id == target != before.node_id
        assert (after.host, after.port) == _addresses(cluster3)[target - 1]
    finally:
        admin.close()


def test_broker_down_refuses_connections_until_up(cluster3: LibrdkafkaMockCluster) -> None:
    address = _addresses(cluster3)[1]
    cluster3.set_broker_down(2)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=2).close()
    cluster3.set_broker_up(2)
    with socket.create_connection(address, timeout=2):
        pass


def test_unknown_broker_is_reported(cluster3: LibrdkafkaMockCluster) -> None:
    with pytest.raises(LibrdkafkaMockError, match="broker 99"):
        cluster3.set_broker_down(99)


def test_duplicate_topic_raises_with_error_text(cluster3: LibrdkafkaMockCluster) -> None:
    cluster3.create_topic("dup", partitions=1)
    with pytest.raises(LibrdkafkaMockError, match="already exists") as info:
        cluster3.create_topic("dup", partitions=1)
    assert info.value.code == _TOPIC_ALREADY_EXISTS


def test_invalid_arguments_are_rejected_before_c(cluster3: LibrdkafkaMockCluster) -> None:
    with pytest.raises(ValueError, match="partitions"):
        cluster3.create_topic("bad", partitions=0)
    with pytest.raises(ValueError, match="replication_factor"):
        cluster3.create_topic("bad", partitions=1, replication_factor=4)
    with pytest.raises(ValueError, match="brokers"):
        LibrdkafkaMockCluster(brokers=0)


def test_close_is_idempotent() -> None:
    cluster = LibrdkafkaMockCluster(brokers=2)
    cluster.close()
    cluster.start()
    addresses = _addresses(cluster)
    cluster.close()
    cluster.close()
    assert not cluster.started
    with pytest.raises(RuntimeError, match="not started"):
        _ = cluster.bootstrap_servers
    with pytest.raises(RuntimeError, match="not started"):
        cluster.create_topic("late", partitions=1)
    for address in addresses:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(address, timeout=2).close()


def test_start_twice_is_an_error() -> None:
    with LibrdkafkaMockCluster() as cluster, pytest.raises(RuntimeError, match="already started"):
        cluster.start()


def _api_versions_v0(address: tuple[str, int]) -> dict[int, tuple[int, int]]:
    # Hand-encoded so the probe does not depend on any client's negotiation.
    client_id = b"probe"
    body = struct.pack(">hhih", _API_VERSIONS_KEY, 0, 1, len(client_id)) + client_id
    with socket.create_connection(address, timeout=2) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        reader = sock.makefile("rb")
        (size,) = struct.unpack(">i", reader.read(4))
        payload = reader.read(size)
    _correlation_id, error_code, count = struct.unpack_from(">ihi", payload)
    assert error_code == 0
    entries = struct.iter_unpack(">hhh", payload[10 : 10 + 6 * count])
    return {key: (low, high) for key, low, high in entries}


def test_api_versions_cap_matches_kafka_python_setting() -> None:
    # Documents why KAFKA_PYTHON_API_VERSION is (2, 3): kafka-python sends
    # ApiVersions v3+ for newer settings, which this mock does not implement.
    with LibrdkafkaMockCluster() as cluster:
        versions = _api_versions_v0(_addresses(cluster)[0])
    assert versions[_API_VERSIONS_KEY] == (0, 2)
    assert KAFKA_PYTHON_API_VERSION == (2, 3)


def test_librdkafka_is_silent(capfd: pytest.CaptureFixture[str]) -> None:
    with LibrdkafkaMockCluster(brokers=3) as cluster:
        cluster.create_topic("quiet", partitions=2)
        cluster.set_group_coordinator("quiet-group", 3)
        cluster.set_broker_down(1)
        cluster.set_broker_up(1)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_missing_library_raises_typed_error(tmp_path: Path) -> None:
    cluster = LibrdkafkaMockCluster(library_path=tmp_path / "librdkafka-missing.so")
    with pytest.raises(LibrdkafkaMockUnavailable, match="cannot load"):
        cluster.start()
    cluster.close()
