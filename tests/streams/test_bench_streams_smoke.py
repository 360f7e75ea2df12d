"""Smoke test of bench/bench_streams.py: both assignors, every scenario, in one quick run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_streams.py"


def test_quick_streams_benchmark_prints_ours_beside_the_baseline() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    rows = [line.split(" | ") for line in result.stdout.splitlines() if line.startswith("| ")]
    for scenario in ("scale-out", "scale-out+standby", "crash+standby", "scale-in"):
        ours = next(r for r in rows if r[0] == f"| {scenario}" and r[1] == "high-availability")
        base = next(r for r in rows if r[0] == f"| {scenario}" and r[1] == "eager-sticky")
        assert float(ours[2].replace(",", "")) <= float(base[2].replace(",", "")), (ours, base)
    assert any(r[0] == "| 100 x 1,000" and r[1] == "high-availability" for r in rows)
