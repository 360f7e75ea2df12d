"""Deterministic scenarios on a simulated clock: the high-availability assignor through rebalances."""

from __future__ import annotations

import math

import pytest
from coordinator_streams import (
    AssignmentConfig,
    ClientState,
    GroupSimulation,
    Task,
    TaskId,
    assign_tasks,
    assign_tasks_eager_sticky,
)

TASKS = [Task(TaskId(s, p)) for s in range(2) for p in range(18)]  # 36 stateful tasks
CONFIG = AssignmentConfig(
    acceptable_recovery_lag=100, max_warmup_replicas=2, probing_rebalance_interval_ms=60_000
)


def settled_group(
    config: AssignmentConfig = CONFIG, members: str = "abc", **kwargs: object
) -> GroupSimulation:
    sim = GroupSimulation(
        TASKS,
        assign_tasks,
        config,
        changelog_records=50_000,
        restore_rate=1_000,
        **kwargs,  # type: ignore[arg-type]
    )
    for name in members:
        sim.join(name)
    assert sim.run_until_settled(1_000)
    return sim


@pytest.mark.parametrize("early_probe", [True, False])
def test_scale_out_moves_no_active_to_a_member_that_is_not_caught_up(early_probe: bool) -> None:
    sim = settled_group(early_probe=early_probe)
    rebalances, handoffs = sim.rebalances, len(sim.cold_handoffs)
    downtime = sum(sim.downtime.values())
    sim.join("d")
    sim.step()  # the rebalance for the join
    first = sim.last
    assert first is not None and first.pending_moves == 9
    assert not first.members["d"].active and len(first.members["d"].warmup) == 2
    assert sim.run_until_settled(2_000)
    assert sim.balanced()
    assert [len(sim.last.members[m].active) for m in "abcd"] == [9, 9, 9, 9]  # type: ignore[union-attr]
    # Every task kept running and none was handed to a member that had to restore it.
    assert sum(sim.downtime.values()) == downtime
    assert sim.cold_handoffs[handoffs:] == []
    probing_rounds = sim.rebalances - rebalances - 1
    assert probing_rounds <= math.ceil(9 / CONFIG.max_warmup_replicas)
    assert any(e.kind == "caught-up" for e in sim.timeline) is early_probe


def test_eager_sticky_baseline_hands_cold_tasks_to_the_new_member() -> None:
    sim = GroupSimulation(
        TASKS, assign_tasks_eager_sticky, CONFIG, changelog_records=50_000, restore_rate=1_000
    )
    for name in "abc":
        sim.join(name)
    assert sim.run_until_settled(1_000)
    sim.join("d")
    assert sim.run_until_settled(1_000)
    assert len(sim.cold_handoffs) - 36 == 9 and all(h.avoidable for h in sim.cold_handoffs[36:])
    assert sum(sim.downtime.values()) - 36 * 50 == pytest.approx(9 * 50)


def test_scale_in_moves_the_leavers_tasks_to_caught_up_standbys() -> None:
    config = AssignmentConfig(
        acceptable_recovery_lag=100,
        max_warmup_replicas=2,
        num_standby_replicas=1,
        probing_rebalance_interval_ms=60_000,
    )
    sim = settled_group(config, members="abcd")
    before = {c.member_id: c for c in sim.client_states()}
    standby_holder = {t: m for m, c in before.items() for t in c.previous_standby}
    downtime = sum(sim.downtime.values())
    handoffs = len(sim.cold_handoffs)
    sim.leave("d")
    sim.step()
    owners = sim.last.active_owner()  # type: ignore[union-attr]
    assert set(owners) == {t.id for t in TASKS}
    # Each of d's tasks went to the member that kept its standby: nothing restored, no downtime.
    assert {t: owners[t] for t in before["d"].previous_active} == {
        t: standby_holder[t] for t in before["d"].previous_active
    }
    assert sum(sim.downtime.values()) == downtime
    assert sim.cold_handoffs[handoffs:] == []
    assert sim.run_until_settled(2_000) and sim.balanced()
    assert sorted(len(sim.last.members[m].active) for m in "abc") == [12, 12, 12]  # type: ignore[union-attr]


