"""Smoke test of bench/bench_streams_groups.py: one small streams group on each server.

Three real members, one joins and one closes, on the embedded coordinator and on a one-broker
Apache Kafka 4 cluster (a streams group of KIP-1071 there). The bench itself fails if a task is
ever given to a member while another runs it, or a group does not balance. Beyond "every figure
is there", it checks what the figures stand for: each change moved at least the tasks it must,
every moved task was without an owner for a while that adds up to at most that many times the
change's hand-over, and the group balanced no sooner than every task was owned again.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench_runs import finite, run_bench

MEMBERS = 3  # --quick; 4 tasks per member after the scale-out: 16 tasks
LEAST_MOVED = {"scale-out": 4, "scale-in": 4}  # to the joiner, from the leaver: 4 each


def test_quick_run_hands_tasks_over_on_both_servers(tmp_path: Path) -> None:
    report = tmp_path / "streams-groups.json"
    done = run_bench("bench_streams_groups.py", "--quick", "--json", str(report), timeout_s=300)
    figures = json.loads(report.read_text())
    assert set(figures) == {"embedded", "kafka"}, done.stdout
    for server, by_size in figures.items():
        for change, trials in by_size[str(MEMBERS)].items():
            assert len(trials) == 1, (server, change)
            for trial in trials:
                where = f"{server} {change}: {trial}"
                assert trial["tasks_moved"] >= LEAST_MOVED[change], where
                handed_over_s = finite(trial["all_owned_ms"]) / 1000
                assert 0 < finite(trial["unowned_task_seconds"]) <= trial["tasks_moved"] * handed_over_s, (
                    where
                )
                assert finite(trial["balanced_ms"]) >= trial["all_owned_ms"], where
    assert "| task-seconds without an owner (median) | 3 | scale-out |" in done.stdout
