"""Smoke test of bench/bench_incremental.py: tiny groups, every server, end to end.

Four members on a topic of 20 partitions, one joins then one leaves, on the embedded
coordinator (incremental, and classic cooperative with and without held heartbeats), a real
one-broker Apache Kafka 4 cluster and librdkafka's mock, and four real librdkafka consumers on
each incremental server and, classic cooperative, on the embedded coordinator. Beyond "every
row has figures", it checks what each figure stands for: after every change and at the end
every partition has exactly one owner on every server, no partition ever had two, the moves are
at least the minimum the change forces, and the partition-seconds without an owner agree with
the time the change took and the most partitions ever without an owner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from bench_runs import finite, run_bench

VARIANTS = ("ours", "kafka", "mock", "classic-held", "classic")
MEMBERS = 4
PARTITIONS = 20  # --quick: 5 partitions per member
# A joiner of a group of 4 on 20 partitions must get 4 of them (20 // 5); the leaver (one of the
# 5 members then, each with 4) leaves 4 that must move.
LEAST_MOVED = {"scale-out": 4, "scale-in": 4}
# --quick's intervals and timeouts, for the runs that choose their own sizes.
SHORT = ("--heartbeat-interval-ms", "300", "--session-timeout-ms", "3000")
SHORT += ("--rebalance-timeout-ms", "10000", "--trial-timeout", "60")
RATIO = re.compile(r"^(\d[\d.e+-]*x \((better|worse|same)\)|1x \(both 0\)|not supported)$")


def _check_trial(trial: dict[str, Any]) -> None:
    scenario = trial["scenario"]
    assert trial["members_after"] == (MEMBERS + 1 if scenario == "scale-out" else MEMBERS), trial
    # Safety: never two owners; after the change, every partition has exactly one.
    assert trial["max_owners"] == 1, trial
    assert trial["overlap_partition_seconds"] == 0, trial
    assert trial["owned_exactly_once"] is True, trial
    assert trial["owners_per_partition"] == {"1": PARTITIONS}, trial
    assert trial["balance_max_minus_min"] <= 1, trial
    assert len(trial["epochs"]) == 1, trial
    assert trial["errors"] == {}, trial
    # The change moved at least what it must, and each moved partition was without an owner a
    # while. Not all of them at once: the incremental protocol hands them over one by one, so a
    # newcomer may own the first before the last is revoked (a run here had 3 of 4 unowned at most).
    assert trial["partitions_acquired"] >= LEAST_MOVED[scenario], trial
    assert 1 <= trial["max_unowned"] <= trial["partitions_acquired"], trial
    unowned = finite(trial["unowned_partition_seconds"])
    all_owned_ms = finite(trial["all_owned_ms"])
    stable_ms = finite(trial["stable_ms"])
    assert unowned > 0, trial
    assert 0 < all_owned_ms <= stable_ms < 60_000, trial
    # The integral cannot exceed the most partitions ever unowned times the time they could be.
    assert unowned <= trial["max_unowned"] * all_owned_ms / 1000 + 1e-6, trial
    before, after = trial["owned_before"], trial["owned_after"]
    for owned in (before, after):
        flat = [p for member in owned for p in member]
        assert sorted(flat) == list(range(PARTITIONS)), owned
    assert len(after) == trial["members_after"], trial


def _check_rate(kind: str, rate: dict[str, Any]) -> None:
    """A server's heartbeat rate: every run answered heartbeats, none with an error, and the
    group was whole after."""
    assert "failure" not in rate, (kind, rate)
    assert finite(rate["best_per_second"]) >= finite(rate["median_per_second"]) > 0, rate
    assert finite(rate["median_server_cpu_us_per_heartbeat"]) > 0, rate
    assert all(run["errors"] == {} and run["answered"] > 0 for run in rate["runs"]), rate
    assert rate["owned_exactly_once"] is True, rate


@pytest.mark.timeout(300)
def test_quick_benchmark_measures_every_server(tmp_path: Path) -> None:
    output = tmp_path / "incremental.json"
    done = run_bench("bench_incremental.py", "--quick", "--output", str(output), timeout_s=280)
    report = json.loads(output.read_text())
    assert report["config"]["quick"] is True

    # The mock announces ConsumerGroupHeartbeat v1 (librdkafka 2.x), so it is measured, not skipped.
    assert report["servers"]["mock"]["consumer_group_heartbeat_versions"][1] >= 1, report["servers"]
    groups = {g["variant"]: g for g in report["groups"]}
    assert set(groups) == set(VARIANTS)
    for variant, group in groups.items():
        assert "failure" not in group and "not_supported" not in group, (variant, group)
        assert [t["scenario"] for t in group["trials"]] == ["scale-out", "scale-in"], group
        for trial in group["trials"]:
            _check_trial(trial)
        final = group["final"]
        assert final["members"] == MEMBERS, (variant, final)
        assert final["owned_exactly_once"] is True, (variant, final)
        assert final["owners_per_partition"] == {"1": PARTITIONS}, (variant, final)

    # Heartbeats answered back to back by each server, without errors.
    rates = {r["server"]: r for r in report["heartbeat_rates"]}
    assert set(rates) == {"embedded", "mock", "kafka"}
    for kind, rate in rates.items():
        _check_rate(kind, rate)
    # The servers take turns run by run: every server's k-th run starts before any (k+1)-th.
    starts = [[run["started_s"] for run in rate["runs"]] for rate in rates.values()]
    assert all(len(s) == len(starts[0]) for s in starts), starts
    for k in range(len(starts[0]) - 1):
        assert max(s[k] for s in starts) < min(s[k + 1] for s in starts), starts

    # Real librdkafka consumers (group.protocol=consumer) on each server, and classic
    # cooperative ones on the embedded coordinator: both changes measured, never two owners,
    # every partition owned once at the end.
    real = {r["variant"]: r for r in report["real_clients"]}
    assert set(real) == {"ours", "mock", "kafka", "classic-held"}
    assert real["classic-held"]["server"] == "embedded"
    for kind, check in real.items():
        assert "failure" not in check, (kind, check)
        assert [t["scenario"] for t in check["trials"]] == ["scale-out", "scale-in"], check
        for trial in check["trials"]:
            assert trial["max_owners"] == 1 and trial["overlap_partition_seconds"] == 0, trial
            assert trial["owned_exactly_once"] is True, trial
            assert finite(trial["unowned_partition_seconds"]) > 0, trial
            assert 0 < finite(trial["all_owned_ms"]) < 60_000, trial
        assert check["final_owned_exactly_once"] is True, check

    # The printed table: a figure for every variant in every row, and a ratio to each peer.
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in done.stdout.splitlines()
        if re.match(r"^\| (partition-seconds|time until)", line)
    ]
    assert len(rows) == 3 * 2, done.stdout  # three metrics x two changes
    for row in rows:
        _, size, change, *cells = row
        assert size == str(MEMBERS) and change in LEAST_MOVED, row
        figures, ratios = cells[: len(VARIANTS)], cells[len(VARIANTS) :]
        assert len(ratios) == len(VARIANTS) - 1, row
        assert all(re.match(r"^[\d,.]+ (ms|partition-s)$", cell) for cell in figures), row
        assert all(RATIO.match(cell) for cell in ratios), row
    assert "ConsumerGroupHeartbeats answered per second" in done.stdout
    # The goals are stated, met or not, for both changes.
    assert len(report["goals"]) == 2 * (2 + 2), report["goals"]


@pytest.mark.timeout(120)
def test_a_second_join_an_interval_after_a_first_is_measured(tmp_path: Path) -> None:
    # --changes scale-out-2: a member joins a group of 4, and a second one an interval later,
    # while the first change is still reaching the members; only the second is measured, and
    # both leave again before the group's end.
    output = tmp_path / "second.json"
    done = run_bench(
        "bench_incremental.py",
        *("--members", "4", "--repeats", "1", *SHORT),
        *("--heartbeat-members", "0", "--real-clients", "0", "--variants", "ours,classic-held"),
        *("--changes", "scale-out-2", "--output", str(output)),
        timeout_s=110,
    )
    report = json.loads(output.read_text())
    for group in report["groups"]:
        (trial,) = group["trials"]
        assert trial["scenario"] == "scale-out-2", trial
        assert (trial["members_before"], trial["members_after"]) == (MEMBERS + 1, MEMBERS + 2), trial
        assert trial["max_owners"] == 1 and trial["overlap_partition_seconds"] == 0, trial
        assert trial["owners_per_partition"] == {"1": PARTITIONS}, trial
        assert trial["partitions_acquired"] >= PARTITIONS // (MEMBERS + 2), trial  # the newcomer's share
        assert finite(trial["unowned_partition_seconds"]) > 0, trial
        assert group["final"]["members"] == MEMBERS and group["final"]["owned_exactly_once"], group
    rows = [line for line in done.stdout.splitlines() if re.match(r"^\| (partition|time)", line)]
    changes = [row.split("|")[3].strip() for row in rows]
    assert changes == ["scale-out-2"] * 3, done.stdout


@pytest.mark.timeout(120)
def test_full_heartbeats_are_measured_on_the_embedded_coordinator_and_the_mock(tmp_path: Path) -> None:
    # --heartbeat-shape full: every heartbeat of the rate restates the member's subscription,
    # rebalance timeout and owned partitions, as this project's members send them; both servers
    # answer them all without an error.
    output = tmp_path / "full.json"
    done = run_bench(
        "bench_incremental.py",
        *("--members", "4", "--variants", "ours", "--repeats", "0", *SHORT),
        *("--heartbeat-members", "4", "--heartbeat-seconds", "1", "--heartbeat-repeats", "1"),
        *("--heartbeat-servers", "embedded,mock", "--real-clients", "0", "--heartbeat-shape", "full"),
        *("--output", str(output)),
        timeout_s=110,
    )
    report = json.loads(output.read_text())
    assert report["heartbeat_shape"] == "full"
    rates = {r["server"]: r for r in report["heartbeat_rates"]}
    assert set(rates) == {"embedded", "mock"}
    for kind, rate in rates.items():
        _check_rate(kind, rate)
    assert "| full ConsumerGroupHeartbeats answered per second" in done.stdout, done.stdout
