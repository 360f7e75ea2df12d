"""ACLs on the embedded coordinator, as Apache Kafka's StandardAuthorizer and KafkaApis have them.

The model and the authorizer are pure and tested in memory; the request checks then with a real
coordinator on 127.0.0.1 over SASL, real clients (kafka-python's admin client, librdkafka) and
raw requests through kafka-python's message classes: a principal without the ACL is refused with
Kafka's error and the healthy group beside it does not notice."""

from __future__ import annotations

import dataclasses
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import ClusterAuthorizationFailedError, SecurityDisabledError
from kafka.protocol.admin import (
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_tools import _call, _connect, run_tool
from test_sasl import PASSWORD, authenticate

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings
from coordinator_api._errors import ConfigurationError
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    Authorizer,
    InvalidAclError,
)
from coordinator_api.server._acls import ResourceType as Kind
from coordinator_api.server._authorization import Admitted, Refused, Requester, authorize_request
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    CreatedTopic,
    CreateTopics,
    CreateTopicsResult,
    DeleteGroups,
    DeleteGroupsResult,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribeGroups,
    Heartbeat,
    HeartbeatResult,
    NewTopic,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
)
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    GroupDescribeRequest,
    GroupDescribeResponse,
    GroupHeartbeatRequest,
    GroupHeartbeatResponse,
)

READ, DESCRIBE, ALL = AclOperation.READ, AclOperation.DESCRIBE, AclOperation.ALL
GROUP, TOPIC, CLUSTER = Kind.GROUP, Kind.TOPIC, Kind.CLUSTER


def acl(kind: Kind, name: str, principal: str, op: AclOperation, **more: Any) -> AclBinding:
    return AclBinding.of(resource_type=kind, name=name, principal=principal, operation=op, **more)


# --- the model, in memory ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"resource_type": "any"}, "resource type TRANSACTIONAL_ID|resource type ANY"),
        ({"resource_type": "transactional_id"}, "resource type TRANSACTIONAL_ID"),
        ({"pattern_type": "match"}, "pattern type MATCH is for filters"),
        ({"operation": "any"}, "operation ANY is for filters"),
        ({"operation": 99}, "operation 99 is not one of Kafka's"),
        ({"permission": "any"}, "permission ANY is for filters"),
        ({"name": ""}, "Invalid empty resource name"),
        ({"principal": "alice"}, "principal 'alice' is not TYPE:NAME"),
        ({"host": "example.com"}, "host 'example.com' is neither"),
        (
            {"resource_type": "cluster", "name": "c"},
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
    ],
)
def test_a_binding_kafka_would_refuse_is_refused_with_a_typed_error(
    fields: dict[str, Any], says: str
) -> None:
    given: dict[str, Any] = {
        "resource_type": "group",
        "name": "g",
        "principal": "User:alice",
        "operation": "read",
    }
    with pytest.raises(InvalidAclError) as refused:
        AclBinding.of(**{**given, **fields})
    assert isinstance(refused.value, ConfigurationError)
    assert any(part in str(refused.value) for part in says.split("|")), refused.value


def test_without_acls_only_super_users_are_allowed_unless_everyone_is() -> None:
    closed = Authorizer(super_users=["User:admin"])
    assert closed.authorize("User:admin", "10.0.0.1", READ, GROUP, "g")
    assert not closed.authorize("User:alice", "10.0.0.1", READ, GROUP, "g")
    open_ = Authorizer(allow_everyone_if_no_acl_found=True)
    assert open_.authorize("User:alice", "10.0.0.1", READ, GROUP, "g")
    # An ACL on the resource, for someone else, closes it to everyone else.
    open_.add([acl(GROUP, "g", "User:bob", READ)])
    assert not open_.authorize("User:alice", "10.0.0.1", READ, GROUP, "g")
    assert open_.authorize("User:alice", "10.0.0.1", READ, GROUP, "other")


def test_deny_wins_and_describe_is_implied_as_kafka_implies_it() -> None:
    acls = Authorizer(
        [
            acl(GROUP, "app-", "User:alice", READ, pattern_type="prefixed"),
            acl(GROUP, "app-secret", "User:alice", ALL, permission="deny"),
            acl(TOPIC, "*", "User:*", AclOperation.WRITE, host="10.0.0.2"),
            acl(TOPIC, "t", "User:alice", READ, permission="deny"),
            acl(TOPIC, "t", "User:alice", ALL),
            acl(TOPIC, "made", "User:alice", AclOperation.CREATE),
            acl(TOPIC, "conf", "User:alice", AclOperation.ALTER_CONFIGS),
        ]
    )
    may = lambda op, kind, name, who="User:alice", host="10.0.0.1": acls.authorize(who, host, op, kind, name)  # noqa: E731
    assert may(READ, GROUP, "app-1") and may(DESCRIBE, GROUP, "app-1")  # prefixed, DESCRIBE implied by READ
    assert not may(AclOperation.DELETE, GROUP, "app-1")
    assert not may(READ, GROUP, "ap")  # a prefix of the pattern is not under it
    assert not may(READ, GROUP, "app-secret") and not may(DESCRIBE, GROUP, "app-secret")  # DENY ALL wins
    # The wildcard name and principal, from that host only:
    assert may(AclOperation.WRITE, TOPIC, "anything", who="User:bob", host="10.0.0.2")
    assert may(DESCRIBE, TOPIC, "anything", who="User:bob", host="10.0.0.2")  # implied by WRITE
    assert not may(READ, TOPIC, "t") and may(DESCRIBE, TOPIC, "t")  # DENY READ leaves DESCRIBE
    assert may(AclOperation.CREATE, TOPIC, "made") and not may(
        DESCRIBE, TOPIC, "made"
    )  # CREATE implies nothing
    assert may(AclOperation.DESCRIBE_CONFIGS, TOPIC, "conf")


