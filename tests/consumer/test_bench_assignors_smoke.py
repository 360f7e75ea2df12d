"""Smoke test of bench/bench_assignors.py: small grids, every assignor, beside kafka-python's.

Beyond "every row is there", it checks what the correctness columns say (never the times): the
sticky assignors move exactly the minimum any balanced assignor must move and stay balanced;
range and roundrobin, which are not sticky, move what kafka-python's move; no assignor is less
balanced than the kafka-python assignor beside it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "bench_assignors.py"
PAIRS = {  # ours -> the kafka-python assignor beside it
    "range": "range",
    "roundrobin": "roundrobin",
    "sticky": "sticky",
    "cooperative-sticky": "cooperative-sticky",
    "uniform": "sticky",
}
STICKY = {"sticky", "cooperative-sticky", "uniform"}
GRIDS = ("10 x 100", "100 x 1,000")


def moved(cell: str) -> tuple[int, int] | None:
    """'9 (9)' -> (9, 9): partitions moved, and the minimum; None for the full assignment."""
    if not cell:
        return None
    count, minimum = cell.replace(",", "").rstrip(")").split(" (")
    return int(count), int(minimum)


def test_quick_assignor_benchmark_prints_ours_beside_kafka_python() -> None:
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    rows = {
        (cells[0], cells[1], cells[2]): cells
        for line in result.stdout.splitlines()
        if line.startswith(GRIDS, 2)
        for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]
    }
    assert set(rows) == {
        (g, case, ours) for g in GRIDS for case in ("full", "join", "leave") for ours in PAIRS
    }
    for (grid, case, ours), cells in rows.items():
        theirs, balance, their_balance = cells[4], int(cells[9]), int(cells[10])
        ours_moved, their_moved = moved(cells[11]), moved(cells[12])
        where = f"{grid} {case} {ours}: {cells}"
        assert theirs == PAIRS[ours], where
        assert balance <= their_balance, where
        if case == "full":
            assert ours_moved is None and balance <= 1, where
            continue
        assert ours_moved is not None and their_moved is not None, where
        if ours in STICKY:
            assert ours_moved[0] == ours_moved[1], f"moved more than the minimum: {where}"
            # Round one of a cooperative join holds back what moves: balance comes in round two.
            assert balance <= 1 or (ours == "cooperative-sticky" and case == "join"), where
        else:
            assert ours_moved == their_moved, where
