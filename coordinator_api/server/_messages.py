"""Requests and results of the group state machine, independent of Kafka wire versions.

The asyncio shell decodes Kafka requests (any supported version) into these frozen
dataclasses and encodes the results back; the state machine never sees a wire version.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator_api._protocol import ErrorCode
from coordinator_api._types import JoinedMember


class GroupState(enum.Enum):
    """Classic group states, named as Kafka names them in DescribeGroups and ListGroups."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


class ConsumerGroupState(enum.Enum):
    """States of a consumer group of the incremental protocol (KIP-848), named as Kafka names
    them: Empty; Assigning (a new target assignment is due); Reconciling (some member has not
    reached it yet); Stable."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"


# --- group membership -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class JoinGroup:
    group_id: str
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    # JoinGroup v4+ (KIP-394): a new dynamic member must first learn its member id.
    require_known_member_id: bool
    reason: str | None = None
    # JoinGroup v9+ (KIP-814): the leader may be told to skip the assignment.
    skip_assignment_supported: bool = True


@dataclass(frozen=True, kw_only=True)
class JoinGroupResult:
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()  # the leader's view, as the public API's
    # The leader learns every member but must not assign: the group keeps its assignment.
    skip_assignment: bool = False


@dataclass(frozen=True, kw_only=True)
class SyncGroup:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, kw_only=True)
class SyncGroupResult:
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, kw_only=True)
class Heartbeat:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, kw_only=True)
class HeartbeatResult:
    error: ErrorCode


@dataclass(frozen=True, kw_only=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None
    reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class LeaveGroup:
    group_id: str
    members: tuple[LeavingMember, ...]


@dataclass(frozen=True, kw_only=True)
class LeftMember:
    member_id: str
    group_instance_id: str | None
    error: ErrorCode


@dataclass(frozen=True, kw_only=True)
class LeaveGroupResult:
    error: ErrorCode
    members: tuple[LeftMember, ...] = ()


# --- offsets ---------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CommittedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = None


@dataclass(frozen=True, kw_only=True)
class OffsetCommit:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    offsets: tuple[CommittedOffset, ...]
    version: int = 9  # the request's api version (an unknown group's answer and KIP-848 members need it)
    retention_ms: int = -1  # v2-4: how long these offsets are kept; -1: the coordinator's setting


@dataclass(frozen=True, kw_only=True)
class OffsetCommitResult:
    errors: tuple[tuple[str, int, ErrorCode], ...]


@dataclass(frozen=True, kw_only=True)
class OffsetFetch:
    group_id: str
    # None asks for every committed offset of the group.
    partitions: tuple[tuple[str, int], ...] | None
    # v9+: the member asking and its epoch, checked in a consumer group (None and -1: anyone).
    member_id: str | None = None
    member_epoch: int = -1


@dataclass(frozen=True, kw_only=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error: ErrorCode = ErrorCode.NONE


@dataclass(frozen=True, kw_only=True)
class OffsetFetchResult:
    error: ErrorCode
    offsets: tuple[FetchedOffset, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OffsetDelete:
    """An OffsetDelete request: forget the group's committed offsets of these partitions."""

    group_id: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, kw_only=True)
class OffsetDeleteResult:
    """A group-level error (nothing deleted, no partition listed), or each partition's error in
    the order Kafka answers them (NONE: deleted, or there was nothing to delete)."""

    error: ErrorCode
    partitions: tuple[tuple[str, int, ErrorCode], ...] = ()


# --- administration -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ListGroups:
    states: frozenset[str] = frozenset()  # lower-case state names; empty means all
    types: frozenset[str] = frozenset()  # lower-case group types; empty means all


