"""Streams groups on the incremental protocol: the server-side assignor's invariants (Hypothesis)
and StreamsGroupMember with ``group_protocol="incremental"`` on a real embedded coordinator, and
falling back to the classic protocol on the suite's Apache Kafka cluster.

Members run in this process over real TCP connections on 127.0.0.1; the test thread polls them.
Every callback goes through a :class:`Ledger`, which checks at each one that no task is active on
two members (a task is given only after its previous owner returned from ``on_tasks_revoked``)
and keeps a timeline for the messages.
"""

from __future__ import annotations

import dataclasses
import doctest
import logging
import os
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from coordinator_streams import (
    SERVER_ASSIGNORS,
    AssignmentConfig,
    MemberTasks,
    StreamsGroupMember,
    Task,
    TaskId,
    assign_tasks_sticky,
    encode_member_metadata,
    standby_group,
)
from coordinator_streams import _incremental as incremental
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer
from kafka_tools import table

from coordinator_api import (
    AssignmentSpec,
    ConfigurationError,
    CoordinatorConfig,
    EmbeddedCoordinator,
    GroupJoinError,
    GroupSubscription,
    KafkaStreamsGroup,
    PluginRegistry,
)
from coordinator_api._inspect import describe_group, owned_partitions
from coordinator_api._membership._group_heartbeat import heartbeat_answered, heartbeat_request
from coordinator_api._membership._incremental import (
    GroupHeartbeatAnswered,
    IncrementalSettings,
    SendGroupHeartbeat,
)
from coordinator_api.server.schemas import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from coordinator_api.testing import KafkaCluster, kafka_classpath, run_kafka_tool
from coordinator_api.testing._jvm import compiled
from coordinator_api.testing._kafka_cluster import TOOL_JVM_OPTIONS

Resource = tuple[str, int]

# --- the server-side assignor ------------------------------------------------------------------


def spec(
    member_id: str,
    capacity: int = 1,
    current: Sequence[Resource] = (),
    topics: Sequence[str] = (),
    metadata: bytes | None = None,
) -> AssignmentSpec:
    return AssignmentSpec(
        member_id=member_id,
        instance_id=None,
        rack=None,
        topics=frozenset(topics),
        current=frozenset(current),
        metadata=encode_member_metadata(f"process-{member_id}", capacity) if metadata is None else metadata,
    )


counts_st = st.dictionaries(st.sampled_from(["0", "1", "2", "3"]), st.integers(1, 12), min_size=1)


@st.composite
def groups(draw: st.DrawFn, *, everyone_declares_all: bool) -> tuple[list[AssignmentSpec], dict[str, int]]:
    """Members with capacities and current targets (disjoint here; overlapping, stale or
    out-of-range claims in :func:`messy_groups`)."""
    counts = draw(counts_st)
    resources = [(g, p) for g, c in sorted(counts.items()) for p in range(c)]
    n = draw(st.integers(1, 7))
    owners = draw(st.lists(st.integers(-1, n - 1), min_size=len(resources), max_size=len(resources)))
    members = []
    for i in range(n):
        topics = (
            sorted(counts)
            if everyone_declares_all
            else draw(st.lists(st.sampled_from(["0", "1", "2", "3", "x"]), unique=True))
        )
        current = [r for r, owner in zip(resources, owners) if owner == i]
        members.append(spec(f"m{i}", draw(st.integers(1, 4)), current, topics))
    return members, counts


@st.composite
def messy_groups(draw: st.DrawFn) -> tuple[list[AssignmentSpec], dict[str, int]]:
    counts = draw(counts_st)
    claims = st.tuples(st.sampled_from(["0", "1", "2", "3", "x"]), st.integers(0, 14))
    members = []
    for i in range(draw(st.integers(0, 7))):
        topics = draw(st.lists(st.sampled_from(["0", "1", "2", "3", "x"]), unique=True))
        metadata = draw(st.sampled_from([None, b"", b"not a payload"]))
        members.append(
            spec(f"m{i}", draw(st.integers(1, 4)), draw(st.lists(claims, max_size=20)), topics, metadata)
        )
    return members, counts


def as_sets(result: Mapping[str, Sequence[Resource]]) -> dict[str, frozenset[Resource]]:
    return {member: frozenset(tasks) for member, tasks in result.items()}


@settings(max_examples=300, deadline=None)
@given(messy_groups())
def test_every_task_goes_to_exactly_one_member_that_declares_it(
    group: tuple[list[AssignmentSpec], dict[str, int]],
) -> None:
    members, counts = group
    result = assign_tasks_sticky(members, counts)
    assert set(result) == {m.member_id for m in members}
    given_out = [r for tasks in result.values() for r in tasks]
    assert len(given_out) == len(set(given_out))  # nobody shares a task
    declared = {m.member_id: m.topics for m in members}
    for member, tasks in result.items():
        for name, index in tasks:
            assert name in declared[member] and 0 <= index < counts[name]
    runnable = {(g, p) for g, c in counts.items() for p in range(c) if any(g in m.topics for m in members)}
    assert set(given_out) == runnable  # and every task someone declares is given


@settings(max_examples=300, deadline=None)
@given(groups(everyone_declares_all=True), st.randoms(use_true_random=False))
def test_balanced_by_capacity_and_deterministic(
    group: tuple[list[AssignmentSpec], dict[str, int]], rnd: random.Random
) -> None:
    members, counts = group
    result = assign_tasks_sticky(members, counts)
    total, threads = (
        sum(counts.values()),
        sum(incremental.decode_member_metadata(m.metadata).capacity for m in members),
    )
    for m in members:
        capacity = incremental.decode_member_metadata(m.metadata).capacity
        # Within one task of the exact share: |n - total * capacity / threads| < 1.
        assert abs(len(result[m.member_id]) * threads - total * capacity) < threads
    shuffled = list(members)
    rnd.shuffle(shuffled)
    assert as_sets(assign_tasks_sticky(shuffled, counts)) == as_sets(result)


