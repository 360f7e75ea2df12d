"""Consumer groups of the incremental rebalance protocol (KIP-848), sans-IO; and groups of any
other protocol type whose assignment is a set of named resources, by the same rules.

A group of another protocol type (this project's GroupHeartbeat API; the streams, leader and
spark plugins) differs only in where its resources come from: its members declare resource
groups, each with a size (``("tasks-0", 8)``: resources ``("tasks-0", 0)`` to
``("tasks-0", 7)``), and the group's resources are every declared group at the largest size a
member gives it; partitions below read as resources. Its server-side assignors are those its
protocol type's plugin registered. It has no regex, no topic ids (resources are named on the
wire), and no classic members.

Rules, as Apache Kafka 4's group coordinator has them (``GroupMetadataManager`` and
``CurrentAssignmentBuilder``); everything that decides a member's assignment lives here:

* **Epochs.** The *group epoch* grows whenever the group changes in a way that can change the
  assignment: a member joins, leaves or is fenced; a member's subscription (topic names or
  regex; another protocol type's resources or metadata) changes; a subscribed topic's partition
  count changes. A member's new rack or server assignor is kept, but is no new group epoch: the
  next target takes it into account. Whenever the group epoch is ahead of the *assignment
  epoch*, the server-side assignor computes a new *target assignment* (every member's
  partitions-to-be) and the assignment epoch becomes the group epoch. Each member has its own
  *member epoch*: the assignment epoch it has been reconciled to.
* **Reconciliation, one member at a time, on its own heartbeats** (no group-wide barrier):

  1. a member behind the assignment epoch that owns partitions its target no longer has must
     first give them up: they are *pending revocation*, the member keeps its epoch and is in
     ``UNREVOKED_PARTITIONS`` until a heartbeat no longer lists any of them as owned; they are
     then free for their next owners, and the member, still at its epoch, is reconciled
     towards the latest target: if the target moved meanwhile it may have more to revoke, at
     the same epoch (Kafka 4.3; its coordinator of 2024 moved it one epoch on first);
  2. then it moves to the assignment epoch and gets the partitions of its target that no other
     member owns; a partition another member still owns (pending revocation there) is
     *unreleased*: the member is ``UNRELEASED_PARTITIONS`` and gets it on a later heartbeat,
     once released;
  3. otherwise it is ``STABLE``.

  A partition is owned by at most one member at any time (assigned to it or pending revocation
  from it), so no partition is ever consumed by two members at once.
* **Fencing.** A heartbeat whose epoch is above the member's, or below it and not its previous
  epoch with owned partitions within its assignment (the answer that bumped it was lost), gets
  FENCED_MEMBER_EPOCH. A member that misses its session, or does not revoke within its rebalance
  timeout, is removed: its partitions are released and the group epoch grows. An unknown member
  id gets UNKNOWN_MEMBER_ID.
* **Offset commits** (KIP-1251) carry the member's epoch (a classic member's generation). At
  the member's own epoch any partition may be committed; at an epoch ahead of it nothing. At an
  older epoch the commit passes only if every partition in it has been the member's since that
  epoch or before: each partition assigned or pending revocation keeps the epoch at which it was
  assigned (its *assignment epoch*), so a commit a member sent before its epoch moved on still
  lands, and one for a partition it has given up does not. A refused commit stores nothing:
  STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a classic member; a member of the incremental
  protocol must commit with OffsetCommit v9 or later.
* **Static members** (instance id): leaving with epoch -2 keeps the member's place and
  assignment until its session ends (its partitions' assignment epochs become 0, so the next
  incarnation may commit them at any epoch); a new member with the same instance id (epoch 0) takes the
  place, the epoch and the assignment over without a new group epoch. Joining while the old
  member is active gets UNRELEASED_INSTANCE_ID; another member id using an active instance id
  gets FENCED_INSTANCE_ID.
* **The coordinator sets the pace**: the heartbeat interval and the session timeout are its
  settings, not the member's.
* **Answers** carry the assignment when the request was full (epoch 0, or rebalance timeout,
  subscription and owned partitions all given) or the member's assignment changed.

The engine never reads a clock: every entry point takes ``now_ms``; ``next_deadline()`` tells
the shell when to call :meth:`ConsumerGroups.expire`.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import operator
import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from coordinator_api._plugins._registry import AssignmentSpec, ClassicPayloads, ServerAssignor
from coordinator_api._protocol import MAX_GROUP_RESOURCES, ErrorCode
from coordinator_api.server._messages import (
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupSnapshot,
    ConsumerGroupState,
    ConsumerMemberSnapshot,
    DeclaredResources,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeftMember,
    MembershipEvent,
    MemberSnapshot,
    ResourceOwners,
    SyncGroup,
    SyncGroupResult,
    Topic,
    TopicIdPartitions,
)

TopicPartition = tuple[str, int]

PROTOCOL_TYPE = "consumer"
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(enum.Enum):
    """Where a member is in its reconciliation, named as Kafka names it."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"


def _unknown_member(member_id: str, group_id: str) -> _Refused:
    return _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")


def _fenced_instance(member_id: str, instance_id: str, holder_id: str) -> _Refused:
    return _Refused(
        ErrorCode.FENCED_INSTANCE_ID,
        f"Static member {member_id} with instance id {instance_id} was fenced by member {holder_id}.",
    )


