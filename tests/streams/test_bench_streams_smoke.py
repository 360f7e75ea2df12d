"""Smoke test of bench/bench_streams.py: both assignors, every scenario, in one quick run.

It checks what the simulation's figures say (never the wall-clock times of the second table):
every scenario ends balanced under both assignors (the bench itself fails on a group that does
not settle, or settles unbalanced), and the high-availability assignor never leaves tasks down
longer than the eager baseline.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_streams.py"
SCENARIOS = ("scale-out", "scale-out+standby", "crash+standby", "scale-in")
ASSIGNORS = ("high-availability", "eager-sticky")


def test_quick_streams_benchmark_prints_ours_beside_the_baseline() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in result.stdout.splitlines()
        if line.startswith("| ")
    ]
    scenarios = {(r[0], r[1]): r for r in rows if r[0] in SCENARIOS}
    assert set(scenarios) == {(s, a) for s in SCENARIOS for a in ASSIGNORS}, result.stdout
    for (scenario, assignor), (_, _, downtime, worst, rebalances, seconds, _ratio) in scenarios.items():
        where = f"{scenario} {assignor}: {result.stdout}"
        assert int(rebalances) >= 1 and int(seconds) >= 0, where  # it reached balance
        assert float(worst) <= float(downtime.replace(",", "")), where
    for scenario in SCENARIOS:
        ours, base = (scenarios[scenario, a] for a in ASSIGNORS)
        assert float(ours[2].replace(",", "")) <= float(base[2].replace(",", "")), (ours, base)
    assert any(r[0] == "100 x 1,000" and r[1] == "high-availability" for r in rows)