@settings(max_examples=300, deadline=None)
@given(groups(everyone_declares_all=True))
def test_moves_no_more_tasks_than_balance_needs(group: tuple[list[AssignmentSpec], dict[str, int]]) -> None:
    """From any current assignment, the tasks taken from their holders are exactly what any
    balanced assignment must take: each member's excess over its rounded-down share, less one
    for each member with a fractional share that may keep one more (as many as there are
    leftover tasks)."""
    members, counts = group
    result = as_sets(assign_tasks_sticky(members, counts))
    total = sum(counts.values())
    capacity = {m.member_id: incremental.decode_member_metadata(m.metadata).capacity for m in members}
    threads = sum(capacity.values())
    floor = {m: total * c // threads for m, c in capacity.items()}
    leftover = total - sum(floor.values())
    held = {m.member_id: len(m.current) for m in members}
    excess = sum(max(0, held[m] - floor[m]) for m in held)
    may_keep_one = sum(1 for m in held if held[m] > floor[m] and total * capacity[m] % threads)
    moved = sum(len(m.current - result[m.member_id]) for m in members)
    assert moved == excess - min(leftover, may_keep_one)
    # A settled group stays as it is.
    again = [
        spec(m.member_id, capacity[m.member_id], sorted(result[m.member_id]), sorted(counts)) for m in members
    ]
    assert as_sets(assign_tasks_sticky(again, counts)) == result


@settings(max_examples=200, deadline=None)
@given(counts_st, st.integers(1, 6), st.data())
def test_a_member_joining_or_leaving_moves_only_its_own_share(
    counts: dict[str, int], n: int, data: st.DataObject
) -> None:
    names = sorted(counts)
    total = sum(counts.values())
    settled = assign_tasks_sticky([spec(f"m{i}", 1, (), names) for i in range(n)], counts)
    members = [spec(m, 1, tasks, names) for m, tasks in settled.items()]
    # Joining: the newcomer takes its rounded-down share, all of it from the others; nobody else
    # gains anything.
    joined = as_sets(assign_tasks_sticky([*members, spec("new", 1, (), names)], counts))
    assert len(joined["new"]) == total // (n + 1)
    for m in members:
        assert joined[m.member_id] <= m.current
    assert sum(len(m.current - joined[m.member_id]) for m in members) == len(joined["new"])
    # Leaving: only the leaver's tasks move; every other member keeps all of its own.
    leaver = data.draw(st.sampled_from(members))
    rest = [m for m in members if m is not leaver]
    after = as_sets(assign_tasks_sticky(rest, counts))
    for m in rest:
        assert m.current <= after[m.member_id]


@st.composite
def groups_with_standbys(draw: st.DrawFn) -> tuple[list[AssignmentSpec], dict[str, int], dict[str, str]]:
    """Members, some sharing a process, declaring active groups and one or two replicas of the
    stateful subtopologies' standby groups (not always all of them), claiming any resource."""
    counts = draw(counts_st)
    stateful = draw(st.lists(st.sampled_from(sorted(counts)), unique=True))
    replicas = draw(st.integers(1, 2))
    counts |= {standby_group(g, r): counts[g] for g in stateful for r in range(1, replicas + 1)}
    names = sorted(counts)
    claims = st.tuples(st.sampled_from(names), st.integers(0, 12))
    n = draw(st.integers(1, 6))
    process = {f"m{i}": f"p{draw(st.integers(0, n - 1))}" for i in range(n)}
    members = []
    for member_id in sorted(process):
        declared = draw(st.one_of(st.just(names), st.lists(st.sampled_from(names), unique=True)))
        metadata = encode_member_metadata(process[member_id], draw(st.integers(1, 3)))
        current = draw(st.lists(claims, max_size=12))
        member = spec(member_id, current=current, topics=declared, metadata=metadata)
        rack = draw(st.sampled_from([None, "r0", "r1", "r2"]))
        members.append(dataclasses.replace(member, rack=rack))
    return members, counts, process


@settings(max_examples=300, deadline=None)
@given(groups_with_standbys(), st.randoms(use_true_random=False))
def test_standbys_go_to_processes_that_hold_their_task_in_no_other_form(
    group: tuple[list[AssignmentSpec], dict[str, int], dict[str, str]], rnd: random.Random
) -> None:
    members, counts, process = group
    result = assign_tasks_sticky(members, counts)
    given_out = [r for tasks in result.values() for r in tasks]
    assert len(given_out) == len(set(given_out))  # one owner per resource, standbys included
    declared = {m.member_id: m.topics for m in members}
    holders: dict[tuple[str, int], list[str]] = {}  # task -> the processes holding it, any form
    for member, resources in result.items():
        for name, index in resources:
            assert name in declared[member] and 0 <= index < counts[name]
            task = (KafkaStreamsGroup.standby_of(name) or name, index)
            holders.setdefault(task, []).append(process[member])
    for task, processes in holders.items():
        assert len(processes) == len(set(processes)), (task, processes)  # never twice on one process
    for name, count in counts.items():  # a replica goes unplaced only where no process may take it
        subtopology = KafkaStreamsGroup.standby_of(name)
        for index in range(count):
            if subtopology is not None and (name, index) not in given_out:
                taken = holders.get((subtopology, index), [])
                assert all(process[m.member_id] in taken for m in members if name in m.topics)
    # The active tasks are those the assignor gives without standbys, as long as nobody kept a
    # standby (a member that kept one is first in line for its task).
    if not any(KafkaStreamsGroup.standby_of(name) for m in members for name, _ in m.current):
        actives = {n: c for n, c in counts.items() if KafkaStreamsGroup.standby_of(n) is None}
        alone = as_sets(assign_tasks_sticky(members, actives))
        assert {m: {r for r in rs if r[0] in actives} for m, rs in as_sets(result).items()} == alone
    shuffled = list(members)
    rnd.shuffle(shuffled)
    assert as_sets(assign_tasks_sticky(shuffled, counts)) == as_sets(result)
    if any(m.topics != frozenset(counts) for m in members):
        return  # (members declaring different groups: their active tasks may still move)
    # A settled group stays as it is.
    again = [
        AssignmentSpec(
            member_id=m.member_id, instance_id=None, rack=None, topics=m.topics,
            current=frozenset(result[m.member_id]), metadata=m.metadata,
        )
        for m in members
    ]  # fmt: skip
    assert as_sets(assign_tasks_sticky(again, counts)) == as_sets(result)


def test_standbys_go_to_other_racks() -> None:
    """Three racks of two members each, one standby of 12 tasks: no task's standby is in its
    active's rack (where a member of another rack has room, it goes there)."""
    counts = {"0": 12, standby_group(0): 12}
    members = [
        dataclasses.replace(spec(f"{rack}{i}", topics=sorted(counts)), rack=rack)
        for rack in ("x", "y", "z")
        for i in range(2)
    ]
    result = assign_tasks_sticky(members, counts)
    rack_of = {m.member_id: m.rack for m in members}
    for partition in range(12):
        racks = [rack_of[m] for m, resources in result.items() for _, p in resources if p == partition]
        assert len(racks) == len(set(racks)) == 2, (partition, result)


def test_a_task_whose_member_left_goes_to_the_member_that_kept_its_standby() -> None:
    counts = {"0": 4, standby_group(0): 4}
    names = sorted(counts)
    settled = assign_tasks_sticky([spec(m, topics=names) for m in ("a", "b", "c")], counts)
    rest = [spec(m, current=settled[m], topics=names) for m in ("b", "c")]
    after = assign_tasks_sticky(rest, counts)
    for name, index in settled["a"]:
        if name == "0":  # a's active task: now the active task of whoever kept its standby
            (kept_by,) = [m for m in ("b", "c") if (standby_group(0), index) in settled[m]]
            assert ("0", index) in after[kept_by], (settled, after)


def test_the_plugin_registers_the_server_assignor_and_its_examples_hold() -> None:
    assert PluginRegistry.load().server_assignors.of("streams") == SERVER_ASSIGNORS
    assert SERVER_ASSIGNORS["sticky"] is assign_tasks_sticky
    results = doctest.testmod(incremental)
    assert results.attempted > 0 and results.failed == 0


def test_incremental_settings_are_checked_when_the_member_is_made() -> None:
    gap = [Task(TaskId(0, 0)), Task(TaskId(0, 2))]
    with pytest.raises(ConfigurationError, match="0_1 is missing"):
        StreamsGroupMember("g", "127.0.0.1:1", process_id="p", tasks=gap, group_protocol="incremental")
    StreamsGroupMember("g", "127.0.0.1:1", process_id="p", tasks=gap).close()  # classic: fine
    with pytest.raises(ConfigurationError, match="server_assignor is for group_protocol='incremental'"):
        StreamsGroupMember("g", "127.0.0.1:1", process_id="p", tasks=gap, server_assignor="sticky")
    incremental: dict[str, Any] = {"process_id": "p", "tasks": TASKS, "group_protocol": "incremental"}
    with pytest.raises(ConfigurationError, match="source_topics is for group_protocol='incremental'"):
        StreamsGroupMember("g", "127.0.0.1:1", process_id="p", tasks=TASKS, source_topics=SOURCE_TOPICS)
    with pytest.raises(ConfigurationError, match=r"subtopologies \[0, 1\], the tasks \[0, 1, 2\]"):
        StreamsGroupMember("g", "127.0.0.1:1", **incremental, source_topics={0: ["a"], 1: ["b"]})
    with pytest.raises(ConfigurationError, match="lists of topics"):
        StreamsGroupMember("g", "127.0.0.1:1", **incremental, source_topics={**SOURCE_TOPICS, 2: "orders"})
    with pytest.raises(ConfigurationError, match="subtopology '2': source topics must be non-empty"):
        StreamsGroupMember("g", "127.0.0.1:1", **incremental, source_topics={**SOURCE_TOPICS, 2: []})
    StreamsGroupMember("g", "127.0.0.1:1", **incremental, source_topics=SOURCE_TOPICS).close()
    with pytest.raises(ConfigurationError, match="changelog_topics is for streams groups on Kafka"):
        StreamsGroupMember("g", "127.0.0.1:1", **incremental, changelog_topics=CHANGELOG_TOPICS)
    with pytest.raises(ConfigurationError, match=r"subtopologies \[2\], whose tasks are stateless"):
        StreamsGroupMember(
            "g", "127.0.0.1:1", **incremental, source_topics=SOURCE_TOPICS, changelog_topics={2: ["c"]}
        )
    with pytest.raises(ConfigurationError, match="changelog_topics maps subtopologies to lists"):
        StreamsGroupMember(
            "g", "127.0.0.1:1", **incremental, source_topics=SOURCE_TOPICS, changelog_topics={0: "c"}
        )
    with pytest.raises(ConfigurationError, match="subtopology '3' has changelog topics but no source"):
        KafkaStreamsGroup(source_topics={"0": ("a",)}, process_id="p", changelog_topics={"3": ("c",)})
    with pytest.raises(ConfigurationError, match="'0/standby2': an id with '/standby' names standby"):
        KafkaStreamsGroup(source_topics={"0/standby2": ("a",)}, process_id="p")
    StreamsGroupMember(
        "g", "127.0.0.1:1", **incremental, source_topics=SOURCE_TOPICS, changelog_topics=CHANGELOG_TOPICS
    ).close()


def test_streams_group_heartbeats_declare_changelogs_and_carry_standby_tasks() -> None:
    """On the wire to Kafka's brokers: the join's topology names each stateful subtopology's
    changelog topics as Kafka Streams declares a key-value store's; later heartbeats list the
    owned standby tasks apart from the active ones; an answer's standby tasks become resources
    of the ``/standby`` groups (warmups are not taken), and the three lists come together."""
    streams = KafkaStreamsGroup(
        source_topics={"0": ("orders",), "1": ("payments",)},
        process_id="p",
        changelog_topics={"0": ("app-counts-changelog",)},
    )
    # (A standby group, as a member with num_standby_replicas declares for GroupHeartbeat: on
    # Kafka the group's config decides.)
    subscription = GroupSubscription(resources={"0": 2, "1": 2, "0/standby": 2}, kafka_streams=streams)
    settings = IncrementalSettings(
        group_id="app", member_id="m", group_instance_id=None, session_timeout_ms=45_000,
        heartbeat_interval_ms=5_000, rebalance_timeout_ms=60_000, max_poll_interval_ms=300_000,
        retry_backoff_ms=100, lease_margin_ms=1_000,
    )  # fmt: skip
    owned = frozenset({(b"0", 1), (b"1", 0), (b"0/standby", 0), (b"1/standby", 1)})

    def sent(epoch: int) -> Any:
        request = heartbeat_request(
            settings, subscription, SendGroupHeartbeat("m", epoch, owned), "streams", kafka_streams=True
        )
        return StreamsGroupHeartbeatRequest.decode(request.encode(version=0), version=0)

    join = sent(0)
    zero, one = join.topology.subtopologies
    (changelog,) = zero.state_changelog_topics
    # Partitions and replication factor the broker's (0: as many as the tasks; -1: its default).
    assert changelog.name == "app-counts-changelog"
    assert (changelog.partitions, changelog.replication_factor) == (0, -1)
    assert [(c.key, c.value) for c in changelog.topic_configs] == [
        ("cleanup.policy", "compact"),
        ("message.timestamp.type", "CreateTime"),
    ]
    assert one.state_changelog_topics == []
    assert (join.active_tasks, join.standby_tasks, join.warmup_tasks) == ([], [], [])  # as Kafka requires

    later = sent(3)
    assert later.topology is None
    assert sorted((t.subtopology_id, t.partitions) for t in later.active_tasks) == [("0", [1]), ("1", [0])]
    assert sorted((t.subtopology_id, t.partitions) for t in later.standby_tasks) == [("0", [0]), ("1", [1])]
    assert later.warmup_tasks == []

    def answer(active: Any, standby: Any, warmup: Any) -> GroupHeartbeatAnswered:
        response = StreamsGroupHeartbeatResponse(
            error_code=0, member_id="m", member_epoch=4, heartbeat_interval_ms=5_000,
            active_tasks=active, standby_tasks=standby, warmup_tasks=warmup,
        )  # fmt: skip
        return heartbeat_answered(7, response)

    ids = StreamsGroupHeartbeatResponse.TaskIds
    got = answer(
        [ids(subtopology_id="0", partitions=[0, 1])],
        [ids(subtopology_id="1", partitions=[1])],
        [ids(subtopology_id="1", partitions=[0])],
    )
    assert got.assignment == {(b"0", 0), (b"0", 1), (b"1/standby", 1)}
    assert answer(None, None, None).assignment is None  # unchanged


# --- members on a real coordinator ------------------------------------------------------------

# Two stateful subtopologies and a stateless one: 14 tasks.
TASKS = [Task(TaskId(s, p)) for s in (0, 1) for p in range(6)] + [Task(TaskId(2, p), False) for p in range(2)]
ALL = frozenset(t.id for t in TASKS)
# The topics each subtopology reads, as a streams group of KIP-1071 on Kafka takes them, and the
# changelog topics of the stateful ones' stores.
SOURCE_TOPICS = {s: [f"streams-source-{s}"] for s in (0, 1, 2)}
CHANGELOG_TOPICS = {s: [f"streams-store-{s}-changelog"] for s in (0, 1)}
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=6000,
    consumer_group_heartbeat_interval_ms=300,
)
# The member's session is the coordinator's (its lease is counted from it).
OPTIONS: dict[str, Any] = {
    "group_protocol": "incremental",
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "rebalance_timeout_ms": 5000,
}


