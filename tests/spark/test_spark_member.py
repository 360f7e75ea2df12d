"""The spark-executor group without Spark: SlotMember processes against a real embedded
coordinator (allocation by the leader, generation-fenced completions, a zombie refused), the
plugin's registration, and `coordinator-api groups` describing a spark-executor group."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence

import kafka.errors
import pytest
from coordinator_spark import (
    ALLOCATOR,
    PROTOCOL_TYPE,
    Executor,
    SlotAssignment,
    SlotMember,
    SlotMetadata,
    UnitDone,
    WorkUnit,
    allocate,
    executor_identity,
)
from coordinator_spark._member import completed_units
from kafka.protocol.consumer.group import OffsetCommitRequest

from coordinator_api import (
    ConfigurationError,
    EmbeddedCoordinator,
    PluginRegistry,
    encode,
    get_plugin_manager,
)
from coordinator_api._plugins import AssignorRegistry, hookimpl

TOPIC = "job-units"
UNITS = [WorkUnit(f"u{i}", 1.0 + (i % 3)) for i in range(12)]


def member(coordinator: EmbeddedCoordinator, executor: str, **extra: object) -> SlotMember:
    return SlotMember(
        "job",
        coordinator.bootstrap_servers,
        units=UNITS,
        topic=TOPIC,
        executor_id=executor,
        host="127.0.0.1",
        session_timeout_ms=1_500,
        heartbeat_interval_ms=300,
        rebalance_timeout_ms=5_000,
        **extra,  # type: ignore[arg-type]
    )


def join_all(*members: SlotMember, timeout: float = 30.0) -> None:
    errors: list[BaseException] = []

    def join(m: SlotMember) -> None:
        try:
            m.ensure_active_group(timeout)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=join, args=(m,)) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    # One member may have settled a generation alone before the other joined: poll until all
    # hold the same generation.
    deadline = time.monotonic() + timeout
    while len({m.generation().generation_id for m in members}) > 1 or not all(
        m.generation_if_stable() for m in members
    ):
        assert time.monotonic() < deadline, "the members did not settle in one generation"
        for m in members:
            m.poll(0.05)


def drain(m: SlotMember) -> list[tuple[int, int]]:
    taken = []
    while (work := m.next_unit()) is not None:
        taken.append(work)
    return taken


def test_the_plugin_registers_its_protocol_allocator_and_payload_decoders() -> None:
    registry = PluginRegistry.load(get_plugin_manager())
    assert registry.protocols.get(PROTOCOL_TYPE) is SlotMember
    assert registry.assignors.get(PROTOCOL_TYPE, ALLOCATOR) is allocate
    decoders = registry.payload_decoders
    meta = encode(SlotMetadata("3", "host-a", 2, 4096, "3#0", (4, 9), 5, 0))
    assert (
        decoders.describe_metadata(PROTOCOL_TYPE, ALLOCATOR, meta)
        == "executor 3 on host-a, 2 core(s), 4096 MB, slot 3#0; owns 2 unit(s): 4, 9 (generation 5)"
    )
    assignment = encode(SlotAssignment("3#0", (4, 9)))
    assert decoders.describe_assignment(PROTOCOL_TYPE, ALLOCATOR, assignment) == "slot 3#0: 2 unit(s): 4, 9"


def test_outside_spark_the_identity_is_the_driver() -> None:
    identity = executor_identity()
    assert identity.executor_id == "driver"
    assert identity.source == "local"


def test_members_split_the_units_and_a_dead_members_units_move(fast_config) -> None:
    with EmbeddedCoordinator(topics={TOPIC: len(UNITS)}, config=fast_config) as coordinator:
        a, b = member(coordinator, "1"), member(coordinator, "2")
        try:
            join_all(a, b)
            taken_a, taken_b = drain(a), drain(b)
            assert {a.slot, b.slot} == {"1#0", "2#0"}
            assert sorted(i for i, _ in taken_a + taken_b) == list(range(len(UNITS)))
            weight = [u.weight for u in UNITS]
            load_a = sum(weight[i] for i, _ in taken_a)
            load_b = sum(weight[i] for i, _ in taken_b)
            assert abs(load_a - load_b) <= max(weight)

            # a completes its first unit: accepted, and the leader will not hand it out again.
            first, generation = taken_a[0]
            assert a.complete(first, generation, UnitDone(token=0, slot=a.slot))
            done = completed_units(a.committed_offsets(), TOPIC)
            assert UnitDone.from_commit_metadata(done[first]) == UnitDone(token=0, slot=a.slot)

            # b's process vanishes without leaving (as with SIGKILL): no more heartbeats, so
            # its session expires and a takes over everything that is not done.
            b._session.close()  # type: ignore[union-attr]  # the test looks inside; nothing else does
            deadline = time.monotonic() + 20
            retaken: list[tuple[int, int]] = []
            while {i for i, _ in taken_b} - {i for i, _ in retaken}:
                assert time.monotonic() < deadline, "b's units never moved to a"
                a.poll(0.2)
                retaken += drain(a)
            assert first not in {i for i, _ in retaken}  # done units are never handed out again
            assert a.generation().generation_id > generation
        finally:
            a.close()


def test_an_executor_that_joins_mid_job_takes_a_share_of_what_is_left(fast_config) -> None:
    with EmbeddedCoordinator(topics={TOPIC: len(UNITS)}, config=fast_config) as coordinator:
        a = member(coordinator, "1")
        b = None
        try:
            join_all(a)
            done = []
            for _ in range(3):  # a alone works through three units
                work = a.next_unit()
                assert work is not None
                assert a.complete(work[0], work[1], UnitDone(token=work[0], slot=a.slot))
                done.append(work[0])
            b = member(coordinator, "2")
            join_all(a, b)  # b joins mid-job: a rebalance splits what is not done
            taken_a, taken_b = drain(a), drain(b)
            left = sorted(set(range(len(UNITS))) - set(done))
            assert sorted(i for i, _ in taken_a + taken_b) == left
            weight = [u.weight for u in UNITS]
            share_b = sum(weight[i] for i, _ in taken_b)
            share_a = sum(weight[i] for i, _ in taken_a)
            assert taken_b and abs(share_a - share_b) <= max(weight)
        finally:
            if b is not None:
                b.close()
            a.close()


def test_a_commit_with_a_passed_generation_is_refused_by_the_coordinator(fast_config) -> None:
    with EmbeddedCoordinator(topics={TOPIC: len(UNITS)}, config=fast_config) as coordinator:
        a = member(coordinator, "1")
        b = member(coordinator, "2")
        try:
            a.ensure_active_group(30)
            index, generation = drain(a)[0]
            # b's arrival starts a new generation: a's old one passes once a has rejoined.
            joining = threading.Thread(target=b.ensure_active_group, args=(30,))
            joining.start()
            deadline = time.monotonic() + 30
            while (a.generation_if_stable() or a.generation()).generation_id <= generation:
                assert time.monotonic() < deadline, "no new generation"
                a.poll(0.1)
            joining.join()
            # complete() refuses on its own, and the coordinator refuses a raw commit with the
            # old generation: fencing does not rest on the member's honesty.
            assert not a.complete(index, generation, UnitDone(token=1, slot="x"))
            part = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
            response = a.send_request(
                OffsetCommitRequest(
                    group_id="job",
                    generation_id_or_member_epoch=generation,
                    member_id=a.member_id,
                    group_instance_id=None,
                    retention_time_ms=-1,
                    topics=[
                        OffsetCommitRequest.OffsetCommitRequestTopic(
                            name=TOPIC,
                            partitions=[
                                part(
                                    partition_index=index,
                                    committed_offset=1,
                                    committed_leader_epoch=-1,
                                    committed_metadata="{}",
                                )
                            ],
                        )
                    ],
                    max_version=9,  # by topic name: v10 names topics by id
                ),
                to_coordinator=True,
            )
            code = response.topics[0].partitions[0].error_code
            assert kafka.errors.for_code(code) is kafka.errors.IllegalGenerationError
            assert index not in completed_units(a.committed_offsets(), TOPIC)
        finally:
            b.close()
            a.close()


def test_groups_command_describes_a_spark_executor_group(fast_config) -> None:
    with EmbeddedCoordinator(topics={TOPIC: len(UNITS)}, config=fast_config) as coordinator:
        # It does not poll while the CLI runs: it must not leave for that (max.poll.interval).
        a = member(coordinator, "7", max_poll_interval_ms=120_000)
        try:
            a.ensure_active_group(30)
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "coordinator_api",
                    "groups",
                    "job",
                    "--bootstrap-servers",
                    coordinator.bootstrap_servers,
                ],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            a.close()
    assert result.returncode == 0, result.stderr
    assert "executor 7 on 127.0.0.1, 1 core(s)" in result.stdout
    assert f"slot 7#0: {len(UNITS)} unit(s)" in result.stdout


class AlphabeticalAllocator:
    """A third party's allocator: every unit to the slot whose name sorts first."""

    @staticmethod
    @hookimpl
    def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
        registry.register(PROTOCOL_TYPE, "first-slot-takes-all", AlphabeticalAllocator.allocate)

    @staticmethod
    def allocate(
        executors: Sequence[Executor], units: Sequence[WorkUnit], previous: Mapping[str, str]
    ) -> dict[str, tuple[str, ...]]:
        first = min(e.id for e in executors)
        return {e.id: tuple(u.id for u in units) if e.id == first else () for e in executors}


def test_a_plugins_allocator_runs_in_place_of_the_built_in_one(fast_config) -> None:
    pm = get_plugin_manager()
    pm.register(AlphabeticalAllocator(), name="alphabetical")
    plugins = PluginRegistry.load(pm)
    with EmbeddedCoordinator(topics={TOPIC: len(UNITS)}, config=fast_config) as coordinator:
        with pytest.raises(ConfigurationError, match=r"unknown allocator 'nope'.*weighted-sticky"):
            member(coordinator, "0", allocator="nope", plugins=plugins)
        a, b = (member(coordinator, e, allocator="first-slot-takes-all", plugins=plugins) for e in "12")
        try:
            join_all(a, b)
            assert sorted(i for i, _ in drain(a)) == list(range(len(UNITS)))  # slot "1#0" sorts first
            assert drain(b) == []
        finally:
            a.close()
            b.close()
