"""What the benchmarks' smoke tests share: running a script of ``bench/`` as a user does, and
reading the figures it reports."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_bench(script: str, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """Run ``bench/<script>`` with ``args`` in a process of its own, from the repository, and
    fail the test, showing both outputs, unless it exits 0."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    try:
        done = subprocess.run(
            [sys.executable, str(REPO / "bench" / script), *args],
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired as late:
        # What it printed so far says where it stopped (the exception's own text does not).
        pytest.fail(
            f"bench/{script} did not finish within {timeout_s:g} s\nstdout:\n{_text(late.stdout)}\n"
            f"stderr:\n{_text(late.stderr)}",
            pytrace=False,
        )
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    return done


def _text(output: str | bytes | None) -> str:
    # subprocess gives a timed-out run's output as bytes, even with text=True.
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def finite(value: Any) -> float:
    """A reported figure, which must be a real, finite number."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    assert math.isfinite(value), value
    return float(value)
