"""The public ``Coordinator``: subclass it to build a distributed system on Kafka's group protocol."""

from __future__ import annotations

import abc
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

import pluggy

from coordinator_api._errors import (
    CallbackError,
    ConfigurationError,
    CoordinatorClosedError,
    FencedInstanceError,
    GroupError,
    GroupJoinError,
    GroupTimeoutError,
    InvalidAssignmentError,
    InvalidMetadataError,
)
from coordinator_api._membership._group_heartbeat import CONSUMER as CONSUMER_PROTOCOL_TYPE
from coordinator_api._membership._session import (
    CONNECTION_OPTIONS,
    ApplicationAction,
    Assign,
    Complete,
    GroupSubscription,
    IncrementalSettings,
    Lost,
    MemberSettings,
    MembershipSession,
    PrepareJoin,
    Reconcile,
)
from coordinator_api._plugins._events import MemberEvent
from coordinator_api._plugins._manager import PluginHooks, installed_plugins
from coordinator_api._types import NO_GENERATION, Generation, JoinedMember

log = logging.getLogger("coordinator_api.membership")


#: The group protocols a member may ask for: Kafka's classic one (JoinGroup, SyncGroup,
#: Heartbeat; the group leader assigns); KIP-848's for consumer groups (ConsumerGroupHeartbeat;
#: the coordinator assigns, each member reconciles on its own); and ``incremental``, the same
#: reconciliation for any protocol type (GroupHeartbeat for types other than ``consumer``) where
#: the coordinator serves it, else the classic protocol, chosen when the member first joins.
GROUP_PROTOCOLS = ("classic", "consumer", "incremental")