@dataclass(frozen=True, kw_only=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: GroupState | ConsumerGroupState
    group_type: str = "classic"


@dataclass(frozen=True, kw_only=True)
class ListGroupsResult:
    groups: tuple[ListedGroup, ...]


@dataclass(frozen=True, kw_only=True)
class DescribeGroups:
    group_ids: tuple[str, ...]
    # What the principal may do to each group is the shell's to fill in (it knows who asks).
    include_authorized_operations: bool = False


@dataclass(frozen=True, kw_only=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, kw_only=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: GroupState
    protocol_type: str
    protocol_name: str
    members: tuple[DescribedMember, ...]
    generation_id: int = -1
    # GROUP_ID_NOT_FOUND's message; before DescribeGroups v6 the answer is Dead without an error.
    message: str | None = None
    authorized_operations: frozenset[int] | None = None  # AclOperation codes, when asked


@dataclass(frozen=True, kw_only=True)
class DescribeGroupsResult:
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, kw_only=True)
class DeleteGroups:
    group_ids: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class DeleteGroupsResult:
    results: tuple[tuple[str, ErrorCode], ...]


@dataclass(frozen=True, kw_only=True)
class NewTopic:
    name: str
    num_partitions: int  # -1: the coordinator's default
    replication_factor: int  # -1: the default; this single node only has 1


@dataclass(frozen=True, kw_only=True)
class CreateTopics:
    topics: tuple[NewTopic, ...]
    validate_only: bool = False


@dataclass(frozen=True, kw_only=True)
class CreatedTopic:
    name: str
    error: ErrorCode
    message: str | None = None
    topic_id: bytes = bytes(16)
    num_partitions: int = -1


@dataclass(frozen=True, kw_only=True)
class CreateTopicsResult:
    topics: tuple[CreatedTopic, ...]


@dataclass(frozen=True, kw_only=True)
class NewPartitions:
    name: str
    count: int  # the topic's partition count after the request
    assignments: tuple[tuple[int, ...], ...] | None = None  # each new partition's broker ids


@dataclass(frozen=True, kw_only=True)
class CreatePartitions:
    """More partitions for existing topics (Kafka's CreatePartitions, ``kafka-topics --alter
    --partitions``)."""

    topics: tuple[NewPartitions, ...]
    validate_only: bool = False


@dataclass(frozen=True, kw_only=True)
class PartitionsCreated:
    name: str
    error: ErrorCode
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class CreatePartitionsResult:
    topics: tuple[PartitionsCreated, ...]


NO_TOPIC_ID = bytes(16)  # Kafka's Uuid.ZERO_UUID: no topic id given


@dataclass(frozen=True, kw_only=True)
class TopicToDelete:
    name: str | None  # None: named by its id (DeleteTopics v6)
    topic_id: bytes = NO_TOPIC_ID


@dataclass(frozen=True, kw_only=True)
class DeleteTopics:
    """Topics to delete, by name or (v6) by id (Kafka's DeleteTopics, ``kafka-topics
    --delete``). ``may_describe`` and ``may_delete`` are the authorizer's answers for the
    requester per topic name (None: allowed), as Kafka's controller asks them once it has found
    the names of the ids."""

    topics: tuple[TopicToDelete, ...]
    may_describe: Callable[[str], bool] | None = None
    may_delete: Callable[[str], bool] | None = None


@dataclass(frozen=True, kw_only=True)
class DeletedTopic:
    name: str | None
    topic_id: bytes
    error: ErrorCode
    message: str | None = None


@dataclass(frozen=True, kw_only=True)
class DeleteTopicsResult:
    topics: tuple[DeletedTopic, ...]


@dataclass(frozen=True, kw_only=True)
class TopicRemoved:
    """A topic deleted, for the store."""

    name: str


@dataclass(frozen=True, kw_only=True)
class Topic:
    """A topic this coordinator knows, so consumer-protocol assignors see its partitions."""

    name: str
    partitions: int
    topic_id: bytes  # 16 bytes, Kafka's topic UUID


# --- consumer groups of the incremental protocol (KIP-848) -----------------------------------

TopicIdPartitions = tuple[tuple[bytes, tuple[int, ...]], ...]
"""Partitions by topic id, as KIP-848's messages carry them: ((topic id, (partition, ...)), ...).
In a group of another protocol type (this project's GroupHeartbeat) the key is the resource
group's name in UTF-8: ((name, (index, ...)), ...)."""

ResourceOwners = tuple[tuple[str, int, str, bytes], ...]
"""Who acts on each resource of a group of another protocol type now, sorted:
((resource group, index, member id, that member's payload), ...)."""

DeclaredResources = tuple[tuple[str, int], ...]
"""The resource groups a member of another protocol type declares, each with its size:
((name, count), ...), sorted by name."""

DescribedPartitions = tuple[tuple[bytes, str, tuple[int, ...]], ...]
"""Partitions by topic id and name, as ConsumerGroupDescribe shows them."""


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupHeartbeat:
    """A ConsumerGroupHeartbeat request, in the engine's terms (owned partitions by topic id);
    or this project's GroupHeartbeat, for a group of another protocol type, whose members
    declare their resource groups (``resources``) instead of subscribing to topics."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: TopicIdPartitions | None = None
    client_id: str = ""
    client_host: str = ""
    # ConsumerGroupHeartbeat v1+: the member brings its own member id (KIP-1082).
    member_id_required: bool = True
    protocol_type: str = "consumer"
    resources: DeclaredResources | None = None  # GroupHeartbeat only; None: unchanged
    metadata: bytes | None = None  # GroupHeartbeat only: the member's payload; None: unchanged
    list_owners: bool = False  # GroupHeartbeat only: the answer says who owns every resource
    owners_known: ResourceOwners | None = None  # a held heartbeat's: the owners it was told
    # With the authorizer on: whether the member may describe a topic. A topic its regex matches
    # is subscribed only if so (Kafka's coordinator filters regex topics by Topic DESCRIBE).
    may_describe_topic: Callable[[str], bool] | None = None

    @functools.cached_property
    def renews_only(self) -> bool:
        """Whether the heartbeat says nothing but which member sends it, at which epoch: a
        member's steady heartbeat, which at most renews its session."""
        return (
            self.member_epoch > 0
            and self.instance_id is None
            and self.rack_id is None
            and self.rebalance_timeout_ms == -1
            and self.subscribed_topic_names is None
            and self.subscribed_topic_regex is None
            and self.server_assignor is None
            and self.owned is None
            and self.resources is None
            and self.metadata is None
            and not self.list_owners
            and self.may_describe_topic is None
        )


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupHeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None  # none in an error answer, as from Kafka's brokers
    member_epoch: int = 0  # what Kafka's brokers put in an error answer
    heartbeat_interval_ms: int = 0  # nor in the answer to a leave
    assignment: TopicIdPartitions | None = None
    owners: ResourceOwners | None = None  # when the heartbeat asked (list_owners)


@dataclass(frozen=True, kw_only=True)
class DescribedConsumerMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: DescribedPartitions
    target_assignment: DescribedPartitions
    metadata: bytes = b""  # a group of another protocol type: the member's payload
    classic: bool = False  # a member of a consumer group that speaks the classic protocol


@dataclass(frozen=True, kw_only=True)
class DescribedConsumerGroup:
    group_id: str
    error: ErrorCode
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedConsumerMember, ...] = ()
    protocol_type: str = "consumer"
    authorized_operations: frozenset[int] | None = None  # AclOperation codes, when asked


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupDescribe:
    group_ids: tuple[str, ...]
    any_protocol_type: bool = False  # GroupDescribe: groups of every protocol type
    include_authorized_operations: bool = False  # filled in by the shell, as for DescribeGroups


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupDescribeResult:
    groups: tuple[DescribedConsumerGroup, ...]


