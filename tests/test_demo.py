"""``coordinator-api demo``, the README's first command, end to end as a user runs it."""

from __future__ import annotations

import subprocess
import sys

CLI = [sys.executable, "-m", "coordinator_api"]


def test_demo_runs_the_main_job() -> None:
    result = subprocess.run(
        [*CLI, "--log-level", "WARNING", "demo"], capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "OK: after each change every partition was owned by exactly one live member" in out
    assert "partitions worked on by two members at once: 0" in out
    assert out.count(" expired ") >= 2  # the SIGKILLed and the paused member's sessions ran out
    assert "resumed: it reports its partitions lost, then rejoins: settled" in out
    assert " left " in out  # the gracefully stopped member sent LeaveGroup
