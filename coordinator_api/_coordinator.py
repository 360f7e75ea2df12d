"""The public ``Coordinator``: subclass it to build a distributed system on Kafka's group protocol."""

from __future__ import annotations

import abc
import logging
import time
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any

import kafka.errors
import pluggy
from kafka.net.manager import KafkaConnectionManager
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest

from coordinator_api._errors import (
    CallbackError,
    CommitFailedError,
    ConfigurationError,
    CoordinatorClosedError,
    FencedInstanceError,
    GroupError,
    GroupJoinError,
    GroupTimeoutError,
    InvalidAssignmentError,
    InvalidMetadataError,
)
from coordinator_api._membership import _machine as m
from coordinator_api._membership._driver import MemberDriver, now_ms
from coordinator_api._plugins._events import MemberEvent, MemberEventKind
from coordinator_api._plugins._manager import PluginHooks
from coordinator_api._types import Generation, JoinedMember

log = logging.getLogger("coordinator_api.membership")

# Connection settings passed through to kafka-python's connection layer (security included).
CONNECTION_OPTIONS = frozenset(KafkaConnectionManager.DEFAULT_CONFIG) - {"bootstrap_servers", "client_id"}


class Coordinator(abc.ABC):
    """A member of a group coordinated by Kafka's classic group protocol.

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
    :param plugin_manager: a plugin manager (:func:`~coordinator_api.get_plugin_manager`) whose
        ``coordinator_api_on_member_event`` hooks observe this member: joined, assigned,
        revoked, lost and left, with the generation and how long each step took.
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
        plugin_manager: pluggy.PluginManager | None = None,
        **connection_options: Any,
    ) -> None:
        if not isinstance(group_id, str) or not group_id:
            raise ConfigurationError("group_id must be a non-empty string")
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
        self._settings = m.MemberSettings(
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
        self._driver: MemberDriver | None = None
        self._closed = False
        self._hooks = PluginHooks(plugin_manager) if plugin_manager is not None else None
        self._round_started: float | None = None
        self._woken = False

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

    def generation(self) -> Generation:
        """The member's current generation (``NO_GENERATION`` before it joined)."""
        driver = self._driver
        if driver is None:
            return Generation(-1, "", None)
        with driver.lock:
            return driver.machine.generation()

    def generation_if_stable(self) -> Generation | None:
        """The generation if the member holds a settled assignment it may act on, else None."""
        driver = self._driver
        if driver is None:
            return None
        with driver.lock:
            return driver.machine.generation() if driver.machine.is_stable(now_ms()) else None

    def ensure_active_group(self, timeout: float | None = None) -> None:
        """Join the group if needed and wait until this member holds a settled assignment.

        :param timeout: seconds; None waits as long as it takes.
        :raises GroupTimeoutError: the group did not settle in time.
        """
        driver = self._start()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            driver.submit(m.Polled())  # joins if the member is outside the group
            self._run_app_actions(driver)
            with driver.lock:
                if driver.machine.is_stable() and not driver.app_actions:
                    return
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise GroupTimeoutError(
                        f"no stable generation within {timeout} s (member state: "
                        f"{driver.machine.state.value}); check that the coordinator is reachable "
                        "and the other members are polling",
                        group_id=self._group_id,
                        member_id=driver.machine.member_id,
                    )
                if not driver.app_actions:
                    driver.lock.wait(0.5 if remaining is None else min(remaining, 0.5))

    def poll(self, timeout: float = 0.0) -> None:
        """Follow the group: run due callbacks, rejoining after a rebalance, for up to ``timeout``
        seconds; returns early after running a callback."""
        driver = self._start()
        driver.submit(m.Polled())
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            if self._run_app_actions(driver):
                return
            with driver.lock:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._woken:
                    self._woken = False
                    return
                if not driver.app_actions:
                    driver.lock.wait(remaining)

    def wakeup(self) -> None:
        """Make a :meth:`poll` blocked in another thread return now (or the next one return at
        once), e.g. to close the member from another thread without waiting for the poll."""
        driver = self._driver
        if driver is None:
            return
        with driver.lock:
            self._woken = True
            driver.lock.notify_all()

    def request_rejoin(self, reason: str) -> None:
        """Rejoin on the next poll: the member releases its assignment (:meth:`on_join_prepare`),
        sends JoinGroup with fresh :meth:`metadata` and receives :meth:`on_join_complete` again.

        As Kafka's coordinator decides, the whole group rebalances into a new generation when
        this member is the leader or its metadata changed; a follower whose metadata did not
        change gets the current generation's assignment back.
        """
        self._start().submit(m.JoinWanted(reason))

    def leave_group(self, reason: str = "the application left") -> None:
        """Leave the group now (also for a static member); a later poll joins again."""
        driver = self._driver
        if driver is None:
            return
        self._release_before_leaving(driver)
        driver.submit(m.LeaveWanted(reason))
        driver.wait_for_leave(self._request_timeout_ms / 1000)

    def close(self, timeout: float = 30.0) -> None:
        """Leave the group (dynamic members; a static member keeps its place for its session)
        and release the connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        driver = self._driver
        if driver is None:
            return
        try:
            if self._settings.group_instance_id is None:
                self._release_before_leaving(driver)
                driver.submit(m.LeaveWanted("the member closed"))
                driver.wait_for_leave(timeout)
            else:
                self._release_before_leaving(driver)
        finally:
            driver.close()

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
        return self._start().call(request, to_coordinator=to_coordinator)

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
        generation = self.generation()
        if generation.generation_id < 0:
            raise CommitFailedError(
                f"offset commit refused for generation {generation.generation_id}: this member is in "
                "no generation (not joined, or its membership was lost), so nothing was sent; poll "
                "to rejoin",
                group_id=self._group_id,
                member_id=generation.member_id,
                errors=tuple(sorted((t, p, "UNKNOWN_MEMBER_ID") for t, p in offsets)),
            )
        entry = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), value in sorted(offsets.items()):
            offset, metadata = value if isinstance(value, tuple) else (value, "")
            if not isinstance(offset, int) or offset < 0 or not isinstance(metadata, str):
                raise ConfigurationError(
                    f"group {self._group_id!r}: offset for {topic}-{partition} must be a non-negative "
                    f"int (optionally with a metadata string), got {value!r}"
                )
            by_topic.setdefault(topic, []).append(
                entry(
                    partition_index=partition,
                    committed_offset=offset,
                    committed_leader_epoch=-1,
                    committed_metadata=metadata,
                )
            )
        request = OffsetCommitRequest(
            group_id=self._group_id,
            generation_id_or_member_epoch=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p)
                for t, p in by_topic.items()
            ],
            # v10 (KIP-848) names topics by id only: a Kafka 4 broker would refuse these
            # name-keyed partitions with UNKNOWN_TOPIC_ID. v9 is the last by name, as for
            # Kafka's own consumer when it has no topic ids.
            max_version=9,
        )
        response = self.send_request(request, to_coordinator=True)
        refused = tuple(
            sorted(
                (t.name, p.partition_index, kafka.errors.for_code(p.error_code).message)
                for t in response.topics
                for p in t.partitions
                if p.error_code
            )
        )
        if refused:
            raise CommitFailedError(
                f"offset commit refused for generation {generation.generation_id}: "
                + ", ".join(f"{t}-{p}: {e}" for t, p, e in refused)
                + "; stop acting on those partitions and poll to rejoin",
                group_id=self._group_id,
                member_id=generation.member_id,
                errors=refused,
            )

    def committed_offsets(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[tuple[str, int], tuple[int, str]]:
        """The group's committed offsets: (topic, partition) -> (offset, metadata), for the given
        partitions or (None) for every partition the group has committed. Partitions without a
        committed offset are left out.

        :raises GroupError: the coordinator answered with an error for the group.
        """
        wanted = None if partitions is None else sorted(set(partitions))
        topics: dict[str, list[int]] | None = None
        if wanted is not None:
            topics = {}
            for topic, partition in wanted:
                topics.setdefault(topic, []).append(partition)
        group = OffsetFetchRequest.OffsetFetchRequestGroup
        request = OffsetFetchRequest(
            group_id=self._group_id,
            topics=None
            if topics is None
            else [
                OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p)
                for t, p in topics.items()
            ],
            groups=[
                group(
                    group_id=self._group_id,
                    topics=None
                    if topics is None
                    else [
                        group.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in topics.items()
                    ],
                )
            ],
            require_stable=False,
            min_version=0 if topics is not None else 2,
            max_version=8,
        )
        response = self.send_request(request, to_coordinator=True)
        if response.API_VERSION >= 8:
            error_code, answered = response.groups[0].error_code, response.groups[0].topics
        else:
            error_code = response.error_code if response.API_VERSION >= 2 else 0
            answered = response.topics
        errors = [(error_code, "")] + [
            (p.error_code, f"{t.name}-{p.partition_index}") for t in answered for p in t.partitions
        ]
        for code, where in errors:
            if code:
                raise GroupError(
                    f"offset fetch{' for ' + where if where else ''} failed: "
                    f"{kafka.errors.for_code(code).message}; retry later",
                    group_id=self._group_id,
                    member_id=self.member_id,
                )
        return {
            (t.name, p.partition_index): (p.committed_offset, p.metadata or "")
            for t in answered
            for p in t.partitions
            if p.committed_offset >= 0
        }

    # --- internals ---------------------------------------------------------------------------------

    def _start(self) -> MemberDriver:
        if self._closed:
            raise CoordinatorClosedError(
                "this Coordinator is closed; create a new one", group_id=self._group_id, member_id=""
            )
        if self._driver is None:
            self._driver = MemberDriver(
                self._settings,
                protocol_type=self.protocol_type(),
                connection_options=self._connection_options,
                on_lost=self._lost,
                request_timeout_ms=self._request_timeout_ms,
                observe=self._observe if self._hooks is not None else None,
            )
        return self._driver

    def _observe(
        self,
        kind: MemberEventKind,
        generation: int,
        member_id: str,
        protocol: str | None,
        duration_ms: float | None,
        detail: str,
    ) -> None:
        if self._hooks is not None:
            self._hooks.on_member_event(
                MemberEvent(
                    kind=kind,
                    group_id=self._group_id,
                    member_id=member_id,
                    generation_id=generation,
                    protocol=protocol,
                    duration_ms=duration_ms,
                    detail=detail,
                )
            )

    def _lost(self, action: m.Lost) -> None:
        try:
            self.on_lost(action.reason)
        except Exception:
            log.exception("group %s member %s: on_lost raised", self._group_id, action.member_id)

    def _release_before_leaving(self, driver: MemberDriver) -> None:
        with driver.lock:
            holds = driver.machine.holds_assignment
        if holds:
            self._callback(driver, "on_leave_prepare", self.on_leave_prepare)

    def _callback(self, driver: MemberDriver, name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:
            raise CallbackError(name, group_id=self._group_id, member_id=driver.machine.member_id) from exc

    def _run_app_actions(self, driver: MemberDriver) -> bool:
        """Run the callbacks the machine asked for; True if any ran."""
        ran = False
        while True:
            with driver.lock:
                if not driver.app_actions:
                    return ran
                action = driver.app_actions.popleft()
            ran = True
            if not isinstance(action, m.Fail) and not self._still_wanted(driver, action):
                continue  # the generation it belongs to is gone (lost, left, fenced)
            if isinstance(action, m.Fail):
                error_cls = FencedInstanceError if action.kind == "fenced" else GroupJoinError
                if error_cls is GroupJoinError:
                    raise GroupJoinError(
                        action.message,
                        group_id=self._group_id,
                        member_id=driver.machine.member_id,
                        error_name=action.error_name,
                    )
                raise FencedInstanceError(
                    action.message, group_id=self._group_id, member_id=driver.machine.member_id
                )
            if isinstance(action, m.PrepareJoin):
                self._prepare(driver, action)
            elif isinstance(action, m.Assign):
                self._assign(driver, action)
            elif isinstance(action, m.Complete):
                self._complete(driver, action)

    @staticmethod
    def _still_wanted(driver: MemberDriver, action: m.Action) -> bool:
        with driver.lock:
            return driver.machine.awaiting_app is not None and driver.machine.awaiting_action is action

    def _prepare(self, driver: MemberDriver, action: m.PrepareJoin) -> None:
        error: CallbackError | None = None
        self._round_started = time.monotonic()
        if action.revoke:
            try:
                self._callback(
                    driver, "on_join_prepare", self.on_join_prepare, action.generation_id, action.member_id
                )
            except CallbackError as exc:
                error = exc  # the join goes on: the group must not wait for us
            self._observe(
                "revoked",
                action.generation_id,
                action.member_id,
                None,
                (time.monotonic() - self._round_started) * 1000,
                "" if error is None else "on_join_prepare raised",
            )
        try:
            protocols = self._callback(driver, "metadata", self.metadata)
        except CallbackError:
            driver.submit(m.PrepareFailed())
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
            driver.submit(m.PrepareFailed())
            raise InvalidMetadataError(
                "metadata() must return a non-empty list of (protocol name, metadata bytes); "
                f"got {protocols!r}",
                group_id=self._group_id,
                member_id=driver.machine.member_id,
            )
        driver.submit(m.Prepared(tuple((name, bytes(meta)) for name, meta in protocols)))
        if error is not None:
            raise error

    def _assign(self, driver: MemberDriver, action: m.Assign) -> None:
        member_ids = {member.member_id for member in action.members}
        try:
            result = self._callback(
                driver,
                "perform_assignment",
                self.perform_assignment,
                action.leader_id,
                action.protocol_name,
                list(action.members),
            )
            if not isinstance(result, dict) or not all(
                isinstance(k, str) and isinstance(v, bytes | bytearray) for k, v in result.items()
            ):
                raise InvalidAssignmentError(
                    f"perform_assignment must return dict[str, bytes], got {type(result).__name__}",
                    group_id=self._group_id,
                    member_id=action.leader_id,
                )
            unknown = sorted(set(result) - member_ids)
            if unknown:
                raise InvalidAssignmentError(
                    f"perform_assignment named members not in this generation: {', '.join(unknown)}",
                    group_id=self._group_id,
                    member_id=action.leader_id,
                )
        except GroupError:
            driver.submit(m.AssignmentFailed())
            raise
        driver.submit(m.AssignmentComputed(tuple((k, bytes(v)) for k, v in sorted(result.items()))))

    def _complete(self, driver: MemberDriver, action: m.Complete) -> None:
        with driver.lock:
            fresh = driver.machine.assignment_fresh(now_ms())
        if not fresh:
            # Paused (or starved) between the SyncGroup answer and now for longer than the lease:
            # the assignment may already be another member's. Drop it and join again.
            log.warning(
                "group %s member %s: generation %d's assignment came too late to act on; rejoining",
                self._group_id,
                action.member_id,
                action.generation_id,
            )
            driver.submit(m.Completed(ok=False, reason="the assignment arrived after the lease ran out"))
            return
        try:
            self._callback(
                driver,
                "on_join_complete",
                self.on_join_complete,
                action.generation_id,
                action.member_id,
                action.protocol_name,
                action.assignment,
            )
        except CallbackError:
            driver.submit(m.Completed(ok=False))
            raise
        driver.submit(m.Completed(ok=True))
        started = self._round_started
        self._observe(
            "assigned",
            action.generation_id,
            action.member_id,
            action.protocol_name,
            None if started is None else (time.monotonic() - started) * 1000,
            "",
        )
