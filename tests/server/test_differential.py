"""The classic group protocol and KIP-848's consumer groups, differentially: each scenario runs
against Apache Kafka 4 (the suite's KRaft cluster) and against the embedded coordinator, and
their answers must agree field by field (tests/server/differential.py; intended differences in
its ALLOWED)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest
from coordinator_consumer import TopicPartition, decode_assignment, encode_assignment, encode_subscription
from differential import Member, Peer, differences, owned, run
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka.protocol.admin import DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from test_kip848_clients import set_assignment_interval

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.server.schemas import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from coordinator_api.testing import KafkaCluster

TOPIC = "differential-t"
CONSUMER_TOPIC = "differential-k"  # KIP-848's scenarios: 4 partitions
# 12 partitions: each of up to 4 members has as many as the others.
SHARED_TOPIC = "differential-k12"
MOST_MEMBERS = 4
SUBSCRIPTION = encode_subscription([TOPIC])
SESSION_MS = 10_000
REBALANCE_MS = 5_000
# The suite's Kafka cluster: no initial rebalance delay, sessions from 500 ms. Heartbeats are
# answered at once, as Kafka does (held heartbeats are an intended difference).
CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500, heartbeat_hold_ms=0)


def assignment(*partitions: int) -> bytes:
    return encode_assignment(TopicPartition(TOPIC, p) for p in partitions)


# --- requests, at explicit versions --------------------------------------------------------------


def join(
    m: Member, *, version: int = 5, instance: str | None = None, member_id: str | None = None
) -> JoinGroupRequest:
    return JoinGroupRequest(
        version=version,
        group_id=m.peer.group_id,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        member_id=m.member_id if member_id is None else member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)],
    )


def sync(
    m: Member,
    generation: int,
    assignments: dict[Member, bytes] | None = None,
    *,
    version: int = 5,
    instance: str | None = None,
    group_id: str | None = None,
) -> SyncGroupRequest:
    return SyncGroupRequest(
        version=version,
        group_id=m.peer.group_id if group_id is None else group_id,
        generation_id=generation,
        member_id=m.member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequest.SyncGroupRequestAssignment(member_id=x.member_id, assignment=data)
            for x, data in (assignments or {}).items()
        ],
    )


def heartbeat(
    m: Member,
    generation: int,
    *,
    instance: str | None = None,
    member_id: str | None = None,
    group_id: str | None = None,
) -> HeartbeatRequest:
    return HeartbeatRequest(
        version=4,
        group_id=m.peer.group_id if group_id is None else group_id,
        generation_id=generation,
        member_id=m.member_id if member_id is None else member_id,
        group_instance_id=instance,
    )


def leave(
    m: Member, *leaving: tuple[str, str | None], version: int = 3, group_id: str | None = None
) -> LeaveGroupRequest:
    group = m.peer.group_id if group_id is None else group_id
    if version < 3:
        return LeaveGroupRequest(version=version, group_id=group, member_id=leaving[0][0])
    return LeaveGroupRequest(
        version=version,
        group_id=group,
        members=[
            LeaveGroupRequest.MemberIdentity(member_id=mid, group_instance_id=inst) for mid, inst in leaving
        ],
    )


def commit(
    m: Member, generation: int, *, version: int = 8, group_id: str | None = None
) -> OffsetCommitRequest:
    """A classic member's OffsetCommit of partition 0 of ``TOPIC``."""
    return committing(
        m, generation, 0, version=version, topic=TOPIC, member_id=m.member_id, group_id=group_id
    )


def describe(m: Member, *, version: int = 5) -> DescribeGroupsRequest:
    return DescribeGroupsRequest(
        version=version, groups=[m.peer.group_id], include_authorized_operations=False
    )


def stable_pair(peer: Peer) -> tuple[Member, Member, int]:
    """Dynamic members a (leader) and b, Stable in generation 2, each assigned a partition."""
    a, b = peer.member("a"), peer.member("b")
    a.call("a: join without an id", join(a))
    a.call("a: join", join(a))
    a.call("a: sync generation 1", sync(a, 1, {a: assignment(0, 1)}))
    b.call("b: join without an id", join(b))
    b_joins = b.send("b: join", join(b))
    peer.wait_for_state("PreparingRebalance")
    a.call("a: heartbeat (a rebalance began)", heartbeat(a, 1))
    a_joins = a.send("a: rejoin", join(a))
    a.answer(a_joins)
    b.answer(b_joins)
    b_syncs = b.send("b: sync generation 2", sync(b, 2))
    peer.wait_for_state("CompletingRebalance")
    a.call("a: sync generation 2 as leader", sync(a, 2, {a: assignment(0), b: assignment(1)}))
    b.answer(b_syncs)
    return a, b, 2


