"""The incremental rebalance protocol (KIP-848) on the embedded coordinator, sans-IO.

Requests go through :class:`GroupCoordinator` with a fake clock and the consumer plugin's real
server-side assignors, exactly as the server runs them. The rules checked are Apache Kafka 4's
(GroupMetadataManager.consumerGroupHeartbeat and CurrentAssignmentBuilder); the stateful test
at the end drives well-behaved and slow members at random and checks, after every step, that no
partition is ever owned by two members, from the members' own point of view.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from engine_checks import check_stored_changes, first_classic_join
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from coordinator_api import AssignmentSpec, ClassicPayloads
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupSnapshot,
    ConsumerGroupState,
    CreateTopics,
    DeleteGroups,
    DeleteGroupsResult,
    DescribedConsumerGroup,
    DescribeGroups,
    DescribeGroupsResult,
    GroupState,
    JoinGroup,
    JoinGroupResult,
    ListGroups,
    ListGroupsResult,
    NewTopic,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
    OffsetFetch,
    OffsetFetchResult,
)
from coordinator_api.server._state import GroupCoordinator
from coordinator_api.server._store import DATABASE_NAME, SqliteStore

SESSION_MS = 6000
INTERVAL_MS = 500
REBALANCE_MS = 4000
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    min_session_timeout_ms=500,
    consumer_group_session_timeout_ms=SESSION_MS,
    consumer_group_heartbeat_interval_ms=INTERVAL_MS,
    heartbeat_hold_ms=0,  # every heartbeat answered at once; holds: test_consumer_group_holds.py
)


class Coordinator:
    """A GroupCoordinator with topics, a fake clock and short-hand requests."""

    def __init__(
        self,
        topics: dict[str, int] | None = None,
        classic_payloads: ClassicPayloads | None = None,
        config: CoordinatorConfig = CONFIG,
    ) -> None:
        self.state = GroupCoordinator(
            config,
            server_assignors=SERVER_ASSIGNORS,
            classic_payloads=classic_payloads,
            member_id_factory=lambda client_id: client_id,  # a classic member's id is its name
        )
        check_stored_changes(self.state)
        self.now = 0
        self.refs = iter(range(1, 1_000_000))
        # Heartbeats equal to an earlier one, as the server decodes the same bytes to one object
        # (its heartbeat cache): the coordinator may keep the answer to the object it has seen.
        self.heartbeats: dict[ConsumerGroupHeartbeat, ConsumerGroupHeartbeat] = {}
        if topics != {}:
            self.create(topics or {"t": 6})

    def create(self, topics: dict[str, int]) -> None:
        request = CreateTopics(
            topics=tuple(NewTopic(name=n, num_partitions=p, replication_factor=1) for n, p in topics.items()),
            validate_only=False,
        )
        self.state.handle(next(self.refs), request, self.now)

    def topic_id(self, name: str) -> bytes:
        topic = self.state.topic(name)
        assert topic is not None
        return topic.topic_id

    def owned(self, partitions: Iterable[tuple[str, int]]) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        return tuple((self.topic_id(t), tuple(sorted(p))) for t, p in sorted(by_topic.items()))

    def request(self, request: object) -> object:
        # As the server takes a request: a steady heartbeat answered by renew, the rest by handle.
        renewed = self.state.renew(request, self.now)  # type: ignore[arg-type]
        if renewed is not None:
            return renewed
        fx = self.state.handle(next(self.refs), request, self.now)  # type: ignore[arg-type]
        ((_, result),) = fx.replies
        return result

    def heartbeat(
        self, member_id: str, epoch: int, owned: Iterable[tuple[str, int]] | None = None, **fields: object
    ) -> ConsumerGroupHeartbeatResult:
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
            if "subscribed_topic_regex" not in fields:
                fields.setdefault("subscribed_topic_names", ("t",))
            owned = owned if owned is not None else ()
        fields.setdefault("group_id", "g")
        request = ConsumerGroupHeartbeat(
            member_id=member_id,
            member_epoch=epoch,
            owned=None if owned is None else self.owned(owned),
            **fields,  # type: ignore[arg-type]
        )
        result = self.request(self.heartbeats.setdefault(request, request))
        assert isinstance(result, ConsumerGroupHeartbeatResult)
        return result

    def advance(self, ms: int) -> None:
        self.now += ms
        self.state.expire(self.now)

    def names(self, result: ConsumerGroupHeartbeatResult) -> set[tuple[str, int]] | None:
        if result.assignment is None:
            return None
        by_id = {self.topic_id(t.name): t.name for t in self.state.topics()}
        return {(by_id[tid], p) for tid, parts in result.assignment for p in parts}

    def epoch(self, member_id: str, group_id: str = "g") -> int:
        group = self.state._consumer_groups.describe(group_id)
        (member,) = [m for m in group.members if m.member_id == member_id]
        return member.member_epoch

    def describe(self, group_id: str = "g") -> object:
        result = self.request(ConsumerGroupDescribe(group_ids=(group_id,)))
        assert isinstance(result, ConsumerGroupDescribeResult)
        (group,) = result.groups
        return group


def t(*partitions: int) -> set[tuple[str, int]]:
    return {("t", p) for p in partitions}


@pytest.fixture
def c() -> Coordinator:
    return Coordinator()


def test_a_member_that_joins_again_under_its_id_stays_the_same_member(c: Coordinator) -> None:
    # As Kafka 4.3's broker answers it (checked with raw requests): a dynamic member still in the
    # group that sends epoch 0 again keeps its epoch and its assignment, owning what it reports
    # (nothing); the group epoch does not move and nobody else is disturbed.
    c.heartbeat("a", 0)
    b = c.heartbeat("b", 0)
    a = c.heartbeat("a", 2, t(0, 1, 2))  # a gives up 3-5 for b
    b = c.heartbeat("b", b.member_epoch)
    b = c.heartbeat("b", b.member_epoch, c.names(b))
    a = c.heartbeat("a", a.member_epoch, c.names(a))
    epoch = c.describe().group_epoch  # type: ignore[attr-defined]
    again = c.heartbeat("a", 0)
    assert (again.error, again.member_epoch) == (ErrorCode.NONE, a.member_epoch)
    assert c.names(again) == t(0, 1, 2)  # the whole assignment, as for every join
    assert c.describe().group_epoch == epoch  # type: ignore[attr-defined]
    assert c.heartbeat("b", b.member_epoch).assignment is None  # nothing new for b


def test_a_first_member_gets_every_partition_at_epoch_two(c: Coordinator) -> None:
    a = c.heartbeat("a", 0)
    assert (a.error, a.member_id, a.member_epoch, a.heartbeat_interval_ms) == (
        ErrorCode.NONE,
        "a",
        2,
        INTERVAL_MS,
    )
    assert c.names(a) == t(0, 1, 2, 3, 4, 5)
    assert c.state._consumer_groups.state("g") is ConsumerGroupState.STABLE


def test_a_new_target_shows_each_member_that_did_not_change_as_the_same_spec() -> None:
    # docs/plugins.md: a server-side assignor may keep what it built from a member, by identity.
    c = Coordinator({"t": 6, "u": 4})
    shown: list[dict[str, AssignmentSpec]] = []
    uniform = SERVER_ASSIGNORS["uniform"]

    def recording(members: Sequence[AssignmentSpec], counts: Mapping[str, int]) -> Mapping[str, Any]:
        shown.append({m.member_id: m for m in members})
        return uniform(members, counts)

    c.state._consumer_groups._assignors["consumer"]["uniform"] = recording
    for member in "abc":
        c.heartbeat(member, 0)
    for member in "def":  # members of u: t's members keep their targets
        c.heartbeat(member, 0, subscribed_topic_names=("u",))
    after_c, after_d, after_e, after_f = shown[-4:]
    assert after_d["a"] is not after_c["a"]  # its target moved when c joined
    assert after_f["a"] is after_e["a"] is after_d["a"]  # and has not since
    assert after_f["b"] is after_e["b"] and after_f["c"] is after_e["c"]
    assert after_f["d"] is not after_e["d"]  # e took half of u from it
    assert after_f["d"] == dataclasses.replace(after_e["d"], current=after_f["d"].current)


def test_a_groups_assignment_interval_defers_its_next_target(c: Coordinator) -> None:
    # KIP-1263 (test_kip848_clients: the same on Kafka 4.3.1's broker, with real time).
    c.state.set_group_assignment_interval("g", 1000)
    c.heartbeat("a", 0)  # the group's first target: at once
    b = c.heartbeat("b", 0)
    assert (b.member_epoch, c.names(b)) == (2, set())  # the target it is reconciled to is a's
    assert c.describe().state == "Assigning"  # type: ignore[attr-defined]
    c.advance(999)
    assert c.heartbeat("a", 2).assignment is None  # still within the interval
    c.advance(1)
    assert c.names(c.heartbeat("a", 2)) == t(0, 1, 2)  # the first heartbeat after it
    assert c.describe().state == "Reconciling"  # type: ignore[attr-defined]
    c.state.set_group_assignment_interval("g", 0)  # back to the server's own: at once
    c.heartbeat("c", 0)
    assert c.describe().assignment_epoch == 4  # type: ignore[attr-defined]


def test_a_newcomer_waits_for_partitions_until_their_owner_revokes_them(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    b = c.heartbeat("b", 0)
    # b is at the new epoch at once, but what it is due is still a's: unreleased, nothing yet.
    assert (b.member_epoch, c.names(b)) == (3, set())
    # a must revoke first and keeps its epoch until it has.
    a = c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    assert (a.member_epoch, c.names(a)) == (2, t(0, 1, 2))
    assert c.state._consumer_groups.state("g") is ConsumerGroupState.RECONCILING
    still = c.heartbeat("b", 3)
    assert (still.member_epoch, still.assignment) == (3, None)  # nothing changed for b
    # a heartbeats without the revoked partitions: it moves to epoch 3, and b can have them.
    a = c.heartbeat("a", 2, t(0, 1, 2))
    assert (a.member_epoch, a.assignment) == (3, None)
    b = c.heartbeat("b", 3)
    assert (b.member_epoch, c.names(b)) == (3, t(3, 4, 5))
    assert c.state._consumer_groups.state("g") is ConsumerGroupState.STABLE


def test_a_revocation_acknowledged_after_the_group_moved_on_releases_what_was_revoked(
    c: Coordinator,
) -> None:
    # Found by the incremental benchmark at 1,000 members: the partitions of the first
    # revocation stayed recorded as a's when a had more to revoke, and nobody was given them.
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    a = c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    assert (a.member_epoch, c.names(a)) == (2, t(0, 1, 2))  # revoking 3, 4, 5
    c.heartbeat("c", 0)  # group epoch 4 before a acknowledges: a must give up one more
    a = c.heartbeat("a", 2, t(0, 1, 2))
    assert (a.member_epoch, c.names(a)) == (2, t(0, 1))  # the same epoch, as Kafka 4.3; 2 to revoke
    # 3, 4 and 5 are free at once: b and c get them while a is still revoking 2.
    b = c.heartbeat("b", 3)
    assert (b.member_epoch, c.names(b)) == (4, t(3, 4))
    third = c.heartbeat("c", 4)
    assert (third.member_epoch, c.names(third)) == (4, t(5))
    a = c.heartbeat("a", 2, t(0, 1))
    assert (a.member_epoch, a.assignment) == (4, None)
    third = c.heartbeat("c", 4)
    assert (third.member_epoch, c.names(third)) == (4, t(2, 5))
    assert c.state._consumer_groups.state("g") is ConsumerGroupState.STABLE


def test_a_member_that_owns_no_revoked_partition_moves_on_at_once(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    # a already dropped what it must lose (say, after a lost answer): no revocation round.
    a = c.heartbeat("a", 2, t(0, 1, 2))
    assert (a.member_epoch, c.names(a)) == (3, t(0, 1, 2))


def test_a_member_leaving_gives_its_partitions_to_the_others(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    c.heartbeat("a", 2, t(0, 1, 2))
    c.heartbeat("b", 3)
    left = c.heartbeat("b", -1)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    a = c.heartbeat("a", 3, t(0, 1, 2))
    assert (a.member_epoch, c.names(a)) == (4, t(0, 1, 2, 3, 4, 5))


def test_a_member_that_stops_heartbeating_is_expired_after_the_session(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.advance(SESSION_MS - 1)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    c.advance(1)  # b's session has passed
    gone = c.heartbeat("b", 3)
    assert gone.error is ErrorCode.UNKNOWN_MEMBER_ID
    a = c.heartbeat("a", 2, t(0, 1, 2))
    assert (a.member_epoch, c.names(a)) == (4, t(0, 1, 2, 3, 4, 5))


def test_a_groups_own_session_and_interval_apply_from_each_members_next_heartbeat(c: Coordinator) -> None:
    # KIP-848's group configs (kafka-configs --entity-type groups): the answer to the next
    # heartbeat carries the group's interval, and each heartbeat from then on starts a session of
    # the group's length; a session already running is not cut short. Other groups keep the
    # server's own.
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.heartbeat("x", 0, group_id="other")
    a = c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    assert c.heartbeat("a", 2, t(0, 1, 2)).member_epoch == 3
    assert c.names(c.heartbeat("b", 3)) == t(3, 4, 5)
    steady = c.heartbeat("a", 3)  # a renewal, answered from the member's cached answer
    assert (a.heartbeat_interval_ms, steady.heartbeat_interval_ms) == (INTERVAL_MS, INTERVAL_MS)
    c.state.set_group_timeouts("g", 2 * SESSION_MS, 2 * INTERVAL_MS)
    assert c.heartbeat("a", 3).heartbeat_interval_ms == 2 * INTERVAL_MS
    assert c.heartbeat("x", 2, group_id="other").heartbeat_interval_ms == INTERVAL_MS
    c.advance(SESSION_MS)  # b's session started before the change: it ends as it was
    assert c.heartbeat("b", 3).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert (
        c.heartbeat("x", 2, group_id="other").error is ErrorCode.UNKNOWN_MEMBER_ID
    )  # other's session is the server's
    a = c.heartbeat("a", 3, t(0, 1, 2))  # a's session, from its last heartbeat, has not ended
    assert (a.error, a.member_epoch, c.names(a)) == (ErrorCode.NONE, 4, t(0, 1, 2, 3, 4, 5))
    c.advance(2 * SESSION_MS - 1)
    assert c.heartbeat("a", 4, t(0, 1, 2, 3, 4, 5)).error is ErrorCode.NONE
    c.state.set_group_timeouts("g", SESSION_MS, INTERVAL_MS)  # back to the server's own
    assert c.heartbeat("a", 4).heartbeat_interval_ms == INTERVAL_MS
    c.advance(SESSION_MS)
    assert c.heartbeat("a", 4).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_heartbeats_keep_one_timer_per_member_and_its_session_counts_from_the_last(c: Coordinator) -> None:
    # A heartbeat moves its member's session deadline; it must not add a timer each time (at
    # 30,000 heartbeats a second and a 45 s session that would be a million timers).
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))  # told to revoke 3, 4, 5
    assert c.heartbeat("a", 2, t(0, 1, 2)).member_epoch == 3
    assert c.names(c.heartbeat("b", 3)) == t(3, 4, 5)
    for _ in range(1000):
        c.advance(INTERVAL_MS)
        assert c.heartbeat("a", 3).error is ErrorCode.NONE
        assert c.heartbeat("b", 3, t(3, 4, 5)).error is ErrorCode.NONE
    assert len(c.state._consumer_groups._timers) <= 2
    c.advance(SESSION_MS - 1)
    assert c.heartbeat("b", 3).error is ErrorCode.NONE
    c.advance(1)  # a's session has passed, b's has not
    assert c.heartbeat("a", 3).error is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.names(c.heartbeat("b", 3)) == t(0, 1, 2, 3, 4, 5)
    c.advance(SESSION_MS)
    assert c.heartbeat("b", 4).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_only_a_steady_heartbeat_is_renewed_without_the_rest_of_its_path(c: Coordinator) -> None:
    # What the server answers before handle (GroupCoordinator.renew): the member's session
    # renewed and the answer handle would give; anything else is left to handle, unchanged.
    c.heartbeat("a", 0)
    group = c.state._consumer_groups._groups["g"]
    steady = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=2)
    renewed = c.state.renew(steady, 700)
    assert isinstance(renewed, ConsumerGroupHeartbeatResult)
    assert (renewed.error, renewed.member_epoch, renewed.heartbeat_interval_ms) == (
        ErrorCode.NONE,
        2,
        INTERVAL_MS,
    )
    assert renewed.assignment is None and group.members["a"].session_deadline == 700 + SESSION_MS
    # A heartbeat that restates exactly what the coordinator has of the member (this project's
    # members send every field every time) is steady too; a full one's answer carries the
    # assignment, as handle's does.
    everything = c.owned(t(0, 1, 2, 3, 4, 5))
    restated = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=2, owned=everything)
    assert c.state.renew(restated, 800) == renewed
    full = dataclasses.replace(restated, rebalance_timeout_ms=REBALANCE_MS, subscribed_topic_names=("t",))
    answer = c.state.renew(full, 800)
    assert answer is not None and answer.assignment == everything
    assert group.members["a"].session_deadline == 800 + SESSION_MS
    # An empty regex beside the names, as librdkafka sends them, is no regex: still restating.
    assert c.state.renew(dataclasses.replace(full, subscribed_topic_regex=""), 800) == answer
    # The same request again (the server decodes a member's unchanged bytes to one object) gets
    # the same answer, kept; once the member has changed, that request no longer restates it.
    assert c.state.renew(full, 800) is c.state.renew(full, 800) == answer
    longer = dataclasses.replace(full, rebalance_timeout_ms=REBALANCE_MS + 1)
    assert c.state.renew(longer, 800) is None
    for given, other in ((longer, full), (full, longer)):  # the whole path changes it; then back
        changed = c.request(given)
        assert isinstance(changed, ConsumerGroupHeartbeatResult) and changed.error is ErrorCode.NONE
        assert c.state.renew(other, 800) is None and c.state.renew(given, 800) == answer
    for other in (
        dataclasses.replace(full, owned=c.owned(t(0, 1, 2))),
        dataclasses.replace(full, subscribed_topic_names=("t", "u")),
        dataclasses.replace(full, rebalance_timeout_ms=REBALANCE_MS + 1),
        dataclasses.replace(full, rack_id="r1"),
        dataclasses.replace(full, server_assignor="range"),
        dataclasses.replace(full, subscribed_topic_regex="t.*"),
        ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=1),
        ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=-1),
        ConsumerGroupHeartbeat(group_id="g", member_id="z", member_epoch=2),
        ConsumerGroupHeartbeat(group_id="h", member_id="a", member_epoch=2),
    ):
        assert c.state.renew(other, 900) is None, other
    assert group.members["a"].session_deadline == 800 + SESSION_MS and "a" in group.members
    c.heartbeat("b", 0)  # a must now revoke: not steady until it has
    assert c.state.renew(ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=2), 900) is None
    c.heartbeat("a", 2, t(0, 1, 2))
    steady = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=3)
    assert c.state.renew(steady, 900) is not None
    # A change not yet stored is stored by handle, so renew leaves the heartbeat to it.
    c.state._consumer_groups._unwritten.add("g")  # type: ignore[union-attr]
    assert c.state.renew(steady, 900) is None
    c.state._consumer_groups.changes()
    assert c.state.renew(steady, 900) is not None
    # Held heartbeats (the default) are handle's too.
    held = Coordinator(config=dataclasses.replace(CONFIG, heartbeat_hold_ms=5000))
    held.heartbeat("a", 0)
    assert held.state.renew(ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=2), 0) is None


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))  # told to revoke 3-5
    for _ in range(REBALANCE_MS // INTERVAL_MS - 1):
        c.advance(INTERVAL_MS)
        still = c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))  # keeps heartbeating, never revokes
        assert still.error is ErrorCode.NONE
    c.advance(INTERVAL_MS)
    fenced = c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    assert fenced.error is ErrorCode.UNKNOWN_MEMBER_ID
    b = c.heartbeat("b", 3)
    assert c.names(b) == t(0, 1, 2, 3, 4, 5)
    assert b.member_epoch == 4


def test_a_stalled_member_only_stalls_its_own_partitions(c: Coordinator) -> None:
    """No barrier: while a never revokes, b keeps its partitions and a newcomer gets free ones."""
    c.create({"u": 4})
    c.heartbeat("a", 0, subscribed_topic_names=("t", "u"))
    b = c.heartbeat("b", 0, subscribed_topic_names=("t", "u"))
    a = c.heartbeat("a", 2, {*t(0, 1, 2, 3, 4, 5), ("u", 0), ("u", 1), ("u", 2), ("u", 3)})
    a_owned = c.names(a)
    assert a_owned is not None and len(a_owned) == 5  # a was told to revoke half, and stalls
    b = c.heartbeat("b", 3)
    assert c.names(b) in (None, set())  # b waits for a's partitions only
    # A third member joins: the new target is computed at once.
    newcomer = c.heartbeat("n", 0, subscribed_topic_names=("t", "u"))
    assert newcomer.error is ErrorCode.NONE and newcomer.member_epoch == 4
    group = c.state._consumer_groups.describe("g")
    for member in group.members:
        # Nobody's current partitions overlap another member's.
        mine = {(name, p) for _, name, parts in member.assignment for p in parts}
        others = {
            (name, p)
            for m in group.members
            if m is not member
            for _, name, parts in m.assignment
            for p in parts
        }
        assert not mine & others


def test_epochs_are_fenced_as_kafka_fences_them(c: Coordinator) -> None:
    c.heartbeat("a", 0)
    ahead = c.heartbeat("a", 8, t(0, 1, 2, 3, 4, 5))
    assert ahead.error is ErrorCode.FENCED_MEMBER_EPOCH
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2))  # to epoch 3
    # The previous epoch with owned partitions within the assignment: a lost answer, accepted.
    retry = c.heartbeat("a", 2, t(0, 1))
    assert (retry.error, retry.member_epoch) == (ErrorCode.NONE, 3)
    # The previous epoch claiming a partition it no longer has: fenced.
    assert c.heartbeat("a", 2, t(0, 4)).error is ErrorCode.FENCED_MEMBER_EPOCH
    assert c.heartbeat("nobody", 4, t()).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_requests_are_validated_as_kafka_validates_them(c: Coordinator) -> None:
    def error(**fields: object) -> ErrorCode:
        fields.setdefault("group_id", "g")
        fields.setdefault("member_id", "m")
        fields.setdefault("member_epoch", 0)
        result = c.request(ConsumerGroupHeartbeat(**fields))  # type: ignore[arg-type]
        assert isinstance(result, ConsumerGroupHeartbeatResult)
        return result.error

    full = {"rebalance_timeout_ms": 1000, "subscribed_topic_names": ("t",), "owned": ()}
    assert error(**full) is ErrorCode.NONE
    assert error(**{**full, "group_id": " "}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "member_id": ""}) is ErrorCode.INVALID_REQUEST  # v1: the client's id
    assert error(**{**full, "member_id": "", "member_id_required": False}) is ErrorCode.NONE  # v0
    assert error(**{**full, "rebalance_timeout_ms": -1}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "owned": None}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "owned": ((c.topic_id("t"), (0,)),)}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "subscribed_topic_names": None}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "instance_id": ""}) is ErrorCode.INVALID_REQUEST
    assert error(**{**full, "member_epoch": -3}) is ErrorCode.INVALID_REQUEST
    assert error(member_epoch=-2) is ErrorCode.INVALID_REQUEST  # a static leave needs its instance id
    assert error(**{**full, "server_assignor": "sticky"}) is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert error(**{**full, "subscribed_topic_regex": "("}) is ErrorCode.INVALID_REGULAR_EXPRESSION
    assert error(group_id="unknown", member_epoch=3) is ErrorCode.GROUP_ID_NOT_FOUND


def test_the_member_may_ask_for_the_range_assignor(c: Coordinator) -> None:
    c.create({"u": 2})
    a = c.heartbeat("a", 0, subscribed_topic_names=("t", "u"), server_assignor="range")
    assert c.names(a) == {*t(0, 1, 2, 3, 4, 5), ("u", 0), ("u", 1)}
    c.heartbeat("b", 0, subscribed_topic_names=("t", "u"), server_assignor="range")
    group = c.state._consumer_groups.describe("g")
    assert group.assignor_name == "range"
    targets = {m.member_id: {(n, p) for _, n, ps in m.target_assignment for p in ps} for m in group.members}
    # Kafka's range: each topic split by member-id order.
    assert targets == {"a": {*t(0, 1, 2), ("u", 0)}, "b": {*t(3, 4, 5), ("u", 1)}}


def test_a_regex_subscription_is_evaluated_on_the_coordinator(c: Coordinator) -> None:
    a = c.heartbeat("a", 0, subscribed_topic_regex="ord.*")
    assert c.names(a) == set()
    c.create({"orders": 2, "other": 1})
    a = c.heartbeat("a", 2, ())
    assert c.names(a) == {("orders", 0), ("orders", 1)}  # a topic created later is assigned
    assert a.member_epoch == 3


def test_a_static_member_restarts_without_a_new_group_epoch(c: Coordinator) -> None:
    a = c.heartbeat("a1", 0, instance_id="node-a")
    c.heartbeat("b", 0)
    c.heartbeat("a1", 2, t(0, 1, 2, 3, 4, 5), instance_id="node-a")
    c.heartbeat("a1", 2, t(0, 1, 2), instance_id="node-a")
    assert c.heartbeat("a1", 3).member_id == "a1"  # a plain heartbeat, only renewing its session
    c.heartbeat("d", 0, subscribed_topic_names=("u",))  # a new target; a1's stays what it was
    epoch_before = c.state._consumer_groups.describe("g").group_epoch
    left = c.heartbeat("a1", -2, instance_id="node-a")
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -2)
    # The next incarnation, with a new member id, takes the place and the partitions over.
    a = c.heartbeat("a2", 0, instance_id="node-a")
    assert a.error is ErrorCode.NONE
    assert c.names(a) == t(0, 1, 2)
    assert c.state._consumer_groups.describe("g").group_epoch == epoch_before
    renewed = c.heartbeat("a2", a.member_epoch)
    assert (renewed.error, renewed.member_id, renewed.member_epoch) == (ErrorCode.NONE, "a2", a.member_epoch)
    # The old incarnation is fenced; another one while this one lives is refused.
    assert c.heartbeat("a1", 3, t(0, 1, 2), instance_id="node-a").error is ErrorCode.FENCED_INSTANCE_ID
    assert c.heartbeat("a3", 0, instance_id="node-a").error is ErrorCode.UNRELEASED_INSTANCE_ID
    # The next targets are the new incarnation's, under its own id, though nothing else of the
    # member changed since the assignor was last shown it (as a1, when d joined).
    c.heartbeat("c", 0)
    described = {m.member_id: m.target_assignment for m in c.state._consumer_groups.describe("g").members}
    assert sorted(described) == ["a2", "b", "c", "d"] and described["a2"]
    del a


def test_a_static_member_that_never_comes_back_is_removed_after_its_session(c: Coordinator) -> None:
    c.heartbeat("a1", 0, instance_id="node-a")
    c.heartbeat("b", 0)
    c.heartbeat("a1", 2, t(0, 1, 2), instance_id="node-a")
    c.heartbeat("a1", -2, instance_id="node-a")
    for _ in range(SESSION_MS // INTERVAL_MS):
        c.advance(INTERVAL_MS)
        b = c.heartbeat("b", c.epoch("b"), None)
    assert c.names(b) == t(0, 1, 2, 3, 4, 5)


def commit(c: Coordinator, member_id: str, epoch: int, *partitions: int, version: int = 9) -> ErrorCode:
    """An OffsetCommit of ``partitions`` (t-0 if none) at ``epoch``; its one error, as all or
    none of it is stored."""
    offsets = tuple(CommittedOffset(topic="t", partition=p, offset=5) for p in partitions or (0,))
    request = OffsetCommit(
        group_id="g",
        generation_id=epoch,
        member_id=member_id,
        group_instance_id=None,
        offsets=offsets,
        version=version,
    )
    result = c.request(request)
    assert isinstance(result, OffsetCommitResult)
    (error,) = {error for _, _, error in result.errors}
    return error


def test_a_commit_at_an_older_epoch_passes_for_what_the_member_has_had_since(c: Coordinator) -> None:
    # KIP-1251, as Kafka 4.3.1 (test_differential runs the same against a broker).
    c.heartbeat("a", 0, instance_id="node-a")
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5), instance_id="node-a")  # told to give up 3-5
    assert commit(c, "a", 2, 3, 4, 5) is ErrorCode.NONE  # pending revocation: still a's
    assert c.heartbeat("a", 2, t(0, 1, 2), instance_id="node-a").member_epoch == 3
    b = c.heartbeat("b", 3)
    assert c.names(b) == t(3, 4, 5)
    assert commit(c, "a", 2, 0, 1, 2) is ErrorCode.NONE  # a has had them since epoch 2
    assert commit(c, "a", 2, 2, 3) is ErrorCode.STALE_MEMBER_EPOCH  # 3 is no longer a's
    assert commit(c, "b", 2, 3) is ErrorCode.STALE_MEMBER_EPOCH  # b has had 3 since epoch 3
    assert commit(c, "b", 3, 0) is ErrorCode.NONE  # at its own epoch, anything
    assert commit(c, "a", 4, 0) is ErrorCode.STALE_MEMBER_EPOCH  # an epoch ahead
    assert commit(c, "a", 3, 0, version=8) is ErrorCode.UNSUPPORTED_VERSION
    assert c.state._groups["g"].offsets[("t", 3)].offset == 5  # what passed, stored
    # A static member's partitions count as the next incarnation's since epoch 0.
    c.heartbeat("a", -2, instance_id="node-a")
    assert c.heartbeat("a2", 0, instance_id="node-a").member_epoch == 3
    assert commit(c, "a2", 0, 0, 1, 2) is ErrorCode.NONE


def test_an_offset_fetch_from_a_member_carries_its_epoch(c: Coordinator) -> None:
    # As Kafka 4.3's ConsumerGroup.validateOffsetFetch (test_differential: on a broker too).
    c.heartbeat("a", 0)

    def fetch(member_id: str | None, epoch: int) -> ErrorCode:
        result = c.request(
            OffsetFetch(group_id="g", partitions=None, member_id=member_id, member_epoch=epoch)
        )
        assert isinstance(result, OffsetFetchResult)
        return result.error

    assert fetch("a", 2) is ErrorCode.NONE
    assert fetch("a", 1) is ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("a", 3) is ErrorCode.STALE_MEMBER_EPOCH
    assert fetch("zombie", 2) is ErrorCode.UNKNOWN_MEMBER_ID
    assert fetch("", -1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert fetch(None, -1) is ErrorCode.NONE  # an admin


def test_offsets_are_fenced_by_member_epoch(c: Coordinator) -> None:
    c.heartbeat("a", 0)

    assert commit(c, "a", 2) is ErrorCode.NONE
    assert commit(c, "a", 1) is ErrorCode.STALE_MEMBER_EPOCH
    assert commit(c, "zombie", 2) is ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(c, "", -1) is ErrorCode.UNKNOWN_MEMBER_ID  # an admin commit while members are in it
    # DescribeGroups says a group that is not classic is not found (v6; Dead before it, on the
    # wire), as Kafka does, also once it holds offsets; ConsumerGroupDescribe describes it.
    described = c.request(DescribeGroups(group_ids=("g",)))
    assert isinstance(described, DescribeGroupsResult)
    (group,) = described.groups
    assert (group.error, group.message, group.state, group.protocol_type, group.members) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        "Group g is not a classic group.",
        GroupState.DEAD,
        "",
        (),
    )
    assert c.describe().state == "Stable"  # type: ignore[attr-defined]
    c.heartbeat("a", -1)
    assert commit(c, "", -1) is ErrorCode.NONE


def test_without_classic_payloads_classic_and_consumer_groups_do_not_share_an_id(c: Coordinator) -> None:
    """No online migration when no plugin says how the consumer protocol's payloads read
    (tests/server/test_online_migration.py has it)."""
    c.heartbeat("a", 0)
    join = first_classic_join("g", "consumer", (("range", b""),))
    result = c.request(join)
    assert isinstance(result, JoinGroupResult) and result.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    classic = c.request(JoinGroup(**{**join.__dict__, "group_id": "classic-group"}))
    assert isinstance(classic, JoinGroupResult) and classic.error is ErrorCode.NONE
    refused = c.heartbeat("b", 0, group_id="classic-group")
    assert refused.error is ErrorCode.GROUP_ID_NOT_FOUND


def test_consumer_groups_are_listed_described_and_deleted(c: Coordinator) -> None:
    c.heartbeat("a", 0, subscribed_topic_names=("t",))
    listed = c.request(ListGroups(states=frozenset(), types=frozenset({"consumer"})))
    assert isinstance(listed, ListGroupsResult)
    assert [(g.group_id, g.protocol_type, g.state.value, g.group_type) for g in listed.groups] == [
        ("g", "consumer", "Stable", "consumer")
    ]
    group = c.describe()
    assert group.error is ErrorCode.NONE and group.state == "Stable"  # type: ignore[attr-defined]
    assert c.describe("nope").error is ErrorCode.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    deleted = c.request(DeleteGroups(group_ids=("g",)))
    assert isinstance(deleted, DeleteGroupsResult) and deleted.results == (("g", ErrorCode.NON_EMPTY_GROUP),)
    c.heartbeat("a", -1)
    deleted = c.request(DeleteGroups(group_ids=("g",)))
    assert isinstance(deleted, DeleteGroupsResult) and deleted.results == (("g", ErrorCode.NONE),)


def test_consumer_group_describe_says_what_a_group_is_not_as_kafka_does(c: Coordinator) -> None:
    """Kafka's GroupMetadataManager.consumerGroupDescribe: a classic group is not a consumer
    group; a group that does not exist is not found."""
    offsets = (CommittedOffset(topic="t", partition=0, offset=5, leader_epoch=-1, metadata=""),)
    commit = OffsetCommit(
        group_id="classic", generation_id=-1, member_id="", group_instance_id=None, offsets=offsets
    )
    assert c.request(commit) == OffsetCommitResult(
        errors=(("t", 0, ErrorCode.NONE),)
    )  # an Empty classic group
    assert c.describe("classic") == DescribedConsumerGroup(
        group_id="classic",
        error=ErrorCode.GROUP_ID_NOT_FOUND,
        message="Group classic is not a consumer group.",
    )
    assert c.describe("nope") == DescribedConsumerGroup(
        group_id="nope", error=ErrorCode.GROUP_ID_NOT_FOUND, message="Group nope not found."
    )


def test_offset_delete_keeps_what_a_consumer_groups_members_subscribe_to(c: Coordinator) -> None:
    """Kafka's OffsetMetadataManager.deleteOffsets on a consumer group: the offsets of topics a
    member subscribes to, by name or by regex, stay (GROUP_SUBSCRIBED_TO_TOPIC), the others go.
    An empty group's all go, and the group with them at the next retention check."""
    c.create({"u": 1, "v": 1})
    c.heartbeat("a", 0, subscribed_topic_names=("t", "not-yet"))
    c.heartbeat("b", 0, subscribed_topic_regex="u")
    offsets = tuple(
        CommittedOffset(topic=name, partition=0, offset=5, leader_epoch=-1, metadata="") for name in "tuv"
    )
    commit = OffsetCommit(
        group_id="g", generation_id=c.epoch("a"), member_id="a", group_instance_id=None, offsets=offsets
    )
    assert isinstance(c.request(commit), OffsetCommitResult)

    def delete(*topics: str) -> OffsetDeleteResult:
        result = c.request(OffsetDelete(group_id="g", partitions=tuple((name, 0) for name in topics)))
        assert isinstance(result, OffsetDeleteResult)
        return result

    assert delete("t", "u", "v").partitions == (
        ("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
        ("u", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
        ("v", 0, ErrorCode.NONE),
    )
    c.heartbeat("a", -1)
    c.heartbeat("b", -1)
    assert delete("t", "u").partitions == (("t", 0, ErrorCode.NONE), ("u", 0, ErrorCode.NONE))
    assert c.describe().state == "Empty"  # type: ignore[attr-defined]
    c.advance(CONFIG.offsets_retention_check_interval_ms)
    assert c.describe().error is ErrorCode.GROUP_ID_NOT_FOUND  # type: ignore[attr-defined]
    assert delete("t") == OffsetDeleteResult(error=ErrorCode.GROUP_ID_NOT_FOUND)


# --- a model of the members against the reconciliation rules -----------------------------


class Member:
    """A member that follows the protocol: it owns what its last answer gave it, revokes what
    an answer takes away before its next heartbeat, and rejoins from nothing when fenced."""

    def __init__(self, member_id: str, instance_id: str | None = None) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.epoch = 0
        self.owned: set[tuple[str, int]] = set()
        self.since: dict[tuple[str, int], int] = {}  # the epoch of the answer that gave each
        self.reported: set[tuple[str, int]] | None = None  # what it last told the coordinator it owns
        self.joined = False


class Reconciliation(RuleBasedStateMachine):
    """Members join, heartbeat, stall, leave and crash at random; time passes.

    A member the coordinator expires or fences while it is silent is taken to have stopped
    consuming by then (the member runtime's lease: it stops acting on its assignment before its
    session can have run out), so its partitions are dropped at that moment.

    Members report what they own in every heartbeat, or, as Kafka's consumers do, only when it
    changed since they last reported it, or send every field, as this project's members do.
    Every request also goes to a second coordinator that
    never takes the shortcut for steady heartbeats (``renew_session``, which ``renew`` takes
    before ``handle`` is called, and ``handle`` before the rest of its rules): both must answer
    alike and agree on the group.
    """

    def __init__(self) -> None:
        super().__init__()
        self.c = Coordinator({"t": 6, "u": 3})
        self.without_shortcut: Coordinator | None = Coordinator({"t": 6, "u": 3})
        self.without_shortcut.state._consumer_groups.renew_session = lambda req, now_ms: None  # type: ignore[method-assign]
        self.members: dict[str, Member] = {}
        self.crashed: list[Member] = []  # processes gone; the coordinator has not noticed yet
        self.incarnations = itertools.count()

    def _both(
        self, member_id: str, epoch: int, owned: set[tuple[str, int]] | None, full: bool = False
    ) -> ConsumerGroupHeartbeatResult:
        fields: dict[str, object] = {"subscribed_topic_names": ("t", "u") if epoch == 0 or full else None}
        if full and epoch > 0:
            fields["rebalance_timeout_ms"] = REBALANCE_MS
        result = self.c.heartbeat(member_id, epoch, owned, **fields)
        if self.without_shortcut is None:
            return result
        other = self.without_shortcut.heartbeat(member_id, epoch, owned, **fields)
        seen = (result.error, result.member_epoch, result.heartbeat_interval_ms, self.c.names(result))
        assert seen == (
            other.error,
            other.member_epoch,
            other.heartbeat_interval_ms,
            self.without_shortcut.names(other),
        ), (result, other)
        return result

    def _beat(self, member: Member, report_changes_only: bool = False, full: bool = False) -> None:
        owned: set[tuple[str, int]] | None = None if member.epoch == 0 else member.owned
        if report_changes_only and not full and member.epoch > 0 and member.owned == member.reported:
            owned = None  # unchanged since it last said
        result = self._both(member.member_id, member.epoch, owned, full)
        if owned is not None or member.epoch == 0:
            member.reported = set(owned or ())
        if result.error is not ErrorCode.NONE:
            # Fenced or forgotten: the member stops consuming at once and joins again from nothing.
            assert result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID), result
            member.owned, member.epoch, member.joined = set(), 0, False
            member.reported = None
            return
        self._took(member, result, self.c.names(result))

    @staticmethod
    def _took(
        member: Member, result: ConsumerGroupHeartbeatResult, assigned: set[tuple[str, int]] | None
    ) -> None:
        """What ``member`` makes of an answer without error: its epoch, and what it now owns."""
        member.epoch, member.joined = result.member_epoch, True
        if assigned is not None:
            kept = member.owned  # (nothing, if it was fenced or expired meanwhile)
            member.since = {p: member.since[p] if p in kept else result.member_epoch for p in assigned}
            member.owned = assigned  # revoke what is gone, start what is new

    @rule(name=st.sampled_from(["a", "b", "c", "d"]), report_changes_only=st.booleans(), full=st.booleans())
    def heartbeat(self, name: str, report_changes_only: bool, full: bool) -> None:
        if name not in self.members:  # ids that replay alike: hypothesis draws from what they decide
            self.members[name] = Member(f"{name}-{next(self.incarnations)}")
        member = self.members[name]
        self._beat(member, report_changes_only, full)

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.members)))
        member = self.members.pop(name)
        if member.joined:
            member.owned = set()  # revoked before leaving
            assert self._both(member.member_id, -1, None).error is ErrorCode.NONE

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        # The process is gone; its partitions stay its own until the coordinator expires it.
        name = data.draw(st.sampled_from(sorted(self.members)))
        self.crashed.append(self.members.pop(name))

    @precondition(lambda self: any(m.joined and m.owned for m in self.members.values()))
    @rule(data=st.data())
    def commit_at_an_epoch_it_had(self, data: st.DataObject) -> None:
        # KIP-1251: a commit at an epoch the member has had passes if the member has owned
        # every partition in it since that epoch, else it is refused as a whole.
        name = data.draw(st.sampled_from(sorted(n for n, m in self.members.items() if m.joined and m.owned)))
        member = self.members[name]
        epoch = data.draw(st.integers(2, member.epoch))
        expected = (
            ErrorCode.NONE
            if all(member.since[p] <= epoch for p in member.owned)
            else ErrorCode.STALE_MEMBER_EPOCH
        )
        event(
            f"a commit at an older epoch: {expected.name}"
            if epoch < member.epoch
            else "a commit at its epoch"
        )
        offsets = tuple(CommittedOffset(topic=n, partition=p, offset=epoch) for n, p in sorted(member.owned))
        request = OffsetCommit(
            group_id="g",
            generation_id=epoch,
            member_id=member.member_id,
            group_instance_id=None,
            offsets=offsets,
        )
        for c in (self.c, self.without_shortcut):
            if c is not None:
                result = c.request(request)
                assert isinstance(result, OffsetCommitResult)
                assert {error for _, _, error in result.errors} == {expected}, (member.since, epoch, result)

    @rule(scale=st.sampled_from([1, 2, 3]))
    def the_groups_own_session_and_interval_change(self, scale: int) -> None:
        # kafka-configs --entity-type groups: scale 1 gives the group the server's own again.
        for c in (self.c, self.without_shortcut):
            if c is not None:
                c.state.set_group_timeouts(
                    "g", SESSION_MS * scale // 2 + SESSION_MS // 2, INTERVAL_MS * scale
                )

    @rule(ms=st.sampled_from([INTERVAL_MS, SESSION_MS // 2, REBALANCE_MS, SESSION_MS]))
    def time_passes(self, ms: int) -> None:
        self.c.advance(ms)
        if self.without_shortcut is not None:
            self.without_shortcut.advance(ms)
        groups = self.c.state._consumer_groups
        present = {m.member_id for m in groups.describe("g").members} if "g" in groups else set()
        for member in [*self.members.values(), *self.crashed]:
            if member.joined and member.member_id not in present:
                # The coordinator expired or fenced it: its session ran out, so a real member
                # has already stopped (lease safety); drop its partitions.
                member.owned, member.epoch, member.joined = set(), 0, False
        self.crashed = [m for m in self.crashed if m.joined]

    @precondition(lambda self: self.members and not self.crashed)
    @rule()
    def everyone_heartbeats_until_settled(self) -> None:
        # Liveness: with every live member heartbeating and nobody stalled, the group settles
        # with every subscribed partition owned by exactly one member, each at the group epoch.
        for round_ in range(2 * len(self.members) + 4):
            for member in list(self.members.values()):
                self._beat(member, report_changes_only=round_ % 2 == 1)
        group = self.c.describe()
        assert isinstance(group, DescribedConsumerGroup)
        assert group.state == ConsumerGroupState.STABLE.value, group
        owned = sorted(p for m in self.members.values() for p in m.owned)
        assert owned == sorted({*(("t", p) for p in range(6)), *(("u", p) for p in range(3))}), owned
        assert {m.epoch for m in self.members.values()} == {group.group_epoch}, group

    @invariant()
    def the_shortcut_changes_nothing(self) -> None:
        def seen(c: Coordinator) -> object:
            if "g" not in c.state._consumer_groups:
                return None
            group = c.state._consumer_groups.describe("g")
            members = sorted(
                (m.member_id, m.member_epoch, sorted((n, p) for _, n, parts in m.assignment for p in parts))
                for m in group.members
            )
            return group.state, group.group_epoch, group.assignment_epoch, members

        if self.without_shortcut is not None:
            assert seen(self.c) == seen(self.without_shortcut)

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for member in [*self.members.values(), *self.crashed]:
            for partition in member.owned:
                assert partition not in seen, f"{partition} owned by {seen[partition]} and {member.member_id}"
                seen[partition] = member.member_id

    @invariant()
    def the_coordinator_never_gives_one_partition_to_two_members(self) -> None:
        if "g" not in self.c.state._consumer_groups:
            return
        seen: set[tuple[str, int]] = set()
        for member in self.c.state._consumer_groups.describe("g").members:
            mine = {(name, p) for _, name, parts in member.assignment for p in parts}
            assert not mine & seen
            seen |= mine


Reconciliation.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
test_reconciliation_never_gives_a_partition_to_two_members = Reconciliation.TestCase


def written(c: Coordinator, store: SqliteStore) -> Coordinator:
    """``c``, writing every change its requests make to ``store``."""

    def step(request: object) -> object:
        fx = c.state.handle(next(c.refs), request, c.now)  # type: ignore[arg-type]
        store.apply(fx.writes)
        ((_, result),) = fx.replies
        return result

    c.request = step  # type: ignore[method-assign]
    return c


def restarted(store: SqliteStore) -> Coordinator:
    """A new coordinator on what ``store`` holds, writing on to it."""
    c = Coordinator({})
    topics, groups, offsets = store.load()
    c.state.restore(
        topics=topics, groups=groups, offsets=offsets, consumer_groups=store.load_consumer_groups(), now_ms=0
    )
    return written(c, store)


def test_consumer_groups_survive_a_restart_of_the_coordinator(tmp_path: Path) -> None:
    """Every change is written; a new coordinator on the same data reconciles on from there."""
    store = SqliteStore(tmp_path)
    c = written(Coordinator(), store)
    store.apply([t for t in c.state.topics()])
    c.heartbeat("a", 0, instance_id="node-a")
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5), instance_id="node-a")  # a is revoking 3-5
    before = c.state._consumer_groups.describe("g")
    store.close()

    store = SqliteStore(tmp_path)
    c = restarted(store)
    assert c.state._consumer_groups.describe("g") == before
    # a finishes revoking against the new process, and b gets what a released.
    a = c.heartbeat("a", 2, t(0, 1, 2), instance_id="node-a")
    assert (a.error, a.member_epoch) == (ErrorCode.NONE, 3)
    b = c.heartbeat("b", 3)
    assert c.names(b) == t(3, 4, 5)
    store.close()

    # Each partition's assignment epoch survives too: a has had 0-2 since epoch 2 (it is at 3),
    # b 3-5 since 3.
    store = SqliteStore(tmp_path)
    c = restarted(store)
    assert commit(c, "a", 2, 0, 1, 2) is ErrorCode.NONE
    assert commit(c, "b", 2, 3) is ErrorCode.STALE_MEMBER_EPOCH
    store.close()


def test_a_step_stores_only_the_members_it_changed() -> None:
    # As Kafka writes a record per member that changed: in a group of 1,000, writing the whole
    # group at each member's move to a new epoch cost about 30 ms a step before the store.
    c = Coordinator({"t": 6, "u": 1})
    c.heartbeat("a", 0)
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5))
    c.heartbeat("a", 2, t(0, 1, 2))
    c.heartbeat("b", 3, t(3, 4, 5))
    c.heartbeat("x", 0, subscribed_topic_names=("u",))  # a new group epoch; a and b keep theirs
    epoch = c.epoch("x")
    request = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=3, owned=c.owned(t(0, 1, 2)))
    fx = c.state.handle(next(c.refs), request, c.now)
    ((_, result),) = fx.replies
    assert isinstance(result, ConsumerGroupHeartbeatResult) and result.member_epoch == epoch
    (write,) = fx.writes
    assert isinstance(write, ConsumerGroupSnapshot)
    assert [m.member_id for m in write.members] == ["a"] and write.left == ()
    # What only the member's own request changes (its rebalance timeout) is stored too: every
    # step's writes are checked against the whole group (engine_checks.check_stored_changes).
    assert c.heartbeat("a", epoch, rebalance_timeout_ms=9_000).member_epoch == epoch
    (a,) = [m for m in c.state._consumer_groups.snapshot("g").members if m.member_id == "a"]
    assert a.rebalance_timeout_ms == 9_000
    leave = ConsumerGroupHeartbeat(group_id="g", member_id="x", member_epoch=-1)
    (write,) = c.state.handle(next(c.refs), leave, c.now).writes
    assert isinstance(write, ConsumerGroupSnapshot) and write.left == ("x",) and write.members == ()


