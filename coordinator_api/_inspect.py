"""Looking at groups from outside: list them, describe one with its payloads in words, show its
committed offsets, delete groups, reset or delete offsets (``coordinator-api groups``).

Works against the embedded coordinator and a Kafka cluster alike (ListGroups, FindCoordinator,
DescribeGroups over kafka-python's connections). kafka-python's own admin client reads every
member's bytes as consumer-protocol payloads and fails on other protocols, so this reads them
raw and lets the ``coordinator_api_register_payload_decoders`` plugins put them in words. A
group of the incremental protocol is described by the embedded coordinator's GroupDescribe (any
protocol type), else by ConsumerGroupDescribe (Kafka 4's consumer groups) or StreamsGroupDescribe
(Kafka's streams groups of KIP-1071).

Offsets go through kafka-python's admin client: OffsetFetch, ListOffsets (routed to each
partition's leader), OffsetCommit with generation -1 and no member id (what Kafka's
``kafka-consumer-groups --reset-offsets`` sends), OffsetDelete and DeleteGroups. The embedded
coordinator keeps no log and answers ListOffsets with INVALID_REQUEST: there, log-end offsets and
lag are unknown (None), and resets to the earliest or latest offset raise :class:`NoLogError`.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import kafka.errors
from kafka import TopicPartition
from kafka.admin import KafkaAdminClient, OffsetSpec
from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin import DescribeConfigsRequest, DescribeGroupsRequest, ListGroupsRequest
from kafka.protocol.consumer import ConsumerProtocolAssignment
from kafka.structs import OffsetAndMetadata

from coordinator_api._errors import CoordinatorApiError, GroupError
from coordinator_api._membership import _driver
from coordinator_api._membership._group_heartbeat import KafkaStreamsGroup
from coordinator_api._plugins._registry import PayloadDecoderRegistry
from coordinator_api._protocol import ErrorCode, error_name
from coordinator_api.server._group_configs import GROUP_RESOURCE
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeRequest,
    GroupDescribeRequest,
    StreamsGroupDescribeRequest,
)


@dataclass(frozen=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes
    # The incremental protocol: the member's epoch, what it subscribes to (topics or declared
    # resource groups) and what it has now, by topic or resource group.
    member_epoch: int | None = None
    subscribed: tuple[str, ...] = ()
    assigned: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    classic: bool = False  # a member of a consumer group that speaks the classic protocol
    # A streams group of KIP-1071: the partitions its active tasks read (task s_p reads
    # partition p of each source topic of subtopology s), for the owners of committed offsets.
    reads: tuple[tuple[str, int], ...] | None = None


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str  # the classic protocol's name; the server-side assignor's, incrementally
    members: tuple[DescribedMember, ...]
    group_epoch: int | None = None  # the incremental protocol's


class _Connection:
    def __init__(self, bootstrap_servers: str, timeout_ms: int) -> None:
        self._net = NetworkSelector(client_id="coordinator-api-inspect")
        self._manager = KafkaConnectionManager(
            self._net, bootstrap_servers=bootstrap_servers, client_id="coordinator-api-inspect"
        )
        self._timeout_ms = timeout_ms
        self._net.start()

    def send(self, request: Any, node: Any = None) -> Any:
        async def call() -> Any:
            if not self._manager.bootstrapped:
                await self._manager.bootstrap_async(timeout_ms=self._timeout_ms)
            target = node if node is not None else self._manager.least_loaded_node()
            return await self._manager.send(request, node_id=target, request_timeout_ms=self._timeout_ms)

        return self._manager.run(call)

    def find_coordinator(self, group_id: str) -> _driver.FoundCoordinator:
        """The broker that coordinates ``group_id``, registered for :meth:`send`."""
        try:
            found: _driver.FoundCoordinator = self._manager.run(
                lambda: _driver.find_coordinator(self._manager, group_id, timeout_ms=self._timeout_ms)
            )
        except _driver.CoordinatorNotFoundError as exc:
            raise GroupError(str(exc), group_id=group_id, member_id="") from exc
        return found

    def close(self) -> None:
        try:
            self._manager.close()
        finally:
            self._net.stop(timeout_ms=2000)


def list_groups(bootstrap_servers: str, *, timeout_ms: int = 10_000) -> list[ListedGroup]:
    """Every group the coordinator (or the bootstrap broker) knows."""
    conn = _Connection(bootstrap_servers, timeout_ms)
    try:
        response = conn.send(ListGroupsRequest(states_filter=[], types_filter=[]))
    finally:
        conn.close()
    return sorted(
        (ListedGroup(g.group_id, g.protocol_type, g.group_state or "") for g in response.groups),
        key=lambda g: g.group_id,
    )


def find_coordinator(bootstrap_servers: str, group_id: str, *, timeout_ms: int = 10_000) -> int:
    """Node id of the broker (or embedded coordinator) that coordinates ``group_id``.

    :raises GroupError: FindCoordinator answered an error (for example COORDINATOR_NOT_AVAILABLE
        while a Kafka cluster is still electing one).
    """
    conn = _Connection(bootstrap_servers, timeout_ms)
    try:
        return conn.find_coordinator(group_id).broker_id
    finally:
        conn.close()


def group_configs(
    bootstrap_servers: str, group_id: str, *, timeout_ms: int = 10_000
) -> dict[str, str | None]:
    """The configs of ``group_id`` as its coordinator describes them (DescribeConfigs of the
    group resource, sent to that broker): the group's own and the defaults of the others. On a
    Kafka cluster a broker knows a config set for the group once its metadata has caught up with
    the controller, which may be a little after the change was acknowledged.

    :raises GroupError: the coordinator refused to describe them.
    """
    conn = _Connection(bootstrap_servers, timeout_ms)
    try:
        node = conn.find_coordinator(group_id).node
        request = DescribeConfigsRequest(
            resources=[(GROUP_RESOURCE, group_id, None)], include_synonyms=False, min_version=1
        )
        (result,) = conn.send(request, node).results
    finally:
        conn.close()
    if result.error_code != 0:
        raise GroupError(
            f"describing the configs of group {group_id!r}: {error_name(result.error_code)}"
            f" {result.error_message or ''}".rstrip(),
            group_id=group_id,
            member_id="",
        )
    return {config.name: config.value for config in result.configs}


def describe_group(bootstrap_servers: str, group_id: str, *, timeout_ms: int = 10_000) -> GroupDescription:
    """One group, its members and their raw metadata and assignments."""
    conn = _Connection(bootstrap_servers, timeout_ms)
    try:
        node = conn.find_coordinator(group_id).node
        response = conn.send(
            DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False), node
        )
        (group,) = response.groups
        # From DescribeGroups v6 (Kafka 4, the embedded coordinator) a group of the incremental
        # protocol is GROUP_ID_NOT_FOUND ("not a classic group"), as is one that does not exist;
        # before v6 both are Dead.
        not_classic = group.error_code == ErrorCode.GROUP_ID_NOT_FOUND
        if not_classic or (group.group_state == "Dead" and not group.members):
            incremental = _describe_incremental(conn, node, group_id)
            if incremental is not None:
                return incremental
            if not_classic:
                return GroupDescription(
                    group_id=group_id, state="Dead", protocol_type="", protocol="", members=()
                )
        if group.error_code:
            raise GroupError(
                f"DescribeGroups answered {error_name(group.error_code)}", group_id=group_id, member_id=""
            )
    finally:
        conn.close()
    return GroupDescription(
        group_id=group.group_id,
        state=group.group_state,
        protocol_type=group.protocol_type,
        protocol=group.protocol_data,
        members=tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=bytes(m.member_metadata),
                assignment=bytes(m.member_assignment),
            )
            for m in group.members
        ),
    )


def _describe_incremental(conn: _Connection, node: Any, group_id: str) -> GroupDescription | None:
    """The group as a group of the incremental protocol, or None if it is not one (or the
    coordinator describes none). A consumer group is asked for as Kafka's tools ask (which
    says who speaks the classic protocol), a group of another protocol type with this
    project's GroupDescribe, and a streams group of Kafka's as ``kafka-streams-groups`` asks."""
    streams = StreamsGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False)
    for request in (
        ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False),
        GroupDescribeRequest(group_ids=[group_id]),
        streams,
    ):
        try:
            (group,) = conn.send(request, node).groups
        except (IncompatibleBrokerVersion, UnsupportedVersionError):
            continue  # not served by this coordinator: Kafka has no GroupDescribe
        if group.error_code:
            continue  # not a consumer group (ConsumerGroupDescribe), or no such group
        if request is streams:
            return _streams_group(group)
        by_name = isinstance(request, GroupDescribeRequest)
        return GroupDescription(
            group_id=group.group_id,
            state=group.group_state,
            protocol_type=group.protocol_type if by_name else "consumer",
            protocol=group.assignor_name,
            group_epoch=group.group_epoch,
            members=tuple(
                DescribedMember(
                    member_id=m.member_id,
                    group_instance_id=m.instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    metadata=bytes(m.metadata) if by_name else b"",
                    assignment=b"",
                    member_epoch=m.member_epoch,
                    subscribed=tuple(m.subscribed if by_name else m.subscribed_topic_names),
                    assigned=tuple((r.name, tuple(r.indexes)) for r in m.assignment)
                    if by_name
                    else tuple((t.topic_name, tuple(t.partitions)) for t in m.assignment.topic_partitions),
                    classic=not by_name and m.member_type == 0,
                )
                for m in group.members
            ),
        )
    return None


def _streams_group(group: Any) -> GroupDescription:
    """A StreamsGroupDescribe's group: each member's subscription is the topology's source
    topics, its assignment its active tasks by subtopology, then its standby tasks as the
    member names them (``0/standby``: :attr:`KafkaStreamsGroup.STANDBY`)."""
    subtopologies = (group.topology.subtopologies if group.topology is not None else None) or ()
    topics = tuple(sorted({topic for s in subtopologies for topic in s.source_topics}))
    sources = {s.subtopology_id: s.source_topics for s in subtopologies}
    return GroupDescription(
        group_id=group.group_id,
        state=group.group_state,
        protocol_type="streams",
        protocol="",
        group_epoch=group.group_epoch,
        members=tuple(
            DescribedMember(
                member_id=m.member_id,
                group_instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                metadata=b"",
                assignment=b"",
                member_epoch=m.member_epoch,
                subscribed=topics,
                assigned=tuple((t.subtopology_id, tuple(t.partitions)) for t in m.assignment.active_tasks)
                + tuple(
                    (t.subtopology_id + KafkaStreamsGroup.STANDBY, tuple(t.partitions))
                    for t in m.assignment.standby_tasks
                ),
                classic=m.is_classic,
                reads=tuple(
                    (topic, p)
                    for t in m.assignment.active_tasks
                    for topic in sources.get(t.subtopology_id, ())
                    for p in t.partitions
                ),
            )
            for m in group.members
        ),
    )


def render_group(description: GroupDescription, decoders: PayloadDecoderRegistry) -> str:
    """The group as text, each payload in words when a plugin can read it."""
    d = description
    lines = [group_line(d)]
    for m in d.members:
        static = f" (instance {m.group_instance_id})" if m.group_instance_id else ""
        epoch = f", epoch {m.member_epoch}" if m.member_epoch is not None else ""
        classic = ", classic protocol" if m.classic else ""
        lines.append(f"  {m.member_id}{static} {m.client_id}@{m.client_host}{epoch}{classic}")
        if m.subscribed:
            lines.append(f"    subscribed: {', '.join(m.subscribed)}")
        if m.metadata:
            lines.append(f"    metadata:   {_words(decoders.describe_metadata, d, m.metadata)}")
        if m.assignment:
            lines.append(f"    assignment: {_words(decoders.describe_assignment, d, m.assignment)}")
        if m.assigned is not None:
            lines.append(f"    assigned:   {_resources(m.assigned)}")
    return "\n".join(lines)


def group_line(description: GroupDescription) -> str:
    """``group G: STATE, protocol type T, protocol P, N member(s)`` (the assignor and the group
    epoch for a group of the incremental protocol)."""
    d = description
    if d.group_epoch is None:
        head = f"protocol {d.protocol or '-'}"
    else:
        head = f"incremental protocol, assignor {d.protocol or '-'}, group epoch {d.group_epoch}"
    return (
        f"group {d.group_id}: {d.state}, protocol type {d.protocol_type or '-'}, {head}, "
        f"{len(d.members)} member(s)"
    )


MEMBER_COLUMNS = ("MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "EPOCH", "ASSIGNMENT")


def member_rows(description: GroupDescription, decoders: PayloadDecoderRegistry) -> list[tuple[str, ...]]:
    """One row per member, in :data:`MEMBER_COLUMNS`; ``-`` where there is nothing."""
    d = description
    rows: list[tuple[str, ...]] = []
    for m in d.members:
        if m.assigned is not None:
            assignment = _resources(m.assigned)
        elif m.assignment:
            assignment = _words(decoders.describe_assignment, d, m.assignment)
        else:
            assignment = "-"
        epoch = "-" if m.member_epoch is None else str(m.member_epoch)
        rows.append((m.member_id, m.group_instance_id or "-", m.client_id, m.client_host, epoch, assignment))
    return rows


def _resources(assigned: tuple[tuple[str, tuple[int, ...]], ...]) -> str:
    """``orders 0-2, 5; leadership 0`` (``-`` for nothing)."""
    return "; ".join(f"{name} {_ranges(indexes)}" for name, indexes in assigned if indexes) or "-"


def _ranges(indexes: tuple[int, ...]) -> str:
    runs: list[list[int]] = []
    for index in sorted(indexes):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def group_document(
    description: GroupDescription,
    decoders: PayloadDecoderRegistry,
    *,
    state: bool = True,
    members: bool = True,
    offsets: Sequence[PartitionOffset] | None = None,
) -> dict[str, Any]:
    """The group as ``coordinator-api groups describe GROUP --json`` prints it (a stable schema,
    docs/coordinator.md): ``group_id``; with ``state``, the group's fields; with ``members``, its
    members, payloads in words and as base64; with ``offsets``, its committed offsets."""
    d = description
    doc: dict[str, Any] = {"group_id": d.group_id}
    if state:
        doc.update(
            state=d.state,
            protocol_type=d.protocol_type,
            protocol=d.protocol,
            group_epoch=d.group_epoch,
            member_count=len(d.members),
        )
    if members:
        doc["members"] = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "metadata": _words(decoders.describe_metadata, d, m.metadata) if m.metadata else None,
                "assignment": _words(decoders.describe_assignment, d, m.assignment) if m.assignment else None,
                "metadata_base64": base64.b64encode(m.metadata).decode("ascii"),
                "assignment_base64": base64.b64encode(m.assignment).decode("ascii"),
                "member_epoch": m.member_epoch,
                "subscribed": list(m.subscribed),
                "assigned": None if m.assigned is None else {name: list(ix) for name, ix in m.assigned},
                "classic_protocol": m.classic,
            }
            for m in d.members
        ]
    if offsets is not None:
        doc["offsets"] = [
            {
                "topic": o.topic,
                "partition": o.partition,
                "committed_offset": o.committed_offset,
                "log_end_offset": o.log_end_offset,
                "lag": o.lag,
                "member_id": None if o.owner is None else o.owner.member_id,
                "client_id": None if o.owner is None else o.owner.client_id,
                "client_host": None if o.owner is None else o.owner.client_host,
            }
            for o in offsets
        ]
    return doc


def _words(describe: Any, group: GroupDescription, payload: bytes) -> str:
    try:
        return str(describe(group.protocol_type, group.protocol, payload))
    except Exception as exc:  # a decoder must not stop the listing of the others
        return f"{len(payload)} bytes (the {group.protocol_type} decoder failed: {exc!r})"


# Offsets, deletion and resets, through kafka-python's admin client.


class NoLogError(CoordinatorApiError):
    """The server keeps no log, so it has no earliest or latest offset to give (the embedded
    coordinator answers ListOffsets with INVALID_REQUEST)."""


class OffsetCommitRefused(CoordinatorApiError):
    """The coordinator refused the reset's OffsetCommit; :attr:`errors` are Kafka's names."""

    def __init__(self, message: str, errors: Sequence[str]) -> None:
        super().__init__(message)
        self.errors = tuple(errors)


@dataclass(frozen=True)
class PartitionOffset:
    """One partition of ``coordinator-api groups describe GROUP --offsets``."""

    topic: str
    partition: int
    committed_offset: int | None  # None: the group has committed none
    log_end_offset: int | None  # None: unknown (the embedded coordinator keeps no log)
    owner: DescribedMember | None  # the member the group's assignment gives the partition to

    @property
    def lag(self) -> int | None:
        """Log-end offset minus committed offset, where both are known (as Kafka's tool)."""
        if self.committed_offset is None or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.committed_offset


OFFSET_COLUMNS = (
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "MEMBER-ID",
    "HOST",
    "CLIENT-ID",
)


def offset_rows(offsets: Iterable[PartitionOffset]) -> list[tuple[str, ...]]:
    """One row per partition, in :data:`OFFSET_COLUMNS`; ``-`` for what is unknown."""
    return [
        (
            o.topic,
            str(o.partition),
            _text(o.committed_offset),
            _text(o.log_end_offset),
            _text(o.lag),
            "-" if o.owner is None else o.owner.member_id,
            "-" if o.owner is None else o.owner.client_host,
            "-" if o.owner is None else o.owner.client_id,
        )
        for o in offsets
    ]


@dataclass(frozen=True)
class OffsetReset:
    """One partition of ``coordinator-api groups reset-offsets``' plan."""

    topic: str
    partition: int
    current_offset: int | None  # None: the group has committed none
    new_offset: int


RESET_COLUMNS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET")


def reset_rows(plan: Iterable[OffsetReset]) -> list[tuple[str, ...]]:
    """One row per partition, in :data:`RESET_COLUMNS`."""
    return [(r.topic, str(r.partition), _text(r.current_offset), str(r.new_offset)) for r in plan]


def _text(value: int | None) -> str:
    return "-" if value is None else str(value)


@contextmanager
def _admin(bootstrap_servers: str, timeout_ms: int) -> Iterator[Any]:
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap_servers,
        client_id="coordinator-api-groups",
        request_timeout_ms=timeout_ms,
        bootstrap_timeout_ms=timeout_ms,
    )
    try:
        yield admin
    finally:
        admin.close()