Request = (
    JoinGroup
    | SyncGroup
    | Heartbeat
    | LeaveGroup
    | OffsetCommit
    | OffsetFetch
    | OffsetDelete
    | ListGroups
    | DescribeGroups
    | DeleteGroups
    | CreateTopics
    | CreatePartitions
    | DeleteTopics
    | ConsumerGroupHeartbeat
    | ConsumerGroupDescribe
)
Result = (
    JoinGroupResult
    | SyncGroupResult
    | HeartbeatResult
    | LeaveGroupResult
    | OffsetCommitResult
    | OffsetFetchResult
    | OffsetDeleteResult
    | ListGroupsResult
    | DescribeGroupsResult
    | DeleteGroupsResult
    | CreateTopicsResult
    | CreatePartitionsResult
    | DeleteTopicsResult
    | ConsumerGroupHeartbeatResult
    | ConsumerGroupDescribeResult
)


# --- what a step of the state machine asks the shell to do ----------------------------


@dataclass(frozen=True, kw_only=True)
class MemberSnapshot:
    """A member as it is stored durably (what a restarted coordinator needs)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes


@dataclass(frozen=True, kw_only=True)
class GroupSnapshot:
    """Durable group metadata, written whenever a generation is settled."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    members: tuple[MemberSnapshot, ...]


