"""Unit tests of the sans-IO group state machine (:mod:`coordinator_api.server._state`).

Each test is a scenario on a fake clock, checked against what Kafka's classic GroupCoordinator
(core/src/main/scala/kafka/coordinator/group/GroupCoordinator.scala) answers in the same case.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from _group_driver import (
    GROUP,
    RANGE,
    REBALANCE_MS,
    SESSION_MS,
    Driver,
    protocols_for,
)
from coordinator_consumer._protocol import CLASSIC_PAYLOADS
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from kafka.protocol.consumer import ConsumerProtocolSubscription

from coordinator_api import ConfigurationError, CoordinatorConfig
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._messages import (
    CommittedOffset,
    GroupDeleted,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeavingMember,
    MemberSnapshot,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDeleteResult,
    OffsetsCommitted,
    OffsetsDeleted,
    OffsetsExpired,
    SyncGroupResult,
    Topic,
)
from coordinator_api.server._store import SqliteStore

E = ErrorCode


def joined_ids(result: JoinGroupResult) -> list[str]:
    return [m.member_id for m in result.members]


# --- KIP-394: member id required --------------------------------------------------------------


def test_first_join_without_member_id_gets_member_id_required_then_joins_with_it() -> None:
    d = Driver(initial_rebalance_delay_ms=0)

    first = d.join("", client="a")
    assert first is not None
    assert first.error is E.MEMBER_ID_REQUIRED
    assert first.member_id == "a-1"
    assert first.generation_id == -1
    assert first.members == ()

    second = d.join("a-1", client="a")
    assert second is not None
    assert second.error is E.NONE
    assert second.member_id == "a-1"
    assert second.generation_id == 1
    assert second.leader == "a-1"
    assert second.protocol_type == "consumer"
    assert second.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in second.members] == [("a-1", b"range-meta")]
    assert d.state() is GroupState.COMPLETING_REBALANCE


def test_join_without_member_id_on_old_versions_joins_at_once() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    result = d.join("", client="a", version_requires_known_id=False)
    assert result is not None
    assert result.error is E.NONE
    assert result.member_id == "a-1"
    assert result.generation_id == 1


def test_join_with_unknown_member_id_is_rejected() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    result = d.join("never-issued")
    assert result is not None
    assert result.error is E.UNKNOWN_MEMBER_ID
    assert d.state() is GroupState.DEAD


def test_pending_member_that_never_returns_expires_and_the_rebalance_completes_without_it() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    formed = d.form_group(["a"])
    a = formed.ids["a"]

    pending = d.new_member_id(client="b")  # b got its id but never joins with it
    assert d.state() is GroupState.STABLE  # a pending member does not rebalance the group
    assert d.heartbeat(a, formed.generation) is E.NONE

    d.advance(1000)
    ref = d.join_ref(a, client="a")  # the leader rejoins: a rebalance that waits for b
    assert d.reply(ref) is None
    assert d.state() is GroupState.PREPARING_REBALANCE

    d.advance(SESSION_MS - 1000 - 1)  # b's pending deadline is its session timeout after t=0
    assert d.reply(ref) is None
    d.advance(1)
    result = d.reply(ref)
    assert result is not None
    assert result.error is E.NONE
    assert result.generation_id == formed.generation + 1
    assert joined_ids(result) == [a]
    assert d.events_of("expired")[0].member_id == pending

    late = d.join(pending, client="b")
    assert late is not None
    assert late.error is E.UNKNOWN_MEMBER_ID


def test_pending_member_ids_are_bounded_per_group_and_expired_ones_make_room() -> None:
    # A client asking for member ids by the thousand (empty member id, KIP-394) holds each for
    # its session: at most max_pending_members per group, then GROUP_MAX_SIZE_REACHED.
    d = Driver(initial_rebalance_delay_ms=0, max_pending_members=3)
    ids = [d.new_member_id(client=f"p{i}") for i in range(3)]
    assert len(set(ids)) == 3
    refused = d.join("", client="one-too-many")
    assert refused is not None and refused.error is E.GROUP_MAX_SIZE_REACHED and refused.member_id == ""
    assert d.new_member_id(client="x", group="another-group")  # the bound is per group
    # A pending id that joins, or expires, makes room again.
    assert d.join(ids[0], client="p0") is not None
    d.advance(SESSION_MS)
    again = d.join("", client="later")
    assert again is not None and again.error is E.MEMBER_ID_REQUIRED


def test_pending_member_leaving_lets_the_rebalance_complete() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    formed = d.form_group(["a"])
    a = formed.ids["a"]
    pending = d.new_member_id(client="b")
    ref = d.join_ref(a, client="a")
    assert d.reply(ref) is None

    left = d.leave(pending)
    assert left.members[0].error is E.NONE
    result = d.reply(ref)
    assert result is not None
    assert result.generation_id == formed.generation + 1
    assert joined_ids(result) == [a]


# --- initial rebalance delay ---------------------------------------------------------------


def test_first_join_completes_only_after_the_initial_delay() -> None:
    d = Driver(initial_rebalance_delay_ms=3000)
    a = d.new_member_id(client="a")
    ref = d.join_ref(a, client="a")
    assert d.reply(ref) is None
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.coordinator.next_deadline() == 3000

    d.advance(2999)
    assert d.reply(ref) is None
    d.advance(1)
    result = d.reply(ref)
    assert result is not None
    assert result.error is E.NONE
    assert result.generation_id == 1
    assert joined_ids(result) == [a]


def test_member_arriving_during_the_initial_delay_extends_it() -> None:
    d = Driver(initial_rebalance_delay_ms=3000)
    a = d.new_member_id(client="a")
    ref_a = d.join_ref(a, client="a")
    d.advance(1000)
    b = d.new_member_id(client="b")
    ref_b = d.join_ref(b, client="b")

    d.advance_to(3000)
    assert d.reply(ref_a) is None  # extended by one more delay: b arrived during the first one
    assert d.reply(ref_b) is None
    d.advance_to(5999)
    assert d.reply(ref_a) is None
    d.advance_to(6000)
    ra, rb = d.reply(ref_a), d.reply(ref_b)
    assert ra is not None
    assert rb is not None
    assert ra.generation_id == rb.generation_id == 1
    assert ra.leader == rb.leader == a
    assert joined_ids(ra) == [a, b]
    assert rb.members == ()


def test_initial_delay_extensions_are_bounded_by_the_rebalance_timeout() -> None:
    d = Driver(initial_rebalance_delay_ms=3000)
    refs = []
    for t, name in ((0, "a"), (1000, "b"), (4000, "c")):
        d.advance_to(t)
        member = d.new_member_id(client=name, rebalance=5000)
        refs.append(d.join_ref(member, client=name, rebalance=5000))

    d.advance_to(4999)
    assert all(d.reply(r) is None for r in refs)
    d.advance_to(5000)  # c arrived during the extension, but the rebalance timeout is reached
    results = [d.reply(r) for r in refs]
    assert all(r is not None and r.generation_id == 1 for r in results)
    assert len(results[0].members) == 3


def test_without_initial_delay_the_join_completes_as_soon_as_everyone_joined() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    a = d.new_member_id(client="a")
    first = d.join(a, client="a")
    assert first is not None
    assert first.generation_id == 1  # alone: completes in the same call
    assert d.sync(a, 1, assignments={a: b"x"}) == SyncGroupResult(
        error=E.NONE, protocol_type="consumer", protocol_name="range", assignment=b"x"
    )

    b = d.new_member_id(client="b")
    ref_b = d.join_ref(b, client="b")
    assert d.reply(ref_b) is None  # waits for a to rejoin
    assert d.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS
    ref_a = d.join_ref(a, client="a")
    ra, rb = d.reply(ref_a), d.reply(ref_b)
    assert ra is not None
    assert rb is not None
    assert ra.generation_id == rb.generation_id == 2
    assert joined_ids(ra) == [a, b]


# --- a full rebalance ----------------------------------------------------------------------


def test_three_member_rebalance_leader_assigns_and_every_member_gets_its_assignment() -> None:
    d = Driver(initial_rebalance_delay_ms=3000)
    ids, refs = {}, {}
    for name in "abc":
        ids[name] = d.new_member_id(client=name)
        refs[name] = d.join_ref(ids[name], client=name, protocols=protocols_for(name, "range", "roundrobin"))
    assert all(d.reply(r) is None for r in refs.values())
    d.advance(3000)  # b and c arrived during the delay: it is extended once
    assert all(d.reply(r) is None for r in refs.values())
    d.advance(3000)

    results = {name: d.reply(ref) for name, ref in refs.items()}
    assert all(r is not None and r.error is E.NONE for r in results.values())
    assert {r.generation_id for r in results.values()} == {1}
    assert {r.leader for r in results.values()} == {ids["a"]}
    assert {r.protocol_name for r in results.values()} == {"range"}
    assert [(m.member_id, m.metadata) for m in results["a"].members] == [
        (ids["a"], b"range:a"),
        (ids["b"], b"range:b"),
        (ids["c"], b"range:c"),
    ]
    assert results["b"].members == ()
    assert results["c"].members == ()
    assert d.state() is GroupState.COMPLETING_REBALANCE

    sync_b = d.sync_ref(ids["b"], 1)
    sync_c = d.sync_ref(ids["c"], 1)
    assert d.reply(sync_b) is None  # followers wait for the leader's assignment
    assert d.reply(sync_c) is None
    assert d.heartbeat(ids["b"], 1) is E.NONE
    assert not d.writes_of(GroupSnapshot)

    assignments = {ids[n]: f"for-{n}".encode() for n in "abc"}
    leader_sync = d.sync(ids["a"], 1, assignments=assignments)
    assert leader_sync is not None
    assert leader_sync.error is E.NONE
    assert leader_sync.assignment == b"for-a"
    assert leader_sync.protocol_name == "range"
    assert d.reply(sync_b) == SyncGroupResult(
        error=E.NONE, protocol_type="consumer", protocol_name="range", assignment=b"for-b"
    )
    assert d.reply(sync_c).assignment == b"for-c"
    assert d.state() is GroupState.STABLE

    (snapshot,) = d.writes_of(GroupSnapshot)
    assert snapshot.generation_id == 1
    assert snapshot.leader_id == ids["a"]
    assert snapshot.protocol_name == "range"
    assert {m.member_id: m.assignment for m in snapshot.members} == assignments
    for name in "abc":
        assert d.heartbeat(ids[name], 1) is E.NONE


def test_follower_syncing_after_the_leader_gets_its_assignment_at_once() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])  # form_group syncs the leader last; check the other order
    follower = formed.followers()[0]
    again = d.sync(follower, formed.generation)
    assert again is not None
    assert again.assignment == formed.assignments[follower]


def test_sync_group_errors() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    assert d.sync(a, gen + 1).error is E.ILLEGAL_GENERATION
    assert d.sync("ghost", gen).error is E.UNKNOWN_MEMBER_ID
    assert d.sync(a, gen, group="other").error is E.UNKNOWN_MEMBER_ID
    assert d.sync(a, gen, protocol_name="roundrobin").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.sync(a, gen, protocol_type="connect").error is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.sync(a, gen, protocol_type="consumer", protocol_name="range").error is E.NONE


# --- protocol selection ----------------------------------------------------------------------


def test_protocol_with_most_first_choice_votes_among_common_protocols_wins() -> None:
    d = Driver()
    formed = d.form_group(
        ["a", "b", "c"],
        protocols={
            "a": protocols_for("a", "range", "roundrobin"),
            "b": protocols_for("b", "roundrobin", "range"),
            "c": protocols_for("c", "sticky", "roundrobin", "range"),  # sticky: c only
        },
    )
    leader_result = formed.join_results["a"]
    assert leader_result.protocol_name == "roundrobin"
    assert {m.member_id: m.metadata for m in leader_result.members} == {
        formed.ids["a"]: b"roundrobin:a",
        formed.ids["b"]: b"roundrobin:b",
        formed.ids["c"]: b"roundrobin:c",
    }
    assert d.describe().protocol_name == "roundrobin"


@pytest.mark.parametrize(
    ("protocol_type", "protocols"),
    [
        ("consumer", (("roundrobin", b""),)),  # nothing in common with the group
        ("connect", RANGE),  # another protocol type
        ("consumer", ()),
        ("", RANGE),
    ],
)
def test_member_without_a_common_protocol_is_rejected(
    protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
) -> None:
    d = Driver()
    formed = d.form_group(["a"])
    result = d.join("", client="b", protocol_type=protocol_type, protocols=protocols)
    assert result is not None
    assert result.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.state() is GroupState.STABLE
    assert d.heartbeat(formed.ids["a"], formed.generation) is E.NONE
    assert d.member_ids() == {formed.ids["a"]}


@pytest.mark.parametrize(("protocol_type", "protocols"), [("consumer", ()), ("", RANGE)])
def test_first_member_without_protocols_is_rejected_and_creates_no_group(
    protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
) -> None:
    d = Driver()
    result = d.join("", protocol_type=protocol_type, protocols=protocols)
    assert result is not None
    assert result.error is E.INCONSISTENT_GROUP_PROTOCOL
    assert d.state() is GroupState.DEAD
    assert d.list_groups().groups == ()


# --- request validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session", "expected"),
    [
        (5999, E.INVALID_SESSION_TIMEOUT),
        (6000, E.MEMBER_ID_REQUIRED),
        (1_800_000, E.MEMBER_ID_REQUIRED),
        (1_800_001, E.INVALID_SESSION_TIMEOUT),
    ],
)
def test_session_timeout_must_be_within_the_configured_bounds(session: int, expected: ErrorCode) -> None:
    d = Driver()
    result = d.join("", session=session)
    assert result is not None
    assert result.error is expected


def test_session_timeout_bounds_come_from_the_config() -> None:
    d = Driver(min_session_timeout_ms=100, max_session_timeout_ms=200)
    assert d.join("", session=99).error is E.INVALID_SESSION_TIMEOUT
    assert d.join("", session=201).error is E.INVALID_SESSION_TIMEOUT
    assert d.join("", session=150).error is E.MEMBER_ID_REQUIRED


def test_empty_group_id_is_invalid() -> None:
    d = Driver()
    result = d.join("", group="")
    assert result is not None
    assert result.error is E.INVALID_GROUP_ID
    assert d.list_groups().groups == ()


@pytest.mark.parametrize("requires_known_id", [True, False])
def test_group_max_size_rejects_new_members(requires_known_id: bool) -> None:
    d = Driver(max_group_size=2)
    formed = d.form_group(["a", "b"])
    result = d.join("", client="c", version_requires_known_id=requires_known_id)
    assert result is not None
    assert result.error is E.GROUP_MAX_SIZE_REACHED
    assert d.state() is GroupState.STABLE
    assert d.member_ids() == set(formed.ids.values())
    assert d.heartbeat(formed.ids["a"], formed.generation) is E.NONE


def test_while_rebalancing_a_full_group_counts_the_members_waiting_in_the_join() -> None:
    """Kafka's acceptJoiningMember: during PreparingRebalance the limit is on the members that
    have rejoined, so a newcomer gets in while an old member has not rejoined yet; that one is
    then removed at the end of the join (it did not rejoin in time) or turned away."""
    d = Driver(max_group_size=2, initial_rebalance_delay_ms=0)
    formed = d.form_group(["a", "b"])
    a, b = formed.ids["a"], formed.ids["b"]
    a_joins = d.join_ref(a, client="a", protocols=(("range", b"changed"),))  # a rebalance
    assert d.state() is GroupState.PREPARING_REBALANCE
    c_joins = d.join_ref("", client="c", version_requires_known_id=False)  # 1 waiting < 2: in
    assert d.reply(c_joins) is None
    late = d.join(b, client="b")  # 2 waiting: b, not waiting itself, is turned away and removed
    assert late is not None and (late.error, late.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    # Everyone left is in the join: it completes with a and c.
    assert {r.error for r in (d.reply(a_joins), d.reply(c_joins))} == {E.NONE}
    assert d.member_ids() == {a, d.reply(c_joins).member_id}


def test_a_static_member_restarting_into_a_full_stable_group_is_turned_away() -> None:
    """Kafka counts a static member that restarts under a new member id as a newcomer: in a
    full Stable group it gets GROUP_MAX_SIZE_REACHED (fatal to Java's consumer)."""
    d = Driver(max_group_size=2)
    formed = d.form_group(["s1", "s2"], static=True)
    restarted = d.join("", client="s1", instance="s1")
    assert restarted is not None and restarted.error is E.GROUP_MAX_SIZE_REACHED
    assert d.member_ids() == set(formed.ids.values())
    assert d.state() is GroupState.STABLE


def test_pending_member_ids_do_not_count_toward_the_group_max_size() -> None:
    d = Driver(max_group_size=2)
    d.form_group(["a"])
    d.new_member_id(client="crashed")  # never comes back
    result = d.join("", client="c")
    assert result is not None
    assert result.error is E.MEMBER_ID_REQUIRED


# --- heartbeats --------------------------------------------------------------------------------


def test_heartbeat_answers() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    assert d.heartbeat(a, gen) is E.NONE
    assert d.heartbeat(a, gen - 1) is E.ILLEGAL_GENERATION
    assert d.heartbeat(a, gen + 1) is E.ILLEGAL_GENERATION
    assert d.heartbeat("ghost", gen) is E.UNKNOWN_MEMBER_ID
    assert d.heartbeat(a, gen, group="unknown-group") is E.UNKNOWN_MEMBER_ID

    c = d.new_member_id(client="c")
    ref_c = d.join_ref(c, client="c")
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS
    ref_a = d.join_ref(a, client="a")
    ref_b = d.join_ref(formed.ids["b"], client="b")
    assert {d.reply(r).generation_id for r in (ref_a, ref_b, ref_c)} == {gen + 1}
    assert d.state() is GroupState.COMPLETING_REBALANCE
    assert d.heartbeat(a, gen + 1) is E.NONE  # CompletingRebalance: heartbeats are fine
    assert d.heartbeat(a, gen) is E.ILLEGAL_GENERATION


def heartbeat_ref(d: Driver, member_id: str, generation: int) -> int:
    return d.send(
        Heartbeat(group_id=GROUP, generation_id=generation, member_id=member_id, group_instance_id=None)
    )


def test_only_a_stable_members_heartbeat_is_renewed_without_the_rest_of_its_path() -> None:
    # What the server answers before handle (GroupCoordinator.renew): NONE with the session
    # renewed, as handle answers it; anything else is left to handle.
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    beat = Heartbeat(group_id=GROUP, generation_id=gen, member_id=a, group_instance_id=None)
    assert d.coordinator.renew(beat, d.now + 5) == HeartbeatResult(error=E.NONE)
    assert d.coordinator._groups[GROUP].members[a].session_deadline == d.now + 5 + SESSION_MS
    for other in (
        Heartbeat(group_id=GROUP, generation_id=gen + 1, member_id=a, group_instance_id=None),
        Heartbeat(group_id=GROUP, generation_id=gen, member_id="nobody", group_instance_id=None),
        Heartbeat(group_id="other", generation_id=gen, member_id=a, group_instance_id=None),
    ):
        assert d.coordinator.renew(other, d.now + 9) is None, other
    assert d.coordinator._groups[GROUP].members[a].session_deadline == d.now + 5 + SESSION_MS
    d.join_ref(d.new_member_id(client="c"), client="c")  # a rebalance: REBALANCE_IN_PROGRESS is handle's
    assert d.coordinator.renew(beat, d.now) is None
    assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS
    held = Driver(heartbeat_hold_ms=2000)
    formed = held.form_group(["a"])
    beat = Heartbeat(
        group_id=GROUP, generation_id=formed.generation, member_id=formed.ids["a"], group_instance_id=None
    )
    assert held.coordinator.renew(beat, held.now) is None


def test_held_heartbeat_is_answered_when_the_hold_passes() -> None:
    d = Driver(heartbeat_hold_ms=2000)
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    ref = heartbeat_ref(d, a, gen)
    assert d.reply(ref) is None  # held
    d.advance(1999)
    assert d.reply(ref) is None
    d.advance(1)
    assert d.reply(ref) == HeartbeatResult(error=E.NONE)


def test_held_heartbeat_never_outlasts_a_third_of_the_session() -> None:
    d = Driver(heartbeat_hold_ms=60_000)
    formed = d.form_group(["a", "b"])
    ref = heartbeat_ref(d, formed.ids["a"], formed.generation)
    d.advance(SESSION_MS // 3 - 1)
    assert d.reply(ref) is None
    d.advance(1)
    assert d.reply(ref) == HeartbeatResult(error=E.NONE)


def test_a_held_heartbeat_keeps_no_session_alive_past_its_arrival() -> None:
    """A paused member's last heartbeat is held and answered; its session still ends one
    session after that heartbeat arrived (an open connection is no sign of life)."""
    d = Driver(heartbeat_hold_ms=60_000)
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    arrived = d.now
    ref = heartbeat_ref(d, a, gen)  # a's last heartbeat; then a is paused
    while d.now < arrived + SESSION_MS - SESSION_MS // 3:  # b keeps heartbeating
        ref_b = heartbeat_ref(d, b, gen)
        d.advance(SESSION_MS // 3)
        assert d.reply(ref_b) == HeartbeatResult(error=E.NONE)
    assert d.reply(ref) == HeartbeatResult(error=E.NONE)  # answered when its hold passed
    d.advance_to(arrived + SESSION_MS - 1)
    assert a in d.member_ids()
    d.advance_to(arrived + SESSION_MS)
    assert a not in d.member_ids()


def test_held_heartbeats_learn_of_a_rebalance_at_once() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    ref_a, ref_b = heartbeat_ref(d, a, gen), heartbeat_ref(d, b, gen)
    d.advance(10)
    c = d.new_member_id(client="c")
    d.join_ref(c, client="c")
    assert d.reply(ref_a) == HeartbeatResult(error=E.REBALANCE_IN_PROGRESS)
    assert d.reply(ref_b) == HeartbeatResult(error=E.REBALANCE_IN_PROGRESS)


def test_a_leaving_member_releases_the_others_held_heartbeats_and_its_own() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    ref_a, ref_b = heartbeat_ref(d, a, gen), heartbeat_ref(d, b, gen)
    d.leave(a)
    assert d.reply(ref_a) == HeartbeatResult(error=E.UNKNOWN_MEMBER_ID)
    assert d.reply(ref_b) == HeartbeatResult(error=E.REBALANCE_IN_PROGRESS)


def test_held_heartbeat_is_released_by_the_next_request_on_its_connection() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"])
    ref = heartbeat_ref(d, formed.ids["a"], formed.generation)
    d.advance(5)
    assert d.release(ref) == [(ref, HeartbeatResult(error=E.NONE))]
    assert d.release(ref) == []  # released once; a second release finds nothing
    d.advance(10_000)  # its timer finds nothing to answer either (the driver rejects double replies)


def test_member_with_a_held_heartbeat_is_alive_and_not_expired() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"], session=SESSION_MS)
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    for _ in range(8):  # both keep a heartbeat held all the time, well past one session
        refs = [heartbeat_ref(d, m, gen) for m in (a, b)]
        d.advance(SESSION_MS // 3)
        assert all(d.reply(r) == HeartbeatResult(error=E.NONE) for r in refs)
    assert d.member_ids() == {a, b}
    assert d.state() is GroupState.STABLE


def test_heartbeats_are_not_held_outside_a_stable_group() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    c = d.new_member_id(client="c")
    d.join_ref(c, client="c")
    assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS  # answered at once


def test_abandoned_held_heartbeat_gets_no_answer_and_the_session_counts_from_its_arrival() -> None:
    d = Driver(heartbeat_hold_ms=5000)
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    arrived = d.now
    ref_a = heartbeat_ref(d, a, gen)
    d.advance(1000)
    d.abandon(ref_a)  # a's connection closes while its heartbeat is held
    for _ in range(2):  # b's heartbeats are held and answered
        ref_b = heartbeat_ref(d, b, gen)
        d.advance(SESSION_MS // 3)
        assert d.reply(ref_b) == HeartbeatResult(error=E.NONE)
    d.advance_to(arrived + SESSION_MS - 1)
    assert a in d.member_ids()
    d.advance_to(arrived + SESSION_MS)
    assert d.member_ids() == {b}
    assert d.reply(ref_a) is None


# --- sessions and timeouts ---------------------------------------------------------------------


def test_member_that_stops_heartbeating_is_removed_after_its_session_timeout() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    start = d.now
    for _ in range(3):  # b keeps heartbeating, a is silent
        d.advance(3000)
        assert d.heartbeat(b, gen) is E.NONE
    d.advance_to(start + SESSION_MS - 1)
    assert d.member_ids() == {a, b}
    assert d.state() is GroupState.STABLE

    d.advance_to(start + SESSION_MS)
    assert d.member_ids() == {b}
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert [e.member_id for e in d.events_of("expired")] == [a]
    assert d.heartbeat(a, gen) is E.UNKNOWN_MEMBER_ID
    assert d.heartbeat(b, gen) is E.REBALANCE_IN_PROGRESS

    result = d.join(b, client="b")
    assert result is not None
    assert result.generation_id == gen + 1
    assert result.leader == b
    assert joined_ids(result) == [b]


def test_member_parked_in_join_group_is_not_expired_by_its_session() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    ref_b = d.join_ref(b, client="b", protocols=(("range", b"new-metadata"),))
    assert d.reply(ref_b) is None
    assert d.state() is GroupState.PREPARING_REBALANCE

    for _ in range(10):  # 30 s: three of b's sessions pass while b waits in JoinGroup
        d.advance(3000)
        assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS
    assert d.member_ids() == {a, b}
    assert d.reply(ref_b) is None

    ra = d.join(a, client="a")
    rb = d.reply(ref_b)
    assert ra is not None
    assert rb is not None
    assert ra.generation_id == rb.generation_id == gen + 1
    assert joined_ids(ra) == [a, b]
    assert dict((m.member_id, m.metadata) for m in ra.members)[b] == b"new-metadata"


def test_rebalance_timeout_removes_members_that_did_not_rejoin() -> None:
    d = Driver()
    formed = d.form_group(["a", "b", "c"], session=30_000, rebalance=20_000)
    a, b, c, gen = formed.ids["a"], formed.ids["b"], formed.ids["c"], formed.generation
    assert formed.leader == a
    start = d.now
    ref_a = d.join_ref(a, client="a", session=30_000, rebalance=20_000)  # the leader rejoins
    ref_b = d.join_ref(b, client="b", session=30_000, rebalance=20_000)
    for _ in range(6):  # c stays alive by heartbeats but does not rejoin
        d.advance(3000)
        assert d.heartbeat(c, gen) is E.REBALANCE_IN_PROGRESS
    d.advance_to(start + 20_000 - 1)
    assert d.reply(ref_a) is None

    d.advance_to(start + 20_000)
    ra, rb = d.reply(ref_a), d.reply(ref_b)
    assert ra is not None
    assert rb is not None
    assert ra.generation_id == rb.generation_id == gen + 1
    assert joined_ids(ra) == [a, b]
    assert d.member_ids() == {a, b}
    assert d.heartbeat(c, gen) is E.UNKNOWN_MEMBER_ID


def test_member_that_does_not_sync_within_the_rebalance_timeout_is_removed() -> None:
    d = Driver()
    kw = {"session": 30_000, "rebalance": 20_000}
    a, b = d.new_member_id(client="a", **kw), d.new_member_id(client="b", **kw)
    refs = [d.join_ref(a, client="a", **kw), d.join_ref(b, client="b", **kw)]
    d.advance(6000)  # the initial delay, extended once for b
    assert all(d.reply(r).generation_id == 1 for r in refs)
    joined_at = d.now
    assert d.sync(a, 1, assignments={a: b"A", b: b"B"}).error is E.NONE
    assert d.state() is GroupState.STABLE

    for _ in range(6):  # b heartbeats but never sends SyncGroup
        d.advance(3000)
        assert d.heartbeat(b, 1) is E.NONE
    d.advance_to(joined_at + 20_000 - 1)
    assert d.member_ids() == {a, b}
    d.advance_to(joined_at + 20_000)
    assert d.member_ids() == {a}
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.heartbeat(b, 1) is E.UNKNOWN_MEMBER_ID
    assert d.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS
    result = d.join(a, client="a", **kw)
    assert result.generation_id == 2
    assert joined_ids(result) == [a]


def test_leader_that_never_syncs_is_removed_and_waiting_followers_are_told_to_rejoin() -> None:
    d = Driver()
    kw = {"session": 30_000, "rebalance": 20_000}
    a, b = d.new_member_id(client="a", **kw), d.new_member_id(client="b", **kw)
    refs = [d.join_ref(a, client="a", **kw), d.join_ref(b, client="b", **kw)]
    d.advance(6000)  # the initial delay, extended once for b
    assert d.reply(refs[0]).leader == a
    sync_b = d.sync_ref(b, 1)
    assert d.reply(sync_b) is None

    d.advance(20_000)
    assert d.reply(sync_b) == SyncGroupResult(error=E.REBALANCE_IN_PROGRESS)
    assert d.member_ids() == {b}
    assert d.state() is GroupState.PREPARING_REBALANCE
    result = d.join(b, client="b", **kw)
    assert result.generation_id == 2
    assert result.leader == b


# --- leaving ------------------------------------------------------------------------------------


def test_leader_leaving_gives_the_next_generation_a_new_leader() -> None:
    d = Driver()
    formed = d.form_group(["a", "b", "c"])
    a, b, c, gen = formed.ids["a"], formed.ids["b"], formed.ids["c"], formed.generation
    assert formed.leader == a
    assert d.leave(a).members[0].error is E.NONE
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.heartbeat(b, gen) is E.REBALANCE_IN_PROGRESS

    ref_c = d.join_ref(c, client="c")
    assert d.reply(ref_c) is None  # waits for b
    rb = d.join(b, client="b")
    rc = d.reply(ref_c)
    assert rb is not None
    assert rc is not None
    assert rb.generation_id == rc.generation_id == gen + 1
    # The first of the others to have joined the group leads, whichever rejoins first (Kafka:
    # the first in its hash map's order of member ids, so either).
    assert rb.leader == rc.leader == b
    assert sorted(joined_ids(rb)) == sorted([b, c])


def test_last_member_leaving_empties_the_group_and_bumps_the_generation() -> None:
    d = Driver()
    formed = d.form_group(["a"])
    a, gen = formed.ids["a"], formed.generation
    d.writes.clear()
    assert d.leave(a).members[0].error is E.NONE

    assert d.state() is GroupState.EMPTY
    described = d.describe()
    assert described.generation_id == gen + 1
    assert described.members == ()
    (snapshot,) = d.writes_of(GroupSnapshot)
    assert snapshot.generation_id == gen + 1
    assert snapshot.members == ()
    assert d.heartbeat(a, gen) is E.UNKNOWN_MEMBER_ID

    # The next first join waits for the initial delay again and starts from the kept generation.
    b = d.new_member_id(client="b")
    ref = d.join_ref(b, client="b")
    assert d.reply(ref) is None
    d.advance(3000)
    assert d.reply(ref).generation_id == gen + 2


def test_leave_group_batch_answers_each_member() -> None:
    d = Driver()
    formed = d.form_group(["a", "b", "c"])
    a, b, c, gen = formed.ids["a"], formed.ids["b"], formed.ids["c"], formed.generation

    result = d.leave(b, "ghost", c)
    assert result.error is E.NONE
    assert [(m.member_id, m.error) for m in result.members] == [
        (b, E.NONE),
        ("ghost", E.UNKNOWN_MEMBER_ID),
        (c, E.NONE),
    ]
    assert d.member_ids() == {a}
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.heartbeat(b, gen) is E.UNKNOWN_MEMBER_ID
    assert [e.member_id for e in d.events_of("left")] == [b, c]


def test_leave_group_of_an_unknown_group() -> None:
    d = Driver()
    result = d.leave("x", ("", "inst"), group="nowhere")
    assert result.error is E.NONE
    assert [(m.member_id, m.group_instance_id, m.error) for m in result.members] == [
        ("x", None, E.UNKNOWN_MEMBER_ID),
        ("", "inst", E.UNKNOWN_MEMBER_ID),
    ]


def test_leave_by_group_instance_id_with_empty_member_id() -> None:
    d = Driver()
    formed = d.form_group(["s1", "s2"], static=True)
    result = d.leave(("", "s2"), ("", "not-a-member"))
    assert [(m.member_id, m.group_instance_id, m.error) for m in result.members] == [
        ("", "s2", E.NONE),
        ("", "not-a-member", E.UNKNOWN_MEMBER_ID),
    ]
    assert d.member_ids() == {formed.ids["s1"]}
    assert d.heartbeat(formed.ids["s2"], formed.generation, instance="s2") is E.UNKNOWN_MEMBER_ID
    assert d.state() is GroupState.PREPARING_REBALANCE


def test_leave_with_a_fenced_member_id_is_rejected() -> None:
    d = Driver()
    formed = d.form_group(["s1", "s2"], static=True)
    result = d.leave(("not-s1s-id", "s1"))
    assert result.members[0].error is E.FENCED_INSTANCE_ID
    assert d.member_ids() == set(formed.ids.values())
    assert d.state() is GroupState.STABLE


def test_leave_of_a_member_parked_in_join_group_answers_its_join() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    ref = d.join_ref(formed.ids["b"], client="b", protocols=(("range", b"changed"),))
    assert d.reply(ref) is None
    d.leave(formed.ids["b"])
    assert d.reply(ref).error is E.UNKNOWN_MEMBER_ID


# --- static membership (KIP-345) ------------------------------------------------------------------


def test_static_member_rejoining_while_stable_keeps_the_generation_without_a_rebalance() -> None:
    d = Driver()
    formed = d.form_group(["s1", "s2"], static=True)
    s1, old_s2, gen = formed.ids["s1"], formed.ids["s2"], formed.generation
    assert formed.leader == s1
    d.writes.clear()

    result = d.join("", client="s2", instance="s2")  # s2 restarted: it lost its member id
    assert result is not None
    assert result.error is E.NONE
    new_s2 = result.member_id
    assert new_s2 not in {"", old_s2}
    assert result.generation_id == gen
    assert result.leader == s1
    assert result.members == ()
    assert result.protocol_name == "range"
    assert d.state() is GroupState.STABLE
    assert d.heartbeat(s1, gen) is E.NONE  # nobody else rebalances
    assert d.member_ids() == {s1, new_s2}
    assert d.writes_of(GroupSnapshot)[-1].generation_id == gen
    assert {m.member_id for m in d.writes_of(GroupSnapshot)[-1].members} == {s1, new_s2}

    back = d.sync(new_s2, gen, instance="s2")
    assert back is not None
    assert back.error is E.NONE
    assert back.assignment == formed.assignments[old_s2]
    assert d.heartbeat(new_s2, gen, instance="s2") is E.NONE

    # The old member id is fenced from now on.
    assert d.heartbeat(old_s2, gen, instance="s2") is E.FENCED_INSTANCE_ID
    assert d.sync(old_s2, gen, instance="s2").error is E.FENCED_INSTANCE_ID
    d.create_topics(("t", 1, 1))
    assert d.commit(old_s2, gen, {("t", 0): 5}, instance="s2") == {("t", 0): E.FENCED_INSTANCE_ID}
    assert d.join(old_s2, client="s2", instance="s2").error is E.FENCED_INSTANCE_ID
    assert d.state() is GroupState.STABLE
    assert [e.member_id for e in d.events_of("fenced")] == [old_s2]


@pytest.mark.parametrize("v9", [True, False], ids=["v9+ skip assignment", "before v9"])
def test_static_leader_rejoining_while_stable_keeps_the_assignment(v9: bool) -> None:
    """Kafka's updateStaticMemberThenRebalanceOrCompleteJoin: from v9 (KIP-814) the restarted
    leader learns it leads, with every member, and is told to skip the assignment; before, it
    is told the old leader id, so it does not compute one. Either way, no rebalance."""
    d = Driver()
    formed = d.form_group(["s1", "s2"], static=True)
    old_s1, s2, gen = formed.ids["s1"], formed.ids["s2"], formed.generation
    assert formed.leader == old_s1

    result = d.join("", client="s1", instance="s1", skip_assignment_supported=v9)
    assert result is not None
    assert result.error is E.NONE
    new_s1 = result.member_id
    assert new_s1 != old_s1
    assert result.generation_id == gen
    if v9:
        assert (result.leader, result.skip_assignment) == (new_s1, True)
        assert sorted(joined_ids(result)) == sorted([new_s1, s2])
    else:
        assert (result.leader, result.skip_assignment, result.members) == (old_s1, False, ())
    assert d.state() is GroupState.STABLE
    assert d.heartbeat(s2, gen) is E.NONE
    assert d.sync(new_s1, gen, instance="s1").assignment == formed.assignments[old_s1]

    # It is still the group's leader for the next generation.
    ref = d.join_ref(s2, client="s2", instance="s2", protocols=(("range", b"changed"),))
    r1 = d.join(new_s1, client="s1", instance="s1")
    r2 = d.reply(ref)
    assert r1.generation_id == r2.generation_id == gen + 1
    assert r1.leader == r2.leader == new_s1
    assert sorted(joined_ids(r1)) == sorted([new_s1, s2])


def test_static_member_rejoining_with_changed_protocols_triggers_a_rebalance() -> None:
    d = Driver()
    both = {n: protocols_for(n, "range", "roundrobin") for n in ("s1", "s2")}
    formed = d.form_group(["s1", "s2"], static=True, protocols=both)
    s1, gen = formed.ids["s1"], formed.generation
    assert formed.join_results["s1"].protocol_name == "range"

    ref = d.join_ref("", client="s2", instance="s2", protocols=protocols_for("s2", "roundrobin"))
    assert d.reply(ref) is None
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.heartbeat(s1, gen) is E.REBALANCE_IN_PROGRESS
    r1 = d.join(s1, client="s1", instance="s1", protocols=both["s1"])
    r2 = d.reply(ref)
    assert r1.generation_id == r2.generation_id == gen + 1
    assert r1.protocol_name == r2.protocol_name == "roundrobin"
    assert r2.member_id != formed.ids["s2"]


def test_static_member_rejoining_during_a_rebalance_replaces_its_parked_join() -> None:
    d = Driver()
    formed = d.form_group(["s1", "s2"], static=True)
    s1, old_s2 = formed.ids["s1"], formed.ids["s2"]
    old_ref = d.join_ref(old_s2, client="s2", instance="s2", protocols=(("range", b"v2"),))
    assert d.state() is GroupState.PREPARING_REBALANCE
    new_ref = d.join_ref("", client="s2", instance="s2", protocols=(("range", b"v2"),))
    assert d.reply(old_ref) == JoinGroupResult(error=E.FENCED_INSTANCE_ID, member_id=old_s2)
    assert d.reply(new_ref) is None
    r1 = d.join(s1, client="s1", instance="s1")
    r2 = d.reply(new_ref)
    assert r1.generation_id == r2.generation_id == formed.generation + 1
    assert sorted(joined_ids(r1)) == sorted([s1, r2.member_id])


def test_static_member_that_did_not_rejoin_is_kept_at_the_rebalance_timeout() -> None:
    d = Driver()
    kw = {"session": 60_000, "rebalance": 20_000}
    formed = d.form_group(["s1", "s2"], static=True, **kw)
    s1, s2 = formed.ids["s1"], formed.ids["s2"]
    ref = d.join_ref(s1, client="s1", instance="s1", **kw)  # the leader rejoins, s2 does not
    d.advance(20_000)
    result = d.reply(ref)
    assert result is not None
    assert result.generation_id == formed.generation + 1
    assert d.member_ids() == {s1, s2}
    assert sorted(joined_ids(result)) == sorted([s1, s2])


# --- offsets --------------------------------------------------------------------------------------


def offsets_driver() -> Driver:
    d = Driver()
    d.create_topics(("t", 2, 1), ("u", 1, 1))
    return d


def test_offset_commit_from_the_current_generation_is_stored_and_fetched() -> None:
    d = offsets_driver()
    formed = d.form_group(["a", "b"])
    a, gen = formed.ids["a"], formed.generation
    d.writes.clear()
    committed = (
        CommittedOffset(topic="t", partition=0, offset=10, leader_epoch=3, metadata="m"),
        CommittedOffset(topic="t", partition=1, offset=20),
    )
    assert d.commit(a, gen, committed) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert d.writes == [OffsetsCommitted(group_id=GROUP, offsets=committed)]

    fetched = d.fetched([("t", 0), ("t", 1), ("u", 0)])
    assert (fetched["t", 0].offset, fetched["t", 0].leader_epoch, fetched["t", 0].metadata) == (10, 3, "m")
    assert fetched["t", 1].offset == 20
    assert (fetched["u", 0].offset, fetched["u", 0].leader_epoch) == (-1, -1)
    assert fetched["u", 0].error is E.NONE

    assert d.commit(a, gen, {("t", 0): 11}) == {("t", 0): E.NONE}
    assert d.fetched([("t", 0)])["t", 0].offset == 11


def test_offset_fetch_without_partitions_returns_every_committed_offset() -> None:
    d = offsets_driver()
    assert d.commit("", -1, {("u", 0): 7, ("t", 1): 5, ("t", 0): 3}) == {
        ("u", 0): E.NONE,
        ("t", 1): E.NONE,
        ("t", 0): E.NONE,
    }
    result = d.fetch(None)
    assert [(o.topic, o.partition, o.offset) for o in result.offsets] == [
        ("t", 0, 3),
        ("t", 1, 5),
        ("u", 0, 7),
    ]
    assert d.fetch(None, group="nobody").offsets == ()
    assert [o.offset for o in d.fetch([("t", 0)], group="nobody").offsets] == [-1]


def test_offset_commit_from_an_older_generation_is_illegal() -> None:
    d = offsets_driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    ref = d.join_ref(b, client="b", protocols=(("range", b"changed"),))
    d.join(a, client="a")
    assert d.reply(ref).generation_id == gen + 1
    assert d.commit(a, gen, {("t", 0): 1}) == {("t", 0): E.ILLEGAL_GENERATION}
    assert d.fetched([("t", 0)])["t", 0].offset == -1


def test_offset_commit_from_an_expired_member_is_rejected() -> None:
    d = offsets_driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    for _ in range(4):  # only b heartbeats: a is a zombie after its session
        d.advance(3000)
        d.heartbeat(b, gen)
    assert d.member_ids() == {b}
    assert d.commit(a, gen, {("t", 0): 1}) == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert d.fetched([("t", 0)])["t", 0].offset == -1


def test_offset_commit_during_completing_rebalance_is_rejected() -> None:
    d = offsets_driver()
    a = d.new_member_id(client="a")
    ref = d.join_ref(a, client="a")
    d.advance(3000)
    assert d.reply(ref).generation_id == 1
    assert d.state() is GroupState.COMPLETING_REBALANCE
    assert d.commit(a, 1, {("t", 0): 1}) == {("t", 0): E.REBALANCE_IN_PROGRESS}


def test_offset_commit_during_preparing_rebalance_with_the_current_generation_is_accepted() -> None:
    d = offsets_driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    d.join_ref(b, client="b", protocols=(("range", b"changed"),))
    assert d.state() is GroupState.PREPARING_REBALANCE
    # a revokes partitions (cooperative) and commits before it rejoins
    assert d.commit(a, gen, {("t", 0): 42}) == {("t", 0): E.NONE}
    assert d.fetched([("t", 0)])["t", 0].offset == 42


def test_offset_commit_with_generation_minus_one() -> None:
    d = offsets_driver()
    # A new group only storing offsets (manual assignment).
    assert d.commit("", -1, {("t", 0): 1}, group="simple") == {("t", 0): E.NONE}
    assert d.state("simple") is GroupState.EMPTY
    # A non-negative generation for a group that does not exist: GROUP_ID_NOT_FOUND from v9,
    # ILLEGAL_GENERATION before (Kafka's OffsetMetadataManager.validateOffsetCommit).
    assert d.commit("x", 3, {("t", 0): 1}, group="missing") == {("t", 0): E.GROUP_ID_NOT_FOUND}
    assert d.commit("x", 3, {("t", 0): 1}, group="missing", version=8) == {("t", 0): E.ILLEGAL_GENERATION}
    assert d.state("missing") is GroupState.DEAD

    formed = d.form_group(["a"])
    assert d.commit("", -1, {("t", 0): 2}) == {("t", 0): E.UNKNOWN_MEMBER_ID}  # not Empty
    d.leave(formed.ids["a"])
    assert d.state() is GroupState.EMPTY
    assert d.commit("", -1, {("t", 0): 3}) == {("t", 0): E.NONE}
    assert d.fetched([("t", 0)])["t", 0].offset == 3


def test_offset_commit_to_unknown_topics_or_partitions() -> None:
    d = offsets_driver()
    d.writes.clear()
    errors = d.commit("", -1, {("t", 0): 1, ("t", 2): 1, ("t", -1): 1, ("nope", 0): 1})
    assert errors == {
        ("t", 0): E.NONE,
        ("t", 2): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("t", -1): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    (write,) = d.writes_of(OffsetsCommitted)
    assert [(o.topic, o.partition) for o in write.offsets] == [("t", 0)]
    assert d.fetched([("nope", 0)])["nope", 0].offset == -1


def test_offset_metadata_over_the_limit_is_rejected() -> None:
    d = Driver(offset_metadata_max_bytes=10)
    d.create_topics(("t", 2, 1))
    errors = d.commit(
        "",
        -1,
        (
            CommittedOffset(topic="t", partition=0, offset=1, metadata="x" * 10),
            CommittedOffset(topic="t", partition=1, offset=1, metadata="x" * 11),
        ),
    )
    assert errors == {("t", 0): E.NONE, ("t", 1): E.OFFSET_METADATA_TOO_LARGE}
    fetched = d.fetched([("t", 0), ("t", 1)])
    assert fetched["t", 0].metadata == "x" * 10
    assert fetched["t", 1].offset == -1


# --- offset deletion (OffsetDelete) ------------------------------------------------------------------


def subscribing_to(*topics: str) -> tuple[tuple[str, bytes], ...]:
    """Range with Kafka's consumer-protocol metadata subscribing to ``topics``."""
    return (
        (
            "range",
            bytes(ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=b"").encode()),
        ),
    )


def test_offset_delete_of_a_group_that_does_not_exist_is_refused_as_a_whole() -> None:
    d = offsets_driver()
    d.writes.clear()
    assert d.delete_offsets([("t", 0), ("nope", 0)], group="missing") == OffsetDeleteResult(
        error=E.GROUP_ID_NOT_FOUND
    )
    assert d.delete_offsets([("t", 0)], group="") == OffsetDeleteResult(error=E.INVALID_GROUP_ID)
    assert d.state("missing") is GroupState.DEAD  # asking made no group
    assert d.writes == []


def test_offset_delete_of_an_empty_group_is_stored_and_the_group_goes_at_the_next_retention_check(
    tmp_path: Path,
) -> None:
    """Kafka's OffsetMetadataManager.deleteOffsets: unknown partitions first (KafkaApis answers
    them before asking the coordinator), then each partition asked for, deleted. The group, left
    with neither offsets nor members, goes at the next retention check, as Kafka's does."""
    d = Driver(offsets_retention_check_interval_ms=100)
    d.create_topics(("t", 2, 1), ("u", 1, 1))
    d.commit("", -1, {("t", 0): 1, ("t", 1): 2, ("u", 0): 3})
    deleted = d.delete_offsets([("t", 0), ("t", 5), ("nope", 0), ("u", 0), ("u", 0)])
    assert deleted == OffsetDeleteResult(
        error=E.NONE,
        partitions=(
            ("t", 5, E.UNKNOWN_TOPIC_OR_PARTITION),
            ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION),
            ("t", 0, E.NONE),
            ("u", 0, E.NONE),
            ("u", 0, E.NONE),
        ),
    )
    assert d.writes_of(OffsetsDeleted) == [OffsetsDeleted(group_id=GROUP, partitions=(("t", 0), ("u", 0)))]
    assert [e.detail for e in d.events_of("offsets-deleted")] == ["2 committed offset(s) deleted"]
    assert set(d.fetched()) == {("t", 1)}
    store = SqliteStore(tmp_path)
    store.apply(d.writes)
    assert [(g, o.topic, o.partition) for g, o in store.load()[2]] == [(GROUP, "t", 1)]
    stored = len(d.writes)

    # Deleting what is not there deletes nothing, and is no error.
    assert d.delete_offsets([("t", 0)]).partitions == (("t", 0, E.NONE),)
    assert d.delete_offsets([("t", 1)]).partitions == (("t", 1, E.NONE),)
    assert d.state() is GroupState.EMPTY  # no offsets, no members: kept until the check
    d.advance(100)
    assert d.state() is GroupState.DEAD
    assert d.events_of("deleted")[-1].detail == "its offsets were deleted"
    store.apply(d.writes[stored:])
    _topics, groups, offsets = store.load()
    store.close()
    assert (groups, offsets) == ([], [])


def test_an_emptied_group_that_gets_members_or_offsets_again_is_kept() -> None:
    d = Driver(offsets_retention_check_interval_ms=100, initial_rebalance_delay_ms=0)
    d.create_topics(("t", 2, 1))
    for group in ("rejoined", "recommitted"):
        d.commit("", -1, {("t", 0): 1}, group=group)
        assert d.delete_offsets([("t", 0)], group=group).error is E.NONE
    d.form_group(["a"], group="rejoined")
    d.commit("", -1, {("t", 1): 2}, group="recommitted")
    d.advance(100)
    assert d.state("rejoined") is GroupState.STABLE
    assert set(d.fetched(group="recommitted")) == {("t", 1)}
    assert d.writes_of(GroupDeleted) == []


def test_offset_delete_keeps_what_the_members_of_a_classic_consumer_group_subscribe_to() -> None:
    """Kafka's ClassicGroup: a group with members of the consumer protocol keeps the offsets of
    the topics they subscribe to (GROUP_SUBSCRIBED_TO_TOPIC); the others go."""
    d = Driver(classic_payloads=CLASSIC_PAYLOADS, initial_rebalance_delay_ms=0)
    d.create_topics(("t", 2, 1), ("u", 1, 1), ("v", 1, 1))
    formed = d.form_group(["a", "b"], protocols={"a": subscribing_to("t"), "b": subscribing_to("t", "u")})
    a = formed.ids["a"]
    d.commit(a, formed.generation, {("t", 0): 1, ("u", 0): 2, ("v", 0): 3})
    assert d.delete_offsets([("t", 0), ("u", 0), ("v", 0)]).partitions == (
        ("t", 0, E.GROUP_SUBSCRIBED_TO_TOPIC),
        ("u", 0, E.GROUP_SUBSCRIBED_TO_TOPIC),
        ("v", 0, E.NONE),
    )
    assert set(d.fetched()) == {("t", 0), ("u", 0)}
    d.leave(formed.ids["b"])  # a rebalance: u is subscribed to until b's generation ends
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.delete_offsets([("u", 0)]).partitions == (("u", 0, E.GROUP_SUBSCRIBED_TO_TOPIC),)
    d.join(a, client="a", protocols=subscribing_to("t"))
    assert d.state() is GroupState.COMPLETING_REBALANCE
    assert d.delete_offsets([("u", 0)]).partitions == (("u", 0, E.NONE),)
    d.leave(a)
    assert d.state() is GroupState.EMPTY
    assert d.delete_offsets([("t", 0)]).partitions == (("t", 0, E.NONE),)
    assert d.fetched() == {}


def test_offset_delete_keeps_everything_where_the_subscriptions_are_unknown() -> None:
    """Kafka's ClassicGroup keeps every offset of a consumer-protocol group with members whose
    subscriptions it does not know: metadata that does not read (here also: no plugin to read
    it), or no generation yet."""
    unreadable, no_plugin = Driver(classic_payloads=CLASSIC_PAYLOADS), Driver()
    for d, protocols in ((unreadable, RANGE), (no_plugin, subscribing_to("t"))):
        d.create_topics(("t", 2, 1))
        formed = d.form_group(["a"], protocols={"a": protocols})
        d.commit(formed.ids["a"], formed.generation, {("t", 1): 1})
        assert d.delete_offsets([("t", 1)]).partitions == (("t", 1, E.GROUP_SUBSCRIBED_TO_TOPIC),)
    first = Driver(classic_payloads=CLASSIC_PAYLOADS)  # its first rebalance waits 3 s for more
    first.create_topics(("t", 2, 1))
    first.commit("", -1, {("t", 1): 1})
    assert first.join(first.new_member_id(client="a"), client="a", protocols=subscribing_to("u")) is None
    assert first.state() is GroupState.PREPARING_REBALANCE
    assert first.delete_offsets([("t", 1)]).partitions == (("t", 1, E.GROUP_SUBSCRIBED_TO_TOPIC),)


def test_offset_delete_refuses_a_group_with_members_of_another_protocol_type() -> None:
    d = Driver(initial_rebalance_delay_ms=0)
    d.create_topics(("t", 2, 1))
    joined = d.join("", client="a", protocol_type="shard", version_requires_known_id=False)
    assert joined is not None and joined.error is E.NONE
    assert d.delete_offsets([("t", 0), ("nope", 0)]) == OffsetDeleteResult(error=E.NON_EMPTY_GROUP)


# --- administration ---------------------------------------------------------------------------------


def test_list_groups_filters_by_state_and_type() -> None:
    d = offsets_driver()
    d.form_group(["a"], group="stable-group")
    d.commit("", -1, {("t", 0): 1}, group="offsets-only")
    d.join_ref(d.new_member_id(group="joining"), group="joining")

    def listed(**kw: object) -> list[tuple[str, str, GroupState]]:
        return [(g.group_id, g.protocol_type, g.state) for g in d.list_groups(**kw).groups]

    assert listed() == [
        ("joining", "consumer", GroupState.PREPARING_REBALANCE),
        ("offsets-only", "", GroupState.EMPTY),
        ("stable-group", "consumer", GroupState.STABLE),
    ]
    assert listed(states={"stable"}) == [("stable-group", "consumer", GroupState.STABLE)]
    assert [g for g, _, _ in listed(states={"empty", "preparingrebalance"})] == ["joining", "offsets-only"]
    assert listed(states={"dead"}) == []
    assert len(listed(types={"classic"})) == 3
    assert listed(types={"consumer"}) == []


def test_describe_groups() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"], protocols={n: protocols_for(n, "range", "rr") for n in "ab"})
    described = d.describe()
    assert described.error is E.NONE
    assert described.state is GroupState.STABLE
    assert described.protocol_type == "consumer"
    assert described.protocol_name == "range"
    assert described.generation_id == formed.generation
    assert {m.member_id: (m.client_id, m.metadata, m.assignment) for m in described.members} == {
        formed.ids[n]: (n, f"range:{n}".encode(), formed.assignments[formed.ids[n]]) for n in "ab"
    }

    # Not Stable: members without metadata or assignment.
    d.join_ref(formed.ids["b"], client="b", protocols=protocols_for("b", "rr", "range"))
    described = d.describe()
    assert described.state is GroupState.PREPARING_REBALANCE
    assert described.protocol_name == ""
    assert {(m.metadata, m.assignment) for m in described.members} == {(b"", b"")}

    unknown = d.describe("unknown")  # Dead; on the wire GROUP_ID_NOT_FOUND from v6 only
    assert (unknown.error, unknown.message) == (E.GROUP_ID_NOT_FOUND, "Group unknown not found.")
    assert unknown.state is GroupState.DEAD
    assert unknown.members == ()
    assert (unknown.protocol_type, unknown.protocol_name) == ("", "")


def test_delete_groups() -> None:
    d = offsets_driver()
    d.commit("", -1, {("t", 0): 9}, group="idle")
    d.form_group(["a"], group="busy")
    d.writes.clear()

    result = d.delete_groups("idle", "busy", "unknown")
    assert dict(result.results) == {
        "idle": E.NONE,
        "busy": E.NON_EMPTY_GROUP,
        "unknown": E.GROUP_ID_NOT_FOUND,
    }
    assert d.writes == [GroupDeleted(group_id="idle")]
    assert d.state("idle") is GroupState.DEAD
    assert d.fetched([("t", 0)], group="idle")["t", 0].offset == -1
    assert d.state("busy") is GroupState.STABLE
    assert dict(d.delete_groups("idle").results) == {"idle": E.GROUP_ID_NOT_FOUND}


def test_create_topics() -> None:
    d = Driver(default_num_partitions=4)
    result = d.create_topics(("default", -1, -1), ("explicit", 3, 1))
    assert [(t.name, t.error, t.num_partitions) for t in result.topics] == [
        ("default", E.NONE, 4),
        ("explicit", E.NONE, 3),
    ]
    assert d.coordinator.topic("default").partitions == 4
    assert [t.name for t in d.coordinator.topics()] == ["default", "explicit"]
    assert [w.name for w in d.writes_of(Topic)] == ["default", "explicit"]
    assert result.topics[0].topic_id == d.coordinator.topic("default").topic_id
    assert result.topics[0].topic_id != result.topics[1].topic_id

    again = d.create_topics(("explicit", 5, 1))
    assert again.topics[0].error is E.TOPIC_ALREADY_EXISTS
    assert d.coordinator.topic("explicit").partitions == 3


@pytest.mark.parametrize("name", ["", ".", "..", "a b", "a/b", "é", "x" * 250])
def test_create_topics_rejects_invalid_names(name: str) -> None:
    d = Driver()
    (created,) = d.create_topics((name, 1, 1)).topics
    assert created.error is E.INVALID_TOPIC_EXCEPTION
    assert d.coordinator.topics() == []


def test_create_topics_accepts_the_longest_legal_name() -> None:
    d = Driver()
    name = "a._-Z9" + "x" * 243
    assert len(name) == 249
    assert d.create_topics((name, 1, 1)).topics[0].error is E.NONE


@pytest.mark.parametrize(
    ("partitions", "replication", "expected"),
    [
        (1, 2, E.INVALID_REPLICATION_FACTOR),
        (1, 3, E.INVALID_REPLICATION_FACTOR),
        (1, 0, E.INVALID_REPLICATION_FACTOR),
        (0, 1, E.INVALID_PARTITIONS),
        (-2, 1, E.INVALID_PARTITIONS),
        (1, -1, E.NONE),
    ],
)
def test_create_topics_partitions_and_replication(
    partitions: int, replication: int, expected: ErrorCode
) -> None:
    d = Driver()
    (created,) = d.create_topics(("t", partitions, replication)).topics
    assert created.error is expected
    assert (d.coordinator.topic("t") is not None) is (expected is E.NONE)


def test_create_topics_caps_partitions_per_topic_and_topics_per_request() -> None:
    d = Driver(max_partitions_per_topic=8, max_topics_per_request=3)
    assert [t.error for t in d.create_topics(("wide", 9, 1), ("fits", 8, 1)).topics] == [
        E.INVALID_PARTITIONS,
        E.NONE,
    ]
    many = d.create_topics(*((f"t{i}", 1, 1) for i in range(4)))
    assert {t.error for t in many.topics} == {E.POLICY_VIOLATION}  # refused whole: none created
    assert many.topics[0].message == "one CreateTopics may create at most 3 topics (max_topics_per_request)"
    assert [t.name for t in d.coordinator.topics()] == ["fits"]
    assert {t.error for t in d.create_topics(*((f"t{i}", 1, 1) for i in range(3))).topics} == {E.NONE}
    assert CoordinatorConfig().max_partitions_per_topic == 10_000  # small defaults
    assert CoordinatorConfig().max_topics_per_request == 100
    with pytest.raises(ConfigurationError, match="max_topics_per_request must be a positive integer"):
        CoordinatorConfig(max_topics_per_request=0)


def test_create_topics_validate_only_creates_nothing() -> None:
    d = Driver()
    result = d.create_topics(("t", 2, 1), ("bad name", 1, 1), validate_only=True)
    assert [(t.name, t.error, t.num_partitions) for t in result.topics] == [
        ("t", E.NONE, 2),
        ("bad name", E.INVALID_TOPIC_EXCEPTION, -1),
    ]
    assert d.coordinator.topic("t") is None
    assert d.writes == []
    assert d.create_topics(("t", 2, 1)).topics[0].error is E.NONE


def test_create_topics_with_a_duplicate_name_in_one_request_is_invalid() -> None:
    d = Driver()
    result = d.create_topics(("t", 1, 1), ("t", 2, 1))
    assert result.topics
    assert {t.error for t in result.topics} == {E.INVALID_REQUEST}
    assert d.coordinator.topic("t") is None


def test_create_topic_entry_point() -> None:
    d = Driver()
    fx = d.coordinator.create_topic("events", 12, 0)
    ((ref, result),) = fx.replies
    assert ref is None
    assert result.topics[0].error is E.NONE
    assert fx.writes == [d.coordinator.topic("events")]
    assert d.coordinator.topic("events").partitions == 12
    assert d.coordinator.create_topic("events", 12, 0).replies[0][1].topics[0].error is E.TOPIC_ALREADY_EXISTS


# --- restore -----------------------------------------------------------------------------------------


def member_snapshot(member_id: str, assignment: bytes, instance: str | None = None) -> MemberSnapshot:
    return MemberSnapshot(
        member_id=member_id,
        group_instance_id=instance,
        client_id=member_id,
        client_host="/10.0.0.1",
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        protocols=RANGE,
        assignment=assignment,
    )


def restored_driver(*, leader: str = "m1", instances: tuple[str | None, str | None] = (None, None)) -> Driver:
    d = Driver()
    d.now = 1_000_000
    d.coordinator.restore(
        topics=[Topic(name="t", partitions=2, topic_id=bytes(16))],
        groups=[
            GroupSnapshot(
                group_id=GROUP,
                generation_id=5,
                protocol_type="consumer",
                protocol_name="range",
                leader_id=leader,
                members=(
                    member_snapshot("m1", b"A1", instances[0]),
                    member_snapshot("m2", b"A2", instances[1]),
                ),
            ),
            GroupSnapshot(
                group_id="empty",
                generation_id=3,
                protocol_type="consumer",
                protocol_name=None,
                leader_id=None,
                members=(),
            ),
        ],
        offsets=[
            (GROUP, CommittedOffset(topic="t", partition=0, offset=100, leader_epoch=2, metadata="md")),
            ("offsets-only", CommittedOffset(topic="t", partition=1, offset=7)),
        ],
        now_ms=d.now,
    )
    return d


def test_restore_brings_groups_back_stable_with_generation_and_assignments() -> None:
    d = restored_driver()
    assert d.state() is GroupState.STABLE
    described = d.describe()
    assert described.generation_id == 5
    assert {m.member_id: m.assignment for m in described.members} == {"m1": b"A1", "m2": b"A2"}
    assert d.heartbeat("m1", 5) is E.NONE
    assert d.heartbeat("m1", 4) is E.ILLEGAL_GENERATION
    assert d.sync("m2", 5).assignment == b"A2"
    assert d.state("empty") is GroupState.EMPTY
    assert d.describe("empty").generation_id == 3
    assert d.coordinator.topic("t").partitions == 2

    fetched = d.fetched([("t", 0)])
    assert (fetched["t", 0].offset, fetched["t", 0].leader_epoch, fetched["t", 0].metadata) == (100, 2, "md")
    assert d.fetched(group="offsets-only")["t", 1].offset == 7
    assert d.commit("m1", 5, {("t", 1): 8}) == {("t", 1): E.NONE}


def test_restored_members_expire_unless_they_heartbeat() -> None:
    d = restored_driver()
    start = d.now
    for _ in range(3):
        d.advance(3000)
        assert d.heartbeat("m2", 5) is E.NONE
    d.advance_to(start + SESSION_MS - 1)
    assert d.member_ids() == {"m1", "m2"}
    d.advance_to(start + SESSION_MS)
    assert d.member_ids() == {"m2"}
    assert d.heartbeat("m2", 5) is E.REBALANCE_IN_PROGRESS
    result = d.join("m2", client="m2")
    assert result.generation_id == 6
    assert result.leader == "m2"

    d.advance(10 * SESSION_MS)  # m2 never syncs nor heartbeats again
    assert d.state() is GroupState.EMPTY
    assert d.describe().generation_id == 7


def test_restored_static_member_rejoins_without_a_rebalance() -> None:
    d = restored_driver(instances=("s1", "s2"))
    result = d.join("", client="s2", instance="s2")
    assert result.error is E.NONE
    assert result.generation_id == 5
    assert d.sync(result.member_id, 5, instance="s2").assignment == b"A2"
    assert d.heartbeat("m2", 5, instance="s2") is E.FENCED_INSTANCE_ID
    assert d.heartbeat("m1", 5, instance="s1") is E.NONE


def test_restore_keeps_the_stored_leader() -> None:
    d = restored_driver(leader="m2")
    # m1 is a follower with unchanged metadata: Kafka answers at once with the current generation.
    result = d.join("m1", client="m1")
    assert result is not None
    assert result.generation_id == 5
    assert result.leader == "m2"
    assert d.state() is GroupState.STABLE


# --- abandon ------------------------------------------------------------------------------------------


def test_abandoned_join_no_longer_keeps_its_member_alive() -> None:
    d = Driver()
    formed = d.form_group(["a", "b"])
    a, b, gen = formed.ids["a"], formed.ids["b"], formed.generation
    ref = d.join_ref(b, client="b", protocols=(("range", b"changed"),))
    for _ in range(8):  # 24 s: b is alive well past its session, parked in JoinGroup
        d.advance(3000)
        assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS
    assert d.member_ids() == {a, b}

    d.abandon(ref)  # b's connection closed
    closed_at = d.now
    for _ in range(3):
        d.advance(3000)
        assert d.heartbeat(a, gen) is E.REBALANCE_IN_PROGRESS
    d.advance_to(closed_at + SESSION_MS - 1)
    assert d.member_ids() == {a, b}
    d.advance_to(closed_at + SESSION_MS)
    assert d.member_ids() == {a}
    assert d.reply(ref) is None  # nobody is listening any more

    result = d.join(a, client="a")
    assert result.generation_id == gen + 1
    assert joined_ids(result) == [a]


def test_abandoned_sync_no_longer_keeps_its_member_alive() -> None:
    d = Driver()
    a, b = d.new_member_id(client="a"), d.new_member_id(client="b")
    refs = [d.join_ref(a, client="a"), d.join_ref(b, client="b")]
    d.advance(6000)  # the initial delay, extended once for b
    assert d.reply(refs[1]).generation_id == 1
    sync_b = d.sync_ref(b, 1)  # waits for the leader a, which is slow to assign
    for _ in range(8):  # 24 s: b is kept alive by its parked SyncGroup
        d.advance(3000)
        assert d.heartbeat(a, 1) is E.NONE
    assert d.member_ids() == {a, b}

    d.abandon(sync_b)
    closed_at = d.now
    for _ in range(3):
        d.advance(3000)
        assert d.heartbeat(a, 1) is E.NONE
    d.advance_to(closed_at + SESSION_MS)
    assert d.member_ids() == {a}
    assert d.heartbeat(a, 1) is E.REBALANCE_IN_PROGRESS
    assert d.reply(sync_b) is None


# --- properties -------------------------------------------------------------------------------------


class _Client:
    """What a well-behaved Kafka client remembers about its membership. A static client has a
    group.instance.id (its name), which outlives its member ids."""

    def __init__(self, name: str, instance: str | None = None) -> None:
        self.name = name
        self.instance = instance
        self.version = 0  # bumped when its subscription (metadata) changes
        self.epoch = 0  # bumped on reset: replies to what the old incarnation sent are ignored
        self.reset()

    def reset(self) -> None:
        self.epoch += 1
        self.member_id = ""
        self.generation = -1
        self.leader = ""
        self.members: tuple[str, ...] = ()
        self.needs_join = True
        self.needs_sync = False


@dataclass(frozen=True)
class _Zombie:
    """An earlier incarnation of a static client (restarted, fenced or gone) that still sends
    with its old member id: a process paused past its replacement, say."""

    instance: str
    member_id: str
    generation: int


_ZOMBIE_CLIENT = _Client("zombie")  # whose requests no well-behaved client acts on


class GroupMachine(RuleBasedStateMachine):
    """Three clients, each drawn static (group.instance.id) or dynamic, joining, syncing,
    heartbeating, leaving (by member id, or a static one by instance id alone), restarting (a
    static one rejoins under its instance id, which fences its old member id) and closing
    connections at random, or each doing what a well-behaved client does next, while time
    passes; the old incarnations of static clients keep sending with their old ids."""

    def __init__(self) -> None:
        super().__init__()
        self.d = Driver(initial_rebalance_delay_ms=1000)
        self.d.create_topics(("t", 1, 1))  # for the zombies' commits
        self.clients = [_Client(n) for n in "abc"]
        # ref -> client, kind, member id, epoch
        self.origin: dict[int, tuple[_Client, str, str, int]] = {}
        self.seen = 0
        self.last_join_generation: dict[str, int] = {}
        self.max_generation = 0
        self.zombies: list[_Zombie] = []

    @initialize(static=st.frozensets(st.sampled_from("abc")))
    def choose_the_static_clients(self, static: frozenset[str]) -> None:
        event(f"{len(static)} static client(s)")
        for c in self.clients:
            c.instance = c.name if c.name in static else None

    # --- sending ------------------------------------------------------------------------------

    def _track(self, c: _Client, kind: str, ref: int) -> None:
        self.origin[ref] = (c, kind, c.member_id, c.epoch)
        self._deliver()

    def _join(self, c: _Client, requires_known_id: bool = True) -> None:
        ref = self.d.join_ref(
            c.member_id,
            client=c.name,
            instance=c.instance,
            protocols=(("range", f"v{c.version}".encode()),),
            session=6000,
            rebalance=8000,
            version_requires_known_id=requires_known_id,
        )
        self._track(c, "join", ref)

    def _sync(self, c: _Client) -> None:
        assignments = None
        if c.member_id and c.leader == c.member_id:
            assignments = {m: f"{m}@{c.generation}".encode() for m in c.members}
        ref = self.d.sync_ref(c.member_id, c.generation, instance=c.instance, assignments=assignments)
        self._track(c, "sync", ref)

    def _heartbeat(self, c: _Client) -> None:
        request = Heartbeat(
            group_id=GROUP, generation_id=c.generation, member_id=c.member_id, group_instance_id=c.instance
        )
        self._track(c, "heartbeat", self.d.send(request))

    def _waiting(self, c: _Client) -> bool:
        return any(self.origin[r][0] is c for r in self.d.outstanding() if r in self.origin)

    def _forget(self, c: _Client) -> None:
        """The client's process ends or restarts: it forgets its member id. A static client's
        old member id lives on as a zombie."""
        if c.instance is not None and c.member_id:
            self.zombies.append(_Zombie(c.instance, c.member_id, c.generation))
        c.reset()

    def _ids_of(self, instance: str | None) -> set[str]:
        """Every member id the group gave ``instance`` (also those whose JoinGroup answer was
        lost with its connection), by the coordinator's membership events."""
        return {
            e.member_id for e in self.d.events_of("joined") if instance and e.group_instance_id == instance
        }

    def _holder(self, instance: str) -> str | None:
        """The member id the group has for ``instance`` now, if any."""
        return next((m.member_id for m in self.d.describe().members if m.group_instance_id == instance), None)

    # --- receiving ----------------------------------------------------------------------------

    def _deliver(self) -> None:
        refs = list(self.d.replies)  # in the order the replies were produced
        for ref in refs[self.seen :]:
            result = self.d.replies[ref]
            if isinstance(result, JoinGroupResult) and result.error is E.NONE:
                self.last_join_generation[result.member_id] = result.generation_id
            if ref in self.origin:
                c, _, _, epoch = self.origin[ref]
                if epoch == c.epoch:
                    self._on_reply(c, result)
        self.seen = len(refs)

    def _on_reply(self, c: _Client, result: object) -> None:
        error = getattr(result, "error", E.NONE)
        if error in (E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID):
            self._forget(c)
        elif error in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION):
            c.needs_join = True
        elif isinstance(result, JoinGroupResult):
            if error is E.MEMBER_ID_REQUIRED:
                c.member_id = result.member_id
            elif error is E.NONE:
                if c.instance is not None and not c.member_id and not result.members:
                    event("a static client rejoined and was answered at once")
                c.member_id, c.generation, c.leader = result.member_id, result.generation_id, result.leader
                c.members = tuple(m.member_id for m in result.members)
                c.needs_join, c.needs_sync = False, True
        elif isinstance(result, SyncGroupResult) and error is E.NONE:
            c.needs_sync = False
            # The leader assigns "<member id>@<generation>" to each member id it was told of. A
            # static member that replaced its old id without a rebalance gets that id's
            # assignment: never another instance's, never another generation's.
            owner, _, generation = result.assignment.decode().rpartition("@")
            if owner:
                mine = {c.member_id} | self._ids_of(c.instance)
                assert owner in mine and int(generation) == c.generation, (result, c.member_id, mine)
                if owner != c.member_id:
                    event("a static member got its old id's assignment back")

    # --- rules --------------------------------------------------------------------------------

    @rule(i=st.integers(0, 2), requires_known_id=st.booleans(), change=st.booleans())
    def join(self, i: int, requires_known_id: bool, change: bool) -> None:
        c = self.clients[i]
        c.version += change
        self._join(c, requires_known_id)

    @rule(i=st.integers(0, 2))
    def sync(self, i: int) -> None:
        self._sync(self.clients[i])

    @rule(i=st.integers(0, 2))
    def heartbeat(self, i: int) -> None:
        self._heartbeat(self.clients[i])

    @rule(i=st.integers(0, 2))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        if c.member_id:
            self.d.leave((c.member_id, c.instance))
            self._forget(c)
            self._deliver()

    @precondition(lambda self: any(c.instance is not None for c in self.clients))
    @rule(data=st.data())
    def leave_by_instance_id(self, data: st.DataObject) -> None:
        """A static client's process (or an operator's tool) leaves with no member id, only
        the instance id (KIP-345): the instance's member, whichever it is, is removed."""
        c = data.draw(st.sampled_from([c for c in self.clients if c.instance is not None]))
        assert c.instance is not None
        holder = self._holder(c.instance)
        (left,) = self.d.leave(("", c.instance)).members
        assert left.error is (E.UNKNOWN_MEMBER_ID if holder is None else E.NONE), (left, holder)
        assert self._holder(c.instance) is None
        self._forget(c)
        self._deliver()

    @rule(i=st.integers(0, 2))
    def restart(self, i: int) -> None:
        """The client process restarts: it forgets its member id (a static one keeps its instance)."""
        self._forget(self.clients[i])

    def _fenced_or_gone(self) -> list[tuple[_Zombie, str | None]]:
        """Zombies whose instance the group now gives another member id, or none."""
        holders = {m.group_instance_id: m.member_id for m in self.d.describe().members}
        return [(z, holders.get(z.instance)) for z in self.zombies if holders.get(z.instance) != z.member_id]

    @precondition(lambda self: bool(self._fenced_or_gone()))
    @rule(data=st.data(), kind=st.sampled_from(["join", "sync", "heartbeat", "commit", "leave"]))
    def zombie_sends(self, data: st.DataObject, kind: str) -> None:
        """An old incarnation sends with its old member id: fenced if its instance has a new
        member id (FENCED_INSTANCE_ID), unknown if it has none; either way nothing changes."""
        zombie, holder = data.draw(st.sampled_from(self._fenced_or_gone()))
        before, events = self.d.describe(), len(self.d.events)
        old_id, generation, instance = zombie.member_id, zombie.generation, zombie.instance
        if kind == "join":
            ref = self.d.join_ref(old_id, client=instance, instance=instance, session=6000, rebalance=8000)
        elif kind == "sync":
            ref = self.d.sync_ref(old_id, generation, instance=instance)
        elif kind == "heartbeat":
            ref = self.d.send(
                Heartbeat(
                    group_id=GROUP, generation_id=generation, member_id=old_id, group_instance_id=instance
                )
            )
        elif kind == "commit":
            offset = CommittedOffset(topic="t", partition=0, offset=1, metadata="")
            ref = self.d.send(
                OffsetCommit(
                    group_id=GROUP,
                    generation_id=generation,
                    member_id=old_id,
                    group_instance_id=instance,
                    offsets=(offset,),
                )
            )
        else:
            leaving = LeavingMember(member_id=old_id, group_instance_id=instance)
            ref = self.d.send(LeaveGroup(group_id=GROUP, members=(leaving,)))
        self.origin[ref] = (_ZOMBIE_CLIENT, f"zombie {kind}", old_id, -1)
        reply = self.d.reply(ref)
        assert reply is not None, f"a zombie's {kind} was parked"
        if isinstance(reply, OffsetCommitResult):
            ((_, _, error),) = reply.errors
        elif isinstance(reply, LeaveGroupResult):
            error = reply.members[0].error
        else:
            error = reply.error
        assert error is (E.FENCED_INSTANCE_ID if holder else E.UNKNOWN_MEMBER_ID), (kind, reply, holder)
        assert self.d.describe() == before, f"a zombie's {kind} changed the group"
        assert all(e.kind == "rejected" for e in self.d.events[events:]), self.d.events[events:]
        event(f"zombie {kind}: {'fenced' if holder else 'unknown member'}")
        self._deliver()

    @rule(steps=st.integers(1, 4))
    def behave(self, steps: int) -> None:
        """Every client does what a Kafka client does next, with a little time passing."""
        for _ in range(steps):
            for c in self.clients:
                if self._waiting(c):
                    continue
                if c.needs_join or not c.member_id:
                    self._join(c)
                elif c.needs_sync:
                    self._sync(c)
                else:
                    self._heartbeat(c)
            self.d.advance(500)
            self._deliver()

    @precondition(lambda self: bool(self.d.outstanding()))
    @rule(data=st.data())
    def close_connection(self, data: st.DataObject) -> None:
        ref = data.draw(st.sampled_from(sorted(self.d.outstanding())))
        self.d.abandon(ref)

    @rule(ms=st.sampled_from([1, 500, 1000, 3000, 6000, 8000, 20_000]))
    def advance(self, ms: int) -> None:
        self.d.advance(ms)
        self._deliver()

    # --- properties ---------------------------------------------------------------------------

    @invariant()
    def parked_requests_belong_to_waiting_members(self) -> None:
        state = self.d.state()
        outstanding = self.d.outstanding()
        if state not in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
            assert not outstanding, f"{state}: requests left unanswered: {outstanding}"
            return
        members = self.d.member_ids()
        kinds = {self.origin[r][1] for r in outstanding}
        # Joins wait only while preparing, syncs only while completing.
        expected = "join" if state is GroupState.PREPARING_REBALANCE else "sync"
        assert kinds <= {expected}, (state, kinds)
        for ref in outstanding:
            _, _, member_id, _ = self.origin[ref]
            if member_id:
                assert member_id in members, f"ref {ref} of departed member {member_id} unanswered"
        assert len(outstanding) <= len(members)

    @invariant()
    def generation_never_decreases(self) -> None:
        described = self.d.describe()
        if described.state is GroupState.DEAD:
            assert self.max_generation == 0
            return
        assert described.generation_id >= self.max_generation
        self.max_generation = described.generation_id

    @invariant()
    def stable_members_share_their_generation(self) -> None:
        """A Stable group's dynamic members were each answered its generation's JoinGroup. A
        static member need not have rejoined: as in Kafka's GroupCoordinator (onCompleteJoin
        removes only dynamic members that did not rejoin), it stays in the next generation, and
        learns of it at its next heartbeat (ILLEGAL_GENERATION); it never joined a later one."""
        described = self.d.describe()
        if described.state is GroupState.STABLE:
            for m in described.members:
                joined = self.last_join_generation.get(m.member_id)
                if m.group_instance_id is None:
                    assert joined == described.generation_id, (m.member_id, self.last_join_generation)
                else:
                    assert joined is None or joined <= described.generation_id, (m.member_id, joined)

    @invariant()
    def an_instance_id_names_one_member_its_latest_incarnation(self) -> None:
        members = self.d.describe().members
        instances = [m.group_instance_id for m in members if m.group_instance_id is not None]
        assert len(instances) == len(set(instances)), members
        for c in self.clients:
            if c.instance is not None and c.member_id:
                assert self._holder(c.instance) in (None, c.member_id), (c.instance, c.member_id, members)

    def teardown(self) -> None:
        # Left alone, every member eventually goes by timeout and every request is answered.
        for _ in range(20):
            self.d.advance(20_000)
        self._deliver()
        assert not self.d.outstanding()
        assert self.d.state() in (GroupState.EMPTY, GroupState.DEAD)


GroupMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_group_state_machine = GroupMachine.TestCase


# --- conformance with Kafka's ClassicGroup and GroupMetadataManager (issue: the known mismatches)


def test_heartbeat_and_sync_with_an_empty_group_id_are_invalid() -> None:
    d = Driver()
    d.form_group(["a"])
    assert d.heartbeat("a", 1, group="") is E.INVALID_GROUP_ID
    synced = d.sync("a", 1, group="")
    assert synced is not None and synced.error is E.INVALID_GROUP_ID


def test_an_unknown_instance_id_beside_a_known_member_id_is_an_unknown_member() -> None:
    """ClassicGroup.validateMember: the instance id is checked first, for Heartbeat, SyncGroup
    and OffsetCommit alike."""
    d = offsets_driver()
    formed = d.form_group(["a"])
    member = formed.ids["a"]
    assert d.heartbeat(member, formed.generation, instance="nobody") is E.UNKNOWN_MEMBER_ID
    synced = d.sync(member, formed.generation, instance="nobody")
    assert synced is not None and synced.error is E.UNKNOWN_MEMBER_ID
    commit = d.commit(member, formed.generation, {("t", 0): 1}, instance="nobody")
    assert commit == {("t", 0): E.UNKNOWN_MEMBER_ID}
    assert d.heartbeat(member, formed.generation) is E.NONE  # without the instance id: fine


def test_a_sync_group_error_names_no_protocol() -> None:
    d = Driver()
    formed = d.form_group(["a"])
    refused = d.sync(formed.ids["a"], formed.generation + 5)
    assert refused is not None and refused.error is E.ILLEGAL_GENERATION
    assert (refused.protocol_type, refused.protocol_name) == (None, None)
    accepted = d.sync(formed.ids["a"], formed.generation)
    assert accepted is not None and accepted.protocol_type == "consumer" and accepted.protocol_name


def test_a_rebalance_timeout_of_zero_is_accepted() -> None:
    """Kafka checks only the session timeout's bounds: with a rebalance timeout of 0 the
    rebalance ends on its timer at once."""
    d = Driver(initial_rebalance_delay_ms=0)
    ref = d.join_ref(client="zero", rebalance=0, version_requires_known_id=False)
    d.advance(0)
    joined = d.reply(ref)
    assert joined is not None and joined.error is E.NONE and joined.generation_id == 1


def test_without_an_initial_delay_the_first_rebalance_does_not_wait_for_pending_members() -> None:
    """A member asked for an id (MEMBER_ID_REQUIRED) that never comes back does not hold up an
    Empty group's first rebalance when the initial delay is 0: Kafka ends it on its 0 ms timer.
    Later rebalances wait for pending members, as Kafka's do."""
    d = Driver(initial_rebalance_delay_ms=0)
    d.new_member_id(client="gone")  # pending, and never rejoins
    member = d.new_member_id(client="b")
    joined = d.join(member, client="b")
    assert joined is not None and joined.error is E.NONE and joined.generation_id == 1
    assert [m.member_id for m in joined.members] == [member]


def test_an_absent_static_leader_is_replaced_by_a_member_that_rejoined() -> None:
    """Kafka's maybeElectNewJoinedLeader: static A leads, B rejoins with new metadata while A
    only heartbeats. When the rebalance times out, B leads the next generation, with every
    member (A, static, stays in it), so the group is assigned."""
    d = Driver()
    formed = d.form_group(["a", "b"], static=True, session=20_000, rebalance=3_000)
    a, b = formed.ids["a"], formed.ids["b"]
    assert formed.leader == a
    b_joins = d.join_ref(
        b, client="b", instance="b", protocols=(("range", b"changed"),), session=20_000, rebalance=3_000
    )
    assert d.heartbeat(a, formed.generation, instance="a") is E.REBALANCE_IN_PROGRESS
    d.advance(3_000)
    joined = d.reply(b_joins)
    assert joined is not None and joined.error is E.NONE
    assert joined.leader == b and sorted(joined_ids(joined)) == sorted([a, b])
    assert joined.generation_id == formed.generation + 1


def test_a_rebalance_no_member_rejoins_waits_for_the_static_members_sessions() -> None:
    """Static members that do not rejoin are not evicted by the rebalance: Kafka keeps the group
    preparing, one rebalance timeout after another, until their sessions end."""
    d = Driver()
    formed = d.form_group(["a", "b"], static=True, session=30_000, rebalance=3_000)
    c = d.new_member_id(client="c")
    c_joins = d.join_ref(c, client="c", session=30_000, rebalance=3_000)
    d.leave(c)  # the dynamic newcomer leaves again before the rebalance ends
    assert d.reply(c_joins) is not None
    d.advance(10_000)  # more than twice the rebalance timeout
    assert d.state() is GroupState.PREPARING_REBALANCE
    assert d.member_ids() == set(formed.ids.values())
    d.advance(30_000)  # their sessions end
    assert d.state() is GroupState.EMPTY


# --- offset retention (KIP-211) ------------------------------------------------------------------

RETENTION_MS = 10_000
CHECK_MS = 100


def retention_driver() -> Driver:
    d = Driver(offsets_retention_ms=RETENTION_MS, offsets_retention_check_interval_ms=CHECK_MS)
    d.create_topics(("t", 2, 1))
    return d


def test_offsets_of_a_group_that_only_stores_offsets_expire_after_each_commit(tmp_path: Path) -> None:
    d = retention_driver()
    assert d.commit("", -1, {("t", 0): 5}, group="simple") == {("t", 0): E.NONE}
    d.advance(5_000)
    assert d.commit("", -1, {("t", 1): 6}, group="simple") == {("t", 1): E.NONE}
    d.advance(RETENTION_MS - 5_000)  # t=10 s: the first commit is 10 s old
    assert set(d.fetched(group="simple")) == {("t", 1)}
    assert [w.partitions for w in d.writes_of(OffsetsExpired)] == [(("t", 0),)]
    d.advance(5_000)  # the second too: nothing is left, and the group goes
    assert d.fetched(group="simple") == {}
    assert d.state("simple") is GroupState.DEAD
    assert [w.group_id for w in d.writes_of(GroupDeleted)] == ["simple"]
    # What the data directory holds afterwards: nothing of the group.
    store = SqliteStore(tmp_path)
    store.apply(d.writes)
    _topics, groups, offsets = store.load()
    store.close()
    assert (groups, offsets) == ([], [])


def test_an_empty_groups_offsets_expire_after_it_became_empty_and_an_active_groups_never() -> None:
    d = retention_driver()
    formed = d.form_group(["a"])
    a = formed.ids["a"]
    assert d.commit(a, formed.generation, {("t", 0): 5}) == {("t", 0): E.NONE}
    for _ in range(3 * RETENTION_MS // 1000):  # long past the retention, but with a member
        d.advance(1000)
        assert d.heartbeat(a, formed.generation) is E.NONE
    assert set(d.fetched()) == {("t", 0)}
    d.leave(a)
    assert d.state() is GroupState.EMPTY
    d.advance(RETENTION_MS - CHECK_MS)  # counted from when it became Empty, not from the commit
    assert set(d.fetched()) == {("t", 0)}
    d.advance(CHECK_MS)
    assert d.fetched() == {}
    assert d.state() is GroupState.DEAD


def test_an_offset_commit_v2_to_v4_may_set_its_own_retention() -> None:
    d = retention_driver()
    formed = d.form_group(["a"])
    a = formed.ids["a"]
    assert d.commit(a, formed.generation, {("t", 0): 5}, version=2, retention_ms=300) == {("t", 0): E.NONE}
    assert d.commit(a, formed.generation, {("t", 1): 6}, version=2) == {("t", 1): E.NONE}
    d.advance(300)  # its own expiry applies even to a group with members, as in Kafka
    assert d.heartbeat(a, formed.generation) is E.NONE
    assert set(d.fetched()) == {("t", 1)}


def test_restored_offsets_get_a_whole_retention_from_the_restart() -> None:
    d = retention_driver()
    d.commit("", -1, {("t", 0): 5}, group="simple")
    stored = [(g, o) for w in d.writes_of(OffsetsCommitted) for g in [w.group_id] for o in w.offsets]
    restarted = Driver(offsets_retention_ms=RETENTION_MS, offsets_retention_check_interval_ms=CHECK_MS)
    restarted.now = 50_000
    restarted.coordinator.restore(
        topics=d.coordinator.topics(), groups=[], offsets=stored, now_ms=restarted.now
    )
    restarted.advance(RETENTION_MS - CHECK_MS)
    assert set(restarted.fetched(group="simple")) == {("t", 0)}
    restarted.advance(CHECK_MS)
    assert restarted.fetched(group="simple") == {}