def owned_partitions(description: GroupDescription) -> dict[tuple[str, int], DescribedMember]:
    """The member the group's assignment gives each partition to: the incremental protocol's
    ``assigned`` (a streams group's: the partitions its active tasks read), or a classic
    consumer group's assignments (Kafka's consumer protocol). Nothing for a classic group of
    another protocol type, whose assignments only its plugin reads."""
    owned: dict[tuple[str, int], DescribedMember] = {}
    for m in description.members:
        if m.reads is not None:
            owned.update(dict.fromkeys(m.reads, m))
        elif m.assigned is not None:
            for name, indexes in m.assigned:
                for index in indexes:
                    owned[(name, index)] = m
        elif m.assignment and description.protocol_type == "consumer":
            for key in _consumer_assignment(m.assignment):
                owned[key] = m
    return owned


def _consumer_assignment(payload: bytes) -> list[tuple[str, int]]:
    try:
        message = ConsumerProtocolAssignment.decode(payload)
        return [
            (topic.topic, partition)
            for topic in message.assigned_partitions
            if isinstance(topic.topic, str)
            for partition in topic.partitions
            if isinstance(partition, int)
        ]
    except Exception:  # not a consumer-protocol assignment: nothing to tell of its member
        return []


def group_offsets(
    bootstrap_servers: str, description: GroupDescription, *, timeout_ms: int = 10_000
) -> list[PartitionOffset]:
    """The group's committed offsets (OffsetFetch), each partition's log-end offset where the
    server has a log (ListOffsets), and the member that owns it; for a consumer group also the
    partitions assigned to its members without a committed offset."""
    owned = owned_partitions(description)
    with _admin(bootstrap_servers, timeout_ms) as admin:
        fetched = admin.list_group_offsets({description.group_id: None})[description.group_id]
        committed = {
            (tp.topic, tp.partition): int(meta.offset) for tp, meta in fetched.items() if meta.offset >= 0
        }
        keys = set(committed)
        if description.protocol_type == "consumer":  # its members are assigned topics' partitions
            keys |= set(owned)
        ends = _log_end_offsets(admin, sorted(keys))
    return [
        PartitionOffset(key[0], key[1], committed.get(key), ends.get(key), owned.get(key))
        for key in sorted(keys)
    ]


