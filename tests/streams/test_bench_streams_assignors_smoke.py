"""Smoke test of bench/bench_streams_assignors.py: this project's and Apache Kafka's server-side
streams task assignors on the same small groups. Beyond "every figure is there", it checks what
the figures stand for: both place every standby (one per task, each member in a process of its
own), both balance the active tasks to within one, and a leave moves no active task of a member
that stayed, for either."""

from __future__ import annotations

import json
from pathlib import Path

from bench_runs import run_bench

TASKS_PER_MEMBER = 6  # two subtopologies of 3N partitions, one standby each


def test_quick_run_times_both_assignors_on_the_same_groups(tmp_path: Path) -> None:
    report = tmp_path / "streams-assignors.json"
    done = run_bench("bench_streams_assignors.py", "--quick", "--json", str(report), timeout_s=300)
    figures = json.loads(report.read_text())
    assert sorted(map(int, figures)) == [10, 100], done.stdout
    for n, by_assignor in figures.items():
        for assignor, cases in by_assignor.items():
            for case, figure in cases.items():
                where = f"N = {n}, {assignor}, {case}: {figure}"
                assert 0 < figure["best_ms"] <= figure["median_ms"], where
                assert figure["standbys"] == TASKS_PER_MEMBER * int(n), where
                assert figure["active_spread"] <= 1 and figure["moved"] == 0, where
    assert "| 100 | leave |" in done.stdout
