"""ACLs on the embedded coordinator against Apache Kafka's broker with its ``StandardAuthorizer``,
both set up alike: SASL users admin (a super user), alice and bob, the same topics, the same
ACLs. ``coordinator-api acls`` prints the same for both; the same requests from alice and bob,
sent raw through kafka-python's message classes, get the same authorization answers from both,
request by request and group by group, topic by topic, partition by partition.

Only what authorization decides is compared: error codes (and messages where Kafka sets them),
which groups, topics and partitions an answer names, in which order. The rest differs for
reasons that have nothing to do with ACLs (the coordinator is not a log; its topic ids, member
ids and group placement are its own), and where Kafka's order of several groups follows its
``__consumer_offsets`` partitions, the coordinator's answers are compared sorted. Where the two
still answer differently, :meth:`Differences.known` pins both answers and says why, so a change
on either side, a fix included, shows here.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    ResourcePattern,
    ResourceType,
)
from kafka.protocol.admin import (
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    ConsumerProtocolSubscription,
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
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka_tools import _call, _connect
from test_cli import CLI
from test_group_configs import SESSION, list_groups_with_configs
from test_group_configs import alter as alter_group_configs
from test_group_configs import describe as describe_group_configs
from test_sasl import authenticate

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, SaslSettings
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._sasl import SCRAM_MECHANISMS, add_user, save_users
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from coordinator_api.testing import KafkaCluster

PASSWORD = "acl-pass"  # KafkaCluster's sasl_users take letters, digits, '_', '.' and '-'
USERS = ("admin", "alice", "bob")
SUPER_USERS = ("User:admin",)
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")  # as KafkaCluster enables them
#: Kafka's broker applies a new topic or an ACL change once it has read the metadata log.
PROPAGATION_S = 30.0

G, T, C = ResourceType.GROUP, ResourceType.TOPIC, ResourceType.CLUSTER
Op, Allow, Deny = ACLOperation, ACLPermissionType.ALLOW, ACLPermissionType.DENY
LITERAL, PREFIXED = ACLResourcePatternType.LITERAL, ACLResourcePatternType.PREFIXED
GROUP_REFUSED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_REFUSED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
CLUSTER_REFUSED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def binding(
    kind: ResourceType,
    name: str,
    principal: str,
    op: ACLOperation,
    *,
    pattern: ACLResourcePatternType = LITERAL,
    permission: ACLPermissionType = Allow,
    host: str = "*",
) -> ACL:
    return ACL(principal, host, op, permission, ResourcePattern(kind, name, pattern))


#: The ACLs both servers hold for every test. Both are reached on 127.0.0.1, so alice's READs
#: from 127.0.0.1 apply and the DENY from 10.0.0.9 does not.
ACLS = (
    binding(G, "app", "User:alice", Op.READ, host="127.0.0.1"),
    binding(G, "app", "User:alice", Op.DELETE),
    binding(G, "cg", "User:alice", Op.READ),
    binding(T, "t", "User:alice", Op.READ, host="127.0.0.1"),
    binding(T, "t", "User:alice", Op.ALL, permission=Deny, host="10.0.0.9"),
    binding(T, "alice-", "User:alice", Op.CREATE, pattern=PREFIXED),
    binding(T, "ghost", "User:alice", Op.DESCRIBE),  # a topic nobody makes
    # bob may find and describe group app, see topic u and the cluster (every group, the ACLs)...
    binding(G, "app", "User:bob", Op.DESCRIBE),
    binding(T, "u", "User:bob", Op.DESCRIBE),
    binding(T, "u", "User:bob", Op.ALTER),  # he may give it more partitions
    binding(C, "kafka-cluster", "User:bob", Op.DESCRIBE),
    # ...and, as everyone, READ (so DESCRIBE) the shared- groups; but the DENY of READ is his.
    binding(G, "shared-", "User:*", Op.READ, pattern=PREFIXED),
    binding(G, "shared-", "User:bob", Op.READ, pattern=PREFIXED, permission=Deny),
)


def as_tuple(acl: ACL) -> tuple[Any, ...]:
    """An ACL as DescribeAcls answers it, in codes."""
    pattern = acl.resource_pattern
    return (
        pattern.resource_type.value,
        pattern.resource_name,
        pattern.pattern_type.value,
        acl.principal,
        acl.host,
        acl.operation.value,
        acl.permission_type.value,
    )


def describe_acls_request() -> Any:
    """DescribeAcls of every ACL."""
    return DescribeAclsRequest(
        version=3,
        resource_type_filter=ResourceType.ANY.value,
        resource_name_filter=None,
        pattern_type_filter=ACLResourcePatternType.ANY.value,
        principal_filter=None,
        host_filter=None,
        operation=Op.ANY.value,
        permission_type=ACLPermissionType.ANY.value,
    )


def described(response: Any) -> list[tuple[Any, ...]]:
    """The ACLs of a DescribeAcls answer, sorted."""
    return sorted(
        (
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in response.resources
        for a in r.acls
    )


@dataclass
class Server:
    """One of the two servers: its SASL listener, a raw connection per user (authenticated with
    PLAIN, kept for the module) and each user's client properties for ``--command-config``."""

    name: str
    bootstrap: str
    folder: Path
    sockets: dict[str, socket.socket] = field(default_factory=dict)

    def call(self, user: str, request: Any, response_cls: Any) -> Any:
        return _call(self.sockets[user], request, response_cls)

    def properties(self, user: str) -> Path:
        return self.folder / f"{user}.properties"

    def acls(self) -> list[tuple[Any, ...]]:
        """Every ACL, as admin sees it, sorted."""
        return described(self.call("admin", describe_acls_request(), DescribeAclsResponse))

    def wait_for_acls(self, expected: Sequence[tuple[Any, ...]]) -> None:
        """Until DescribeAcls lists ``expected`` (at once on the coordinator; on Kafka once its
        broker has applied the metadata log's records: the ACLs it lists are those it enforces)."""
        self._wait(lambda: self.acls() == sorted(expected), f"the ACLs to be {sorted(expected)}")

    def wait_for_leaders(self, topics: dict[str, int]) -> None:
        """Until Metadata names a leader of each partition of ``topics``."""

        def led() -> bool:
            answer = self.call("admin", metadata_request(list(topics)), MetadataResponse)
            leaders = {t.name: [p.leader_id for p in t.partitions] for t in answer.topics}
            return all(len(leaders[n]) == count and min(leaders[n]) >= 0 for n, count in topics.items())

        self._wait(led, f"leaders of {topics}")

    def _wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + PROPAGATION_S
        while not done():
            assert time.monotonic() < deadline, f"{self.name}: no {what} within {PROPAGATION_S} s"
            time.sleep(0.05)