def _log_end_offsets(admin: Any, keys: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The log-end offsets the server knows: none without a log; topic by topic if a partition
    fails (a deleted topic, or a resource group of another protocol type that is not a topic)."""
    if not keys:
        return {}
    try:
        return _list_offsets(admin, keys, OffsetSpec.LATEST)
    except NoLogError:
        return {}
    except kafka.errors.BrokerResponseError:
        pass
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted({t for t, _ in keys}):
        try:
            ends.update(_list_offsets(admin, [k for k in keys if k[0] == topic], OffsetSpec.LATEST))
        except (NoLogError, kafka.errors.BrokerResponseError):
            continue
    return ends


def _list_offsets(admin: Any, keys: Iterable[tuple[str, int]], spec: Any) -> dict[tuple[str, int], int]:
    try:
        found = admin.list_partition_offsets({TopicPartition(t, p): spec for t, p in keys})
    except kafka.errors.InvalidRequestError as exc:
        raise NoLogError("the server keeps no log: ListOffsets answered INVALID_REQUEST") from exc
    return {(tp.topic, tp.partition): int(answer.offset) for tp, answer in found.items()}


def delete_groups(
    bootstrap_servers: str, group_ids: Sequence[str], *, timeout_ms: int = 10_000
) -> dict[str, str | None]:
    """DeleteGroups: each group's error as Kafka names it (``NON_EMPTY_GROUP``), None if deleted."""
    wanted = list(dict.fromkeys(group_ids))
    with _admin(bootstrap_servers, timeout_ms) as admin:
        answered = admin.delete_groups(wanted)
    return {group_id: _kafka_name(answered.get(group_id, "UNKNOWN_SERVER_ERROR")) for group_id in wanted}


def _kafka_name(result: str) -> str | None:
    """kafka-python's ``'OK'`` or error class name -> None or Kafka's error name."""
    if result == "OK":
        return None
    error = getattr(kafka.errors, result, None)
    message = getattr(error, "message", None)
    return message if isinstance(message, str) else result


@dataclass(frozen=True)
class OffsetDeletion:
    """One partition of ``coordinator-api groups delete-offsets``."""

    topic: str
    partition: int
    error: str | None  # Kafka's name of the refusal (GROUP_SUBSCRIBED_TO_TOPIC); None: deleted


DELETE_OFFSETS_COLUMNS = ("TOPIC", "PARTITION", "STATUS")


def deletion_rows(deletions: Iterable[OffsetDeletion]) -> list[tuple[str, ...]]:
    """One row per partition, in :data:`DELETE_OFFSETS_COLUMNS`: ``deleted``, or the refusal."""
    return [(d.topic, str(d.partition), d.error or "deleted") for d in deletions]


class OffsetDeleteRefused(CoordinatorApiError):
    """The coordinator refused a whole OffsetDelete; :attr:`error` is Kafka's name for why."""

    def __init__(self, message: str, error: str) -> None:
        super().__init__(message)
        self.error = error


#: What each refusal of an OffsetDelete means for whoever asked.
OFFSET_DELETE_HINTS = {
    "GROUP_ID_NOT_FOUND": "no such group",
    "NON_EMPTY_GROUP": "it has members, and not of the consumer protocol: stop them first",
    "GROUP_SUBSCRIBED_TO_TOPIC": "the group's members subscribe to the topic: stop them first",
}


def delete_offsets(
    bootstrap_servers: str,
    group_id: str,
    topics: Sequence[tuple[str, tuple[int, ...] | None]],
    *,
    timeout_ms: int = 10_000,
) -> list[OffsetDeletion]:
    """Delete ``group_id``'s committed offsets of the partitions named (OffsetDelete), as Kafka's
    ``kafka-consumer-groups --delete-offsets`` does: a partition of a topic the group's members
    subscribe to is refused (GROUP_SUBSCRIBED_TO_TOPIC), the others are deleted.

    :param topics: each topic with the partitions whose offsets to delete (None: all of them).
    :returns: each partition, sorted, with its refusal or None.
    :raises OffsetDeleteRefused: the coordinator refused the request as a whole (no such group; a
        group with members of another protocol than the consumer protocol; not authorized).
    :raises CoordinatorApiError: an unknown topic or partition (nothing is deleted then).
    """
    with _admin(bootstrap_servers, timeout_ms) as admin:
        keys = _partitions(admin, bootstrap_servers, topics)
        try:
            answered = admin.delete_group_offsets(group_id, [TopicPartition(t, p) for t, p in keys])
        except kafka.errors.BrokerResponseError as exc:
            if not exc.errno:
                raise
            name = type(exc).message
            hint = OFFSET_DELETE_HINTS.get(name)
            raise OffsetDeleteRefused(
                f"cannot delete the offsets of group {group_id!r}: {name}" + (f" ({hint})" if hint else ""),
                name,
            ) from exc
    return [
        OffsetDeletion(topic, partition, _kafka_error(answered.get(TopicPartition(topic, partition))))
        for topic, partition in keys
    ]


def _kafka_error(error: Any) -> str | None:
    """kafka-python's error class -> None for NoError, else Kafka's name for it."""
    if error is None:
        return "UNKNOWN_SERVER_ERROR"  # not answered for
    if error is kafka.errors.NoError:
        return None
    message = getattr(error, "message", None)
    return message if isinstance(message, str) else error.__name__


ResetTarget = Literal["earliest", "latest"] | int

# What an OffsetCommit of generation -1 and no member id gets while the group has members.
_ACTIVE_MEMBERS = frozenset(
    {"UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION", "REBALANCE_IN_PROGRESS", "STALE_MEMBER_EPOCH"}
)


def reset_offsets(
    bootstrap_servers: str,
    group_id: str,
    topics: Sequence[tuple[str, tuple[int, ...] | None]],
    target: ResetTarget,
    *,
    execute: bool,
    timeout_ms: int = 10_000,
) -> list[OffsetReset]:
    """Plan new committed offsets for ``group_id`` and, with ``execute``, commit them, as Kafka's
    ``kafka-consumer-groups --reset-offsets`` does.

    :param topics: each topic with the partitions to reset (None: all of its partitions).
    :param target: ``"earliest"`` or ``"latest"`` (the log's, by ListOffsets), or an offset,
        moved to the nearest end of the log where it lies outside it (where the server has a log).
    :param execute: commit the plan (OffsetCommit with generation -1 and no member id, which
        Kafka and the embedded coordinator accept only while the group has no active members).
    :raises NoLogError: ``earliest`` or ``latest`` from a server without a log.
    :raises OffsetCommitRefused: the coordinator refused the commit.
    :raises CoordinatorApiError: an unknown topic or partition.
    """
    with _admin(bootstrap_servers, timeout_ms) as admin:
        keys = _partitions(admin, bootstrap_servers, topics)
        fetched = admin.list_group_offsets({group_id: [TopicPartition(t, p) for t, p in keys]})[group_id]
        current = {(tp.topic, tp.partition): meta for tp, meta in fetched.items() if meta.offset >= 0}
        if isinstance(target, int):
            try:
                earliest = _list_offsets(admin, keys, OffsetSpec.EARLIEST)
                latest = _list_offsets(admin, keys, OffsetSpec.LATEST)
                new = {key: min(max(target, earliest[key]), latest[key]) for key in keys}
            except NoLogError:  # nothing to check the offset against
                new = {key: target for key in keys}
        else:
            new = _list_offsets(
                admin, keys, OffsetSpec.EARLIEST if target == "earliest" else OffsetSpec.LATEST
            )
        plan = [
            OffsetReset(
                topic,
                partition,
                int(current[(topic, partition)].offset) if (topic, partition) in current else None,
                new[(topic, partition)],
            )
            for topic, partition in keys
        ]
        if execute:
            offsets = {
                TopicPartition(r.topic, r.partition): OffsetAndMetadata(
                    r.new_offset, _metadata(current.get((r.topic, r.partition))), None
                )
                for r in plan
            }
            answered = admin.alter_group_offsets(group_id, offsets)
            failed = sorted(
                {
                    getattr(e, "message", e.__name__)
                    for e in answered.values()
                    if e is not kafka.errors.NoError
                }
            )
            if failed:
                hint = (
                    " (offsets are reset only while the group has no active members: stop them first)"
                    if _ACTIVE_MEMBERS.intersection(failed)
                    else ""
                )
                raise OffsetCommitRefused(
                    f"cannot reset the offsets of group {group_id!r}: OffsetCommit answered "
                    f"{', '.join(failed)}{hint}",
                    failed,
                )
    return plan


def _metadata(committed: Any) -> str:
    """The committed offset's metadata, kept across a reset."""
    metadata = getattr(committed, "metadata", None)
    return metadata if isinstance(metadata, str) else ""


def _partitions(
    admin: Any, bootstrap_servers: str, topics: Sequence[tuple[str, tuple[int, ...] | None]]
) -> list[tuple[str, int]]:
    """The partitions named, checked against the topics' metadata."""
    names = list(dict.fromkeys(name for name, _ in topics))
    described = {t["name"]: t for t in admin.describe_topics(names)}
    keys: set[tuple[str, int]] = set()
    for name, partitions in topics:
        topic = described.get(name)
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if topic is None else topic["error_code"]
        if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CoordinatorApiError(f"topic {name!r} does not exist on {bootstrap_servers}")
        if code:
            raise CoordinatorApiError(f"cannot describe topic {name!r}: {error_name(code)}")
        assert topic is not None
        indexes = sorted(p["partition_index"] for p in topic["partitions"])
        for partition in indexes if partitions is None else partitions:
            if partition not in indexes:
                raise CoordinatorApiError(
                    f"topic {name!r} has no partition {partition} (its partitions: {_ranges(tuple(indexes))})"
                )
            keys.add((name, partition))
    return sorted(keys)
