"""Smoke test of bench/bench_spark.py: the quick run prints the allocator table and the
makespans of distribute beside plain Spark for the skewed and the even workload.

The correctness of every run (each unit's result exactly once, for plain Spark and for
distribute, and no unit run twice by distribute) is asserted by the bench itself, which then
exits non-zero; so this test keeps those asserts on (no ``python -O``). The makespans are times:
only their presence is checked."""

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
    env.pop("PYTHONOPTIMIZE", None)  # the bench's own correctness asserts must run
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