def test_host_and_principal_must_match() -> None:
    acls = Authorizer([acl(GROUP, "g", "User:alice", READ, host="10.0.0.1")])
    assert acls.authorize("User:alice", "10.0.0.1", READ, GROUP, "g")
    assert not acls.authorize("User:alice", "10.0.0.2", READ, GROUP, "g")
    assert not acls.authorize("User:bob", "10.0.0.1", READ, GROUP, "g")
    acls.remove(acls.bindings())
    assert not acls.authorize(
        "User:alice", "10.0.0.1", READ, GROUP, "g"
    )  # a decision is not kept past a change


def test_filters_match_as_kafkas_acl_binding_filter() -> None:
    literal = acl(TOPIC, "orders", "User:alice", READ)
    wildcard = acl(TOPIC, "*", "User:alice", READ)
    prefixed = acl(TOPIC, "ord", "User:bob", AclOperation.WRITE, pattern_type="prefixed", permission="deny")
    group = acl(GROUP, "orders", "User:alice", READ)
    every = [literal, wildcard, prefixed, group]

    def matched(**fields: Any) -> list[AclBinding]:
        chosen = AclBindingFilter.of(**fields)
        return [b for b in every if chosen.matches(b)]

    assert matched() == every
    assert matched(resource_type="topic", name="orders") == [literal]  # ANY pattern: the exact name
    assert matched(resource_type="topic", name="orders", pattern_type="match") == [
        literal,
        wildcard,
        prefixed,
    ]
    assert matched(name="ord", pattern_type="prefixed") == [prefixed]
    assert matched(principal="User:alice", operation="read") == [literal, wildcard, group]
    assert matched(permission="deny") == [prefixed]
    assert matched(host="10.0.0.1") == []
    with pytest.raises(InvalidAclError):
        AclBindingFilter.of(operation=0)


