"""ConsumerGroupMember speaking the incremental protocol (KIP-848) to a real embedded coordinator.

Members run in this process over real TCP connections; the test thread polls them, as an
application would. Every rebalance callback is logged with its time, and the timeline is
checked: no partition is ever held by two members, each member gives up before it is given,
and partitions move only as far as the change requires. The same member against Apache Kafka
4's brokers, beside librdkafka and Java consumers, is in tests/kafka/test_incremental_on_kafka.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from coordinator_consumer import ConsumerGroupMember, TopicPartition

from coordinator_api import (
    CommitFailedError,
    ConfigurationError,
    CoordinatorConfig,
    EmbeddedCoordinator,
    Generation,
    GroupJoinError,
)
from coordinator_api._membership._incremental import GroupHeartbeatAnswered, IncrementalMachine

PARTITIONS = 6
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=6000,
    consumer_group_heartbeat_interval_ms=300,
)
# The member's session is the coordinator's (its lease is counted from it); its interval is
# replaced by the coordinator's after the first answer.
OPTIONS: dict[str, Any] = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 1000,
    "rebalance_timeout_ms": 5000,
}


class Timeline:
    """What each member's callbacks said, in order, with the owned sets they imply."""

    def __init__(self) -> None:
        self.calls: list[tuple[float, str, str, frozenset[int]]] = []
        self.owned: dict[str, set[int]] = {}

    def member(self, coordinator: EmbeddedCoordinator, name: str, **options: Any) -> ConsumerGroupMember:
        def record(kind: str) -> Callable[[frozenset[TopicPartition]], None]:
            def callback(partitions: frozenset[TopicPartition]) -> None:
                numbers = frozenset(tp.partition for tp in partitions)
                self.calls.append((time.monotonic(), name, kind, numbers))
                mine = self.owned.setdefault(name, set())
                if kind == "assigned":
                    others = {p for other, ps in self.owned.items() if other != name for p in ps}
                    assert not numbers & others, (
                        f"{name} given {sorted(numbers & others)} still held by others"
                    )
                    mine |= numbers
                else:
                    assert numbers <= mine, f"{name} gave up {sorted(numbers - mine)} it did not hold"
                    mine -= numbers

            return callback

        return ConsumerGroupMember(
            "g",
            coordinator.bootstrap_servers,
            topics=options.pop("topics", ["t"]) if "pattern" not in options else None,
            group_protocol="consumer",
            client_id=name,
            on_partitions_assigned=record("assigned"),
            on_partitions_revoked=record("revoked"),
            on_partitions_lost=record("lost"),
            **{**OPTIONS, **options},
        )

    def kinds(self, name: str) -> list[tuple[str, list[int]]]:
        return [(kind, sorted(ps)) for _, who, kind, ps in self.calls if who == name]


def settle(members: list[ConsumerGroupMember], done: Callable[[], bool], timeout: float = 20) -> float:
    """Poll every member until ``done``; how long it took."""
    start = time.monotonic()
    while not done():
        assert time.monotonic() - start < timeout, [sorted(m.assignment()) for m in members]
        for member in members:
            member.poll(0.02)
    return time.monotonic() - start


def split(members: list[ConsumerGroupMember]) -> bool:
    sizes = [len(m.assignment()) for m in members]
    owned = [p for m in members for p in m.assignment()]
    return len(owned) == len(set(owned)) == PARTITIONS and max(sizes) - min(sizes) <= 1


@pytest.fixture
def coordinator() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(topics={"t": PARTITIONS}, config=CONFIG) as running:
        yield running


@pytest.fixture
def timeline() -> Timeline:
    return Timeline()


def test_members_join_share_and_leave_revoking_only_what_moves(
    coordinator: EmbeddedCoordinator, timeline: Timeline
) -> None:
    a = timeline.member(coordinator, "a")
    a.ensure_active_group(20)
    assert len(a.assignment()) == PARTITIONS
    assert a.generation().generation_id == 2 and a.generation().protocol_name is None
    b = timeline.member(coordinator, "b")
    settle([a, b], lambda: split([a, b]))
    # a gave up exactly what b got, once; b was given only after a had given it up (Timeline).
    (revoked,) = [ps for kind, ps in timeline.kinds("a") if kind == "revoked"]
    assert timeline.kinds("b") == [("assigned", revoked)] and len(revoked) == PARTITIONS // 2
    # a's acknowledgement moved it to b's epoch; its answer may reach a's network thread just
    # after b has started what a gave up.
    settle([a, b], lambda: a.generation().generation_id == b.generation().generation_id == 3, timeout=5)
    c = timeline.member(coordinator, "c")
    settle([a, b, c], lambda: split([a, b, c]))
    assert len(c.assignment()) == 2
    # A member that closes revokes everything first and leaves at once: the others take over.
    c.close()
    settle([a, b], lambda: split([a, b]))
    # c was given its partitions as each was released (one or two steps), and gave all back.
    *given, (last_kind, gave_back) = timeline.kinds("c")
    assert {kind for kind, _ in given} == {"assigned"} and last_kind == "revoked"
    assert sorted(p for _, ps in given for p in ps) == gave_back and len(gave_back) == 2
    for member in (a, b):
        member.close()
    assert not any(kind == "lost" for _, _, kind, _ in timeline.calls)


