"""Incremental groups of protocol types other than ``consumer`` (GroupHeartbeat), sans-IO and
on the wire.

The same engine as consumer groups (tests/server/test_consumer_group.py), but the members
declare the group's resources and give their protocol type's server-side assignor a payload.
The stateful test drives the reconciliation model of test_consumer_group.py through
GroupHeartbeat: no resource is ever owned by two members, and the group settles.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from hypothesis import settings
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka_tools import _call, _connect
from test_consumer_group import CONFIG, Member, Reconciliation
from test_consumer_group import Coordinator as ConsumerGroupsHarness

from coordinator_api import (
    AssignmentSpec,
    ConfigurationError,
    Coordinator,
    EmbeddedCoordinator,
    GroupSubscription,
    GroupTimeoutError,
    JoinedMember,
)
from coordinator_api._plugins import Resource, ServerAssignor
from coordinator_api._protocol import MAX_GROUP_RESOURCES, ApiKey, ErrorCode
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    ConsumerGroupState,
    DescribedConsumerGroup,
    JoinGroup,
    JoinGroupResult,
    ListGroups,
    ListGroupsResult,
    OffsetCommit,
    OffsetCommitResult,
)
from coordinator_api.server._state import GroupCoordinator
from coordinator_api.server._store import SqliteStore
from coordinator_api.server.schemas import GroupHeartbeatRequest, GroupHeartbeatResponse

TYPE = "tasks"
REBALANCE_MS = 4000


def to_the_chosen(members: Sequence[AssignmentSpec], counts: Mapping[str, int]) -> dict[str, list[Resource]]:
    """Every resource to the first member whose payload says ``chosen`` (a test assignor that
    only metadata can steer)."""
    chosen = [m.member_id for m in members if m.metadata == b"chosen"]
    if not chosen:
        return {}
    return {chosen[0]: [(name, i) for name, count in sorted(counts.items()) for i in range(count)]}


ASSIGNORS: dict[str, ServerAssignor] = {"uniform": SERVER_ASSIGNORS["uniform"], "chosen": to_the_chosen}


class Tasks(ConsumerGroupsHarness):
    """The consumer tests' coordinator, with a protocol type ``tasks`` whose members declare
    resource groups."""

    def __init__(self) -> None:
        super().__init__(topics={})
        self.state = GroupCoordinator(
            CONFIG,
            server_assignors=SERVER_ASSIGNORS,
            resource_assignors={TYPE: ASSIGNORS},
            member_id_factory=lambda client_id: client_id,
        )
        self.create({"work": 6})  # a topic too, for offset commits

    def heartbeat(
        self, member_id: str, epoch: int, owned: Iterable[tuple[str, int]] | None = None, **fields: Any
    ) -> ConsumerGroupHeartbeatResult:
        """The model's heartbeats (its leaves) go through GroupHeartbeat too."""
        return self.beat(member_id, epoch, owned, **fields)

    def join(
        self, member_id: str, resources: Mapping[str, int] | None = None, **fields: Any
    ) -> ConsumerGroupHeartbeatResult:
        return self.beat(member_id, 0, (), resources=dict(resources or {"work": 6}), **fields)

    def beat(
        self,
        member_id: str,
        epoch: int,
        owned: Iterable[tuple[str, int]] | None = None,
        *,
        resources: Mapping[str, int] | None = None,
        **fields: Any,
    ) -> ConsumerGroupHeartbeatResult:
        by_name: dict[str, list[int]] = {}
        for name, index in owned or ():
            by_name.setdefault(name, []).append(index)
        fields.setdefault("group_id", "g")
        fields.setdefault("protocol_type", TYPE)
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", REBALANCE_MS)
        request = ConsumerGroupHeartbeat(
            member_id=member_id,
            member_epoch=epoch,
            owned=None
            if owned is None
            else tuple((n.encode(), tuple(sorted(i))) for n, i in by_name.items()),
            resources=None if resources is None else tuple(sorted(resources.items())),
            **fields,
        )
        result = self.request(request)
        assert isinstance(result, ConsumerGroupHeartbeatResult)
        return result

    def names(self, result: ConsumerGroupHeartbeatResult) -> set[tuple[str, int]] | None:
        if result.assignment is None:
            return None
        return {(key.decode(), index) for key, indexes in result.assignment for index in indexes}

    def describe(self, group_id: str = "g") -> DescribedConsumerGroup:
        return self.state._consumer_groups.describe(group_id)


