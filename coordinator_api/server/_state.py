"""The embedded coordinator's group state machine (sans-IO).

Rules, as Kafka's classic group coordinator has them (GroupCoordinator / GroupMetadata):

States and transitions::

    Empty ──join──▶ PreparingRebalance ──all joined / rebalance timeout──▶ CompletingRebalance
      ▲                    ▲     │                                              │
      │      member joins, │     └── nobody left ──▶ Empty (generation + 1)     │ leader's SyncGroup
      │      leaves, expires, or the leader rejoins                              ▼
      └──────────── last member leaves (via PreparingRebalance) ◀──────────── Stable

* A generation ends when every known member has sent JoinGroup again (or the rebalance
  timeout, the largest of the members', passes: members that did not rejoin are removed).
  The generation id then grows by one, the protocol every member supports with the most
  first-choice votes is chosen, and the leader (the first member, kept while it stays)
  receives every member's metadata.
* An empty group's first rebalance waits ``initial_rebalance_delay_ms`` for more members,
  extended while members keep arriving, at most up to the rebalance timeout.
* A new dynamic member on JoinGroup v4+ gets MEMBER_ID_REQUIRED with its id (KIP-394) and
  counts as pending until it joins with that id or its session timeout passes.
* A static member (``group_instance_id``, KIP-345) that rejoins with no member id replaces its
  old member id, which is fenced (FENCED_INSTANCE_ID) from then on. In a Stable group whose
  chosen protocol does not change, that costs no rebalance: it gets its old assignment back.
* Sessions: any request from a member restarts its session; a member waiting for a JoinGroup
  or SyncGroup answer is alive by that request. After a join completes, every member must send
  SyncGroup within the rebalance timeout or it is removed.
* Held heartbeats (not in Kafka's classic coordinator; KIP-848 moved the same idea into its
  heartbeats): a Heartbeat that would be answered NONE in a Stable group is held for up to
  ``heartbeat_hold_ms`` (at most a third of the member's session), and answered
  REBALANCE_IN_PROGRESS the moment a rebalance starts, so members learn of a change without
  waiting for their next heartbeat. The shell releases a held heartbeat (answered NONE) as soon
  as another request arrives on its connection, so nothing queues behind it. A member with a
  held heartbeat is alive by it, as by a parked JoinGroup; once it is answered (or its
  connection closes) the session counts from the heartbeat's arrival, as if never held.
* Held ConsumerGroupHeartbeats (KIP-848 groups; Kafka's brokers answer at once): a heartbeat
  whose answer tells the member nothing new (same epoch, exactly the partitions it owns) is
  held for up to ``heartbeat_hold_ms``, capped at a third of the session, at half of what
  the heartbeat interval leaves of it (so the next heartbeat, sent an interval after the
  answer, still arrives well inside the session) and at the interval less
  :data:`HOLD_MARGIN_MS` (a fifth of it if that is less: librdkafka waits for a heartbeat's
  answer only for the interval), and answered the moment the member has
  news: partitions to give up, partitions another member has just released, that it is no
  longer in the group, or (if it asked for them) new owners. A new epoch alone is not news: a
  member a change does not concern stays held and moves to the new epoch at its next
  heartbeat, as on Kafka's brokers. A join is held only while it gets nothing and waits for
  partitions others still own. Never held: a leave, an error, or a member with partitions to
  revoke (its acknowledgement must not queue behind a held answer). Released like a classic
  held heartbeat when another request arrives on its connection; the session counts from its
  arrival all the same.
* Offset commits are fenced: from a group member the generation and member id must be current
  (a zombie gets UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION); commits with generation -1 are only
  accepted while the group is Empty (a group that only stores offsets).
* Offsets are deleted (OffsetDelete) as Kafka's OffsetMetadataManager.deleteOffsets deletes
  them: never those of a topic the group's members subscribe to (a classic consumer group's
  subscriptions are those its members had when its generation began), and nothing of a classic
  group with members of another protocol type. A group an OffsetDelete leaves with neither
  offsets nor members is deleted at the next retention check.

The machine never reads a clock or touches I/O: every entry point takes ``now_ms`` and returns
:class:`Effects`. ``next_deadline()`` tells the shell when to call :meth:`expire` next. Every
request goes through :meth:`GroupCoordinator.handle` to its type's row of one table
(``_REQUESTS``, at the end of this module), which names every request type once.
"""

from __future__ import annotations

import dataclasses
import enum
import heapq
import re
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field

from coordinator_api._plugins._registry import ClassicPayloads, ServerAssignor
from coordinator_api._protocol import ErrorCode
from coordinator_api._transitions import EventTable, on
from coordinator_api._types import JoinedMember
from coordinator_api.server._config import CoordinatorConfig
from coordinator_api.server._consumer_group import PROTOCOL_TYPE, ConsumerGroups, NewsSerials, UpgradeRefused
from coordinator_api.server._messages import (
    NO_TOPIC_ID,
    CommittedOffset,
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupDowngraded,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupSnapshot,
    ConsumerGroupState,
    CreatedTopic,
    CreatePartitions,
    CreatePartitionsResult,
    CreateTopics,
    CreateTopicsResult,
    DeletedTopic,
    DeleteGroups,
    DeleteGroupsResult,
    DeleteTopics,
    DeleteTopicsResult,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribedMember,
    DescribeGroups,
    DescribeGroupsResult,
    Effects,
    FetchedOffset,
    GroupDeleted,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeftMember,
    ListedGroup,
    ListGroups,
    ListGroupsResult,
    MembershipEvent,
    MemberSnapshot,
    NewPartitions,
    NewTopic,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
    OffsetFetch,
    OffsetFetchResult,
    OffsetsCommitted,
    OffsetsDeleted,
    OffsetsExpired,
    PartitionsCreated,
    Request,
    Result,
    SyncGroup,
    SyncGroupResult,
    Topic,
    TopicRemoved,
)

RequestRef = Hashable


class _Timer(enum.Enum):
    """What a timer in the heap is for; each is checked against the group when it fires, so a
    stale one (the deadline moved since) does nothing."""

    SESSION = "a member's session"
    PENDING = "a pending member's first join (KIP-394)"
    HELD_HEARTBEAT = "the end of a held heartbeat"
    HELD_GROUP_HEARTBEAT = "the end of a held ConsumerGroupHeartbeat"
    JOIN = "the end of the join phase"
    SYNC = "the end of the sync phase"
    OFFSET_EXPIRY = "the periodic check of committed offsets' retention"


#: How long before the heartbeat interval has passed a held ConsumerGroupHeartbeat is answered
#: at the latest (a fifth of the interval if that is less): the interval is how long librdkafka
#: waits for the answer (rdkafka_request.c), and the answer must cross the network before that.
HOLD_MARGIN_MS = 100

_FENCING_ERRORS = frozenset(
    {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID}
)
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")
# Kafka's words in DeleteTopics answers (ControllerApis, ReplicationControlManager).
_TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
_TOPIC_REFUSED_WORDS = "Topic authorization failed."
_NO_SUCH_TOPIC = "This server does not host this topic-partition."
_NAME_AND_ID = "You may not specify both topic name and topic id."
_NEITHER_NAME_NOR_ID = "Neither topic name nor id were specified."
_NAME_OF_AN_ID_GIVEN = "The provided topic name maps to an ID that was already supplied."


def _anything(name: str) -> bool:
    return True


def _new_member_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4()}"


def _new_topic_id() -> bytes:
    return uuid.uuid4().bytes


@dataclass(frozen=True)
class _HeldGroupHeartbeat:
    ref: RequestRef
    request: ConsumerGroupHeartbeat  # as it is reconciled again when the group changes
    answer: ConsumerGroupHeartbeatResult  # what it gets if nothing happens meanwhile
    until: int


@dataclass(eq=False)
class _Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: RequestRef | None = None
    awaiting_sync: RequestRef | None = None
    held_heartbeat: RequestRef | None = None
    held_until: int = 0
    session_deadline: int = 0

    @classmethod
    def joining(cls, member_id: str, req: JoinGroup) -> _Member:
        return cls(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            session_timeout_ms=req.session_timeout_ms,
            rebalance_timeout_ms=req.rebalance_timeout_ms,
            protocols=req.protocols,
        )

    @classmethod
    def from_snapshot(cls, snap: MemberSnapshot) -> _Member:
        return cls(**{f.name: getattr(snap, f.name) for f in dataclasses.fields(snap)})

    def metadata_for(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def snapshot(self) -> MemberSnapshot:
        """What is stored of the member: the fields it shares with :class:`MemberSnapshot`."""
        return MemberSnapshot(**{f.name: getattr(self, f.name) for f in dataclasses.fields(MemberSnapshot)})


@dataclass(eq=False)
class _Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, _Member] = field(default_factory=dict)
    # How many members support each protocol, kept as members come and go so that checking a
    # join costs O(protocols), not O(members).
    protocol_counts: Counter[str] = field(default_factory=Counter)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> deadline
    pending_sync: set[str] = field(default_factory=set)
    offsets: dict[tuple[str, int], CommittedOffset] = field(default_factory=dict)
    join_deadline: int | None = None
    sync_deadline: int | None = None
    in_initial_delay: bool = False
    # The first rebalance of an Empty group: Kafka ends it on its initial-delay timer, even at
    # 0 ms, without waiting for members it asked for an id (MEMBER_ID_REQUIRED).
    initial_rebalance: bool = False
    # Offset retention (KIP-211): since when the group has had no members (None: it has some),
    # when each offset was committed, and the expiry an OffsetCommit v2-4 asked for.
    empty_since_ms: int | None = None
    committed_at: dict[tuple[str, int], int] = field(default_factory=dict)
    expire_at: dict[tuple[str, int], int] = field(default_factory=dict)
    initial_delay_remaining_ms: int = 0
    new_member_added: bool = False
    # Each member's metadata for the protocol chosen when the current generation began: what
    # Kafka reads the group's subscriptions from (ClassicGroup.subscribedTopics, OffsetDelete).
    # None before the first generation.
    generation_metadata: tuple[bytes, ...] | None = None

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def add(self, member: _Member) -> None:
        self.members[member.member_id] = member
        self.protocol_counts.update({name for name, _ in member.protocols})

    def remove(self, member_id: str) -> _Member:
        member = self.members.pop(member_id)
        self.protocol_counts.subtract({name for name, _ in member.protocols})
        self.protocol_counts += Counter()  # drops the protocols nobody supports any more
        return member

    def set_protocols(self, member: _Member, protocols: tuple[tuple[str, bytes], ...]) -> None:
        self.protocol_counts.subtract({name for name, _ in member.protocols})
        self.protocol_counts.update({name for name, _ in protocols})
        self.protocol_counts += Counter()
        member.protocols = protocols

    def candidate_protocols(self) -> set[str]:
        """Protocols every member supports."""
        return {name for name, n in self.protocol_counts.items() if n == len(self.members)}

    def supports(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        return self.protocol_type == protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for its first choice among the protocols everyone supports."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in candidates)] += 1
        # Most votes wins; ties go to the name first in the leader's preference order.
        leader = self.members.get(self.leader_id or "")
        order = [name for name, _ in leader.protocols] if leader else sorted(candidates)
        return max(votes, key=lambda name: (votes[name], -order.index(name)))

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join is not None for m in self.members.values())

    def begin_generation(self) -> None:
        """Remember the members' metadata of the generation the group has just begun."""
        protocol = self.protocol_name
        self.generation_metadata = tuple(m.metadata_for(protocol) for m in self.members.values())

    def snapshot(self) -> GroupSnapshot:
        return GroupSnapshot(
            group_id=self.group_id,
            generation_id=self.generation_id,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol_name,
            leader_id=self.leader_id,
            members=tuple(m.snapshot() for m in self.members.values()),
        )


