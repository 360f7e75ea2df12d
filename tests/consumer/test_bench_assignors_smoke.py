"""Smoke test of bench/bench_assignors.py: small grids, every assignor, beside kafka-python's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_assignors.py"


def test_quick_assignor_benchmark_prints_ours_beside_kafka_python() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| 100 x 1,000 |")]
    for ours, theirs in [
        ("range", "range"),
        ("roundrobin", "roundrobin"),
        ("sticky", "sticky"),
        ("cooperative-sticky", "cooperative-sticky"),
        ("uniform", "sticky"),
    ]:
        assert any(
            f"| {ours} |" in row and f"| {theirs} |" in row.split(f"| {ours} |", 1)[1] for row in rows
        ), ours