def test_commits_are_fenced_by_the_member_epoch(
    coordinator: EmbeddedCoordinator, timeline: Timeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = timeline.member(coordinator, "a")
    a.ensure_active_group(20)
    old = a.generation()
    a.commit({("t", 0): 7})
    b = timeline.member(coordinator, "b")
    settle([a, b], lambda: split([a, b]))
    owned = sorted(a.assignment())
    a.commit({tp: 11 for tp in owned})  # at its current epoch: accepted
    assert a.committed_offsets(owned) == {tp: (11, "") for tp in owned}
    # At the epoch it had before the group moved on, the member may still commit what it has
    # had since then (KIP-1251, as Kafka 4.3), but not with a partition it gave b meanwhile:
    # then nothing of the commit is stored.
    monkeypatch.setattr(a, "generation", lambda: Generation(old.generation_id, old.member_id, None))
    a.commit({tp: 12 for tp in owned})
    assert a.committed_offsets(owned) == {tp: (12, "") for tp in owned}
    given_up = sorted(b.assignment())  # a had every partition at its old epoch
    with pytest.raises(CommitFailedError) as refused:
        a.commit({tp: 99 for tp in [*owned, *given_up]})
    assert {name for _, _, name in refused.value.errors} == {"STALE_MEMBER_EPOCH"}
    assert a.committed_offsets(owned) == {tp: (12, "") for tp in owned}
    monkeypatch.undo()
    a.close()
    with pytest.raises(CommitFailedError):  # no longer in the group: nothing is sent
        a.commit({("t", 0): 1})
    b.close()


def test_a_commit_made_while_an_acknowledgement_is_answered_carries_the_new_epoch(
    coordinator: EmbeddedCoordinator, timeline: Timeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The coordinator moves a member's epoch when it hears the member gave partitions up; the
    answer saying so is held back here for 0.5 s after it arrived (the member's own driver is
    wrapped, white-box), so a commit made in between would carry the epoch just left."""
    a = timeline.member(coordinator, "a")
    a.ensure_active_group(20)
    assert a._session is not None
    driver = a._session._driver
    submit = driver.submit
    arrived = threading.Event()

    def hold_the_answer(event: Any, **options: Any) -> bool:
        acknowledging = isinstance(driver.machine, IncrementalMachine) and driver.machine.acknowledging()
        if isinstance(event, GroupHeartbeatAnswered) and acknowledging and not arrived.is_set():
            arrived.set()
            threading.Timer(0.5, submit, (event,), options).start()
            return True
        return submit(event, **options)

    monkeypatch.setattr(driver, "submit", hold_the_answer)
    b = timeline.member(coordinator, "b")
    settle([a, b], arrived.is_set)
    owned = sorted(a.assignment())
    assert len(owned) == PARTITIONS // 2
    a.commit({tp: 5 for tp in owned})  # at the epoch the answer on its way brings: accepted
    assert a.committed_offsets(owned) == {tp: (5, "") for tp in owned}
    assert a.generation().generation_id > 2
    settle([a, b], lambda: split([a, b]))
    a.close()
    b.close()


def test_a_static_member_that_restarts_gets_its_partitions_back_without_moving_others(
    coordinator: EmbeddedCoordinator, timeline: Timeline
) -> None:
    a = timeline.member(coordinator, "a", group_instance_id="a-1")
    b = timeline.member(coordinator, "b")
    settle([a, b], lambda: split([a, b]))
    kept = a.assignment()
    b_before = b.assignment()
    a.close()  # a static member leaves with epoch -2: its place and partitions wait for it
    time.sleep(0.5)
    b.poll(0.5)
    assert b.assignment() == b_before
    again = timeline.member(coordinator, "a2", group_instance_id="a-1")
    settle([again, b], lambda: again.assignment() == kept)
    assert b.assignment() == b_before and [k for k, _ in timeline.kinds("b")] == ["assigned"]
    again.close()
    b.close()


def test_a_pattern_is_evaluated_by_the_coordinator_including_topics_created_later(
    coordinator: EmbeddedCoordinator, timeline: Timeline
) -> None:
    a = timeline.member(coordinator, "a", pattern=r"orders\..*")
    coordinator.create_topic("orders.eu", 2)
    a.ensure_active_group(20)
    settle([a], lambda: a.assignment() == {("orders.eu", 0), ("orders.eu", 1)})
    coordinator.create_topic("orders.us", 1)
    coordinator.create_topic("payments", 1)
    settle([a], lambda: ("orders.us", 0) in a.assignment())
    assert {t for t, _ in a.assignment()} == {"orders.eu", "orders.us"}
    a.close()


def test_a_member_whose_coordinator_is_gone_loses_its_partitions_before_its_session_ends(
    coordinator: EmbeddedCoordinator, timeline: Timeline
) -> None:
    a = timeline.member(coordinator, "a")
    a.ensure_active_group(20)
    stopped = time.monotonic()
    coordinator.close()
    settle([a], lambda: any(kind == "lost" for _, _, kind, _ in timeline.calls), timeout=10)
    ((when, _, _, lost),) = [c for c in timeline.calls if c[2] == "lost"]
    assert lost == frozenset(range(PARTITIONS)) and when - stopped < OPTIONS["session_timeout_ms"] / 1000
    assert a.assignment() == set() and a.generation_if_stable() is None
    a.close(timeout=1)


def test_settings_are_checked_where_they_are_given(
    coordinator: EmbeddedCoordinator, timeline: Timeline
) -> None:
    with pytest.raises(ConfigurationError, match="group_protocol must be one of classic, consumer"):
        ConsumerGroupMember("g", coordinator.bootstrap_servers, topics=["t"], group_protocol="eager")
    with pytest.raises(ConfigurationError, match="remote_assignor is for group_protocol='consumer'"):
        ConsumerGroupMember("g", coordinator.bootstrap_servers, topics=["t"], remote_assignor="range")
    member = timeline.member(coordinator, "a", remote_assignor="sticky-ish")
    with pytest.raises(GroupJoinError, match="UNSUPPORTED_ASSIGNOR") as refused:
        member.ensure_active_group(10)
    assert refused.value.error_name == "UNSUPPORTED_ASSIGNOR"
    member.close()
