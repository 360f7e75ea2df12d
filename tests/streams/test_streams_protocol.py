"""Payloads, plugin registration, input validation and the member's cooperative handover."""

from __future__ import annotations

import doctest
import importlib

import pytest
from coordinator_streams import (
    ASSIGNORS,
    AssignmentConfig,
    ClientState,
    MemberTasks,
    StreamsGroupMember,
    Task,
    TaskAssignmentError,
    TaskId,
    assign_tasks,
    decode_assignment,
    decode_subscriptions,
    describe_assignment,
    describe_subscription,
    encode_assignment,
    encode_subscription,
)

from coordinator_api import ConfigurationError, JoinedMember, PluginRegistry

T0, T1, T2 = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)
TASKS = [Task(T0), Task(T1), Task(T2, stateful=False)]


def test_subscription_round_trips_and_reads_in_words() -> None:
    client = ClientState(
        member_id="ignored",
        process_id="p1",
        capacity=2,
        rack="r1",
        client_tags={"zone": "z"},
        lags={T1: 120},
        previous_active=frozenset({T0}),
        previous_standby=frozenset({T1}),
    )
    data = encode_subscription(client, TASKS)
    clients, tasks, failed = decode_subscriptions(
        [JoinedMember("m1", None, data), JoinedMember("m2", None, b"garbage")]
    )
    assert clients == [ClientState(**{**client.__dict__, "member_id": "m1"})]
    assert tasks == sorted(TASKS, key=lambda t: (not t.stateful, t.id))
    assert set(failed) == {"m2"}
    assert describe_subscription("high-availability", data) == (
        "process p1, 2 threads, rack r1; ran 0_0; standby 0_1; lags 0_1=120"
    )


def test_assignment_round_trips_and_reads_in_words() -> None:
    tasks = MemberTasks(frozenset({T0}), frozenset({T1}), frozenset({T2}))
    data = encode_assignment(tasks, 1234)
    assert decode_assignment(data) == (tasks, 1234)
    assert decode_assignment(b"") == (MemberTasks(), -1)
    assert describe_assignment("x", data) == "active 0_0; standby 0_1; warmup 1_0; probing rebalance at 1234"


def test_plugin_registers_assignors_and_decoders_for_streams() -> None:
    registry = PluginRegistry.load()
    assert registry.assignors.names("streams") == sorted(ASSIGNORS)
    assert registry.assignors.get("streams", "high-availability") is assign_tasks
    data = encode_assignment(MemberTasks(frozenset({T0})))
    assert registry.payload_decoders.describe_assignment("streams", "high-availability", data) == "active 0_0"


@pytest.mark.parametrize(
    ("clients", "tasks", "message"),
    [
        ([ClientState(member_id="a"), ClientState(member_id="a")], TASKS, "appears twice"),
        ([ClientState(member_id="a", capacity=0)], TASKS, "capacity"),
        ([ClientState(member_id="a", lags={T0: -1})], TASKS, "lag of task 0_0"),
        ([ClientState(member_id="a")], [Task(T0), Task(T0)], "declared twice"),
    ],
)
def test_bad_input_raises_a_typed_error(clients: list[ClientState], tasks: list[Task], message: str) -> None:
    with pytest.raises(TaskAssignmentError, match=message):
        assign_tasks(clients, tasks)


def test_bad_config_raises_a_typed_error() -> None:
    with pytest.raises(TaskAssignmentError, match="max_warmup_replicas"):
        AssignmentConfig(max_warmup_replicas=0)
    with pytest.raises(ConfigurationError, match="unknown streams assignor"):
        StreamsGroupMember("g", "127.0.0.1:1", process_id="p", tasks=TASKS, assignor="nope")
    with pytest.raises(TaskAssignmentError, match="not a task id"):
        TaskId.parse("x")
    assert TaskId.parse("3_4") == TaskId(3, 4)


def test_leader_withholds_a_moving_task_until_its_owner_released_it() -> None:
    member = StreamsGroupMember(
        "g", "127.0.0.1:1", process_id="p", tasks=TASKS, config=AssignmentConfig(acceptable_recovery_lag=10)
    )
    a = ClientState(member_id="a", process_id="a", previous_active=frozenset({T0, T1}), lags={T0: 0, T1: 0})
    b = ClientState(member_id="b", process_id="b", lags={T1: 3})  # b caught up on T1: it should move
    members = [JoinedMember(c.member_id, None, encode_subscription(c, TASKS)) for c in (a, b)]
    out = {
        m: decode_assignment(data)
        for m, data in member.perform_assignment("a", "high-availability", members).items()
    }
    assert assign_tasks([a, b], TASKS, AssignmentConfig(acceptable_recovery_lag=10)).active_owner()[T1] == "b"
    assert T1 not in out["a"][0].active and T1 not in out["b"][0].active  # withheld this round
    # Next round a no longer claims it: b gets it.
    a2 = ClientState(member_id="a", process_id="a", previous_active=frozenset({T0}), lags={T0: 0, T1: 0})
    members = [JoinedMember(c.member_id, None, encode_subscription(c, TASKS)) for c in (a2, b)]
    out = {
        m: decode_assignment(data)
        for m, data in member.perform_assignment("a", "high-availability", members).items()
    }
    assert T1 in out["b"][0].active


@pytest.mark.parametrize("module", ["coordinator_streams._high_availability", "coordinator_streams._sticky"])
def test_worked_examples_in_docstrings_hold(module: str) -> None:
    results = doctest.testmod(importlib.import_module(module))
    assert results.attempted > 0 and results.failed == 0