def test_a_data_directory_of_schema_1_keeps_its_consumer_groups(tmp_path: Path) -> None:
    """Schema 1 kept a consumer group's members in the group's document; opening such a data
    directory moves them to rows of their own, once."""
    store = SqliteStore(tmp_path)
    c = written(Coordinator(), store)
    store.apply(list(c.state.topics()))
    c.heartbeat("a", 0, instance_id="node-a")
    c.heartbeat("b", 0)
    c.heartbeat("a", 2, t(0, 1, 2, 3, 4, 5), instance_id="node-a")
    before = store.load_consumer_groups()
    store.close()
    db = sqlite3.connect(tmp_path / DATABASE_NAME)  # the same state as schema 1 held it
    for group_id, text in db.execute("SELECT group_id, document FROM consumer_groups").fetchall():
        members = db.execute(
            "SELECT document FROM consumer_group_members WHERE group_id = ? ORDER BY member_id", (group_id,)
        )
        document = {**json.loads(text), "members": [json.loads(m) for (m,) in members]}
        update = "UPDATE consumer_groups SET document = ? WHERE group_id = ?"
        db.execute(update, (json.dumps(document), group_id))
    db.execute("DELETE FROM consumer_group_members")
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()

    store = SqliteStore(tmp_path)
    assert len(before[0].members) == 2 and store.load_consumer_groups() == before and not store.problems
    c = restarted(store)
    assert c.heartbeat("a", 2, t(0, 1, 2), instance_id="node-a").member_epoch == 3
    store.close()