def static_pair(peer: Peer, *, heartbeat_first: bool = False) -> tuple[Member, Member]:
    """Static members a (instance ia, the leader) and b (ib), Stable in generation 2; with
    ``heartbeat_first``, a learns of b's arrival from a heartbeat before rejoining."""
    a, b = peer.member("a"), peer.member("b")
    a.call("a: join (static)", join(a, instance="ia"))
    a.call("a: sync generation 1", sync(a, 1, {a: assignment(0, 1)}, instance="ia"))
    b_joins = b.send("b: join (static)", join(b, instance="ib"))
    peer.wait_for_state("PreparingRebalance")
    if heartbeat_first:
        a.call("a: heartbeat (a rebalance began)", heartbeat(a, 1, instance="ia"))
    a_joins = a.send("a: rejoin", join(a, instance="ia"))
    a.answer(a_joins)
    b.answer(b_joins)
    b_syncs = b.send("b: sync", sync(b, 2, instance="ib"))
    peer.wait_for_state("CompletingRebalance")
    a.call("a: sync as leader", sync(a, 2, {a: assignment(0), b: assignment(1)}, instance="ia"))
    b.answer(b_syncs)
    return a, b


# --- scenarios -----------------------------------------------------------------------------------


def join_sync_heartbeat_and_leave(peer: Peer) -> None:
    a, b, generation = stable_pair(peer)
    a.call("a: heartbeat", heartbeat(a, generation))
    a.call("a: heartbeat, old generation", heartbeat(a, generation - 1))
    a.call("a: heartbeat, unknown member", heartbeat(a, generation, member_id="nobody"))
    a.call("describe: Stable", describe(a))
    a.call("a: commit", commit(a, generation))
    a.call("a: commit, old generation", commit(a, generation - 1))
    b.call("b: leave", leave(b, (b.member_id, None)))
    a.call("a: heartbeat (b left)", heartbeat(a, generation))
    a.call("a: rejoin alone", join(a))
    a.call("a: sync generation 3", sync(a, generation + 1, {a: assignment(0, 1)}))
    a.call("describe: a alone", describe(a))


def static_members_restart(peer: Peer) -> None:
    a, b = static_pair(peer, heartbeat_first=True)
    # b restarts: a new member id for instance ib, the same generation and assignment.
    b2 = peer.member("b-restarted")
    b2.call("b restarted: join", join(b2, instance="ib", member_id=""))
    b2.call("b restarted: sync", sync(b2, 2, instance="ib"))
    b.call("old b: heartbeat (fenced)", heartbeat(b, 2, instance="ib"))
    a.call("a: heartbeat with an unknown instance id", heartbeat(a, 2, instance="nobody"))
    # The leader restarts: from v9 it leads, sees everyone and skips the assignment.
    a2 = peer.member("a-restarted")
    a2.call("a restarted (v9): join", join(a2, version=9, instance="ia", member_id=""))
    a2.call("a restarted: sync", sync(a2, 2, instance="ia"))
    a3 = peer.member("a-restarted-again")
    a3.call("a restarted again (v8): join", join(a3, version=8, instance="ia", member_id=""))
    a3.call("describe: still Stable, no rebalance", describe(a3))


def bad_requests_and_unknown_groups(peer: Peer) -> None:
    a, b, generation = stable_pair(peer)
    a.call("heartbeat, empty group id", heartbeat(a, generation, group_id=""))
    a.call("sync, empty group id", sync(a, generation, group_id=""))
    a.call("sync, wrong generation", sync(a, generation + 3))
    b.call("leave by instance id that is unknown", leave(b, ("", "nobody")))
    # Requests for groups that do not exist, each sent to that group's coordinator.
    for n, (label, request) in enumerate(
        [
            ("leave v3, unknown group", lambda m, g: leave(m, ("x", None), ("", "inst"), group_id=g)),
            ("leave v1, unknown group", lambda m, g: leave(m, ("x", None), version=1, group_id=g)),
            ("commit v8, unknown group, a generation", lambda m, g: commit(m, 3, version=8, group_id=g)),
            ("commit v9, unknown group, a generation", lambda m, g: commit(m, 3, version=9, group_id=g)),
            ("commit, unknown group, generation -1 (a simple group)", lambda m, g: commit(m, -1, group_id=g)),
        ]
    ):
        other = f"{peer.group_id}-unknown-{n}"
        stranger = peer.member(f"stranger-{n}", coordinator_of=other)
        stranger.call(label, request(stranger, other))


def first_rebalance_and_a_pending_member(peer: Peer) -> None:
    """A member asked for an id that never comes back does not hold up the first rebalance
    (no initial delay); the group then empties, is listed, deleted, and gone."""
    x, a = peer.member("x"), peer.member("a")
    x.call("x: join without an id (never comes back)", join(x))
    a.call("a: join without an id", join(a))
    a.call("a: join", join(a))
    a.call("a: sync", sync(a, 1, {a: assignment(0, 1)}))
    a.call("list: Stable", ListGroupsRequest(version=4, states_filter=[]))
    a.call("list: a state filter with spaces", ListGroupsRequest(version=4, states_filter=[" Stable "]))
    a.call("list: a state filter in lower case", ListGroupsRequest(version=4, states_filter=["stable"]))
    a.call("list: a type filter", ListGroupsRequest(version=5, states_filter=[], types_filter=["Classic"]))
    a.call(
        "list: a type filter with spaces",
        ListGroupsRequest(version=5, states_filter=[], types_filter=[" classic "]),
    )
    a.call("a: commit", commit(a, 1))
    a.call("delete while a member is in", DeleteGroupsRequest(version=2, groups_names=[peer.group_id]))
    a.call("a: leave", leave(a, (a.member_id, None)))
    # x is still pending, so Kafka ends the rebalance the leave starts on a timer of 0 ms (the
    # rebalance timeout of a group without members) rather than at once: under load a describe
    # sent straight after the leave can still find it preparing.
    peer.wait_for_state("Empty")
    a.call("describe: Empty", describe(a))
    a.call("describe v6: Empty", describe(a, version=6))
    a.call("list: Empty", ListGroupsRequest(version=4, states_filter=["Empty"]))
    a.call("delete", DeleteGroupsRequest(version=2, groups_names=[peer.group_id]))
    a.call("describe: Dead", describe(a))
    a.call("describe v6: not found", describe(a, version=6))
    a.call("delete again", DeleteGroupsRequest(version=2, groups_names=[peer.group_id]))


