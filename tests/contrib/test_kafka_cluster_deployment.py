"""contrib/kafka-cluster runs as its README says: its three nodes form one Apache Kafka cluster
on this machine, and this project's members of both group protocols join groups on it."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient, NewTopic

from coordinator_api.testing import KAFKA_VERSION

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOYMENT = ROOT / "contrib" / "kafka-cluster"
BOOTSTRAP = "127.0.0.1:9092,127.0.0.1:9102,127.0.0.1:9112"  # what the README gives clients

# The nodes run as run.sh starts them, with the JVM's own way of adding options: C1 only and one GC
# thread, as the suite's other brokers run (KafkaCluster), for a quick start on a shared machine.
QUICK_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"

# Three more JVMs: not beside the session's Kafka cluster starting on another worker.
pytestmark = [pytest.mark.xdist_group("kafka"), pytest.mark.timeout(300)]


def run(command: str, data: Path) -> str:
    result = subprocess.run(
        [str(DEPLOYMENT / "run.sh"), command],
        env={**os.environ, "DATA_DIR": str(data), "KAFKA_HEAP_MB": "384", "JDK_JAVA_OPTIONS": QUICK_JVM},
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def deployed(tmp_path: Path) -> Iterator[Path]:
    data = tmp_path / "data"
    try:
        out = run("start", data)
        assert out.splitlines()[-3:] == [
            f"node {n} accepts clients on 127.0.0.1:{port}" for n, port in ((1, 9092), (2, 9102), (3, 9112))
        ]
        yield data
    finally:
        pids = [int(p.read_text()) for p in data.glob("kafka-*.pid")]
        run("stop", data)
        assert not [pid for pid in pids if psutil.pid_exists(pid)]


def test_the_deployment_runs_the_kafka_version_the_tests_run() -> None:
    pom = (DEPLOYMENT / "pom.xml").read_text()
    assert re.findall(r"<kafka.version>(.+?)</kafka.version>", pom) == [KAFKA_VERSION]


def test_three_nodes_form_one_cluster_and_both_group_protocols_work_on_it(deployed: Path) -> None:
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP)
    try:
        cluster = admin.describe_cluster()
        assert sorted(b["broker_id"] for b in cluster["brokers"]) == [1, 2, 3]
        assert cluster["cluster_id"] == (deployed / "cluster-id").read_text().strip()
        admin.create_topics([NewTopic("orders", num_partitions=4, replication_factor=3)])
    finally:
        admin.close()
    for protocol in ("classic", "consumer"):
        member = ConsumerGroupMember(
            f"orders-{protocol}", BOOTSTRAP, topics=["orders"], group_protocol=protocol
        )
        try:
            deadline = time.monotonic() + 90
            while len(member.assignment()) < 4 and time.monotonic() < deadline:
                member.poll(0.1)
            assert member.assignment() == {("orders", p) for p in range(4)}, protocol
            assert member.group_protocol == protocol
        finally:
            member.close()
