"""The thin driver: runs a member state machine on threads, with kafka-python's connections at
the edge.

Its contract with a machine is :class:`MemberStateMachine`: ``handle(event, now_ms)`` returns
actions, ``next_deadline()`` says when the machine next needs a :class:`~._machine.Tick`, and
``generation()`` names the generation. Its contract with the network is :class:`Wire`: send the
request for a network action and feed the answer (or the failure) back as an event.
:class:`ClassicWire` is that translator for the classic protocol over kafka-python's connections
and message classes; a second kind of machine brings its own wire and runs in the same driver.

Threads:

* kafka-python's IO thread does the network (its ``NetworkSelector``); answers arrive there and
  are fed to the machine.
* The driver's own thread (``coordinator-heartbeat-<group>``) wakes at the machine's deadlines
  so heartbeats, retries and the lease run while the application does other work; it also runs
  the ``on_lost`` hook, which must therefore be quick and thread-safe.
* The application's thread runs every other callback: it takes the actions queued for it here
  through the :class:`~coordinator_api._membership._session.MembershipSession` that owns this
  driver.

All access to the machine holds one lock; no application code and no network call runs under
it. Time comes from one clock, which the session that owns the driver hands it.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeVar

from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    SyncGroupRequest,
)
from kafka.protocol.metadata import FindCoordinatorRequest

from coordinator_api._membership import _incremental as i
from coordinator_api._membership import _machine as m
from coordinator_api._plugins._events import MemberEventKind
from coordinator_api._protocol import ErrorCode
from coordinator_api._types import Generation, JoinedMember

log = logging.getLogger("coordinator_api.membership")

Clock = Callable[[], int]
"""Milliseconds on a monotonic scale (any origin): the membership layer's one clock."""

# Connection settings passed through to kafka-python's connection layer (security included).
CONNECTION_OPTIONS: Final = frozenset(KafkaConnectionManager.DEFAULT_CONFIG) - {
    "bootstrap_servers",
    "client_id",
}

ApplicationAction = m.PrepareJoin | m.Assign | m.Complete | i.Reconcile | m.Fail
"""The actions the application's thread carries out: the user's callbacks, or an error to raise."""

_APPLICATION_ACTIONS = (m.PrepareJoin, m.Assign, m.Complete, i.Reconcile, m.Fail)

EventT = TypeVar("EventT", m.Event, i.Event)
"""What a member machine is fed: the classic protocol's events or the incremental one's."""
_Fed_contra = TypeVar("_Fed_contra", contravariant=True)
_Delivered_co = TypeVar("_Delivered_co", covariant=True)

Observer = Callable[[MemberEventKind, int, str, str | None, float | None, str], None]
"""(kind, generation, member id, protocol, duration ms, detail) for the observability hooks."""


def monotonic_ms() -> int:
    """The default clock: ``time.monotonic()`` in milliseconds."""
    return int(time.monotonic() * 1000)


class MemberStateMachine(Protocol[_Fed_contra]):
    """What the driver needs of a sans-IO member machine: the classic protocol's
    (:class:`~._machine.MemberMachine`) or the incremental one's
    (:class:`~._incremental.IncrementalMachine`). Both take :class:`~._machine.Tick`."""

    def handle(self, event: _Fed_contra, now: int) -> list[m.Action]: ...

    def next_deadline(self) -> int | None: ...

    def generation(self) -> Generation: ...


class Wire(Protocol[_Delivered_co]):
    """The network edge of a member: the machine's network actions as requests, their answers
    as events."""

    def send(self, action: m.Action, sent_at: int, deliver: Callable[[_Delivered_co], object]) -> None:
        """Send the request for ``action`` (issued at ``sent_at`` on the driver's clock) and,
        later and on any thread, ``deliver`` the event its answer or failure makes."""

    def call(self, request: Any, *, to_coordinator: bool) -> Any:
        """Send one request of the application's own and wait for its answer."""

    def close(self) -> None:
        """Release the connections."""