def an_absent_static_leader_is_replaced(peer: Peer) -> None:
    """Static a leads; b rejoins with a new subscription while a only heartbeats: when the
    rebalance times out, b leads the next generation, with a still in it."""
    a, b = static_pair(peer)
    changed = join(b, instance="ib")
    changed.protocols[0].metadata = encode_subscription([TOPIC, "another-topic"])
    b_rejoins = b.send(
        "b: rejoin with a new subscription (answered at the rebalance timeout)", changed, timed=True
    )
    peer.wait_for_state("PreparingRebalance")
    a.call("a: heartbeat (does not rejoin)", heartbeat(a, 2, instance="ia"))
    b.answer(b_rejoins)
    a.call("a: heartbeat, its generation has passed", heartbeat(a, 2, instance="ia"))


# --- KIP-848's consumer groups ------------------------------------------------------------------


def beat(m: Member, epoch: int, owned: list[Any] | None = None, **fields: Any) -> Any:
    """A ConsumerGroupHeartbeat (v1: the member's own id) at ``epoch``, listing ``owned``."""
    return ConsumerGroupHeartbeatRequest(
        version=1,
        group_id=fields.pop("group_id", m.peer.group_id),
        member_id=m.own_member_id,
        member_epoch=epoch,
        topic_partitions=owned,
        **fields,
    )


def joining(m: Member, **fields: Any) -> Any:
    """A first heartbeat, as KIP-848's clients send it: every field given."""
    fields = {"rebalance_timeout_ms": REBALANCE_MS, "subscribed_topic_names": [CONSUMER_TOPIC], **fields}
    return beat(m, 0, fields.pop("topic_partitions", []), **fields)


def described(m: Member) -> Any:
    return ConsumerGroupDescribeRequest(
        version=0, group_ids=[m.peer.group_id], include_authorized_operations=False
    )


def committing(
    m: Member,
    epoch: int,
    *partitions: int,
    version: int = 9,
    topic: str = CONSUMER_TOPIC,
    member_id: str | None = None,
    group_id: str | None = None,
) -> OffsetCommitRequest:
    """An OffsetCommit of ``partitions`` of ``topic``, fenced by ``epoch``, from ``member_id``
    (by default the id the member made itself, as KIP-848's clients do)."""
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=version,
        group_id=m.peer.group_id if group_id is None else group_id,
        generation_id_or_member_epoch=epoch,
        member_id=m.own_member_id if member_id is None else member_id,
        group_instance_id=None,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    partition(partition_index=p, committed_offset=7, committed_metadata="")
                    for p in partitions
                ],
            )
        ],
    )


def consumer_group_scales_out_and_in(peer: Peer) -> None:
    """b joins a's group: a must first give up what b's target has, and b gets it once a has;
    then a leaves and b gets everything."""
    a, b = peer.member("a"), peer.member("b")
    joined = a.call("a: join", joining(a))
    a_epoch, a_owns = joined.member_epoch, owned(joined)
    a.call("a: heartbeat, listing what it owns", beat(a, a_epoch, a_owns))
    joined = b.call("b: join (what it gets is still a's)", joining(b))
    b_epoch = joined.member_epoch
    told = a.call("a: heartbeat (gives up partitions)", beat(a, a_epoch))
    a_owns = owned(told)
    moved = a.call("a: heartbeat, having revoked", beat(a, a_epoch, a_owns))
    a_epoch = moved.member_epoch
    got = b.call("b: heartbeat (gets what a released)", beat(b, b_epoch))
    b_owns = owned(got)
    b.call("b: heartbeat, listing what it owns", beat(b, got.member_epoch, b_owns))
    a.call("describe: Stable", described(a))
    a.call("a: leave", beat(a, -1))
    got = b.call("b: heartbeat (a left)", beat(b, b_epoch))
    b.call("b: heartbeat, listing everything", beat(b, got.member_epoch, owned(got)))
    b.call("describe: b alone", described(b))
    b.call("b: leave", beat(b, -1))
    b.call("describe: Empty", described(b))