class Ledger:
    """Every member's callbacks, with times; at each one it checks that the member gives up only
    what it runs and is given only what no other member runs, and that none of its tasks is
    active and standby at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: dict[str, frozenset[TaskId]] = {}
        self.standby: dict[str, frozenset[TaskId]] = {}  # the standby tasks it keeps now
        self.calls: list[tuple[float, str, str, frozenset[TaskId]]] = []
        self.problems: list[str] = []
        self.start = time.monotonic()
        self.capacity: dict[StreamsGroupMember, int] = {}

    def _note(self, name: str, kind: str, tasks: frozenset[TaskId]) -> None:
        self.calls.append((time.monotonic() - self.start, name, kind, tasks))

    def assigned(self, name: str, tasks: MemberTasks) -> None:
        with self.lock:
            mine = self.running.get(name, frozenset())
            new = tasks.active - mine
            if new:  # (after a revocation it is called with what the member keeps)
                self._note(name, "assigned", new)
            if not mine <= tasks.active:
                self.problems.append(f"{name}: {words(mine - tasks.active)} gone without a revocation")
            if tasks.warmup:
                self.problems.append(f"{name}: warmups in incremental mode: {tasks}")
            if tasks.active & tasks.standby:  # a standby becomes active once it is gone
                self.problems.append(f"{name}: {words(tasks.active & tasks.standby)} active and standby")
            for other, theirs in self.running.items():
                if other != name and new & theirs:
                    self.problems.append(f"{name} given {words(new & theirs)} while {other} runs them")
            self.running[name] = tasks.active
            if tasks.standby != self.standby.get(name, frozenset()):
                self._note(name, "standby", tasks.standby)
                self.standby[name] = tasks.standby

    def released(self, name: str, kind: str, tasks: frozenset[TaskId]) -> None:
        with self.lock:
            self._note(name, kind, tasks)
            mine = self.running.get(name, frozenset())
            if not tasks <= mine:
                self.problems.append(f"{name}: {kind} {words(tasks - mine)} it did not run")
            self.running[name] = mine - tasks

    def since(self, t: float, name: str, kind: str) -> frozenset[TaskId]:
        """The tasks ``name`` was given (``assigned``: the new ones) or gave up after ``t``."""
        with self.lock:
            return frozenset().union(
                *(ts for at, who, k, ts in self.calls if at >= t and who == name and k == kind)
            )

    def now(self) -> float:
        return time.monotonic() - self.start

    def timeline(self, since: float = 0.0) -> str:
        with self.lock:
            return "\n".join(
                f"{at - since:8.3f} s  {who}  {kind} {words(ts)}"
                for at, who, kind, ts in self.calls
                if at >= since
            )

    def member(
        self, bootstrap: str, name: str, *, capacity: int = 1, group: str = "orders", **options: Any
    ) -> StreamsGroupMember:
        member = StreamsGroupMember(
            group,
            bootstrap,
            process_id=name,
            tasks=TASKS,
            capacity=capacity,
            client_id=name,
            on_tasks_assigned=lambda tasks: self.assigned(name, tasks),
            on_tasks_revoked=lambda tasks: self.released(name, "revoked", tasks),
            on_tasks_lost=lambda tasks: self.released(name, "lost", tasks),
            **{**OPTIONS, **options},
        )
        self.capacity[member] = capacity
        return member


def words(tasks: frozenset[TaskId]) -> str:
    return " ".join(map(str, sorted(tasks))) or "-"


def settle(
    members: Sequence[StreamsGroupMember], done: Callable[[], bool], ledger: Ledger, timeout: float = 15
) -> None:
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < timeout, (
            f"not settled: {[words(m.tasks().active) for m in members]}\n{ledger.timeline()}"
        )
        for member in members:
            member.poll(0.02)
    assert not ledger.problems, f"{ledger.problems}\n{ledger.timeline()}"


def balanced(members: Sequence[StreamsGroupMember], ledger: Ledger) -> Callable[[], bool]:
    """Together the members run each task once, each within one task of its share by capacity
    (``|n - 14 * capacity / threads| < 1``)."""
    capacity = [ledger.capacity[m] for m in members]
    threads = sum(capacity)

    def done() -> bool:
        runs = [m.tasks().active for m in members]
        shared = sum(map(len, runs)) == len(ALL) == len(frozenset().union(*runs))
        return shared and all(abs(len(r) * threads - len(ALL) * c) < threads for r, c in zip(runs, capacity))

    return done


@pytest.fixture
def embedded() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(config=CONFIG) as running:
        yield running


@pytest.fixture
def ledger() -> Ledger:
    return Ledger()


@pytest.fixture
def three(embedded: EmbeddedCoordinator, ledger: Ledger) -> Iterator[dict[str, StreamsGroupMember]]:
    """a and b (one thread each) and c (two threads), settled: 3 or 4, 4 or 3, and 7 of the 14
    tasks (which of a and b rounds 3.5 up depends on who joined when)."""
    members = {
        "a": ledger.member(embedded.bootstrap_servers, "a"),
        "b": ledger.member(embedded.bootstrap_servers, "b"),
        # Source topics change nothing where the coordinator serves GroupHeartbeat.
        "c": ledger.member(embedded.bootstrap_servers, "c", capacity=2, source_topics=SOURCE_TOPICS),
    }
    try:
        settle(list(members.values()), balanced(list(members.values()), ledger), ledger)
        assert len(members["c"].tasks().active) == 7
        assert [m.group_protocol for m in members.values()] == ["incremental"] * 3
        assert all(m.generation().generation_id > 0 for m in members.values())  # the member epoch
        yield members
    finally:
        for member in members.values():
            member.close()


def test_members_settle_balanced_by_capacity(three: dict[str, StreamsGroupMember]) -> None:
    assert frozenset().union(*(m.tasks().active for m in three.values())) == ALL
    assert sorted(len(m.tasks().active) for m in three.values()) == [3, 4, 7]
    # Each member runs tasks of several subtopologies, not one block.
    assert all(len({t.subtopology for t in m.tasks().active}) >= 2 for m in three.values())


def test_a_newcomer_takes_tasks_while_the_others_keep_running_theirs(
    embedded: EmbeddedCoordinator, three: dict[str, StreamsGroupMember], ledger: Ledger
) -> None:
    before = {name: m.tasks().active for name, m in three.items()}
    t_join = ledger.now()
    d = ledger.member(embedded.bootstrap_servers, "d", capacity=2)
    try:
        members = [*three.values(), d]
        settle(members, balanced(members, ledger), ledger)
        # 14 tasks over 6 threads: 2.33 (a, b) and 4.67 (c, d); the leftover tasks stay with c
        # and with whichever of a and b holds more, so d takes 4 and c gives up 2.
        assert len(d.tasks().active) == 4 and len(three["c"].tasks().active) == 5
        for name, member in three.items():
            kept = member.tasks().active
            assert kept <= before[name], ledger.timeline()  # gained nothing
            # Revoked exactly what moved and not one task it keeps: no group-wide stop.
            assert ledger.since(t_join, name, "revoked") == before[name] - kept, ledger.timeline()
            assert not ledger.since(t_join, name, "lost")
        moved = frozenset().union(*(ledger.since(t_join, name, "revoked") for name in three))
        assert d.tasks().active == moved == ledger.since(t_join, "d", "assigned")
        assert not ledger.since(t_join, "d", "revoked")
        runs = {**three, "d": d}
        before_lines = "\n".join(f"{name} ran {words(before[name])}" for name in three)
        after_lines = "\n".join(f"{name} runs {words(m.tasks().active)}" for name, m in runs.items())
        # docs/streams.md shows one:
        print(f"\n{before_lines}\nd joins at 0 s:\n{ledger.timeline(t_join)}\n{after_lines}")
    finally:
        d.close()


def test_a_member_closing_hands_its_tasks_to_the_others(
    three: dict[str, StreamsGroupMember], ledger: Ledger
) -> None:
    before = {name: m.tasks().active for name, m in three.items()}
    t_close = ledger.now()
    three["a"].close()
    assert ledger.since(t_close, "a", "revoked") == before["a"]  # stopped before it left
    rest = {name: three[name] for name in ("b", "c")}
    settle(list(rest.values()), balanced(list(rest.values()), ledger), ledger)  # 4.67 and 9.33
    for name, member in rest.items():
        assert before[name] <= member.tasks().active  # kept all of its own
        assert not ledger.since(t_close, name, "revoked")
    assert frozenset().union(*(ledger.since(t_close, name, "assigned") for name in rest)) == before["a"]


def test_incremental_mode_has_no_lags_warmups_or_probing_rebalances(
    embedded: EmbeddedCoordinator, ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def lags() -> dict[TaskId, int]:
        asked.append("lags")
        return {}

    config = AssignmentConfig(max_warmup_replicas=4, probing_rebalance_interval_ms=1)
    members = [
        ledger.member(
            embedded.bootstrap_servers, name, config=config, task_lags=lags, warmup_check_interval_ms=1
        )
        for name in ("a", "b")
    ]
    for member in members:
        monkeypatch.setattr(member, "request_rejoin", asked.append)
    try:
        settle(members, balanced(members, ledger), ledger)
        end = time.monotonic() + 0.3  # a probing rebalance or a warmup check would have come by now
        while time.monotonic() < end:
            for member in members:
                member.poll(0.02)
        assert asked == []
        assert all(m.tasks() == MemberTasks(m.tasks().active) for m in members)
    finally:
        for member in members:
            member.close()


STATEFUL = frozenset(t.id for t in TASKS if t.stateful)


def standbys_placed(
    members: Sequence[StreamsGroupMember], ledger: Ledger, most: int = len(STATEFUL)
) -> Callable[[], bool]:
    """Balanced, and every stateful task has one standby, on another member than its active;
    no member keeps more than ``most``."""
    is_balanced = balanced(members, ledger)

    def done() -> bool:
        # (The ledger checks that none is active on the member too.)
        standbys = sorted(t for m in members for t in m.tasks().standby)
        kept = max(len(m.tasks().standby) for m in members)
        return is_balanced() and standbys == sorted(STATEFUL) and kept <= most

    return done


def assert_standbys_became_active(
    ledger: Ledger, name: str, since: float, standby: frozenset[TaskId]
) -> None:
    """``name`` ran each of ``standby`` after ``since``, once it had stopped keeping it as a
    standby (never both at once)."""
    assert standby <= ledger.since(since, name, "assigned"), ledger.timeline(since)
    for task in standby:
        steps = [(k, task in ts) for at, who, k, ts in ledger.calls if who == name and at >= since]
        assert steps.index(("standby", False)) < steps.index(("assigned", True)), ledger.timeline(since)


def test_standby_tasks_on_the_embedded_coordinator(embedded: EmbeddedCoordinator, ledger: Ledger) -> None:
    """With ``num_standby_replicas=1`` the coordinator keeps a standby of every stateful task on
    another member than the one running it, three members and then two; when one of two
    closes, the other runs the tasks it kept standbys of, each once the standby was dropped."""
    config = AssignmentConfig(num_standby_replicas=1)
    members = {
        name: ledger.member(embedded.bootstrap_servers, name, config=config, group="orders-standbys")
        for name in ("a", "b", "c")
    }
    try:
        # Each keeps at most its share of the 12 standbys (one thread each).
        settle(list(members.values()), standbys_placed(list(members.values()), ledger, most=4), ledger)
        members.pop("c").close()
        pair = list(members.values())
        settle(pair, standbys_placed(pair, ledger), ledger)
        kept = members["a"].tasks().standby
        t_close = ledger.now()
        members.pop("b").close()
        alone = members["a"]
        settle([alone], lambda: alone.tasks() == MemberTasks(ALL), ledger)
        assert_standbys_became_active(ledger, "a", t_close, kept)
        print(f"\nb closes at 0 s:\n{ledger.timeline(t_close)}")
    finally:
        for member in members.values():
            member.close()


# --- the classic fallback on Apache Kafka --------------------------------------------------------


def test_on_kafka_members_fall_back_to_the_classic_protocol(
    kafka: KafkaCluster, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    # Lags of 0: both members are caught up on every task, so the classic assignor balances
    # them at once (cooperatively: revoked from one member, then given to the other). ka names
    # no source topics; kb does, but is static, which Kafka's streams groups do not take yet.
    options: dict[str, Any] = {
        "task_lags": lambda: dict.fromkeys(ALL, 0),
        "heartbeat_interval_ms": 300,
        "group": "streams-incremental-fallback",
    }
    static = {"source_topics": SOURCE_TOPICS, "group_instance_id": "kb"}
    with caplog.at_level(logging.WARNING, logger="coordinator_api.membership"):
        members = [
            ledger.member(kafka.bootstrap_servers, "ka", **options),
            ledger.member(kafka.bootstrap_servers, "kb", **options, **static),
        ]
        try:
            settle(members, balanced(members, ledger), ledger, timeout=60)
            assert [m.group_protocol for m in members] == ["classic", "classic"]
        finally:
            for member in members:
                member.close()
    fallbacks = [r for r in caplog.records if "does not serve the incremental protocol" in r.getMessage()]
    assert len(fallbacks) == 2, caplog.text


def test_on_kafka_members_with_source_topics_join_a_streams_group(
    kafka: KafkaCluster, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """KIP-1071 on Apache Kafka's brokers: members that name their source topics speak
    StreamsGroupHeartbeat; the broker assigns, each member reconciles on its own, and Kafka's
    own ``kafka-streams-groups`` tool describes them."""
    group = "streams-group-of-kip-1071"
    for subtopology, topics in SOURCE_TOPICS.items():
        kafka.create_topic(topics[0], partitions=sum(t.id.subtopology == subtopology for t in TASKS))
    kafka.set_group_config(group, {"streams.heartbeat.interval.ms": 300, "streams.session.timeout.ms": 6000})
    # The members are not polled while Kafka's tool runs (a JVM: seconds on a loaded machine).
    options: dict[str, Any] = {
        "group": group,
        "source_topics": SOURCE_TOPICS,
        "max_poll_interval_ms": 120_000,
    }
    with caplog.at_level(logging.INFO, logger="coordinator_api.membership"):
        members = {name: ledger.member(kafka.bootstrap_servers, name, **options) for name in ("a", "b")}
        try:
            settle(list(members.values()), balanced(list(members.values()), ledger), ledger, timeout=60)
            assert [m.group_protocol for m in members.values()] == ["incremental", "incremental"]
            printed, rows = kafka_describes_members(kafka, group)
            assert sorted(rows) == ["a", "b"] and {r["MEMBER-PROTOCOL"] for r in rows.values()} == {"streams"}
            for name, member in members.items():  # Kafka's view of each member's tasks is its own
                assert rows[name]["ASSIGNMENTS"].startswith(f"ACTIVE: {kafka_tasks(member.tasks().active)}")
            # And this project's `coordinator-api groups GROUP` sees the same (StreamsGroupDescribe).
            described_here = describe_group(kafka.bootstrap_servers, group)
            assert (described_here.state, described_here.protocol_type) == ("Stable", "streams")
            kafka_sees = {
                m.member_id: {TaskId(int(s), p) for s, ps in m.assigned or () for p in ps}
                for m in described_here.members
            }
            assert kafka_sees == {m.member_id: m.tasks().active for m in members.values()}
            # A committed offset's owner (`--offsets`): the member whose task reads its partition.
            assert {key: m.member_id for key, m in owned_partitions(described_here).items()} == {
                (SOURCE_TOPICS[t.subtopology][0], t.partition): m.member_id
                for m in members.values()
                for t in m.tasks().active
            }

            before = {name: m.tasks().active for name, m in members.items()}
            t_join = ledger.now()
            members["c"] = ledger.member(kafka.bootstrap_servers, "c", **options)
            settle(list(members.values()), balanced(list(members.values()), ledger), ledger, timeout=60)
            moved = frozenset().union(*(ledger.since(t_join, name, "revoked") for name in before))
            assert members["c"].tasks().active == moved == ledger.since(t_join, "c", "assigned")
            for name, tasks in before.items():  # each gave up only what moved, kept the rest running
                assert members[name].tasks().active == tasks - moved, ledger.timeline()
            # docs/streams.md shows one:
            print(f"\n{printed}c joins at 0 s:\n{ledger.timeline(t_join)}")

            kept = {name: members[name].tasks().active for name in ("b", "c")}
            t_close = ledger.now()
            members.pop("a").close()
            rest = list(members.values())
            settle(rest, balanced(rest, ledger), ledger, timeout=60)
            for name, tasks in kept.items():
                assert tasks <= members[name].tasks().active and not ledger.since(t_close, name, "revoked")
        finally:
            for member in members.values():
                member.close()
    joined = [r for r in caplog.records if "joining as a member of a streams group" in r.getMessage()]
    assert len(joined) == 3, caplog.text


def test_on_kafka_a_streams_group_waits_for_its_source_topics(
    kafka: KafkaCluster, ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka says so when a source topic is missing, and assigns no task until it exists; the
    members run theirs as soon as it is created. Kafka counts the tasks from the topics'
    partitions: one more partition than the member declares is one more task, logged."""
    group = "streams-group-before-its-topics"
    topics = {s: [f"streams-late-source-{s}"] for s in SOURCE_TOPICS}
    kafka.set_group_config(group, {"streams.heartbeat.interval.ms": 300, "streams.session.timeout.ms": 6000})
    # Not polled while the topics are created (seconds on a loaded machine).
    options: dict[str, Any] = {"group": group, "source_topics": topics, "max_poll_interval_ms": 120_000}
    with caplog.at_level(logging.INFO):
        members = [ledger.member(kafka.bootstrap_servers, name, **options) for name in ("a", "b")]
        try:
            missing = "the coordinator says MISSING_SOURCE_TOPICS"
            settle(members, lambda: caplog.text.count(missing) >= 2, ledger, timeout=30)
            end = time.monotonic() + 1.0  # a few heartbeats more: still nothing to run
            while time.monotonic() < end:
                for member in members:
                    member.poll(0.02)
            assert [m.tasks().active for m in members] == [frozenset(), frozenset()]
            extra = TaskId(2, 2)  # subtopology 2 declares partitions 0 and 1; its topic has three
            for subtopology, (topic,) in topics.items():
                count = sum(t.id.subtopology == subtopology for t in TASKS)
                kafka.create_topic(topic, partitions=count + (subtopology == extra.subtopology))
            settle(
                members,
                lambda: frozenset().union(*(m.tasks().active for m in members)) == ALL | {extra},
                ledger,
            )
            assert "assigned tasks it does not declare: 2_2" in caplog.text
        finally:
            for member in members:
                member.close()