class GroupCoordinator:
    """Group coordination over requests and the current time: classic groups here, consumer
    groups of the incremental protocol (KIP-848) in :mod:`coordinator_api.server._consumer_group`.

    A group id is a classic group or a consumer group, never both at once. Groups move between
    the two as Apache Kafka 4's do (online migration, with the consumer plugin's classic
    payloads): a member of the incremental protocol joining a classic consumer group makes it a
    consumer group, its classic members staying with their assignments and speaking JoinGroup,
    SyncGroup and Heartbeat to it meanwhile; when the last member of the incremental protocol
    leaves, it becomes a classic group again, and rebalances. A classic group that cannot move
    (another protocol type, no classic payloads) refuses ConsumerGroupHeartbeat with
    GROUP_ID_NOT_FOUND. A consumer group's committed offsets are kept, as a classic group's, in an
    Empty classic group record of the same id.

    :param config: the coordinator's settings.
    :param member_id_factory: makes a new member id from a client id or group instance id
        (injectable so tests get predictable ids).
    :param topic_id_factory: makes a 16-byte topic id for a new topic.
    :param server_assignors: the server-side assignors of consumer groups by name, in the order
        of ``config.consumer_group_assignors`` (the first is the default); none: consumer groups
        cannot be joined (UNSUPPORTED_ASSIGNOR).
    :param classic_payloads: how the consumer protocol's classic payloads read; none: groups
        never move between the classic protocol and the incremental one.
    :param resource_assignors: the server-side assignors of every other protocol type that has
        some, by protocol type and name: its groups rebalance incrementally (GroupHeartbeat).
    """

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        *,
        member_id_factory: Callable[[str], str] = _new_member_id,
        topic_id_factory: Callable[[], bytes] = _new_topic_id,
        server_assignors: Mapping[str, ServerAssignor] | None = None,
        classic_payloads: ClassicPayloads | None = None,
        resource_assignors: Mapping[str, Mapping[str, ServerAssignor]] | None = None,
        stores_state: bool = True,
    ) -> None:
        self._config = config or CoordinatorConfig()
        # Whether the effects carry what a store must write (off without a data directory: a
        # consumer group's snapshot costs time in the size of the group at every change).
        self._stores_state = stores_state
        self._new_member_id = member_id_factory
        self._new_topic_id = topic_id_factory
        self._classic_payloads = classic_payloads
        self._groups: dict[str, _Group] = {}
        self._topics: dict[str, Topic] = {}
        self._topic_names: dict[bytes, str] = {}  # by topic id
        self._consumer_groups = ConsumerGroups(
            assignors=server_assignors or {},
            topics=self._topics,
            topic_names=self._topic_names,
            session_timeout_ms=self._config.consumer_group_session_timeout_ms,
            heartbeat_interval_ms=self._config.consumer_group_heartbeat_interval_ms,
            assignment_interval_ms=self._config.consumer_group_assignment_interval_ms,
            max_group_size=self._config.consumer_group_max_size,
            classic_payloads=classic_payloads,
            resource_assignors=resource_assignors,
            stored=stores_state,
        )
        # Timers: (deadline, sequence, kind, group id, member id); stale entries are skipped
        # when popped, so resetting a session costs no heap work.
        self._timers: list[tuple[int, int, _Timer, str, str]] = []
        self._timer_seq = 0
        # Held heartbeats (classic and ConsumerGroupHeartbeat) by request: (group id, member id);
        # entries of heartbeats answered otherwise are stale and checked when used.
        self._held: dict[RequestRef, tuple[str, str]] = {}
        # Held ConsumerGroupHeartbeats by group id, then member id.
        self._held_group_heartbeats: dict[str, dict[str, _HeldGroupHeartbeat]] = {}
        # Where each group that holds some stood when its held ConsumerGroupHeartbeats were last
        # looked at, and the members of those that wait for partitions to change owners.
        self._held_looked_at: dict[str, NewsSerials] = {}
        self._held_waiting_for_owners: dict[str, set[str]] = {}
        self._offset_check_at: int | None = None  # the next retention check, while offsets exist
        # Groups an OffsetDelete left without offsets: deleted at the next retention check if
        # they have no members then either.
        self._offsets_deleted: set[str] = set()

    # --- restoring durable state ---------------------------------------------------------

    def restore(
        self,
        *,
        topics: Iterable[Topic],
        groups: Iterable[GroupSnapshot],
        offsets: Iterable[tuple[str, CommittedOffset]],
        now_ms: int,
        consumer_groups: Iterable[ConsumerGroupSnapshot] = (),
    ) -> None:
        """Load what a previous run stored. Restored members must heartbeat within their
        session timeout from ``now_ms`` or they expire, as after a Kafka coordinator moves."""
        for topic in topics:
            self._add_topic(topic)
        self._consumer_groups.restore(consumer_groups, now_ms)
        for snap in groups:
            group = _Group(
                snap.group_id,
                generation_id=snap.generation_id,
                protocol_type=snap.protocol_type,
                protocol_name=snap.protocol_name,
                leader_id=snap.leader_id,
            )
            for ms in snap.members:
                self._add_member_record(group, _Member.from_snapshot(ms), now_ms)
            if snap.leader_id in group.members:
                group.leader_id = snap.leader_id
            group.state = GroupState.STABLE if group.members else GroupState.EMPTY
            group.begin_generation()
            self._groups[group.group_id] = group
        for group_id, committed in offsets:
            group = self._groups.setdefault(group_id, _Group(group_id))
            partition = (committed.topic, committed.partition)
            group.offsets[partition] = committed
            # Retention counts from this start: what was stored carries no commit time.
            group.committed_at[partition] = now_ms
            self._schedule_offset_check(now_ms)
        for group in self._groups.values():
            if group.state is GroupState.EMPTY:
                group.empty_since_ms = now_ms

    # --- read access for the shell -------------------------------------------------------

    def topics(self) -> list[Topic]:
        return sorted(self._topics.values(), key=lambda t: t.name)

    def topic(self, name: str) -> Topic | None:
        return self._topics.get(name)

    @property
    def topics_version(self) -> int:
        """Counts the changes of the topics (one created, given more partitions or deleted)."""
        return self._consumer_groups.topics_version

    def topic_names(self) -> Mapping[bytes, str]:
        """Each topic's name by its topic id."""
        return self._topic_names

    def _add_topic(self, topic: Topic) -> None:
        """A topic created, or one given more partitions (the same topic id)."""
        self._topics[topic.name] = topic
        self._topic_names[topic.topic_id] = topic.name
        self._consumer_groups.topics_changed()

    def group_state(self, group_id: str) -> GroupState:
        group = self._groups.get(group_id)
        return group.state if group else GroupState.DEAD

    def set_group_timeouts(self, group_id: str, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """The session and heartbeat interval of the members of ``group_id`` of the incremental
        protocol (its group configs), from their next heartbeat on."""
        self._consumer_groups.set_timeouts(group_id, session_timeout_ms, heartbeat_interval_ms)

    def set_group_assignment_interval(self, group_id: str, interval_ms: int) -> None:
        """How often, at most, the target of consumer group ``group_id`` is computed (its group
        config, KIP-1263), from its next change on."""
        self._consumer_groups.set_assignment_interval(group_id, interval_ms)

    # --- entry points ----------------------------------------------------------------------

    def handle(self, ref: RequestRef, request: Request, now_ms: int) -> Effects:
        """Take one request. Its result is among the returned replies, or, for a JoinGroup or
        SyncGroup that must wait for the rest of the group, in the effects of a later call."""
        fx = Effects()
        _REQUESTS.handler(request)(self, request, ref, now_ms, fx)
        return fx

    def renew(self, request: Request, now_ms: int) -> Result | None:
        """The answer to a steady heartbeat that :meth:`handle` would answer at once with
        nothing changed but the member's session, given without the rest of its path: the
        session renewed, the same answer. Only while heartbeats are not held
        (``heartbeat_hold_ms`` 0, as on Kafka's brokers, which answer at once). None for
        every other request, which :meth:`handle` then takes, as if this had not been called:
        nothing has changed then but, for a classic heartbeat refused REBALANCE_IN_PROGRESS,
        its session, which :meth:`handle` renews to the same deadline again."""
        if self._config.heartbeat_hold_ms > 0:
            return None
        if isinstance(request, ConsumerGroupHeartbeat):
            classic = self._groups.get(request.group_id)
            if classic is not None and (classic.state is not GroupState.EMPTY or classic.pending_members):
                return None  # a migration, or pending classic members to forget
            if self._consumer_groups.has_changes():
                return None  # handle stores them
            return self._consumer_groups.renew_session(request, now_ms)
        if isinstance(request, Heartbeat) and not self._is_consumer_group(request.group_id):
            beat = self._heartbeat(request, now_ms)
            return beat if beat.error is ErrorCode.NONE else None
        return None

    # --- a handler per request type (the table _REQUESTS, at the end of the module) --------

    def _on_ConsumerGroupHeartbeat(
        self, request: ConsumerGroupHeartbeat, ref: RequestRef, now_ms: int, fx: Effects
    ) -> None:
        result, events = self._consumer_group_heartbeat(request, now_ms, fx)
        if not self._hold_group_heartbeat(ref, request, result, now_ms):
            fx.replies.append((ref, result))
        # After the hold: the held heartbeats' look at this change takes in this one too, whose
        # answer was made before the others' answers to the change.
        self._consumer_groups_changed(events, fx, now_ms)

    def _on_JoinGroup(self, request: JoinGroup, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        self._join_group(ref, request, now_ms, fx)

    def _on_SyncGroup(self, request: SyncGroup, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        if self._is_consumer_group(request.group_id):
            self._answer_classic_in_consumer_group(
                ref, self._consumer_groups.classic_sync(request, now_ms), now_ms, fx
            )
        else:
            self._sync_group(ref, request, now_ms, fx)

    def _on_Heartbeat(self, request: Heartbeat, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        if self._is_consumer_group(request.group_id):
            self._answer_classic_in_consumer_group(
                ref, self._consumer_groups.classic_heartbeat(request, now_ms), now_ms, fx
            )
            return
        beat = self._heartbeat(request, now_ms)
        self._note_rejection(fx, request.group_id, request.member_id, "Heartbeat", beat.error)
        if not (beat.error is ErrorCode.NONE and self._hold_heartbeat(ref, request, now_ms)):
            fx.replies.append((ref, beat))

    def _on_LeaveGroup(self, request: LeaveGroup, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        if self._is_consumer_group(request.group_id):
            left = self._consumer_groups.classic_leave(request)
            self._answer_classic_in_consumer_group(ref, left, now_ms, fx)
        else:
            fx.replies.append((ref, self._leave_group(request, now_ms, fx)))

    def _on_OffsetCommit(self, request: OffsetCommit, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        commit = self._offset_commit(request, now_ms, fx)
        if commit.errors:
            error = commit.errors[0][2]
            self._note_rejection(fx, request.group_id, request.member_id, "OffsetCommit", error)
        fx.replies.append((ref, commit))

    def _on_OffsetFetch(self, request: OffsetFetch, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._offset_fetch(request)))

    def _on_OffsetDelete(self, request: OffsetDelete, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._offset_delete(request, now_ms, fx)))

    def _on_ListGroups(self, request: ListGroups, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._list_groups(request)))

    def _on_DescribeGroups(self, request: DescribeGroups, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._describe_groups(request)))

    def _on_DeleteGroups(self, request: DeleteGroups, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._delete_groups(request, fx)))

    def _on_ConsumerGroupDescribe(
        self, request: ConsumerGroupDescribe, ref: RequestRef, now_ms: int, fx: Effects
    ) -> None:
        describe = (
            self._consumer_groups.describe if request.any_protocol_type else self._describe_consumer_group
        )
        described = tuple(describe(g) for g in request.group_ids)
        fx.replies.append((ref, ConsumerGroupDescribeResult(groups=described)))

    def _on_CreateTopics(self, request: CreateTopics, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._create_topics(request, fx)))
        self._recount_held_groups(now_ms, fx)

    def _on_CreatePartitions(
        self, request: CreatePartitions, ref: RequestRef, now_ms: int, fx: Effects
    ) -> None:
        fx.replies.append((ref, self._create_partitions(request, fx)))
        self._recount_held_groups(now_ms, fx)

    def _on_DeleteTopics(self, request: DeleteTopics, ref: RequestRef, now_ms: int, fx: Effects) -> None:
        fx.replies.append((ref, self._delete_topics(request, now_ms, fx)))
        self._recount_held_groups(now_ms, fx)

    def _recount_held_groups(self, now_ms: int, fx: Effects) -> None:
        """After a request that may have changed the topics: the consumer groups with held
        heartbeats count their subscribed partitions again at once (nothing to count if the
        topics stayed as they were), and the held members with news hear of it (a new topic
        their regex matches, new partitions, a deleted topic's to give up). The other groups do
        at their next heartbeat, as on Kafka."""
        recount = self._consumer_groups.recount_topics
        events = [e for group_id in self._held_group_heartbeats for e in recount(group_id)]
        if events:
            self._consumer_groups_changed(events, fx, now_ms)

    def _describe_consumer_group(self, group_id: str) -> DescribedConsumerGroup:
        """ConsumerGroupDescribe, as Kafka answers it: a group of another type is not found, and
        a classic group is said to be one (Kafka's ``GroupMetadataManager.consumerGroup``)."""
        if group_id in self._consumer_groups:
            protocol_type = self._consumer_groups.protocol_type(group_id)
            if protocol_type != PROTOCOL_TYPE:
                return DescribedConsumerGroup(
                    group_id=group_id,
                    error=ErrorCode.GROUP_ID_NOT_FOUND,
                    message=f"Group {group_id} is a {protocol_type} group, not a consumer group.",
                )
        elif group_id in self._groups:
            return DescribedConsumerGroup(
                group_id=group_id,
                error=ErrorCode.GROUP_ID_NOT_FOUND,
                message=f"Group {group_id} is not a consumer group.",
            )
        return self._consumer_groups.describe(group_id)

    def _consumer_group_heartbeat(
        self, req: ConsumerGroupHeartbeat, now_ms: int, fx: Effects
    ) -> tuple[ConsumerGroupHeartbeatResult, list[MembershipEvent]]:
        classic = self._groups.get(req.group_id)
        upgraded: list[MembershipEvent] = []
        if classic is not None and classic.state is not GroupState.EMPTY:
            # Refused, the group left as it is; a ConsumerGroupHeartbeat's refusal in Kafka 4.3's
            # words (its GroupIdNotFoundException).
            refusal: str | None = f"Group {req.group_id} is not a consumer group."
            if req.protocol_type != PROTOCOL_TYPE:
                refusal = f"Group {req.group_id} is a classic group."
            elif req.member_epoch == 0:
                try:
                    upgraded, refusal = self._upgrade(classic, now_ms, fx), None
                except UpgradeRefused as refused:
                    refusal = (
                        f"Cannot upgrade classic group {req.group_id} to consumer group "
                        f"because {refused.reason}."
                    )
            if refusal is not None:
                return ConsumerGroupHeartbeatResult(error=ErrorCode.GROUP_ID_NOT_FOUND, message=refusal), []
        elif classic is not None:
            # An Empty classic group gives way to the consumer group (Kafka deletes it; here its
            # record stays for the offsets): members it asked for an id join the consumer group.
            classic.pending_members.clear()
        result, events = self._consumer_groups.heartbeat(req, now_ms)
        return result, upgraded + events

    # --- online migration between the classic protocol and the incremental one -------------

    def _is_consumer_group(self, group_id: str) -> bool:
        return group_id in self._consumer_groups and self._consumer_groups.has_members(group_id)

    def _upgrade(self, classic: _Group, now_ms: int, fx: Effects) -> list[MembershipEvent]:
        """Make a classic consumer group a consumer group of the incremental protocol, its
        members and their assignments kept (see :meth:`ConsumerGroups.adopt`): the requests
        they have waiting are answered REBALANCE_IN_PROGRESS, so they rejoin, into the consumer
        group. The classic record stays, Empty, with the offsets.

        :raises UpgradeRefused: it cannot move, or ``consumer_group_migration_policy`` does
            not move it; nothing changes.
        """
        if not self._config.upgrades_classic_groups:
            raise UpgradeRefused("online upgrade is disabled")
        if classic.protocol_type != PROTOCOL_TYPE:
            raise UpgradeRefused("the group does not use the consumer embedded protocol")
        members = [m.snapshot() for m in classic.members.values()]
        events = self._consumer_groups.adopt(
            classic.group_id, classic.generation_id, classic.protocol_name, members, now_ms
        )
        for member in classic.members.values():
            for waiting, answer in (
                (
                    member.awaiting_join,
                    JoinGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id),
                ),
                (member.awaiting_sync, SyncGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS)),
                (member.held_heartbeat, HeartbeatResult(error=ErrorCode.REBALANCE_IN_PROGRESS)),
            ):
                if waiting is not None:
                    self._held.pop(waiting, None)
                    fx.replies.append((waiting, answer))
        classic.members.clear()
        classic.protocol_counts.clear()
        classic.static_members.clear()
        classic.pending_members.clear()
        classic.pending_sync.clear()
        classic.state, classic.leader_id, classic.protocol_name = GroupState.EMPTY, None, None
        classic.join_deadline = classic.sync_deadline = None
        classic.in_initial_delay = False
        fx.writes.append(classic.snapshot())
        return events

    def _downgrade(self, group_id: str, now_ms: int, fx: Effects, *, rebalance: bool = True) -> None:
        """If no member of the incremental protocol is left in ``group_id``, make it a classic
        group again (as Kafka 4's downgrade; see :meth:`ConsumerGroups.downgradable`): its
        classic members with what they own, then a rebalance. Without ``rebalance`` (a classic
        static member took the last one's place with the same subscription), a group whose
        members all have their targets stays as it is, Stable, as Kafka's does; one still
        reconciling rebalances all the same."""
        if not self._config.downgrades_consumer_groups:
            return  # a consumer group of classic members, as Kafka keeps one under this policy
        found = self._consumer_groups.downgradable(group_id)
        limit = self._config.max_group_size
        if found is None or (limit is not None and len(found[1]) > limit):
            return
        generation, members = found
        group = self._groups.get(group_id) or _Group(group_id)
        if not set.intersection(*({name for name, _ in snap.protocols} for snap in members)):
            return  # no protocol every member supports: a classic group could not form
        rebalance = rebalance or self._consumer_groups.state(group_id) is not ConsumerGroupState.STABLE
        self._consumer_groups.forget(group_id)
        self._groups[group_id] = group
        group.generation_id, group.protocol_type = generation, PROTOCOL_TYPE
        for snap in members:
            group.pending_members.pop(snap.member_id, None)  # it joined the consumer group since
            self._add_member_record(group, _Member.from_snapshot(snap), now_ms)
        group.protocol_name = group.select_protocol()
        group.state = GroupState.STABLE
        group.begin_generation()
        fx.writes.extend([ConsumerGroupDowngraded(group_id=group_id), group.snapshot()])
        if rebalance:
            self._prepare_rebalance(
                group, now_ms, fx, "the last member of the consumer protocol left: classic again"
            )
        else:
            self._event(
                fx,
                "generation",
                group,
                group.leader_id,
                detail="a classic static member replaced the last member of the consumer protocol: "
                f"classic again, no rebalance (protocol={group.protocol_name} members={len(group.members)})",
            )

    def _answer_classic_in_consumer_group(
        self,
        ref: RequestRef,
        answered: tuple[SyncGroupResult | HeartbeatResult | LeaveGroupResult, list[MembershipEvent]],
        now_ms: int,
        fx: Effects,
    ) -> None:
        """A classic member's SyncGroup, Heartbeat or LeaveGroup, ``answered`` by the consumer
        group it belongs to: what it changed first, then its answer."""
        result, events = answered
        self._consumer_groups_changed(events, fx, now_ms)
        fx.replies.append((ref, result))

    def _consumer_groups_changed(
        self, events: list[MembershipEvent], fx: Effects, now_ms: int, *, rebalance_on_downgrade: bool = True
    ) -> None:
        """Make every consumer group an event says changed classic again if no member of the
        incremental protocol is left (see :meth:`_downgrade`), answer the held heartbeats of
        its members that now have news (which may change the group again: an acknowledgement
        frees partitions another member waits for), then store what changed (nothing for a
        plain heartbeat)."""
        while events:
            fx.events.extend(events)
            changed = list(dict.fromkeys(e.group_id for e in events if e.kind != "rejected"))
            events = []
            for group_id in changed:
                if group_id in self._consumer_groups:
                    self._downgrade(group_id, now_ms, fx, rebalance=rebalance_on_downgrade)
                held = self._held_group_heartbeats.get(group_id, {})
                for member_id in self._held_to_look_at(group_id, now_ms):
                    heartbeat = held[member_id]
                    if self._consumer_groups.still_nothing_new(heartbeat.request):
                        continue
                    news, more = self._consumer_groups.news_for(heartbeat.request, now_ms)
                    events.extend(more)
                    if news is not None:
                        self._unhold_group_heartbeat(group_id, member_id)
                        fx.replies.append((heartbeat.ref, news))
                    else:
                        self._note_waiting_for_owners(heartbeat.request)
        if self._stores_state:
            fx.writes.extend(self._consumer_groups.changes())

    def _held_to_look_at(self, group_id: str, now_ms: int) -> list[str]:
        """The members whose held heartbeats may have news after a change of ``group_id``
        (see :class:`NewsSerials`): if the target changed or a member left since the last
        look, those whose target changed or who left (``take_retargeted``) and those waiting
        for partitions to change owners; those waiting alone if only owners changed; else
        none. Every member moves to the group's epoch once after each change, and in a group
        of 1,000 a look at every held heartbeat each time would cost a million looks a change
        (and a look at each after each change, a thousand)."""
        held = self._held_group_heartbeats.get(group_id)
        if not held:
            return []
        now = self._consumer_groups.news_serials(group_id, now_ms)
        last = self._held_looked_at.get(group_id)
        if now is None:
            self._held_looked_at.pop(group_id, None)
            return list(held)
        self._held_looked_at[group_id] = now
        if last is None or now.group != last.group:
            # Every heartbeat held now was held after the last look, or looked at in it: what
            # changed since the last look is all that can have news for them.
            retargeted = self._consumer_groups.take_retargeted(group_id)
            if retargeted is None:
                return list(held)
            retargeted.update(self._held_waiting_for_owners.get(group_id, ()))
            return sorted(m for m in retargeted if m in held)
        if now.owners != last.owners:
            return [m for m in self._held_waiting_for_owners.get(group_id, ()) if m in held]
        return []

    def _note_waiting_for_owners(self, req: ConsumerGroupHeartbeat) -> None:
        waiting = self._held_waiting_for_owners.setdefault(req.group_id, set())
        if self._consumer_groups.waits_for_owners(req):
            waiting.add(req.member_id)
        else:
            waiting.discard(req.member_id)

    def _hold_group_heartbeat(
        self, ref: RequestRef, req: ConsumerGroupHeartbeat, result: ConsumerGroupHeartbeatResult, now_ms: int
    ) -> bool:
        """Hold a ConsumerGroupHeartbeat whose answer has nothing new for the member (see the
        module's rules), until news or the end of the hold."""
        # Clients send their next heartbeat an interval after the answer: a hold of a third of
        # the session, and at most half of what the interval leaves of it, keeps that next one
        # well inside the session. And the answer must reach the client before the interval
        # has passed: librdkafka gives up waiting for it then and sends the next heartbeat with
        # the epoch it has, so a new epoch in the late answer would be lost (and the member
        # fenced, FENCED_MEMBER_EPOCH, for a previous epoch without its owned partitions).
        session, interval = self._consumer_groups.timeouts(req.group_id)
        hold = min(
            self._config.heartbeat_hold_ms,
            session // 3,
            (session - interval) // 2,
            interval - min(interval // 5, HOLD_MARGIN_MS),
        )
        if ref is None or hold <= 0:
            return False
        waiting = self._consumer_groups.nothing_new(req, result)
        if waiting is None:
            return False
        held = self._held_group_heartbeats.setdefault(req.group_id, {})
        if waiting.member_id in held:
            return False
        held[waiting.member_id] = _HeldGroupHeartbeat(ref, waiting, result, now_ms + hold)
        self._note_waiting_for_owners(waiting)
        self._held[ref] = (req.group_id, waiting.member_id)
        self._schedule(now_ms + hold, _Timer.HELD_GROUP_HEARTBEAT, req.group_id, waiting.member_id)
        return True

    def _unhold_group_heartbeat(self, group_id: str, member_id: str) -> _HeldGroupHeartbeat:
        held = self._held_group_heartbeats[group_id]
        heartbeat = held.pop(member_id)
        self._held_waiting_for_owners.get(group_id, set()).discard(member_id)
        if not held:
            del self._held_group_heartbeats[group_id]
            self._held_looked_at.pop(group_id, None)
            self._held_waiting_for_owners.pop(group_id, None)
        self._held.pop(heartbeat.ref, None)
        return heartbeat

    def _held_group_heartbeat(self, ref: RequestRef) -> tuple[str, str] | None:
        """(group id, member id) of the held ConsumerGroupHeartbeat ``ref``, if it is one."""
        group_id, member_id = self._held.get(ref, ("", ""))
        heartbeat = self._held_group_heartbeats.get(group_id, {}).get(member_id)
        return (group_id, member_id) if heartbeat is not None and heartbeat.ref == ref else None

    def _answer_held_group_heartbeat(self, group_id: str, member_id: str, now_ms: int, fx: Effects) -> None:
        """The hold is over: answer with the news if there is some (a new epoch included), else
        as at its arrival."""
        heartbeat = self._unhold_group_heartbeat(group_id, member_id)
        news, events = self._consumer_groups.news_for(heartbeat.request, now_ms, hold_over=True)
        fx.replies.append((heartbeat.ref, news if news is not None else heartbeat.answer))
        self._consumer_groups_changed(events, fx, now_ms)

    def release(self, ref: RequestRef, now_ms: int) -> Effects:
        """Another request arrived on the connection of a held heartbeat: answer it now (NONE),
        so the connection can move on."""
        fx = Effects()
        group_heartbeat = self._held_group_heartbeat(ref)
        if group_heartbeat is not None:
            self._answer_held_group_heartbeat(*group_heartbeat, now_ms, fx)
            return fx
        group_id, member_id = self._held.pop(ref, ("", ""))
        group = self._groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is not None and member is not None and member.held_heartbeat == ref:
            self._answer_held(group, member, ErrorCode.NONE, now_ms, fx)
        return fx

    def abandon(self, ref: RequestRef, now_ms: int) -> Effects:
        """The connection behind a parked JoinGroup or SyncGroup (or held Heartbeat) closed:
        forget the request.

        The member stays until its session (now counting again) or the rebalance times out,
        exactly as when a Kafka client dies mid-rebalance.
        """
        group_heartbeat = self._held_group_heartbeat(ref)
        if group_heartbeat is not None:
            self._unhold_group_heartbeat(*group_heartbeat)
        for group in self._groups.values():
            for member in group.members.values():
                if member.awaiting_join == ref:
                    member.awaiting_join = None
                    self._touch(member, now_ms)
                if member.awaiting_sync == ref:
                    member.awaiting_sync = None
                    self._touch(member, now_ms)
                if member.held_heartbeat == ref:
                    # Its session counts from when the heartbeat arrived, as if never held.
                    self._held.pop(ref, None)
                    member.held_heartbeat = None
                    self._schedule(
                        max(member.session_deadline, now_ms), _Timer.SESSION, group.group_id, member.member_id
                    )
        return Effects()

    def next_deadline(self) -> int | None:
        """The earliest time at which :meth:`expire` may have work, or None."""
        deadline = self._consumer_groups.next_deadline()
        if self._timers and (deadline is None or self._timers[0][0] < deadline):
            deadline = self._timers[0][0]
        return deadline

    def expire(self, now_ms: int) -> Effects:
        """Fire every timer due at ``now_ms``: sessions, pending members, rebalance phases."""
        fx = Effects()
        self._consumer_groups_changed(self._consumer_groups.expire(now_ms), fx, now_ms)
        while self._timers and self._timers[0][0] <= now_ms:
            deadline, _, kind, group_id, member_id = heapq.heappop(self._timers)
            if kind is _Timer.OFFSET_EXPIRY:
                self._offset_check_at = None
                self._expire_offsets(now_ms, fx)
                continue
            if kind is _Timer.HELD_GROUP_HEARTBEAT:
                heartbeat = self._held_group_heartbeats.get(group_id, {}).get(member_id)
                if heartbeat is not None and heartbeat.until == deadline:
                    self._answer_held_group_heartbeat(group_id, member_id, now_ms, fx)
                continue
            group = self._groups.get(group_id)
            if group is None:
                continue
            if kind is _Timer.SESSION:
                self._check_session(group, member_id, now_ms, fx)
            elif kind is _Timer.PENDING:
                if group.pending_members.get(member_id, now_ms + 1) <= now_ms:
                    del group.pending_members[member_id]
                    self._event(fx, "expired", group, member_id, detail="pending member never joined")
                    self._try_complete_join(group, now_ms, fx)
                    self._maybe_forget(group)
            elif kind is _Timer.HELD_HEARTBEAT:
                member = group.members.get(member_id)
                if member is not None and member.held_heartbeat is not None and member.held_until == deadline:
                    self._answer_held(group, member, ErrorCode.NONE, now_ms, fx)
            elif kind is _Timer.JOIN:
                if group.join_deadline == deadline:
                    self._join_deadline_passed(group, now_ms, fx)
            elif kind is _Timer.SYNC and group.sync_deadline == deadline:
                self._sync_deadline_passed(group, now_ms, fx)
        return fx

    def create_topic(self, name: str, partitions: int, now_ms: int) -> Effects:
        """Declare a topic directly (from the CLI or a config file). Raises nothing: the
        result says whether it was created."""
        fx = Effects()
        request = CreateTopics(topics=(NewTopic(name=name, num_partitions=partitions, replication_factor=1),))
        self._on_CreateTopics(request, None, now_ms, fx)
        return fx

    def create_partitions(self, name: str, count: int, now_ms: int) -> Effects:
        """Give topic ``name`` ``count`` partitions in all, as CreatePartitions would. Raises
        nothing: the result says whether it was done."""
        fx = Effects()
        request = CreatePartitions(topics=(NewPartitions(name=name, count=count),))
        self._on_CreatePartitions(request, None, now_ms, fx)
        return fx

    # --- timers ------------------------------------------------------------------------------

    def _schedule(self, deadline: int, kind: _Timer, group_id: str, member_id: str = "") -> None:
        self._timer_seq += 1
        heapq.heappush(self._timers, (deadline, self._timer_seq, kind, group_id, member_id))

    def _touch(self, member: _Member, now_ms: int) -> None:
        member.session_deadline = now_ms + member.session_timeout_ms

    def _check_session(self, group: _Group, member_id: str, now_ms: int, fx: Effects) -> None:
        member = group.members.get(member_id)
        if member is None:
            return
        if (
            member.awaiting_join is not None
            or member.awaiting_sync is not None
            or member.held_heartbeat is not None
        ):
            # Alive by its parked request; look again one session later.
            self._schedule(now_ms + member.session_timeout_ms, _Timer.SESSION, group.group_id, member_id)
        elif member.session_deadline > now_ms:
            self._schedule(member.session_deadline, _Timer.SESSION, group.group_id, member_id)
        else:
            self._remove_member(group, member, now_ms, fx, "expired", "session timeout passed")

    # --- JoinGroup ---------------------------------------------------------------------------

    def _join_group(self, ref: RequestRef, req: JoinGroup, now_ms: int, fx: Effects) -> None:
        def fail(error: ErrorCode) -> None:
            fx.replies.append((ref, JoinGroupResult(error=error, member_id=req.member_id)))

        if not req.group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        cfg = self._config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        if req.rebalance_timeout_ms < 0:  # 0 is Kafka's too: the rebalance ends on its timer at once
            return fail(ErrorCode.INVALID_REQUEST)
        if self._is_consumer_group(req.group_id):
            if cfg.consumer_group_migration_policy == "disabled":
                # Kafka 4.3: with migration disabled, no classic member joins or rejoins one.
                return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            epoch = self._consumer_groups.group_epoch(req.group_id)
            result, events = self._consumer_groups.classic_join(req, now_ms)
            fx.replies.append((ref, result))
            # A classic JoinGroup leaves no member of the incremental protocol only by taking a
            # static member's place; with the same subscription (no new group epoch), Kafka 4
            # makes the group classic again without a rebalance.
            same_subscription = self._consumer_groups.group_epoch(req.group_id) == epoch
            self._consumer_groups_changed(events, fx, now_ms, rebalance_on_downgrade=not same_subscription)
            return None
        if req.group_id in self._consumer_groups:
            # An Empty consumer group gives way to the classic group, whatever the migration
            # policy, as Kafka deletes it for a JoinGroup; its offsets stay (the classic record).
            self._consumer_groups.forget(req.group_id)
            fx.writes.append(ConsumerGroupDowngraded(group_id=req.group_id))
        group = self._groups.get(req.group_id)
        if group is None:
            if req.member_id:
                return fail(ErrorCode.UNKNOWN_MEMBER_ID)
            group = self._groups[req.group_id] = _Group(req.group_id)
        if not self._accepts_joining_member(group, req.member_id):
            # Kafka removes a member it turns away (it is over the limit), and names no id.
            if req.member_id in group.members:
                self._remove_member(
                    group, group.members[req.member_id], now_ms, fx, "removed", "the group is full"
                )
            group.pending_members.pop(req.member_id, None)
            fx.replies.append((ref, JoinGroupResult(error=ErrorCode.GROUP_MAX_SIZE_REACHED)))
        elif not group.supports(req.protocol_type, req.protocols):
            fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        elif req.member_id:
            self._join_known_member(group, ref, req, now_ms, fx)
        else:
            self._join_new_member(group, ref, req, now_ms, fx)
        self._maybe_forget(group)
        return None

    def _accepts_joining_member(self, group: _Group, member_id: str) -> bool:
        """Kafka's GroupMetadataManager.acceptJoiningMember, with ``max_group_size``: an Empty
        group takes anyone; while it rebalances, a member already waiting in the join is kept
        and others come in while fewer than the limit are waiting (so the last to rejoin of an
        oversized group are the ones turned away); otherwise a member of the group is kept and
        others come in while it has fewer members than the limit. A static member restarting
        under a new member id counts as new."""
        limit = self._config.max_group_size
        if limit is None or group.state is GroupState.EMPTY:
            return True
        member = group.members.get(member_id)
        if group.state is GroupState.PREPARING_REBALANCE:
            waiting = sum(1 for m in group.members.values() if m.awaiting_join is not None)
            return (member is not None and member.awaiting_join is not None) or waiting < limit
        return member is not None or len(group.members) < limit

    def _join_new_member(
        self, group: _Group, ref: RequestRef, req: JoinGroup, now_ms: int, fx: Effects
    ) -> None:
        instance = req.group_instance_id
        if instance is not None and instance in group.static_members:
            new_id = self._new_member_id(instance)
            self._replace_static_member(group, group.static_members[instance], new_id, ref, req, now_ms, fx)
            return
        new_id = self._new_member_id(instance if instance is not None else req.client_id)
        if instance is None and req.require_known_member_id:
            if len(group.pending_members) >= self._config.max_pending_members:
                # Kafka keeps every id it hands out until its session passes; a client asking
                # for ids by the thousand would hold memory (and the group's join phase) for
                # that long. Bounded here, as a full group is.
                fx.replies.append((ref, JoinGroupResult(error=ErrorCode.GROUP_MAX_SIZE_REACHED)))
                return
            deadline = now_ms + req.session_timeout_ms
            group.pending_members[new_id] = deadline
            self._schedule(deadline, _Timer.PENDING, group.group_id, new_id)
            fx.replies.append((ref, JoinGroupResult(error=ErrorCode.MEMBER_ID_REQUIRED, member_id=new_id)))
            return
        self._add_member_and_rebalance(group, new_id, ref, req, now_ms, fx)

    def _join_known_member(
        self, group: _Group, ref: RequestRef, req: JoinGroup, now_ms: int, fx: Effects
    ) -> None:
        if req.member_id in group.pending_members:
            del group.pending_members[req.member_id]
            self._add_member_and_rebalance(group, req.member_id, ref, req, now_ms, fx)
            return
        if self._is_fenced(group, req.group_instance_id, req.member_id):
            fx.replies.append(
                (ref, JoinGroupResult(error=ErrorCode.FENCED_INSTANCE_ID, member_id=req.member_id))
            )
            return
        member = group.members.get(req.member_id)
        if member is None:
            fx.replies.append(
                (ref, JoinGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID, member_id=req.member_id))
            )
            return
        unchanged = member.protocols == req.protocols
        if group.state is GroupState.PREPARING_REBALANCE:
            self._update_member(group, member, ref, req, now_ms, fx)
            self._try_complete_join(group, now_ms, fx)
        elif group.state is GroupState.COMPLETING_REBALANCE and unchanged:
            # A resent JoinGroup (its answer was lost): answer it again.
            fx.replies.append((ref, self._join_result(group, member)))
        elif group.state is GroupState.STABLE and unchanged and member.member_id != group.leader_id:
            # A follower with nothing new: it keeps the current generation.
            fx.replies.append((ref, self._join_result(group, member, with_members=False)))
        else:
            self._update_member(group, member, ref, req, now_ms, fx)
            why = "leader rejoined" if member.member_id == group.leader_id else "metadata changed"
            self._prepare_rebalance(group, now_ms, fx, f"{member.member_id}: {why}")

    def _update_member(
        self, group: _Group, member: _Member, ref: RequestRef, req: JoinGroup, now_ms: int, fx: Effects
    ) -> None:
        if member.awaiting_join is not None and member.awaiting_join != ref:
            # A newer JoinGroup from the same member supersedes the parked one.
            fx.replies.append(
                (
                    member.awaiting_join,
                    JoinGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS, member_id=member.member_id),
                )
            )
        group.set_protocols(member, req.protocols)
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id = req.client_id
        member.client_host = req.client_host
        member.awaiting_join = ref
        self._touch(member, now_ms)

    def _add_member_record(self, group: _Group, member: _Member, now_ms: int) -> None:
        group.add(member)
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if group.leader_id is None or group.leader_id not in group.members:
            group.leader_id = member.member_id
        self._touch(member, now_ms)
        self._schedule(member.session_deadline, _Timer.SESSION, group.group_id, member.member_id)

    def _add_member_and_rebalance(
        self,
        group: _Group,
        member_id: str,
        ref: RequestRef,
        req: JoinGroup,
        now_ms: int,
        fx: Effects,
    ) -> None:
        if not group.members:
            group.protocol_type = req.protocol_type
        member = _Member.joining(member_id, req)
        member.awaiting_join = ref
        self._add_member_record(group, member, now_ms)
        group.new_member_added = True
        self._event(fx, "joined", group, member_id, req.group_instance_id, req.reason or "")
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms, fx)
        else:
            self._prepare_rebalance(group, now_ms, fx, f"new member {member_id} joined")

    def _replace_static_member(
        self,
        group: _Group,
        old_id: str,
        new_id: str,
        ref: RequestRef,
        req: JoinGroup,
        now_ms: int,
        fx: Effects,
    ) -> None:
        old = group.remove(old_id)
        if old.awaiting_join is not None:
            fx.replies.append(
                (
                    old.awaiting_join,
                    JoinGroupResult(error=ErrorCode.FENCED_INSTANCE_ID, member_id=old_id),
                )
            )
        if old.awaiting_sync is not None:
            fx.replies.append((old.awaiting_sync, SyncGroupResult(error=ErrorCode.FENCED_INSTANCE_ID)))
        if old.held_heartbeat is not None:
            self._held.pop(old.held_heartbeat, None)
            fx.replies.append((old.held_heartbeat, HeartbeatResult(error=ErrorCode.FENCED_INSTANCE_ID)))
        previous_leader = group.leader_id
        member = _Member.joining(new_id, req)
        member.assignment = old.assignment
        self._add_member_record(group, member, now_ms)
        if previous_leader == old_id:
            group.leader_id = new_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(new_id)
        self._event(fx, "fenced", group, old_id, req.group_instance_id, f"replaced by {new_id}")
        self._event(fx, "joined", group, new_id, req.group_instance_id, "static member rejoined")
        if group.state is GroupState.STABLE and group.select_protocol() == group.protocol_name:
            # No rebalance: the member takes its old assignment back through SyncGroup. As Kafka's
            # updateStaticMemberThenRebalanceOrCompleteJoin: a restarted leader that can be told
            # to skip the assignment (v9+, KIP-814) learns it leads, with every member, so it can
            # watch their subscriptions; an older one is told the old leader id, so it does not
            # compute an assignment a Stable group would never hand out.
            fx.writes.append(group.snapshot())
            result = self._join_result(group, member)
            if req.skip_assignment_supported:
                result = dataclasses.replace(result, skip_assignment=result.leader == new_id)
            else:
                result = dataclasses.replace(result, leader=previous_leader or "", members=())
            fx.replies.append((ref, result))
            return
        member.awaiting_join = ref
        if group.state is GroupState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms, fx)
        else:
            self._prepare_rebalance(group, now_ms, fx, f"static member {req.group_instance_id} rejoined")

    def _join_result(self, group: _Group, member: _Member, *, with_members: bool = True) -> JoinGroupResult:
        members: tuple[JoinedMember, ...] = ()
        if with_members and member.member_id == group.leader_id:
            members = tuple(
                JoinedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata_for(group.protocol_name),
                )
                for m in group.members.values()
            )
        return JoinGroupResult(
            error=ErrorCode.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            member_id=member.member_id,
            members=members,
        )

    # --- rebalance phases -------------------------------------------------------------------

    def _prepare_rebalance(self, group: _Group, now_ms: int, fx: Effects, reason: str) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                if member.awaiting_sync is not None:
                    fx.replies.append(
                        (
                            member.awaiting_sync,
                            SyncGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS),
                        )
                    )
                    member.awaiting_sync = None
                    self._touch(member, now_ms)
        group.pending_sync.clear()
        group.sync_deadline = None
        for member in group.members.values():
            if member.held_heartbeat is not None:
                self._answer_held(group, member, ErrorCode.REBALANCE_IN_PROGRESS, now_ms, fx)
        delay = self._config.initial_rebalance_delay_ms
        group.initial_rebalance = group.state is GroupState.EMPTY
        if group.state is GroupState.EMPTY and delay > 0:
            group.in_initial_delay = True
            group.new_member_added = False
            group.initial_delay_remaining_ms = max(group.max_rebalance_timeout_ms() - delay, 0)
            group.join_deadline = now_ms + delay
        else:
            group.in_initial_delay = False
            group.join_deadline = now_ms + group.max_rebalance_timeout_ms()
        group.state = GroupState.PREPARING_REBALANCE
        group.empty_since_ms = None
        self._schedule(group.join_deadline, _Timer.JOIN, group.group_id)
        self._event(fx, "rebalance", group, detail=reason)
        if group.join_deadline <= now_ms and not group.in_initial_delay:
            # A rebalance timeout of 0 (a group whose last member just left): its timer is due
            # now, so the rebalance ends now, not whenever the shell's timer runs.
            self._join_deadline_passed(group, now_ms, fx)
        else:
            self._try_complete_join(group, now_ms, fx)

    def _try_complete_join(self, group: _Group, now_ms: int, fx: Effects) -> None:
        # With no initial delay, the first rebalance ends as soon as every member has joined,
        # pending members or not: Kafka's 0 ms initial-delay timer (GroupMetadataManager.
        # tryCompleteInitialRebalanceElseSchedule) does not wait for them either.
        everyone = group.all_joined() or (
            group.initial_rebalance and all(m.awaiting_join is not None for m in group.members.values())
        )
        if group.state is GroupState.PREPARING_REBALANCE and not group.in_initial_delay and everyone:
            self._complete_join(group, now_ms, fx)

    def _join_deadline_passed(self, group: _Group, now_ms: int, fx: Effects) -> None:
        if group.in_initial_delay and group.new_member_added and group.initial_delay_remaining_ms > 0:
            step = min(self._config.initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms -= step
            group.new_member_added = False
            group.join_deadline = now_ms + step
            self._schedule(group.join_deadline, _Timer.JOIN, group.group_id)
            return
        group.in_initial_delay = False
        self._complete_join(group, now_ms, fx)

    def _complete_join(self, group: _Group, now_ms: int, fx: Effects) -> None:
        group.join_deadline = None
        group.initial_rebalance = False
        # Dynamic members that did not rejoin are removed; static ones stay in the generation
        # (their session, or the sync deadline, decides), as in Kafka.
        late = [m for m in group.members.values() if m.awaiting_join is None and m.group_instance_id is None]
        for member in late:
            self._drop_member(group, member, fx, "removed", "did not rejoin before the rebalance timeout")
        if group.members and not self._elect_joined_leader(group):
            # Only static members that did not rejoin are left: as Kafka, the rebalance waits
            # another rebalance timeout, and their sessions decide.
            group.join_deadline = now_ms + group.max_rebalance_timeout_ms()
            self._schedule(group.join_deadline, _Timer.JOIN, group.group_id)
            return
        group.generation_id += 1
        if not group.members:
            group.state = GroupState.EMPTY
            group.empty_since_ms = now_ms
            group.protocol_name = None
            group.leader_id = None
            group.begin_generation()
            fx.writes.append(group.snapshot())
            self._event(fx, "emptied", group)
            return
        group.protocol_name = group.select_protocol()
        group.begin_generation()
        group.state = GroupState.COMPLETING_REBALANCE
        group.pending_sync = set(group.members)
        group.sync_deadline = now_ms + group.max_rebalance_timeout_ms()
        self._schedule(group.sync_deadline, _Timer.SYNC, group.group_id)
        self._event(
            fx,
            "generation",
            group,
            group.leader_id,
            detail=f"protocol={group.protocol_name} members={len(group.members)}",
        )
        for member in group.members.values():
            if member.awaiting_join is not None:
                fx.replies.append((member.awaiting_join, self._join_result(group, member)))
                member.awaiting_join = None
            self._touch(member, now_ms)

    @staticmethod
    def _elect_joined_leader(group: _Group) -> bool:
        """Kafka's ClassicGroup.maybeElectNewJoinedLeader: the leader stays if it rejoined;
        else a member that rejoined leads (an absent static leader is replaced). False if no
        member rejoined."""
        leader = group.members.get(group.leader_id or "")
        if leader is not None and leader.awaiting_join is not None:
            return True
        joined = next((m for m in group.members.values() if m.awaiting_join is not None), None)
        if joined is None:
            return False
        group.leader_id = joined.member_id
        return True

    def _sync_deadline_passed(self, group: _Group, now_ms: int, fx: Effects) -> None:
        group.sync_deadline = None
        late = [group.members[m] for m in group.pending_sync if m in group.members]
        group.pending_sync.clear()
        if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not late:
            return
        for member in late:
            self._drop_member(group, member, fx, "removed", "did not send SyncGroup in time")
        self._prepare_rebalance(group, now_ms, fx, "members did not sync in time")

    # --- SyncGroup ---------------------------------------------------------------------------

    def _sync_group(self, ref: RequestRef, req: SyncGroup, now_ms: int, fx: Effects) -> None:
        def reply(error: ErrorCode, assignment: bytes = b"") -> None:
            self._note_rejection(fx, req.group_id, req.member_id, "SyncGroup", error)
            fx.replies.append(
                (
                    ref,
                    SyncGroupResult(
                        error=error,
                        # Kafka names the protocol only in a successful answer.
                        protocol_type=group.protocol_type if group and not error else None,
                        protocol_name=group.protocol_name if group and not error else None,
                        assignment=assignment,
                    ),
                )
            )

        group = self._groups.get(req.group_id)
        if not req.group_id:
            return reply(ErrorCode.INVALID_GROUP_ID)
        if group is None:
            return reply(ErrorCode.UNKNOWN_MEMBER_ID)
        known = self._validate_member(group, req.member_id, req.group_instance_id)
        if known is not ErrorCode.NONE:
            return reply(known)
        member = group.members[req.member_id]
        if req.generation_id != group.generation_id:
            return reply(ErrorCode.ILLEGAL_GENERATION)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            return reply(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        self._touch(member, now_ms)
        if group.state is GroupState.PREPARING_REBALANCE:
            return reply(ErrorCode.REBALANCE_IN_PROGRESS)
        group.pending_sync.discard(member.member_id)
        if group.state is GroupState.STABLE:
            return reply(ErrorCode.NONE, member.assignment)
        # CompletingRebalance: park until the leader's assignment arrives.
        if member.awaiting_sync is not None and member.awaiting_sync != ref:
            fx.replies.append((member.awaiting_sync, SyncGroupResult(error=ErrorCode.REBALANCE_IN_PROGRESS)))
        member.awaiting_sync = ref
        if member.member_id == group.leader_id:
            assignments = dict(req.assignments)
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.state = GroupState.STABLE
            fx.writes.append(group.snapshot())
            self._event(fx, "assigned", group, member.member_id, detail=f"members={len(group.members)}")
            for m in group.members.values():
                if m.awaiting_sync is not None:
                    fx.replies.append(
                        (
                            m.awaiting_sync,
                            SyncGroupResult(
                                error=ErrorCode.NONE,
                                protocol_type=group.protocol_type,
                                protocol_name=group.protocol_name,
                                assignment=m.assignment,
                            ),
                        )
                    )
                    m.awaiting_sync = None
            if not group.pending_sync:
                group.sync_deadline = None
        return None

    # --- Heartbeat ---------------------------------------------------------------------------

    def _heartbeat(self, req: Heartbeat, now_ms: int) -> HeartbeatResult:
        if not req.group_id:
            return HeartbeatResult(error=ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
            return HeartbeatResult(error=ErrorCode.UNKNOWN_MEMBER_ID)
        known = self._validate_member(group, req.member_id, req.group_instance_id)
        if known is not ErrorCode.NONE:
            return HeartbeatResult(error=known)
        member = group.members[req.member_id]
        if req.generation_id != group.generation_id:
            return HeartbeatResult(error=ErrorCode.ILLEGAL_GENERATION)
        self._touch(member, now_ms)
        if group.state is GroupState.PREPARING_REBALANCE:
            return HeartbeatResult(error=ErrorCode.REBALANCE_IN_PROGRESS)
        return HeartbeatResult(error=ErrorCode.NONE)

    def _hold_heartbeat(self, ref: RequestRef, req: Heartbeat, now_ms: int) -> bool:
        """Hold an answer-NONE heartbeat of a Stable group's member until the group changes or
        the hold passes. At most a third of the session, so a member that sends its next
        heartbeat when the answer comes still reaches the coordinator well within its session,
        and its lease (counted from acknowledged sends) keeps a sixth of the session to spare."""
        group = self._groups[req.group_id]
        member = group.members[req.member_id]
        hold = min(self._config.heartbeat_hold_ms, member.session_timeout_ms // 3)
        if (
            ref is None
            or hold <= 0
            or group.state is not GroupState.STABLE
            or member.held_heartbeat is not None
        ):
            return False
        member.held_heartbeat = ref
        member.held_until = now_ms + hold
        self._held[ref] = (group.group_id, member.member_id)
        self._schedule(member.held_until, _Timer.HELD_HEARTBEAT, group.group_id, member.member_id)
        return True

    def _answer_held(
        self, group: _Group, member: _Member, error: ErrorCode, now_ms: int, fx: Effects
    ) -> None:
        assert member.held_heartbeat is not None
        fx.replies.append((member.held_heartbeat, HeartbeatResult(error=error)))
        self._held.pop(member.held_heartbeat, None)
        member.held_heartbeat = None
        # The session counts from the heartbeat's arrival, not from this answer: an open
        # connection is no sign of life (a paused process keeps it), the next heartbeat is.
        self._schedule(max(member.session_deadline, now_ms), _Timer.SESSION, group.group_id, member.member_id)

    # --- LeaveGroup --------------------------------------------------------------------------

    def _leave_group(self, req: LeaveGroup, now_ms: int, fx: Effects) -> LeaveGroupResult:
        group = self._groups.get(req.group_id)
        if group is None:
            # As Kafka's GroupCoordinatorService.leaveGroup answers it: each member
            # UNKNOWN_MEMBER_ID, the request itself NONE (v0-2 carry the first member's error).
            return LeaveGroupResult(
                error=ErrorCode.NONE,
                members=tuple(
                    LeftMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        error=ErrorCode.UNKNOWN_MEMBER_ID,
                    )
                    for m in req.members
                ),
            )
        results = []
        removed = False
        for leaving in req.members:
            member_id = leaving.member_id
            if not member_id and leaving.group_instance_id is not None:
                member_id = group.static_members.get(leaving.group_instance_id, "")
            if self._is_fenced(group, leaving.group_instance_id, member_id):
                error = ErrorCode.FENCED_INSTANCE_ID
            elif member_id in group.pending_members:
                del group.pending_members[member_id]
                error = ErrorCode.NONE
            elif member_id in group.members:
                detail = leaving.reason or "left the group"
                self._drop_member(group, group.members[member_id], fx, "left", detail)
                removed = True
                error = ErrorCode.NONE
            else:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            results.append(
                LeftMember(
                    member_id=leaving.member_id,
                    group_instance_id=leaving.group_instance_id,
                    error=error,
                )
            )
        if removed:
            self._rebalance_after_removal(group, now_ms, fx, "members left")
        else:
            self._try_complete_join(group, now_ms, fx)
        return LeaveGroupResult(error=ErrorCode.NONE, members=tuple(results))

    # --- member removal -----------------------------------------------------------------------

    def _drop_member(self, group: _Group, member: _Member, fx: Effects, kind: str, detail: str) -> None:
        """Remove a member without deciding about a rebalance (callers do that once)."""
        if member.awaiting_join is not None:
            fx.replies.append(
                (
                    member.awaiting_join,
                    JoinGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID, member_id=member.member_id),
                )
            )
        if member.awaiting_sync is not None:
            fx.replies.append((member.awaiting_sync, SyncGroupResult(error=ErrorCode.UNKNOWN_MEMBER_ID)))
        if member.held_heartbeat is not None:
            self._held.pop(member.held_heartbeat, None)
            fx.replies.append((member.held_heartbeat, HeartbeatResult(error=ErrorCode.UNKNOWN_MEMBER_ID)))
        group.remove(member.member_id)
        instance = member.group_instance_id
        if instance is not None and group.static_members.get(instance) == member.member_id:
            del group.static_members[instance]
        group.pending_sync.discard(member.member_id)
        if group.leader_id == member.member_id:
            group.leader_id = next(iter(group.members), None)
        self._event(fx, kind, group, member.member_id, instance, detail)

    def _remove_member(
        self, group: _Group, member: _Member, now_ms: int, fx: Effects, kind: str, detail: str
    ) -> None:
        self._drop_member(group, member, fx, kind, detail)
        self._rebalance_after_removal(group, now_ms, fx, f"member {member.member_id} {kind}")

    def _rebalance_after_removal(self, group: _Group, now_ms: int, fx: Effects, reason: str) -> None:
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms, fx, reason)
        else:
            self._try_complete_join(group, now_ms, fx)

    def _validate_member(self, group: _Group, member_id: str, instance: str | None) -> ErrorCode:
        """Kafka's ClassicGroup.validateMember, for SyncGroup, Heartbeat and OffsetCommit: an
        instance id the group does not know, or a member id it does not know, is
        UNKNOWN_MEMBER_ID; an instance id another member id holds is FENCED_INSTANCE_ID."""
        if instance is not None:
            holder = group.static_members.get(instance)
            if holder is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if holder != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID

    def _is_fenced(self, group: _Group, instance: str | None, member_id: str) -> bool:
        if instance is None:
            return False
        known = group.static_members.get(instance)
        return known is not None and known != member_id

    def _maybe_forget(self, group: _Group) -> None:
        # A group that never completed a generation and holds nothing (a rejected first join,
        # a pending member that never came back) leaves no trace, so junk ids cost no memory.
        if (
            group.state is GroupState.EMPTY
            and group.generation_id == 0
            and not group.members
            and not group.pending_members
            and not group.offsets
        ):
            self._groups.pop(group.group_id, None)

    # --- offsets -------------------------------------------------------------------------------

    def _offset_commit(self, req: OffsetCommit, now_ms: int, fx: Effects) -> OffsetCommitResult:
        # As Kafka's KafkaApis: a partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION,
        # answered first, whatever the group says of the others; with none left the group is
        # not even asked.
        unknown: list[tuple[str, int, ErrorCode]] = []
        offsets: list[CommittedOffset] = []
        for o in req.offsets:
            if self._exists(o.topic, o.partition):
                offsets.append(o)
            else:
                unknown.append((o.topic, o.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if not offsets:
            return OffsetCommitResult(errors=tuple(unknown))

        def fits(committed: CommittedOffset) -> bool:
            metadata = committed.metadata
            return metadata is None or len(metadata.encode()) <= self._config.offset_metadata_max_bytes

        def all_fail(error: ErrorCode) -> OffsetCommitResult:
            return OffsetCommitResult(errors=(*unknown, *((o.topic, o.partition, error) for o in offsets)))

        if not req.group_id:
            return all_fail(ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if req.group_id in self._consumer_groups:
            # Fenced by member epoch; the group's Empty classic record only keeps its offsets.
            # Kafka checks only the partitions whose metadata fits (the others are refused alone).
            checked = [(o.topic, o.partition) for o in offsets if fits(o)]
            error = self._consumer_groups.check_commit(
                req.group_id, req.member_id, req.generation_id, checked, req.version
            )
            if error is not ErrorCode.NONE:
                return all_fail(error)
            if group is None:
                group = self._groups[req.group_id] = _Group(req.group_id)
        elif group is None:
            if req.generation_id >= 0:
                # Kafka's OffsetMetadataManager.validateOffsetCommit: GROUP_ID_NOT_FOUND from
                # version 9, ILLEGAL_GENERATION before (for older clients).
                return all_fail(
                    ErrorCode.GROUP_ID_NOT_FOUND if req.version >= 9 else ErrorCode.ILLEGAL_GENERATION
                )
            group = self._groups[req.group_id] = _Group(req.group_id)
        if req.group_id not in self._consumer_groups and not (
            req.generation_id < 0 and group.state is GroupState.EMPTY
        ):
            known = self._validate_member(group, req.member_id, req.group_instance_id)
            if known is not ErrorCode.NONE:
                return all_fail(known)
            member = group.members[req.member_id]
            if req.generation_id != group.generation_id:
                return all_fail(ErrorCode.ILLEGAL_GENERATION)
            if group.state is GroupState.COMPLETING_REBALANCE:
                return all_fail(ErrorCode.REBALANCE_IN_PROGRESS)
            self._touch(member, now_ms)
        errors = unknown
        accepted = []
        for committed in offsets:
            if fits(committed):
                error = ErrorCode.NONE
                accepted.append(committed)
            else:
                error = ErrorCode.OFFSET_METADATA_TOO_LARGE
            errors.append((committed.topic, committed.partition, error))
        for committed in accepted:
            partition = (committed.topic, committed.partition)
            group.offsets[partition] = committed
            group.committed_at[partition] = now_ms
            if req.retention_ms >= 0:
                group.expire_at[partition] = now_ms + req.retention_ms
            else:
                group.expire_at.pop(partition, None)
        if accepted:
            fx.writes.append(OffsetsCommitted(group_id=group.group_id, offsets=tuple(accepted)))
            self._schedule_offset_check(now_ms)
        self._maybe_forget(group)
        return OffsetCommitResult(errors=tuple(errors))

    def _exists(self, topic_name: str, partition: int) -> bool:
        topic = self._topics.get(topic_name)
        return topic is not None and 0 <= partition < topic.partitions

    def _schedule_offset_check(self, now_ms: int) -> None:
        if self._offset_check_at is None:
            self._offset_check_at = now_ms + self._config.offsets_retention_check_interval_ms
            self._schedule(self._offset_check_at, _Timer.OFFSET_EXPIRY, "")

    def _expire_offsets(self, now_ms: int, fx: Effects) -> None:
        """Kafka's offset retention (KIP-211), checked every ``offsets_retention_check_interval_ms``:
        an offset with an expiry of its own (OffsetCommit v2-4) goes at it; a group with members
        (classic, or a consumer group of the incremental protocol) keeps the rest; an Empty
        group's go ``offsets_retention_ms`` after it became Empty, those of a group that only
        ever stored offsets that long after each commit. A group left with nothing is deleted,
        and so is one whose offsets an OffsetDelete removed, if it has no members."""
        emptied, self._offsets_deleted = self._offsets_deleted, set()
        for group_id in sorted(emptied):
            self._forget_emptied(group_id, fx)
        retention = self._config.offsets_retention_ms
        for group in list(self._groups.values()):
            if not group.offsets:
                continue
            consumer_group = group.group_id in self._consumer_groups
            active = group.state is not GroupState.EMPTY or (
                consumer_group and self._consumer_groups.has_members(group.group_id)
            )
            never_had_members = group.protocol_type is None and not consumer_group
            if active:
                group.empty_since_ms = None
            elif group.empty_since_ms is None:
                # Empty since some time after the last check (a consumer group of the incremental
                # protocol, whose classic record does not see its members go): count from now.
                group.empty_since_ms = now_ms
            empty_since = now_ms if group.empty_since_ms is None else group.empty_since_ms
            expired = []
            for partition in group.offsets:
                due = group.expire_at.get(partition)
                if due is None and not active:
                    since = group.committed_at[partition] if never_had_members else empty_since
                    due = since + retention
                if due is not None and due <= now_ms:
                    expired.append(partition)
            if not expired:
                continue
            for partition in expired:
                del group.offsets[partition]
                group.committed_at.pop(partition, None)
                group.expire_at.pop(partition, None)
            fx.writes.append(OffsetsExpired(group_id=group.group_id, partitions=tuple(sorted(expired))))
            self._event(fx, "offsets-expired", group, detail=f"{len(expired)} committed offset(s) expired")
            if not group.offsets and not group.members and not group.pending_members and not consumer_group:
                del self._groups[group.group_id]
                fx.writes.append(GroupDeleted(group_id=group.group_id))
                self._event(fx, "deleted", group, detail="its offsets expired")
        if any(group.offsets for group in self._groups.values()):
            self._schedule_offset_check(now_ms)

    def _offset_fetch(self, req: OffsetFetch) -> OffsetFetchResult:
        if req.group_id in self._consumer_groups:
            error = self._consumer_groups.check_fetch(req.group_id, req.member_id, req.member_epoch)
            if error is not ErrorCode.NONE:
                return OffsetFetchResult(error=error, offsets=())
        group = self._groups.get(req.group_id)
        stored = group.offsets if group else {}
        keys = sorted(stored) if req.partitions is None else list(req.partitions)
        offsets = []
        for topic, partition in keys:
            committed = stored.get((topic, partition))
            offsets.append(
                FetchedOffset(
                    topic=topic,
                    partition=partition,
                    offset=committed.offset if committed else -1,
                    leader_epoch=committed.leader_epoch if committed else -1,
                    metadata=committed.metadata if committed else "",
                )
            )
        return OffsetFetchResult(error=ErrorCode.NONE, offsets=tuple(offsets))

    def _offset_delete(self, req: OffsetDelete, now_ms: int, fx: Effects) -> OffsetDeleteResult:
        """Kafka's OffsetMetadataManager.deleteOffsets, with KafkaApis' checks of the partitions
        (the shell has left out those of topics the client may not read).

        A group that does not exist is GROUP_ID_NOT_FOUND; a classic group with members that is
        not a consumer-protocol group is NON_EMPTY_GROUP (nothing deleted, no partition listed).
        Otherwise each partition is answered: UNKNOWN_TOPIC_OR_PARTITION for one that does not
        exist (these first, as KafkaApis answers them before asking the coordinator), then
        GROUP_SUBSCRIBED_TO_TOPIC for a topic the group's members subscribe to, NONE for the
        others, whose offsets are deleted. A group left with neither offsets nor members is
        deleted at the next retention check, as Kafka's coordinator deletes an empty group
        without offsets (GroupCoordinatorShard.cleanupGroupMetadata)."""
        if not req.group_id:
            return OffsetDeleteResult(error=ErrorCode.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        consumer_group = req.group_id in self._consumer_groups
        subscribed: frozenset[str] | None
        if consumer_group:
            subscribed = self._consumer_groups.subscribed_topics(req.group_id)
        elif group is None:
            return OffsetDeleteResult(error=ErrorCode.GROUP_ID_NOT_FOUND)
        elif group.state is GroupState.EMPTY:
            subscribed = frozenset()
        elif group.protocol_type != PROTOCOL_TYPE:
            return OffsetDeleteResult(error=ErrorCode.NON_EMPTY_GROUP)
        else:
            subscribed = self._classic_subscriptions(group)
        unknown = []
        answered = []
        deleted = []
        for topic_name, partition in req.partitions:
            if not self._exists(topic_name, partition):
                unknown.append((topic_name, partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            elif subscribed is None or topic_name in subscribed:
                # Members that do not say what they subscribe to might read any topic (Kafka's
                # ClassicGroup.isSubscribedToTopic when its subscriptions are unknown).
                answered.append((topic_name, partition, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC))
            else:
                answered.append((topic_name, partition, ErrorCode.NONE))
                if group is not None and (topic_name, partition) in group.offsets:
                    deleted.append((topic_name, partition))
        if group is not None and deleted:
            self._delete_offsets(group, deleted, "", now_ms, fx)
        return OffsetDeleteResult(error=ErrorCode.NONE, partitions=tuple(unknown + answered))

    def _delete_offsets(
        self, group: _Group, partitions: list[tuple[str, int]], why: str, now_ms: int, fx: Effects
    ) -> None:
        """Delete ``group``'s committed offsets of ``partitions`` (those it has; ``why`` ends the
        event's words). A group left with neither offsets nor members is deleted at the next
        retention check."""
        gone = sorted(p for p in set(partitions) if group.offsets.pop(p, None) is not None)
        if not gone:
            return
        for partition in gone:
            group.committed_at.pop(partition, None)
            group.expire_at.pop(partition, None)
        fx.writes.append(OffsetsDeleted(group_id=group.group_id, partitions=tuple(gone)))
        self._event(fx, "offsets-deleted", group, detail=f"{len(gone)} committed offset(s) deleted{why}")
        if not group.offsets:
            self._offsets_deleted.add(group.group_id)
            self._schedule_offset_check(now_ms)

    def _classic_subscriptions(self, group: _Group) -> frozenset[str] | None:
        """The topics the members of a classic consumer group subscribed to when its current
        generation began, read from their metadata (Kafka's ClassicGroup.computeSubscribedTopics);
        None if unknown: no generation yet, no plugin that reads the consumer protocol, or
        metadata that does not read."""
        if group.generation_metadata is None or self._classic_payloads is None:
            return None
        topics: set[str] = set()
        try:
            for metadata in group.generation_metadata:
                topics |= self._classic_payloads.subscription(metadata)[0]
        except ValueError:
            return None
        return frozenset(topics)

    def _forget_emptied(self, group_id: str, fx: Effects) -> None:
        """Delete a group whose last offsets an OffsetDelete removed, if it still has neither
        offsets nor members."""
        group = self._groups.get(group_id)
        if group is None or group.offsets:
            return
        if group_id in self._consumer_groups:
            if self._consumer_groups.delete(group.group_id) is not ErrorCode.NONE:
                return  # it has members: only its offsets go
        elif group.state is not GroupState.EMPTY or group.members or group.pending_members:
            return
        del self._groups[group.group_id]
        fx.writes.append(GroupDeleted(group_id=group.group_id))
        self._event(fx, "deleted", group, detail="its offsets were deleted")

    # --- administration ------------------------------------------------------------------------

    def _list_groups(self, req: ListGroups) -> ListGroupsResult:
        listed = []
        for group in sorted(self._groups.values(), key=lambda g: g.group_id):
            if group.group_id in self._consumer_groups:
                continue  # listed below, as a consumer group
            if req.states and group.state.value.lower() not in req.states:
                continue
            if req.types and "classic" not in req.types:
                continue
            listed.append(
                ListedGroup(
                    group_id=group.group_id,
                    protocol_type=group.protocol_type or "",
                    state=group.state,
                )
            )
        for group_id in self._consumer_groups.group_ids():
            state = self._consumer_groups.state(group_id)
            protocol_type = self._consumer_groups.protocol_type(group_id)
            # Kafka's group types are classic, consumer, share and streams; a group of another
            # protocol type on this project's GroupHeartbeat is "incremental".
            group_type = "consumer" if protocol_type == PROTOCOL_TYPE else "incremental"
            if req.states and state.value.lower() not in req.states:
                continue
            if req.types and group_type not in req.types:
                continue
            listed.append(
                ListedGroup(
                    group_id=group_id, protocol_type=protocol_type, state=state, group_type=group_type
                )
            )
        return ListGroupsResult(groups=tuple(sorted(listed, key=lambda g: g.group_id)))

    def _describe_groups(self, req: DescribeGroups) -> DescribeGroupsResult:
        described = []
        for group_id in req.group_ids:
            # A group of the incremental protocol is not a classic group, even when its offsets
            # are kept (in a classic group object here, as ListGroups knows): Kafka's
            # GroupMetadataManager.describeGroups answers it as a group not found.
            incremental = group_id in self._consumer_groups
            group = None if incremental else self._groups.get(group_id)
            if group is None:
                described.append(
                    DescribedGroup(
                        group_id=group_id,
                        error=ErrorCode.GROUP_ID_NOT_FOUND,
                        message=f"Group {group_id} is not a classic group."
                        if incremental
                        else f"Group {group_id} not found.",
                        state=GroupState.DEAD,
                        protocol_type="",
                        protocol_name="",
                        members=(),
                    )
                )
                continue
            # As in Kafka, metadata and assignments are only shown for a Stable group.
            stable = group.state is GroupState.STABLE
            members = tuple(
                DescribedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    metadata=m.metadata_for(group.protocol_name) if stable else b"",
                    assignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            )
            described.append(
                DescribedGroup(
                    group_id=group_id,
                    error=ErrorCode.NONE,
                    state=group.state,
                    protocol_type=group.protocol_type or "",
                    protocol_name=group.protocol_name or "" if stable else "",
                    members=members,
                    generation_id=group.generation_id,
                )
            )
        return DescribeGroupsResult(groups=tuple(described))

    def _delete_groups(self, req: DeleteGroups, fx: Effects) -> DeleteGroupsResult:
        results = []
        for group_id in req.group_ids:
            group = self._groups.get(group_id)
            if group_id in self._consumer_groups:
                error = self._consumer_groups.delete(group_id)
                if error is ErrorCode.NONE:
                    self._groups.pop(group_id, None)  # its offsets go with it
                    fx.writes.append(GroupDeleted(group_id=group_id))
                results.append((group_id, error))
            elif group is None:
                results.append((group_id, ErrorCode.GROUP_ID_NOT_FOUND))
            elif group.state is not GroupState.EMPTY:
                results.append((group_id, ErrorCode.NON_EMPTY_GROUP))
            else:
                del self._groups[group_id]
                fx.writes.append(GroupDeleted(group_id=group_id))
                self._event(fx, "deleted", group)
                results.append((group_id, ErrorCode.NONE))
        return DeleteGroupsResult(results=tuple(results))

    def _create_topics(self, req: CreateTopics, fx: Effects) -> CreateTopicsResult:
        cap = self._config.max_topics_per_request
        if len(req.topics) > cap:
            message = f"one CreateTopics may create at most {cap} topics (max_topics_per_request)"
            return CreateTopicsResult(
                topics=tuple(
                    CreatedTopic(name=new.name, error=ErrorCode.POLICY_VIOLATION, message=message)
                    for new in req.topics
                )
            )
        created = []
        names = Counter(new.name for new in req.topics)
        for new in req.topics:
            partitions = (
                self._config.default_num_partitions if new.num_partitions == -1 else new.num_partitions
            )

            def fail(error: ErrorCode, message: str, name: str = new.name) -> None:
                created.append(CreatedTopic(name=name, error=error, message=message))

            if names[new.name] > 1:
                fail(ErrorCode.INVALID_REQUEST, f"topic {new.name!r} is named more than once in the request")
            elif not _LEGAL_TOPIC.fullmatch(new.name) or new.name in (".", ".."):
                fail(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    "topic names are 1 to 249 characters of ASCII letters, digits, '.', '_', '-'",
                )
            elif new.name in self._topics:
                fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {new.name!r} already exists")
            elif not 1 <= partitions <= self._config.max_partitions_per_topic:
                fail(
                    ErrorCode.INVALID_PARTITIONS,
                    f"the number of partitions must be between 1 and {self._config.max_partitions_per_topic}",
                )
            elif new.replication_factor not in (-1, 1):
                fail(
                    ErrorCode.INVALID_REPLICATION_FACTOR,
                    "the embedded coordinator is a single node: replication factor must be 1",
                )
            else:
                topic = Topic(name=new.name, partitions=partitions, topic_id=self._new_topic_id())
                if not req.validate_only:
                    self._add_topic(topic)
                    fx.writes.append(topic)
                created.append(
                    CreatedTopic(
                        name=topic.name,
                        error=ErrorCode.NONE,
                        topic_id=topic.topic_id,
                        num_partitions=partitions,
                    )
                )
        return CreateTopicsResult(topics=tuple(created))

    def _create_partitions(self, req: CreatePartitions, fx: Effects) -> CreatePartitionsResult:
        """Kafka's controller's checks, in its order and words (``ReplicationControlManager``);
        one result per topic of the request, in its order (a name given twice: INVALID_REQUEST
        for each, answered once)."""
        names = Counter(t.name for t in req.topics)
        results = []
        for new in req.topics:
            topic = self._topics.get(new.name)
            error, message = ErrorCode.NONE, None
            if names[new.name] > 1:
                error, message = ErrorCode.INVALID_REQUEST, "Duplicate topic name."
            elif topic is None:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # no words, as Kafka's controller
            elif new.count == topic.partitions:
                error = ErrorCode.INVALID_PARTITIONS
                message = f"Topic already has {topic.partitions} partition(s)."
            elif new.count < topic.partitions:
                error = ErrorCode.INVALID_PARTITIONS
                message = (
                    f"The topic {new.name} currently has {topic.partitions} partition(s); "
                    f"{new.count} would not be an increase."
                )
            elif new.count > self._config.max_partitions_per_topic:
                error = ErrorCode.INVALID_PARTITIONS
                message = (
                    f"the number of partitions must be between 1 and {self._config.max_partitions_per_topic}"
                )
            elif new.assignments is not None:
                error, message = _manual_assignment_error(
                    new.assignments, new.count - topic.partitions, self._config.node_id
                )
            if error is ErrorCode.NONE and topic is not None and not req.validate_only:
                grown = dataclasses.replace(topic, partitions=new.count)
                self._add_topic(grown)
                fx.writes.append(grown)
            results.append(PartitionsCreated(name=new.name, error=error, message=message))
        return CreatePartitionsResult(topics=tuple(results))

    def _delete_topics(self, req: DeleteTopics, now_ms: int, fx: Effects) -> DeleteTopicsResult:
        """Kafka's controller's checks, in its order and words (``ControllerApis.deleteTopics``):
        topics named neither way or both ways, names and ids given twice, ids it does not know,
        then, as the requester may (:class:`DeleteTopics`), those it may not delete (named by id:
        their names only if it may describe them), names it may not describe or that do not
        exist, a name whose topic was also given by id; then the deletions. Answered in that
        order (Kafka's controller shuffles its answers)."""
        answers: list[DeletedTopic] = []

        def answer(name: str | None, topic_id: bytes, error: ErrorCode, message: str | None) -> None:
            answers.append(DeletedTopic(name=name, topic_id=topic_id, error=error, message=message))

        names: dict[str, None] = {}  # (ordered sets)
        twice_named: dict[str, None] = {}
        ids: dict[bytes, None] = {}
        twice_given: dict[bytes, None] = {}
        for asked in req.topics:
            if asked.name is not None and asked.topic_id != NO_TOPIC_ID:
                answer(asked.name, asked.topic_id, ErrorCode.INVALID_REQUEST, _NAME_AND_ID)
            elif asked.name is None and asked.topic_id == NO_TOPIC_ID:
                answer(None, NO_TOPIC_ID, ErrorCode.INVALID_REQUEST, _NEITHER_NAME_NOR_ID)
            elif asked.name is not None:
                if asked.name in twice_named or names.pop(asked.name, 0) is None:
                    twice_named[asked.name] = None
                else:
                    names[asked.name] = None
            elif asked.topic_id in twice_given or ids.pop(asked.topic_id, 0) is None:
                twice_given[asked.topic_id] = None
            else:
                ids[asked.topic_id] = None
        for name in twice_named:
            answer(name, NO_TOPIC_ID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        for topic_id in twice_given:
            answer(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
        by_id: dict[bytes, str] = {}
        for topic_id in ids:
            found = self._topic_names.get(topic_id)
            if found is None:
                answer(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
            else:
                by_id[topic_id] = found
        describable = req.may_describe or _anything
        deletable = req.may_delete or _anything
        for topic_id, name in list(by_id.items()):
            if not deletable(name):
                answer(name if describable(name) else None, topic_id, _TOPIC_REFUSED, _TOPIC_REFUSED_WORDS)
                del by_id[topic_id]
        for name in names:
            topic = self._topics.get(name)
            if not describable(name) or (topic is not None and not deletable(name)):
                answer(name, NO_TOPIC_ID, _TOPIC_REFUSED, _TOPIC_REFUSED_WORDS)
            elif topic is None:
                answer(name, NO_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NO_SUCH_TOPIC)
            elif topic.topic_id in twice_given or topic.topic_id in by_id:
                twice_given[topic.topic_id] = None
                by_id.pop(topic.topic_id, None)
                answer(name, topic.topic_id, ErrorCode.INVALID_REQUEST, _NAME_OF_AN_ID_GIVEN)
            else:
                by_id[topic.topic_id] = name
        for topic_id, name in by_id.items():
            self._remove_topic(name, now_ms, fx)
            answer(name, topic_id, ErrorCode.NONE, None)
        return DeleteTopicsResult(topics=tuple(answers))

    def _remove_topic(self, name: str, now_ms: int, fx: Effects) -> None:
        """Delete topic ``name``, and every group's committed offsets of its partitions (Kafka's
        GroupCoordinatorService.onTopicsDeleted). A consumer group subscribed to it moves to a
        new group epoch at its next heartbeat, without its partitions (at once if its members'
        heartbeats are held), and its members give them up."""
        topic = self._topics.pop(name)
        self._topic_names.pop(topic.topic_id, None)
        self._consumer_groups.topics_changed()
        fx.writes.append(TopicRemoved(name=name))
        for group in list(self._groups.values()):
            gone = [partition for partition in group.offsets if partition[0] == name]
            if gone:
                self._delete_offsets(group, gone, f" with topic {name}", now_ms, fx)

    # --- events ---------------------------------------------------------------------------------

    def _note_rejection(self, fx: Effects, group_id: str, member_id: str, api: str, error: ErrorCode) -> None:
        # A request refused for its identity is how a zombie shows itself: worth a log line.
        if error in _FENCING_ERRORS:
            group = self._groups.get(group_id)
            fx.events.append(
                MembershipEvent(
                    kind="rejected",
                    group_id=group_id,
                    generation_id=group.generation_id if group else -1,
                    member_id=member_id,
                    detail=f"{api}: {error.name}",
                )
            )

    def _event(
        self,
        fx: Effects,
        kind: str,
        group: _Group,
        member_id: str | None = None,
        group_instance_id: str | None = None,
        detail: str = "",
    ) -> None:
        fx.events.append(
            MembershipEvent(
                kind=kind,
                group_id=group.group_id,
                generation_id=group.generation_id,
                member_id=member_id,
                group_instance_id=group_instance_id,
                detail=detail,
            )
        )


_REQUESTS: EventTable[GroupCoordinator, [RequestRef, int, Effects]] = EventTable(
    Request,
    on(ConsumerGroupHeartbeat, GroupCoordinator._on_ConsumerGroupHeartbeat),
    on(JoinGroup, GroupCoordinator._on_JoinGroup),
    on(SyncGroup, GroupCoordinator._on_SyncGroup),
    on(Heartbeat, GroupCoordinator._on_Heartbeat),
    on(LeaveGroup, GroupCoordinator._on_LeaveGroup),
    on(OffsetCommit, GroupCoordinator._on_OffsetCommit),
    on(OffsetFetch, GroupCoordinator._on_OffsetFetch),
    on(OffsetDelete, GroupCoordinator._on_OffsetDelete),
    on(ListGroups, GroupCoordinator._on_ListGroups),
    on(DescribeGroups, GroupCoordinator._on_DescribeGroups),
    on(DeleteGroups, GroupCoordinator._on_DeleteGroups),
    on(ConsumerGroupDescribe, GroupCoordinator._on_ConsumerGroupDescribe),
    on(CreateTopics, GroupCoordinator._on_CreateTopics),
    on(CreatePartitions, GroupCoordinator._on_CreatePartitions),
    on(DeleteTopics, GroupCoordinator._on_DeleteTopics),
)


def _manual_assignment_error(
    assignments: tuple[tuple[int, ...], ...], additional: int, node_id: int
) -> tuple[ErrorCode, str | None]:
    """What is wrong with the brokers a CreatePartitions names for its new partitions, in Kafka's
    words: this node (``node_id``) is the only broker and holds the only replica of each
    partition."""
    invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    if len(assignments) != additional:
        return invalid, (
            f"Attempted to add {additional} additional partition(s), but only {len(assignments)} "
            "assignment(s) were specified."
        )
    for brokers in assignments:
        if not brokers:
            return invalid, "The manual partition assignment includes an empty replica list."
        previous = None
        for broker in sorted(brokers):
            if broker != node_id:
                return invalid, (
                    f"The manual partition assignment includes broker {broker}, but no such broker is "
                    "registered."
                )
            if broker == previous:
                return invalid, (
                    f"The manual partition assignment includes the broker {broker} more than once."
                )
            previous = broker
        if len(brokers) != 1:
            return invalid, (
                f"The manual partition assignment includes a partition with {len(brokers)} replica(s), "
                "but this is not consistent with previous partitions, which have 1 replica(s)."
            )
    return ErrorCode.NONE, None