def consumer_group_of_three_with_a_late_revocation(peer: Peer) -> None:
    """b and then c join before a has given anything up: each gets what a releases, once a
    has; then b leaves and a and c share its partitions."""
    a, b, c = peer.member("a"), peer.member("b"), peer.member("c")
    joined = a.call("a: join", joining(a, subscribed_topic_names=[SHARED_TOPIC]))
    a.call("a: heartbeat, listing what it owns", beat(a, joined.member_epoch, owned(joined)))
    a_epoch = joined.member_epoch
    b_epoch = b.call("b: join", joining(b, subscribed_topic_names=[SHARED_TOPIC])).member_epoch
    c_joins = joining(c, subscribed_topic_names=[SHARED_TOPIC])
    c_epoch = c.call("c: join, a has revoked nothing yet", c_joins).member_epoch
    b_epoch = b.call("b: heartbeat (a new target meanwhile)", beat(b, b_epoch)).member_epoch
    told = a.call("a: heartbeat (gives up partitions)", beat(a, a_epoch))
    a_epoch = a.call("a: heartbeat, having revoked", beat(a, a_epoch, owned(told))).member_epoch
    got = b.call("b: heartbeat (gets what a released)", beat(b, b_epoch))
    b.call("b: heartbeat, listing what it owns", beat(b, got.member_epoch, owned(got)))
    got = c.call("c: heartbeat (gets what a released)", beat(c, c_epoch))
    c_epoch = c.call("c: heartbeat, listing what it owns", beat(c, got.member_epoch, owned(got))).member_epoch
    a.call("a: heartbeat", beat(a, a_epoch))
    a.call("describe: Stable", described(a))
    b.call("b: leave", beat(b, -1))
    a.call("a: heartbeat (b left)", beat(a, a_epoch))
    c.call("c: heartbeat (b left)", beat(c, c_epoch))
    a.call("describe: a and c", described(a))


def consumer_group_fences_and_refuses(peer: Peer) -> None:
    """Epochs the member cannot have (its previous one is taken, as when the answer that moved
    it on was lost), unknown members, and requests a join cannot be."""
    a, x = peer.member("a"), peer.member("x")
    joined = a.call("a: join", joining(a))
    first = joined.member_epoch
    a.call("a: heartbeat, listing what it owns", beat(a, first, owned(joined)))
    both = [CONSUMER_TOPIC, TOPIC]
    moved = a.call("a: subscribes to a second topic", beat(a, first, subscribed_topic_names=both))
    second, has = moved.member_epoch, owned(moved)
    a.call("a: heartbeat, listing what it owns", beat(a, second, has))
    back = a.call("a: back to one topic", beat(a, second, subscribed_topic_names=[CONSUMER_TOPIC]))
    third = back.member_epoch
    a.call("a: its previous epoch, listing what it had", beat(a, second, has))
    a.call("a: its previous epoch, listing nothing new", beat(a, second))
    a.call("a: an epoch ahead of its own", beat(a, third + 1))
    a.call("a: two epochs behind its own", beat(a, first))
    a.call("a: its epoch, listing what it owns", beat(a, third, owned(back)))
    x.call("x: unknown member, epoch 1", beat(x, 1))
    x.call("x: join without a rebalance timeout", beat(x, 0, [], subscribed_topic_names=[CONSUMER_TOPIC]))
    x.call("x: join without topics", beat(x, 0, [], rebalance_timeout_ms=REBALANCE_MS))
    x.call("x: join without owned partitions", joining(x, topic_partitions=None))
    x.call("x: join with an unknown assignor", joining(x, server_assignor="sticky"))
    x.call("x: join with a bad regex", joining(x, subscribed_topic_names=None, subscribed_topic_regex="("))
    x.call("x: epoch -3", beat(x, -3))
    x.call("x: static leave without an instance id", beat(x, -2))
    other = f"{peer.group_id}-unknown"
    stranger = peer.member("stranger", coordinator_of=other)
    stranger.call("stranger: unknown group, epoch 1", beat(stranger, 1, group_id=other))
    a.call("describe: a alone", described(a))


def consumer_group_static_member_restarts(peer: Peer) -> None:
    """Static a leaves with epoch -2 and comes back under a new member id: its partitions and
    epoch, and no new group epoch; a second member with its instance id meanwhile is refused."""
    a, b = peer.member("a"), peer.member("b")
    joined = a.call("a: join (static)", joining(a, instance_id="ia"))
    listing = beat(a, joined.member_epoch, owned(joined), instance_id="ia")
    a.call("a: heartbeat, listing what it owns", listing)
    a.call("a: static leave", beat(a, -2, instance_id="ia"))
    a.call("describe: a gone for now", described(a))
    a2 = peer.member("a-restarted")
    back = a2.call("a restarted: join (static)", joining(a2, instance_id="ia"))
    a2.call("a restarted: heartbeat", beat(a2, back.member_epoch, owned(back), instance_id="ia"))
    # What it took over counts as its since epoch 0 (KIP-1251): older commits pass.
    a2.call("a restarted: commits at an epoch before its own", committing(a2, back.member_epoch - 1, 0, 1))
    b.call("b: join with a's instance id", joining(b, instance_id="ia"))
    a.call("old a: heartbeat", beat(a, back.member_epoch, instance_id="ia"))
    a2.call("describe: a restarted, no new epoch", described(a2))


