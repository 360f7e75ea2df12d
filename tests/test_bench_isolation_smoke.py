"""Smoke test of bench/bench_isolation.py: every attack of issue 15, small, against the embedded
coordinator, with a healthy group beside it.

Beyond "the report has its fields", it checks what the benchmark exists to show, without any
latency threshold (speed is the benchmark's figure, not this test's): during every attack the
librdkafka group beside it never rebalanced and every heartbeat of the probe was answered
without an error; and that each attack really ran (the wide topic was created, the partial
requests were written, the 300 connections opened, and every JoinGroup was answered, no more
of them MEMBER_ID_REQUIRED than the configured ``max_pending_members``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from bench_runs import finite, run_bench

ATTACKS = ("A", "B", "C", "D")
MiB = 1 << 20


def _check_probe(window: dict[str, Any]) -> None:
    """Every heartbeat sent in the window was answered, without an error, and its waits make sense."""
    assert window["sent"] > 0, window
    assert window["answered_none"] == window["sent"], window
    assert window["unanswered"] == 0, window
    assert window["other_outcomes"] == {}, window
    assert window["rejoins"] == [], window
    p50, p99, longest = (finite(window[k]) for k in ("p50_ms", "p99_ms", "max_ms"))
    assert 0 < p50 <= p99 <= longest, window
    assert window["samples_with_correction"] >= window["sent"], window


@pytest.mark.timeout(90)
def test_quick_benchmark_leaves_the_healthy_group_undisturbed(tmp_path: Path) -> None:
    output = tmp_path / "isolation.json"
    done = run_bench("bench_isolation.py", "--quick", "--output", str(output), timeout_s=80)
    report = json.loads(output.read_text())
    config = report["config"]
    assert config["quick"] is True
    assert config["servers"] == ["embedded"]
    assert report["budgets"]["queued_max_request_bytes"] == config["budget_mib"] * MiB
    runs = {r["attack"]: r for r in report["runs"]}
    assert sorted(runs) == list(ATTACKS)
    assert {r["server"] for r in report["runs"]} == {"embedded"}

    for attack, run in runs.items():
        assert "failure" not in run, (attack, run)
        _check_probe(run["baseline"]["probe"])
        _check_probe(run["during"]["probe"])
        healthy = run["healthy_group"]
        assert healthy["rebalanced"] is False, (attack, healthy)
        assert healthy["callbacks"] == [], (attack, healthy)
        assert all(growth == 0 for growth in healthy["rebalance_cnt_growth"]), (attack, healthy)
        assert finite(run["baseline"]["rss_bytes"]) > 0, run
        assert finite(run["during"]["rss_peak_bytes"]) > 0, run
        finite(run["during"]["rss_growth_bytes"])
        assert run["budget_bytes"] == config["budget_mib"] * MiB, run
        assert finite(run["during"]["seconds"]) >= config["attack_seconds"] * 0.9, run
        assert finite(run["attacker"]["attacker_cpu_s"]) >= 0, run

    # Each attack ran as described.
    a, b, c, d = (runs[k]["attacker"] for k in ATTACKS)
    assert a["create_topics"]["error"] == "NONE", a  # the embedded coordinator's cap, exactly
    assert a["partitions"] == config["wide_partitions"] == 10_000, a
    assert b["connections"] == config["partial_connections"], b
    assert b["written_bytes"] > config["budget_mib"] * MiB, b  # more than the server may hold
    assert c["connections"] == config["trickle_connections"] == 300, c
    assert isinstance(c["closed_by_server"], int), c
    assert d["answered"] == d["joins"] == config["joins"], d
    assert d["answers"]["MEMBER_ID_REQUIRED"] == config["max_pending_members"], d
    assert d["answers"]["GROUP_MAX_SIZE_REACHED"] == config["joins"] - config["max_pending_members"], d
    assert "first_join" in runs["D"], runs["D"]

    # The printed table: one row per attack with a figure in every column, and the goals stated.
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in done.stdout.splitlines()
        if re.match(r"^\| [ABCD]: ", line)
    ]
    assert [row[0][0] for row in rows] == list(ATTACKS), done.stdout
    for row in rows:
        assert row[1] == "embedded coordinator", row
        assert re.fullmatch(r"[\d,.]+ ms / [\d,.]+ ms", row[2]), row
        assert all(re.fullmatch(r"[\d,.]+ ms", cell) for cell in row[3:5]), row
        assert re.fullmatch(r"(\d+) / \1", row[5]), row
        assert row[6] == "no", row
        assert re.fullmatch(r"[+-][\d,.]+ MiB \(peak [\d,.]+ MiB\) / [\d,.]+ MiB", row[7]), row
    assert len(report["goals"]) == len(ATTACKS), report["goals"]
    assert all(
        "no rebalance: met" in line and "every probe heartbeat answered: met" in line
        for line in report["goals"]
    )