def test_refused_requests_never_reach_the_state_machine_and_narrowed_ones_are_completed() -> None:
    acls = Authorizer([acl(GROUP, "g", "User:alice", READ), acl(TOPIC, "t", "User:alice", READ)])
    alice = Requester(acls, "User:alice", "10.0.0.1")
    beat = Heartbeat(group_id="other", generation_id=1, member_id="m", group_instance_id=None)
    assert authorize_request(alice, beat) == Refused(
        HeartbeatResult(error=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    )
    commit = OffsetCommit(
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        offsets=(
            CommittedOffset(topic="u", partition=0, offset=1),
            CommittedOffset(topic="t", partition=0, offset=1),
        ),
    )
    decided = authorize_request(alice, commit)
    assert isinstance(decided, Admitted) and decided.merge is not None
    assert isinstance(decided.request, OffsetCommit)
    assert [o.topic for o in decided.request.offsets] == ["t"]  # only what alice may read goes on
    merged = decided.merge(OffsetCommitResult(errors=(("t", 0, ErrorCode.NONE),)))
    assert merged == OffsetCommitResult(
        errors=(("u", 0, ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("t", 0, ErrorCode.NONE))
    )
    deleting = authorize_request(alice, DeleteGroups(group_ids=("g", "h")))
    assert isinstance(deleting, Admitted) and deleting.merge is not None
    assert deleting.request == DeleteGroups(group_ids=())  # READ does not imply DELETE
    assert deleting.merge(DeleteGroupsResult(results=())) == DeleteGroupsResult(
        results=(("g", ErrorCode.GROUP_AUTHORIZATION_FAILED), ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED))
    )
    creating = authorize_request(
        alice, CreateTopics(topics=(NewTopic(name="x", num_partitions=1, replication_factor=1),))
    )
    assert isinstance(creating, Admitted) and creating.merge is not None
    assert creating.merge(CreateTopicsResult(topics=())) == CreateTopicsResult(
        topics=(
            CreatedTopic(
                name="x", error=ErrorCode.TOPIC_AUTHORIZATION_FAILED, message="Authorization failed."
            ),
        )
    )
    assert isinstance(authorize_request(alice, DescribeGroups(group_ids=("g",))), Admitted)


def test_refused_parts_are_answered_where_kafka_puts_them() -> None:
    """KafkaApis' orders, as Kafka 4 answers (tests/server/test_acls_on_kafka.py compares them
    with a broker): refused partitions of an OffsetCommit before the coordinator's answers,
    refused groups of a DeleteGroups after them; and ConsumerGroupDescribe hides a group for a
    topic in an assignment or target assignment, not for one only subscribed to."""
    acls = Authorizer(
        [
            acl(GROUP, "g", "User:alice", READ),
            acl(GROUP, "g", "User:alice", AclOperation.DELETE),
            acl(TOPIC, "t", "User:alice", READ),
        ]
    )
    alice = Requester(acls, "User:alice", "10.0.0.1")
    commit = OffsetCommit(
        group_id="g",
        generation_id=1,
        member_id="m",
        group_instance_id=None,
        offsets=tuple(
            CommittedOffset(topic=t, partition=p, offset=1)
            for t, p in (("t", 0), ("u", 0), ("t", 1), ("v", 0))
        ),
    )
    decided = authorize_request(alice, commit)
    assert isinstance(decided, Admitted) and decided.merge is not None
    answered = OffsetCommitResult(errors=(("t", 0, ErrorCode.NONE), ("t", 1, ErrorCode.NONE)))
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    merged = decided.merge(answered)
    assert isinstance(merged, OffsetCommitResult)
    assert merged.errors == (("u", 0, refused), ("v", 0, refused), *answered.errors)

    deleting = authorize_request(alice, DeleteGroups(group_ids=("h", "g", "i")))
    assert isinstance(deleting, Admitted) and deleting.merge is not None
    assert deleting.request == DeleteGroups(group_ids=("g",))
    assert deleting.merge(
        DeleteGroupsResult(results=(("g", ErrorCode.NON_EMPTY_GROUP),))
    ) == DeleteGroupsResult(
        results=(
            ("g", ErrorCode.NON_EMPTY_GROUP),
            ("h", ErrorCode.GROUP_AUTHORIZATION_FAILED),
            ("i", ErrorCode.GROUP_AUTHORIZATION_FAILED),
        )
    )

    def member(subscribed: tuple[str, ...], assigned: tuple[str, ...]) -> DescribedConsumerMember:
        return DescribedConsumerMember(
            member_id="m",
            instance_id=None,
            rack_id=None,
            member_epoch=1,
            client_id="c",
            client_host="/10.0.0.1",
            subscribed_topic_names=subscribed,
            subscribed_topic_regex=None,
            assignment=tuple((bytes(16), t, (0,)) for t in assigned),
            target_assignment=(),
        )

    only_subscribed = DescribedConsumerGroup(
        group_id="g", error=ErrorCode.NONE, members=(member(("u",), ()),)
    )
    assigned = dataclasses.replace(only_subscribed, members=(member(("t", "u"), ("t", "u")),))
    describing = authorize_request(alice, ConsumerGroupDescribe(group_ids=("g",)))
    assert isinstance(describing, Admitted) and describing.merge is not None
    describe_merge = describing.merge

    def described_as(group: DescribedConsumerGroup) -> DescribedConsumerGroup:
        described = describe_merge(ConsumerGroupDescribeResult(groups=(group,)))
        assert isinstance(described, ConsumerGroupDescribeResult)
        (answered_group,) = described.groups
        return answered_group

    assert described_as(only_subscribed) == only_subscribed  # u is subscribed to, not assigned: shown
    hidden = described_as(assigned)
    assert (hidden.error, hidden.members, hidden.message) == (
        refused,
        (),
        "The group has described topic(s) that the client is not authorized to describe.",
    )


def test_offset_delete_needs_delete_on_the_group_and_read_on_each_topic() -> None:
    """KafkaApis.handleDeleteOffsetsRequest: without DELETE on the group, the group's error alone;
    the partitions of topics the principal may not read are refused, and answered with those
    the broker does not know, in the request's order of topics, before the coordinator's."""
    acls = Authorizer(
        [
            acl(GROUP, "g", "User:alice", AclOperation.DELETE),
            acl(TOPIC, "t", "User:alice", READ),
            acl(TOPIC, "v", "User:alice", READ),
        ]
    )
    alice = Requester(acls, "User:alice", "10.0.0.1")
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert authorize_request(alice, OffsetDelete(group_id="h", partitions=(("t", 0),))) == Refused(
        OffsetDeleteResult(error=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    )
    asked = OffsetDelete(group_id="g", partitions=(("u", 0), ("v", 9), ("t", 0), ("t", 9), ("w", 1)))
    decided = authorize_request(alice, asked)
    assert isinstance(decided, Admitted) and decided.merge is not None
    assert decided.request == OffsetDelete(group_id="g", partitions=(("v", 9), ("t", 0), ("t", 9)))
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    answered = OffsetDeleteResult(
        error=ErrorCode.NONE,
        partitions=(("v", 9, unknown), ("t", 9, unknown), ("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)),
    )
    assert decided.merge(answered) == OffsetDeleteResult(
        error=ErrorCode.NONE,
        partitions=(
            ("u", 0, refused),
            ("v", 9, unknown),
            ("t", 9, unknown),
            ("w", 1, refused),
            ("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
        ),
    )
    # A group-level answer (no such group) is the whole answer, refused topics or not.
    missing = OffsetDeleteResult(error=ErrorCode.GROUP_ID_NOT_FOUND)
    assert decided.merge(missing) == missing


# --- on a real coordinator ---------------------------------------------------------------------

#: kafka-python's filter every ACL matches.
EVERY_ACL_FILTER = ACLFilter(
    None,
    None,
    ACLOperation.ANY,
    ACLPermissionType.ANY,
    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
)

CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0, heartbeat_hold_ms=0, authorizer=True, super_users=("User:admin",)
)


@pytest.fixture(scope="module")
def users_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("acls") / "users.json"
    users: dict[str, Any] = {}
    for user in ("admin", "alice", "bob"):
        add_user(users, user, PASSWORD, SCRAM_MECHANISMS)
    save_users(path, users)
    return path


def sasl(users_file: Path) -> SaslSettings:
    return SaslSettings(users_file=users_file, mechanisms=("PLAIN",))


@pytest.fixture
def coordinator(users_file: Path) -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(topics={"t": 2, "u": 1}, config=CONFIG, sasl=sasl(users_file)) as running:
        yield running


def admin_client(coordinator: EmbeddedCoordinator, user: str = "admin") -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=coordinator.bootstrap_servers,
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username=user,
        sasl_plain_password=PASSWORD,
    )


def kafka_acl(
    kind: ResourceType,
    name: str,
    principal: str,
    op: ACLOperation,
    pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL,
    permission: ACLPermissionType = ACLPermissionType.ALLOW,
) -> ACL:
    return ACL(principal, "*", op, permission, ResourcePattern(kind, name, pattern))


def grant(coordinator: EmbeddedCoordinator, *acls: ACL) -> None:
    admin = admin_client(coordinator)
    try:
        created = admin.create_acls(list(acls))
    finally:
        admin.close()
    assert created["failed"] == [] and len(created["succeeded"]) == len(acls), created


def login(coordinator: EmbeddedCoordinator, user: str) -> socket.socket:
    sock = _connect(coordinator.bootstrap_servers)
    assert authenticate(sock, "PLAIN", user, PASSWORD)[0] == ErrorCode.NONE
    return sock


def join(sock: socket.socket, group: str, member_id: str = "") -> Any:
    return _call(
        sock,
        JoinGroupRequest(
            version=3,
            group_id=group,
            session_timeout_ms=60_000,
            rebalance_timeout_ms=60_000,
            member_id=member_id,
            protocol_type="consumer",
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        JoinGroupResponse,
    )


def commit(sock: socket.socket, group: str, member_id: str, generation: int, topics: dict[str, int]) -> Any:
    partition_cls = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    return _call(
        sock,
        OffsetCommitRequest(
            version=7,
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name=name,
                    partitions=[
                        partition_cls(
                            partition_index=0,
                            committed_offset=offset,
                            committed_leader_epoch=-1,
                            committed_metadata="",
                        )
                    ],
                )
                for name, offset in topics.items()
            ],
        ),
        OffsetCommitResponse,
    )


def fetch(sock: socket.socket, group: str, topics: list[str] | None) -> Any:
    asked = (
        None
        if topics is None
        else [OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=[0]) for t in topics]
    )
    return _call(
        sock,
        OffsetFetchRequest(version=7, group_id=group, topics=asked, require_stable=False),
        OffsetFetchResponse,
    )


def describe(sock: socket.socket, *groups: str) -> Any:
    return _call(
        sock,
        DescribeGroupsRequest(version=5, groups=list(groups), include_authorized_operations=False),
        DescribeGroupsResponse,
    )


def test_a_principal_without_the_acl_is_refused_and_the_group_beside_it_is_untouched(
    coordinator: EmbeddedCoordinator,
) -> None:
    G, T, Op = ResourceType.GROUP, ResourceType.TOPIC, ACLOperation
    grant(coordinator, kafka_acl(G, "app", "User:alice", Op.READ), kafka_acl(T, "t", "User:alice", Op.READ))
    with (
        login(coordinator, "alice") as alice,
        login(coordinator, "bob") as bob,
        login(coordinator, "admin") as admin,
    ):
        joined = join(alice, "app")
        assert joined.error_code == ErrorCode.NONE
        member, generation = joined.member_id, joined.generation_id
        synced = _call(
            alice,
            SyncGroupRequest(
                version=2,
                group_id="app",
                generation_id=generation,
                member_id=member,
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=b"all")
                ],
            ),
            SyncGroupResponse,
        )
        assert synced.error_code == ErrorCode.NONE
        assert (
            commit(alice, "app", member, generation, {"t": 5}).topics[0].partitions[0].error_code
            == ErrorCode.NONE
        )
        before = describe(admin, "app").groups[0]

        refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
        assert join(bob, "app").error_code == refused
        assert join(bob, "app", member).error_code == refused  # not even as alice's member
        beat = HeartbeatRequest(version=3, group_id="app", generation_id=generation, member_id=member)
        assert _call(bob, beat, HeartbeatResponse).error_code == refused
        sync = SyncGroupRequest(
            version=2, group_id="app", generation_id=generation, member_id=member, assignments=[]
        )
        assert _call(bob, sync, SyncGroupResponse).error_code == refused
        leave = LeaveGroupRequest(
            version=3,
            group_id="app",
            members=[LeaveGroupRequest.MemberIdentity(member_id=member, group_instance_id=None)],
        )
        assert _call(bob, leave, LeaveGroupResponse).error_code == refused
        assert commit(bob, "app", member, generation, {"t": 99}).topics[0].partitions[0].error_code == refused
        assert fetch(bob, "app", ["t"]).error_code == refused
        deleted = _call(bob, DeleteGroupsRequest(version=2, groups_names=["app"]), DeleteGroupsResponse)
        assert deleted.results[0].error_code == refused
        (hidden,) = describe(bob, "app").groups
        assert (hidden.error_code, hidden.group_state, hidden.members) == (refused, "", [])
        listed = _call(bob, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
        assert listed.groups == []
        found = _call(
            bob,
            FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=["app"]),
            FindCoordinatorResponse,
        )
        assert found.coordinators[0].error_code == refused
        old = _call(bob, FindCoordinatorRequest(version=1, key="app", key_type=0), FindCoordinatorResponse)
        assert (old.error_code, old.node_id) == (refused, -1)
        assert (
            _call(
                alice, FindCoordinatorRequest(version=1, key="app", key_type=0), FindCoordinatorResponse
            ).error_code
            == 0
        )

        # Nothing changed: same generation, same member, alice's offset, alice's heartbeat fine.
        after = describe(admin, "app").groups[0]
        assert (after.group_state, after.members, generation) == (
            before.group_state,
            before.members,
            generation,
        )
        assert _call(alice, beat, HeartbeatResponse).error_code == ErrorCode.NONE
        assert fetch(admin, "app", ["t"]).topics[0].partitions[0].committed_offset == 5
        # Alice may read the group but not topic u: that partition alone is refused.
        mixed = commit(alice, "app", member, generation, {"u": 7, "t": 6})
        errors = {t.name: t.partitions[0].error_code for t in mixed.topics}
        assert errors == {"u": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "t": ErrorCode.NONE}
        # Alice sees her group listed, and offsets only of topics she may describe.
        listed = _call(alice, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
        assert [g.group_id for g in listed.groups] == ["app"]
        assert (
            commit(admin, "app", member, generation, {"u": 3}).topics[0].partitions[0].error_code
            == ErrorCode.NONE
        )
        assert {t.name for t in fetch(admin, "app", None).topics} == {"t", "u"}
        assert {t.name for t in fetch(alice, "app", None).topics} == {"t"}
        (u,) = fetch(alice, "app", ["u"]).topics
        assert u.partitions[0].error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        # OffsetFetch v8+ asks for several groups at once: each is checked on its own.
        group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
        batch = OffsetFetchRequest(
            version=8,
            groups=[group_cls(group_id="app", topics=None), group_cls(group_id="other", topics=None)],
            require_stable=False,
        )
        answered = {g.group_id: g for g in _call(alice, batch, OffsetFetchResponse).groups}
        assert answered["app"].error_code == ErrorCode.NONE
        assert [t.name for t in answered["app"].topics] == ["t"]
        assert answered["other"].error_code == refused


def consumer_heartbeat(
    sock: socket.socket, group: str, topics: list[str], member_id: str = "", epoch: int = 0
) -> Any:
    request = ConsumerGroupHeartbeatRequest(
        version=1,
        group_id=group,
        member_id=member_id or "m-" + group,
        member_epoch=epoch,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics,
        topic_partitions=[],
    )
    return _call(sock, request, ConsumerGroupHeartbeatResponse)


def test_the_incremental_protocols_apis_are_checked_as_kafka_checks_them(
    coordinator: EmbeddedCoordinator,
) -> None:
    G, T, Op = ResourceType.GROUP, ResourceType.TOPIC, ACLOperation
    grant(
        coordinator,
        kafka_acl(G, "cg", "User:alice", Op.READ),
        kafka_acl(G, "cg", "User:bob", Op.DESCRIBE),  # the group, not its topic t
        kafka_acl(G, "res", "User:alice", Op.READ),
        kafka_acl(G, "cg-regex", "User:alice", Op.READ),
        kafka_acl(T, "t", "User:alice", Op.READ),
    )
    refused = ErrorCode.GROUP_AUTHORIZATION_FAILED
    with login(coordinator, "alice") as alice, login(coordinator, "bob") as bob:
        joined = consumer_heartbeat(alice, "cg", ["t"])
        assert (joined.error_code, joined.member_epoch) == (ErrorCode.NONE, 2), joined
        # A subscribed topic alice may not describe refuses the whole heartbeat (KafkaApis).
        assert consumer_heartbeat(alice, "cg", ["t", "u"], joined.member_id, 2).error_code == (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        assert consumer_heartbeat(bob, "cg", ["t"]).error_code == refused
        assert (
            consumer_heartbeat(bob, "cg", ["t"], joined.member_id, -1).error_code == refused
        )  # no leaving her
        described = _call(
            bob,
            ConsumerGroupDescribeRequest(version=0, group_ids=["cg"], include_authorized_operations=False),
            ConsumerGroupDescribeResponse,
        )
        # bob may describe the group but not its topic: no details (KafkaApis, KAFKA-18813).
        (hidden,) = described.groups
        assert (hidden.group_id, hidden.error_code, hidden.members) == (
            "cg",
            ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            [],
        )
        assert (
            hidden.error_message
            == "The group has described topic(s) that the client is not authorized to describe."
        )
        seen = _call(
            alice,
            ConsumerGroupDescribeRequest(
                version=0, group_ids=["cg", "other"], include_authorized_operations=False
            ),
            ConsumerGroupDescribeResponse,
        )
        # Refused groups first, then the coordinator's answers (KafkaApis' order).
        assert [(g.group_id, g.error_code) for g in seen.groups] == [
            ("other", refused),
            ("cg", ErrorCode.NONE),
        ]
        (member,) = seen.groups[1].members
        assert (member.member_id, member.member_epoch) == (joined.member_id, 2)  # she is still in, unchanged
        # A regex gives her only the topics she may describe: t's 2 partitions, never u's 1
        # (Kafka's group coordinator filters regex topics by Topic DESCRIBE, KAFKA-18813).
        by_regex = ConsumerGroupHeartbeatRequest(
            version=1,
            group_id="cg-regex",
            member_id="m-regex",
            member_epoch=0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_regex=".*",
            topic_partitions=[],
        )
        matched = _call(alice, by_regex, ConsumerGroupHeartbeatResponse)
        assert matched.error_code == ErrorCode.NONE, matched
        assert sorted(len(tp.partitions) for tp in matched.assignment.topic_partitions) == [2]

        def group_heartbeat(sock: socket.socket) -> Any:
            request = GroupHeartbeatRequest(
                version=0,
                group_id="res",
                protocol_type="leader",
                member_id="m-res",
                member_epoch=0,
                rebalance_timeout_ms=5000,
                resources=[GroupHeartbeatRequest.ResourceGroup(name="leadership", count=1)],
                metadata=b"",
                owned_resources=[],
            )
            return _call(sock, request, GroupHeartbeatResponse)

        assert group_heartbeat(bob).error_code == refused
        assert group_heartbeat(alice).error_code == ErrorCode.NONE
        request = GroupDescribeRequest(version=0, group_ids=["res"])
        assert _call(bob, request, GroupDescribeResponse).groups[0].error_code == refused
        assert _call(alice, request, GroupDescribeResponse).groups[0].error_code == ErrorCode.NONE


def test_refusals_are_answered_in_kafkas_words_and_order(coordinator: EmbeddedCoordinator) -> None:
    """What tests/server/test_acls_on_kafka.py found Kafka 4 to answer, without a broker: the
    messages of FindCoordinator, OffsetFetch's group refusal by version, Metadata's order (the
    topics described first), and OffsetDelete's checks."""
    G, T, Op = ResourceType.GROUP, ResourceType.TOPIC, ACLOperation
    grant(
        coordinator,
        kafka_acl(G, "app", "User:alice", Op.DELETE),  # DELETE implies DESCRIBE
        kafka_acl(T, "t", "User:alice", Op.READ),
        kafka_acl(T, "ghost", "User:alice", Op.DESCRIBE),  # a topic nobody makes
    )
    group_refused, topic_refused = ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with (
        login(coordinator, "alice") as alice,
        login(coordinator, "bob") as bob,
        login(coordinator, "admin") as admin,
    ):

        def find(sock: socket.socket, version: int, *keys: str) -> Any:
            if version >= 4:
                request = FindCoordinatorRequest(version=version, key_type=0, coordinator_keys=list(keys))
                answer = _call(sock, request, FindCoordinatorResponse)
                return [(c.key, c.error_code, c.error_message) for c in answer.coordinators]
            (key,) = keys
            answer = _call(
                sock, FindCoordinatorRequest(version=version, key=key, key_type=0), FindCoordinatorResponse
            )
            return answer.error_code, answer.error_message

        assert find(alice, 0, "app")[0] == ErrorCode.NONE
        assert find(alice, 1, "app") == find(alice, 3, "app") == (ErrorCode.NONE, "NONE")
        assert find(bob, 3, "app") == (group_refused, "Group authorization failed.")
        assert find(bob, 4, "app") == [("app", group_refused, "")]
        assert find(alice, 4, "app", "other") == [("app", ErrorCode.NONE, ""), ("other", group_refused, "")]

        # bob may not describe app: v2 and later answer the group's error alone; v1 has no such
        # field, so each partition asked for carries it.
        def fetch_as_bob(version: int) -> Any:
            topics = [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=n, partition_indexes=[0]) for n in ("t", "u")
            ]
            if version < 8:
                request = OffsetFetchRequest(
                    version=version, group_id="app", topics=topics, require_stable=False
                )
                return _call(bob, request, OffsetFetchResponse)
            group = OffsetFetchRequest.OffsetFetchRequestGroup(
                group_id="app",
                topics=[
                    OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                        name=n, partition_indexes=[0]
                    )
                    for n in ("t", "u")
                ],
            )
            request = OffsetFetchRequest(version=version, groups=[group], require_stable=False)
            (answered,) = _call(bob, request, OffsetFetchResponse).groups
            return answered

        old = fetch_as_bob(1)
        assert [(t.name, p.error_code, p.committed_offset) for t in old.topics for p in t.partitions] == [
            ("t", group_refused, -1),
            ("u", group_refused, -1),
        ]
        for version in (2, 7, 8):
            answered = fetch_as_bob(version)
            assert (answered.error_code, answered.topics) == (group_refused, []), version

        named = MetadataRequest(
            version=8,
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("u", "ghost", "nowhere", "t")],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        listed = [(t.name, t.error_code) for t in _call(alice, named, MetadataResponse).topics]
        assert listed == [
            ("t", ErrorCode.NONE),  # described, and it exists
            ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),  # described, and it does not
            ("u", topic_refused),
            ("nowhere", topic_refused),
        ]

        assert (
            commit(admin, "app", "", -1, {"t": 5, "u": 6}).topics[0].partitions[0].error_code
            == ErrorCode.NONE
        )

        def delete_offsets(sock: socket.socket, partitions: dict[str, list[int]]) -> Any:
            topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
            request = OffsetDeleteRequest(
                version=0,
                group_id="app",
                topics=[
                    topic_cls(
                        name=n,
                        partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p in ps],
                    )
                    for n, ps in partitions.items()
                ],
            )
            answer = _call(sock, request, OffsetDeleteResponse)
            return answer.error_code, [
                (t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions
            ]

        assert delete_offsets(bob, {"t": [0]}) == (group_refused, [])
        assert delete_offsets(alice, {"u": [0], "t": [9, 0]}) == (
            ErrorCode.NONE,
            [
                ("u", 0, topic_refused),
                ("t", 9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                ("t", 0, ErrorCode.NONE),
            ],
        )
        remaining = fetch(admin, "app", None)
        assert [(t.name, p.partition_index) for t in remaining.topics for p in t.partitions] == [("u", 0)]


def test_metadata_and_create_topics_follow_topic_acls(coordinator: EmbeddedCoordinator) -> None:
    T, Op, prefixed = ResourceType.TOPIC, ACLOperation, ACLResourcePatternType.PREFIXED
    grant(
        coordinator,
        kafka_acl(T, "t", "User:alice", Op.DESCRIBE),
        kafka_acl(T, "alice-", "User:alice", Op.CREATE, prefixed),
    )
    with login(coordinator, "alice") as alice:
        every = _call(
            alice,
            MetadataRequest(
                version=8,
                topics=None,
                allow_auto_topic_creation=False,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            ),
            MetadataResponse,
        )
        assert [t.name for t in every.topics] == ["t"]  # u is left out
        asked = MetadataRequest(
            version=8,
            topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("t", "u", "nowhere")],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        errors = {t.name: t.error_code for t in _call(alice, asked, MetadataResponse).topics}
        assert errors == {
            "t": ErrorCode.NONE,
            "u": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            "nowhere": ErrorCode.TOPIC_AUTHORIZATION_FAILED,  # not even whether it exists
        }
    admin = admin_client(coordinator, "alice")
    try:
        wanted = {"alice-1": {"num_partitions": 1}, "bob-1": {"num_partitions": 1}}
        created = {
            t["name"]: (t["error_code"], t["error_message"])
            for t in admin.create_topics(wanted, raise_errors=False)["topics"]
        }
    finally:
        admin.close()
    assert created == {
        "alice-1": (ErrorCode.NONE, None),
        "bob-1": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."),
    }


def test_create_partitions_needs_alter_on_each_topic(coordinator: EmbeddedCoordinator) -> None:
    """As Kafka's controller checks it: TOPIC ALTER per topic (CREATE is not enough), a refused
    topic answered TOPIC_AUTHORIZATION_FAILED without a message, the others done."""
    T, Op = ResourceType.TOPIC, ACLOperation
    grant(
        coordinator,
        kafka_acl(T, "t", "User:alice", Op.ALTER),
        kafka_acl(T, "u", "User:alice", Op.CREATE),
    )
    grow = CreatePartitionsRequest.CreatePartitionsTopic
    request = CreatePartitionsRequest(
        version=3,
        topics=[grow(name="t", count=4, assignments=None), grow(name="u", count=3, assignments=None)],
        timeout_ms=30_000,
        validate_only=False,
    )
    with login(coordinator, "alice") as alice:
        answer = _call(alice, request, CreatePartitionsResponse)
    assert [(r.name, r.error_code, r.error_message) for r in answer.results] == [
        ("t", ErrorCode.NONE, None),
        ("u", ErrorCode.TOPIC_AUTHORIZATION_FAILED, None),
    ]
    admin = admin_client(coordinator)
    try:
        counts = {t["name"]: len(t["partitions"]) for t in admin.describe_topics(["t", "u"])}
    finally:
        admin.close()
    assert counts == {"t": 4, "u": 1}


def test_metadata_auto_creates_only_what_the_principal_may_create(users_file: Path) -> None:
    config = dataclasses.replace(CONFIG, auto_create_topics=True)
    T, Op, prefixed = ResourceType.TOPIC, ACLOperation, ACLResourcePatternType.PREFIXED
    with EmbeddedCoordinator(config=config, sasl=sasl(users_file)) as running:
        grant(
            running,
            kafka_acl(T, "alice-", "User:alice", Op.CREATE, prefixed),
            kafka_acl(T, "*", "User:alice", Op.DESCRIBE),  # every topic
        )
        with login(running, "alice") as alice:
            asked = MetadataRequest(
                version=8,
                topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in ("alice-new", "bob-new")],
                allow_auto_topic_creation=True,
                include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False,
            )
            answered = {
                t.name: (t.error_code, len(t.partitions))
                for t in _call(alice, asked, MetadataResponse).topics
            }
        admin = admin_client(running)
        try:
            assert sorted(admin.list_topics()) == ["alice-new"]
        finally:
            admin.close()
    assert answered == {
        "alice-new": (ErrorCode.NONE, 1),
        "bob-new": (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0),
    }


def test_kafka_pythons_admin_client_creates_describes_and_deletes_acls(
    coordinator: EmbeddedCoordinator,
) -> None:
    G, T, Op = ResourceType.GROUP, ResourceType.TOPIC, ACLOperation
    read_app = kafka_acl(G, "app-", "User:alice", Op.READ, ACLResourcePatternType.PREFIXED)
    deny_t = kafka_acl(T, "t", "User:bob", Op.ALL, permission=ACLPermissionType.DENY)
    admin = admin_client(coordinator)
    try:
        assert admin.create_acls([read_app, deny_t])["succeeded"] == [read_app, deny_t]
        assert admin.create_acls([read_app])["failed"] == []  # again: nothing to add, not an error
        bad = ACL("alice", "*", Op.READ, ACLPermissionType.ALLOW, ResourcePattern(G, "g"))  # not TYPE:NAME
        assert [e.errno for e in admin.create_acls([bad])["failed"]] == [ErrorCode.INVALID_REQUEST]
        found, _ = admin.describe_acls(EVERY_ACL_FILTER)
        assert sorted(found, key=repr) == sorted([read_app, deny_t], key=repr)
        matching = ACLFilter(
            None,
            None,
            Op.ANY,
            ACLPermissionType.ANY,
            ResourcePatternFilter(G, "app-42", ACLResourcePatternType.MATCH),
        )
        assert admin.describe_acls(matching)[0] == [read_app]
        ((_, deleted, error),) = admin.delete_acls(
            [
                ACLFilter(
                    "User:bob",
                    None,
                    Op.ANY,
                    ACLPermissionType.ANY,
                    ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                )
            ]
        )
        assert (deleted, error.errno) == ([deny_t], 0)
        assert admin.describe_acls(EVERY_ACL_FILTER)[0] == [read_app]
    finally:
        admin.close()
    # Only a principal with CLUSTER DESCRIBE / ALTER may see or change them.
    alice = admin_client(coordinator, "alice")
    try:
        with pytest.raises(ClusterAuthorizationFailedError):
            alice.describe_acls(EVERY_ACL_FILTER)
        assert [e.errno for e in alice.create_acls([deny_t])["failed"]] == [
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        ]
    finally:
        alice.close()


def test_kafkas_own_kafka_acls_adds_and_lists_acls(coordinator: EmbeddedCoordinator, tmp_path: Path) -> None:
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{PASSWORD}";\n'
    )
    acls = "org.apache.kafka.tools.AclCommand"
    server = ["--bootstrap-server", coordinator.bootstrap_servers, "--command-config", str(properties)]
    added = run_tool(
        acls,
        *server,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--group",
        "app-",
        "--resource-pattern-type",
        "prefixed",
        "--topic",
        "t",
    )
    assert added.returncode == 0, added.stdout + added.stderr
    admin = admin_client(coordinator)
    try:
        found = sorted(
            (
                a.resource_pattern.resource_type.name,
                a.resource_pattern.resource_name,
                a.resource_pattern.pattern_type.name,
                a.principal,
                a.operation.name,
            )
            for a in admin.describe_acls(EVERY_ACL_FILTER)[0]
        )
    finally:
        admin.close()
    assert found == [
        ("GROUP", "app-", "PREFIXED", "User:alice", "READ"),
        ("TOPIC", "t", "PREFIXED", "User:alice", "READ"),
    ]
    listed = run_tool(acls, *server, "--list", "--topic", "t", "--resource-pattern-type", "prefixed")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed.stdout, (
        listed.stdout
    )