def fetching(m: Member, epoch: int, *, member_id: str | None = "mine") -> OffsetFetchRequest:
    """An OffsetFetch (v9: the member's id, or ``member_id``, and ``epoch``) of the consumer
    groups' topic."""
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(
        version=9,
        groups=[
            group(
                group_id=m.peer.group_id,
                member_id=m.own_member_id if member_id == "mine" else member_id,
                member_epoch=epoch,
                topics=[group.OffsetFetchRequestTopics(name=CONSUMER_TOPIC, partition_indexes=[0, 1, 2, 3])],
            )
        ],
        require_stable=False,
    )


def consumer_group_commits_at_older_epochs(peer: Peer) -> None:
    """KIP-1251: a commit at an epoch older than the member's passes for partitions the member
    has had since that epoch (assigned, or pending revocation), and fails as a whole otherwise;
    an epoch ahead, and a version before 9, fail too. A fetch must carry the member's epoch."""
    a, b = peer.member("a"), peer.member("b")
    joined = a.call("a: join", joining(a))
    first = joined.member_epoch
    a.call("a: heartbeat, listing what it owns", beat(a, first, owned(joined)))
    a.call("a: commits at its epoch", committing(a, first, 0, 1, 2, 3))
    a.call("a: commits at an epoch ahead", committing(a, first + 1, 0))
    a.call("a: commits with OffsetCommit v8", committing(a, first, 0, version=8))
    joined = b.call("b: join (what it gets is still a's)", joining(b))
    told = a.call("a: heartbeat (gives up partitions)", beat(a, first))
    kept = {p for t in told.assignment.topic_partitions for p in t.partitions}
    given_up = sorted({0, 1, 2, 3} - kept)
    a.call("a: commits what it gives up, at its epoch", committing(a, first, *given_up))
    second = a.call("a: heartbeat, having revoked", beat(a, first, owned(told))).member_epoch
    a.call("a: commits what it kept, at its first epoch", committing(a, first, *sorted(kept)))
    a.call("a: commits what it gave up, at its first epoch", committing(a, first, *given_up))
    a.call("a: commits both, at its first epoch", committing(a, first, 0, 1, 2, 3))
    got = b.call("b: heartbeat (gets what a released)", beat(b, joined.member_epoch))
    b.call("b: heartbeat, listing what it owns", beat(b, got.member_epoch, owned(got)))
    b.call("b: commits at its epoch", committing(b, got.member_epoch, *given_up))
    b.call("b: commits at an epoch before it had them", committing(b, second - 1, *given_up))
    b.call("b: commits a's partitions at its epoch", committing(b, got.member_epoch, *sorted(kept)))
    # An OffsetFetch with a member id must carry the member's epoch, its own and no other.
    b.call("b: fetches at its epoch", fetching(b, got.member_epoch))
    b.call("b: fetches at an older epoch", fetching(b, got.member_epoch - 1))
    b.call("b: fetches at an epoch ahead", fetching(b, got.member_epoch + 1))
    b.call("unknown member: fetches", fetching(b, got.member_epoch, member_id="nobody"))
    b.call("admin: fetches without a member", fetching(b, -1, member_id=None))
    b.call("admin: fetches with an empty member id", fetching(b, -1, member_id=""))


def consumer_group_commits_of_a_classic_member(peer: Peer) -> None:
    """A classic member of a consumer group (a classic group upgraded when c joined) is fenced
    by its generation as a member of the incremental protocol is by its epoch, with
    ILLEGAL_GENERATION, in commits (it may use versions before 9) and fetches."""
    a, c = peer.member("a"), peer.member("c")
    a.call("a: join without an id", join(a))
    a.call("a: join", join(a))
    a.call("a: sync generation 1", sync(a, 1, {a: assignment(0, 1)}))
    c.call("c: join (the group is upgraded)", joining(c, subscribed_topic_names=[TOPIC]))
    a.call("a: commits at its generation", commit(a, 1))
    a.call("a: commits at a generation before it had the partition", commit(a, 0))
    a.call("a: commits at a generation ahead", commit(a, 2))
    a.call("a: commits with OffsetCommit v9", commit(a, 1, version=9))
    a.call("a: fetches at its generation", fetching(a, 1, member_id=a.member_id))
    a.call("a: fetches at an older generation", fetching(a, 0, member_id=a.member_id))


BATCHED_INTERVAL_MS = 1500


def joining_classic(m: Member, owns: Iterable[int] = ()) -> JoinGroupRequest:
    """A cooperative classic member's JoinGroup to a consumer group of ``SHARED_TOPIC``, listing
    the partitions it owns in its subscription."""
    request = join(m)
    metadata = encode_subscription([SHARED_TOPIC], owned=[TopicPartition(SHARED_TOPIC, p) for p in owns])
    request.protocols[0].metadata = metadata
    return request


def synced_partitions(answer: Any) -> list[int]:
    """What a classic member's SyncGroup ``answer`` gave it, of ``SHARED_TOPIC``."""
    partitions, _ = decode_assignment(answer.assignment)
    return sorted(p.partition for p in partitions)