def create_topics_request(*names: str, partitions: int = 1) -> Any:
    return CreateTopicsRequest(
        version=5,
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=name, num_partitions=partitions, replication_factor=1, assignments=[], configs=[]
            )
            for name in names
        ],
        timeout_ms=30_000,
        validate_only=False,
    )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Kafka and the embedded coordinator, both with SASL users admin, alice and bob, the
    authorizer with super user admin, topics t (2 partitions) and u made by admin, and
    :data:`ACLS` added by admin (kafka-python's admin client) and in force."""
    folder = tmp_path_factory.mktemp("acls-on-kafka")
    users: dict[str, Any] = {}
    for user in USERS:
        add_user(users, user, PASSWORD, SCRAM_MECHANISMS)
        (folder / f"{user}.properties").write_text(
            f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username={user}\n"
            f"sasl.password={PASSWORD}\n"
        )
    save_users(folder / "users.json", users)
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0, heartbeat_hold_ms=0, authorizer=True, super_users=SUPER_USERS
    )
    sasl = SaslSettings(users_file=folder / "users.json", mechanisms=MECHANISMS)
    with (
        KafkaCluster(
            sasl_users=dict.fromkeys(USERS, PASSWORD), authorizer=True, super_users=SUPER_USERS
        ) as kafka,
        EmbeddedCoordinator(config=config, sasl=sasl) as ours,
    ):
        both = {
            "kafka": Server("kafka", kafka.sasl_bootstrap_servers, folder),
            "ours": Server("ours", ours.bootstrap_servers, folder),
        }
        try:
            for server in both.values():
                for user in USERS:
                    sock = server.sockets[user] = _connect(server.bootstrap)
                    assert authenticate(sock, "PLAIN", user, PASSWORD)[0] == ErrorCode.NONE
                for request in (create_topics_request("t", partitions=2), create_topics_request("u")):
                    (made,) = server.call("admin", request, CreateTopicsResponse).topics
                    assert made.error_code == ErrorCode.NONE, (server.name, made)
                admin = KafkaAdminClient(
                    bootstrap_servers=server.bootstrap,
                    security_protocol="SASL_PLAINTEXT",
                    sasl_mechanism="PLAIN",
                    sasl_plain_username="admin",
                    sasl_plain_password=PASSWORD,
                )
                try:
                    created = admin.create_acls(list(ACLS))
                finally:
                    admin.close()
                assert created["failed"] == [], (server.name, created)
            for server in both.values():
                server.wait_for_acls([as_tuple(a) for a in ACLS])
                server.wait_for_leaders({"t": 2, "u": 1})
            yield both
        finally:
            for server in both.values():
                for sock in server.sockets.values():
                    sock.close()


# --- comparing answers ----------------------------------------------------------------------------


class Differences:
    """Asks both servers the same and keeps every difference, so that one run reports them all."""

    def __init__(self, servers: dict[str, Server]) -> None:
        self.servers = servers
        self.found: list[str] = []

    def same(self, what: str, ask: Callable[[Server], Any]) -> Any:
        """``ask`` of both; a difference is kept. Returns Kafka's answer."""
        kafka, ours = ask(self.servers["kafka"]), ask(self.servers["ours"])
        if ours != kafka:
            self.found.append(f"{what}:\n  Kafka:           {kafka!r}\n  the coordinator: {ours!r}")
        return kafka

    def known(self, what: str, ask: Callable[[Server], Any], *, kafka: Any, ours: Any) -> None:
        """A difference not closed: each answers as pinned."""
        answers = (ask(self.servers["kafka"]), ask(self.servers["ours"]))
        if answers != (kafka, ours):
            self.found.append(
                f"{what} (pinned):\n  Kafka:           {answers[0]!r}, pinned {kafka!r}\n"
                f"  the coordinator: {answers[1]!r}, pinned {ours!r}"
            )

    def check(self) -> None:
        """Fails if a difference was found since the last check."""
        found, self.found = self.found, []
        assert not found, "the coordinator and Kafka differ:\n" + "\n".join(found)


@pytest.fixture
def differences(servers: dict[str, Server]) -> Iterator[Differences]:
    """Each test checks at its end; a test that stopped earlier still reports what it found."""
    found = Differences(servers)
    yield found
    found.check()


def refused_first(entries: list[tuple[Any, ...]], refusal: int) -> tuple[list[Any], list[Any]]:
    """(the leading entries with error ``refusal``, in order; the rest, sorted): the refused
    groups come first, the coordinator's answers in an order of its own."""
    count = next((i for i, entry in enumerate(entries) if entry[1] != refusal), len(entries))
    return entries[:count], sorted(entries[count:])


def refused_last(entries: list[tuple[Any, ...]], refusal: int) -> tuple[list[Any], list[Any]]:
    """(the coordinator's answers, sorted; the trailing entries with error ``refusal``, in order)."""
    count = next((i for i, entry in enumerate(reversed(entries)) if entry[1] != refusal), len(entries))
    return sorted(entries[: len(entries) - count]), entries[len(entries) - count :]


def operations(*ops: ACLOperation) -> set[int]:
    """Authorized operations as kafka-python reads the bit field: the operations' codes."""
    return {op.value for op in ops}


# --- the classic group protocol, offsets, groups --------------------------------------------------


def metadata_request(topics: list[str] | None, *, version: int = 8, with_operations: bool = False) -> Any:
    return MetadataRequest(
        version=version,
        topics=None if topics is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in topics],
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=False,
        include_topic_authorized_operations=with_operations,
    )


#: A consumer's JoinGroup metadata subscribing to topic t (Kafka's consumer protocol).
SUBSCRIBED_TO_T = bytes(ConsumerProtocolSubscription(version=0, topics=["t"], user_data=b"").encode())


def join_request(
    group: str, member_id: str = "", *, protocol_type: str = "consumer", metadata: bytes = SUBSCRIBED_TO_T
) -> Any:
    return JoinGroupRequest(
        version=3,
        group_id=group,
        session_timeout_ms=60_000,
        rebalance_timeout_ms=60_000,
        member_id=member_id,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=metadata)],
    )