class Coordinator(abc.ABC):
    """A member of a group coordinated by Kafka's classic group protocol (or, for consumer
    groups, and on the embedded coordinator for any protocol type, the incremental one:
    ``group_protocol="consumer"`` or ``"incremental"``).

    Subclass it and implement :meth:`protocol_type`, :meth:`metadata`,
    :meth:`perform_assignment` and :meth:`on_join_complete` (and, if useful,
    :meth:`on_join_prepare`, :meth:`on_leave_prepare`, :meth:`on_lost`). Then call
    :meth:`ensure_active_group` to join and :meth:`poll` regularly to follow rebalances; the
    same code runs against the embedded coordinator and against a Kafka cluster.

    **Threads.** :meth:`metadata`, :meth:`on_join_prepare`, :meth:`perform_assignment`,
    :meth:`on_join_complete` and :meth:`on_leave_prepare` run on the thread that calls
    :meth:`poll`, :meth:`ensure_active_group`, :meth:`leave_group` or :meth:`close`. Heartbeats
    run on a background thread, so they go on while the application works between polls; that
    thread also runs :meth:`on_lost`, so it can interrupt work in progress.

    **Errors.** A callback that raises surfaces from the call that ran it as
    :class:`~coordinator_api.CallbackError` naming the group and the member; the member recovers
    on a later call. Errors a retry cannot fix (inconsistent protocols, a full group) raise
    :class:`~coordinator_api.GroupJoinError`; another process joining with the same
    ``group_instance_id`` raises :class:`~coordinator_api.FencedInstanceError`.

    **The incremental protocol** (``group_protocol="consumer"``, KIP-848): the coordinator
    computes every member's assignment from what each subscribes to (:meth:`group_subscription`),
    and each member reconciles on its own, with no group-wide barrier: :meth:`on_reconcile`
    stops what the member gives up and then starts what it is given, and the member
    acknowledges at once. :meth:`metadata`, :meth:`perform_assignment`,
    :meth:`on_join_prepare` and :meth:`on_join_complete` are not used. The coordinator sets the
    heartbeat interval and the session; ``session_timeout_ms`` must not exceed its session
    (``group.consumer.session.timeout.ms``, 45 s on Kafka by default), since the member's lease
    is counted from it. Kafka 4's brokers serve it for the consumer protocol type only; the
    embedded coordinator serves it for every protocol type a plugin registered a server-side
    assignor for, over this project's GroupHeartbeat: with ``group_protocol="incremental"`` a
    member of such a type declares its resources (``GroupSubscription(resources=...)``) and
    reconciles in :meth:`on_reconcile_resources`; where the coordinator does not serve that API
    (a Kafka cluster) the member speaks the classic protocol instead, says so in the log, and
    :attr:`group_protocol` tells which it speaks.

    :param group_id: the group to join.
    :param bootstrap_servers: ``host:port[,host:port...]`` of the coordinator or Kafka cluster.
    :param group_instance_id: a static member id (KIP-345): a restart within the session keeps
        the member's assignment without a rebalance.
    :param session_timeout_ms: how long the coordinator waits for a heartbeat before expiring
        the member.
    :param heartbeat_interval_ms: time between heartbeats (at most a third of the session).
    :param rebalance_timeout_ms: how long the coordinator waits for members to rejoin in a
        rebalance.
    :param max_poll_interval_ms: a member whose application does not poll this long leaves the
        group; defaults to the rebalance timeout.
    :param lease_margin_ms: how long before the coordinator could give this member's assignment
        to another the member declares it lost (:meth:`on_lost`); defaults to the heartbeat
        interval or a sixth of the session, whichever is shorter.
    :param client_id: the client id sent to the coordinator (member ids start with it).
    :param retry_backoff_ms: pause before retrying after an error.
    :param request_timeout_ms: timeout for requests without a timeout of their own.
    :param group_protocol: ``"classic"`` (the default), ``"consumer"`` (the consumer protocol
        type only) or ``"incremental"`` (any protocol type; see above).
    :param plugin_manager: a plugin manager (:func:`~coordinator_api.get_plugin_manager`) whose
        ``coordinator_api_on_member_event`` hooks observe this member: joined, assigned,
        revoked, lost and left, with the generation and how long each step took. By default
        the installed plugins observe it (:func:`~coordinator_api.installed_plugins`).
    :param connection_options: further kafka-python connection settings, passed through:
        ``security_protocol``, ``ssl_cafile``, ``ssl_certfile``, ``ssl_keyfile``,
        ``ssl_context``, ``sasl_mechanism``, ``sasl_plain_username``, ``sasl_plain_password``,
        ``sasl_oauth_token_provider``, ``api_version`` and the rest of
        ``KafkaConnectionManager.DEFAULT_CONFIG``.
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        *,
        group_instance_id: str | None = None,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        rebalance_timeout_ms: int = 300_000,
        max_poll_interval_ms: int | None = None,
        lease_margin_ms: int | None = None,
        client_id: str = "coordinator-api",
        retry_backoff_ms: int = 100,
        request_timeout_ms: int = 30_000,
        group_protocol: str = "classic",
        plugin_manager: pluggy.PluginManager | None = None,
        **connection_options: Any,
    ) -> None:
        if not isinstance(group_id, str) or not group_id:
            raise ConfigurationError("group_id must be a non-empty string")
        if group_protocol not in GROUP_PROTOCOLS:
            raise ConfigurationError(
                f"group {group_id!r}: group_protocol must be one of {', '.join(GROUP_PROTOCOLS)}, "
                f"got {group_protocol!r}"
            )
        if not bootstrap_servers:
            raise ConfigurationError(f"group {group_id!r}: bootstrap_servers is empty")
        for name, value in (
            ("session_timeout_ms", session_timeout_ms),
            ("heartbeat_interval_ms", heartbeat_interval_ms),
            ("rebalance_timeout_ms", rebalance_timeout_ms),
            ("request_timeout_ms", request_timeout_ms),
        ):
            if not isinstance(value, int) or value <= 0:
                raise ConfigurationError(
                    f"group {group_id!r}: {name} must be a positive integer, got {value!r}"
                )
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ConfigurationError(
                f"group {group_id!r}: heartbeat_interval_ms ({heartbeat_interval_ms}) must be below "
                f"session_timeout_ms ({session_timeout_ms}), ideally a third of it"
            )
        # A sixth of the session at most: a coordinator that holds heartbeats (up to a third of
        # the session) delays acknowledgements, and the lease is counted from acknowledged sends.
        default_margin = min(heartbeat_interval_ms, session_timeout_ms // 6)
        margin = default_margin if lease_margin_ms is None else lease_margin_ms
        if not 0 <= margin < session_timeout_ms:
            raise ConfigurationError(
                f"group {group_id!r}: lease_margin_ms must be between 0 and the session timeout"
            )
        unknown = sorted(set(connection_options) - CONNECTION_OPTIONS)
        if unknown:
            raise ConfigurationError(f"group {group_id!r}: unknown connection option(s) {', '.join(unknown)}")
        self._group_id = group_id
        self._settings = MemberSettings(
            group_id=group_id,
            group_instance_id=group_instance_id,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            max_poll_interval_ms=max_poll_interval_ms or rebalance_timeout_ms,
            retry_backoff_ms=retry_backoff_ms,
            lease_margin_ms=margin,
        )
        self._connection_options = {
            **connection_options,
            "bootstrap_servers": bootstrap_servers,
            "client_id": client_id,
            "request_timeout_ms": request_timeout_ms,
        }
        self._request_timeout_ms = request_timeout_ms
        self._group_protocol = group_protocol
        self._session: MembershipSession | None = None
        self._closed = False
        self._plugin_manager = plugin_manager

    # --- what subclasses implement ---------------------------------------------------------------

    @abc.abstractmethod
    def protocol_type(self) -> str:
        """The group's protocol type, e.g. ``"consumer"``; every member of a group shares it."""

    @abc.abstractmethod
    def metadata(self) -> list[tuple[str, bytes]]:
        """The protocols this member supports, most preferred first, each with its metadata."""

    @abc.abstractmethod
    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        """Leader only: decide what each member owns in the new generation.

        :param leader_id: this member's id.
        :param protocol: the protocol the group chose.
        :param members: every member with its metadata for that protocol.
        :returns: member id -> assignment bytes; members left out get an empty assignment.
        """

    @abc.abstractmethod
    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        """A generation has settled: start acting on ``assignment``."""

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        """A rebalance starts: stop acting on the current assignment (called before rejoining)."""

    def on_leave_prepare(self) -> None:
        """The member is about to leave the group: release the assignment."""

    def group_subscription(self) -> GroupSubscription:
        """The incremental protocol only: what this member subscribes to (for a consumer group,
        topic names or a regular expression the coordinator evaluates; for any other protocol
        type, the group's resources), the server-side assignor it asks for, its rack. Asked
        once, when the member first joins."""
        raise ConfigurationError(
            f"{type(self).__name__} does not implement group_subscription(), so it cannot use "
            "the incremental protocol"
        )

    def on_reconcile(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[bytes, int]],
        assigned: frozenset[tuple[bytes, int]],
    ) -> None:
        """``group_protocol="consumer"`` only: the coordinator changed this member's assignment.
        Stop acting on ``revoked`` first (commit what was done), then start ``assigned``; both
        are sets of (topic id, partition). The member acknowledges when this returns: only
        then can the revoked partitions be given to others."""
        raise ConfigurationError(
            f"{type(self).__name__} does not implement on_reconcile(), so it cannot use "
            "group_protocol='consumer'"
        )

    def on_reconcile_resources(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[str, int]],
        assigned: frozenset[tuple[str, int]],
    ) -> None:
        """``group_protocol="incremental"``, a protocol type other than ``consumer``: the
        coordinator changed this member's assignment. Stop acting on ``revoked`` first, then
        start ``assigned``; both are sets of (resource group, index). The member acknowledges
        when this returns: only then can the revoked resources be given to others.
        ``member_epoch`` fences what the member does with them (offset commits carry it)."""
        raise ConfigurationError(
            f"{type(self).__name__} does not implement on_reconcile_resources(), so it cannot use "
            "group_protocol='incremental'"
        )

    def on_lost(self, reason: str) -> None:
        """The assignment may already be another member's (heartbeats failed for too long, or
        the coordinator fenced this member): stop acting on it now. Runs on the heartbeat
        thread; keep it quick. The member rejoins on the next poll."""

    # --- what the base class provides ------------------------------------------------------------

    @property
    def group_id(self) -> str:
        return self._group_id

    @property
    def member_id(self) -> str:
        """This member's id ("" before it has one)."""
        return self.generation().member_id

    def resource_owners(self) -> dict[tuple[str, int], tuple[str, bytes]]:
        """``group_protocol="incremental"`` with ``GroupSubscription(list_owners=True)``: who owns
        each resource of the group, as the coordinator's latest answer said: (resource group,
        index) -> (member id, the payload that member gave). Empty before the first answer, with
        another protocol, or when nobody owns anything."""
        session = self._session
        return session.resource_owners() if session is not None else {}

    @property
    def session_timeout_ms(self) -> int:
        """How long the coordinator may wait for this member's heartbeat (its setting)."""
        return self._settings.session_timeout_ms

    @property
    def group_protocol(self) -> str:
        """The group protocol this member speaks: ``classic``, ``consumer`` or ``incremental``
        (until the member first joins, the one asked for; ``incremental`` then becomes
        ``classic`` where the coordinator does not serve it)."""
        return self._group_protocol

    def generation(self) -> Generation:
        """The member's current generation (``NO_GENERATION`` before it joined)."""
        session = self._session
        return NO_GENERATION if session is None else session.generation()

    def generation_if_stable(self) -> Generation | None:
        """The generation if the member holds a settled assignment it may act on, else None."""
        session = self._session
        return None if session is None else session.stable_generation()

    def ensure_active_group(self, timeout: float | None = None) -> None:
        """Join the group if needed and wait until this member holds a settled assignment.

        :param timeout: seconds; None waits as long as it takes.
        :raises GroupTimeoutError: the group did not settle in time.
        """
        session = self._start()
        deadline = session.deadline_after(timeout)
        while not session.wait_until_stable(deadline):
            if not self._run_callbacks(session) and deadline is not None and session.now_ms() >= deadline:
                raise GroupTimeoutError(
                    f"no stable generation within {timeout} s (member state: {session.member_state()}); "
                    "check that the coordinator is reachable and the other members are polling",
                    group_id=self._group_id,
                    member_id=session.generation().member_id,
                )

    def poll(self, timeout: float = 0.0) -> None:
        """Follow the group: run due callbacks, rejoining after a rebalance, for up to ``timeout``
        seconds; returns early after running a callback."""
        session = self._start()
        session.record_poll()
        deadline = session.now_ms() + int(max(timeout, 0.0) * 1000)
        while not self._run_callbacks(session):
            if not session.wait_for_action(deadline):
                return

    def wakeup(self) -> None:
        """Make a :meth:`poll` blocked in another thread return now (or the next one return at
        once), e.g. to close the member from another thread without waiting for the poll."""
        if self._session is not None:
            self._session.wakeup()

    def request_rejoin(self, reason: str) -> None:
        """Rejoin on the next poll: the member releases its assignment (:meth:`on_join_prepare`),
        sends JoinGroup with fresh :meth:`metadata` and receives :meth:`on_join_complete` again.

        As Kafka's coordinator decides, the whole group rebalances into a new generation when
        this member is the leader or its metadata changed; a follower whose metadata did not
        change gets the current generation's assignment back.

        With the incremental protocol nothing is released: the member reads
        :meth:`group_subscription` again and heartbeats at once; if what it subscribes to
        changed, the coordinator computes a new target and reconciles whoever it concerns.
        """
        session = self._start()
        incremental = self._group_protocol != "classic"
        session.request_rejoin(reason, self.group_subscription() if incremental else None)

    def leave_group(self, reason: str = "the application left") -> None:
        """Leave the group now (also for a static member); a later poll joins again."""
        session = self._session
        if session is None:
            return
        self._release_before_leaving(session)
        session.leave(reason, timeout_ms=self._request_timeout_ms)

    def close(self, timeout: float = 30.0) -> None:
        """Leave the group (dynamic members; a static member keeps its place for its session:
        with the classic protocol it sends nothing, with the incremental one it says so, epoch
        -2, as Kafka's consumer does) and release the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        session = self._session
        if session is None:
            return
        try:
            self._release_before_leaving(session)
            if self._settings.group_instance_id is None or self._group_protocol != "classic":
                session.leave("the member closed", timeout_ms=int(timeout * 1000))
        finally:
            session.close()

    def __enter__(self) -> Coordinator:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def send_request(self, request: Any, *, to_coordinator: bool = False) -> Any:
        """Send a Kafka request (a kafka-python message object; the connection negotiates its
        version) and return the decoded answer, for protocols that need more than group
        membership: Metadata for an assignor, OffsetCommit with this member's generation.

        :param to_coordinator: send to the group's coordinator rather than any broker.
        :raises ConnectionError: no broker, or no coordinator yet, is reachable.
        """
        return self._start().send_request(request, to_coordinator=to_coordinator)

    def commit_offsets(self, offsets: Mapping[tuple[str, int], int | tuple[int, str]]) -> None:
        """Commit offsets (with optional metadata strings) for this group, fenced by this
        member's generation: the coordinator refuses the commit of a member whose generation is
        no longer current, so a zombie's progress never overwrites its successor's.

        :param offsets: (topic, partition) -> offset, or -> (offset, metadata).
        :raises CommitFailedError: the coordinator refused some partitions (error names in
            ``errors``), or this member is in no generation (it has not joined, or lost its
            membership), so nothing was sent: a commit with no generation would be unfenced (an
            Empty group accepts it), as Kafka's consumer refuses too; stop acting on them and
            poll to rejoin.
        """
        # The generation first, once an acknowledgement in flight has moved it: a member in none
        # sends nothing, closed or not (a closed dynamic member has left its generation).
        if self._session is not None:
            self._session.await_acknowledgement()
        generation = self.generation()
        (self._session or self._start()).commit_offsets(offsets, generation=generation)

    def committed_offsets(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, str]]:
        """The group's committed offsets: (topic, partition) -> (offset, metadata), for the given
        partitions or (None) for every partition the group has committed. Partitions without a
        committed offset are left out.

        :raises GroupError: the coordinator answered with an error for the group.
        """
        return self._start().committed_offsets(partitions)

    # --- internals ---------------------------------------------------------------------------------

    def _start(self) -> MembershipSession:
        if self._closed:
            raise CoordinatorClosedError(
                "this Coordinator is closed; create a new one", group_id=self._group_id, member_id=""
            )
        if self._session is not None:
            return self._session
        # The member's observers: its own plugin manager's, else the installed plugins'.
        observers = self._plugin_manager
        if observers is None:
            observers = installed_plugins().plugin_manager
        observe = PluginHooks(observers).on_member_event if observers is not None else None
        if self._group_protocol != "classic":
            s = self._settings
            settings = IncrementalSettings(
                group_id=s.group_id,
                member_id=str(uuid.uuid4()),  # the member's own id, for its whole life (KIP-1082)
                group_instance_id=s.group_instance_id,
                session_timeout_ms=s.session_timeout_ms,
                heartbeat_interval_ms=s.heartbeat_interval_ms,
                rebalance_timeout_ms=s.rebalance_timeout_ms,
                max_poll_interval_ms=s.max_poll_interval_ms,
                retry_backoff_ms=s.retry_backoff_ms,
                lease_margin_ms=s.lease_margin_ms,
            )
            self._session = self._incremental_session(settings, observe)
        if self._session is None:
            self._session = MembershipSession.connect(
                self._settings,
                protocol_type=self.protocol_type(),
                connection_options=self._connection_options,
                request_timeout_ms=self._request_timeout_ms,
                on_lost=self._lost,
                observe=observe,
            )
        return self._session

    def _incremental_session(
        self, settings: IncrementalSettings, observe: Callable[[MemberEvent], None] | None
    ) -> MembershipSession | None:
        """A session of the incremental protocol; None (and the classic protocol from now on)
        if ``group_protocol="incremental"`` and the coordinator does not serve it."""
        protocol_type = self.protocol_type()
        if (self._group_protocol == "consumer") != (protocol_type == CONSUMER_PROTOCOL_TYPE):
            raise ConfigurationError(
                f"group {self._group_id!r}: group_protocol='consumer' is for the consumer protocol type "
                f"only; protocol type {protocol_type!r} asks for group_protocol='incremental'"
                if self._group_protocol == "consumer"
                else f"group {self._group_id!r}: a consumer group's member asks for group_protocol='consumer'"
            )
        subscription = self.group_subscription()
        if protocol_type != CONSUMER_PROTOCOL_TYPE and subscription.resources is None:
            raise ConfigurationError(
                f"group {self._group_id!r}: group_subscription() of protocol type {protocol_type!r} must "
                "declare its resources (GroupSubscription(resources={name: count}))"
            )
        deadline = time.monotonic() + self._request_timeout_ms / 1000
        while True:
            try:
                session = MembershipSession.connect_incremental(
                    settings,
                    subscription,
                    protocol_type=protocol_type,
                    only_if_served=self._group_protocol == "incremental",
                    connection_options=self._connection_options,
                    request_timeout_ms=self._request_timeout_ms,
                    on_lost=self._lost,
                    observe=observe,
                )
                break
            except Exception as exc:  # kafka-python's connection errors: retry, as a join would
                if time.monotonic() >= deadline:
                    raise GroupTimeoutError(
                        f"could not ask the coordinator of group {self._group_id!r} which group protocol "
                        f"it serves within {self._request_timeout_ms} ms: {exc!r}",
                        group_id=self._group_id,
                        member_id="",
                    ) from exc
                time.sleep(self._settings.retry_backoff_ms / 1000)
        if session is None:
            log.warning(
                "group %s: the coordinator does not serve the incremental protocol for protocol type %s "
                "(a Kafka cluster serves it for consumer groups, and for Kafka Streams groups of members "
                "that declare their source topics and are not static): using the classic protocol",
                self._group_id,
                protocol_type,
            )
            self._group_protocol = "classic"
        return session

    def _lost(self, lost: Lost) -> None:
        try:
            self.on_lost(lost.reason)
        except Exception:
            log.exception("group %s member %s: on_lost raised", self._group_id, lost.member_id)

    def _lost_meanwhile(self, member_id: str, callback: str) -> None:
        # The heartbeat thread declared the assignment lost (and ran on_lost) while `callback`
        # was starting it: run on_lost again, so the application drops what it just started.
        self._lost(Lost(-1, member_id, f"the membership was lost while {callback} ran"))

    def _release_before_leaving(self, session: MembershipSession) -> None:
        if session.holds_assignment():
            self._callback(session, "on_leave_prepare", self.on_leave_prepare)

    def _callback(self, session: MembershipSession, name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise CallbackError(
                name, group_id=self._group_id, member_id=session.generation().member_id
            ) from exc

    def _run_callbacks(self, session: MembershipSession) -> bool:
        """Run the callbacks the session asks for; True if any ran."""
        ran = False
        while (action := session.next_action()) is not None:
            ran = True
            self._run(session, action)
        return ran

    def _run(self, session: MembershipSession, action: ApplicationAction) -> None:
        if isinstance(action, PrepareJoin):
            self._prepare(session, action)
        elif isinstance(action, Assign):
            self._assign(session, action)
        elif isinstance(action, Complete):
            self._complete(session, action)
        elif isinstance(action, Reconcile):
            self._reconcile(session, action)
        elif action.kind == "fenced":
            raise FencedInstanceError(action.message, group_id=self._group_id, member_id=self.member_id)
        else:
            raise GroupJoinError(
                action.message,
                group_id=self._group_id,
                member_id=self.member_id,
                error_name=action.error_name,
            )

    def _reconcile(self, session: MembershipSession, request: Reconcile) -> None:
        try:
            if self.protocol_type() == CONSUMER_PROTOCOL_TYPE:
                self._callback(
                    session,
                    "on_reconcile",
                    self.on_reconcile,
                    request.member_epoch,
                    request.member_id,
                    request.revoked,
                    request.assigned,
                )
            else:  # resources are named on the wire: (name in UTF-8, index)
                self._callback(
                    session,
                    "on_reconcile_resources",
                    self.on_reconcile_resources,
                    request.member_epoch,
                    request.member_id,
                    frozenset((key.decode(), index) for key, index in request.revoked),
                    frozenset((key.decode(), index) for key, index in request.assigned),
                )
        except CallbackError:
            session.report_reconciled(request, ok=False)
            raise
        if not session.report_reconciled(request, ok=True):
            self._lost_meanwhile(request.member_id, "on_reconcile")

    def _prepare(self, session: MembershipSession, request: PrepareJoin) -> None:
        error: CallbackError | None = None
        if request.revoke:
            try:
                self._callback(
                    session, "on_join_prepare", self.on_join_prepare, request.generation_id, request.member_id
                )
            except CallbackError as exc:
                error = exc  # the join goes on: the group must not wait for us
            session.report_revoked(request, ok=error is None)
        try:
            protocols = self._callback(session, "metadata", self.metadata)
        except CallbackError:
            session.report_metadata(request, None)
            raise
        if (
            not isinstance(protocols, list | tuple)
            or not protocols
            or not all(
                isinstance(p, tuple)
                and len(p) == 2
                and isinstance(p[0], str)
                and isinstance(p[1], bytes | bytearray)
                for p in protocols
            )
        ):
            session.report_metadata(request, None)
            raise InvalidMetadataError(
                "metadata() must return a non-empty list of (protocol name, metadata bytes); "
                f"got {protocols!r}",
                group_id=self._group_id,
                member_id=self.member_id,
            )
        session.report_metadata(request, [(name, bytes(meta)) for name, meta in protocols])
        if error is not None:
            raise error

    def _assign(self, session: MembershipSession, request: Assign) -> None:
        member_ids = {member.member_id for member in request.members}
        try:
            result = self._callback(
                session,
                "perform_assignment",
                self.perform_assignment,
                request.leader_id,
                request.protocol_name,
                list(request.members),
            )
            if not isinstance(result, dict) or not all(
                isinstance(k, str) and isinstance(v, bytes | bytearray) for k, v in result.items()
            ):
                raise InvalidAssignmentError(
                    f"perform_assignment must return dict[str, bytes], got {type(result).__name__}",
                    group_id=self._group_id,
                    member_id=request.leader_id,
                )
            unknown = sorted(set(result) - member_ids)
            if unknown:
                raise InvalidAssignmentError(
                    f"perform_assignment named members not in this generation: {', '.join(unknown)}",
                    group_id=self._group_id,
                    member_id=request.leader_id,
                )
        except GroupError:
            session.report_assignment(request, None)
            raise
        session.report_assignment(request, {k: bytes(v) for k, v in result.items()})

    def _complete(self, session: MembershipSession, request: Complete) -> None:
        try:
            self._callback(
                session,
                "on_join_complete",
                self.on_join_complete,
                request.generation_id,
                request.member_id,
                request.protocol_name,
                request.assignment,
            )
        except CallbackError:
            session.report_completed(request, ok=False)
            raise
        if not session.report_completed(request, ok=True):
            self._lost_meanwhile(request.member_id, "on_join_complete")
