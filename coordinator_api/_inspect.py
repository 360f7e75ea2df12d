"""Looking at groups from outside: list them, and describe one with its payloads in words.

Works against the embedded coordinator and a Kafka cluster alike (ListGroups, FindCoordinator,
DescribeGroups over kafka-python's connections). kafka-python's own admin client reads every
member's bytes as consumer-protocol payloads and fails on other protocols, so this reads them
raw and lets the ``coordinator_api_register_payload_decoders`` plugins put them in words. A
group of the incremental protocol is described by the embedded coordinator's GroupDescribe (any
protocol type), else by ConsumerGroupDescribe (Kafka 4's consumer groups).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kafka.errors import IncompatibleBrokerVersion, UnsupportedVersionError
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest

from coordinator_api._errors import GroupError
from coordinator_api._membership import _driver
from coordinator_api._plugins._registry import PayloadDecoderRegistry
from coordinator_api._protocol import ErrorCode, error_name
from coordinator_api.server.schemas import ConsumerGroupDescribeRequest, GroupDescribeRequest


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


def describe_group(bootstrap_servers: str, group_id: str, *, timeout_ms: int = 10_000) -> GroupDescription:
    """One group, its members and their raw metadata and assignments."""
    conn = _Connection(bootstrap_servers, timeout_ms)
    try:
        node = conn.find_coordinator(group_id).node
        response = conn.send(
            DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False), node
        )
        (group,) = response.groups
        # Kafka 4 answers GROUP_ID_NOT_FOUND for a group of the incremental protocol ("not a
        # classic group"); the embedded coordinator describes it as Dead.
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
    coordinator describes none)."""
    for request in (
        GroupDescribeRequest(group_ids=[group_id]),
        ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False),
    ):
        try:
            (group,) = conn.send(request, node).groups
        except (IncompatibleBrokerVersion, UnsupportedVersionError):
            continue  # not served by this coordinator: Kafka has no GroupDescribe
        if group.error_code:
            return None
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
                )
                for m in group.members
            ),
        )
    return None


def render_group(description: GroupDescription, decoders: PayloadDecoderRegistry) -> str:
    """The group as text, each payload in words when a plugin can read it."""
    d = description
    if d.group_epoch is None:
        head = f"protocol {d.protocol or '-'}"
    else:
        head = f"incremental protocol, assignor {d.protocol or '-'}, group epoch {d.group_epoch}"
    lines = [
        f"group {d.group_id}: {d.state}, protocol type {d.protocol_type or '-'}, {head}, "
        f"{len(d.members)} member(s)"
    ]
    for m in d.members:
        static = f" (instance {m.group_instance_id})" if m.group_instance_id else ""
        epoch = f", epoch {m.member_epoch}" if m.member_epoch is not None else ""
        lines.append(f"  {m.member_id}{static} {m.client_id}@{m.client_host}{epoch}")
        if m.subscribed:
            lines.append(f"    subscribed: {', '.join(m.subscribed)}")
        if m.metadata:
            lines.append(f"    metadata:   {_words(decoders.describe_metadata, d, m.metadata)}")
        if m.assignment:
            lines.append(f"    assignment: {_words(decoders.describe_assignment, d, m.assignment)}")
        if m.assigned is not None:
            lines.append(f"    assigned:   {_resources(m.assigned)}")
    return "\n".join(lines)


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


def group_document(description: GroupDescription, decoders: PayloadDecoderRegistry) -> dict[str, Any]:
    """The group as ``coordinator-api groups GROUP --json`` prints it (a stable schema,
    docs/coordinator.md): payloads in words and as base64."""
    d = description
    return {
        "group_id": d.group_id,
        "state": d.state,
        "protocol_type": d.protocol_type,
        "protocol": d.protocol,
        "group_epoch": d.group_epoch,
        "members": [
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
            }
            for m in d.members
        ],
    }


def _words(describe: Any, group: GroupDescription, payload: bytes) -> str:
    try:
        return str(describe(group.protocol_type, group.protocol, payload))
    except Exception as exc:  # a decoder must not stop the listing of the others
        return f"{len(payload)} bytes (the {group.protocol_type} decoder failed: {exc!r})"