def consumer_group_batched_targets_beside_a_classic_member(peer: Peer) -> None:
    """KIP-1263: the group's next target at most every ``BATCHED_INTERVAL_MS`` (set before the
    run on both servers). a, of the incremental protocol, owns all of ``SHARED_TOPIC``; c, a
    classic member, joins once the interval has passed (its target at once) and reconciles;
    b joins within the interval of that target, so no new target is made: c's heartbeats are
    answered without a rebalance (it used to be told to rejoin here, and its SyncGroups sent it
    back until the interval had passed) until a's heartbeat after the interval makes the target,
    then c rejoins and reconciles. (A heartbeat of c's after the interval and before a's is told
    to rejoin here, so that its JoinGroup makes the target; Kafka 4.3 waits for a member of the
    incremental protocol to make it: docs/coordinator.md's conformance table.)"""
    a, c, b = peer.member("a"), peer.member("c"), peer.member("b")
    joined = a.call("a: join", joining(a, subscribed_topic_names=[SHARED_TOPIC]))
    a_epoch, a_owns = joined.member_epoch, owned(joined)
    a.call("a: heartbeat, listing everything", beat(a, a_epoch, a_owns))
    time.sleep(BATCHED_INTERVAL_MS / 1000 + 0.3)
    c.call("c: join without an id", join(c))
    joined = c.call("c: join (a target at once; what it gets is a's)", joining_classic(c))
    c.call("c: sync (nothing yet)", sync(c, joined.generation_id))
    told = a.call("a: heartbeat (gives up half)", beat(a, a_epoch, a_owns))
    a_owns = owned(told)
    a_epoch = a.call("a: heartbeat, having revoked", beat(a, a_epoch, a_owns)).member_epoch
    c.call("c: heartbeat (rejoin: what it is due is free)", heartbeat(c, joined.generation_id))
    joined = c.call("c: rejoin", joining_classic(c))
    c_owns = synced_partitions(c.call("c: sync (half)", sync(c, joined.generation_id)))
    c.call("describe: Stable", described(c))
    b.call("b: join within the interval (no new target)", joining(b, subscribed_topic_names=[SHARED_TOPIC]))
    c.call("describe: Assigning", described(c))
    c.call("c: heartbeat within the interval (no rebalance)", heartbeat(c, joined.generation_id))
    time.sleep(BATCHED_INTERVAL_MS / 1000 + 0.3)
    a.call("a: heartbeat after the interval (the new target)", beat(a, a_epoch, a_owns))
    c.call("c: heartbeat (rejoin)", heartbeat(c, joined.generation_id))
    joined = c.call("c: rejoin", joining_classic(c, c_owns))
    c.call("c: sync", sync(c, joined.generation_id))


SCENARIOS: list[Callable[[Peer], None]] = [
    join_sync_heartbeat_and_leave,
    static_members_restart,
    bad_requests_and_unknown_groups,
    first_rebalance_and_a_pending_member,
    an_absent_static_leader_is_replaced,
    consumer_group_scales_out_and_in,
    consumer_group_of_three_with_a_late_revocation,
    consumer_group_fences_and_refuses,
    consumer_group_static_member_restarts,
    consumer_group_commits_at_older_epochs,
    consumer_group_commits_of_a_classic_member,
]


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(
        topics={TOPIC: 2, CONSUMER_TOPIC: 4, SHARED_TOPIC: 12}, config=CONFIG
    ) as coordinator:
        yield coordinator


def targets_at_once(kafka: KafkaCluster) -> Callable[[str], None]:
    """:func:`run`'s ``before`` for consumer groups: Kafka computes each target at once
    (``ALLOWED["batched targets"]``)."""
    return lambda group_id: kafka.set_group_config(group_id, {"consumer.assignment.interval.ms": 0})


@pytest.fixture(scope="module")
def kafka_with_topic(kafka_cluster: KafkaCluster) -> KafkaCluster:
    kafka_cluster.create_topic(TOPIC, 2)
    kafka_cluster.create_topic(CONSUMER_TOPIC, 4)
    kafka_cluster.create_topic(SHARED_TOPIC, 12)
    return kafka_cluster


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_the_embedded_coordinator_answers_as_kafka_does(
    scenario: Callable[[Peer], None], kafka_with_topic: KafkaCluster, embedded: EmbeddedCoordinator
) -> None:
    at_once = targets_at_once(kafka_with_topic) if scenario.__name__.startswith("consumer_group_") else None
    on_kafka = run("kafka", kafka_with_topic.bootstrap_servers, scenario, before=at_once)
    on_embedded = run("embedded", embedded.bootstrap_servers, scenario)
    found = differences(on_kafka, on_embedded)
    assert not found, "\n".join(found)


def test_batched_targets_beside_a_classic_member_are_answered_as_kafka_answers_them(
    kafka_with_topic: KafkaCluster, embedded: EmbeddedCoordinator
) -> None:
    """The scenario with the group's own assignment interval on both servers."""
    scenario = consumer_group_batched_targets_beside_a_classic_member
    servers = {"kafka": kafka_with_topic.bootstrap_servers, "embedded": embedded.bootstrap_servers}
    transcripts = [
        run(kind, bootstrap, scenario, before=batched(bootstrap)) for kind, bootstrap in servers.items()
    ]
    found = differences(*transcripts)
    assert not found, "\n".join(found)


