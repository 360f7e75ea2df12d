"""Which requests a principal may make, checked as Kafka's ``KafkaApis`` checks them (pure).

Design: the principal is a fact of the connection, not of a group, so the group state machine
never sees one. The asyncio shell asks :func:`authorize_request` about each request it is about
to hand to the state machine, with the connection's principal and address, and gets either

* :class:`Refused`: the whole request is refused; the shell answers it at once with the
  decision's result (Kafka's error, e.g. GROUP_AUTHORIZATION_FAILED) and the state machine
  never sees it, so a refused request changes nothing in any group; or
* :class:`Admitted`: the request to hand to the state machine, possibly narrowed to what the
  principal may touch (the groups it may describe, the partitions of topics it may read), and
  a function that puts the refused parts back into the state machine's result, each with
  Kafka's error, in Kafka's order.

Requests the shell answers itself (Metadata, FindCoordinator, the ACL APIs; the client quota
APIs, DESCRIBE_CONFIGS or ALTER_CONFIGS on the cluster; DescribeConfigs and
IncrementalAlterConfigs of a group, DESCRIBE_CONFIGS or ALTER_CONFIGS on it, and
ListConfigResources, DESCRIBE_CONFIGS on the cluster; DescribeUserScramCredentials, DESCRIBE
on the cluster) are checked there, with the same :class:`Requester`. Kafka's checks, per request:

=========================  ===================================================================
JoinGroup, SyncGroup,      GROUP READ, else GROUP_AUTHORIZATION_FAILED
Heartbeat, LeaveGroup
OffsetCommit               GROUP READ (else every partition GROUP_AUTHORIZATION_FAILED), then
                           TOPIC READ per topic (else its partitions TOPIC_AUTHORIZATION_FAILED,
                           answered with the unknown partitions, before the others)
OffsetFetch                GROUP DESCRIBE (else GROUP_AUTHORIZATION_FAILED); partitions asked
                           for of topics without TOPIC DESCRIBE: TOPIC_AUTHORIZATION_FAILED;
                           all partitions asked for: those topics left out
ListGroups                 every group with CLUSTER DESCRIBE, else those with GROUP DESCRIBE
DescribeGroups,            GROUP DESCRIBE per group (else GROUP_AUTHORIZATION_FAILED for it);
ConsumerGroupDescribe,     a consumer group with a topic without TOPIC DESCRIBE in a member's
GroupDescribe              assignment or target assignment is answered TOPIC_AUTHORIZATION_FAILED
                           (ConsumerGroupDescribe); refused groups first, then the others
DeleteGroups               GROUP DELETE per group; the refused groups after the others
OffsetDelete               GROUP DELETE (else GROUP_AUTHORIZATION_FAILED for the request), then
                           TOPIC READ per topic (else its partitions TOPIC_AUTHORIZATION_FAILED,
                           answered with the unknown partitions, before the others)
ConsumerGroupHeartbeat,    GROUP READ; a consumer group's subscribed topic names each need
GroupHeartbeat             TOPIC DESCRIBE, else the heartbeat is TOPIC_AUTHORIZATION_FAILED;
                           a regex gives the member only topics it may DESCRIBE (its
                           principal and host, against the ACLs in force at each assignment)
CreateTopics               CLUSTER CREATE, or TOPIC CREATE per topic
CreatePartitions           TOPIC ALTER per topic (else TOPIC_AUTHORIZATION_FAILED, no message)
DeleteTopics               CLUSTER DELETE, or TOPIC DELETE per topic (TOPIC DESCRIBE to hear
                           that it does not exist), asked by the state machine once it has
                           found the names of the ids (as Kafka's controller)
=========================  ===================================================================
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from coordinator_api._protocol import ErrorCode
from coordinator_api.server._acls import CLUSTER_NAME, AclOperation, Authorizer, ResourceType
from coordinator_api.server._messages import (
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    CreatedTopic,
    CreatePartitions,
    CreatePartitionsResult,
    CreateTopics,
    CreateTopicsResult,
    DeleteGroups,
    DeleteGroupsResult,
    DeleteTopics,
    DescribedConsumerGroup,
    DescribedGroup,
    DescribeGroups,
    DescribeGroupsResult,
    FetchedOffset,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    ListGroups,
    ListGroupsResult,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
    OffsetFetch,
    OffsetFetchResult,
    PartitionsCreated,
    Request,
    Result,
    SyncGroup,
    SyncGroupResult,
)

READ, DESCRIBE, DELETE, CREATE, ALTER = (
    AclOperation.READ,
    AclOperation.DESCRIBE,
    AclOperation.DELETE,
    AclOperation.CREATE,
    AclOperation.ALTER,
)
GROUP, TOPIC, CLUSTER = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
GROUP_REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
#: Kafka's message of TOPIC_AUTHORIZATION_FAILED in a CreateTopics answer.
CREATE_REFUSED_MESSAGE = "Authorization failed."


@dataclass(frozen=True)
class Requester:
    """Who sent a request: its principal (``User:alice``) and the address it came from."""

    authorizer: Authorizer
    principal: str
    host: str

    def may(self, operation: AclOperation, resource_type: ResourceType, name: str = CLUSTER_NAME) -> bool:
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)


@dataclass(frozen=True)
class Refused:
    """Answer ``result`` at once; the state machine does not see the request."""

    result: Result


@dataclass(frozen=True)
class Admitted:
    """Hand ``request`` to the state machine; ``merge`` (if any) completes its result."""

    request: Request
    merge: Callable[[Result], Result] | None = None


def authorize_request(who: Requester, request: Request) -> Refused | Admitted:
    """What ``who`` may do of ``request`` (the table in the module docstring)."""
    if isinstance(request, JoinGroup):
        return _group_read(who, request.group_id, JoinGroupResult(error=GROUP_REFUSED), request)
    if isinstance(request, SyncGroup):
        return _group_read(who, request.group_id, SyncGroupResult(error=GROUP_REFUSED), request)
    if isinstance(request, Heartbeat):
        return _group_read(who, request.group_id, HeartbeatResult(error=GROUP_REFUSED), request)
    if isinstance(request, LeaveGroup):
        return _group_read(who, request.group_id, LeaveGroupResult(error=GROUP_REFUSED), request)
    if isinstance(request, ConsumerGroupHeartbeat):
        return _consumer_group_heartbeat(who, request)
    if isinstance(request, OffsetCommit):
        return _offset_commit(who, request)
    if isinstance(request, OffsetFetch):
        return offset_fetch(who, request)
    if isinstance(request, ListGroups):
        return _list_groups(who, request)
    if isinstance(request, DescribeGroups):
        return _describe_groups(who, request)
    if isinstance(request, ConsumerGroupDescribe):
        return _consumer_group_describe(who, request)
    if isinstance(request, DeleteGroups):
        return _delete_groups(who, request)
    if isinstance(request, OffsetDelete):
        return _offset_delete(who, request)
    if isinstance(request, CreatePartitions):
        return _create_partitions(who, request)
    if isinstance(request, DeleteTopics):
        if who.may(DELETE, CLUSTER):
            return Admitted(request)
        return Admitted(
            dataclasses.replace(
                request,
                may_describe=functools.partial(who.may, DESCRIBE, TOPIC),
                may_delete=functools.partial(who.may, DELETE, TOPIC),
            )
        )
    return _create_topics(who, request)


def _group_read(who: Requester, group_id: str, refusal: Result, request: Request) -> Refused | Admitted:
    return Admitted(request) if who.may(READ, GROUP, group_id) else Refused(refusal)


def _consumer_group_heartbeat(who: Requester, request: ConsumerGroupHeartbeat) -> Refused | Admitted:
    if not who.may(READ, GROUP, request.group_id):
        return Refused(ConsumerGroupHeartbeatResult(error=GROUP_REFUSED))
    # KafkaApis: a member may not learn of (nor be assigned) topics it may not describe; any
    # such name among its subscribed ones refuses the whole heartbeat.
    if any(not who.may(DESCRIBE, TOPIC, name) for name in request.subscribed_topic_names or ()):
        return Refused(ConsumerGroupHeartbeatResult(error=TOPIC_REFUSED))
    # Topics its regex matches it gets only if it may describe them (Kafka's group coordinator
    # filters a regex's topics so); the engine keeps the check to apply at each assignment.
    return Admitted(
        dataclasses.replace(request, may_describe_topic=functools.partial(who.may, DESCRIBE, TOPIC))
    )


def _offset_commit(who: Requester, request: OffsetCommit) -> Refused | Admitted:
    if not who.may(READ, GROUP, request.group_id):
        return Refused(
            OffsetCommitResult(errors=tuple((o.topic, o.partition, GROUP_REFUSED) for o in request.offsets))
        )
    readable = {topic: who.may(READ, TOPIC, topic) for topic in {o.topic for o in request.offsets}}
    if all(readable.values()):
        return Admitted(request)
    refused = [o for o in request.offsets if not readable[o.topic]]
    admitted = tuple(o for o in request.offsets if readable[o.topic])
    if not admitted:
        # As KafkaApis: nothing left to commit, the coordinator is not asked.
        return Refused(
            OffsetCommitResult(errors=tuple((o.topic, o.partition, TOPIC_REFUSED) for o in refused))
        )

    def merge(result: Result) -> Result:
        assert isinstance(result, OffsetCommitResult)
        checked = ((o.topic, o.partition, TOPIC_REFUSED) for o in refused)
        return OffsetCommitResult(
            errors=_checks_first(checked, result.errors, (o.topic for o in request.offsets))
        )

    return Admitted(dataclasses.replace(request, offsets=admitted), merge)


def offset_fetch(who: Requester, request: OffsetFetch) -> Refused | Admitted:
    """OffsetFetch of one group (v8+ asks for several: the shell asks this for each)."""
    if not who.may(DESCRIBE, GROUP, request.group_id):
        # Each partition asked for carries the group's error too, for v0 and v1, which have no
        # group error field; from v2 the codec answers the group's error alone, as Kafka does.
        refused = tuple(
            FetchedOffset(topic=t, partition=p, offset=-1, leader_epoch=-1, metadata="", error=GROUP_REFUSED)
            for t, p in request.partitions or ()
        )
        return Refused(OffsetFetchResult(error=GROUP_REFUSED, offsets=refused))
    if request.partitions is None:

        def leave_out(result: Result) -> Result:
            assert isinstance(result, OffsetFetchResult)
            shown = tuple(o for o in result.offsets if who.may(DESCRIBE, TOPIC, o.topic))
            return dataclasses.replace(result, offsets=shown)

        return Admitted(request, leave_out)
    asked = request.partitions
    visible = {topic: who.may(DESCRIBE, TOPIC, topic) for topic in {t for t, _ in asked}}
    if all(visible.values()):
        return Admitted(request)

    def merge(result: Result) -> Result:
        assert isinstance(result, OffsetFetchResult)
        answered = iter(result.offsets)
        offsets = tuple(
            next(answered)
            if visible[t]
            else FetchedOffset(
                topic=t, partition=p, offset=-1, leader_epoch=-1, metadata="", error=TOPIC_REFUSED
            )
            for t, p in asked
        )
        return dataclasses.replace(result, offsets=offsets)

    return Admitted(
        dataclasses.replace(request, partitions=tuple((t, p) for t, p in asked if visible[t])), merge
    )


def _list_groups(who: Requester, request: ListGroups) -> Refused | Admitted:
    if who.may(DESCRIBE, CLUSTER):
        return Admitted(request)

    def visible(result: Result) -> Result:
        assert isinstance(result, ListGroupsResult)
        return ListGroupsResult(
            groups=tuple(g for g in result.groups if who.may(DESCRIBE, GROUP, g.group_id))
        )

    return Admitted(request, visible)


def _split(
    who: Requester, operation: AclOperation, group_ids: tuple[str, ...]
) -> tuple[list[str], tuple[str, ...]]:
    """(the groups refused, the groups admitted), each in the request's order."""
    allowed = {g: who.may(operation, GROUP, g) for g in group_ids}
    return [g for g in group_ids if not allowed[g]], tuple(g for g in group_ids if allowed[g])