def test_on_kafka_a_member_of_another_topology_is_refused(kafka: KafkaCluster, ledger: Ledger) -> None:
    """Kafka's streams groups take one topology: a member declaring another is refused at its
    join, with Kafka's reason, and the group keeps running."""
    group = "streams-group-of-one-topology"
    for subtopology, topics in SOURCE_TOPICS.items():
        kafka.create_topic(
            f"{group}-{topics[0]}", partitions=sum(t.id.subtopology == subtopology for t in TASKS)
        )
    kafka.set_group_config(group, {"streams.heartbeat.interval.ms": 300, "streams.session.timeout.ms": 6000})
    topology = {s: [f"{group}-{topics[0]}"] for s, topics in SOURCE_TOPICS.items()}
    first = ledger.member(kafka.bootstrap_servers, "a", group=group, source_topics=topology)
    other = ledger.member(
        kafka.bootstrap_servers,
        "b",
        group=group,
        source_topics={**topology, 2: [f"{group}-{SOURCE_TOPICS[0][0]}"]},
    )
    try:
        settle([first], lambda: first.tasks().active == ALL, ledger, timeout=60)
        with pytest.raises(GroupJoinError, match="INVALID_REQUEST: Topology updates are not supported yet"):
            settle([first, other], lambda: False, ledger, timeout=30)
        assert first.tasks().active == ALL and other.tasks().active == frozenset()
    finally:
        other.close()
        first.close()


