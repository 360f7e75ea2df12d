"""A streams application instance as a group member (protocol type ``streams``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from coordinator_api import (
    ConfigurationError,
    Coordinator,
    GroupSubscription,
    JoinedMember,
    KafkaStreamsGroup,
    PluginRegistry,
    installed_plugins,
)
from coordinator_streams._incremental import encode_member_metadata, resource_counts, tasks_of
from coordinator_streams._model import (
    AssignmentConfig,
    ClientState,
    MemberTasks,
    StreamsAssignor,
    Task,
    TaskAssignmentError,
    TaskId,
)
from coordinator_streams._protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscriptions,
    encode_assignment,
    encode_subscription,
)

__all__ = ["StreamsGroupMember"]

log = logging.getLogger("coordinator_streams")

LagsCallback = Callable[[], Mapping[TaskId, int]]
TasksCallback = Callable[[MemberTasks], None]
RevokedCallback = Callable[[frozenset[TaskId]], None]


class StreamsGroupMember(Coordinator):
    """One application instance of a streams group: it declares tasks, reports lags and runs
    what the group's leader assigns to it.

    ::

        app = MyApplication()
        member = StreamsGroupMember(
            "orders-app", bootstrap, process_id="instance-1", tasks=app.tasks(),
            task_lags=app.lags, on_tasks_assigned=app.run, on_tasks_revoked=app.suspend,
        )
        member.ensure_active_group(30)
        while running:
            member.poll(0.5)

    **Rebalances are cooperative.** A member keeps running its active tasks while the group
    rebalances. An active task that moves is first revoked from its previous owner
    (``on_tasks_revoked``, which then rejoins) and assigned to its new owner only in the next
    round, once no member claims it any more, so no two members ever run one task at once.

    **Probing rebalances.** When the assignment holds warmups, the leader's assignment carries the
    time of the probing rebalance (``probing_rebalance_interval_ms`` later); :meth:`poll`
    rejoins then. Any member whose warmup has caught up (lag at most
    ``acceptable_recovery_lag``) rejoins at once, checked at most every
    ``warmup_check_interval_ms``. Either way the group rebalances with fresh lags, and the
    caught-up warmups become actives.

    The leader's :class:`~coordinator_streams.AssignmentConfig` is the one that counts; give every
    member the same.

    **Incremental rebalancing** (``group_protocol="incremental"``). The coordinator assigns
    instead of a leader, and each member reconciles on its own, with no group-wide round: the
    member declares its tasks as the coordinator's resources (one resource group per subtopology,
    named by its number, counting its partitions) with its process id and capacity, the
    coordinator's server-side assignor (``sticky``: balanced by capacity, members keep their tasks
    up to their share) computes the target, and the member gets ``on_tasks_revoked`` for the
    active tasks it gives up and then ``on_tasks_assigned`` with its new assignment; a task moves
    to its new owner only once its previous owner has returned from ``on_tasks_revoked``. Members
    that keep their tasks see no callback at all. With ``config.num_standby_replicas`` the member
    also declares that many resource groups of standby tasks per stateful subtopology
    (:func:`~coordinator_streams.standby_group`), and the assignor keeps each replica of each
    stateful task on a process that holds the task in no other form: standby tasks come in
    ``on_tasks_assigned`` (``MemberTasks.standby``) and go without ``on_tasks_revoked``, and a
    task this member kept a standby of becomes active here only once it has said the standby is
    gone. There are no warmups and no lags (as in Apache Kafka's streams groups), so ``assignor``,
    ``client_tags`` (but in a streams group on Kafka, below), ``task_lags`` and ``config`` but its
    ``num_standby_replicas`` are not used, there are no probing rebalances, and a task that moves
    to a member without its standby restores its state there. Each subtopology's partitions must
    be ``0 .. n-1``, and every member of the group must declare the same topology and ask for the
    same protocol. On a Kafka cluster (Apache Kafka 4.2 or later) a member that names each
    subtopology's ``source_topics`` joins a **streams group of KIP-1071** instead, speaking
    Kafka's StreamsGroupHeartbeat: the broker counts each subtopology's tasks from its source
    topics' partitions (so the declared tasks must match them) and assigns the active tasks with
    its own assignor, each member counting as one thread (``capacity`` and ``server_assignor`` are
    not used there; ``client_tags`` are its client tags). There the subtopologies given
    ``changelog_topics`` are stateful, and the broker places standby tasks of them when the
    group's ``streams.num.standby.replicas`` (a group config on the broker, not the member's
    ``config``) asks for them, in the same way. A static member (``group_instance_id``) cannot, as
    Kafka's streams groups have no static members yet. Where the coordinator serves neither, the
    member logs a warning and speaks the classic protocol as described above, with all of the
    above settings; :attr:`group_protocol` then reads ``"classic"``.

    :param process_id: a stable id of this instance (survives restarts, like its state
        directory).
    :param tasks: every task of the topology (the leader takes the union over members).
    :param capacity: threads; load is balanced in proportion to it.
    :param rack: where the instance runs, for rack-aware standbys.
    :param client_tags: placement tags, see ``AssignmentConfig.rack_aware_assignment_tags``.
    :param config: the assignor's settings (with the incremental protocol, on a coordinator
        that serves GroupHeartbeat, only ``num_standby_replicas``).
    :param assignor: ``high-availability`` (default), ``eager-sticky``, or an assignor another
        plugin registers for protocol type ``streams``.
    :param task_lags: called on the application thread whenever the member builds its metadata
        (and to check warmups): for each stateful task with local state, records behind the
        changelog end.
    :param on_tasks_assigned: called with this member's full assignment after each generation
        (incremental protocol: after each change of it, once the revoked tasks are stopped).
    :param on_tasks_revoked: called with the active tasks this member must stop running, before
        another member may start them.
    :param on_tasks_lost: called (on the heartbeat thread) with the active tasks the member lost
        without a clean handover; stop them at once.
    :param warmup_check_interval_ms: how often :meth:`poll` asks for lags while warmups exist.
    :param server_assignor: with ``group_protocol="incremental"``, the coordinator's
        server-side assignor to ask for; None (default) takes the coordinator's default
        (``sticky``).
    :param source_topics: with ``group_protocol="incremental"``, the topics each subtopology
        reads, by subtopology number (every subtopology of ``tasks``): on a Kafka cluster the
        member then joins a streams group of KIP-1071 rather than falling back to the classic
        protocol.
    :param changelog_topics: with ``source_topics``, the changelog topics of each stateful
        subtopology's state stores, by subtopology number (subtopologies of stateful tasks
        only): in a streams group on Kafka the broker creates them and places standby tasks of
        these subtopologies, as many per task as the group's ``streams.num.standby.replicas``.
    :param plugins: where assignors are found by name (default: the installed plugins,
        :func:`coordinator_api.installed_plugins`).
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        *,
        process_id: str,
        tasks: Iterable[Task],
        capacity: int = 1,
        rack: str | None = None,
        client_tags: Mapping[str, str] | None = None,
        config: AssignmentConfig | None = None,
        assignor: str = "high-availability",
        task_lags: LagsCallback | None = None,
        on_tasks_assigned: TasksCallback | None = None,
        on_tasks_revoked: RevokedCallback | None = None,
        on_tasks_lost: RevokedCallback | None = None,
        warmup_check_interval_ms: int = 1_000,
        server_assignor: str | None = None,
        source_topics: Mapping[int, Sequence[str]] | None = None,
        changelog_topics: Mapping[int, Sequence[str]] | None = None,
        plugins: PluginRegistry | None = None,
        **options: Any,
    ) -> None:
        super().__init__(group_id, bootstrap_servers, **options)
        incremental = options.get("group_protocol") == "incremental"
        if server_assignor is not None and not incremental:
            raise ConfigurationError(
                f"group {group_id!r}: server_assignor is for group_protocol='incremental'; the classic "
                "protocol's leader runs `assignor`"
            )
        self._plugins = plugins if plugins is not None else installed_plugins()
        self._plugins.assignors.choose(PROTOCOL_TYPE, assignor, group_id=group_id, what="streams assignor")
        if not isinstance(process_id, str) or not process_id:
            raise ConfigurationError(f"group {group_id!r}: process_id must be a non-empty string")
        if type(capacity) is not int or capacity < 1:
            raise ConfigurationError(
                f"group {group_id!r}: capacity must be a positive integer, got {capacity!r}"
            )
        self._tasks = sorted(tasks, key=lambda t: t.id)
        if not self._tasks or not all(isinstance(t, Task) for t in self._tasks):
            raise ConfigurationError(f"group {group_id!r}: tasks must be a non-empty list of Task values")
        if len({t.id for t in self._tasks}) != len(self._tasks):
            raise ConfigurationError(f"group {group_id!r}: a task is declared twice")
        self._config = config or AssignmentConfig()
        # The tasks as the coordinator's resources (checked now, used only if the member speaks
        # the incremental protocol), with a resource group per replica of the stateful
        # subtopologies' standbys (a coordinator serving GroupHeartbeat places them).
        standbys = self._config.num_standby_replicas
        try:
            self._resources = resource_counts(self._tasks, standbys) if incremental else {}
        except TaskAssignmentError as exc:
            raise TaskAssignmentError(f"group {group_id!r}: {exc}") from None
        self._server_assignor = server_assignor
        self._kafka_streams = self._streams_group(
            group_id, incremental, process_id, source_topics, changelog_topics, client_tags
        )
        self._process_id = process_id
        self._capacity = capacity
        self._rack = rack
        self._client_tags = dict(client_tags or {})
        self._assignor_name = assignor
        self._task_lags = task_lags
        self._assigned_cb = on_tasks_assigned
        self._revoked_cb = on_tasks_revoked
        self._lost_cb = on_tasks_lost
        self._warmup_check_s = warmup_check_interval_ms / 1000
        self._lock = threading.Lock()
        self._current = MemberTasks()
        self._probe_at_ms = -1
        self._next_warmup_check = 0.0
        self._rejoin_requested = False

    # --- the Coordinator contract ------------------------------------------------------------------

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        with self._lock:
            current = self._current
        client = ClientState(
            member_id="-",
            process_id=self._process_id,
            capacity=self._capacity,
            rack=self._rack,
            client_tags=self._client_tags,
            lags=self._lags(),
            previous_active=current.active,
            previous_standby=current.standby | current.warmup,
        )
        return [(self._assignor_name, encode_subscription(client, self._tasks))]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        clients, tasks, failed = decode_subscriptions(members)
        for member_id, error in sorted(failed.items()):
            log.warning("group %s: member %s gets nothing: %s", self.group_id, member_id, error)
        assignor: StreamsAssignor = self._plugins.assignors.get(PROTOCOL_TYPE, protocol)
        result = assignor(clients, tasks, self._config)
        # Cooperative handover: a task another member still runs is withheld from its new owner
        # this round; the previous owner sees it revoked and rejoins, and the next round hands
        # it over. Nobody runs a task twice.
        claimed = {t: c.member_id for c in clients for t in c.previous_active}
        probe_at = -1
        if result.probing_rebalance_needed:
            probe_at = int(time.time() * 1000) + self._config.probing_rebalance_interval_ms
        out: dict[str, bytes] = {m.member_id: encode_assignment(MemberTasks()) for m in members}
        for member_id, assigned in result.members.items():
            held_back = frozenset(t for t in assigned.active if claimed.get(t, member_id) != member_id)
            tasks_now = MemberTasks(assigned.active - held_back, assigned.standby, assigned.warmup)
            # One member schedules the probe: the leader, which always starts a rebalance.
            out[member_id] = encode_assignment(tasks_now, probe_at if member_id == leader_id else -1)
        return out

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        tasks, probe_at = decode_assignment(assignment)
        with self._lock:
            revoked = self._current.active - tasks.active
            self._current = tasks
            self._probe_at_ms = probe_at
            self._rejoin_requested = False
            self._next_warmup_check = time.monotonic() + self._warmup_check_s
        if revoked:
            if self._revoked_cb is not None:
                self._revoked_cb(revoked)
            self._request("active tasks were revoked; their new owners get them in the next round")
        if self._assigned_cb is not None:
            self._assigned_cb(tasks)

    def group_subscription(self) -> GroupSubscription:
        # Only what stays the same between polls: a change would start a new group epoch.
        return GroupSubscription(
            resources=self._resources,
            metadata=encode_member_metadata(self._process_id, self._capacity),
            server_assignor=self._server_assignor,
            rack_id=self._rack,
            kafka_streams=self._kafka_streams,
        )

    def _streams_group(
        self,
        group_id: str,
        incremental: bool,
        process_id: str,
        source_topics: Mapping[int, Sequence[str]] | None,
        changelog_topics: Mapping[int, Sequence[str]] | None,
        client_tags: Mapping[str, str] | None,
    ) -> KafkaStreamsGroup | None:
        """``source_topics`` and ``changelog_topics`` checked, as a :class:`KafkaStreamsGroup`
        (None without them)."""
        if source_topics is None:
            if changelog_topics is not None:
                raise ConfigurationError(
                    f"group {group_id!r}: changelog_topics is for streams groups on Kafka: give "
                    "source_topics too"
                )
            return None
        if not incremental:
            raise ConfigurationError(
                f"group {group_id!r}: source_topics is for group_protocol='incremental' (streams groups)"
            )
        subtopologies = {t.id.subtopology for t in self._tasks}
        if set(source_topics) != subtopologies:
            raise ConfigurationError(
                f"group {group_id!r}: source_topics names subtopologies {sorted(source_topics)}, "
                f"the tasks {sorted(subtopologies)}: they must be the same"
            )
        changelog_topics = changelog_topics or {}
        for name, topics in (("source_topics", source_topics), ("changelog_topics", changelog_topics)):
            if any(isinstance(t, str) for t in topics.values()):
                raise ConfigurationError(f"group {group_id!r}: {name} maps subtopologies to lists of topics")
        stateless = sorted({t.id.subtopology for t in self._tasks if not t.stateful} & set(changelog_topics))
        if stateless:
            raise ConfigurationError(
                f"group {group_id!r}: changelog_topics names subtopologies {stateless}, whose tasks "
                "are stateless (Task(..., stateful=False)): a changelog keeps a stateful task's state"
            )
        try:
            return KafkaStreamsGroup(
                source_topics={str(s): tuple(topics) for s, topics in source_topics.items()},
                process_id=process_id,
                client_tags=dict(client_tags or {}),
                changelog_topics={str(s): tuple(topics) for s, topics in changelog_topics.items()},
            )
        except ConfigurationError as exc:
            raise ConfigurationError(f"group {group_id!r}: {exc}") from None

    def on_reconcile_resources(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[str, int]],
        assigned: frozenset[tuple[str, int]],
    ) -> None:
        gone, gone_standby = tasks_of(revoked)
        new, new_standby = tasks_of(assigned)
        undeclared = (new | new_standby) - {t.id for t in self._tasks}
        if undeclared:  # Kafka counts a streams group's tasks from its source topics' partitions
            log.warning(
                "group %s member %s: assigned tasks it does not declare: %s (does a source topic have "
                "more partitions than its subtopology's tasks?)",
                self.group_id,
                member_id,
                " ".join(map(str, sorted(undeclared))),
            )
        with self._lock:
            current = self._current
            self._current = MemberTasks(current.active - gone, current.standby - gone_standby)
        if gone and self._revoked_cb is not None:
            self._revoked_cb(gone)
        with self._lock:
            current = self._current
            self._current = tasks = MemberTasks(current.active | new, current.standby | new_standby)
        if self._assigned_cb is not None:
            self._assigned_cb(tasks)

    def on_leave_prepare(self) -> None:
        with self._lock:
            revoked, self._current = self._current.active, MemberTasks()
        if revoked and self._revoked_cb is not None:
            self._revoked_cb(revoked)

    def on_lost(self, reason: str) -> None:
        with self._lock:
            lost, self._current = self._current.active, MemberTasks()
            self._probe_at_ms = -1
        if lost and self._lost_cb is not None:
            self._lost_cb(lost)

    # --- the application's view ---------------------------------------------------------------------

    def tasks(self) -> MemberTasks:
        """This member's current active, standby and warmup tasks (no warmups with the
        incremental protocol)."""
        with self._lock:
            return self._current

    def poll(self, timeout: float = 0.0) -> None:
        """Follow the group (see :meth:`Coordinator.poll`), then rejoin if the probing rebalance
        is due or a warmup has caught up (the classic protocol only: the incremental one has no
        warmups)."""
        super().poll(timeout)
        if self.group_protocol != "classic":
            return
        with self._lock:
            probe_at, warmup = self._probe_at_ms, self._current.warmup
            check = bool(warmup) and time.monotonic() >= self._next_warmup_check
            if check:
                self._next_warmup_check = time.monotonic() + self._warmup_check_s
        if probe_at >= 0 and time.time() * 1000 >= probe_at:
            with self._lock:
                self._probe_at_ms = -1
            self._request("probing rebalance: are the warmups caught up?")
        elif check:
            lags = self._lags()
            acceptable = self._config.acceptable_recovery_lag
            done = sorted(t for t in warmup if lags.get(t, acceptable + 1) <= acceptable)
            if done:
                self._request(f"warmup {', '.join(map(str, done))} caught up")

    # --- helpers --------------------------------------------------------------------------------------

    def _request(self, reason: str) -> None:
        with self._lock:
            if self._rejoin_requested:
                return
            self._rejoin_requested = True
        log.info("group %s member %s: rejoining: %s", self.group_id, self.member_id, reason)
        self.request_rejoin(reason)

    def _lags(self) -> dict[TaskId, int]:
        if self._task_lags is None:
            return {}
        lags = dict(self._task_lags())
        for task, lag in lags.items():
            if not isinstance(task, TaskId) or type(lag) is not int or lag < 0:
                raise TaskAssignmentError(
                    f"group {self.group_id!r}: task_lags() must map TaskId to an integer >= 0, "
                    f"got {task!r}: {lag!r}"
                )
        return lags
