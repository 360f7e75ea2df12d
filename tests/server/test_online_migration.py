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

import dataclasses
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pytest
from coordinator_consumer import (
    Cluster,
    TopicPartition,
    assign_cooperative_sticky,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_consumer._protocol import CLASSIC_PAYLOADS
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from test_consumer_group import CONFIG, INTERVAL_MS, Coordinator, Member, t

from coordinator_api import ConfigurationError, CoordinatorConfig
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._config import MIGRATION_POLICIES
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDowngraded,
    ConsumerGroupState,
    DescribeGroups,
    DescribeGroupsResult,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeavingMember,
    ListGroups,
    ListGroupsResult,
    MembershipEvent,
    OffsetCommit,
    OffsetCommitResult,
    SyncGroup,
    SyncGroupResult,
)
from coordinator_api.server._store import SqliteStore

CLASSIC_SESSION_MS = 10_000
STATIC_INSTANCE = "node-n1"
CLASSIC_REBALANCE_MS = 8_000


class Migrating(Coordinator):
    """A coordinator with the consumer plugin's classic payloads, and classic members' requests."""

    def __init__(self, topics: dict[str, int] | None = None, config: CoordinatorConfig = CONFIG) -> None:
        super().__init__(topics, classic_payloads=CLASSIC_PAYLOADS, config=config)
        self.replies: dict[int, object] = {}
        self.known: set[str] = set()  # classic members that have joined once
        self.on_writes: list[object] = []  # every write, for a store
        self.events: list[MembershipEvent] = []

    def send(self, request: object) -> int:
        ref = next(self.refs)
        fx = self.state.handle(ref, request, self.now)  # type: ignore[arg-type]
        self.on_writes.extend(fx.writes)
        self.events.extend(fx.events)
        self.replies.update(fx.replies)  # type: ignore[arg-type]
        return ref

    def request(self, request: object) -> object:
        return self.replies.pop(self.send(request))

    def advance(self, ms: int) -> None:
        self.now += ms
        fx = self.state.expire(self.now)
        self.on_writes.extend(fx.writes)
        self.events.extend(fx.events)
        self.replies.update(fx.replies)  # type: ignore[arg-type]

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
    assert [(x.member_id, x.classic) for x in described.members] == [("a", True), ("b", True), ("c", False)]
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
    # Before the generation it had the partition from: ILLEGAL_GENERATION, as Kafka 4.3 answers
    # a classic member of a consumer group (a member of the new protocol gets STALE_MEMBER_EPOCH).
    stale = OffsetCommit(**{**commit.__dict__, "generation_id": 0})
    assert m.request(stale) == OffsetCommitResult(errors=(("t", 0, ErrorCode.ILLEGAL_GENERATION),))
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


def policy(name: str) -> CoordinatorConfig:
    return dataclasses.replace(CONFIG, consumer_group_migration_policy=name)


@pytest.mark.parametrize("name", ["bidirectional", "upgrade", "downgrade", "disabled"])
def test_the_migration_policy_says_whether_a_classic_group_with_members_is_upgraded(name: str) -> None:
    m = Migrating(config=policy(name))
    m.classic_group()
    joined = m.heartbeat("c", 0)
    if name in ("bidirectional", "upgrade"):
        assert joined.error is ErrorCode.NONE and "g" in m.state._consumer_groups
        return
    # As Kafka's coordinator refuses it (GroupIdNotFoundException): the group stays as it was.
    assert joined.error is ErrorCode.GROUP_ID_NOT_FOUND
    assert (
        joined.message
        == "Cannot upgrade classic group g to consumer group because online upgrade is disabled."
    )
    assert "g" not in m.state._consumer_groups
    assert m.state.group_state("g") is GroupState.STABLE
    assert m.classic_heartbeat("a", 2) is m.classic_heartbeat("b", 2) is ErrorCode.NONE