def test_a_consumer_groups_offsets_are_kept_while_it_has_members_and_expire_once_empty() -> None:
    retention, check = 20_000, 1_000
    config = CoordinatorConfig(
        **{**CONFIG.__dict__, "offsets_retention_ms": retention, "offsets_retention_check_interval_ms": check}
    )
    c = Coordinator(config=config)
    a = c.heartbeat("a", 0)
    commit = OffsetCommit(
        group_id="g",
        generation_id=a.member_epoch,
        member_id="a",
        group_instance_id=None,
        offsets=(CommittedOffset(topic="t", partition=0, offset=3),),
    )
    assert c.request(commit) == OffsetCommitResult(errors=(("t", 0, ErrorCode.NONE),))
    for _ in range(2 * retention // INTERVAL_MS):  # past the retention, heartbeating
        c.advance(INTERVAL_MS)
        assert c.heartbeat("a", a.member_epoch).error is ErrorCode.NONE
    assert ("t", 0) in c.state._groups["g"].offsets
    assert c.heartbeat("a", -1).error is ErrorCode.NONE  # the last member leaves
    left_at = c.now
    while ("t", 0) in c.state._groups["g"].offsets:
        c.advance(check)  # one retention check after another
        assert c.now - left_at <= retention + 2 * check, "the offsets of an empty group never expired"
    # Counted from the first check that saw the group Empty (at most a check after it was).
    assert c.now - left_at >= retention
