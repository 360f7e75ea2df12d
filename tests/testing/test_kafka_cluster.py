"""coordinator_api.testing.KafkaCluster: real Apache Kafka brokers, and their faults."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from kafka.admin import KafkaAdminClient

from coordinator_api.testing import (
    KAFKA_VERSION,
    KafkaCluster,
    KafkaToolsMissing,
    _kafka_cluster,
    kafka_classpath,
)


def offsets_topic_replicas(cluster: KafkaCluster) -> list[list[int]]:
    cluster.coordinator_of("replication-check")  # creates __consumer_offsets if it is not there
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        (topic,) = admin.describe_topics(["__consumer_offsets"])
    finally:
        admin.close()
    return [sorted(p["replica_nodes"]) for p in topic["partitions"]]


def test_three_brokers_replicate_the_group_metadata(kafka: KafkaCluster) -> None:
    assert [b.node_id for b in kafka.brokers] == [1, 2, 3]
    assert all(b.running and b.address.startswith("127.0.0.1:") for b in kafka.brokers)
    assert kafka.bootstrap_servers == ",".join(b.address for b in kafka.brokers)
    replicas = offsets_topic_replicas(kafka)
    assert replicas and all(r == [1, 2, 3] for r in replicas)
    assert kafka.coordinator_of("any-group") in {1, 2, 3}
    assert KAFKA_VERSION.startswith("4.")


def test_killing_the_coordinator_moves_the_group(kafka: KafkaCluster) -> None:
    group = "cluster-coordinator-moves"
    old = kafka.coordinator_of(group)
    kafka.kill_broker(old)
    assert not kafka.broker(old).running
    new = kafka.coordinator_of(group, timeout=60)
    assert new != old
    kafka.start_broker(old)
    assert kafka.broker(old).running
    assert kafka.coordinator_of(group) in {1, 2, 3}


def test_stop_pause_and_restart_one_broker(kafka: KafkaCluster) -> None:
    node = kafka.brokers[-1].node_id
    pid = kafka.broker(node).pid
    assert pid is not None
    kafka.pause_broker(node)
    assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
    kafka.resume_broker(node)
    assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
    kafka.stop_broker(node)  # a controlled shutdown ends the process by itself
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    kafka.start_broker(node)
    assert kafka.broker(node).pid not in (None, pid)
    kafka.create_topic("cluster-after-restart", partitions=3)


def test_close_leaves_no_process_and_no_files() -> None:
    cluster = KafkaCluster(brokers=1)
    with cluster:
        (broker,) = cluster.brokers
        pid, directory = broker.pid, broker.directory
        assert pid is not None and directory.is_dir()
        cluster.create_topic("solo", partitions=2)
        assert cluster.coordinator_of("solo-group") == 1
    assert not psutil.pid_exists(pid)
    assert not directory.exists()


def test_ports_are_picked_below_the_ephemeral_range_and_never_twice() -> None:
    """Ports the kernel hands out can become any process's outgoing connection's local port in
    the seconds before a broker binds them (it failed once in CI: "Address already in use")."""
    low, _ = _kafka_cluster._ephemeral_ports()
    ports = [_kafka_cluster.free_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    assert all(1024 <= port < low for port in ports), (low, ports)


def test_a_port_taken_before_its_broker_binds_it_starts_the_cluster_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        handed = [taken]  # the first port the cluster asks for is already someone's
        pick = _kafka_cluster.free_port
        monkeypatch.setattr(_kafka_cluster, "free_port", lambda: handed.pop() if handed else pick())
        with (
            caplog.at_level(logging.WARNING, logger=_kafka_cluster.__name__),
            KafkaCluster(brokers=1) as cluster,
        ):
            (broker,) = cluster.brokers
            assert taken not in (broker.port, broker.controller_port)
            assert cluster.coordinator_of("after-a-taken-port") == 1
    assert [r.levelno for r in caplog.records if "port was taken" in r.getMessage()] == [logging.WARNING]


def test_brokers_die_with_the_process_that_started_them(tmp_path: Path) -> None:
    """A test run that is SIGKILLed leaves no broker behind (setpriv --pdeathsig)."""
    script = tmp_path / "owner.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            from coordinator_api.testing import KafkaCluster
            cluster = KafkaCluster(brokers=1)
            cluster.start()
            print(cluster.brokers[0].pid, flush=True)
            time.sleep(600)
            """
        )
    )
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    broker_pid = int(owner.stdout.readline())
    assert psutil.pid_exists(broker_pid)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 30
    while psutil.pid_exists(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not psutil.pid_exists(broker_pid)


def test_missing_java_is_one_line_saying_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaToolsMissing) as raised:
        kafka_classpath(tmp_path / "cache")
    message = str(raised.value)
    assert "\n" not in message
    assert "`java`" in message and "apt-get install" in message


def test_the_cache_is_fetched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second call reuses the jars: no Maven, even with mvn off the PATH."""
    first = kafka_classpath()
    assert any(Path(first).parent.glob(f"kafka_2.13-{KAFKA_VERSION}.jar"))
    java = shutil.which("java")
    assert java is not None
    monkeypatch.setenv("PATH", os.path.dirname(os.path.realpath(java)))
    assert shutil.which("mvn") is None
    assert kafka_classpath() == first