@pytest.mark.parametrize("name", ["bidirectional", "upgrade", "downgrade"])
def test_the_migration_policy_says_whether_a_consumer_group_of_classic_members_is_downgraded(
    name: str,
) -> None:
    m = Migrating(config=policy(name))
    c = m.heartbeat("c", 0)  # an empty group becomes a consumer group whatever the policy
    assert c.error is ErrorCode.NONE and m.names(c) == t(0, 1, 2, 3, 4, 5)
    a = m.join("a")  # a classic member joins it
    assert (a.error, a.leader, a.members) == (ErrorCode.NONE, "", ())
    a_id = a.member_id  # the consumer group names its classic members itself
    m.known.add(a_id)
    assert m.assignment(m.sync(a_id, a.generation_id)) == set()  # c has not given anything up yet
    assert m.heartbeat("c", -1).error is ErrorCode.NONE  # the last member of the new protocol
    if name != "upgrade":
        assert "g" not in m.state._consumer_groups
        assert m.state.group_state("g") is GroupState.PREPARING_REBALANCE
        return
    # Kept: a consumer group whose only member speaks the classic protocol, and it goes on
    # working: the freed partitions reach it through a rejoin, as any classic member's do.
    assert {x.member_id for x in m.state._consumer_groups.describe("g").members} == {a_id}
    assert m.classic_heartbeat(a_id, a.generation_id) is ErrorCode.REBALANCE_IN_PROGRESS
    a = m.join(a_id)
    assert m.assignment(m.sync(a_id, a.generation_id)) == t(0, 1, 2, 3, 4, 5)
    assert m.classic_heartbeat(a_id, a.generation_id) is ErrorCode.NONE
    assert m.state._consumer_groups.state("g") is ConsumerGroupState.STABLE