def work(*indexes: int) -> set[tuple[str, int]]:
    return {("work", i) for i in indexes}


@pytest.fixture
def c() -> Tasks:
    return Tasks()


def test_a_first_member_gets_every_declared_resource_named_on_the_wire(c: Tasks) -> None:
    a = c.join("a")
    assert (a.error, a.member_epoch) == (ErrorCode.NONE, 2)
    assert a.assignment == ((b"work", (0, 1, 2, 3, 4, 5)),)
    assert c.describe().members[0].assignment == ((b"work", "work", (0, 1, 2, 3, 4, 5)),)


def test_a_newcomer_gets_resources_only_once_their_owner_gave_them_up(c: Tasks) -> None:
    c.join("a")
    b = c.join("b")
    assert c.names(b) == set()  # a still owns everything: b waits
    a = c.beat("a", 2, work(0, 1, 2, 3, 4, 5))
    kept = c.names(a)
    assert kept is not None and len(kept) == 3 and a.member_epoch == 2  # revoke first, same epoch
    a = c.beat("a", 2, kept)  # revoked
    assert a.member_epoch == 3
    b = c.beat("b", 3, set())
    assert c.names(b) == work(0, 1, 2, 3, 4, 5) - kept
    assert c.describe().state == ConsumerGroupState.STABLE.value


def test_a_groups_own_session_and_interval_apply_to_groups_of_every_protocol_type(c: Tasks) -> None:
    # kafka-configs --entity-type groups sets them for any group of the incremental protocol here.
    a = c.join("a")
    assert a.heartbeat_interval_ms == CONFIG.consumer_group_heartbeat_interval_ms
    c.state.set_group_timeouts("g", 3 * CONFIG.consumer_group_session_timeout_ms, 123)
    assert c.beat("a", 2).heartbeat_interval_ms == 123
    c.advance(CONFIG.consumer_group_session_timeout_ms)
    assert c.beat("a", 2).error is ErrorCode.NONE  # its session is the group's, three times longer


def test_the_group_has_each_declared_group_at_the_largest_size_a_member_gives(c: Tasks) -> None:
    c.join("a", {"work": 2})
    b = c.join("b", {"work": 4, "other": 1})
    group = c.describe()
    assert group.group_epoch == 3
    targets = {
        m.member_id: {(n, p) for _, n, parts in m.target_assignment for p in parts} for m in group.members
    }
    assert set().union(*targets.values()) == {*work(0, 1, 2, 3), ("other", 0)}
    assert ("other", 0) in targets["b"]  # only b declared it
    assert b.error is ErrorCode.NONE


def test_the_payload_reaches_the_assignor_and_a_new_one_is_a_new_group_epoch(c: Tasks) -> None:
    c.join("a", server_assignor="chosen", metadata=b"chosen")
    c.join("b", server_assignor="chosen", metadata=b"")
    assert c.describe().group_epoch == 3
    a = c.beat("a", 2, work(0, 1, 2, 3, 4, 5), metadata=b"")  # a steps back ...
    assert c.describe().group_epoch == 4
    assert c.names(a) == set()  # ... and must give everything up
    assert c.beat("a", 2, set()).member_epoch == 4
    b = c.beat("b", 3, set(), metadata=b"chosen")  # b steps up: a new epoch, and everything
    assert (b.member_epoch, c.names(b)) == (5, work(0, 1, 2, 3, 4, 5))
    b = c.beat("b", 5, work(0, 1, 2, 3, 4, 5), metadata=b"chosen")
    assert (b.member_epoch, b.assignment) == (5, None)  # the same payload again: nothing new
    assert c.describe().group_epoch == 5