def test_on_kafka_stateful_subtopologies_get_standby_tasks(kafka: KafkaCluster, ledger: Ledger) -> None:
    """KIP-1071's standby tasks: members that name their stateful subtopologies' changelog
    topics, in a group whose ``streams.num.standby.replicas`` is 1. The broker creates the
    changelogs and keeps a standby of every stateful task on the process that does not run it;
    when a member closes, the other runs its tasks, those it kept standbys of among them, each
    once the standby was gone."""
    group = "streams-group-with-standbys"
    source = {s: [f"{group}-{topics[0]}"] for s, topics in SOURCE_TOPICS.items()}
    changelogs = {s: [f"{group}-{topics[0]}"] for s, topics in CHANGELOG_TOPICS.items()}
    sizes = {s: sum(t.id.subtopology == s for t in TASKS) for s in SOURCE_TOPICS}
    for subtopology, (topic,) in source.items():
        kafka.create_topic(topic, partitions=sizes[subtopology])
    kafka.set_group_config(
        group,
        {
            "streams.heartbeat.interval.ms": 300,
            "streams.session.timeout.ms": 6000,
            "streams.num.standby.replicas": 1,
        },
    )
    options: dict[str, Any] = {
        "group": group,
        "source_topics": source,
        "changelog_topics": changelogs,
        "max_poll_interval_ms": 120_000,  # not polled while the changelogs are looked up
    }
    members = {name: ledger.member(kafka.bootstrap_servers, name, **options) for name in ("a", "b")}
    try:
        pair = list(members.values())
        settle(pair, standbys_placed(pair, ledger), ledger, timeout=60)
        assert all(m.group_protocol == "incremental" for m in pair)
        # The broker created each changelog with as many partitions as its subtopology's tasks.
        consumer = KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers)
        try:
            for subtopology, (topic,) in changelogs.items():
                assert consumer.partitions_for_topic(topic) == set(range(sizes[subtopology]))
        finally:
            consumer.close()
        # Kafka's own tool sees each member's standbys as the member does ...
        _, rows = kafka_describes_members(kafka, group)
        for name, member in members.items():
            tasks = member.tasks()
            seen = f"ACTIVE: {kafka_tasks(tasks.active)} STANDBY: {kafka_tasks(tasks.standby)}"
            assert rows[name]["ASSIGNMENTS"].startswith(seen), (rows[name], seen)
        # ... and so does `coordinator-api groups GROUP`.
        described = describe_group(kafka.bootstrap_servers, group)
        kafka_sees = {
            m.member_id: {(s, p) for s, ps in m.assigned or () for p in ps} for m in described.members
        }
        assert kafka_sees == {
            m.member_id: {(str(t.subtopology), t.partition) for t in m.tasks().active}
            | {(f"{t.subtopology}/standby", t.partition) for t in m.tasks().standby}
            for m in pair
        }

        kept = members["a"].tasks().standby
        t_close = ledger.now()
        members.pop("b").close()
        alone = members["a"]
        settle([alone], lambda: alone.tasks() == MemberTasks(ALL), ledger, timeout=60)
        # It runs what it had kept standbys of (one process: no standby can be placed now).
        assert_standbys_became_active(ledger, "a", t_close, kept)
        print(f"\nb closes at 0 s:\n{ledger.timeline(t_close)}")
    finally:
        for member in members.values():
            member.close()