def test_a_classic_member_rejoins_once_a_deferred_target_is_due() -> None:
    """With an assignment interval (KIP-1263), a change within it defers the group's next
    target. A classic member whose epoch is the target's goes on heartbeating until the target
    is due; its next heartbeat then tells it to rejoin, and its JoinGroup makes the target.
    (Told to rejoin at once, it would be sent back from every SyncGroup until then, as its
    JoinGroup gives it the old target's epoch: a JoinGroup and SyncGroup loop.)"""
    interval = 1_000
    m = Migrating(config=dataclasses.replace(CONFIG, consumer_group_assignment_interval_ms=interval))
    m.classic_group()
    m.heartbeat("c", 0)  # the upgrade's target, at once (none before it)
    assert m.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS
    a = m.join("a", t(0, 1, 2))
    kept = m.assignment(m.sync("a", a.generation_id))
    assert m.classic_heartbeat("a", 2) is ErrorCode.REBALANCE_IN_PROGRESS  # revoked: rejoin
    assert m.join("a", kept).generation_id == 3
    assert m.sync("a", 3).error is ErrorCode.NONE
    m.advance(100)
    m.heartbeat("d", 0)  # within the interval: a new group epoch, no new target
    group = m.state._consumer_groups.describe("g")
    assert (group.group_epoch, group.assignment_epoch) == (4, 3)
    refused_before = sum(e.kind == "rejected" for e in m.events)
    for _ in range(interval // 100 - 2):
        m.advance(100)
        assert m.classic_heartbeat("a", 3) is ErrorCode.NONE
    m.advance(100)  # the interval has passed
    assert m.classic_heartbeat("a", 3) is ErrorCode.REBALANCE_IN_PROGRESS
    a = m.join("a", kept)
    assert m.state._consumer_groups.describe("g").assignment_epoch == 4  # made by the join
    assert m.sync("a", a.generation_id).error is ErrorCode.NONE
    assert sum(e.kind == "rejected" for e in m.events) == refused_before


def test_with_migration_disabled_no_classic_member_joins_a_consumer_group_with_members() -> None:
    """As Kafka 4.3 refuses it (INCONSISTENT_GROUP_PROTOCOL); an empty one gives way."""
    m = Migrating(config=policy("disabled"))
    m.heartbeat("c", 0)
    assert m.join("a").error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert {x.member_id for x in m.state._consumer_groups.describe("g").members} == {"c"}
    m.heartbeat("c", -1)
    assert m.join("b").error is ErrorCode.NONE
    assert m.state.group_state("g") is GroupState.COMPLETING_REBALANCE


def test_an_empty_consumer_group_gives_way_to_a_classic_join(m: Migrating) -> None:
    """As Kafka deletes an Empty consumer group for a JoinGroup: the classic group that forms
    is the one listed and described, and the store drops the consumer group's record."""
    m.heartbeat("c", 0)
    m.heartbeat("c", -1)
    assert m.state._consumer_groups.state("g") is ConsumerGroupState.EMPTY
    m.on_writes.clear()
    d = m.join("d")
    assert (d.error, d.generation_id, d.leader) == (ErrorCode.NONE, 1, d.member_id)
    assert "g" not in m.state._consumer_groups
    assert ConsumerGroupDowngraded(group_id="g") in m.on_writes
    listed = m.request(ListGroups())
    assert isinstance(listed, ListGroupsResult)
    assert [(g.group_id, g.group_type) for g in listed.groups] == [("g", "classic")]
    described = m.request(DescribeGroups(group_ids=("g",)))
    assert isinstance(described, DescribeGroupsResult)
    assert described.groups[0].error is ErrorCode.NONE
    assert described.groups[0].state is GroupState.COMPLETING_REBALANCE


def test_the_migration_policy_is_one_of_kafkas_named_in_any_case() -> None:
    named = CoordinatorConfig(consumer_group_migration_policy="Upgrade")
    assert named.consumer_group_migration_policy == "upgrade" and not named.downgrades_consumer_groups
    with pytest.raises(ConfigurationError, match="consumer_group_migration_policy must be one of"):
        CoordinatorConfig(consumer_group_migration_policy="both")


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
    more, and the group is classic again, the restarted member in it. Here the group was still
    reconciling (a and b had not given c its partitions yet), so it rebalances."""
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


def test_a_classic_static_member_replacing_a_reconciled_last_member_keeps_the_group_stable(
    m: Migrating,
) -> None:
    """The same restart once everyone has reconciled: as Kafka 4 does when the subscription is
    the same, the classic group is Stable at once, every member keeping its assignment and
    generation; the restarted member gets its instance's partitions from its first SyncGroup,
    and nobody rebalances."""
    owned = m.classic_group()
    assert m.heartbeat("c", 0, instance_id="node-c").member_epoch == 3
    for name in "ab":  # each gives up what c is due (a cooperatively, b eagerly), then rejoins
        assert m.classic_heartbeat(name, 2) is ErrorCode.REBALANCE_IN_PROGRESS
        kept = m.assignment(m.sync(name, m.join(name, owned[name]).generation_id))
        assert m.classic_heartbeat(name, 2) is ErrorCode.REBALANCE_IN_PROGRESS
        owned[name] = m.assignment(m.sync(name, m.join(name, kept).generation_id))
        assert m.classic_heartbeat(name, 3) is ErrorCode.NONE
    owned["c"] = m.names(m.heartbeat("c", 3, instance_id="node-c")) or set()
    assert m.heartbeat("c", 3, owned["c"], instance_id="node-c").error is ErrorCode.NONE
    assert m.state._consumer_groups.state("g") is ConsumerGroupState.STABLE
    assert sorted(len(ps) for ps in owned.values()) == [2, 2, 2]

    restarted = m.join("c2", group_instance_id="node-c")
    assert (restarted.error, restarted.generation_id, restarted.leader) == (ErrorCode.NONE, 3, "")
    assert "g" not in m.state._consumer_groups
    assert m.state.group_state("g") is GroupState.STABLE
    assert m.assignment(m.sync(restarted.member_id, 3)) == owned["c"]
    assert m.classic_heartbeat("a", 3) is m.classic_heartbeat("b", 3) is ErrorCode.NONE
    assert m.classic_heartbeat(restarted.member_id, 3) is ErrorCode.NONE
    assert [e.detail for e in m.events if e.kind == "rebalance" and "classic again" in e.detail] == []
    assert [e.kind for e in m.events if "classic again" in e.detail] == ["generation"]


# --- a model: classic and incremental members at random, the group moving back and forth -----


@dataclass
class ClassicClient:
    """What a well-behaved cooperative classic consumer remembers (Kafka's
    ConsumerCoordinator with the cooperative-sticky assignor)."""

    name: str
    instance_id: str | None = None
    client_id: str = field(default_factory=lambda: uuid.uuid4().hex[:6])  # a new id per process
    member_id: str = ""
    generation: int = -1
    owned: set[tuple[str, int]] = field(default_factory=set)
    waiting: int | None = None  # the request it waits on
    needs_join: bool = True
    sync: tuple[SyncGroup, ...] = ()  # the SyncGroup to send next

    def lose(self, *, forget_id: bool) -> None:
        """Its partitions are lost (not revoked): it stops consuming them at once."""
        self.owned, self.generation, self.needs_join, self.sync = set(), -1, True, ()
        if forget_id:
            self.member_id = ""


class MigratingGroup(RuleBasedStateMachine):
    """Cooperative classic members and members of the incremental protocol join, behave, stall,
    leave and crash at random while time passes, so the group moves between the protocols
    again and again (as far as its coordinator's migration policy, one of ``POLICIES``, lets
    it). No partition ever has two owners by the members' own view; with everyone behaving,
    the group settles with each partition owned once."""

    TOPICS: ClassVar[dict[str, int]] = {"t": 6}
    POLICIES: ClassVar[tuple[str, ...]] = ("bidirectional",)
    ASSIGNMENT_INTERVALS_MS: ClassVar[tuple[int, ...]] = (0,)
    SETTLE_STEP_MS: ClassVar[int] = 0  # time passing between the rounds of everyone behaving

    def __init__(self) -> None:
        super().__init__()
        self.m = Migrating(self.TOPICS)
        self.classic: dict[str, ClassicClient] = {}
        self.incremental: dict[str, Member] = {}
        self.crashed: list[ClassicClient | Member] = []

    # --- classic clients ----------------------------------------------------------------------

    def _metadata(self, c: ClassicClient) -> bytes:
        owned = [TopicPartition(*p) for p in sorted(c.owned)]
        return encode_subscription(["t"], owned=owned, generation=c.generation)

    def _send_next(self, c: ClassicClient) -> None:
        if c.needs_join:
            request: object = JoinGroup(
                group_id="g",
                member_id=c.member_id,
                group_instance_id=c.instance_id,
                client_id=f"{c.name}-{c.client_id}",
                client_host="/127.0.0.1",
                session_timeout_ms=CLASSIC_SESSION_MS,
                rebalance_timeout_ms=CLASSIC_REBALANCE_MS,
                protocol_type="consumer",
                protocols=(("cooperative-sticky", self._metadata(c)),),
                require_known_member_id=True,
            )
        elif c.sync:
            (request,) = c.sync
        else:
            request = Heartbeat(
                group_id="g",
                generation_id=c.generation,
                member_id=c.member_id,
                group_instance_id=c.instance_id,
            )
        c.waiting = self.m.send(request)

    def _on_answer(self, c: ClassicClient, result: object) -> None:
        c.waiting = None
        error = getattr(result, "error", ErrorCode.NONE)
        if error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.lose(forget_id=True)
        elif error is ErrorCode.ILLEGAL_GENERATION:
            c.lose(forget_id=False)
        elif error is ErrorCode.REBALANCE_IN_PROGRESS:
            c.needs_join, c.sync = True, ()
        elif isinstance(result, JoinGroupResult) and error is ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = result.member_id
        elif isinstance(result, JoinGroupResult) and error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
            # A consumer group with members takes no classic member when migration is disabled.
            assert self.m.state._config.consumer_group_migration_policy == "disabled", result
            c.lose(forget_id=True)
        elif isinstance(result, JoinGroupResult):
            assert error is ErrorCode.NONE, result
            c.member_id, c.generation, c.needs_join = result.member_id, result.generation_id, False
            assignments: dict[str, tuple[TopicPartition, ...]] = {}
            if result.leader == c.member_id:  # the leader of a classic generation assigns
                subscriptions = [
                    decode_subscription(x.member_id, x.group_instance_id, x.metadata) for x in result.members
                ]
                assignments = assign_cooperative_sticky(subscriptions, Cluster(partitions=self.TOPICS))
            c.sync = (
                SyncGroup(
                    group_id="g",
                    generation_id=c.generation,
                    member_id=c.member_id,
                    group_instance_id=c.instance_id,
                    protocol_type="consumer",
                    protocol_name=result.protocol_name,
                    assignments=tuple((mid, encode_assignment(ps)) for mid, ps in assignments.items()),
                ),
            )
        elif isinstance(result, SyncGroupResult):
            assert error is ErrorCode.NONE, result
            partitions, _ = decode_assignment(result.assignment)
            assigned = {(p.topic, p.partition) for p in partitions}
            revoked = c.owned - assigned
            c.owned, c.sync = assigned, ()
            c.needs_join = bool(revoked)  # cooperative: rejoin after revoking
        else:
            assert isinstance(result, HeartbeatResult) and error is ErrorCode.NONE, result

    def _behave(self, c: ClassicClient) -> None:
        if c.waiting is not None:
            if c.waiting in self.m.replies:
                self._on_answer(c, self.m.replies.pop(c.waiting))
            return
        self._send_next(c)
        if c.waiting in self.m.replies:
            self._on_answer(c, self.m.replies.pop(c.waiting))

    # --- incremental members ------------------------------------------------------------------

    def _beat(self, member: Member) -> None:
        result = self.m.heartbeat(
            member.member_id,
            member.epoch,
            None if member.epoch == 0 else member.owned,
            subscribed_topic_names=("t",) if member.epoch == 0 else None,
            instance_id=member.instance_id,
        )
        if result.error is not ErrorCode.NONE:
            assert result.error in (
                ErrorCode.FENCED_MEMBER_EPOCH,
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.GROUP_ID_NOT_FOUND,  # a classic group that is mid-join: not moved
                ErrorCode.UNRELEASED_INSTANCE_ID,  # n1 again, while its crashed self holds its place
            ), result
            member.owned, member.epoch, member.joined = set(), 0, False
            return
        member.epoch, member.joined = result.member_epoch, True
        assigned = self.m.names(result)
        if assigned is not None:
            member.owned = assigned

    # --- rules ----------------------------------------------------------------------------------

    @rule(name=st.sampled_from(["k0", "k1"]))
    def classic_behaves(self, name: str) -> None:
        self._behave(self.classic.setdefault(name, ClassicClient(name)))

    @rule(name=st.sampled_from(["n0", "n1"]))
    def incremental_heartbeats(self, name: str) -> None:
        # n1 is static: its instance may come back as a classic member (the rule below), and
        # once it has, n1 is dynamic (one instance id, one process at a time).
        restarted = any(
            c.instance_id for c in [*self.classic.values(), *self.crashed] if isinstance(c, ClassicClient)
        )
        instance = STATIC_INSTANCE if name == "n1" and not restarted else None
        self._beat(self.incremental.setdefault(name, Member(f"{name}-{uuid.uuid4().hex[:6]}", instance)))

    @precondition(
        lambda self: (
            "n1" in self.incremental
            and self.incremental["n1"].joined
            and self.incremental["n1"].instance_id is not None
        )
    )
    @rule()
    def static_member_restarts_as_a_classic_member(self) -> None:
        """n1's process stops (without leaving: a static member's place waits for it) and its
        instance starts again with a classic client, which takes that place over (with
        migration disabled, no classic member joins the consumer group: n1's place waits out
        its session, as a crashed member's does)."""
        stopped = self.incremental.pop("n1")
        stopped.owned = set()
        if self.m.state._config.consumer_group_migration_policy == "disabled":
            self.crashed.append(stopped)
        restarted = self.classic["k2"] = ClassicClient("k2", instance_id=STATIC_INSTANCE)
        self._behave(restarted)

    @precondition(lambda self: self.incremental)
    @rule(data=st.data())
    def incremental_leaves(self, data: st.DataObject) -> None:
        member = self.incremental.pop(data.draw(st.sampled_from(sorted(self.incremental))))
        if member.joined:
            member.owned = set()
            self.m.heartbeat(member.member_id, -1)

    @precondition(lambda self: any(c.member_id and c.waiting is None for c in self.classic.values()))
    @rule(data=st.data())
    def classic_leaves(self, data: st.DataObject) -> None:
        name = data.draw(
            st.sampled_from(sorted(n for n, c in self.classic.items() if c.member_id and c.waiting is None))
        )
        c = self.classic.pop(name)
        c.owned = set()  # revoked before leaving
        self.m.request(
            LeaveGroup(group_id="g", members=(LeavingMember(member_id=c.member_id, group_instance_id=None),))
        )

    @precondition(lambda self: self.classic or self.incremental)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        everyone: dict[str, ClassicClient | Member] = {**self.classic, **self.incremental}
        name = data.draw(st.sampled_from(sorted(everyone)))
        self.classic.pop(name, None)
        self.incremental.pop(name, None)
        self.crashed.append(everyone[name])

    @rule(ms=st.sampled_from([INTERVAL_MS, CLASSIC_REBALANCE_MS, CLASSIC_SESSION_MS]))
    def time_passes(self, ms: int) -> None:
        self.m.advance(ms)
        present = self._present()
        for member in [*self.classic.values(), *self.incremental.values(), *self.crashed]:
            # Removed by the coordinator while silent: its session ran out, so a real member
            # has stopped by then (lease safety); it drops its partitions.
            if isinstance(member, Member) and member.joined and member.member_id not in present:
                member.owned, member.epoch, member.joined = set(), 0, False
            elif isinstance(member, ClassicClient) and member.member_id and member.member_id not in present:
                member.lose(forget_id=False)
            elif isinstance(member, ClassicClient) and self._formed_without(member):
                # A silent static member keeps its place past the rebalance timeout (Kafka's
                # classic protocol), and the leader assigns from the subscription it last sent,
                # which does not list what it was given since: that may go to another member.
                # Its client learns so at its next heartbeat (REBALANCE_IN_PROGRESS).
                member.lose(forget_id=False)
        self.crashed = [x for x in self.crashed if x.member_id in present]

    def _formed_without(self, c: ClassicClient) -> bool:
        """Whether ``c`` crashed and a classic generation formed after its own (it kept its
        place: it is static)."""
        classic = self.m.state._groups.get("g")
        return (
            any(c is x for x in self.crashed)
            and classic is not None
            and not self.m.state._is_consumer_group("g")
            and classic.generation_id > c.generation
        )

    def _present(self) -> set[str]:
        """Member ids the coordinator has for the group: in the consumer group, in the classic
        group, or asked to join with (pending)."""
        groups = self.m.state._consumer_groups
        present = {x.member_id for x in groups.describe("g").members} if "g" in groups else set()
        classic = self.m.state._groups.get("g")
        if classic is not None:
            present |= set(classic.members) | set(classic.pending_members)
        return present

    @precondition(lambda self: (self.classic or self.incremental) and not self.crashed)
    @rule()
    def everyone_behaves_until_settled(self) -> None:
        for _ in range(4 * (len(self.classic) + len(self.incremental)) + 12):
            self.m.advance(self.SETTLE_STEP_MS)
            for c in list(self.classic.values()):
                self._behave(c)
            for member in list(self.incremental.values()):
                self._beat(member)
        owned = sorted(p for x in [*self.classic.values(), *self.incremental.values()] for p in x.owned)
        assert owned == [("t", p) for p in range(6)], (owned, self.m.state._consumer_groups.describe("g"))

    @initialize(classic=st.integers(1, 2), data=st.data())
    def a_classic_group_forms(self, classic: int, data: st.DataObject) -> None:
        """Most runs start where a migration starts: a classic group at work."""
        if len(self.POLICIES) > 1:
            migration = data.draw(st.sampled_from(self.POLICIES))
            self.m = Migrating(self.TOPICS, config=policy(migration))
            event(f"policy {migration}")
        if len(self.ASSIGNMENT_INTERVALS_MS) > 1:
            interval = data.draw(st.sampled_from(self.ASSIGNMENT_INTERVALS_MS))
            config = dataclasses.replace(CONFIG, consumer_group_assignment_interval_ms=interval)
            self.m = Migrating(self.TOPICS, config=config)
            event(f"assignment interval {interval} ms")
        for name in ("k0", "k1")[:classic]:
            self.classic[name] = ClassicClient(name)
        self.the_classic_members_behave_a_while()

    @rule()
    def the_classic_members_behave_a_while(self) -> None:
        """Only the classic members, a few rounds: a classic generation forms (for an upgrade
        to find) or the classic members catch up inside a consumer group."""
        for _ in range(6):
            for c in list(self.classic.values()):
                self._behave(c)

    def teardown(self) -> None:
        # How far the group travelled (hypothesis's statistics show the spread).
        details = [e.detail for e in self.m.events if e.kind in ("rebalance", "generation")]
        upgrades = sum("upgraded" in d for d in details)
        downgrades = sum("classic again" in d for d in details)
        event(f"downgraded without a rebalance: {any('no rebalance' in d for d in details)}")
        event(f"upgraded {min(upgrades, 2)}{'+' if upgrades > 2 else ''} time(s)")
        event(f"downgraded {min(downgrades, 2)}{'+' if downgrades > 2 else ''} time(s)")

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for x in [*self.classic.values(), *self.incremental.values(), *self.crashed]:
            name = x.name if isinstance(x, ClassicClient) else x.member_id
            for partition in x.owned:
                assert partition not in seen, f"{partition} owned by {seen[partition]} and {name}"
                seen[partition] = name


MigratingGroup.TestCase.settings = settings(max_examples=200, stateful_step_count=50, deadline=None)
test_migrating_groups_never_give_a_partition_to_two_members = MigratingGroup.TestCase


class MigratingGroupUnderAnyPolicy(MigratingGroup):
    """The same on a coordinator with any ``group.consumer.migration.policy``: a refused
    upgrade, a classic member refused by a consumer group (``disabled``), a consumer group kept
    with classic members alone (``upgrade``, ``disabled``)."""

    POLICIES = MIGRATION_POLICIES


MigratingGroupUnderAnyPolicy.TestCase.settings = settings(
    max_examples=100, stateful_step_count=50, deadline=None
)
test_any_migration_policy_never_gives_a_partition_to_two_members = MigratingGroupUnderAnyPolicy.TestCase


class MigratingGroupWithAnAssignmentInterval(MigratingGroup):
    """The same with the consumer group's targets batched (KIP-1263's assignment interval,
    drawn): a change within the interval waits for the first heartbeat or classic JoinGroup
    after it, and its classic members are told to rejoin only then. Time passes while everyone
    behaves, so that the deferred targets come."""

    ASSIGNMENT_INTERVALS_MS = (0, INTERVAL_MS, 2 * INTERVAL_MS)
    SETTLE_STEP_MS = INTERVAL_MS // 4

    def __init__(self) -> None:
        super().__init__()
        self.deferred = False

    @invariant()
    def note_a_deferred_target(self) -> None:
        groups = self.m.state._consumer_groups
        if "g" in groups:
            described = groups.describe("g")
            self.deferred |= described.group_epoch > described.assignment_epoch

    def teardown(self) -> None:
        super().teardown()
        event(f"the group waited for a target: {self.deferred}")


MigratingGroupWithAnAssignmentInterval.TestCase.settings = settings(
    max_examples=100, stateful_step_count=50, deadline=None
)
test_batched_targets_never_give_a_partition_to_two_members = MigratingGroupWithAnAssignmentInterval.TestCase
