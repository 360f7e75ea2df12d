"""Smoke test of bench/bench_spark.py: the quick run prints the allocator table and the
makespans of distribute beside plain Spark for the skewed and the even workload."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "bench_spark.py"


def test_quick_spark_benchmark_prints_distribute_beside_plain_spark() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "plugins"), str(ROOT)])}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--master", "local[2]"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for executors in ("10", "100", "1,000"):
        assert re.search(rf"^\| {executors} \| \d+ \| \d+ \|$", out, re.MULTILINE), out
    ratio = r"\| \d+\.\d\d \| \d+\.\d\dx \|"
    for method in ("plain parallelize(units, n)", "repartition(n)", "coordinator_spark.distribute"):
        assert len(re.findall(rf"^\| {re.escape(method)} {ratio}$", out, re.MULTILINE)) == 2, out
    assert "### Skewed makespan" in out
    assert "distribute's overhead" in out
