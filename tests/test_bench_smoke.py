"""Smoke test of bench/bench_coordinator.py: tiny sizes, both servers, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "bench" / "bench_coordinator.py"


def _table_rows(stdout: str, metric: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in stdout.splitlines()
        if line.startswith(f"| {metric}")
    ]


@pytest.mark.timeout(90)
def test_quick_benchmark_reports_both_servers(tmp_path: Path) -> None:
    output = tmp_path / "coordinator.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--output", str(output)],
        check=False,
        capture_output=True,
        text=True,
        timeout=80,
        env=env,
        cwd=REPO,
    )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"

    # The printed table has a figure for each server in every row.
    joins = _table_rows(done.stdout, "time to stable generation")
    assert len(joins) == 1, done.stdout
    _, size, ours, mock, ratio = joins[0]
    assert size == "3 members"
    assert ours.endswith(" ms") and mock.endswith(" ms"), joins[0]
    assert ratio.endswith("better)") or ratio.endswith("worse)"), joins[0]
    heartbeats = _table_rows(done.stdout, "heartbeats/s")
    assert heartbeats, done.stdout
    for _, _, ours, mock, _ in heartbeats:
        assert ours.endswith("/s") and mock.endswith("/s"), heartbeats

    report = json.loads(output.read_text())
    assert report["config"]["quick"] is True
    for kind in ("embedded", "mock"):
        join = report["join"][0][kind]
        assert join["failures"] == 0
        assert join["median_ms"] > 0
        for sample in join["samples"]:
            assert sample["errors"] == {}, sample
        for row in report["heartbeat"]:
            assert row[kind]["best_per_second"] >= row[kind]["median_per_second"] > 0
            for sample in row[kind]["samples"]:
                assert sample["errors"] == {}, sample
    # Both servers were driven with the same protocol versions, all of which they read.
    assert set(report["versions_used"]) == {
        "ApiVersions",
        "FindCoordinator",
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
    }