def test_without_the_authorizer_the_acl_apis_are_offered_and_answer_security_disabled() -> None:
    with EmbeddedCoordinator(config=CoordinatorConfig(initial_rebalance_delay_ms=0)) as plain:
        admin = KafkaAdminClient(bootstrap_servers=plain.bootstrap_servers)
        try:
            with pytest.raises(SecurityDisabledError):  # listed, as a Kafka broker lists them
                admin.describe_acls(EVERY_ACL_FILTER)
            assert admin.list_groups() == []  # and everything else works as ever
        finally:
            admin.close()
        with _connect(plain.bootstrap_servers) as sock:
            offered = {
                k.api_key for k in _call(sock, ApiVersionsRequest(version=3), ApiVersionsResponse).api_keys
            }
            asked = DescribeAclsRequest(
                version=3,
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            )
            described = _call(sock, asked, DescribeAclsResponse)
            creation = CreateAclsRequest.AclCreation(
                resource_type=3,
                resource_name="g",
                resource_pattern_type=3,
                principal="User:a",
                host="*",
                operation=3,
                permission_type=3,
            )
            created = _call(sock, CreateAclsRequest(version=3, creations=[creation]), CreateAclsResponse)
    assert offered >= {29, 30, 31}
    # They are answered as a Kafka broker without an authorizer answers them.
    assert (described.error_code, described.error_message) == (
        ErrorCode.SECURITY_DISABLED,
        "No Authorizer is configured.",
    )
    assert [r.error_code for r in created.results] == [ErrorCode.SECURITY_DISABLED]