# Kafka's answers to DescribeGroups and ConsumerGroupDescribe put the refused groups first, then
# the coordinator's; to DeleteGroups, the coordinator's first, then the refused groups.


def _describe_groups(who: Requester, request: DescribeGroups) -> Refused | Admitted:
    refused, admitted = _split(who, DESCRIBE, request.group_ids)
    if not refused:
        return Admitted(request)
    errors = tuple(
        DescribedGroup(
            group_id=g,
            error=GROUP_REFUSED,
            state=GroupState.DEAD,
            protocol_type="",
            protocol_name="",
            members=(),
        )
        for g in refused
    )

    def merge(result: Result) -> Result:
        assert isinstance(result, DescribeGroupsResult)
        return DescribeGroupsResult(groups=errors + result.groups)

    return Admitted(dataclasses.replace(request, group_ids=admitted), merge)


#: The operations an answer can say a principal may do to a resource of each type (Kafka's
#: ``AclEntry.supportedOperations``).
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    GROUP: (READ, DESCRIBE, DELETE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    TOPIC: (
        READ,
        AclOperation.WRITE,
        CREATE,
        DESCRIBE,
        DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    CLUSTER: (
        CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        DESCRIBE,
    ),
}


_Described = TypeVar("_Described", DescribedGroup, DescribedConsumerGroup)


def authorized_operations(
    who: Requester | None, resource_type: ResourceType, name: str = CLUSTER_NAME
) -> frozenset[int]:
    """The codes of the operations ``who`` may do to a resource, among those its type supports,
    as KafkaApis' ``authorizedOperations`` lists them; all of them on a server without ACLs
    (``who`` None)."""
    return frozenset(
        op.value
        for op in SUPPORTED_OPERATIONS[resource_type]
        if who is None or who.may(op, resource_type, name)
    )


def with_authorized_operations(who: Requester | None, result: Result) -> Result:
    """A DescribeGroups or ConsumerGroupDescribe answer that was asked to say what ``who`` may
    do to each group. Every group gets them; the wire writes them only for a group it answers
    without an error, as KafkaApis fills them in."""

    def given(group: _Described) -> _Described:
        operations = authorized_operations(who, GROUP, group.group_id)
        return dataclasses.replace(group, authorized_operations=operations)

    if isinstance(result, DescribeGroupsResult):
        return DescribeGroupsResult(groups=tuple(map(given, result.groups)))
    assert isinstance(result, ConsumerGroupDescribeResult)
    return ConsumerGroupDescribeResult(groups=tuple(map(given, result.groups)))


def _consumer_group_describe(who: Requester, request: ConsumerGroupDescribe) -> Refused | Admitted:
    refused, admitted = _split(who, DESCRIBE, request.group_ids)
    errors = tuple(DescribedConsumerGroup(group_id=g, error=GROUP_REFUSED) for g in refused)

    def merge(result: Result) -> Result:
        assert isinstance(result, ConsumerGroupDescribeResult)
        groups = result.groups
        if not request.any_protocol_type:
            # KafkaApis (KAFKA-18813): a consumer group with a topic the client may not describe
            # in a member's assignment or target assignment is answered TOPIC_AUTHORIZATION_FAILED
            # without its details (a topic only subscribed to is not checked, as on Kafka).
            groups = tuple(_hide_unseen_topics(who, g) for g in groups)
        return ConsumerGroupDescribeResult(groups=errors + groups)

    return Admitted(dataclasses.replace(request, group_ids=admitted), merge)


#: Kafka's message when a described consumer group uses topics the client may not describe.
UNSEEN_TOPICS_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."


def _hide_unseen_topics(who: Requester, group: DescribedConsumerGroup) -> DescribedConsumerGroup:
    topics = {
        name
        for m in group.members
        for name in (*(t for _, t, _ in m.assignment), *(t for _, t, _ in m.target_assignment))
    }
    if group.error is not ErrorCode.NONE or all(who.may(DESCRIBE, TOPIC, t) for t in topics):
        return group
    return DescribedConsumerGroup(group_id=group.group_id, error=TOPIC_REFUSED, message=UNSEEN_TOPICS_MESSAGE)


def _delete_groups(who: Requester, request: DeleteGroups) -> Refused | Admitted:
    refused, admitted = _split(who, DELETE, request.group_ids)
    if not refused:
        return Admitted(request)
    errors = tuple((g, GROUP_REFUSED) for g in refused)

    def merge(result: Result) -> Result:
        assert isinstance(result, DeleteGroupsResult)
        return DeleteGroupsResult(results=result.results + errors)

    return Admitted(DeleteGroups(group_ids=admitted), merge)


_PartitionError = tuple[str, int, ErrorCode]


def _checks_first(
    refused: Iterable[_PartitionError], answered: Iterable[_PartitionError], asked: Iterable[str]
) -> tuple[_PartitionError, ...]:
    """A request on partitions answered in KafkaApis' order: what fails its own checks before it
    asks the group coordinator (the ``refused`` topics, and the partitions that do not exist,
    which the coordinator ``answered`` UNKNOWN_TOPIC_OR_PARTITION) first, topic by topic in the
    order the request names them (``asked``), each topic's partitions as asked; then the
    coordinator's other answers."""
    order: dict[str, int] = {}
    for topic in asked:
        order.setdefault(topic, len(order))
    answered = tuple(answered)
    missing = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    early = sorted((*refused, *(e for e in answered if e[2] is missing)), key=lambda e: order[e[0]])
    return (*early, *(e for e in answered if e[2] is not missing))


def _offset_delete(who: Requester, request: OffsetDelete) -> Refused | Admitted:
    if not who.may(DELETE, GROUP, request.group_id):
        return Refused(OffsetDeleteResult(error=GROUP_REFUSED))
    readable = {topic: who.may(READ, TOPIC, topic) for topic, _ in request.partitions}
    if all(readable.values()):
        return Admitted(request)
    refused = tuple((t, p, TOPIC_REFUSED) for t, p in request.partitions if not readable[t])

    def merge(result: Result) -> Result:
        assert isinstance(result, OffsetDeleteResult)
        if result.error is not ErrorCode.NONE:
            return result  # a group-level error is the whole answer, as on Kafka
        partitions = _checks_first(refused, result.partitions, (t for t, _ in request.partitions))
        return OffsetDeleteResult(error=ErrorCode.NONE, partitions=partitions)

    admitted = tuple((t, p) for t, p in request.partitions if readable[t])
    return Admitted(dataclasses.replace(request, partitions=admitted), merge)


def _create_topics(who: Requester, request: Request) -> Refused | Admitted:
    assert isinstance(request, CreateTopics), request
    if who.may(CREATE, CLUSTER):
        return Admitted(request)
    return _topic_by_topic(
        who,
        CREATE,
        request,
        lambda name: CreatedTopic(name=name, error=TOPIC_REFUSED, message=CREATE_REFUSED_MESSAGE),
    )


def _create_partitions(who: Requester, request: CreatePartitions) -> Refused | Admitted:
    def refused(name: str) -> PartitionsCreated:
        return PartitionsCreated(name=name, error=TOPIC_REFUSED)  # no words, as Kafka's controller

    return _topic_by_topic(who, ALTER, request, refused)


def _topic_by_topic(
    who: Requester,
    operation: AclOperation,
    request: CreateTopics | CreatePartitions,
    refusal: Callable[[str], CreatedTopic | PartitionsCreated],
) -> Admitted:
    """The topics of ``request`` that ``who`` may ``operation`` go on to the state machine; each
    other one is answered ``refusal`` in its place in the request. A name given twice goes on
    whoever asks: it is answered INVALID_REQUEST (Kafka checks that first)."""
    names = [t.name for t in request.topics]
    named = Counter(names)
    allowed = [named[name] > 1 or who.may(operation, TOPIC, name) for name in names]
    if all(allowed):
        return Admitted(request)

    def merge(result: Result) -> Result:
        assert isinstance(result, CreateTopicsResult | CreatePartitionsResult)
        answered = iter(result.topics)
        verdicts = zip(names, allowed, strict=True)
        topics = tuple(next(answered) if ok else refusal(name) for name, ok in verdicts)
        return dataclasses.replace(result, topics=topics)  # type: ignore[arg-type]

    admitted = tuple(t for t, ok in zip(request.topics, allowed, strict=True) if ok)
    return Admitted(dataclasses.replace(request, topics=admitted), merge)  # type: ignore[arg-type]