def test_crash_promotes_a_caught_up_standby_without_restoring() -> None:
    config = AssignmentConfig(
        acceptable_recovery_lag=0, num_standby_replicas=1, probing_rebalance_interval_ms=60_000
    )
    sim = settled_group(config, members="abc")
    states = {c.member_id: c for c in sim.client_states()}
    crashed = states["b"].previous_active
    standby_holder = {t: m for m, c in states.items() for t in c.previous_standby}
    assert set(crashed) <= set(standby_holder) and all(standby_holder[t] != "b" for t in crashed)
    downtime = sum(sim.downtime.values())
    sim.leave("b", crash=True)
    sim.step()
    owners = sim.last.active_owner()  # type: ignore[union-attr]
    assert {t: owners[t] for t in crashed} == {t: standby_holder[t] for t in crashed}
    assert all(sim.members[owners[t]].app.lag(t) == 0 for t in crashed)
    assert sum(sim.downtime.values()) == downtime  # promoted standbys ran in the same tick


def test_standbys_go_to_another_rack() -> None:
    clients = [ClientState(member_id=f"m{i}", process_id=f"p{i}", rack=f"r{i % 3}") for i in range(6)]
    tasks = [Task(TaskId(0, p)) for p in range(12)]
    result = assign_tasks(clients, tasks, AssignmentConfig(num_standby_replicas=2))
    rack = {c.member_id: c.rack for c in clients}
    owner = result.active_owner()
    for task in tasks:
        holders = [owner[task.id]] + [m for m, t in result.members.items() if task.id in t.standby]
        assert len(holders) == 3
        assert len({rack[m] for m in holders}) == 3, (task, holders)


def test_standbys_spread_over_client_tags() -> None:
    zones = ["z1", "z1", "z2", "z2"]
    clients = [
        ClientState(member_id=f"m{i}", client_tags={"zone": zone, "cluster": "k1"})
        for i, zone in enumerate(zones)
    ]
    tasks = [Task(TaskId(0, p)) for p in range(8)]
    result = assign_tasks(
        clients, tasks, AssignmentConfig(num_standby_replicas=1, rack_aware_assignment_tags=("zone",))
    )
    zone = {c.member_id: c.client_tags["zone"] for c in clients}
    owner = result.active_owner()
    for task in tasks:
        (standby,) = [m for m, t in result.members.items() if task.id in t.standby]
        assert zone[standby] != zone[owner[task.id]]


def test_no_caught_up_member_picks_the_most_caught_up() -> None:
    task = TaskId(0, 0)
    clients = [
        ClientState(member_id="a", lags={task: 5_000}),
        ClientState(member_id="b", lags={task: 900}),
        ClientState(member_id="c"),
    ]
    result = assign_tasks(clients, [Task(task)], AssignmentConfig(acceptable_recovery_lag=100))
    assert result.active_owner() == {task: "b"}


def test_capacity_weights_the_balance_and_stateless_tasks_fill_the_least_loaded() -> None:
    clients = [ClientState(member_id="big", capacity=3), ClientState(member_id="small", capacity=1)]
    tasks = [Task(TaskId(0, p)) for p in range(8)] + [Task(TaskId(1, p), stateful=False) for p in range(4)]
    result = assign_tasks(clients, tasks)
    stateful = {t.id for t in tasks if t.stateful}
    assert len(result.members["big"].active & stateful) == 6
    assert len(result.members["small"].active & stateful) == 2
    assert len(result.members["big"].active) + len(result.members["small"].active) == 12
    assert len(result.members["big"].active) == 9


def test_same_input_in_any_order_gives_the_same_assignment() -> None:
    clients = [ClientState(member_id=m, lags={TaskId(0, 1): 7}) for m in "cab"]
    tasks = [Task(TaskId(0, p)) for p in range(7)]
    config = AssignmentConfig(num_standby_replicas=1)
    assert assign_tasks(clients, tasks, config) == assign_tasks(clients[::-1], tasks[::-1], config)
