"""Smoke test of bench/bench_leader.py: --quick, the embedded coordinator, Kafka and ZooKeeper.

coordinator_leader runs on the embedded coordinator and on a real one-broker Apache Kafka 4
cluster, beside kazoo's election on ZooKeeper, end to end.

etcd is not needed: the run points ``--etcd-binary`` at a path that does not exist, and the
benchmark must say that etcd was not measured instead of failing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_runs import run_bench


def _table_rows(stdout: str, label: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in stdout.splitlines()
        if line.startswith(f"| {label}")
    ]


def _figures(cell: str) -> list[float]:
    """'12 / 10 / 1,930' -> [12.0, 10.0, 1930.0]."""
    parts = [p.strip().replace(",", "") for p in cell.split("/")]
    assert len(parts) == 3, cell
    return [float(p) for p in parts]


@pytest.mark.timeout(200)
def test_quick_benchmark_reports_coordinator_kafka_and_zookeeper(tmp_path: Path) -> None:
    output = tmp_path / "leader.json"
    done = run_bench(
        "bench_leader.py",
        # --quick's configuration with one trial instead of two: the suite's time is short.
        "--sessions",
        "2000",
        "--heartbeat-divisors",
        "3",
        "--repeats",
        "1",
        "--etcd-binary",
        str(tmp_path / "no-such-etcd"),
        "--output",
        str(output),
        timeout_s=190,
    )

    # One row per measured system, with graceful and crash figures; ours has ratios to Kafka and
    # ZooKeeper.
    ours = _table_rows(done.stdout, "coordinator_leader")
    kafka = _table_rows(done.stdout, "Kafka cluster")
    zookeeper = _table_rows(done.stdout, "ZooKeeper")
    assert len(ours) == 1 and len(kafka) == 1 and len(zookeeper) == 1, done.stdout
    for row in (ours[0], kafka[0], zookeeper[0]):
        _, session, _, graceful, crash, overlaps, _, _, _ = row
        assert session == "2000 ms", row
        assert all(value > 0 for value in _figures(graceful) + _figures(crash)), row
        assert overlaps == "0", row
    # Crash failover waits for the dead leader's session (2 s) on both group coordinators.
    for row in (ours[0], kafka[0]):
        assert min(_figures(row[4])) > 1000, row
    for cell in (ours[0][6], ours[0][7]):
        graceful_ratio, crash_ratio = cell.split("; ")
        assert graceful_ratio.endswith("x") and crash_ratio.endswith("x"), ours[0]
    assert ours[0][8].startswith("n/a (not measured)"), ours[0]

    # etcd is reported as not measured, with the reason.
    etcd = _table_rows(done.stdout, "etcd")
    assert len(etcd) == 1 and etcd[0][3] == "not measured: etcd is not installed", etcd
    assert "etcd (lease + txn election) was not measured: etcd is not installed" in done.stdout

    report = json.loads(output.read_text())
    assert report["config"]["repeats"] == 1
    assert set(report["servers"]) == {"coordinator", "kafka", "zookeeper"}
    assert "etcd" in report["unavailable"]
    for result in report["results"]:
        assert result["failed"] == 0, result
        assert result["overlaps"] == 0, result
        assert result["epoch_regressions"] == 0, result
        assert len(result["graceful"]["samples_ms"]) == len(result["crash"]["samples_ms"]) == 1, result