def batched(bootstrap: str) -> Callable[[str], None]:
    """:func:`run`'s ``before``: the group's assignment interval at ``BATCHED_INTERVAL_MS``."""
    return lambda group_id: set_assignment_interval(bootstrap, bootstrap, group_id, BATCHED_INTERVAL_MS)


# --- generated sequences --------------------------------------------------------------------------
#
# Sequences of whole steps, each of which every member carries out as a Kafka client would
# (a rebalance is every member rejoining and syncing), drawn by hypothesis and run against both
# servers. Steps are chosen so that each answer depends only on the order of requests, never on
# timing: both servers must then give the same transcript.


class Group:
    """The members of a generated run and what they learnt from their own answers."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.members: list[Member] = []
        self.generation = -1
        self.leader = ""
        self.clients = 0

    def rebalance(self, newcomer: Member | None) -> None:
        """Everyone (and ``newcomer``, if any) joins; the leader assigns one partition each
        (round robin over the two); everyone syncs."""
        joining = list(self.members)
        waits = []
        if newcomer is not None:
            newcomer.call(f"{newcomer.client}: join without an id", join(newcomer))
            waits.append((newcomer, newcomer.send(f"{newcomer.client}: join", join(newcomer))))
            if self.members:
                self.peer.wait_for_state("PreparingRebalance")
            joining.append(newcomer)
        for m in self.members:
            if newcomer is not None:
                m.call(f"{m.client}: heartbeat (told to rejoin)", heartbeat(m, self.generation))
            waits.append((m, m.send(f"{m.client}: rejoin", join(m))))
        answers = [(m, m.answer(ref)) for m, ref in waits]
        self.members = joining
        (self.generation,) = {a.generation_id for _, a in answers}
        (self.leader,) = {a.leader for _, a in answers}
        leader = next(m for m in self.members if m.member_id == self.leader)
        syncs = [
            (m, m.send(f"{m.client}: sync", sync(m, self.generation)))
            for m in self.members
            if m is not leader
        ]
        if syncs:
            self.peer.wait_for_state("CompletingRebalance")
        plan = {m: assignment(i % 2) for i, m in enumerate(self.members)}
        leader.call(f"{leader.client}: sync as leader", sync(leader, self.generation, plan))
        for m, ref in syncs:
            m.answer(ref)

    def step(self, kind: str, index: int, delta: int) -> None:
        if kind == "join" or not self.members:
            self.clients += 1
            self.rebalance(self.peer.member(f"c{self.clients}"))
            return
        m = self.members[index % len(self.members)]
        if kind == "heartbeat":
            m.call(f"{m.client}: heartbeat, generation {delta:+d}", heartbeat(m, self.generation + delta))
        elif kind == "commit":
            m.call(f"{m.client}: commit, generation {delta:+d}", commit(m, self.generation + delta))
        elif kind == "sync":  # a stray SyncGroup in a Stable group
            m.call(f"{m.client}: sync, generation {delta:+d}", sync(m, self.generation + delta))
        elif kind == "describe":
            m.call("describe", describe(m))
        else:  # leave; the others rejoin
            if m.member_id == self.leader and len(self.members) > 2:
                # Kafka's next leader would be the first of the rest in its hash map's order of
                # their random ids (ALLOWED, "next leader"): a follower leaves instead.
                m = next(o for o in self.members if o.member_id != self.leader)
            m.call(f"{m.client}: leave", leave(m, (m.member_id, None)))
            self.members.remove(m)
            if self.members:
                for other in self.members:
                    other.call(
                        f"{other.client}: heartbeat (a member left)", heartbeat(other, self.generation)
                    )
                self.rebalance(None)


steps_st = st.lists(
    st.tuples(
        st.sampled_from(["join", "heartbeat", "commit", "sync", "describe", "leave"]),
        st.integers(0, 3),
        st.sampled_from([-1, 0, 0, 1]),
    ),
    min_size=3,
    max_size=10,
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(steps=steps_st)
def test_generated_sequences_are_answered_as_kafka_answers_them(
    steps: list[tuple[str, int, int]], kafka_with_topic: KafkaCluster, embedded: EmbeddedCoordinator
) -> None:
    def scenario(peer: Peer) -> None:
        group = Group(peer)
        for kind, index, delta in steps:
            group.step(kind, index, delta)

    scenario.__name__ = "generated"
    kinds = [kind for kind, _, _ in steps]
    event(f"{kinds.count('join')} join(s), {kinds.count('leave')} leave(s)")
    found = differences(
        run("kafka", kafka_with_topic.bootstrap_servers, scenario),
        run("embedded", embedded.bootstrap_servers, scenario),
    )
    assert not found, f"{steps}:\n" + "\n".join(found)


# KIP-848's consumer groups, generated: members join, heartbeat, acknowledge what they were given
# (listing it as owned), join again under their ids, commit what they own at an older epoch,
# send an epoch they cannot have and leave, in any order, as Kafka's consumers do when each of
# their heartbeats is answered before the next is sent. Every answer depends only on that order.


class ConsumerGroupRun:
    """The members of a generated consumer-group run and what each learnt from its answers."""

    def __init__(self, peer: Peer) -> None:
        self.peer = peer
        self.epochs: dict[Member, int] = {}  # the members in the group, at their epochs
        self.owned: dict[Member, list[Any]] = {}  # what each owns, once told
        self.told_at: dict[Member, int] = {}  # the epoch of the answer that told it
        self.instances: dict[Member, str] = {}  # the static ones (every second member)
        self.away: list[str] = []  # instances that left with -2; the next join brings one back
        self.fenced = 0  # members fenced, still in the group until their sessions end
        self.clients = 0

    def _answered(self, m: Member, answer: Any) -> None:
        if answer.error_code != 0:
            self.epochs.pop(m, None)  # as a client does: it rejoins later, as a new member
            return
        self.epochs[m] = answer.member_epoch
        if answer.assignment is not None:
            self.owned[m] = owned(answer)  # revoked and assigned at once; listed when it acknowledges
            self.told_at[m] = answer.member_epoch

    def step(self, kind: str, index: int) -> None:
        members = list(self.epochs)
        if kind == "join" and self.away:  # a static member restarted: a new id, its instance's place
            instance = self.away.pop(0)
            m = self.peer.member(f"{instance}-back")
            self.instances[m] = instance
            back = joining(m, subscribed_topic_names=[SHARED_TOPIC], instance_id=instance)
            self._answered(m, m.call(f"{m.client}: join (static, back)", back))
            return
        in_group = len(members) + len(self.away) + self.fenced
        if not members and in_group >= MOST_MEMBERS:
            return  # nobody to act, and no room for another (the fenced stay until their sessions end)
        if (kind == "join" and in_group < MOST_MEMBERS) or not members:
            self.clients += 1
            m = self.peer.member(f"c{self.clients}")
            instance = f"i{self.clients}" if self.clients % 2 == 0 else None
            if instance is not None:
                self.instances[m] = instance
            joins = joining(m, subscribed_topic_names=[SHARED_TOPIC], instance_id=instance)
            self._answered(m, m.call(f"{m.client}: join", joins))
            return
        m = members[index % len(members)]
        epoch = self.epochs[m]
        if kind == "heartbeat":
            self._answered(m, m.call(f"{m.client}: heartbeat", beat(m, epoch)))
        elif kind == "acknowledge":
            listed = beat(m, epoch, self.owned.get(m, []))
            self._answered(m, m.call(f"{m.client}: heartbeat, listing what it owns", listed))
        elif kind == "rejoin":  # epoch 0 again under its id, as after an answer it never got
            rejoins = joining(m, subscribed_topic_names=[SHARED_TOPIC])
            self._answered(m, m.call(f"{m.client}: join again under its id", rejoins))
        elif kind == "commit":  # what it owns, at an older epoch (KIP-1251)
            partitions = sorted(p for t in self.owned.get(m, []) for p in t.partitions)
            # The epoch of the answer that told it what it owns, or the one before its own (which
            # passes only if it has had them all since then).
            at, label = (
                (self.told_at[m], "the epoch it was told")
                if index % 2 and m in self.told_at
                else (epoch - 1, "its previous epoch")
            )
            m.call(
                f"{m.client}: commits what it owns at {label}",
                committing(m, at, *partitions, topic=SHARED_TOPIC),
            )
        elif kind == "ahead":  # an epoch it cannot have: fenced, and it stays away (its session runs)
            self._answered(m, m.call(f"{m.client}: heartbeat, an epoch ahead", beat(m, epoch + 1)))
            self.fenced += m not in self.epochs
        elif kind == "pause" and m in self.instances:  # a static member's leave: it comes back
            m.call(f"{m.client}: leave (static)", beat(m, -2, instance_id=self.instances[m]))
            del self.epochs[m]
            self.away.append(self.instances[m])
        elif kind in ("describe", "join", "pause"):  # the group full, or a dynamic member: describe
            m.call("describe", described(m))
        else:
            m.call(f"{m.client}: leave", beat(m, -1))
            del self.epochs[m]


consumer_steps_st = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "join",
                "heartbeat",
                "acknowledge",
                "acknowledge",
                "describe",
                "leave",
                "rejoin",
                "ahead",
                "pause",
                "commit",
            ]
        ),
        st.integers(0, 3),
    ),
    min_size=4,
    max_size=14,
)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(steps=consumer_steps_st)
def test_generated_consumer_group_sequences_are_answered_as_kafka_answers_them(
    steps: list[tuple[str, int]], kafka_with_topic: KafkaCluster, embedded: EmbeddedCoordinator
) -> None:
    def scenario(peer: Peer) -> None:
        group = ConsumerGroupRun(peer)
        for kind, index in steps:
            group.step(kind, index)

    scenario.__name__ = "generated_consumer_group"
    kinds = [kind for kind, _ in steps]
    event(f"{kinds.count('join')} join(s), {kinds.count('leave')} leave(s)")
    found = differences(
        run("kafka", kafka_with_topic.bootstrap_servers, scenario, before=targets_at_once(kafka_with_topic)),
        run("embedded", embedded.bootstrap_servers, scenario),
    )
    assert not found, f"{steps}:\n" + "\n".join(found)