STREAMS_APPLICATION = Path(__file__).with_name("StreamsApplication.java")


class StreamsApplicationProcess:
    """Apache Kafka's own Streams client, one thread, in a process: ``tasks`` and ``standby``
    are the active and standby tasks it said it has last. Stateless, or counting by key in a
    store named ``store``."""

    def __init__(
        self, bootstrap: str, application_id: str, topic: str, state_dir: Path, store: str | None = None
    ) -> None:
        classpath = kafka_classpath()
        classes = compiled(STREAMS_APPLICATION, classpath)
        argv = [
            "java",
            *TOOL_JVM_OPTIONS,
            "-cp",
            f"{classpath}{os.pathsep}{classes}",
            STREAMS_APPLICATION.stem,
        ]
        self.log = state_dir / "streams-application.log"
        with open(self.log, "w") as log:  # the child keeps its own descriptor
            self.process = subprocess.Popen(
                [*argv, bootstrap, application_id, topic, str(state_dir), *([store] if store else [])],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.tasks: frozenset[TaskId] = frozenset()
        self.standby: frozenset[TaskId] = frozenset()
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())
            if line.startswith("tasks"):  # tasks 0_1 0_3 standby 0_2
                active, _, standby = line.removeprefix("tasks").partition("standby")
                self.standby = frozenset(TaskId.parse(t) for t in standby.split())
                self.tasks = frozenset(TaskId.parse(t) for t in active.split())

    def output(self) -> str:
        """What it printed, and the end of its log: for a failing test's message."""
        return "\n".join(self.lines[-40:]) + "\n--- log:\n" + self.log.read_text(errors="replace")[-3000:]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.mark.parametrize("stateful", [False, True], ids=["stateless", "stateful-with-standbys"])