class MemberDriver(Generic[EventT]):
    """Runs one member machine: feeds it events under one lock, queues the actions meant for the
    application's thread, hands network actions to the wire and wakes the machine at its
    deadlines. Its owner (the session) reads ``machine`` and ``app_actions`` under ``lock``."""

    def __init__(
        self,
        machine: MemberStateMachine[EventT],
        wire: Wire[EventT],
        *,
        name: str,
        clock: Clock,
        on_lost: Callable[[m.Lost], None],
        observe: Observer | None = None,
    ) -> None:
        self.machine: MemberStateMachine[EventT] = machine
        self.clock = clock
        self.lock = threading.Condition()
        self.app_actions: collections.deque[ApplicationAction] = collections.deque()
        self.closed = False
        self._name = name
        self._wire: Wire[EventT] = wire
        self._on_lost = on_lost
        self._observe = observe
        self._thread = threading.Thread(target=self._run, name=f"coordinator-heartbeat-{name}", daemon=True)
        self._thread.start()

    # --- feeding the machine --------------------------------------------------------------------

    def submit(self, event: EventT, *, only_if: Callable[[], bool] | None = None) -> bool:
        """Feed one event (any thread) and carry out what it leads to.

        :param only_if: checked under the lock first; the event is dropped if it says False (an
            answer to a request the machine no longer waits for).
        :returns: whether the machine was given the event.
        """
        lost: list[m.Lost] = []
        network: list[m.Action] = []
        with self.lock:
            if self.closed or (only_if is not None and not only_if()):
                return False
            now = self.clock()
            before = self.machine.generation()
            actions = self.machine.handle(event, now)
            generation = self.machine.generation()
            if log.isEnabledFor(logging.DEBUG) and (actions or not isinstance(event, m.Tick | m.Polled)):
                log.debug("group %s: %r -> %r", self._name, event, actions)
            for action in actions:
                if isinstance(action, m.Lost):
                    lost.append(action)
                elif isinstance(action, _APPLICATION_ACTIONS):
                    self.app_actions.append(action)
                else:
                    network.append(action)
            self.lock.notify_all()
        # Outside the lock: an answer may come at once and feed the machine again.
        for action in network:
            self._wire.send(action, now, self.submit)
        if self._observe is not None:
            # A successful JoinGroup, or the first successful ConsumerGroupHeartbeat.
            answer = event if isinstance(event, m.JoinAnswered | i.GroupHeartbeatAnswered) else None
            first = isinstance(event, m.JoinAnswered) or before.generation_id < 0
            if answer is not None and first and answer.error == 0 and generation.generation_id >= 0:
                self._observe(
                    "joined",
                    generation.generation_id,
                    generation.member_id,
                    generation.protocol_name,
                    float(now - answer.sent_at),
                    "",
                )
            for action in network:
                if isinstance(action, m.SendLeaveGroup):
                    self._observe(
                        "left", generation.generation_id, action.member_id, None, None, action.reason
                    )
                elif isinstance(action, i.SendGroupHeartbeat) and action.member_epoch < 0:
                    self._observe("left", before.generation_id, action.member_id, None, None, "")
            for action in lost:
                self._observe("lost", action.generation_id, action.member_id, None, None, action.reason)
        for action in lost:
            log.warning(
                "group %s member %s: assignment lost: %s", self._name, action.member_id, action.reason
            )
            self._on_lost(action)
        return True

    def _run(self) -> None:
        while True:
            with self.lock:
                if self.closed:
                    return
                deadline = self.machine.next_deadline()
                # At least a millisecond: a deadline that is due is handled by the Tick below.
                wait_s = 1.0 if deadline is None else max((deadline - self.clock()) / 1000, 0.001)
                self.lock.wait(min(wait_s, 1.0))
                if self.closed:
                    return
            self.submit(m.Tick())

    # --- the application's own requests and shutdown ----------------------------------------------

    def call(self, request: Any, *, to_coordinator: bool) -> Any:
        """Send one request and wait for its answer (application thread)."""
        return self._wire.call(request, to_coordinator=to_coordinator)

    def close(self) -> None:
        """Stop the heartbeat thread and release the connections, without leaving. Idempotent."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            self.lock.notify_all()
        self._thread.join(timeout=5)
        self._wire.close()


# --- kafka-python's connections ----------------------------------------------------------------------


@dataclass(frozen=True)
class FoundCoordinator:
    """A FindCoordinator answer.

    :ivar broker_id: the coordinating broker's node id, as the cluster names it.
    :ivar node: the node id kafka-python's connections use for it: a dedicated connection, as
        Kafka's clients keep one for the coordinator.
    """

    broker_id: int
    node: str


class CoordinatorNotFoundError(ConnectionError):
    """FindCoordinator answered an error (e.g. COORDINATOR_NOT_AVAILABLE while a Kafka cluster
    is still electing one); asking again later may succeed."""

    def __init__(self, group_id: str, error_code: int) -> None:
        super().__init__(f"FindCoordinator answered error code {error_code}")
        self.group_id = group_id
        self.error_code = error_code


async def find_coordinator(
    manager: KafkaConnectionManager, group_id: str, *, timeout_ms: int
) -> FoundCoordinator:
    """Bootstrap if needed, ask the least loaded broker which broker coordinates ``group_id`` and
    register it with ``manager`` (runs on kafka-python's IO thread).

    :raises ConnectionError: no broker is reachable.
    :raises CoordinatorNotFoundError: FindCoordinator answered an error.
    """
    if not manager.bootstrapped:
        await manager.bootstrap_async(timeout_ms=timeout_ms)
    node = manager.least_loaded_node()
    if node is None:
        raise ConnectionError("no broker is reachable")
    # All fields set: the connection negotiates the version (v0-3 key, v4+ coordinator_keys).
    request = FindCoordinatorRequest(key=group_id, key_type=0, coordinator_keys=[group_id])
    response = await manager.send(request, node_id=node, request_timeout_ms=timeout_ms)
    result = response.coordinators[0] if response.coordinators else response
    if result.error_code:
        raise CoordinatorNotFoundError(group_id, result.error_code)
    return FoundCoordinator(int(result.node_id), manager.cluster.add_coordinator(result, 0, group_id))


class CoordinatorConnection(Generic[EventT]):
    """kafka-python's connections to a group's coordinator, shared by the protocols' wires:
    FindCoordinator, requests to the coordinator with their answers delivered as events, and
    the application's own requests."""

    def __init__(self, group_id: str, *, connection_options: dict[str, Any], request_timeout_ms: int) -> None:
        self._group_id = group_id
        self._request_timeout_ms = request_timeout_ms
        self._coordinator_node: str | None = None
        self._net = NetworkSelector(client_id=connection_options.get("client_id", "coordinator-api"))
        self._manager = KafkaConnectionManager(self._net, **connection_options)
        self._net.start()

    def find(self, deliver: Callable[[EventT], object]) -> None:
        """Look the coordinator up; deliver CoordinatorFound or CoordinatorLookupFailed."""
        self._request(self._find_coordinator, m.RequestKind.FIND, lambda _r: m.CoordinatorFound(), deliver)

    def _request(
        self,
        coro: Any,
        kind: m.RequestKind,
        on_response: Callable[[Any], EventT],
        deliver: Callable[[EventT], object],
    ) -> None:
        future = self._manager.call_soon(coro)

        def done(response: Any) -> None:
            try:
                event = on_response(response)
            except Exception as exc:  # a response of an unexpected shape
                event = m.RequestFailed(kind, repr(exc))
            deliver(event)

        def failed(exc: Any) -> None:
            if kind is m.RequestKind.FIND:
                fatal = (
                    ErrorCode.GROUP_AUTHORIZATION_FAILED.name
                    if isinstance(exc, CoordinatorNotFoundError)
                    and exc.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
                    else ""
                )
                deliver(m.CoordinatorLookupFailed(repr(exc), fatal))
            else:
                self._coordinator_node = None
                deliver(m.RequestFailed(kind, repr(exc)))

        future.add_callback(done)
        future.add_errback(failed)

    async def _find_coordinator(self) -> None:
        found = await find_coordinator(self._manager, self._group_id, timeout_ms=self._request_timeout_ms)
        self._coordinator_node = found.node

    async def _to_coordinator_send(self, request: Any, timeout_ms: int) -> Any:
        node = self._coordinator_node
        if node is None:
            raise ConnectionError("the coordinator is not known")
        return await self._manager.send(request, node_id=node, request_timeout_ms=timeout_ms)

    def _to_coordinator(self, request: Any, timeout_ms: int) -> Any:
        return lambda: self._to_coordinator_send(request, timeout_ms)

    def call(self, request: Any, *, to_coordinator: bool) -> Any:
        """Send one request and wait for its answer (application thread; a protocol plugin's own
        requests, e.g. Metadata for its assignor, or OffsetCommit)."""

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

    def close(self) -> None:
        try:
            self._manager.close()
        finally:
            self._net.stop(timeout_ms=2000)


class ClassicWire(CoordinatorConnection[m.Event]):
    """The classic protocol's network actions as kafka-python requests to the group's
    coordinator (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup)."""

    def __init__(
        self,
        settings: m.MemberSettings,
        *,
        protocol_type: str,
        connection_options: dict[str, Any],
        request_timeout_ms: int,
    ) -> None:
        super().__init__(
            settings.group_id, connection_options=connection_options, request_timeout_ms=request_timeout_ms
        )
        self._settings = settings
        self._protocol_type = protocol_type

    def send(self, action: m.Action, sent_at: int, deliver: Callable[[m.Event], object]) -> None:
        s = self._settings
        if isinstance(action, m.FindCoordinator):
            self.find(deliver)
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
                    bool(getattr(r, "skip_assignment", False)),
                ),
                deliver,
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
                deliver,
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
                deliver,
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
                deliver,
            )
