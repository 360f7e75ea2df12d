"""Looking at groups from outside: list them, and describe one with its payloads in words.

Works against the embedded coordinator and a Kafka cluster alike (ListGroups, FindCoordinator,
DescribeGroups over kafka-python's connections). kafka-python's own admin client reads every
member's bytes as consumer-protocol payloads and fails on other protocols, so this reads them
raw and lets the ``coordinator_api_register_payload_decoders`` plugins put them in words.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.admin import DescribeGroupsRequest, ListGroupsRequest

from coordinator_api._errors import GroupError
from coordinator_api._membership import _driver
from coordinator_api._plugins._registry import PayloadDecoderRegistry


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


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[DescribedMember, ...]


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
    finally:
        conn.close()
    (group,) = response.groups
    if group.error_code:
        raise GroupError(
            f"DescribeGroups answered error code {group.error_code}", group_id=group_id, member_id=""
        )
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


def render_group(description: GroupDescription, decoders: PayloadDecoderRegistry) -> str:
    """The group as text, each payload in words when a plugin can read it."""
    d = description
    lines = [
        f"group {d.group_id}: {d.state}, protocol type {d.protocol_type or '-'}, "
        f"protocol {d.protocol or '-'}, {len(d.members)} member(s)"
    ]
    for m in d.members:
        static = f" (instance {m.group_instance_id})" if m.group_instance_id else ""
        lines.append(f"  {m.member_id}{static} {m.client_id}@{m.client_host}")
        if m.metadata:
            lines.append(f"    metadata:   {_words(decoders.describe_metadata, d, m.metadata)}")
        if m.assignment:
            lines.append(f"    assignment: {_words(decoders.describe_assignment, d, m.assignment)}")
    return "\n".join(lines)


def group_document(description: GroupDescription, decoders: PayloadDecoderRegistry) -> dict[str, Any]:
    """The group as ``coordinator-api groups GROUP --json`` prints it (a stable schema,
    docs/coordinator.md): payloads in words and as base64."""
    d = description
    return {
        "group_id": d.group_id,
        "state": d.state,
        "protocol_type": d.protocol_type,
        "protocol": d.protocol,
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
            }
            for m in d.members
        ],
    }


def _words(describe: Any, group: GroupDescription, payload: bytes) -> str:
    try:
        return str(describe(group.protocol_type, group.protocol, payload))
    except Exception as exc:  # a decoder must not stop the listing of the others
        return f"{len(payload)} bytes (the {group.protocol_type} decoder failed: {exc!r})"