def by_topic(partitions: list[tuple[str, int]]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return topics


def commit_request(group: str, member: tuple[str, int], partitions: list[tuple[str, int]]) -> Any:
    topic_cls = OffsetCommitRequest.OffsetCommitRequestTopic
    partition_cls = topic_cls.OffsetCommitRequestPartition
    return OffsetCommitRequest(
        version=8,
        group_id=group,
        generation_id_or_member_epoch=member[1],
        member_id=member[0],
        group_instance_id=None,
        topics=[
            topic_cls(
                name=name,
                partitions=[
                    partition_cls(
                        partition_index=p,
                        committed_offset=5,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                    for p in indexes
                ],
            )
            for name, indexes in by_topic(partitions).items()
        ],
    )


def fetch_request(group: str, partitions: list[tuple[str, int]] | None, *, version: int = 7) -> Any:
    topics = None
    if partitions is not None:
        topics = [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=name, partition_indexes=indexes)
            for name, indexes in by_topic(partitions).items()
        ]
    return OffsetFetchRequest(version=version, group_id=group, topics=topics, require_stable=False)


def fetched(response: Any) -> tuple[int, list[tuple[str, int, int, int]]]:
    """(the group's error, each partition's (topic, partition, error, offset), sorted)."""
    offsets = [
        (t.name, p.partition_index, p.error_code, p.committed_offset)
        for t in response.topics
        for p in t.partitions
    ]
    return response.error_code, sorted(offsets)


def delete_offsets_request(group: str, partitions: list[tuple[str, int]]) -> Any:
    topic_cls = OffsetDeleteRequest.OffsetDeleteRequestTopic
    return OffsetDeleteRequest(
        version=0,
        group_id=group,
        topics=[
            topic_cls(
                name=name,
                partitions=[topic_cls.OffsetDeleteRequestPartition(partition_index=p) for p in parts],
            )
            for name, parts in by_topic(partitions).items()
        ],
    )


def deleted_offsets(response: Any) -> tuple[int, list[tuple[str, int, int]]]:
    """(the group's error, each partition's (topic, partition, error), in the answer's order)."""
    partitions = [(t.name, p.partition_index, p.error_code) for t in response.topics for p in t.partitions]
    return response.error_code, partitions


def batch_fetch_request(groups: dict[str, list[str] | None]) -> Any:
    group_cls = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(
        version=8,
        groups=[
            group_cls(
                group_id=group,
                topics=None
                if topics is None
                else [group_cls.OffsetFetchRequestTopics(name=t, partition_indexes=[0]) for t in topics],
            )
            for group, topics in groups.items()
        ],
        require_stable=False,
    )


def batch_fetched(response: Any) -> list[tuple[str, int, list[tuple[str, int, int]]]]:
    return [
        (
            g.group_id,
            g.error_code,
            sorted((t.name, p.partition_index, p.error_code) for t in g.topics for p in t.partitions),
        )
        for g in response.groups
    ]


def test_classic_group_requests_are_authorized_as_on_kafka(
    servers: dict[str, Server], differences: Differences
) -> None:
    same = differences.same
    members: dict[str, tuple[str, int]] = {}  # alice's member of group app on each: (id, generation)

    def join_app(server: Server) -> int:
        joined = server.call("alice", join_request("app"), JoinGroupResponse)
        members[server.name] = (joined.member_id, joined.generation_id)
        return int(joined.error_code)

    assert same("JoinGroup app as alice (READ from 127.0.0.1)", join_app) == ErrorCode.NONE

    def sync(user: str) -> Callable[[Server], int]:
        def ask(server: Server) -> int:
            member_id, generation = members[server.name]
            request = SyncGroupRequest(
                version=3,
                group_id="app",
                generation_id=generation,
                member_id=member_id,
                group_instance_id=None,
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=member_id, assignment=b"")
                ],
            )
            return int(server.call(user, request, SyncGroupResponse).error_code)

        return ask

    def join(user: str, group: str, as_alice: bool = False) -> Callable[[Server], int]:
        def ask(server: Server) -> int:
            member_id = members[server.name][0] if as_alice else ""
            return int(server.call(user, join_request(group, member_id), JoinGroupResponse).error_code)

        return ask

    assert same("SyncGroup app as alice", sync("alice")) == ErrorCode.NONE
    assert same("SyncGroup app as bob (DESCRIBE only)", sync("bob")) == GROUP_REFUSED
    assert same("JoinGroup app as bob", join("bob", "app")) == GROUP_REFUSED
    assert same("JoinGroup app as bob, as alice's member", join("bob", "app", as_alice=True)) == GROUP_REFUSED
    assert same(
        "JoinGroup shared-x as bob (his DENY READ beats User:*'s ALLOW)", join("bob", "shared-x")
    ) == (GROUP_REFUSED)

    def heartbeat(user: str) -> Callable[[Server], int]:
        def ask(server: Server) -> int:
            member_id, generation = members[server.name]
            request = HeartbeatRequest(
                version=3,
                group_id="app",
                generation_id=generation,
                member_id=member_id,
                group_instance_id=None,
            )
            return int(server.call(user, request, HeartbeatResponse).error_code)

        return ask

    assert same("Heartbeat app as bob", heartbeat("bob")) == GROUP_REFUSED
    assert same("Heartbeat app as alice", heartbeat("alice")) == ErrorCode.NONE

    def commit(user: str, group: str, partitions: list[tuple[str, int]]) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            member = members[server.name] if group == "app" else ("", -1)  # else a simple commit
            answer = server.call(user, commit_request(group, member, partitions), OffsetCommitResponse)
            return [(t.name, p.partition_index, p.error_code) for t in answer.topics for p in t.partitions]

        return ask

    asked = [("t", 0), ("u", 0), ("t", 1), ("nowhere", 0)]
    # Kafka answers the refused topics first, then the coordinator's partitions.
    assert same("OffsetCommit app as alice: t, u, nowhere", commit("alice", "app", asked)) == [
        ("u", 0, TOPIC_REFUSED),
        ("nowhere", 0, TOPIC_REFUSED),
        ("t", 0, ErrorCode.NONE),
        ("t", 1, ErrorCode.NONE),
    ]
    # What fails KafkaApis' checks (a refused topic, a partition that does not exist) comes first,
    # topic by topic in the request's order; the coordinator's answers join their topics.
    assert same(
        "OffsetCommit app as alice: u, t 7, nowhere, t 0",
        commit("alice", "app", [("u", 0), ("t", 7), ("nowhere", 0), ("t", 0)]),
    ) == [
        ("u", 0, TOPIC_REFUSED),
        ("t", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("t", 0, ErrorCode.NONE),
        ("nowhere", 0, TOPIC_REFUSED),
    ]
    assert same("OffsetCommit app as bob", commit("bob", "app", asked)) == [
        ("t", 0, GROUP_REFUSED),
        ("t", 1, GROUP_REFUSED),
        ("u", 0, GROUP_REFUSED),
        ("nowhere", 0, GROUP_REFUSED),
    ]
    assert same("OffsetCommit shared-x as alice (User:* READ)", commit("alice", "shared-x", [("t", 0)])) == [
        ("t", 0, ErrorCode.NONE)
    ]
    assert same("OffsetCommit shared-x as bob (DENY READ)", commit("bob", "shared-x", [("t", 0)])) == [
        ("t", 0, GROUP_REFUSED)
    ]

    def fetch(user: str, group: str, partitions: list[tuple[str, int]] | None) -> Callable[[Server], Any]:
        return lambda server: fetched(
            server.call(user, fetch_request(group, partitions), OffsetFetchResponse)
        )

    assert same("OffsetFetch app as alice: t, u", fetch("alice", "app", [("t", 0), ("t", 1), ("u", 0)])) == (
        ErrorCode.NONE,
        [("t", 0, 0, 5), ("t", 1, 0, 5), ("u", 0, TOPIC_REFUSED, -1)],
    )
    assert same("OffsetFetch app as alice: every topic", fetch("alice", "app", None)) == (
        ErrorCode.NONE,
        [("t", 0, 0, 5), ("t", 1, 0, 5)],
    )
    assert same("OffsetFetch app as bob (DESCRIBE app and u)", fetch("bob", "app", [("t", 0), ("u", 0)])) == (
        ErrorCode.NONE,
        [("t", 0, TOPIC_REFUSED, -1), ("u", 0, 0, -1)],
    )
    assert same("OffsetFetch app as bob: every topic", fetch("bob", "app", None)) == (ErrorCode.NONE, [])
    assert same("OffsetFetch nope as alice: every topic", fetch("alice", "nope", None)) == (GROUP_REFUSED, [])
    # A group refused with partitions asked for: from v2 the group's error alone; v1 has no group
    # error, so each partition asked for carries it (Kafka's OffsetFetchResponse.groupError).
    assert same("OffsetFetch v7 cg as bob: u", fetch("bob", "cg", [("u", 0)])) == (GROUP_REFUSED, [])
    assert same(
        "OffsetFetch v1 cg as bob: u, t",
        lambda server: fetched(
            server.call("bob", fetch_request("cg", [("u", 0), ("t", 1)], version=1), OffsetFetchResponse)
        )[1],
    ) == [("t", 1, GROUP_REFUSED, -1), ("u", 0, GROUP_REFUSED, -1)]
    batch = batch_fetch_request({"app": None, "shared-x": ["t", "u"], "cg": ["u"]})
    assert same(
        "OffsetFetch v8 as bob: app (every topic), shared-x, cg",
        lambda server: batch_fetched(server.call("bob", batch, OffsetFetchResponse)),
    ) == [
        ("app", 0, []),
        ("shared-x", 0, [("t", 0, TOPIC_REFUSED), ("u", 0, 0)]),
        ("cg", GROUP_REFUSED, []),
    ]

    def delete_offsets(user: str, group: str, partitions: list[tuple[str, int]]) -> Callable[[Server], Any]:
        return lambda server: deleted_offsets(
            server.call(user, delete_offsets_request(group, partitions), OffsetDeleteResponse)
        )

    # OffsetDelete needs DELETE on the group, then READ on each topic (KafkaApis): the refused
    # topics and the unknown partitions are answered first, in the request's order of topics; the
    # group coordinator answers the rest: app's member subscribes to t, so t is not deleted.
    assert same("OffsetDelete app as bob (DESCRIBE only)", delete_offsets("bob", "app", [("t", 0)])) == (
        GROUP_REFUSED,
        [],
    )
    assert same(
        "OffsetDelete app as alice: t, u, nowhere",
        delete_offsets("alice", "app", [("t", 0), ("u", 0), ("t", 7), ("nowhere", 0)]),
    ) == (
        ErrorCode.NONE,
        [
            ("t", 7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ("t", 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
            ("u", 0, TOPIC_REFUSED),
            ("nowhere", 0, TOPIC_REFUSED),
        ],
    )
    assert same("OffsetDelete app as admin: u, t", delete_offsets("admin", "app", [("u", 0), ("t", 1)])) == (
        ErrorCode.NONE,
        [("u", 0, ErrorCode.NONE), ("t", 1, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)],
    )
    assert same("OffsetDelete nope as admin: nowhere", delete_offsets("admin", "nope", [("nowhere", 0)])) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        [],
    )

    def other_protocol_type(server: Server) -> Any:
        request = join_request("shard-g", protocol_type="shard", metadata=b"")
        joined = server.call("admin", request, JoinGroupResponse)
        assert joined.error_code == ErrorCode.NONE, (server.name, joined)
        refused = delete_offsets("admin", "shard-g", [("t", 0)])(server)
        identity = LeaveGroupRequest.MemberIdentity(member_id=joined.member_id, group_instance_id=None)
        left = server.call(
            "admin", LeaveGroupRequest(version=3, group_id="shard-g", members=[identity]), LeaveGroupResponse
        )
        assert left.error_code == ErrorCode.NONE, (server.name, left)
        return refused

    assert same("OffsetDelete of a group of another protocol type with a member", other_protocol_type) == (
        ErrorCode.NON_EMPTY_GROUP,
        [],
    )

    def describe(user: str, *groups: str, version: int = 5) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            request = DescribeGroupsRequest(
                version=version, groups=list(groups), include_authorized_operations=False
            )
            answer = server.call(user, request, DescribeGroupsResponse)
            entries = [
                (g.group_id, g.error_code, getattr(g, "error_message", None), g.group_state, len(g.members))
                for g in answer.groups
            ]
            return refused_first(entries, GROUP_REFUSED)

        return ask

    assert same(
        "DescribeGroups as bob: app, cg, nope, shared-x", describe("bob", "app", "cg", "nope", "shared-x")
    ) == (
        [("cg", GROUP_REFUSED, None, "", 0), ("nope", GROUP_REFUSED, None, "", 0)],
        [("app", 0, None, "Stable", 1), ("shared-x", 0, None, "Empty", 0)],
    )
    # v6 (KIP-1043) says a group is not found rather than Dead; a refused group, as before.
    assert same(
        "DescribeGroups v6 as bob: app, cg, nope, shared-x, shared-ghost",
        describe("bob", "app", "cg", "nope", "shared-x", "shared-ghost", version=6),
    ) == (
        [("cg", GROUP_REFUSED, None, "", 0), ("nope", GROUP_REFUSED, None, "", 0)],
        [
            ("app", 0, None, "Stable", 1),
            ("shared-ghost", ErrorCode.GROUP_ID_NOT_FOUND, "Group shared-ghost not found.", "Dead", 0),
            ("shared-x", 0, None, "Empty", 0),
        ],
    )

    def authorized_operations(server: Server) -> Any:
        request = DescribeGroupsRequest(
            version=5, groups=["app", "shared-x", "cg", "nope"], include_authorized_operations=True
        )
        return sorted(
            (g.group_id, g.error_code, g.authorized_operations)
            for g in server.call("alice", request, DescribeGroupsResponse).groups
        )

    # Asked for (include_authorized_operations), what the principal may do to each group it may
    # describe, as KafkaApis says it (a group refused says nothing).
    assert same(
        "DescribeGroups as alice: app, shared-x, cg, nope, with authorized operations", authorized_operations
    ) == [
        ("app", 0, operations(Op.READ, Op.DELETE, Op.DESCRIBE)),
        ("cg", 0, operations(Op.READ, Op.DESCRIBE)),
        ("nope", GROUP_REFUSED, None),
        ("shared-x", 0, operations(Op.READ, Op.DESCRIBE)),
    ]

    def listed(user: str) -> Callable[[Server], list[str]]:
        def ask(server: Server) -> list[str]:
            answer = server.call(user, ListGroupsRequest(version=4, states_filter=[]), ListGroupsResponse)
            return sorted(g.group_id for g in answer.groups)

        return ask

    # Groups the module's other tests made may be listed too, the same on both.
    alice_sees = same("ListGroups as alice (DESCRIBE per group)", listed("alice"))
    bob_sees = same("ListGroups as bob (DESCRIBE on the cluster)", listed("bob"))
    assert {"app", "shared-x"} <= set(alice_sees) <= set(bob_sees)

    def find(user: str, *keys: str, version: int = 3) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            if len(keys) == 1:
                request = FindCoordinatorRequest(version=version, key=keys[0], key_type=0)
                answer = server.call(user, request, FindCoordinatorResponse)
                return answer.error_code, answer.error_message
            request = FindCoordinatorRequest(version=4, key_type=0, coordinator_keys=list(keys))
            answer = server.call(user, request, FindCoordinatorResponse)
            return [(c.key, c.error_code, c.error_message) for c in answer.coordinators]

        return ask

    assert same("FindCoordinator v3 cg as bob", find("bob", "cg")) == (
        GROUP_REFUSED,
        "Group authorization failed.",
    )
    # v1-v3 say the error code's text, "NONE" for a found coordinator; v4 says nothing (""), found
    # or refused.
    assert same("FindCoordinator v3 app as bob", find("bob", "app")) == (0, "NONE")
    assert same("FindCoordinator v1 app as bob", find("bob", "app", version=1)) == (0, "NONE")
    assert same("FindCoordinator v4 as bob: app, cg, shared-x", find("bob", "app", "cg", "shared-x")) == [
        ("app", 0, ""),
        ("cg", GROUP_REFUSED, ""),
        ("shared-x", 0, ""),
    ]

    def delete(user: str, *groups: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            request = DeleteGroupsRequest(version=2, groups_names=list(groups))
            answer = server.call(user, request, DeleteGroupsResponse)
            return refused_last([(r.group_id, r.error_code) for r in answer.results], GROUP_REFUSED)

        return ask

    # Kafka answers the refused groups last.
    assert same("DeleteGroups as alice: shared-x, nope, app", delete("alice", "shared-x", "nope", "app")) == (
        [("app", ErrorCode.NON_EMPTY_GROUP)],
        [("shared-x", GROUP_REFUSED), ("nope", GROUP_REFUSED)],
    )

    def leave(user: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            identity = LeaveGroupRequest.MemberIdentity(
                member_id=members[server.name][0], group_instance_id=None
            )
            request = LeaveGroupRequest(version=3, group_id="app", members=[identity])
            answer = server.call(user, request, LeaveGroupResponse)
            return answer.error_code, [m.error_code for m in answer.members]

        return ask

    assert same("LeaveGroup app as bob", leave("bob"))[0] == GROUP_REFUSED
    assert same("LeaveGroup app as alice", leave("alice")) == (ErrorCode.NONE, [ErrorCode.NONE])
    # Empty: nothing is subscribed to any more. Without offsets or members the group stays until
    # the coordinator's next retention check, so DeleteGroups still finds it.
    assert same(
        "OffsetDelete app as alice, now empty: t", delete_offsets("alice", "app", [("t", 0), ("t", 1)])
    ) == (
        ErrorCode.NONE,
        [("t", 0, ErrorCode.NONE), ("t", 1, ErrorCode.NONE)],
    )
    assert same("OffsetFetch app as alice, after", fetch("alice", "app", None)) == (ErrorCode.NONE, [])
    assert same("DeleteGroups app as alice, now empty", delete("alice", "app")) == ([("app", 0)], [])
    differences.check()


# --- the consumer group protocol (KIP-848) --------------------------------------------------------


def consumer_heartbeat(
    group: str, member_id: str, *, topics: list[str] | None = None, regex: str | None = None, epoch: int = 0
) -> Any:
    return ConsumerGroupHeartbeatRequest(
        version=1,
        group_id=group,
        member_id=member_id,
        member_epoch=epoch,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=topics,
        subscribed_topic_regex=regex,
        topic_partitions=[] if epoch == 0 else None,
    )


def test_consumer_group_requests_are_authorized_as_on_kafka(
    servers: dict[str, Server], differences: Differences
) -> None:
    same = differences.same
    member = str(uuid.uuid4())

    def beat(user: str, group: str, topics: list[str]) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = server.call(
                user, consumer_heartbeat(group, member, topics=topics), ConsumerGroupHeartbeatResponse
            )
            return answer.error_code, answer.error_message

        return ask

    assert same("ConsumerGroupHeartbeat cg as alice: t", beat("alice", "cg", ["t"])) == (ErrorCode.NONE, None)
    assert (
        same("ConsumerGroupHeartbeat cg as alice: t, u", beat("alice", "cg", ["t", "u"]))[0] == TOPIC_REFUSED
    )
    assert same("ConsumerGroupHeartbeat cg as bob", beat("bob", "cg", ["u"]))[0] == GROUP_REFUSED
    assert same("ConsumerGroupHeartbeat shared-cg as alice: t", beat("alice", "shared-cg", ["t"]))[0] == 0
    assert same("ConsumerGroupHeartbeat shared-cg as bob (DENY READ)", beat("bob", "shared-cg", ["u"]))[
        0
    ] == (GROUP_REFUSED)
    # alice may describe topic ghost, which does not exist: subscribed to, never assigned.
    assert (
        same("ConsumerGroupHeartbeat shared-ghost as alice: ghost", beat("alice", "shared-ghost", ["ghost"]))[
            0
        ]
        == 0
    )

    def describe(user: str, *groups: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            request = ConsumerGroupDescribeRequest(
                version=0, group_ids=list(groups), include_authorized_operations=False
            )
            answer = server.call(user, request, ConsumerGroupDescribeResponse)
            entries = [(g.group_id, g.error_code, g.error_message, len(g.members)) for g in answer.groups]
            return refused_first(entries, GROUP_REFUSED)

        return ask

    # bob may describe shared-cg but not the topic t assigned in it: Kafka hides the group
    # (KAFKA-18813); a topic only subscribed to (shared-ghost's ghost) it does not check.
    assert same(
        "ConsumerGroupDescribe as bob: cg, nope, shared-cg, shared-ghost",
        describe("bob", "cg", "nope", "shared-cg", "shared-ghost"),
    ) == (
        [("cg", GROUP_REFUSED, None, 0), ("nope", GROUP_REFUSED, None, 0)],
        [
            (
                "shared-cg",
                TOPIC_REFUSED,
                "The group has described topic(s) that the client is not authorized to describe.",
                0,
            ),
            ("shared-ghost", ErrorCode.NONE, None, 1),
        ],
    )
    assert same("ConsumerGroupDescribe as alice: cg, shared-cg", describe("alice", "cg", "shared-cg")) == (
        [],
        [("cg", 0, None, 1), ("shared-cg", 0, None, 1)],
    )

    def authorized_operations(server: Server) -> Any:
        request = ConsumerGroupDescribeRequest(
            version=0, group_ids=["cg", "nope", "app"], include_authorized_operations=True
        )
        return sorted(
            (g.group_id, g.error_code, g.authorized_operations)
            for g in server.call("alice", request, ConsumerGroupDescribeResponse).groups
        )

    # As DescribeGroups: asked for, what the principal may do to each consumer group answered
    # without an error (a bit field, read raw here); Kafka's "not asked for" for the others.
    assert same(
        "ConsumerGroupDescribe as alice: cg, nope, app, with authorized operations", authorized_operations
    ) == [
        ("app", ErrorCode.GROUP_ID_NOT_FOUND, -(2**31)),
        ("cg", 0, (1 << Op.READ.value) | (1 << Op.DESCRIBE.value)),
        ("nope", GROUP_REFUSED, -(2**31)),
    ]
    # Not refused, but no consumer group: a classic group is said to be one, a group that does not
    # exist not found (Kafka's group coordinator's messages). The classic group is a simple one
    # made here (offsets committed without membership): the tests may run on different workers,
    # each with servers of its own, so none leans on groups another test made.
    simple_commit = commit_request("shared-simple", ("", -1), [("t", 0)])
    for server in servers.values():
        (topic,) = server.call("alice", simple_commit, OffsetCommitResponse).topics
        assert [p.error_code for p in topic.partitions] == [ErrorCode.NONE], (server.name, topic)
    assert same(
        "ConsumerGroupDescribe as alice: shared-simple (a classic group)", describe("alice", "shared-simple")
    ) == (
        [],
        [("shared-simple", ErrorCode.GROUP_ID_NOT_FOUND, "Group shared-simple is not a consumer group.", 0)],
    )
    assert same("ConsumerGroupDescribe as admin: nope", describe("admin", "nope")) == (
        [],
        [("nope", ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.", 0)],
    )

    # A regular expression subscribes alice to the topics she may DESCRIBE only (t, not u nor
    # Kafka's internal topic). Kafka resolves it in the background: both are asked until the
    # member has an assignment.
    def by_regex(server: Server) -> list[str]:
        topics = server.call("admin", metadata_request(None, version=12), MetadataResponse).topics
        names = {t.topic_id: t.name for t in topics}
        deadline, epoch = time.monotonic() + PROPAGATION_S, 0
        while True:
            request = consumer_heartbeat("shared-regex", member, regex=".*", epoch=epoch)
            answer = server.call("alice", request, ConsumerGroupHeartbeatResponse)
            assert answer.error_code == ErrorCode.NONE, (server.name, answer)
            epoch = answer.member_epoch
            if answer.assignment is not None and answer.assignment.topic_partitions:
                return sorted(names[tp.topic_id] for tp in answer.assignment.topic_partitions)
            assert time.monotonic() < deadline, f"{server.name}: no assignment for the regex yet"
            time.sleep(0.05)

    assert same("ConsumerGroupHeartbeat shared-regex as alice: .*", by_regex) == ["t"]
    differences.check()


# --- topics ---------------------------------------------------------------------------------------


def test_metadata_and_create_topics_are_authorized_as_on_kafka(
    servers: dict[str, Server], differences: Differences
) -> None:
    same, known = differences.same, differences.known

    def metadata(user: str, topics: list[str] | None) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = server.call(user, metadata_request(topics), MetadataResponse)
            return [(t.name, t.error_code, len(t.partitions)) for t in answer.topics]

        return ask

    assert same("Metadata of every topic as alice", metadata("alice", None)) == [("t", 0, 2)]
    assert same("Metadata of every topic as bob", metadata("bob", None)) == [("u", 0, 1)]
    asked = ["t", "u", "nowhere", "ghost"]
    assert sorted(
        same("Metadata as alice: t, u, nowhere, ghost", lambda s: sorted(metadata("alice", asked)(s)))
    ) == [
        ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0),
        ("nowhere", TOPIC_REFUSED, 0),  # not even whether it exists
        ("t", 0, 2),
        ("u", TOPIC_REFUSED, 0),
    ]
    # The topics the principal may describe first (those that exist, then the others), then
    # those it may not, as KafkaApis orders them.
    assert same(
        "Metadata as alice: t, u, nowhere, ghost, in order",
        lambda s: [name for name, _, _ in metadata("alice", asked)(s)],
    ) == ["t", "ghost", "u", "nowhere"]
    assert same(
        "Metadata as alice: ghost, nowhere, u, t, in order",
        lambda s: [name for name, _, _ in metadata("alice", asked[::-1])(s)],
    ) == ["t", "ghost", "nowhere", "u"]

    def topic_operations(server: Server) -> Any:
        request = metadata_request(asked, with_operations=True)
        answer = server.call("alice", request, MetadataResponse)
        return sorted((t.name, t.error_code, t.authorized_operations) for t in answer.topics)

    # Asked for, what the principal may do to each topic it may describe, as KafkaApis says it
    # (a topic refused says nothing).
    assert same("Metadata as alice: t, u, nowhere, ghost, with authorized operations", topic_operations) == [
        ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, operations(Op.DESCRIBE)),
        ("nowhere", TOPIC_REFUSED, None),
        ("t", 0, operations(Op.READ, Op.DESCRIBE)),
        ("u", TOPIC_REFUSED, None),
    ]

    def create(user: str, *names: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = server.call(user, create_topics_request(*names), CreateTopicsResponse)
            return [(t.name, t.error_code, t.error_message) for t in answer.topics]

        return ask

    assert same(
        "CreateTopics as alice: alice-1 (CREATE on alice-), bob-1", create("alice", "alice-1", "bob-1")
    ) == [
        ("alice-1", ErrorCode.NONE, None),
        ("bob-1", TOPIC_REFUSED, "Authorization failed."),
    ]
    assert same("CreateTopics as bob: bob-2", create("bob", "bob-2")) == [
        ("bob-2", TOPIC_REFUSED, "Authorization failed.")
    ]

    # A topic made by a principal without DESCRIBE_CONFIGS on it: Kafka withholds its settings
    # (TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED, partitions and replication factor -1);
    # the coordinator's CreatedTopic has no field for that, nor its _wire.py (pinned).
    def made(server: Server) -> Any:
        (topic,) = server.call("alice", create_topics_request("alice-2"), CreateTopicsResponse).topics
        return topic.error_code, topic.topic_config_error_code, topic.num_partitions, topic.replication_factor

    known(
        "CreateTopics as alice: alice-2, its settings",
        made,
        kafka=(0, TOPIC_REFUSED, -1, -1),
        ours=(0, 0, 1, 1),
    )
    # alice made them but may not describe them: they stay out of her Metadata of every topic.
    assert same("Metadata of every topic as alice, after", metadata("alice", None)) == [("t", 0, 2)]

    # CreatePartitions: ALTER on each topic (Kafka's ControllerApis), refusals without words
    # (Kafka puts them before the topics it passes on, this coordinator in the request's order).
    def grow(user: str, **counts: int) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            topic = CreatePartitionsRequest.CreatePartitionsTopic
            request = CreatePartitionsRequest(
                version=3,
                topics=[topic(name=n, count=c, assignments=None) for n, c in counts.items()],
                timeout_ms=30_000,
                validate_only=False,
            )
            answer = server.call(user, request, CreatePartitionsResponse)
            return sorted((r.name, r.error_code, r.error_message) for r in answer.results)

        return ask

    assert same("CreatePartitions as bob: u (ALTER), t, nowhere", grow("bob", u=2, t=3, nowhere=2)) == [
        ("nowhere", TOPIC_REFUSED, None),
        ("t", TOPIC_REFUSED, None),
        ("u", ErrorCode.NONE, None),
    ]
    refused = [("t", TOPIC_REFUSED, None)]
    assert same("CreatePartitions as alice: t (READ only)", grow("alice", t=3)) == refused
    for server in servers.values():
        server.wait_for_leaders({"t": 2, "u": 2})
    assert same("Metadata of every topic as bob, after", metadata("bob", None)) == [("u", 0, 2)]

    # DeleteTopics: DELETE on the cluster or on each topic, DESCRIBE to hear more than that it
    # was refused (a topic named by id and not describable is not named back).
    def delete(user: str, *named: str, by_id: str | None = None) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            state = DeleteTopicsRequest.DeleteTopicState
            topics = [state(name=n, topic_id=uuid.UUID(int=0)) for n in named]
            ids = {}
            if by_id is not None:
                every = server.call("admin", metadata_request(None, version=12), MetadataResponse).topics
                ids = {t.topic_id: t.name for t in every}
                topics.append(state(name=None, topic_id=next(i for i, n in ids.items() if n == by_id)))
            request = DeleteTopicsRequest(version=6, topics=topics, timeout_ms=30_000)
            answer = server.call(user, request, DeleteTopicsResponse)
            return sorted(
                (r.name, ids.get(r.topic_id, "-"), r.error_code, r.error_message) for r in answer.responses
            )

        return ask

    refusal = "Topic authorization failed."
    assert same(
        "DeleteTopics as alice: alice-1 (CREATE only), nowhere; t by id",
        delete("alice", "alice-1", "nowhere", by_id="t"),
    ) == [
        ("alice-1", "-", TOPIC_REFUSED, refusal),
        ("nowhere", "-", TOPIC_REFUSED, refusal),
        ("t", "t", TOPIC_REFUSED, refusal),  # she may describe t: its name comes back
    ]
    assert same("DeleteTopics as bob: t by id", delete("bob", by_id="t")) == [
        (None, "t", TOPIC_REFUSED, refusal)  # he may not describe t
    ]
    assert same("DeleteTopics as admin: alice-1, alice-2", delete("admin", "alice-1", "alice-2")) == [
        ("alice-1", "-", ErrorCode.NONE, None),
        ("alice-2", "-", ErrorCode.NONE, None),
    ]
    differences.check()


def test_group_configs_are_authorized_as_on_kafka(
    servers: dict[str, Server], differences: Differences
) -> None:
    same = differences.same
    run = uuid.uuid4().hex[:8]  # a group of this run: Kafka keeps configs for the module

    def describe(user: str, group: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            (result,) = describe_group_configs(server.sockets[user], group, keys=[SESSION]).results
            return result.error_code, result.error_message, [(c.name, c.value) for c in result.configs]

        return ask

    def alter(user: str, group: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = alter_group_configs(server.sockets[user], (group, [(SESSION, 0, "50000")]))
            return [(r.error_code, r.error_message) for r in answer.responses]

        return ask

    def listed(user: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = list_groups_with_configs(server.sockets[user])
            return answer.error_code, [
                r.resource_name for r in answer.config_resources if run in r.resource_name
            ]

        return ask

    # READ on a group is not DESCRIBE_CONFIGS on it, nor DESCRIBE on the cluster DESCRIBE_CONFIGS.
    assert same("DescribeConfigs of group app as alice (READ on it)", describe("alice", "app")) == (
        GROUP_REFUSED,
        "Group authorization failed.",
        [],
    )
    assert same("IncrementalAlterConfigs of group app as alice", alter("alice", "app")) == [
        (GROUP_REFUSED, "Group authorization failed.")
    ]
    assert same("ListConfigResources as bob (DESCRIBE on the cluster)", listed("bob")) == (
        CLUSTER_REFUSED,
        [],
    )
    assert same(f"IncrementalAlterConfigs of group cfg-{run} as admin", alter("admin", f"cfg-{run}")) == [
        (0, None)
    ]
    for server in servers.values():  # a Kafka broker describes the metadata it has applied
        server._wait(
            lambda s=server: describe("admin", f"cfg-{run}")(s)[2] != [(SESSION, "45000")], "the change"
        )
    assert same(f"DescribeConfigs of group cfg-{run} as admin", describe("admin", f"cfg-{run}")) == (
        0,
        "",
        [(SESSION, "50000")],
    )
    assert same("ListConfigResources as admin", listed("admin")) == (0, [f"cfg-{run}"])


# --- the ACL APIs ---------------------------------------------------------------------------------


def creation(kind: ResourceType, name: str, principal: str = "User:carol") -> Any:
    return CreateAclsRequest.AclCreation(
        resource_type=kind.value,
        resource_name=name,
        resource_pattern_type=LITERAL.value,
        principal=principal,
        host="*",
        operation=Op.READ.value,
        permission_type=Allow.value,
    )


#: Kafka's message of a refused ACL request names the request and its connection.
_REQUEST_DETAILS = re.compile(r"Request Request\(.*?\) ")


def without_details(message: str | None) -> str | None:
    """``message`` with Kafka's request details written ``Request <request>``."""
    return None if message is None else _REQUEST_DETAILS.sub("Request <request> ", message)


def test_the_acl_apis_are_authorized_as_on_kafka(
    servers: dict[str, Server], differences: Differences
) -> None:
    same, known = differences.same, differences.known
    expected = sorted(as_tuple(a) for a in ACLS)

    def describe(user: str) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = server.call(user, describe_acls_request(), DescribeAclsResponse)
            return answer.error_code, described(answer)

        return ask

    assert same("DescribeAcls as bob (DESCRIBE on the cluster)", describe("bob")) == (
        ErrorCode.NONE,
        expected,
    )
    assert same("DescribeAcls as alice", describe("alice")) == (CLUSTER_REFUSED, [])

    def create(user: str, *creations: Any) -> Callable[[Server], Any]:
        def ask(server: Server) -> Any:
            answer = server.call(
                user, CreateAclsRequest(version=3, creations=list(creations)), CreateAclsResponse
            )
            return [(r.error_code, without_details(r.error_message)) for r in answer.results]

        return ask

    def delete(server: Server) -> Any:
        wanted = DeleteAclsRequest.DeleteAclsFilter(
            resource_type_filter=G.value,
            resource_name_filter="app",
            pattern_type_filter=LITERAL.value,
            principal_filter=None,
            host_filter=None,
            operation=Op.ANY.value,
            permission_type=ACLPermissionType.ANY.value,
        )
        answer = server.call("alice", DeleteAclsRequest(version=3, filters=[wanted]), DeleteAclsResponse)
        return [(r.error_code, len(r.matching_acls)) for r in answer.filter_results]

    carol = creation(G, "carol")
    assert same("CreateAcls as alice", lambda s: [code for code, _ in create("alice", carol)(s)]) == [
        CLUSTER_REFUSED
    ]
    assert same(
        "CreateAcls as bob (DESCRIBE, not ALTER)", lambda s: [c for c, _ in create("bob", carol)(s)]
    ) == [CLUSTER_REFUSED]
    assert same("DeleteAcls as alice", delete) == [(CLUSTER_REFUSED, 0)]
    # Kafka's messages name the operation the principal lacks (after the request's details);
    # the coordinator's is Kafka's text for the error code, made in its _server.py: pinned.
    known(
        "DescribeAcls as alice: the message",
        lambda s: without_details(
            s.call("alice", describe_acls_request(), DescribeAclsResponse).error_message
        ),
        kafka="Request <request> needs DESCRIBE permission.",
        ours="Cluster authorization failed.",
    )
    known(
        "CreateAcls as bob: the message",
        create("bob", carol),
        kafka=[(CLUSTER_REFUSED, "Request <request> needs ALTER permission.")],
        ours=[(CLUSTER_REFUSED, "Cluster authorization failed.")],
    )
    # Bindings Kafka refuses, refused alike whoever may alter ACLs.
    assert same(
        "CreateAcls as admin: invalid bindings", create("admin", creation(C, "c"), creation(G, ""))
    ) == [
        (ErrorCode.INVALID_REQUEST, "The only valid name for the CLUSTER resource is kafka-cluster"),
        (ErrorCode.INVALID_REQUEST, "Invalid empty resource name"),
    ]
    for server in servers.values():
        assert server.acls() == expected, server.name  # nothing was added, on either
    differences.check()


# --- coordinator-api acls -------------------------------------------------------------------------


@dataclass(frozen=True)
class Printed:
    """What one ``coordinator-api acls`` run printed, its server's address written ``SERVER``."""

    returncode: int
    stdout: str
    stderr: str


def acls_command(servers: dict[str, Server], *args: str, user: str = "admin") -> dict[str, Printed]:
    """``coordinator-api acls ARGS`` as ``user`` against both servers, both at once."""
    running = {
        name: subprocess.Popen(
            [
                *CLI, "acls", args[0], "--bootstrap-server", server.bootstrap,
                "--command-config", str(server.properties(user)), *args[1:],
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, server in servers.items()
    }  # fmt: skip
    printed = {}
    for name, process in running.items():
        stdout, stderr = process.communicate(timeout=60)
        address = servers[name].bootstrap
        printed[name] = Printed(
            process.returncode, stdout.replace(address, "SERVER"), stderr.replace(address, "SERVER")
        )
    return printed


def test_the_acls_commands_print_the_same_for_kafka_and_the_coordinator(servers: dict[str, Server]) -> None:
    before = [as_tuple(a) for a in ACLS]
    added = acls_command(
        servers,
        "add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe",
        "--group", "orders-", "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    assert (
        added["ours"]
        == added["kafka"]
        == Printed(
            0,
            "added ACL: GROUP orders- PREFIXED User:alice * DESCRIBE ALLOW\n"
            "added ACL: GROUP orders- PREFIXED User:alice * READ ALLOW\n",
            "",
        )
    )
    denied = acls_command(
        servers,
        "add", "--deny-principal", "User:bob", "--deny-host", "10.1.2.3", "--operation", "All",
        "--topic", "orders", "--json",
    )  # fmt: skip
    assert denied["ours"] == denied["kafka"]
    assert (denied["kafka"].returncode, json.loads(denied["kafka"].stdout)) == (
        0,
        [
            {
                "resource_type": "TOPIC",
                "resource_name": "orders",
                "pattern_type": "LITERAL",
                "principal": "User:bob",
                "host": "10.1.2.3",
                "operation": "ALL",
                "permission": "DENY",
            }
        ],
    )
    new = [
        binding(G, "orders-", "User:alice", Op.DESCRIBE, pattern=PREFIXED),
        binding(G, "orders-", "User:alice", Op.READ, pattern=PREFIXED),
        binding(T, "orders", "User:bob", Op.ALL, permission=Deny, host="10.1.2.3"),
    ]
    for server in servers.values():
        server.wait_for_acls(before + [as_tuple(a) for a in new])

    every = acls_command(servers, "list", "--json")
    assert every["ours"] == every["kafka"]
    assert every["kafka"].returncode == 0 and len(json.loads(every["kafka"].stdout)) == len(ACLS) + len(new)
    for args in (
        ("list", "--principal", "User:bob", "--json"),
        ("list", "--topic", "t", "--operation", "Read"),
        ("list", "--topic", "orders", "--resource-pattern-type", "match"),
    ):
        listed = acls_command(servers, *args)
        assert listed["ours"] == listed["kafka"], args
        assert listed["kafka"].returncode == 0 and listed["kafka"].stdout, (args, listed["kafka"])
    matched = acls_command(servers, "list", "--group", "orders-eu", "--resource-pattern-type", "match")
    assert matched["ours"] == matched["kafka"]
    assert matched["kafka"].stdout.splitlines() == [
        "GROUP\torders-\tPREFIXED\tUser:alice\t*\tDESCRIBE\tALLOW",
        "GROUP\torders-\tPREFIXED\tUser:alice\t*\tREAD\tALLOW",
    ]

    # alice may neither change nor list them. Listing, the command prints the server's message,
    # which is not the same (pinned in test_the_acl_apis_are_authorized_as_on_kafka).
    refused = acls_command(
        servers, "add", "--allow-principal", "User:alice", "--operation", "All", "--cluster", user="alice"
    )
    assert (
        refused["ours"]
        == refused["kafka"]
        == Printed(
            2, "", "coordinator-api: error: SERVER refused 1 of 1 ACL(s): CLUSTER_AUTHORIZATION_FAILED\n"
        )
    )
    hidden = acls_command(servers, "list", user="alice")
    assert {name: (p.returncode, p.stdout, without_details(p.stderr)) for name, p in hidden.items()} == {
        "kafka": (
            2,
            "",
            "coordinator-api: error: SERVER answered CLUSTER_AUTHORIZATION_FAILED "
            "(Request <request> needs DESCRIBE permission.)\n",
        ),
        "ours": (
            2,
            "",
            "coordinator-api: error: SERVER answered CLUSTER_AUTHORIZATION_FAILED "
            "(Cluster authorization failed.)\n",
        ),
    }

    removed = acls_command(
        servers, "remove", "--group", "orders-", "--topic", "orders", "--resource-pattern-type", "any"
    )
    assert removed["ours"] == removed["kafka"]
    assert removed["kafka"].returncode == 0 and removed["kafka"].stdout.count("removed ACL: ") == len(new)
    for server in servers.values():
        server.wait_for_acls(before)


@pytest.mark.parametrize(
    ("settings", "error", "says"),
    [
        ({"super_users": ("User:admin",)}, ValueError, "super_users needs authorizer=True"),
        ({"authorizer": True, "super_users": ("admin",)}, ValueError, "'admin' is not TYPE:NAME"),
        ({"authorizer": True, "super_users": ("User:a;User:b",)}, ValueError, "is not TYPE:NAME"),
        ({"authorizer": True, "super_users": "User:admin"}, TypeError, "not a string"),
    ],
)
def test_kafka_cluster_refuses_super_users_it_could_not_write(
    settings: dict[str, Any], error: type[Exception], says: str
) -> None:
    """Before any broker starts: a super user needs the authorizer and must fit ``super.users``."""
    with pytest.raises(error, match=re.escape(says)):
        KafkaCluster(**settings)