def test_groups_of_other_protocol_types_are_kept_apart(c: Tasks) -> None:
    c.join("a")
    mixed = c.beat("x", 0, (), protocol_type="consumer", subscribed_topic_names=("t",), resources=None)
    assert mixed.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    unknown = c.join("y", group_id="h", protocol_type="no-such-type")
    assert unknown.error is ErrorCode.UNSUPPORTED_ASSIGNOR
    assert "no-such-type" in (unknown.message or "")
    classic = c.request(
        JoinGroup(
            group_id="g",
            member_id="",
            group_instance_id=None,
            client_id="classic",
            client_host="127.0.0.1",
            require_known_member_id=False,
            session_timeout_ms=6000,
            rebalance_timeout_ms=6000,
            protocol_type="consumer",
            protocols=(("range", b""),),
        )
    )
    assert isinstance(classic, JoinGroupResult) and classic.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (None, "Resources must be non-null"),
        ({"": 1}, "distinct, non-empty names"),
        ({"work": 0}, "at least one resource"),
        ({"work": MAX_GROUP_RESOURCES + 1}, f"at most {MAX_GROUP_RESOURCES}"),
    ],
)
def test_declarations_are_validated(c: Tasks, resources: dict[str, int] | None, message: str) -> None:
    result = c.beat("a", 0, (), resources=resources)
    assert result.error is ErrorCode.INVALID_REQUEST
    assert message in (result.message or "")
    assert "g" not in c.state._consumer_groups  # nothing was created


def test_they_are_listed_with_their_protocol_type_and_their_commits_fenced_by_epoch(c: Tasks) -> None:
    c.join("a")
    listed = c.request(ListGroups(states=frozenset(), types=frozenset({"incremental"})))
    assert isinstance(listed, ListGroupsResult)
    assert [(g.group_id, g.protocol_type, g.group_type) for g in listed.groups] == [
        ("g", TYPE, "incremental")
    ]
    described = c.request(ConsumerGroupDescribe(group_ids=("g",)))
    assert isinstance(described, ConsumerGroupDescribeResult)
    assert described.groups[0].error is ErrorCode.GROUP_ID_NOT_FOUND  # not a consumer group

    def commit(epoch: int) -> ErrorCode:
        done = CommittedOffset(topic="work", partition=0, offset=1)
        result = c.request(
            OffsetCommit(
                group_id="g", generation_id=epoch, member_id="a", group_instance_id=None, offsets=(done,)
            )
        )
        assert isinstance(result, OffsetCommitResult)
        ((_, _, error),) = result.errors
        return error

    assert commit(2) is ErrorCode.NONE
    assert commit(1) is ErrorCode.STALE_MEMBER_EPOCH


def test_they_survive_a_restart_of_the_coordinator(tmp_path: Path) -> None:
    c = Tasks()
    store = SqliteStore(tmp_path)

    def step(request: object) -> object:
        fx = c.state.handle(next(c.refs), request, c.now)  # type: ignore[arg-type]
        store.apply(fx.writes)
        ((_, result),) = fx.replies
        return result

    c.request = step  # type: ignore[method-assign]
    c.join("a", {"work": 4}, server_assignor="chosen", metadata=b"chosen")
    c.join("b", {"work": 6}, metadata=b"")
    before = c.describe()
    store.close()

    restarted = Tasks()
    store = SqliteStore(tmp_path)
    topics, groups, offsets = store.load()
    restarted.state.restore(
        topics=topics, groups=groups, offsets=offsets, consumer_groups=store.load_consumer_groups(), now_ms=0
    )
    assert restarted.describe() == before
    assert restarted.state._consumer_groups.protocol_type("g") == TYPE
    # The declared sizes and payloads came back: b stepping up is a change, repeating is not.
    assert restarted.beat("b", 3, set(), metadata=b"").error is ErrorCode.NONE
    assert restarted.describe().group_epoch == before.group_epoch
    restarted.beat("b", 3, set(), metadata=b"chosen")
    assert restarted.describe().group_epoch == before.group_epoch + 1
    store.close()


class ResourceReconciliation(Reconciliation):
    """test_consumer_group.py's model, through GroupHeartbeat: two declared resource groups."""

    def __init__(self) -> None:
        super().__init__()
        self.c = Tasks()
        self.c.create({"t": 6, "u": 3})  # topics named as the resources, for offset commits
        self.without_shortcut = None  # the model's comparison is of consumer groups

    def _beat(self, member: Member, report_changes_only: bool = False, full: bool = False) -> None:
        c = self.c
        assert isinstance(c, Tasks)
        joining = member.epoch == 0
        result = c.beat(
            member.member_id,
            member.epoch,
            () if joining else member.owned,
            resources={"t": 6, "u": 3} if joining or full else None,  # full: as this project's members
        )
        if result.error is not ErrorCode.NONE:
            assert result.error in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID), result
            member.owned, member.epoch, member.joined = set(), 0, False
            return
        self._took(member, result, c.names(result))