class UpgradeRefused(Exception):
    """A classic group that cannot become a consumer group; ``reason`` ends Kafka's sentence
    "Cannot upgrade classic group G to consumer group because ..."."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Refused(Exception):
    """A heartbeat answered with an error; the group is left as it was."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message

    def event(
        self, api: str, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> MembershipEvent:
        return MembershipEvent(
            kind="rejected",
            group_id=group_id,
            generation_id=generation,
            member_id=member_id or None,
            group_instance_id=instance_id,
            detail=f"{api}: {self.error.name}: {self.message}",
        )


@dataclass(kw_only=True)
class _Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = 0
    topics: frozenset[str] = frozenset()
    regex: str | None = None
    server_assignor: str | None = None
    resources: DeclaredResources = ()  # another protocol type's declared resource groups
    metadata: bytes = b""  # another protocol type's payload for its server-side assignor
    client_id: str = ""
    client_host: str = ""
    epoch: int = 0
    previous_epoch: int = 0
    state: MemberState = MemberState.STABLE
    assigned: frozenset[TopicPartition] = frozenset()
    pending_revocation: frozenset[TopicPartition] = frozenset()
    # The epoch at which each partition assigned or pending revocation was assigned (KIP-1251).
    assignment_epochs: dict[TopicPartition, int] = field(default_factory=dict)
    session_deadline: int = 0
    revocation_deadline: int | None = None
    classic: ClassicMembership | None = None
    # A classic member told to rejoin (or answered its JoinGroup) must rejoin (or sync) by then.
    classic_deadline: int | None = None
    # With the authorizer: which topics its regex may give it (its principal and host against
    # the ACLs in force), from its latest heartbeat.
    may_describe_topic: Callable[[str], bool] | None = None
    # When its timer fires: the coordinator's one timer for it, at or before its earliest
    # deadline (None: none is set).
    timer_at: int | None = None
    # The answer to its latest plain heartbeat (renew_session), given again while the same.
    renewal: ConsumerGroupHeartbeatResult | None = None
    # Its latest heartbeat that restated it (renew_session), what of it that one restated, and
    # the answer, given again while the same.
    restated: tuple[ConsumerGroupHeartbeat, tuple[object, ...], ConsumerGroupHeartbeatResult] | None = None
    # How the latest target's assignor saw it, shown again while the same (_assignment_spec).
    spec: AssignmentSpec | None = None
    # The topics it subscribes to that exist, and what they were found from, kept while that
    # stays the same (_subscribed_topics).
    subscribed: tuple[tuple[object, ...], frozenset[str]] | None = None
    # Its latest plain heartbeat held, what it owned then, and the form it was held in (its
    # owned partitions filled in), held in that form again while the same (nothing_new).
    held_plain: tuple[ConsumerGroupHeartbeat, frozenset[TopicPartition], ConsumerGroupHeartbeat] | None = None


_MEMBER_ID = operator.attrgetter("member_id")


def _stale(member: _Member) -> ErrorCode:
    """What an offset commit or fetch at an epoch ``member`` does not allow gets: Kafka's
    STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a member of the classic protocol."""
    return ErrorCode.STALE_MEMBER_EPOCH if member.classic is None else ErrorCode.ILLEGAL_GENERATION


def _every_topic(topic: str) -> bool:
    """Without the authorizer, a regex gives a member every topic it matches."""
    return True


def _subscription_of(member: _Member) -> tuple[object, ...]:
    """What, of a member, a change of means a new group epoch. Its rack and server assignor are
    not in it: Kafka 4's coordinator takes them into account at the next target only."""
    return (member.topics, member.regex, member.resources, member.metadata)


def _full(req: ConsumerGroupHeartbeat) -> bool:
    """Whether a heartbeat is a full one (a join, or every field given), whose answer carries the
    member's assignment whether it changed or not."""
    return req.member_epoch == JOIN_EPOCH or (
        req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None and req.owned is not None
    )


def _regex(given: str) -> str | None:
    """A member's regex subscription as a heartbeat gives it: an empty one is none (it clears
    the member's; librdkafka sends one beside topic names)."""
    return given or None


def _reconciled(member: _Member) -> tuple[object, ...]:
    """What of a member a reconciliation can change that the store keeps (its assignment
    epochs change only with these)."""
    return (member.epoch, member.previous_epoch, member.state, member.assigned, member.pending_revocation)


#: The serials of every group's changes (see :class:`NewsSerials`): unique across groups, so a
#: group made again under an id never repeats one its predecessor had.
_SERIALS = itertools.count(1)


@dataclass(frozen=True)
class NewsSerials:
    """Where a group stands for its held heartbeats, each a number that moves with a kind of
    change that members other than the one whose request made it may have to hear of.

    ``group``: the target changed, or a member left (the target is computed anew when the held
    heartbeats are looked at): any member may have news. ``owners``: only who owns which
    partitions (assigned or being revoked): news only for the members
    :meth:`ConsumerGroups.waits_for_owners` names. A member that joins moves neither by itself
    (the target computed for it does), nor does one that moves to the group's epoch keeping
    what it has, as every member does once after each change.
    """

    group: int
    owners: int


@dataclass(frozen=True, kw_only=True)
class ClassicMembership:
    """What a member that speaks the classic protocol in a consumer group joined with."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(kw_only=True)
class _Group:
    group_id: str
    protocol_type: str = PROTOCOL_TYPE
    # A new group starts at epoch 1 with an empty target at 1, so its first target is 2 and its
    # first member's epoch 2, as on Kafka 4.3 (KAFKA-20268; Kafka before 4.3 started at 0).
    group_epoch: int = 1
    assignment_epoch: int = 1
    members: dict[str, _Member] = field(default_factory=dict)
    static: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    target: dict[str, frozenset[TopicPartition]] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)  # assigned or pending revocation
    partition_counts: dict[str, int] = field(default_factory=dict)  # of the subscribed topics
    topics_seen: int = -1  # the coordinator's topics_version when partition_counts was computed
    assigned_at_ms: int | None = None  # when its target was last computed (None: not by this process)
    news: NewsSerials = field(default_factory=lambda: NewsSerials(next(_SERIALS), next(_SERIALS)))
    # The members whose target changed, and those that left, since the held heartbeats were
    # last looked at (ConsumerGroups.take_retargeted); None: too many to list, look at all.
    retargeted: set[str] | None = field(default_factory=set)
    # What the store has yet to hear of (see ConsumerGroups.changes): members changed, and
    # members that left; and the ids of every group with some, shared (None: no store).
    changed_members: set[str] = field(default_factory=set)
    left_members: set[str] = field(default_factory=set)
    unwritten: set[str] | None = None

    def changed_for_all(self) -> None:
        self.news = NewsSerials(next(_SERIALS), self.news.owners)

    def retarget(self, member_id: str) -> None:
        if self.retargeted is not None:
            self.retargeted.add(member_id)
            if len(self.retargeted) > len(self.members):  # members that keep leaving and joining
                self.retargeted = None

    def owners_changed(self) -> None:
        self.news = NewsSerials(self.news.group, next(_SERIALS))

    def epochs_changed(self) -> None:
        """The store must hear of its epochs."""
        if self.unwritten is not None:
            self.unwritten.add(self.group_id)

    def member_changed(self, member_id: str) -> None:
        if self.unwritten is not None:
            self.left_members.discard(member_id)  # back under the same id (a static member)
            self.changed_members.add(member_id)
            self.unwritten.add(self.group_id)

    def member_left(self, member_id: str) -> None:
        if self.unwritten is not None:
            self.changed_members.discard(member_id)
            self.left_members.add(member_id)
            self.unwritten.add(self.group_id)

    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.assignment_epoch != self.group_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(
            m.epoch != self.assignment_epoch or m.state is not MemberState.STABLE
            for m in self.members.values()
        ):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE


class ConsumerGroups:
    """Every group of the incremental protocol on this coordinator: consumer groups, and groups
    of the other protocol types that have server-side assignors.

    :param assignors: the server-side assignors by name (Kafka's ``group.consumer.assignors``);
        the first is the default. With none, every heartbeat gets UNSUPPORTED_ASSIGNOR.
    :param resource_assignors: for each other protocol type, its server-side assignors by name
        (the first is the default); a heartbeat of a protocol type not here gets
        UNSUPPORTED_ASSIGNOR.
    :param topics: the coordinator's topics by name (read, never changed, here).
    :param session_timeout_ms: ``group.consumer.session.timeout.ms``.
    :param heartbeat_interval_ms: ``group.consumer.heartbeat.interval.ms``.
    :param max_group_size: ``group.consumer.max.size``; ``None`` is unlimited.
    :param member_id_factory: makes a member id for a version 0 join (injectable for tests).
    :param classic_payloads: how the consumer protocol's classic payloads read; without them a
        classic group is never upgraded and classic members cannot join a consumer group.
    :param stored: whether a store writes the groups' :meth:`changes`; without one they are
        not kept.
    """

    def __init__(
        self,
        *,
        assignors: Mapping[str, ServerAssignor],
        topics: Mapping[str, Topic],
        topic_names: Mapping[bytes, str],
        resource_assignors: Mapping[str, Mapping[str, ServerAssignor]] | None = None,
        session_timeout_ms: int = 45_000,
        heartbeat_interval_ms: int = 5_000,
        assignment_interval_ms: int = 0,
        max_group_size: int | None = None,
        member_id_factory: Callable[[], str] = lambda: str(uuid.uuid4()),
        classic_payloads: ClassicPayloads | None = None,
        stored: bool = True,
    ) -> None:
        self._payloads = classic_payloads
        self._unwritten: set[str] | None = set() if stored else None
        self._assignors: dict[str, dict[str, ServerAssignor]] = {
            protocol_type: dict(named)
            for protocol_type, named in (resource_assignors or {}).items()
            if protocol_type != PROTOCOL_TYPE
        }
        self._assignors[PROTOCOL_TYPE] = dict(assignors)
        self._topics = topics
        self._topic_names = topic_names  # each of ``topics``' name by its topic id
        self._topics_version = 0  # counts the changes of ``topics`` (topics_changed)
        self._timeouts = (session_timeout_ms, heartbeat_interval_ms)
        # The session and interval of the groups that have their own (group configs, KIP-848).
        self._own_timeouts: dict[str, tuple[int, int]] = {}
        self._assignment_interval_ms = assignment_interval_ms
        self._own_assignment_intervals: dict[str, int] = {}  # KIP-1263's, by consumer group
        self._max_group_size = max_group_size
        self._new_member_id = member_id_factory
        self._groups: dict[str, _Group] = {}
        # (deadline, sequence, group id, member id); stale entries are checked when popped.
        self._timers: list[tuple[int, int, str, str]] = []
        self._timer_seq = 0

    # --- what the rest of the coordinator asks ---------------------------------------------

    @property
    def topics_version(self) -> int:
        """Counts :meth:`topics_changed`."""
        return self._topics_version

    def topics_changed(self) -> None:
        """The coordinator's topics changed: one was created, given more partitions or deleted. Each
        consumer group looks at its subscribed partitions again at its next heartbeat and, if
        they changed, moves to a new group epoch, as Kafka's coordinator does when a new
        metadata image changes the topics a group subscribes to."""
        self._topics_version += 1

    def recount_topics(self, group_id: str) -> list[MembershipEvent]:
        """Count the subscribed partitions of consumer group ``group_id`` again now, after a
        change of the coordinator's topics, as its next heartbeat would: a new group epoch if
        they changed (for a group whose members' heartbeats are held, which would otherwise
        hear of the new partitions only when a hold ends)."""
        group = self._groups.get(group_id)
        if group is None or group.protocol_type != PROTOCOL_TYPE or group.topics_seen == self._topics_version:
            return []
        counts = self._subscribed_partition_counts(group)
        if counts == group.partition_counts:
            return []
        group.partition_counts = counts
        group.group_epoch += 1
        group.changed_for_all()
        detail = "group epoch bumped: its subscribed topics' partitions changed"
        epoch = group.group_epoch
        return [MembershipEvent(kind="rebalance", group_id=group_id, generation_id=epoch, detail=detail)]

    def __contains__(self, group_id: object) -> bool:
        return group_id in self._groups

    def group_ids(self) -> list[str]:
        return sorted(self._groups)

    def timeouts(self, group_id: str) -> tuple[int, int]:
        """The session and heartbeat interval, in ms, the coordinator gives the members of
        ``group_id`` (which need not exist yet)."""
        return self._own_timeouts.get(group_id, self._timeouts)

    def set_timeouts(self, group_id: str, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """Give the members of ``group_id`` (now or later) this session and interval (a group
        config). A member learns a new interval from its next heartbeat's answer, and each
        heartbeat from then on starts a session of the new length, as Kafka's coordinator does:
        a session already running is not cut short."""
        timeouts = (session_timeout_ms, heartbeat_interval_ms)
        if timeouts == self._timeouts:
            self._own_timeouts.pop(group_id, None)
        else:
            self._own_timeouts[group_id] = timeouts

    def set_assignment_interval(self, group_id: str, interval_ms: int) -> None:
        """Compute the target of consumer group ``group_id`` at most every ``interval_ms`` (a
        group config, KIP-1263; 0: at every change), from its next change on."""
        if interval_ms == self._assignment_interval_ms:
            self._own_assignment_intervals.pop(group_id, None)
        else:
            self._own_assignment_intervals[group_id] = interval_ms

    def protocol_type(self, group_id: str) -> str:
        return self._groups[group_id].protocol_type

    def state(self, group_id: str) -> ConsumerGroupState:
        return self._groups[group_id].state()

    def group_epoch(self, group_id: str) -> int:
        return self._groups[group_id].group_epoch

    def news_serials(self, group_id: str, now_ms: int) -> NewsSerials | None:
        """Where ``group_id`` stands for its held heartbeats (``None``: no such group), with
        the new target it is due (:meth:`news_for` would compute it at the first look): a
        look taken at these serials sees that target, so the target does not bring on a
        second look at every held heartbeat."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        self._maybe_compute_target(group, now_ms)
        return group.news

    def take_retargeted(self, group_id: str) -> set[str] | None:
        """The members of ``group_id`` whose target changed, and those that left, since the
        last call (None: every member may have, or the group is gone). After a change of the
        ``group`` serial (:class:`NewsSerials`) only their held heartbeats, and those
        :meth:`waits_for_owners` names, can have news: a member that owns its whole target,
        which did not change, moves only to the new epoch, and that waits for its hold's end."""
        group = self._groups.get(group_id)
        if group is None:
            return None
        taken, group.retargeted = group.retargeted, set()
        return taken

    def waits_for_owners(self, req: ConsumerGroupHeartbeat) -> bool:
        """Whether the held heartbeat ``req`` may have news when partitions change owners and
        nothing else changes: it asked who owns what, or its member is not stable with its
        whole target (it waits for partitions others still own)."""
        group = self._groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        return (
            req.list_owners
            or group is None
            or member is None
            or member.state is not MemberState.STABLE
            or group.target.get(member.member_id) != member.assigned
        )

    def has_members(self, group_id: str) -> bool:
        return bool(self._groups[group_id].members)

    def check_commit(
        self,
        group_id: str,
        member_id: str,
        member_epoch: int,
        partitions: Iterable[TopicPartition],
        version: int,
    ) -> ErrorCode:
        """Whether an OffsetCommit (at ``version``) of ``partitions`` from ``member_id`` at
        ``member_epoch`` may be stored, all of it or none (see the module's rules).

        As Kafka 4.3 (``ConsumerGroup.validateOffsetCommit``): a commit with a negative epoch
        is accepted while the group has no members (an admin or a simple consumer); otherwise
        the member must exist (UNKNOWN_MEMBER_ID), speak the incremental protocol with v9 or
        later (UNSUPPORTED_VERSION) and be at the epoch it commits with, or at an older one at
        or after each partition's assignment epoch (else STALE_MEMBER_EPOCH, or
        ILLEGAL_GENERATION for a classic member).
        """
        group = self._groups[group_id]
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.classic is None and version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch == member.epoch:
            return ErrorCode.NONE
        if member_epoch > member.epoch:
            return _stale(member)
        for partition in partitions:
            assigned_at = member.assignment_epochs.get(partition)
            if assigned_at is None or member_epoch < assigned_at:
                return _stale(member)
        return ErrorCode.NONE

    def check_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> ErrorCode:
        """Whether an OffsetFetch from ``member_id`` at ``member_epoch`` may be answered, as
        Kafka 4.3's ``ConsumerGroup.validateOffsetFetch``: without a member (None, and a
        negative epoch: an admin) it may; otherwise the member must exist (UNKNOWN_MEMBER_ID)
        and be at that very epoch (else STALE_MEMBER_EPOCH, or ILLEGAL_GENERATION for a
        classic member)."""
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = None if member_id is None else self._groups[group_id].members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.epoch:
            return _stale(member)
        return ErrorCode.NONE

    def subscribed_topics(self, group_id: str) -> frozenset[str]:
        """What the group's members subscribe to, as Kafka's ``ModernGroup.isSubscribedToTopic``
        reads it: every topic a member names, and those its regex gives it (for a group of
        another protocol type, the resource groups its members declare)."""
        group = self._groups[group_id]
        subscribed: set[str] = set()
        for member in group.members.values():
            subscribed |= member.topics | self._subscribed_topics(group, member)
        return frozenset(subscribed)

    def delete(self, group_id: str) -> ErrorCode:
        """Forget an empty group (DeleteGroups); NON_EMPTY_GROUP while it has members."""
        group = self._groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self._groups[group_id]
        return ErrorCode.NONE

    def describe(self, group_id: str) -> DescribedConsumerGroup:
        group = self._groups.get(group_id)
        if group is None:
            return DescribedConsumerGroup(
                group_id=group_id, error=ErrorCode.GROUP_ID_NOT_FOUND, message=f"Group {group_id} not found."
            )
        return DescribedConsumerGroup(
            group_id=group_id,
            error=ErrorCode.NONE,
            state=group.state().value,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor_name=self._preferred_assignor(group),
            protocol_type=group.protocol_type,
            members=tuple(
                DescribedConsumerMember(
                    member_id=m.member_id,
                    instance_id=m.instance_id,
                    rack_id=m.rack_id,
                    member_epoch=m.epoch,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    subscribed_topic_names=tuple(sorted(m.topics)),
                    subscribed_topic_regex=m.regex,
                    # What it is responsible for, as Kafka describes it: the partitions it is
                    # still to give up count until it has.
                    assignment=self._described(group, m.assigned | m.pending_revocation),
                    target_assignment=self._described(group, group.target.get(m.member_id, frozenset())),
                    metadata=m.metadata,
                    classic=m.classic is not None,
                )
                for m in sorted(group.members.values(), key=lambda m: m.member_id)
            ),
        )

    def next_deadline(self) -> int | None:
        return self._timers[0][0] if self._timers else None

    # --- durable state --------------------------------------------------------------------------

    def has_changes(self) -> bool:
        """Whether :meth:`changes` has something to write (never, for groups not stored)."""
        return bool(self._unwritten)

    def changes(self) -> list[ConsumerGroupSnapshot]:
        """What must survive a restart of what changed since the last call (what a store
        writes): for each group that changed, its epochs, the members that changed and the
        ids of those that left."""
        writes = []
        for group_id in sorted(self._unwritten or ()):
            group = self._groups.get(group_id)
            if group is None:
                continue  # deleted, or a classic group again: written as such
            changed = sorted(m for m in group.changed_members if m in group.members)
            writes.append(self._as_stored(group, changed, left=tuple(sorted(group.left_members))))
            group.changed_members, group.left_members = set(), set()
        if self._unwritten:
            self._unwritten.clear()
        return writes

    def snapshot(self, group_id: str) -> ConsumerGroupSnapshot:
        """The whole group as a store holds it once it has written every change."""
        group = self._groups[group_id]
        return self._as_stored(group, sorted(group.members))

    def _as_stored(
        self, group: _Group, member_ids: Iterable[str], left: tuple[str, ...] = ()
    ) -> ConsumerGroupSnapshot:
        return ConsumerGroupSnapshot(
            group_id=group.group_id,
            group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            protocol_type=group.protocol_type,
            members=tuple(self._stored(group, group.members[m]) for m in member_ids),
            left=left,
        )

    @staticmethod
    def _stored(group: _Group, m: _Member) -> ConsumerMemberSnapshot:
        return ConsumerMemberSnapshot(
            member_id=m.member_id,
            instance_id=m.instance_id,
            rack_id=m.rack_id,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            topics=tuple(sorted(m.topics)),
            regex=m.regex,
            server_assignor=m.server_assignor,
            client_id=m.client_id,
            client_host=m.client_host,
            epoch=m.epoch,
            previous_epoch=m.previous_epoch,
            state=m.state.value,
            assigned=tuple(sorted(m.assigned)),
            pending_revocation=tuple(sorted(m.pending_revocation)),
            target=tuple(sorted(group.target.get(m.member_id, ()))),
            assignment_epochs=tuple(sorted((t, p, e) for (t, p), e in m.assignment_epochs.items())),
            classic_session_timeout_ms=m.classic.session_timeout_ms if m.classic else None,
            classic_protocols=m.classic.protocols if m.classic else (),
            resources=m.resources,
            metadata=m.metadata,
        )

    def restore(self, snapshots: Iterable[ConsumerGroupSnapshot], now_ms: int) -> None:
        """Load stored groups. Each member has a whole session from ``now_ms`` to heartbeat (and
        a whole rebalance timeout to finish revoking), as after a Kafka coordinator moves."""
        for snap in snapshots:
            group = _Group(
                unwritten=self._unwritten,
                group_id=snap.group_id,
                group_epoch=snap.group_epoch,
                assignment_epoch=snap.assignment_epoch,
                protocol_type=snap.protocol_type,
            )
            for ms in snap.members:
                member = _Member(
                    member_id=ms.member_id,
                    instance_id=ms.instance_id,
                    rack_id=ms.rack_id,
                    rebalance_timeout_ms=ms.rebalance_timeout_ms,
                    topics=frozenset(ms.topics),
                    regex=ms.regex,
                    server_assignor=ms.server_assignor,
                    resources=ms.resources,
                    metadata=ms.metadata,
                    client_id=ms.client_id,
                    client_host=ms.client_host,
                    epoch=ms.epoch,
                    previous_epoch=ms.previous_epoch,
                    state=MemberState(ms.state),
                    assigned=frozenset(ms.assigned),
                    pending_revocation=frozenset(ms.pending_revocation),
                )
                # A data directory from before assignment epochs were kept: the member's epoch
                # (0 for a static member away), as Kafka 4.3 reads its older records.
                stored = {(t, p): e for t, p, e in ms.assignment_epochs}
                held = member.assigned | member.pending_revocation
                member.assignment_epochs = {p: stored.get(p, max(member.epoch, 0)) for p in held}
                if ms.classic_session_timeout_ms is not None:
                    member.classic = ClassicMembership(
                        session_timeout_ms=ms.classic_session_timeout_ms, protocols=ms.classic_protocols
                    )
                member.session_deadline = now_ms + self._session_timeout(group.group_id, member)
                group.members[member.member_id] = member
                group.target[member.member_id] = frozenset(ms.target)
                if member.instance_id is not None:
                    group.static[member.instance_id] = member.member_id
                for partition in member.assigned | member.pending_revocation:
                    group.owners[partition] = member.member_id
                self._schedule(group.group_id, member)
                if member.state is MemberState.UNREVOKED_PARTITIONS:
                    member.revocation_deadline = now_ms + member.rebalance_timeout_ms
                    self._schedule(group.group_id, member)
            group.partition_counts = self._subscribed_partition_counts(group)
            self._groups[group.group_id] = group

    # --- heartbeats -------------------------------------------------------------------------

    def heartbeat(
        self, req: ConsumerGroupHeartbeat, now_ms: int
    ) -> tuple[ConsumerGroupHeartbeatResult, list[MembershipEvent]]:
        """Handle one ConsumerGroupHeartbeat; returns the answer and what changed."""
        renewed = self.renew_session(req, now_ms)
        if renewed is not None:
            return renewed, []
        events: list[MembershipEvent] = []
        try:
            self._validate(req)
            if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                return self._leave(req, events), events
            return self._heartbeat(req, now_ms, events), events
        except _Refused as refused:
            if req.group_id:
                events.append(
                    refused.event(
                        "ConsumerGroupHeartbeat" if req.protocol_type == PROTOCOL_TYPE else "GroupHeartbeat",
                        req.group_id,
                        req.member_epoch,
                        req.member_id,
                        req.instance_id,
                    )
                )
            return (
                ConsumerGroupHeartbeatResult(error=refused.error, message=refused.message),
                events,
            )

    def renew_session(self, req: ConsumerGroupHeartbeat, now_ms: int) -> ConsumerGroupHeartbeatResult | None:
        """The answer to a steady heartbeat of a member that is stable at its group's epoch, in
        a group whose target is up to date and whose topics have not changed: the rules below
        would only renew its session and answer, which this does without running them. A steady
        heartbeat says nothing but the member and its epoch
        (:attr:`~ConsumerGroupHeartbeat.renews_only`), or restates exactly what the coordinator
        has of the member (this project's members send every field in every heartbeat); the
        answer to the second carries the assignment, as :meth:`heartbeat` gives it. None for any
        other heartbeat."""
        lean = req.renews_only
        if not lean and (req.member_epoch <= 0 or req.may_describe_topic is not None):
            return None
        group = self._groups.get(req.group_id)
        if group is None or group.protocol_type != req.protocol_type:
            return None
        member = group.members.get(req.member_id)
        if (
            member is None
            or member.epoch != req.member_epoch
            or member.state is not MemberState.STABLE
            or member.classic is not None
            or member.epoch != group.assignment_epoch
            or group.group_epoch != group.assignment_epoch
            or (group.protocol_type == PROTOCOL_TYPE and group.topics_seen != self._topics_version)
        ):
            return None
        session, interval = self._own_timeouts.get(group.group_id, self._timeouts)  # self.timeouts, inlined
        if not lean:
            answer = self._restated(group, member, req, interval)
            if answer is None:
                return None
        member.client_id, member.client_host = req.client_id, req.client_host
        member.session_deadline = now_ms + session
        self._schedule(group.group_id, member)
        if not lean:
            return answer
        renewal = member.renewal  # all it says is the member's id, its epoch and the interval
        if (
            renewal is None
            or renewal.member_epoch != member.epoch
            or renewal.member_id != member.member_id
            or renewal.heartbeat_interval_ms != interval
        ):
            renewal = member.renewal = self._answer(group, member, full=False, changed=False)
        return renewal

    def _restated(
        self, group: _Group, member: _Member, req: ConsumerGroupHeartbeat, interval: int
    ) -> ConsumerGroupHeartbeatResult | None:
        """The answer to ``req`` if it restates exactly what the coordinator has of ``member``
        (:meth:`_restates`), else None. A member's heartbeats decode to one request object while
        their bytes stay the same (the server's heartbeat cache), so the member's latest such
        request and its answer are kept with what of the member they depend on, and the answer
        is given again while the request and that state are the same: a restating heartbeat then
        costs about what a plain one costs. Not kept for an answer that lists every member's
        resources, which other members move."""
        state = (
            member.epoch,
            member.assigned,
            member.topics,
            member.regex,
            member.resources,
            member.metadata,
            member.instance_id,
            member.rack_id,
            member.rebalance_timeout_ms,
            member.server_assignor,
            interval,
            self._topics_version,  # the topic ids its owned partitions name
        )
        kept = member.restated
        if kept is not None and kept[0] is req and kept[1] == state:
            return kept[2]
        if not self._restates(group, member, req):
            return None
        answer = self._answer(group, member, full=_full(req), changed=False, list_owners=req.list_owners)
        member.restated = None if req.list_owners else (req, state, answer)
        return answer

    def _restates(self, group: _Group, member: _Member, req: ConsumerGroupHeartbeat) -> bool:
        """Whether every field ``req`` gives is what the coordinator already has of ``member``
        (so :meth:`_heartbeat` would change nothing: a stable member reconciles no further)."""
        return (
            req.instance_id in (None, member.instance_id)
            and req.rack_id in (None, member.rack_id)
            and req.rebalance_timeout_ms in (-1, member.rebalance_timeout_ms)
            and req.server_assignor in (None, member.server_assignor)
            and (req.subscribed_topic_names is None or frozenset(req.subscribed_topic_names) == member.topics)
            and (req.subscribed_topic_regex is None or _regex(req.subscribed_topic_regex) == member.regex)
            and (req.resources is None or req.resources == member.resources)
            and (req.metadata is None or req.metadata == member.metadata)
            and (req.owned is None or self._owned(group, req.owned) == member.assigned)
        )

    def _validate(self, req: ConsumerGroupHeartbeat) -> None:
        def invalid(message: str) -> _Refused:
            return _Refused(ErrorCode.INVALID_REQUEST, message)

        needs_id = req.member_id_required or req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH
        if needs_id and not req.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if not req.group_id.strip():
            raise invalid("GroupId can't be empty.")
        for name, value in (("InstanceId", req.instance_id), ("RackId", req.rack_id)):
            if value is not None and not value.strip():
                raise invalid(f"{name} can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                owned = "TopicPartitions" if req.protocol_type == PROTOCOL_TYPE else "OwnedResources"
                raise invalid(f"{owned} must be empty when (re-)joining.")
            if req.protocol_type != PROTOCOL_TYPE and req.resources is None:
                raise invalid("Resources must be non-null when (re-)joining.")
            if (
                req.protocol_type == PROTOCOL_TYPE
                and req.subscribed_topic_names is None
                and req.subscribed_topic_regex is None
            ):
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
                )
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif req.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if req.rebalance_timeout_ms < -1:
            raise invalid("RebalanceTimeoutMs is invalid.")
        if req.resources is not None:
            names = [name for name, _ in req.resources]
            if any(not name.strip() for name in names) or len(set(names)) != len(names):
                raise invalid("Resources must have distinct, non-empty names.")
            if any(count < 1 for _, count in req.resources):
                raise invalid("Every resource group must have at least one resource.")
            if sum(count for _, count in req.resources) > MAX_GROUP_RESOURCES:
                raise invalid(f"A group may have at most {MAX_GROUP_RESOURCES} resources.")
        assignors = self._assignors.get(req.protocol_type, {})
        if not assignors:
            raise _Refused(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"No server-side assignor is installed for protocol type {req.protocol_type} (is its "
                "plugin installed and enabled?).",
            )
        if req.server_assignor is not None and req.server_assignor not in assignors:
            raise _Refused(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                + ", ".join(assignors)
                + ".",
            )
        if req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise _Refused(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex `{req.subscribed_topic_regex}` is not a valid regular "
                    f"expression: {exc}.",
                ) from None

    def _heartbeat(
        self, req: ConsumerGroupHeartbeat, now_ms: int, events: list[MembershipEvent]
    ) -> ConsumerGroupHeartbeatResult:
        group = self._group_of(req)
        if group is None:
            if req.member_epoch != JOIN_EPOCH:
                raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
            group = _Group(group_id=req.group_id, protocol_type=req.protocol_type, unwritten=self._unwritten)
        member_id = req.member_id or self._new_member_id()
        if (
            self._max_group_size is not None
            and len(group.members) >= self._max_group_size
            and member_id not in group.members
            and not (req.instance_id is not None and req.instance_id in group.static)
        ):
            raise _Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self._max_group_size} members.",
            )
        owned = self._owned(group, req.owned)
        old, joined = self._member_for(group, req, member_id, owned, events)
        self._groups[group.group_id] = group  # a new group exists once it has a member

        # The member is updated in place (a plain heartbeat changes nothing but its session);
        # what it subscribed to and what it had are kept to see what changed.
        updated, before, assigned_before = old, _subscription_of(old), old.assigned
        if req.instance_id is not None:
            updated.instance_id = req.instance_id
        if req.rack_id is not None:
            updated.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            updated.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            updated.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            updated.topics = frozenset(req.subscribed_topic_names)
        if req.subscribed_topic_regex is not None:
            updated.regex = _regex(req.subscribed_topic_regex)
        if req.may_describe_topic is not None:
            updated.may_describe_topic = req.may_describe_topic
        if req.resources is not None:
            updated.resources = req.resources
            updated.topics = frozenset(name for name, _ in req.resources)
        if req.metadata is not None:
            updated.metadata = req.metadata
        updated.client_id, updated.client_host = req.client_id, req.client_host
        updated.classic = updated.classic_deadline = None  # it speaks this protocol now
        self._update(group, before, updated, joined, owned, now_ms, events)
        updated.session_deadline = now_ms + self.timeouts(group.group_id)[0]
        self._schedule(group.group_id, updated)

        changed = updated.assigned != assigned_before or joined
        return self._answer(group, updated, full=_full(req), changed=changed, list_owners=req.list_owners)

    def _update(
        self,
        group: _Group,
        before: tuple[object, ...],
        updated: _Member,
        joined: bool,
        owned: frozenset[TopicPartition] | None,
        now_ms: int,
        events: list[MembershipEvent],
    ) -> None:
        """Put ``updated`` (the member as its request says; ``before``, what it subscribed to
        before it) in the group: a new group epoch if the group changed, a new target if
        needed, and the member reconciled towards it."""
        member_id = updated.member_id
        bump = group.group_epoch == 0 or joined
        bump |= _subscription_of(updated) != before
        group.members[member_id] = updated
        group.member_changed(member_id)
        if updated.instance_id is not None:
            group.static[updated.instance_id] = member_id
        # Subscribed partition counts change only with a subscription or with the coordinator's
        # topics (created, given more partitions or deleted): recounting on those alone keeps a
        # plain heartbeat O(1) in the group's size.
        topics_changed = group.protocol_type == PROTOCOL_TYPE and group.topics_seen != self._topics_version
        if bump or topics_changed:
            counts = self._subscribed_partition_counts(group)
            if counts != group.partition_counts:
                group.partition_counts = counts
                bump = True
        if bump:
            group.group_epoch += 1
            events.append(
                MembershipEvent(
                    kind="rebalance",
                    group_id=group.group_id,
                    generation_id=group.group_epoch,
                    member_id=member_id,
                    detail="group epoch bumped",
                )
            )
        self._maybe_compute_target(group, now_ms)
        self._reconcile(group, updated, owned, now_ms, events)

    def _group_of(self, req: ConsumerGroupHeartbeat) -> _Group | None:
        """The group a heartbeat names, if it exists: INCONSISTENT_GROUP_PROTOCOL if it is a
        group of another protocol type."""
        group = self._groups.get(req.group_id)
        if group is not None and group.protocol_type != req.protocol_type:
            raise _Refused(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {req.group_id} is a group of protocol type {group.protocol_type}, "
                f"not {req.protocol_type}.",
            )
        return group

    def _answer(
        self, group: _Group, member: _Member, *, full: bool, changed: bool, list_owners: bool = False
    ) -> ConsumerGroupHeartbeatResult:
        return ConsumerGroupHeartbeatResult(
            error=ErrorCode.NONE,
            member_id=member.member_id,
            member_epoch=member.epoch,
            heartbeat_interval_ms=self.timeouts(group.group_id)[1],
            assignment=self._by_topic_id(group, member.assigned) if full or changed else None,
            owners=self._owners(group) if list_owners else None,
        )

    @staticmethod
    def _owners(group: _Group) -> ResourceOwners:
        """Who acts on each resource now (assigned to it, not being revoked), with its payload."""
        return tuple(
            sorted(
                (name, index, m.member_id, m.metadata)
                for m in group.members.values()
                for name, index in m.assigned
            )
        )

    def _member_for(
        self,
        group: _Group,
        req: ConsumerGroupHeartbeat,
        member_id: str,
        owned: frozenset[TopicPartition] | None,
        events: list[MembershipEvent],
    ) -> tuple[_Member, bool]:
        """The member as it was before this heartbeat, and whether it is new to the group."""
        existing = group.members.get(member_id)
        if req.instance_id is None:
            if req.member_epoch == JOIN_EPOCH:
                # A member still in the group that joins again under its id (its answer was
                # lost, or it gave everything up and starts over) stays the same member, at its
                # epoch, with what it now owns (nothing, usually): as on Kafka 4's brokers, no new
                # group epoch and no change for anyone else.
                if existing is not None:
                    return existing, False
                return _Member(member_id=member_id), True
            if existing is None:
                raise _unknown_member(member_id, group.group_id)
            self._check_epoch(existing, req.member_epoch, owned)
            return existing, False

        holder_id = group.static.get(req.instance_id)
        holder = group.members.get(holder_id) if holder_id is not None else None
        if req.member_epoch == JOIN_EPOCH:
            if holder is None:
                return _Member(member_id=member_id, instance_id=req.instance_id), True
            if holder.epoch != STATIC_LEAVE_EPOCH and holder.classic is None:
                raise _Refused(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {req.instance_id} cannot join the group "
                    f"because the instance id is owned by {holder.member_id} member.",
                )
            return self._take_over(group, holder, member_id, events), False
        if holder is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if holder.member_id != member_id:
            raise _fenced_instance(member_id, req.instance_id, holder.member_id)
        self._check_epoch(holder, req.member_epoch, owned)
        return holder, False

    @staticmethod
    def _take_over(group: _Group, holder: _Member, member_id: str, events: list[MembershipEvent]) -> _Member:
        """A new incarnation of the static member ``holder`` takes its place, epoch and
        assignment over, as ``member_id``."""
        del group.members[holder.member_id]
        group.member_left(holder.member_id)
        group.target[member_id] = group.target.pop(holder.member_id, frozenset())
        group.owners_changed()  # the same partitions, under the new member id
        for partition in holder.assigned | holder.pending_revocation:
            group.owners[partition] = member_id
        events.append(
            MembershipEvent(
                kind="joined",
                group_id=group.group_id,
                generation_id=group.group_epoch,
                member_id=member_id,
                group_instance_id=holder.instance_id,
                detail=f"replaces static member {holder.member_id}",
            )
        )
        # Its epoch starts again from 0: the next reconciliation gives it what it may have.
        return replace(
            holder, member_id=member_id, epoch=0, previous_epoch=0, classic_deadline=None, timer_at=None
        )

    @staticmethod
    def _check_epoch(member: _Member, received: int, owned: frozenset[TopicPartition] | None) -> None:
        lost_answer = received == member.previous_epoch and owned is not None and owned <= member.assigned
        if received > member.epoch or (received < member.epoch and not lost_answer):
            relation = "greater" if received > member.epoch else "smaller"
            raise _Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a {relation} member epoch ({received}) than the one known "
                f"by the group coordinator ({member.epoch}). The member must abandon all its partitions "
                "and rejoin.",
            )

    def _leave(
        self, req: ConsumerGroupHeartbeat, events: list[MembershipEvent]
    ) -> ConsumerGroupHeartbeatResult:
        group = self._group_of(req)
        if group is None:
            raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
        if req.instance_id is not None:
            holder_id = group.static.get(req.instance_id)
            if holder_id is None:
                raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if holder_id != req.member_id:
                raise _fenced_instance(req.member_id, req.instance_id, holder_id)
        member = group.members.get(req.member_id)
        if member is None:
            raise _unknown_member(req.member_id, req.group_id)
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # The place and assignment wait for the next incarnation until the session ends.
            # Kafka keeps the previous epoch and drops what was pending revocation.
            left_at, member.epoch = member.epoch, STATIC_LEAVE_EPOCH
            group.member_changed(member.member_id)
            self._release(group, member, member.pending_revocation)
            member.pending_revocation = frozenset()
            member.assignment_epochs = dict.fromkeys(member.assigned, 0)
            member.revocation_deadline = None
            events.append(
                MembershipEvent(
                    kind="left",
                    group_id=group.group_id,
                    generation_id=left_at,
                    member_id=member.member_id,
                    group_instance_id=member.instance_id,
                    detail="static member left temporarily",
                )
            )
        else:
            self._remove(group, member, events, kind="left", detail="left the group")
        # Kafka's answer to a leave gives no heartbeat interval: there is no next heartbeat.
        return ConsumerGroupHeartbeatResult(
            error=ErrorCode.NONE, member_id=req.member_id, member_epoch=req.member_epoch
        )

    # --- classic-protocol members (online migration) -----------------------------------------

    def adopt(
        self,
        group_id: str,
        generation: int,
        protocol_name: str | None,
        members: Sequence[MemberSnapshot],
        now_ms: int,
    ) -> list[MembershipEvent]:
        """Make the classic consumer group ``group_id`` a group of this protocol, as Apache
        Kafka 4 does when a member of the incremental protocol joins it: every classic member
        stays, with its assignment, and its generation as its epoch, the group epoch and the
        assignment epoch (the target is what each member has).

        :raises UpgradeRefused: and nothing changes, when that cannot be: no classic payloads,
            more members than the group may have, or a metadata or assignment that is not the
            consumer protocol's.
        """
        if self._payloads is None:
            raise UpgradeRefused("no plugin here reads the consumer protocol's payloads")
        if group_id in self._groups and self._groups[group_id].members:
            raise UpgradeRefused("a consumer group of that id has members")
        if self._max_group_size is not None and len(members) > self._max_group_size:
            raise UpgradeRefused("the group size exceeds the consumer group maximum size")
        group = _Group(
            group_id=group_id, group_epoch=generation, assignment_epoch=generation, unwritten=self._unwritten
        )
        try:
            for snap in members:
                metadata = next((m for n, m in snap.protocols if n == protocol_name), snap.protocols[0][1])
                topics, _owned, rack = self._payloads.subscription(metadata)
                given = self._payloads.assignment(snap.assignment) if snap.assignment else frozenset()
                member = _Member(
                    member_id=snap.member_id,
                    instance_id=snap.group_instance_id,
                    rack_id=rack,
                    rebalance_timeout_ms=snap.rebalance_timeout_ms,
                    topics=topics,
                    client_id=snap.client_id,
                    client_host=snap.client_host,
                    epoch=generation,
                    previous_epoch=generation,
                    assigned=frozenset(p for p in given if p[0] in self._topics and p not in group.owners),
                    classic=ClassicMembership(
                        session_timeout_ms=snap.session_timeout_ms, protocols=snap.protocols
                    ),
                )
                self._place(group, member, now_ms)
        except (ValueError, IndexError) as exc:
            raise UpgradeRefused(f"the embedded consumer protocol is malformed: {exc}") from exc
        group.partition_counts = self._subscribed_partition_counts(group)
        self._groups[group_id] = group
        return [
            MembershipEvent(
                kind="rebalance",
                group_id=group_id,
                generation_id=generation,
                detail=f"classic group of {len(members)} member(s) upgraded to the consumer protocol",
            )
        ]

    def _place(self, group: _Group, member: _Member, now_ms: int) -> None:
        """Put a member that keeps what it has (its target) into ``group``, its session running."""
        group.members[member.member_id] = member
        group.member_changed(member.member_id)
        group.target[member.member_id] = member.assigned
        member.assignment_epochs = dict.fromkeys(member.assigned, member.epoch)
        if member.instance_id is not None:
            group.static[member.instance_id] = member.member_id
        for partition in member.assigned:
            group.owners[partition] = member.member_id
        member.session_deadline = now_ms + self._session_timeout(group.group_id, member)
        self._schedule(group.group_id, member)

    def downgradable(self, group_id: str) -> tuple[int, list[MemberSnapshot]] | None:
        """If every member of ``group_id`` speaks the classic protocol (the last member of the
        incremental protocol has gone), the group as a classic group would have it: each member
        with what it owns now as its assignment (Kafka writes its target; but a member that has
        not yet rejoined still consumes what it owns, and the rebalance that follows, or an
        upgrade before it, must count on that), and as the generation the newest epoch its
        members are at. (Kafka takes the group epoch from before the leaver's removal: the same number
        when the members were reconciled.) Members at that epoch then rejoin the rebalance that
        follows keeping what they own; one behind it gets ILLEGAL_GENERATION, as in Kafka.
        Else None."""
        group = self._groups.get(group_id)
        if (
            self._payloads is None
            or group is None
            or not group.members
            or group.protocol_type != PROTOCOL_TYPE
        ):
            return None
        if any(m.classic is None for m in group.members.values()):
            return None
        return max(m.epoch for m in group.members.values()), [
            MemberSnapshot(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout_ms=m.classic.session_timeout_ms,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                protocols=m.classic.protocols,
                assignment=self._payloads.encode_assignment(m.assigned | m.pending_revocation),
            )
            for m in group.members.values()
            if m.classic is not None
        ]

    def forget(self, group_id: str) -> None:
        """The group is a classic group from now on (see :meth:`downgradable`)."""
        del self._groups[group_id]

    def classic_join(self, req: JoinGroup, now_ms: int) -> tuple[JoinGroupResult, list[MembershipEvent]]:
        """A JoinGroup from a classic member of a consumer group: its subscription (and the
        partitions it still owns) from its metadata, reconciled like any member's, answered at
        once with its epoch as the generation and no leader (there is nothing to assign)."""
        events: list[MembershipEvent] = []
        try:
            return self._classic_join(req, now_ms, events), events
        except _Refused as refused:
            events.append(refused.event("JoinGroup", req.group_id, -1, req.member_id, req.group_instance_id))
            return JoinGroupResult(error=refused.error, member_id=req.member_id), events

    def _classic_join(self, req: JoinGroup, now_ms: int, events: list[MembershipEvent]) -> JoinGroupResult:
        group = self._groups[req.group_id]
        self._check_classic_protocols(group, req.member_id, req.protocol_type, req.protocols)
        assert self._payloads is not None  # checked with the protocols
        member_id = req.member_id or self._new_member_id()
        instance = req.group_instance_id
        if (
            self._max_group_size is not None
            and len(group.members) >= self._max_group_size
            and member_id not in group.members
            and not (instance is not None and instance in group.static)
        ):
            raise _Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {self._max_group_size} members.",
            )
        if not req.member_id and instance is None and req.require_known_member_id:
            return JoinGroupResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=member_id)
        try:
            topics, owned, rack = self._payloads.subscription(req.protocols[0][1])
        except ValueError as exc:
            raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Unreadable subscription: {exc}") from None
        holder = group.members.get(group.static.get(instance, "")) if instance is not None else None
        if instance is None:
            old, joined = (
                group.members.get(member_id) or _Member(member_id=member_id),
                member_id not in group.members,
            )
        elif not req.member_id:
            if holder is None:
                old, joined = _Member(member_id=member_id, instance_id=instance), True
            else:
                old, joined = self._take_over(group, holder, member_id, events), False
        elif holder is None:
            raise _Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        elif holder.member_id != member_id:
            raise _fenced_instance(member_id, instance, holder.member_id)
        else:
            old, joined = holder, False
        updated = replace(
            old,
            rack_id=rack if rack is not None else old.rack_id,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            topics=topics,
            regex=None,
            server_assignor=None,
            client_id=req.client_id,
            client_host=req.client_host,
            classic=ClassicMembership(session_timeout_ms=req.session_timeout_ms, protocols=req.protocols),
        )
        self._update(group, _subscription_of(old), updated, joined, owned, now_ms, events)
        # It must sync within its rebalance timeout, and heartbeat within its session.
        updated.classic_deadline = now_ms + req.rebalance_timeout_ms
        self._schedule(group.group_id, updated)
        self._touch(group, updated, now_ms)
        return JoinGroupResult(
            error=ErrorCode.NONE,
            generation_id=updated.epoch,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=req.protocols[0][0],
            member_id=member_id,
        )

    def classic_sync(self, req: SyncGroup, now_ms: int) -> tuple[SyncGroupResult, list[MembershipEvent]]:
        """A SyncGroup from a classic member of a consumer group: its assignment as it stands
        (whatever a leader sent is ignored: the coordinator assigns), unless it must rejoin
        first to catch up (:meth:`_behind`)."""
        events: list[MembershipEvent] = []
        try:
            group, member = self._classic_member(req.group_id, req.member_id, req.group_instance_id)
            if req.generation_id != member.epoch:
                raise _Refused(
                    ErrorCode.ILLEGAL_GENERATION, f"Generation {req.generation_id} is not {member.epoch}."
                )
            assert member.classic is not None
            assert self._payloads is not None
            names = {name for name, _ in member.classic.protocols}
            if req.protocol_type not in (None, PROTOCOL_TYPE) or (
                req.protocol_name is not None and req.protocol_name not in names
            ):
                raise _Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "Protocol type or name does not match.")
            self._check_rejoin(group, member, now_ms)
        except _Refused as refused:
            events.append(
                refused.event(
                    "SyncGroup", req.group_id, req.generation_id, req.member_id, req.group_instance_id
                )
            )
            return SyncGroupResult(error=refused.error), events
        member.classic_deadline = None
        self._touch(group, member, now_ms)
        return (
            SyncGroupResult(
                error=ErrorCode.NONE,
                protocol_type=req.protocol_type,
                protocol_name=req.protocol_name,
                assignment=self._payloads.encode_assignment(member.assigned),
            ),
            events,
        )

    def classic_heartbeat(self, req: Heartbeat, now_ms: int) -> tuple[HeartbeatResult, list[MembershipEvent]]:
        """A Heartbeat from a classic member of a consumer group: REBALANCE_IN_PROGRESS when it
        must rejoin (to catch up with its group, :meth:`_behind`; partitions to give up; or
        partitions now free for it)."""
        events: list[MembershipEvent] = []
        try:
            group, member = self._classic_member(req.group_id, req.member_id, req.group_instance_id)
            if req.generation_id != member.epoch:
                raise _Refused(
                    ErrorCode.ILLEGAL_GENERATION, f"Generation {req.generation_id} is not {member.epoch}."
                )
            self._touch(group, member, now_ms)
            waits = member.state is MemberState.UNRELEASED_PARTITIONS and any(
                group.owners.get(p, member.member_id) != member.member_id
                for p in group.target.get(member.member_id, frozenset()) - member.assigned
            )
            if (
                self._behind(group, member, now_ms)
                or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS and not waits)
            ):
                self._ask_to_rejoin(group, member, now_ms)
                raise _Refused(ErrorCode.REBALANCE_IN_PROGRESS, "The member must rejoin to reconcile.")
        except _Refused as refused:
            if refused.error is not ErrorCode.REBALANCE_IN_PROGRESS:
                events.append(
                    refused.event(
                        "Heartbeat", req.group_id, req.generation_id, req.member_id, req.group_instance_id
                    )
                )
            return HeartbeatResult(error=refused.error), events
        return HeartbeatResult(error=ErrorCode.NONE), events

    def classic_leave(self, req: LeaveGroup) -> tuple[LeaveGroupResult, list[MembershipEvent]]:
        """A LeaveGroup to a consumer group: each classic member named (by member id, or by
        instance id alone) leaves; members of the incremental protocol leave by heartbeat."""
        events: list[MembershipEvent] = []
        left = []
        for leaving in req.members:
            try:
                group, member = self._classic_member(
                    req.group_id, leaving.member_id, leaving.group_instance_id, by_instance=True
                )
                self._remove(group, member, events, kind="left", detail=leaving.reason or "left the group")
                error = ErrorCode.NONE
            except _Refused as refused:
                error = refused.error
            left.append(
                LeftMember(
                    member_id=leaving.member_id, group_instance_id=leaving.group_instance_id, error=error
                )
            )
        return LeaveGroupResult(error=ErrorCode.NONE, members=tuple(left)), events

    def _check_classic_protocols(
        self, group: _Group, member_id: str, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]
    ) -> None:
        """Kafka's rule: the consumer protocol type, and a protocol every other classic member
        supports too."""
        names = {name for name, _ in protocols}
        for other in group.members.values():
            if other.classic is not None and other.member_id != member_id:
                names &= {name for name, _ in other.classic.protocols}
        if (
            self._payloads is None
            or group.protocol_type != PROTOCOL_TYPE
            or protocol_type != PROTOCOL_TYPE
            or not protocols
            or not names
        ):
            raise _Refused(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"The group uses the {group.protocol_type} protocol type; a classic member must join with it "
                "and with a protocol its other classic members support.",
            )

    def _classic_member(
        self, group_id: str, member_id: str, instance_id: str | None, *, by_instance: bool = False
    ) -> tuple[_Group, _Member]:
        """The classic member a request names: UNKNOWN_MEMBER_ID (also for a member of the
        incremental protocol), or FENCED_INSTANCE_ID for an old incarnation."""
        group = self._groups[group_id]
        if instance_id is None:
            member = group.members.get(member_id)
        else:
            holder_id = group.static.get(instance_id)
            member = group.members.get(holder_id) if holder_id is not None else None
            if member is not None and member.member_id != member_id and (member_id or not by_instance):
                raise _fenced_instance(member_id, instance_id, member.member_id)
        if member is None or member.classic is None:
            raise _unknown_member(member_id, group_id)
        return group, member

    def _check_rejoin(self, group: _Group, member: _Member, now_ms: int) -> None:
        if self._behind(group, member, now_ms) and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._ask_to_rejoin(group, member, now_ms)
            raise _Refused(ErrorCode.REBALANCE_IN_PROGRESS, "A new rebalance: the member must rejoin.")

    def _behind(self, group: _Group, member: _Member, now_ms: int) -> bool:
        """Whether a classic member must rejoin to catch up with its group: the target moved
        past its epoch (Kafka's rule), or the group changed since the target and a new one is
        due, which its JoinGroup makes (Kafka 4.3 waits for a member of the incremental protocol
        to make it, so a group left with classic members alone stays Assigning:
        docs/coordinator.md). While the group's assignment interval defers the target, a
        rejoin would only be refused again at its SyncGroup, so the member is left alone."""
        return member.epoch < group.assignment_epoch or self._target_due(group, now_ms)

    def _ask_to_rejoin(self, group: _Group, member: _Member, now_ms: int) -> None:
        """A classic member told to rejoin has its rebalance timeout to do so."""
        if member.classic_deadline is None:
            member.classic_deadline = now_ms + member.rebalance_timeout_ms
            self._schedule(group.group_id, member)

    def _touch(self, group: _Group, member: _Member, now_ms: int) -> None:
        member.session_deadline = now_ms + self._session_timeout(group.group_id, member)
        self._schedule(group.group_id, member)

    # --- held heartbeats ---------------------------------------------------------------------

    def nothing_new(
        self, req: ConsumerGroupHeartbeat, result: ConsumerGroupHeartbeatResult
    ) -> ConsumerGroupHeartbeat | None:
        """If ``result`` tells the member nothing it did not say itself (same epoch, and the
        partitions it may consume are exactly those it owns), the request to wait for news
        with (:meth:`news_for`), its owned partitions filled in when it sent them as unchanged;
        else None. A join is held only while it gets nothing and waits for partitions others
        still own (then the answer, with its epoch, comes the moment some are released); never
        a leave, an error, or a member that still has partitions to revoke (its
        acknowledgement must not wait behind a held answer)."""
        if result.error is not ErrorCode.NONE or req.member_epoch < 0:
            return None
        group = self._groups.get(req.group_id)
        member = group.members.get(result.member_id or req.member_id) if group is not None else None
        if group is None or member is None or member.state is MemberState.UNREVOKED_PARTITIONS:
            return None
        if req.member_epoch == JOIN_EPOCH:
            waits = member.state is MemberState.UNRELEASED_PARTITIONS and not member.assigned
            if not waits or result.assignment != ():
                return None
            return replace(
                req,
                member_id=member.member_id,
                member_epoch=result.member_epoch,
                owned=(),
                owners_known=result.owners,
            )
        if result.member_epoch != req.member_epoch:
            return None
        if req.owned is None:  # "unchanged": then an answer with an assignment is news
            if result.assignment is not None:
                return None
            held = member.held_plain
            if held is None or held[0] is not req or held[1] is not member.assigned:
                # Held with its owned partitions filled in; a plain heartbeat repeats, request
                # after request the same object (the server's heartbeat cache), so the filled-in
                # form is made once per epoch and assignment.
                filled = replace(req, owned=self._by_topic_id(group, member.assigned))
                if member.assigned != self._owned(group, filled.owned):
                    return None
                held = member.held_plain = (req, member.assigned, filled)
            req = held[2]
        elif member.assigned != self._owned(group, req.owned):
            return None
        return replace(req, owners_known=result.owners) if req.list_owners else req

    def still_nothing_new(self, req: ConsumerGroupHeartbeat) -> bool:
        """A quick look before :meth:`news_for`, which it must agree with: True only if the
        member of the held heartbeat ``req`` is as it was when held (the same epoch, stable,
        nothing to revoke) and its target is what it owns (so ``news_for`` would answer None),
        in a group whose target is up to date. A change then costs the members it does not
        concern a few lookups each rather than a reconciliation."""
        group = self._groups.get(req.group_id)
        if group is None or req.list_owners or group.group_epoch > group.assignment_epoch:
            return False
        member = group.members.get(req.member_id)
        return (
            member is not None
            and member.epoch == req.member_epoch
            and member.state is MemberState.STABLE
            and not member.pending_revocation
            and group.target.get(member.member_id) == member.assigned
        )

    def news_for(
        self, req: ConsumerGroupHeartbeat, now_ms: int, *, hold_over: bool = False
    ) -> tuple[ConsumerGroupHeartbeatResult | None, list[MembershipEvent]]:
        """Reconcile the member of a held heartbeat as if it had sent ``req`` again now, without
        touching its session (it sent nothing new): the answer if the member has news (a new
        epoch, partitions to give up or to take, it is no longer in the group, or, if it asked
        who owns the resources, they moved), else None.

        While the hold lasts a new epoch alone is not news (see below). With ``hold_over`` (the
        hold has ended, or the client sent another request) the answer is going out anyway, so
        it says what a broker answering the heartbeat now would: the member moves to the new
        epoch with it. Its next heartbeat then carries that epoch and is held again; told the
        old epoch, a client that waits an interval after each answer (Kafka's, librdkafka's)
        would send it once more, be answered the new epoch at once, and spend the whole next
        interval without a held heartbeat, hearing of a second change only at its end."""
        events: list[MembershipEvent] = []
        group = self._groups.get(req.group_id)
        try:
            if group is None:
                raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {req.group_id} not found.")
            owned = self._owned(group, req.owned)
            member = group.members.get(req.member_id)
            if member is None:
                raise _unknown_member(req.member_id, req.group_id)
            self._check_epoch(member, req.member_epoch, owned)
        except _Refused as refused:
            error = ConsumerGroupHeartbeatResult(error=refused.error, message=refused.message)
            return error, events
        # The group may have changed without a heartbeat (a member left, was expired or fenced):
        # the new target now, so that the held heartbeats learn of it at once.
        self._maybe_compute_target(group, now_ms)
        owners_moved = req.list_owners and self._owners(group) != req.owners_known
        if not hold_over and self._only_a_new_epoch(group, member, owned) and not owners_moved:
            # Nothing moves for it: its new epoch waits for the end of its hold (until then its
            # commits carry the epoch it has, which stays valid). Answering every held member at
            # each change would cost the whole group a round trip per change.
            return None, events
        self._reconcile(group, member, owned, now_ms, events)
        owners_moved = req.list_owners and self._owners(group) != req.owners_known
        if member.epoch == req.member_epoch and member.assigned == owned and not owners_moved:
            return None, events
        return self._answer(group, member, full=True, changed=True, list_owners=req.list_owners), events

    def _only_a_new_epoch(
        self, group: _Group, member: _Member, owned: frozenset[TopicPartition] | None
    ) -> bool:
        """Whether reconciling ``member`` now would only move it to the assignment epoch: it is
        stable, owns what it was given, and its target is exactly that."""
        if member.state is not MemberState.STABLE or member.pending_revocation or owned != member.assigned:
            return False
        subscribed = self._subscribed_topics(group, member)
        target = frozenset(p for p in group.target.get(member.member_id, ()) if p[0] in subscribed)
        return target == member.assigned

    # --- timers -----------------------------------------------------------------------------

    def expire(self, now_ms: int) -> list[MembershipEvent]:
        """Remove the members whose session or revocation deadline has passed."""
        events: list[MembershipEvent] = []
        while self._timers and self._timers[0][0] <= now_ms:
            due, _, group_id, member_id = heapq.heappop(self._timers)
            group = self._groups.get(group_id)
            member = group.members.get(member_id) if group else None
            if group is None or member is None or member.timer_at != due:
                continue  # gone, or a timer since replaced by an earlier one
            member.timer_at = None
            if member.session_deadline <= now_ms:
                self._remove(group, member, events, kind="expired", detail="session timed out")
            elif member.revocation_deadline is not None and member.revocation_deadline <= now_ms:
                self._remove(
                    group,
                    member,
                    events,
                    kind="fenced",
                    detail="did not revoke its partitions within its rebalance timeout",
                )
            elif member.classic_deadline is not None and member.classic_deadline <= now_ms:
                self._remove(
                    group,
                    member,
                    events,
                    kind="expired",
                    detail="classic member did not rejoin or sync within its rebalance timeout",
                )
            else:
                self._schedule(group.group_id, member)  # its deadlines moved on since
        return events

    def _session_timeout(self, group_id: str, member: _Member) -> int:
        """A classic member's session is its own; the coordinator sets everyone else's."""
        return member.classic.session_timeout_ms if member.classic is not None else self.timeouts(group_id)[0]

    def _schedule(self, group_id: str, member: _Member) -> None:
        """Make sure ``member``'s timer fires by its earliest deadline. A member has one timer:
        a heartbeat only moves its session deadline later, and the timer, when it fires early,
        is set again for the deadlines then (as Kafka's coordinator reschedules a member's
        session timer), so that a heartbeat costs no timer and the timers stay one per member."""
        due = member.session_deadline
        for deadline in (member.revocation_deadline, member.classic_deadline):
            if deadline is not None and deadline < due:
                due = deadline
        if member.timer_at is not None and member.timer_at <= due:
            return
        member.timer_at = due
        self._timer_seq += 1
        heapq.heappush(self._timers, (due, self._timer_seq, group_id, member.member_id))

    # --- assignment -------------------------------------------------------------------------

    def _subscribed_topics(self, group: _Group, member: _Member) -> frozenset[str]:
        """The topics ``member`` subscribes to that exist (by name or by its regex). Asked for
        each member at each target and reconciliation, so kept on the member while what it is
        found from stays the same: the topics' version tells whether the topics changed. Under
        the authorizer each heartbeat brings the member's view of the topics anew, so a regex's
        topics are as the ACLs were at its latest heartbeat (Kafka's coordinator resolves a
        regex, ACLs applied, in the background every few seconds)."""
        if group.protocol_type != PROTOCOL_TYPE:
            return member.topics  # the resource groups it declared
        source = (self._topics_version, member.topics, member.regex, member.may_describe_topic)
        kept = member.subscribed
        if kept is not None and kept[0] == source:
            return kept[1]
        topics = {t for t in member.topics if t in self._topics}
        if member.regex:
            pattern = re.compile(member.regex)
            visible = member.may_describe_topic or _every_topic
            topics.update(t for t in self._topics if pattern.fullmatch(t) and visible(t))
        member.subscribed = (source, frozenset(topics))
        return member.subscribed[1]

    def _subscribed_partition_counts(self, group: _Group) -> dict[str, int]:
        counts: dict[str, int] = {}
        if group.protocol_type != PROTOCOL_TYPE:
            # Every declared resource group, at the largest size a member declares it with.
            for member in group.members.values():
                for name, count in member.resources:
                    counts[name] = max(count, counts.get(name, 0))
            return counts
        group.topics_seen = self._topics_version
        for member in group.members.values():
            for topic in self._subscribed_topics(group, member):
                counts[topic] = self._topics[topic].partitions
        return counts

    def _preferred_assignor(self, group: _Group) -> str:
        """The server-side assignor the group's next target is computed with: the one most of
        its members ask for (the first by name of those asked for most), else the protocol
        type's default (the first registered). Like Kafka 4's coordinator, it is chosen anew
        for each target, and ConsumerGroupDescribe names it at once."""
        votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        if votes:
            return max(sorted(votes), key=lambda n: votes[n])
        return next(iter(self._assignors.get(group.protocol_type, {})), "")

    def _maybe_compute_target(self, group: _Group, now_ms: int) -> None:
        """A new target if one is due (:meth:`_target_due`). There is no timer: the first
        heartbeat or classic JoinGroup after the interval computes it, as on Kafka."""
        if self._target_due(group, now_ms):
            self._compute_target(group)
            group.assigned_at_ms = now_ms

    def _target_due(self, group: _Group, now_ms: int) -> bool:
        """Whether the group changed since its last target and its assignment interval allows
        a new one (KIP-1263, consumer groups only): as Kafka's ``canComputeNextTargetAssignment``,
        at once if the interval is 0 or no target was computed yet, else once the interval has
        passed since the last one."""
        if group.group_epoch <= group.assignment_epoch:
            return False
        interval = (
            self._own_assignment_intervals.get(group.group_id, self._assignment_interval_ms)
            if group.protocol_type == PROTOCOL_TYPE
            else 0
        )
        last = group.assigned_at_ms
        return not interval or last is None or now_ms >= last + interval

    def _compute_target(self, group: _Group) -> None:
        name = self._preferred_assignor(group)
        specs = [self._assignment_spec(group, m) for m in sorted(group.members.values(), key=_MEMBER_ID)]
        result = self._assignors[group.protocol_type][name](specs, dict(group.partition_counts))
        target: dict[str, frozenset[TopicPartition]] = {}
        for spec in specs:
            given = result.get(spec.member_id, ())
            parts = spec.current if given is spec.current else frozenset(given)  # (ServerAssignor)
            if (parts is spec.current or parts == spec.current) and spec.member_id in group.target:
                parts = spec.current  # the same object while the same (_assignment_spec)
            else:
                group.retarget(spec.member_id)
                group.member_changed(spec.member_id)
            target[spec.member_id] = parts
        group.target = target
        group.assignment_epoch = group.group_epoch
        group.epochs_changed()
        group.changed_for_all()

    def _assignment_spec(self, group: _Group, member: _Member) -> AssignmentSpec:
        """``member`` as the assignor sees it: the same object as for the previous target while
        nothing of it changed (its current target is kept as the same object while the same),
        so that what the assignor built from it may be kept too (a group of 1,000 members
        where one leaves changes five of them)."""
        topics = self._subscribed_topics(group, member)
        current = group.target.get(member.member_id, frozenset())
        kept = member.spec
        if (
            kept is not None
            and kept.member_id == member.member_id  # a static member's new incarnation copies it
            and kept.current is current
            and kept.topics == topics
            and kept.instance_id == member.instance_id
            and kept.rack == member.rack_id
            and kept.metadata == member.metadata
        ):
            return kept
        member.spec = AssignmentSpec(
            member_id=member.member_id,
            instance_id=member.instance_id,
            rack=member.rack_id,
            topics=topics,
            current=current,
            metadata=member.metadata,
        )
        return member.spec

    def _reconcile(
        self,
        group: _Group,
        member: _Member,
        owned: frozenset[TopicPartition] | None,
        now_ms: int,
        events: list[MembershipEvent],
    ) -> None:
        """Move ``member`` towards its target as far as the rules allow (see the module's rules)."""
        target = group.target.get(member.member_id, frozenset())
        if member.state is MemberState.STABLE and member.epoch == group.assignment_epoch:
            return
        start = _reconciled(member)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if owned is None or owned & member.pending_revocation:
                return  # still revoking
            # Revoked: the partitions are free for their next owners. The member is reconciled
            # from its epoch towards the latest target: if that takes more from it, it revokes
            # again at the same epoch (as Kafka 4.3's coordinator; 2024's moved it one on).
            self._release(group, member, member.pending_revocation)
            for partition in member.pending_revocation:
                del member.assignment_epochs[partition]
            member.pending_revocation = frozenset()
            member.revocation_deadline = None
        subscribed = self._subscribed_topics(group, member)
        target = frozenset(p for p in target if p[0] in subscribed)
        keep = member.assigned & target
        revoke = member.assigned - keep
        wanted = target - keep
        free = frozenset(p for p in wanted if group.owners.get(p, member.member_id) == member.member_id)
        unreleased = bool(wanted - free)
        before = (member.epoch, member.state, member.assigned, member.pending_revocation)
        if revoke and (owned is None or owned & revoke):
            member.state = MemberState.UNREVOKED_PARTITIONS
            member.previous_epoch = member.epoch
            member.assigned, member.pending_revocation = keep, revoke
            if member.revocation_deadline is None:  # a new revocation: a whole rebalance timeout
                member.revocation_deadline = now_ms + member.rebalance_timeout_ms
                self._schedule(group.group_id, member)
        else:
            self._release(group, member, revoke)
            member.state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
            member.previous_epoch, member.epoch = member.epoch, group.assignment_epoch
            member.assigned, member.pending_revocation = keep | free, frozenset()
            member.assignment_epochs = {p: member.assignment_epochs[p] for p in keep} | dict.fromkeys(
                free, member.epoch
            )
            member.revocation_deadline = None
        for partition in member.assigned | member.pending_revocation:
            group.owners[partition] = member.member_id
        if (member.assigned, member.pending_revocation) != before[2:]:
            group.owners_changed()
        if _reconciled(member) != start:
            group.member_changed(member.member_id)
        if (member.epoch, member.state, member.assigned, member.pending_revocation) != before:
            events.append(
                MembershipEvent(
                    kind="assigned",
                    group_id=group.group_id,
                    generation_id=member.epoch,
                    member_id=member.member_id,
                    group_instance_id=member.instance_id,
                    detail=f"{member.state.value}: {len(member.assigned)} assigned, "
                    f"{len(member.pending_revocation)} pending revocation",
                )
            )

    @staticmethod
    def _release(group: _Group, member: _Member, partitions: Iterable[TopicPartition]) -> None:
        """``member`` no longer owns ``partitions``: they may be given to their next owners."""
        for partition in partitions:
            if group.owners.get(partition) == member.member_id:
                del group.owners[partition]
                group.owners_changed()

    def _remove(
        self, group: _Group, member: _Member, events: list[MembershipEvent], *, kind: str, detail: str
    ) -> None:
        del group.members[member.member_id]
        group.member_left(member.member_id)
        group.retarget(member.member_id)
        if member.instance_id is not None and group.static.get(member.instance_id) == member.member_id:
            del group.static[member.instance_id]
        group.target.pop(member.member_id, None)
        self._release(group, member, member.assigned | member.pending_revocation)
        group.group_epoch += 1
        group.changed_for_all()
        group.partition_counts = self._subscribed_partition_counts(group)
        events.append(
            MembershipEvent(
                kind=kind,
                group_id=group.group_id,
                generation_id=group.group_epoch,
                member_id=member.member_id,
                group_instance_id=member.instance_id,
                detail=detail,
            )
        )

    # --- topic ids (a consumer group's) or resource names (another protocol type's) ---------

    def _owned(self, group: _Group, owned: TopicIdPartitions | None) -> frozenset[TopicPartition] | None:
        if owned is None:
            return None
        if group.protocol_type != PROTOCOL_TYPE:
            return frozenset((key.decode(errors="replace"), p) for key, parts in owned for p in parts)
        names = self._topic_names
        return frozenset((names[tid], p) for tid, parts in owned if tid in names for p in parts)

    def _by_topic_id(self, group: _Group, partitions: Iterable[TopicPartition]) -> TopicIdPartitions:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        if group.protocol_type != PROTOCOL_TYPE:
            return tuple((name.encode(), tuple(sorted(parts))) for name, parts in sorted(by_topic.items()))
        return tuple(
            (self._topics[topic].topic_id, tuple(sorted(parts)))
            for topic, parts in sorted(by_topic.items())
            if topic in self._topics
        )

    def _described(
        self, group: _Group, partitions: Iterable[TopicPartition]
    ) -> tuple[tuple[bytes, str, tuple[int, ...]], ...]:
        return tuple(
            (key, self._topic_names[key] if group.protocol_type == PROTOCOL_TYPE else key.decode(), parts)
            for key, parts in self._by_topic_id(group, partitions)
        )
