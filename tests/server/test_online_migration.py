"""Online migration between the classic protocol and the incremental one (KIP-848), sans-IO.

As Apache Kafka 4's group coordinator does it (GroupMetadataManager: convertToConsumerGroup,
classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
classicGroupHeartbeatToConsumerGroup, convertToClassicGroup): a member of the incremental
protocol joining a classic consumer group makes it a consumer group, whose classic members keep
their assignments and go on speaking JoinGroup, SyncGroup and Heartbeat; when the last member of
the incremental protocol leaves, the group is classic again and rebalances. Payloads are the
consumer plugin's real consumer-protocol encoding.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from coordinator_consumer import TopicPartition, decode_assignment, encode_assignment, encode_subscription
from coordinator_consumer._protocol import CLASSIC_PAYLOADS
from test_consumer_group import Coordinator, t

from coordinator_api._protocol import ErrorCode
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupState,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeavingMember,
    OffsetCommit,
    OffsetCommitResult,
    SyncGroup,
    SyncGroupResult,
)
from coordinator_api.server._store import SqliteStore

CLASSIC_SESSION_MS = 10_000
CLASSIC_REBALANCE_MS = 8_000


class Migrating(Coordinator):
    """A coordinator with the consumer plugin's classic payloads, and classic members' requests."""

    def __init__(self, topics: dict[str, int] | None = None) -> None:
        super().__init__(topics, classic_payloads=CLASSIC_PAYLOADS)
        self.replies: dict[int, object] = {}
        self.known: set[str] = set()  # classic members that have joined once
        self.on_writes: list[object] = []  # where the writes of each step go, if anywhere

    def send(self, request: object) -> int:
        ref = next(self.refs)
        fx = self.state.handle(ref, request, self.now)  # type: ignore[arg-type]
        self.on_writes.extend(fx.writes)
        self.replies.update(fx.replies)  # type: ignore[arg-type]
        return ref

    def request(self, request: object) -> object:
        return self.replies.pop(self.send(request))

    def join_request(
        self, member_id: str, owned: set[tuple[str, int]] = frozenset(), **fields: object
    ) -> JoinGroup:
        metadata = encode_subscription(["t"], owned=[TopicPartition(*p) for p in owned])
        known = member_id in self.known
        self.known.add(member_id)
        request = JoinGroup(
            group_id="g",
            member_id=member_id if known else "",  # a first join: its id is its client id
            group_instance_id=None,
            client_id=member_id,
            client_host="/127.0.0.1",
            session_timeout_ms=CLASSIC_SESSION_MS,
            rebalance_timeout_ms=CLASSIC_REBALANCE_MS,
            protocol_type="consumer",
            protocols=(("range", metadata),),
            require_known_member_id=False,
        )
        return JoinGroup(**{**request.__dict__, **fields})

    def join(
        self, member_id: str, owned: set[tuple[str, int]] = frozenset(), **fields: object
    ) -> JoinGroupResult:
        result = self.request(self.join_request(member_id, owned, **fields))
        assert isinstance(result, JoinGroupResult)
        return result

    def sync_request(
        self, member_id: str, generation: int, assignments: dict[str, set[tuple[str, int]]] | None = None
    ) -> SyncGroup:
        encoded = tuple(
            (m, encode_assignment(TopicPartition(*p) for p in ps)) for m, ps in (assignments or {}).items()
        )
        return SyncGroup(
            group_id="g",
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocol_name="range",
            assignments=encoded,
        )

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, set[tuple[str, int]]] | None = None
    ) -> SyncGroupResult:
        result = self.request(self.sync_request(member_id, generation, assignments))
        assert isinstance(result, SyncGroupResult)
        return result

    def classic_heartbeat(self, member_id: str, generation: int) -> ErrorCode:
        result = self.request(
            Heartbeat(group_id="g", generation_id=generation, member_id=member_id, group_instance_id=None)
        )
        assert isinstance(result, HeartbeatResult)
        return result.error

    def classic_group(self) -> dict[str, set[tuple[str, int]]]:
        """A classic group of two members, a and b, each owning three partitions of t, in
        generation 2 (a formed generation 1 alone)."""
        assert self.join("a").generation_id == 1
        assert self.sync("a", 1, {"a": t(0, 1, 2, 3, 4, 5)}).error is ErrorCode.NONE
        b_joins = self.send(self.join_request("b"))  # waits for a to rejoin
        assert self.classic_heartbeat("a", 1) is ErrorCode.REBALANCE_IN_PROGRESS
        a = self.join("a")
        b = self.replies.pop(b_joins)
        assert isinstance(b, JoinGroupResult) and a.generation_id == b.generation_id == 2
        owned = {"a": t(0, 1, 2), "b": t(3, 4, 5)}
        b_syncs = self.send(self.sync_request("b", 2))
        assert self.sync("a", 2, owned).error is ErrorCode.NONE
        assert isinstance(self.replies.pop(b_syncs), SyncGroupResult)
        assert self.state.group_state("g") is GroupState.STABLE
        return owned

    def assignment(self, result: SyncGroupResult) -> set[tuple[str, int]]:
        partitions, _ = decode_assignment(result.assignment)
        return {(p.topic, p.partition) for p in partitions}


@pytest.fixture
def m() -> Migrating:
    return Migrating()


def test_a_classic_group_becomes_a_consumer_group_when_a_new_protocol_member_joins(m: Migrating) -> None:
    owned = m.classic_group()
    c = m.heartbeat("c", 0)
    assert c.error is ErrorCode.NONE
    # Generation 2 became the group epoch; c's arrival moved it to 3; c waits for what it is due.
    assert (c.member_epoch, m.names(c)) == (3, set())
    described = m.state._consumer_groups.describe("g")
    assert described.group_epoch == 3
    members = {x.member_id: x for x in described.members}
    assert {mid: {(name, p) for _, name, ps in members[mid].assignment for p in ps} for mid in "ab"} == owned
    assert members["a"].member_epoch == members["b"].member_epoch == 2
    assert m.state.group_state("g") is GroupState.EMPTY  # the classic record keeps only offsets


def test_classic_members_reconcile_through_join_sync_and_heartbeat(m: Migrating) -> None:
    m.classic_group()
    m.heartbeat("c", 0)
    # A classic member learns of the new epoch from its heartbeat, as of a rebalance.
    assert m.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    # It rejoins with what it owns (cooperative): answered at once, no leader, its own epoch
    # while it still holds a partition it must give up.
    a = m.join("a", t(0, 1, 2))
    assert (a.error, a.generation_id, a.leader, a.members, a.protocol_name) == (
        ErrorCode.NONE,
        2,
        "",
        (),
        "range",
    )
    kept = m.assignment(m.sync("a", 2))
    assert kept < t(0, 1, 2)  # what it keeps; the rest goes to c
    assert m.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS  # revoke, then rejoin
    a = m.join("a", kept)
    assert a.generation_id == 3
    assert m.assignment(m.sync("a", 3)) == kept
    assert m.classic_heartbeat("a", 3) is ErrorCode.NONE
    # b, eager, rejoins owning nothing; it keeps its epoch's partitions it is still due.
    assert m.classic_heartbeat("b", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    b = m.join("b")
    assert b.generation_id == 3
    given_b = m.assignment(m.sync("b", 3))
    c = m.heartbeat("c", 3)
    given_c = m.names(c) or set()
    assert kept | given_b | given_c == t(0, 1, 2, 3, 4, 5)
    assert not (kept & given_b or kept & given_c or given_b & given_c)
    assert all(len(x) == 2 for x in (kept, given_b, given_c))
    assert m.state._consumer_groups.state("g") is ConsumerGroupState.STABLE


def test_the_group_is_classic_again_when_the_last_new_protocol_member_leaves(m: Migrating) -> None:
    m.classic_group()
    m.heartbeat("c", 0)
    left = m.heartbeat("c", -1)
    assert left.error is ErrorCode.NONE
    assert "g" not in m.state._consumer_groups
    # Classic again, rebalancing, its generation the epoch its members are at (2: they had not
    # reconciled to c's epochs), so a heartbeat of theirs is told to rejoin, not refused; the
    # members rejoin and the leader assigns as in any classic group.
    assert m.state.group_state("g") is GroupState.PREPARING_REBALANCE
    assert m.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    a_joins = m.send(m.join_request("a"))
    b = m.join("b")
    a = m.replies.pop(a_joins)
    assert isinstance(a, JoinGroupResult)
    assert b.error is a.error is ErrorCode.NONE and a.generation_id == b.generation_id == 3
    assert {x.member_id for x in (a if a.members else b).members} == {"a", "b"}
    assert m.state.group_state("g") is GroupState.COMPLETING_REBALANCE


def test_offsets_survive_both_moves_and_classic_commits_are_fenced_by_epoch(m: Migrating) -> None:
    m.classic_group()
    commit = OffsetCommit(
        group_id="g",
        generation_id=2,
        member_id="a",
        group_instance_id=None,
        offsets=(CommittedOffset(topic="t", partition=0, offset=42),),
    )
    assert m.request(commit) == OffsetCommitResult(errors=(("t", 0, ErrorCode.NONE),))
    m.heartbeat("c", 0)
    # In the consumer group, the classic member's generation is its epoch.
    assert m.request(commit) == OffsetCommitResult(errors=(("t", 0, ErrorCode.NONE),))
    stale = OffsetCommit(**{**commit.__dict__, "generation_id": 0})
    assert m.request(stale) == OffsetCommitResult(errors=(("t", 0, ErrorCode.STALE_MEMBER_EPOCH),))
    m.heartbeat("c", -1)
    assert m.state._groups["g"].offsets[("t", 0)].offset == 42


def test_a_classic_member_that_does_not_rejoin_when_told_is_removed(m: Migrating) -> None:
    m.classic_group()
    m.heartbeat("c", 0)
    assert m.classic_heartbeat("b", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    m.advance(CLASSIC_REBALANCE_MS + 1)
    members = {x.member_id for x in m.state._consumer_groups.describe("g").members}
    assert "b" not in members


def test_classic_members_are_checked_as_kafka_checks_them(m: Migrating) -> None:
    m.classic_group()
    m.heartbeat("c", 0)
    assert m.classic_heartbeat("zz", 1) is ErrorCode.UNKNOWN_MEMBER_ID
    assert m.classic_heartbeat("a", 7) is ErrorCode.ILLEGAL_GENERATION
    assert m.classic_heartbeat("c", 3) is ErrorCode.UNKNOWN_MEMBER_ID  # c speaks the new protocol
    other = m.join("d", protocol_type="connect")
    assert other.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    unreadable = m.join("e", protocols=(("range", b"not a subscription"),))
    assert unreadable.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    left = m.request(
        LeaveGroup(group_id="g", members=(LeavingMember(member_id="a", group_instance_id=None),))
    )
    assert isinstance(left, LeaveGroupResult) and left.members[0].error is ErrorCode.NONE
    assert {x.member_id for x in m.state._consumer_groups.describe("g").members} == {"b", "c"}


def test_a_classic_group_of_another_protocol_type_is_never_upgraded(m: Migrating) -> None:
    m.join("a", protocol_type="connect")
    refused = m.heartbeat("c", 0)
    assert refused.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert "g" not in m.state._consumer_groups


def test_a_migrating_group_survives_a_restart_of_the_coordinator(tmp_path: Path) -> None:
    m = Migrating()
    store = SqliteStore(tmp_path)
    store.apply(list(m.state.topics()))
    m.classic_group()
    m.heartbeat("c", 0)
    store.apply(m.on_writes)  # type: ignore[arg-type]
    before = m.state._consumer_groups.describe("g")
    store.close()

    restarted = Migrating({})
    store = SqliteStore(tmp_path)
    topics, groups, offsets = store.load()
    restarted.state.restore(
        topics=topics, groups=groups, offsets=offsets, consumer_groups=store.load_consumer_groups(), now_ms=0
    )
    assert restarted.state._consumer_groups.describe("g") == before
    # The classic members are still classic members: they heartbeat with their generation.
    assert restarted.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    assert restarted.classic_heartbeat("a", 1) is ErrorCode.ILLEGAL_GENERATION
    store.close()


def test_a_classic_static_member_replacing_the_last_new_protocol_member_downgrades_the_group(
    m: Migrating,
) -> None:
    """A static member of the incremental protocol restarts with a classic client (the same
    group.instance.id): it takes its place over, nobody speaks the incremental protocol any
    more, and the group is classic again, the restarted member in it."""
    m.classic_group()
    assert m.heartbeat("c", 0, instance_id="node-c").error is ErrorCode.NONE
    restarted = m.join("c2", group_instance_id="node-c")
    assert restarted.error is ErrorCode.NONE
    assert "g" not in m.state._consumer_groups
    assert m.state.group_state("g") is GroupState.PREPARING_REBALANCE
    new_id = restarted.member_id
    assert {x.member_id for x in m.state._groups["g"].members.values()} == {"a", "b", new_id}
    # Its SyncGroup meets the rebalance: it rejoins, as a classic member of a classic group.
    assert m.sync(new_id, restarted.generation_id).error is ErrorCode.REBALANCE_IN_PROGRESS
