"""The thin driver: runs the member state machine over kafka-python's connections.

Threads:

* kafka-python's IO thread does the network (its ``NetworkSelector``); responses arrive there
  and are fed to the machine.
* The driver's own thread (``coordinator-heartbeat-<group>``) wakes at the machine's deadlines
  so heartbeats, retries and the lease run while the application does other work; it also runs
  the application's ``on_lost`` hook, which must therefore be quick and thread-safe.
* The application's thread runs every other callback, inside ``poll``/``ensure_active_group``,
  by taking the actions queued for it here.

All access to the machine holds one lock; no application code runs under it.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest

from coordinator_api._membership import _machine as m
from coordinator_api._plugins._events import MemberEventKind
from coordinator_api._protocol import ErrorCode
from coordinator_api._types import JoinedMember

log = logging.getLogger("coordinator_api.membership")

_APP_ACTIONS = (m.PrepareJoin, m.Assign, m.Complete, m.Fail)


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class MemberDriver:
    """Owns the machine, the connections and the heartbeat thread of one member."""

    def __init__(
        self,
        settings: m.MemberSettings,
        *,
        protocol_type: str,
        connection_options: dict[str, Any],
        on_lost: Callable[[m.Lost], None],
        request_timeout_ms: int,
        observe: Callable[[MemberEventKind, int, str, str | None, float | None, str], None] | None = None,
    ) -> None:
        self.settings = settings
        self._protocol_type = protocol_type
        self._on_lost = on_lost
        # (kind, generation, member id, protocol, duration ms, detail) for observability hooks
        self._observe = observe
        self._request_timeout_ms = request_timeout_ms
        self.machine = m.MemberMachine(settings)
        self.lock = threading.Condition()
        self.app_actions: collections.deque[m.Action] = collections.deque()
        self._closed = False
        self._coordinator_node: str | None = None
        self._net = NetworkSelector(client_id=connection_options.get("client_id", "coordinator-api"))
        self._manager = KafkaConnectionManager(self._net, **connection_options)
        self._thread = threading.Thread(
            target=self._run, name=f"coordinator-heartbeat-{settings.group_id}", daemon=True
        )
        self._net.start()
        self._thread.start()

    # --- feeding the machine --------------------------------------------------------------------

    def submit(self, event: m.Event) -> None:
        """Feed one event (any thread) and carry out what it leads to."""
        lost: list[m.Lost] = []
        network: list[m.Action] = []
        with self.lock:
            if self._closed:
                return
            now = now_ms()
            actions = self.machine.handle(event, now)
            generation = self.machine.generation()
            if log.isEnabledFor(logging.DEBUG) and (actions or not isinstance(event, m.Tick)):
                log.debug("group %s: %r -> %r", self.settings.group_id, event, actions)
            for action in actions:
                if isinstance(action, m.Lost):
                    lost.append(action)
                elif isinstance(action, _APP_ACTIONS):
                    self.app_actions.append(action)
                else:
                    network.append(action)
            self.lock.notify_all()
        # Outside the lock: a response may complete at once and feed the machine again.
        for action in network:
            self._send(action)
        if self._observe is not None:
            if isinstance(event, m.JoinAnswered) and event.error == ErrorCode.NONE:
                self._observe(
                    "joined",
                    generation.generation_id,
                    generation.member_id,
                    generation.protocol_name,
                    float(now - event.sent_at),
                    "",
                )
            for action in network:
                if isinstance(action, m.SendLeaveGroup):
                    self._observe(
                        "left", generation.generation_id, action.member_id, None, None, action.reason
                    )
            for action in lost:
                self._observe("lost", action.generation_id, action.member_id, None, None, action.reason)
        for action in lost:
            log.warning(
                "group %s member %s: assignment lost: %s",
                self.settings.group_id,
                action.member_id,
                action.reason,
            )
            self._on_lost(action)

    def _run(self) -> None:
        while True:
            with self.lock:
                if self._closed:
                    return
                deadline = self.machine.next_deadline()
                # At least a millisecond: a deadline that is due is handled by the Tick below.
                wait_s = 1.0 if deadline is None else max((deadline - now_ms()) / 1000, 0.001)
                self.lock.wait(min(wait_s, 1.0))
                if self._closed:
                    return
            self.submit(m.Tick())

    # --- network --------------------------------------------------------------------------------

    def _send(self, action: m.Action) -> None:
        s = self.settings
        sent_at = now_ms()
        if isinstance(action, m.FindCoordinator):
            self._request(self._find_coordinator(), m.RequestKind.FIND, lambda _r: m.CoordinatorFound())
        elif isinstance(action, m.SendJoinGroup):
            request = JoinGroupRequest(
                group_id=s.group_id,
                session_timeout_ms=s.session_timeout_ms,
                rebalance_timeout_ms=s.rebalance_timeout_ms,
                member_id=action.member_id,
                group_instance_id=s.group_instance_id,
                protocol_type=self._protocol_type,
                protocols=[
                    JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=metadata)
                    for name, metadata in action.protocols
                ],
                reason=action.reason or None,
            )
            self._request(
                self._to_coordinator(request, s.rebalance_timeout_ms + 5000),
                m.RequestKind.JOIN,
                lambda r: m.JoinAnswered(
                    sent_at,
                    r.error_code,
                    r.generation_id,
                    r.protocol_name,
                    r.leader,
                    r.member_id,
                    tuple(
                        JoinedMember(x.member_id, x.group_instance_id, bytes(x.metadata)) for x in r.members
                    ),
                ),
            )
        elif isinstance(action, m.SendSyncGroup):
            request = SyncGroupRequest(
                group_id=s.group_id,
                generation_id=action.generation_id,
                member_id=action.member_id,
                group_instance_id=s.group_instance_id,
                protocol_type=self._protocol_type,
                protocol_name=action.protocol_name,
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=member, assignment=data)
                    for member, data in action.assignments
                ],
            )
            self._request(
                self._to_coordinator(request, s.rebalance_timeout_ms + 5000),
                m.RequestKind.SYNC,
                lambda r: m.SyncAnswered(sent_at, r.error_code, bytes(r.assignment)),
            )
        elif isinstance(action, m.SendHeartbeat):
            request = HeartbeatRequest(
                group_id=s.group_id,
                generation_id=action.generation_id,
                member_id=action.member_id,
                group_instance_id=s.group_instance_id,
            )
            # A heartbeat not answered within the session is useless: fail it and reconnect.
            self._request(
                self._to_coordinator(request, s.session_timeout_ms),
                m.RequestKind.HEARTBEAT,
                lambda r: m.HeartbeatAnswered(sent_at, r.error_code),
            )
        elif isinstance(action, m.SendLeaveGroup):
            request = LeaveGroupRequest(
                group_id=s.group_id,
                member_id=action.member_id,
                members=[
                    LeaveGroupRequest.MemberIdentity(
                        member_id=action.member_id,
                        group_instance_id=s.group_instance_id,
                        reason=action.reason,
                    )
                ],
            )
            self._request(
                self._to_coordinator(request, self._request_timeout_ms),
                m.RequestKind.LEAVE,
                lambda r: m.LeaveAnswered(r.error_code),
            )

    def _request(self, coro: Any, kind: m.RequestKind, on_response: Callable[[Any], m.Event]) -> None:
        future = self._manager.call_soon(coro)

        def done(response: Any) -> None:
            try:
                event = on_response(response)
            except Exception as exc:  # a response of an unexpected shape
                event = m.RequestFailed(kind, repr(exc))
            self.submit(event)

        def failed(exc: Any) -> None:
            if kind is m.RequestKind.FIND:
                self.submit(m.CoordinatorLookupFailed(repr(exc)))
            else:
                self._coordinator_node = None
                self.submit(m.RequestFailed(kind, repr(exc)))

        future.add_callback(done)
        future.add_errback(failed)

    async def _find_coordinator(self) -> None:
        group = self.settings.group_id
        if not self._manager.bootstrapped:
            await self._manager.bootstrap_async(timeout_ms=self._request_timeout_ms)
        node = self._manager.least_loaded_node()
        if node is None:
            raise ConnectionError("no broker is reachable")
        # All fields set: the connection negotiates the version (v0-3 key, v4+ coordinator_keys).
        request = FindCoordinatorRequest(key=group, key_type=0, coordinator_keys=[group])
        response = await self._manager.send(request, node_id=node)
        result = response.coordinators[0] if response.coordinators else response
        if result.error_code != 0:
            raise ConnectionError(f"FindCoordinator answered error code {result.error_code}")
        self._coordinator_node = self._manager.cluster.add_coordinator(result, 0, group)

    async def _to_coordinator_send(self, request: Any, timeout_ms: int) -> Any:
        node = self._coordinator_node
        if node is None:
            raise ConnectionError("the coordinator is not known")
        return await self._manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

    def _to_coordinator(self, request: Any, timeout_ms: int) -> Any:
        return lambda: self._to_coordinator_send(request, timeout_ms)

    # --- requests the application makes on its own thread -----------------------------------------

    def call(self, request: Any, *, to_coordinator: bool) -> Any:
        """Send one request and wait for its answer (application thread; a protocol plugin's
        own requests, e.g. Metadata for its assignor or OffsetCommit)."""

        async def send() -> Any:
            if not self._manager.bootstrapped:
                await self._manager.bootstrap_async(timeout_ms=self._request_timeout_ms)
            if to_coordinator and self._coordinator_node is None:
                # A member that has not joined yet (e.g. reading committed offsets first) looks
                # the coordinator up itself rather than asking any broker.
                await self._find_coordinator()
            node = self._coordinator_node if to_coordinator else self._manager.least_loaded_node()
            if node is None:
                raise ConnectionError("no broker (or coordinator) is known yet")
            return await self._manager.send(
                request, node_id=node, request_timeout_ms=self._request_timeout_ms
            )

        return self._manager.run(send)

    # --- shutdown -------------------------------------------------------------------------------

    def wait_for_leave(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with self.lock:
            while m.RequestKind.LEAVE in self.machine.in_flight and time.monotonic() < deadline:
                self.lock.wait(max(deadline - time.monotonic(), 0))

    def close(self) -> None:
        with self.lock:
            self._closed = True
            self.lock.notify_all()
        self._thread.join(timeout=5)
        try:
            self._manager.close()
        finally:
            self._net.stop(timeout_ms=2000)
