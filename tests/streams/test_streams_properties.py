"""Hypothesis invariants of the streams assignors over random groups, lags and previous assignments."""

from __future__ import annotations

from coordinator_streams import (
    AssignmentConfig,
    ClientState,
    Task,
    TaskAssignment,
    TaskId,
    assign_tasks,
    assign_tasks_eager_sticky,
)
from hypothesis import given, settings
from hypothesis import strategies as st


@st.composite
def groups(draw: st.DrawFn) -> tuple[list[ClientState], list[Task], AssignmentConfig]:
    n_tasks = draw(st.integers(0, 24))
    ids = [TaskId(i % 3, i) for i in range(n_tasks)]
    tasks = [Task(t, stateful=draw(st.booleans()) or draw(st.booleans())) for t in ids]
    n_members = draw(st.integers(1, 7))
    clients = []
    for i in range(n_members):
        held = draw(st.sets(st.sampled_from(ids), max_size=n_tasks) if ids else st.just(set()))
        active = draw(st.sets(st.sampled_from(sorted(held)), max_size=len(held)) if held else st.just(set()))
        lags = {t: draw(st.integers(0, 300)) for t in held}
        clients.append(
            ClientState(
                member_id=f"m{i}",
                process_id=draw(st.sampled_from(["p1", "p2", f"p{i}"])),
                capacity=draw(st.integers(1, 4)),
                rack=draw(st.sampled_from([None, "r1", "r2", "r3"])),
                lags=lags,
                previous_active=frozenset(active),
                previous_standby=frozenset(held - active),
            )
        )
    config = AssignmentConfig(
        acceptable_recovery_lag=draw(st.integers(0, 200)),
        max_warmup_replicas=draw(st.integers(1, 4)),
        num_standby_replicas=draw(st.integers(0, 3)),
    )
    return clients, tasks, config


def check_invariants(
    result: TaskAssignment, clients: list[ClientState], tasks: list[Task], config: AssignmentConfig
) -> None:
    assert set(result.members) == {c.member_id for c in clients}
    actives = sorted(t for m in result.members.values() for t in m.active)
    assert actives == sorted(t.id for t in tasks)  # every task active exactly once
    stateful = {t.id for t in tasks if t.stateful}
    total_warmups = 0
    for member in result.members.values():
        assert not (member.active & member.standby) and not (member.active & member.warmup)
        assert not (member.standby & member.warmup)
        assert member.standby <= stateful and member.warmup <= stateful
        total_warmups += len(member.warmup)
    assert total_warmups <= config.max_warmup_replicas
    for task in stateful:
        standbys = sum(task in m.standby for m in result.members.values())
        # Distinct members by construction (sets per member); as many as members allow.
        holders_without_standby = sum(task in m.active or task in m.warmup for m in result.members.values())
        assert standbys == min(config.num_standby_replicas, len(clients) - holders_without_standby)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_high_availability_invariants(group: tuple[list[ClientState], list[Task], AssignmentConfig]) -> None:
    clients, tasks, config = group
    result = assign_tasks(clients, tasks, config)
    check_invariants(result, clients, tasks, config)
    assert result.probing_rebalance_needed == (result.pending_moves > 0)
    # No stateful active on a member that is not caught up while another member is.
    acceptable = config.acceptable_recovery_lag
    for client in clients:
        for task in result.members[client.member_id].active:
            if not any(t.id == task and t.stateful for t in tasks):
                continue
            caught_up = [
                c.member_id
                for c in clients
                if task in c.previous_active or c.lags.get(task, acceptable + 1) <= acceptable
            ]
            if caught_up:
                assert client.member_id in caught_up, (task, client.member_id, caught_up)
    assert result == assign_tasks(clients[::-1], tasks[::-1], config)  # deterministic


@settings(max_examples=75, deadline=None)
@given(groups())
def test_eager_sticky_invariants(group: tuple[list[ClientState], list[Task], AssignmentConfig]) -> None:
    clients, tasks, config = group
    result = assign_tasks_eager_sticky(clients, tasks, config)
    check_invariants(result, clients, tasks, config)
    assert not result.probing_rebalance_needed