def test_on_kafka_a_kafka_streams_application_and_our_member_share_a_streams_group(
    kafka: KafkaCluster, ledger: Ledger, tmp_path: Path, stateful: bool
) -> None:
    """Apache Kafka's own Streams client and this project's member in one streams group of
    KIP-1071, each declaring the same topology (one subtopology reading one topic): the broker
    takes both (it refuses a member whose topology differs), splits the tasks between them, and
    gives the Streams application all of them once the member has closed. Stateful: the
    subtopology counts by key in a store whose changelog both declare, and with
    ``streams.num.standby.replicas`` 1 each keeps standbys of the tasks the other runs."""
    group = f"streams-beside-kafka-streams-{'stateful' if stateful else 'stateless'}"
    topic = f"{group}-source"
    kafka.create_topic(topic, partitions=6)
    configs: dict[str, int | str] = {"streams.heartbeat.interval.ms": 300, "streams.session.timeout.ms": 6000}
    kafka.set_group_config(group, {**configs, "streams.num.standby.replicas": int(stateful)})
    tasks = [Task(TaskId(0, p), stateful=stateful) for p in range(6)]
    everything = frozenset(t.id for t in tasks)
    store = "counts" if stateful else None
    java = StreamsApplicationProcess(kafka.bootstrap_servers, group, topic, tmp_path, store)
    member = StreamsGroupMember(
        group,
        kafka.bootstrap_servers,
        process_id="python",
        tasks=tasks,
        on_tasks_assigned=lambda t: ledger.assigned("python", t),
        on_tasks_revoked=lambda t: ledger.released("python", "revoked", t),
        on_tasks_lost=lambda t: ledger.released("python", "lost", t),
        source_topics={0: [topic]},
        # Kafka Streams names a store's changelog "<application id>-<store>-changelog".
        changelog_topics={0: [f"{group}-{store}-changelog"]} if stateful else None,
        **OPTIONS,
    )
    try:

        def shared() -> bool:
            ours = member.tasks()
            split = len(ours.active) == len(java.tasks) == 3 and ours.active | java.tasks == everything
            if not stateful:
                return split
            return split and ours.standby == java.tasks and java.standby == ours.active

        try:
            settle([member], shared, ledger, timeout=90)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nthe Streams application:\n{java.output()}") from None
        assert member.group_protocol == "incremental"
        member.close()
        deadline = time.monotonic() + 60
        while (java.tasks, java.standby) != (everything, frozenset()):
            assert time.monotonic() < deadline, f"it runs {words(java.tasks)}:\n{java.output()}"
            time.sleep(0.05)
    finally:
        member.close()
        java.close()
    assert "closed" in java.lines, java.lines


def kafka_describes_members(kafka: KafkaCluster, group: str) -> tuple[str, dict[str, dict[str, str]]]:
    """Kafka's own ``kafka-streams-groups --describe --members --verbose`` of ``group``: what it
    printed, and its rows by process id."""
    done = run_kafka_tool(
        "org.apache.kafka.tools.streams.StreamsGroupCommand",
        *("--bootstrap-server", kafka.bootstrap_servers, "--describe", "--group", group),
        *("--members", "--verbose"),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, {row["PROCESS"]: row for row in table(done.stdout)}


def kafka_tasks(tasks: frozenset[TaskId]) -> str:
    """Tasks as Kafka's tool writes them: ``0:[0,1]; 2:[1];``."""
    by_subtopology: dict[int, list[int]] = {}
    for task in sorted(tasks):
        by_subtopology.setdefault(task.subtopology, []).append(task.partition)
    return " ".join(f"{s}:[{','.join(map(str, ps))}];" for s, ps in by_subtopology.items())