def test_with_the_authorizer_the_acl_apis_are_offered(coordinator: EmbeddedCoordinator) -> None:
    with _connect(coordinator.bootstrap_servers) as sock:  # ApiVersions comes before SASL
        offered = {
            k.api_key: (k.min_version, k.max_version)
            for k in _call(sock, ApiVersionsRequest(version=3), ApiVersionsResponse).api_keys
        }
    assert {key: offered[key] for key in (29, 30, 31)} == {29: (1, 3), 30: (1, 3), 31: (1, 3)}


def test_acls_survive_a_restart(users_file: Path, tmp_path: Path) -> None:
    wanted = kafka_acl(ResourceType.GROUP, "app", "User:alice", ACLOperation.READ)
    with EmbeddedCoordinator(config=CONFIG, sasl=sasl(users_file), data_dir=tmp_path) as first:
        grant(first, wanted)
    with EmbeddedCoordinator(config=CONFIG, sasl=sasl(users_file), data_dir=tmp_path) as second:
        admin = admin_client(second)
        try:
            assert admin.describe_acls(EVERY_ACL_FILTER)[0] == [wanted]
        finally:
            admin.close()
        with login(second, "alice") as alice:
            assert join(alice, "app").error_code == ErrorCode.NONE  # and in force


def test_librdkafka_without_group_read_gets_group_authorization_failed(
    coordinator: EmbeddedCoordinator,
) -> None:
    G, T, Op = ResourceType.GROUP, ResourceType.TOPIC, ACLOperation
    # bob may find the group's coordinator (DESCRIBE) and read the topic, but not join (READ).
    grant(coordinator, kafka_acl(G, "app", "User:bob", Op.DESCRIBE), kafka_acl(T, "t", "User:bob", Op.READ))
    consumer = Consumer(
        {
            "bootstrap.servers": coordinator.bootstrap_servers,
            "group.id": "app",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "bob",
            "sasl.password": PASSWORD,
            "session.timeout.ms": 6000,
        }
    )
    try:
        consumer.subscribe(["t"])
        deadline = time.monotonic() + 20
        error = None
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED, error
    finally:
        consumer.close()
    with login(coordinator, "admin") as admin:
        (group,) = describe(admin, "app").groups
        assert group.group_state == "Dead" and group.members == []  # bob never joined
