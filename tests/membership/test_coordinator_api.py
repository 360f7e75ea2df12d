"""The public Coordinator API in-process, against the real embedded coordinator over TCP."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from poll_threads import PollThreads

from coordinator_api import (
    NO_GENERATION,
    AsyncCoordinator,
    CallbackError,
    CommitFailedError,
    ConfigurationError,
    Coordinator,
    CoordinatorClosedError,
    EmbeddedCoordinator,
    FencedInstanceError,
    GroupJoinError,
    GroupTimeoutError,
    JoinedMember,
    MemberEvent,
    get_plugin_manager,
    hookimpl,
    installed_plugins,
)

FAST = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 5000}


class Shards(Coordinator):
    """Eight shards, round robin over members sorted by id."""

    def __init__(self, *args: Any, kind: str = "shards", fail_complete: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **{**FAST, **kwargs})
        self.kind = kind
        self.fail_complete = fail_complete
        self.shards: list[int] = []
        self.completions: list[int] = []
        self.prepared: list[int] = []
        self.lost: list[str] = []

    def protocol_type(self) -> str:
        return self.kind

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("round-robin", b"{}")]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        ids = sorted(m.member_id for m in members)
        return {mid: json.dumps(list(range(i, 8, len(ids)))).encode() for i, mid in enumerate(ids)}

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        self.prepared.append(generation)
        self.shards = []

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        if self.fail_complete:
            self.fail_complete -= 1
            raise RuntimeError("on_join_complete failed on purpose")
        self.completions.append(generation)
        self.shards = json.loads(assignment)

    def on_lost(self, reason: str) -> None:
        self.lost.append(reason)


@pytest.fixture
def members(coordinator: EmbeddedCoordinator) -> Iterator[list[Shards]]:
    created: list[Shards] = []
    yield created
    for member in created:
        member.close(timeout=5)


def make(
    coordinator: EmbeddedCoordinator, created: list[Shards], group: str = "api", **kwargs: Any
) -> Shards:
    member = Shards(group, coordinator.bootstrap_servers, **kwargs)
    created.append(member)
    return member


def wait_until(condition: Any, timeout: float = 30, what: str = "the group to settle") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def covers_all(group: list[Shards]) -> bool:
    gens = {m.generation_if_stable() and m.generation_if_stable().generation_id for m in group}  # type: ignore[union-attr]
    return (
        None not in gens and len(gens) == 1 and sorted(s for m in group for s in m.shards) == list(range(8))
    )


def test_constructor_validates_settings() -> None:
    with pytest.raises(ConfigurationError, match="group_id"):
        Shards("", "127.0.0.1:9092")
    with pytest.raises(ConfigurationError, match="heartbeat_interval_ms"):
        Shards("g", "127.0.0.1:9092", session_timeout_ms=1000, heartbeat_interval_ms=1000)
    with pytest.raises(ConfigurationError, match="unknown connection option"):
        Shards("g", "127.0.0.1:9092", sasl_mechanizm="PLAIN")


def test_generation_before_joining(coordinator: EmbeddedCoordinator, members: list[Shards]) -> None:
    member = make(coordinator, members)
    assert member.generation() == NO_GENERATION
    assert not member.generation().has_member_id()
    assert member.generation_if_stable() is None


def test_two_members_share_the_work_and_agree_on_the_generation(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    a, b = make(coordinator, members), make(coordinator, members)
    with PollThreads([a, b]):
        wait_until(lambda: covers_all([a, b]))
        ga, gb = a.generation_if_stable(), b.generation_if_stable()
    assert ga is not None and gb is not None
    assert ga.generation_id == gb.generation_id
    assert ga.protocol_name == "round-robin"
    assert ga.member_id != gb.member_id and ga.has_member_id()


def test_request_rejoin_reruns_the_callbacks_and_the_leader_starts_a_new_generation(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    a, b = make(coordinator, members), make(coordinator, members)
    with PollThreads([a, b]):
        wait_until(lambda: covers_all([a, b]))
        before = a.generation().generation_id
        completed = [len(a.completions), len(b.completions)]
        for member in (a, b):  # one of them leads: its JoinGroup makes the group rebalance
            member.request_rejoin("testing")
        wait_until(lambda: covers_all([a, b]) and a.generation().generation_id > before)
        wait_until(lambda: len(a.completions) > completed[0] and len(b.completions) > completed[1])
    assert a.prepared[-1] >= before  # on_join_prepare saw a generation it was leaving
    assert b.prepared


def test_failing_on_join_complete_raises_with_group_and_member_then_recovers(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    member = make(coordinator, members, fail_complete=1)
    with pytest.raises(CallbackError) as raised:
        member.ensure_active_group(30)
    assert "group 'api'" in str(raised.value)
    assert raised.value.member_id and raised.value.member_id in str(raised.value)
    assert isinstance(raised.value.__cause__, RuntimeError)
    member.ensure_active_group(30)  # recovers on a later call
    assert member.shards == list(range(8))


def test_offsets_commit_fenced_by_generation_and_read_back(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    reader = make(coordinator, members, group="offsets")
    assert reader.committed_offsets() == {}  # before joining: the coordinator is looked up
    a = make(coordinator, members, group="offsets", **FAST)
    a.ensure_active_group(30)
    a.commit_offsets({("events", 0): 5, ("events", 3): (9, "unit-3 done")})
    assert reader.committed_offsets() == {("events", 0): (5, ""), ("events", 3): (9, "unit-3 done")}
    assert reader.committed_offsets([("events", 3), ("events", 4)]) == {("events", 3): (9, "unit-3 done")}
    with pytest.raises(ConfigurationError, match="must be a non-negative int"):
        a.commit_offsets({("events", 1): -1})
    with pytest.raises(CommitFailedError, match="UNKNOWN_TOPIC_OR_PARTITION") as unknown:
        a.commit_offsets({("no-such-topic", 0): 1})
    assert unknown.value.errors == (("no-such-topic", 0, "UNKNOWN_TOPIC_OR_PARTITION"),)

    # A second member joins: a's generation is over until it rejoins, so its commit is refused.
    b = make(coordinator, members, group="offsets", **FAST)
    with PollThreads([b]):
        wait_until(lambda: b.generation().generation_id > a.generation().generation_id, what="b to join")
        with pytest.raises(CommitFailedError, match="refused for generation") as stale:
            a.commit_offsets({("events", 0): 6})
    # a never polled: the rebalance went on without it (removed) or its generation is over.
    assert {e for _, _, e in stale.value.errors} <= {"ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"}
    assert reader.committed_offsets([("events", 0)]) == {("events", 0): (5, "")}


def test_leave_group_then_poll_rejoins(coordinator: EmbeddedCoordinator, members: list[Shards]) -> None:
    member = make(coordinator, members)
    member.ensure_active_group(30)
    first = member.generation()
    member.leave_group("testing")
    assert member.generation_if_stable() is None
    assert not member.generation().has_member_id()
    with PollThreads([member]):
        wait_until(lambda: member.generation_if_stable() is not None)
    assert member.generation().generation_id > first.generation_id
    assert member.member_id != first.member_id


def test_inconsistent_protocol_type_is_a_join_error(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    make(coordinator, members).ensure_active_group(30)
    other = make(coordinator, members, kind="something-else")
    with pytest.raises(GroupJoinError) as raised:
        other.ensure_active_group(30)
    assert raised.value.error_name == "INCONSISTENT_GROUP_PROTOCOL"


def test_second_process_with_the_same_instance_id_fences_the_first(
    coordinator: EmbeddedCoordinator, members: list[Shards]
) -> None:
    first = make(coordinator, members, group_instance_id="same")
    first.ensure_active_group(30)
    second = make(coordinator, members, group_instance_id="same")
    second.ensure_active_group(30)
    assert second.shards == list(range(8))
    with PollThreads([first], expect=(FencedInstanceError,)) as polling:
        wait_until(lambda: bool(polling.errors()), 10, "the first member to be fenced")
    assert isinstance(polling.errors()[0], FencedInstanceError)
    assert "group_instance_id" in str(polling.errors()[0])
    assert first.lost  # on_lost ran: the assignment was no longer its own
    assert first.generation_if_stable() is None


def test_unreachable_coordinator_times_out_with_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    member = Shards("nobody", f"127.0.0.1:{port}", request_timeout_ms=1000)
    try:
        with pytest.raises(GroupTimeoutError, match=r"no stable generation within 1\.5 s"):
            member.ensure_active_group(1.5)
    finally:
        member.close(timeout=2)
    with pytest.raises(CoordinatorClosedError):
        member.poll(0)


def test_asyncio_facade(coordinator: EmbeddedCoordinator) -> None:
    async def main() -> list[Shards]:
        group = [Shards("aio", coordinator.bootstrap_servers) for _ in range(2)]
        async with AsyncCoordinator(group[0]) as a, AsyncCoordinator(group[1]) as b:
            await asyncio.gather(a.ensure_active_group(30), b.ensure_active_group(30))
            for _ in range(600):
                if covers_all(group):
                    break
                await asyncio.gather(a.poll(0.05), b.poll(0.05))
            assert covers_all(group)
            assert a.generation_if_stable() == group[0].generation()
        return group

    group = asyncio.run(main())
    assert sorted(group[0].shards + group[1].shards) == list(range(8))
    with pytest.raises(CoordinatorClosedError):
        group[0].poll(0)  # async with closed it


class EventLog:
    """A plugin observing members through the coordinator_api_on_member_event hook."""

    def __init__(self) -> None:
        self.events: list[MemberEvent] = []

    @hookimpl
    def coordinator_api_on_member_event(self, event: MemberEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


def test_member_events_reach_observability_plugins(coordinator: EmbeddedCoordinator) -> None:
    log = EventLog()
    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(log, name="event-log")
    first = Shards("observed", coordinator.bootstrap_servers, group_instance_id="one", plugin_manager=pm)
    first.ensure_active_group(30)
    assert log.kinds() == ["joined", "assigned"]
    joined, assigned = log.events
    assert joined.generation_id == assigned.generation_id == first.generation().generation_id
    assert assigned.protocol == "round-robin" and assigned.member_id == first.member_id
    assert joined.duration_ms is not None and assigned.duration_ms is not None
    first.request_rejoin("observe a revocation")
    with PollThreads([first]):
        wait_until(lambda: log.kinds().count("assigned") == 2)
    assert "revoked" in log.kinds()
    # Another process with the same instance id: the first is fenced and its assignment lost.
    second = Shards("observed", coordinator.bootstrap_servers, group_instance_id="one")
    try:
        second.ensure_active_group(30)
        with PollThreads([first], expect=(FencedInstanceError,)):
            wait_until(lambda: "lost" in log.kinds(), 10, "the lost event")
    finally:
        second.close()
        first.close()
    plain = Shards("observed-leave", coordinator.bootstrap_servers, plugin_manager=pm)
    plain.ensure_active_group(30)
    plain.close()
    assert log.events[-1].kind == "left"
    assert log.events[-1].group_id == "observed-leave"


def test_installed_plugins_observe_every_member_by_default(coordinator: EmbeddedCoordinator) -> None:
    log, own = EventLog(), EventLog()
    installed = installed_plugins().plugin_manager
    assert installed is not None
    installed.register(log, name="installed-event-log")
    try:
        member = Shards("observed-by-default", coordinator.bootstrap_servers)
        member.ensure_active_group(30)
        member.close()
        assert log.kinds() == ["joined", "assigned", "left"]
        assert {e.group_id for e in log.events} == {"observed-by-default"}
        # A member given its own plugin manager is observed by that one instead.
        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(own, name="own-event-log")
        other = Shards("observed-by-its-own", coordinator.bootstrap_servers, plugin_manager=pm)
        other.ensure_active_group(30)
        other.close()
        assert own.kinds() == ["joined", "assigned", "left"]
        assert {e.group_id for e in log.events} == {"observed-by-default"}
    finally:
        installed.unregister(log)