ResourceReconciliation.TestCase.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
test_reconciliation_of_resources_never_gives_one_to_two_members = ResourceReconciliation.TestCase


# --- on the wire ---------------------------------------------------------------------------


def test_the_coordinator_serves_group_heartbeat_on_the_wire(coordinator: EmbeddedCoordinator) -> None:
    sock = _connect(coordinator.bootstrap_servers)
    try:
        versions = _call(
            sock,
            ApiVersionsRequest(version=3, client_software_name="t", client_software_version="1"),
            ApiVersionsResponse,
        )
        assert any(api.api_key == ApiKey.GROUP_HEARTBEAT for api in versions.api_keys)
        member = str(uuid.uuid4())

        def heartbeat(epoch: int, owned: list[int] | None, **fields: Any) -> Any:
            resources = GroupHeartbeatRequest.Resources
            request = GroupHeartbeatRequest(
                version=0,
                group_id="wire",
                protocol_type="leader",
                member_id=member,
                member_epoch=epoch,
                owned_resources=None
                if owned is None
                else [resources(name="leadership", indexes=owned)] * bool(owned),
                **fields,
            )
            return _call(sock, request, GroupHeartbeatResponse)

        declared = [GroupHeartbeatRequest.ResourceGroup(name="leadership", count=1)]
        joined = heartbeat(0, [], rebalance_timeout_ms=5000, resources=declared, metadata=b"")
        # The leader plugin's server-side assignor: a payload it cannot read is a member that
        # cannot lead, so nobody leads; the member is in the group all the same.
        assert (joined.error_code, joined.member_epoch) == (ErrorCode.NONE, 2), joined
        assert joined.assignment is not None and joined.assignment.resources == []
        assert joined.heartbeat_interval_ms > 0
        assert heartbeat(8, []).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert heartbeat(-1, None).error_code == ErrorCode.NONE
    finally:
        sock.close()


# --- the member side's checks ----------------------------------------------------------------


class Tasker(Coordinator):
    """A member of protocol type ``tasks`` that declares what it is given."""

    def __init__(self, *args: Any, subscription: GroupSubscription | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.subscription = subscription or GroupSubscription(resources={"work": 2})

    def protocol_type(self) -> str:
        return TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("tasks", b"")]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        return {}

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        pass

    def group_subscription(self) -> GroupSubscription:
        return self.subscription


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"": 1}, "resource group names must be non-empty strings"),
        ({"work": 0}, "count must be an integer >= 1"),
        ({"work": True}, "count must be an integer >= 1"),
        ({"work": MAX_GROUP_RESOURCES + 1}, f"at most {MAX_GROUP_RESOURCES} resources"),
    ],
)
def test_a_subscription_is_checked_when_it_is_made(resources: dict[str, int], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        GroupSubscription(resources=resources)


def test_a_member_asking_for_the_wrong_protocol_or_declaring_nothing_is_told_so_at_once() -> None:
    consumer_style = Tasker("g", "127.0.0.1:9", group_protocol="consumer")
    with pytest.raises(ConfigurationError, match="group_protocol='incremental'"):
        consumer_style.poll(0)
    nothing = Tasker("g", "127.0.0.1:9", group_protocol="incremental", subscription=GroupSubscription())
    with pytest.raises(ConfigurationError, match="must declare its resources"):
        nothing.poll(0)


def test_a_member_that_cannot_ask_the_coordinator_which_protocol_it_serves_says_so_in_time() -> None:
    # Nothing listens on port 9: the member cannot learn whether GroupHeartbeat is served.
    member = Tasker("g", "127.0.0.1:9", group_protocol="incremental", request_timeout_ms=1000)
    started = time.monotonic()
    try:
        with pytest.raises(GroupTimeoutError, match="which group protocol it serves within 1000 ms"):
            member.poll(0)
        assert time.monotonic() - started < 10
        assert member.group_protocol == "incremental"  # not decided: asked again at the next poll
    finally:
        member.close()