@dataclass(frozen=True, kw_only=True)
class GroupDeleted:
    group_id: str


@dataclass(frozen=True, kw_only=True)
class OffsetsCommitted:
    group_id: str
    offsets: tuple[CommittedOffset, ...]


@dataclass(frozen=True, kw_only=True)
class ConsumerMemberSnapshot:
    """A member of a consumer group of the incremental protocol, as stored durably."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    topics: tuple[str, ...]
    regex: str | None
    server_assignor: str | None
    client_id: str
    client_host: str
    epoch: int
    previous_epoch: int
    state: str
    assigned: tuple[tuple[str, int], ...]
    pending_revocation: tuple[tuple[str, int], ...]
    target: tuple[tuple[str, int], ...]
    # (topic, partition, epoch) for each partition assigned or pending revocation: the epoch at
    # which it was assigned. Empty in a data directory written before it was kept: then the
    # member's epoch (0 for a static member away).
    assignment_epochs: tuple[tuple[str, int, int], ...] = ()
    # A member that speaks the classic protocol (JoinGroup, SyncGroup, Heartbeat) in the group:
    # its own session timeout and the protocols it joined with.
    classic_session_timeout_ms: int | None = None
    classic_protocols: tuple[tuple[str, bytes], ...] = ()
    # A member of a group of another protocol type: the resource groups it declared, and the
    # payload it gives the server-side assignor.
    resources: DeclaredResources = ()
    metadata: bytes = b""


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupSnapshot:
    """A consumer group of the incremental protocol as stored durably (its offsets are stored
    as every group's are); as a write, what changed in one step: its epochs, the members that
    changed, as they are now, and the ids of those that ``left``. As Kafka writes a record for
    each member that changed, a step costs the store what it changed, not the group's size."""

    group_id: str
    group_epoch: int
    assignment_epoch: int
    members: tuple[ConsumerMemberSnapshot, ...]
    protocol_type: str = "consumer"
    left: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class OffsetsExpired:
    """Committed offsets of a group that outlived their retention."""

    group_id: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, kw_only=True)
class OffsetsDeleted:
    """Committed offsets of a group that an OffsetDelete removed."""

    group_id: str
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, kw_only=True)
class ConsumerGroupDowngraded:
    """A consumer group of the incremental protocol became a classic group (its classic record
    is written beside this), or an Empty one gave way to a classic group's JoinGroup; its
    offsets stay."""

    group_id: str


StoreWrite = (
    GroupSnapshot
    | ConsumerGroupSnapshot
    | ConsumerGroupDowngraded
    | GroupDeleted
    | OffsetsCommitted
    | OffsetsExpired
    | OffsetsDeleted
    | Topic
    | TopicRemoved
)


@dataclass(frozen=True, kw_only=True)
class MembershipEvent:
    """One membership change, for structured logs and observers."""

    # joined, left, expired, removed, fenced, rejected, rebalance, generation, assigned, emptied,
    # deleted, offsets-expired, offsets-deleted
    kind: str
    group_id: str
    generation_id: int
    member_id: str | None = None
    group_instance_id: str | None = None
    detail: str = ""


@dataclass(kw_only=True)
class Effects:
    """What one step of the state machine produced.

    The shell writes ``writes`` durably first, then sends ``replies`` (a reply may answer
    a request handed in earlier, such as a JoinGroup parked until its rebalance completes),
    then logs ``events``.
    """

    replies: list[tuple[object, Result]] = field(default_factory=list)
    writes: list[StoreWrite] = field(default_factory=list)
    events: list[MembershipEvent] = field(default_factory=list)
