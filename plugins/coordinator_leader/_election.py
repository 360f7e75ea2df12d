"""``LeaderElection``: one leader among a service's instances, with a fencing epoch."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from coordinator_api import (
    CallbackError,
    ConfigurationError,
    Coordinator,
    CoordinatorApiError,
    CoordinatorClosedError,
    GroupError,
    GroupSubscription,
    JoinedMember,
    PayloadError,
    PluginRegistry,
    decode,
    decode_members,
    encode,
    installed_plugins,
)
from coordinator_leader._election_rule import (
    LEADERSHIP,
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    Candidate,
    LeaderAssignment,
)

log = logging.getLogger("coordinator_leader")

ElectedCallback = Callable[[int], None]
RevokedCallback = Callable[[], None]


class NotLeaderError(GroupError):
    """The member does not lead (``leadership()`` timed out, or leadership ended)."""


@dataclass(frozen=True)
class LeaderInfo:
    """The current leader as every member learns it.

    :ivar name: the leader's ``name``.
    :ivar address: its ``address`` ("" if it gave none).
    :ivar priority: its priority.
    :ivar version: its application version.
    :ivar epoch: the epoch of its leadership (its fencing token).
    :ivar member_id: its member id in the group.
    """

    name: str
    address: str
    priority: int
    version: str
    epoch: int
    member_id: str


class Leadership:
    """One term of leadership, handed out by :meth:`LeaderElection.leadership`.

    The term ends when the member steps down for any reason (a rebalance, lost heartbeats,
    ``resign()``, ``close()``); :attr:`ended` is set at that moment, so the body can wait on it
    or poll :attr:`active` between steps of its work::

        with election.leadership() as term:
            while term.active:
                run_one_step(fencing_token=term.epoch)
                term.ended.wait(5.0)
    """

    def __init__(self, election: LeaderElection, epoch: int, term: int) -> None:
        self._election = election
        self.epoch = epoch
        self.term = term
        self.ended = threading.Event()

    @property
    def active(self) -> bool:
        """True while this term lasts and the member's lease is valid (checked now)."""
        return not self.ended.is_set() and self._election.is_leader()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the term to end; True if it has."""
        return self.ended.wait(timeout)

    def check(self) -> None:
        """Raise :class:`NotLeaderError` unless the term is still active."""
        if not self.active:
            raise NotLeaderError(
                f"leadership of epoch {self.epoch} has ended; stop acting as leader",
                group_id=self._election.group_id,
                member_id=self._election.member_id,
            )


class _ElectionMember(Coordinator):
    """The group member behind a LeaderElection: metadata, the rule, and the callbacks."""

    def __init__(self, election: LeaderElection, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._election = election

    @property
    def election(self) -> LeaderElection:
        """The election this member runs (``is_leader``, ``leader``, ``epoch``, ...)."""
        return self._election

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        return [(self._election.rule, encode(self._election._candidate()))]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        candidates, failed = decode_members(Candidate, members)
        for member_id, error in failed.items():
            log.warning("group %s: member %s sent unreadable metadata: %s", self.group_id, member_id, error)
        outcome: LeaderAssignment = self._election._elect(
            candidates,
            self.generation().generation_id,
            preferred_leader=self._election.preferred_leader,
        )
        data = encode(outcome)
        return {m.member_id: data for m in members}

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        self._election._step_down("the group is rebalancing", forget_leader=True)

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        self._election._joined(generation, member_id, decode(LeaderAssignment, assignment))

    # The incremental protocol: the coordinator hands out the one resource LEADERSHIP.

    def group_subscription(self) -> GroupSubscription:
        name, _ = LEADERSHIP
        return GroupSubscription(
            resources={name: 1},
            metadata=encode(self._election._candidate()),
            server_assignor=self._election.rule,
            list_owners=True,  # every member learns who leads
        )

    def on_reconcile_resources(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[str, int]],
        assigned: frozenset[tuple[str, int]],
    ) -> None:
        if LEADERSHIP in revoked:
            self._election._step_down("the coordinator moved the leadership", forget_leader=True)
            self._election._stand_again()
        if LEADERSHIP in assigned:
            self._election._elected(member_epoch)

    def on_leave_prepare(self) -> None:
        self._election._step_down("the member is leaving the group", forget_leader=True)

    def on_lost(self, reason: str) -> None:
        self._election._step_down(reason, forget_leader=True)


class LeaderElection:
    """Elect one leader among the instances of a service, over Kafka's group protocol.

    Every instance creates one with the same ``group_id``; the group (on the embedded
    coordinator or a Kafka cluster) elects a leader and tells every instance who it is and the
    leadership **epoch**, a fencing token that grows with every election::

        election = LeaderElection("scheduler", "127.0.0.1:9092", name="node-1",
                                  on_elected=start_jobs, on_revoked=stop_jobs)
        with election:                      # start() ... close()
            with election.leadership() as term:
                while term.active:
                    store.write(..., epoch=term.epoch)
                    term.wait(1.0)

    **Who leads.** Eligible members first, then higher ``priority``, then ``name`` (then member
    id) as a stable tiebreak. The leader of the previous epoch keeps leading while it stays in
    the group, unless ``preferred_leader=True``: then a member of higher priority that joins
    takes over at the next rebalance.

    **Safety.** At most one member believes it leads at any moment, as far as the members'
    clocks agree: a leader steps down (``on_revoked``) when a rebalance begins, before it
    leaves, and when its heartbeats have gone unanswered for ``session_timeout_ms`` minus the
    lease margin, i.e. before the coordinator could expire it and let another member be
    elected. :meth:`is_leader` checks that lease each time it is called, so a process resumed
    after a pause learns it lost before it acts. Each membership change costs a short
    leaderless moment (one rebalance, milliseconds on the embedded coordinator); the leader is
    usually re-elected, with a new epoch.

    **Threads.** :meth:`start` runs the member on a background thread; ``on_elected(epoch)``
    and ``on_revoked()`` run on that thread (``on_revoked`` also on the heartbeat thread when
    the lease runs out, or on the thread calling :meth:`resign`/:meth:`close`). Keep them quick.

    :param group_id: the election's name; one group per elected role.
    :param bootstrap_servers: the coordinator or Kafka cluster.
    :param name: this instance's name, shown to every member when it leads.
    :param priority: higher is preferred.
    :param eligible: False for an instance that must never lead (it still learns the leader).
    :param address: where this instance can be reached, told to every member when it leads.
    :param version: the application's version, told to every member when it leads.
    :param session_timeout_ms: how long the coordinator waits for a silent instance; bounds
        crash failover.
    :param heartbeat_interval_ms: time between heartbeats; defaults to a third of the session
        (Kafka's ratio). The embedded coordinator holds each heartbeat up to a third of the
        session and answers it the moment the group changes, so members learn of a change at
        once; against Kafka they learn at their next heartbeat.
    :param preferred_leader: move leadership to a newly joined member of higher priority.
    :param on_elected: called with the epoch when this member starts leading.
    :param on_revoked: called when this member stops leading.
    :param rule: the election rule, by the name a plugin registered it under for protocol type
        ``leader`` (the built-in ``leader-election``, :func:`elect`); a plugin's rule has
        :func:`elect`'s signature and returns a :class:`LeaderAssignment`. Every member of a
        group must use the same rule (it is the group's protocol name). With
        ``group_protocol="incremental"`` the coordinator runs the server-side assignor of that
        name (the built-in :func:`elect_on_coordinator`).
    :param group_protocol: ``"classic"`` (the default: every membership change is a short
        leaderless rebalance of the whole group) or ``"incremental"``: on the embedded
        coordinator the coordinator itself hands the leadership out, so members joining and
        leaving never interrupt the leader, a new leader starts only once the old one has
        stepped down, and the epoch is the coordinator's member epoch at which it was
        elected; a Kafka cluster does not serve it, and the election falls back to the
        classic protocol (logged).
    :param plugins: where the rule is looked up (default: the installed plugins,
        :func:`coordinator_api.installed_plugins`).
    :param options: further :class:`~coordinator_api.Coordinator` settings (``client_id``,
        ``lease_margin_ms``, ``plugin_manager``, security settings, ...).
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        name: str,
        *,
        priority: int = 0,
        eligible: bool = True,
        address: str | None = None,
        version: str = "",
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int | None = None,
        preferred_leader: bool = False,
        on_elected: ElectedCallback | None = None,
        on_revoked: RevokedCallback | None = None,
        rule: str = PROTOCOL_NAME,
        group_protocol: str = "classic",
        plugins: PluginRegistry | None = None,
        **options: Any,
    ) -> None:
        registry = plugins if plugins is not None else installed_plugins()
        self._elect = registry.assignors.choose(PROTOCOL_TYPE, rule, group_id=group_id, what="election rule")
        self.rule = rule
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"group {group_id!r}: name must be a non-empty string, got {name!r}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ConfigurationError(f"group {group_id!r}: priority must be an int, got {priority!r}")
        for label, callback in (("on_elected", on_elected), ("on_revoked", on_revoked)):
            if callback is not None and not callable(callback):
                raise ConfigurationError(f"group {group_id!r}: {label} must be callable, got {callback!r}")
        if not isinstance(session_timeout_ms, int) or session_timeout_ms <= 0:
            raise ConfigurationError(
                f"group {group_id!r}: session_timeout_ms must be a positive integer, "
                f"got {session_timeout_ms!r}"
            )
        interval = session_timeout_ms // 3 if heartbeat_interval_ms is None else heartbeat_interval_ms
        options.setdefault("client_id", f"leader-{name}")
        # The member validates the group id, the timeouts and the connection options.
        self._member = _ElectionMember(
            self,
            group_id,
            bootstrap_servers,
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=interval,
            group_protocol=group_protocol,
            **options,
        )
        self.name = name
        self.priority = priority
        self.eligible = bool(eligible)
        self.address = address or ""
        self.version = version
        self.preferred_leader = preferred_leader
        self._on_elected = on_elected
        self._on_revoked = on_revoked
        self._lock = threading.Condition()
        self._leading = False
        self._generation = -1  # the generation this member was elected in
        self._term: Leadership | None = None
        self._terms = 0
        self._leader: LeaderInfo | None = None
        self._epoch_seen = -1
        self._led_epoch = -1
        self._sitting_out = False  # resigned: not eligible in the next election
        self._thread: threading.Thread | None = None
        self._closing = threading.Event()
        self._error: CoordinatorApiError | None = None

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def group_id(self) -> str:
        return self._member.group_id

    @property
    def member_id(self) -> str:
        return self._member.member_id

    def start(self) -> LeaderElection:
        """Join the election (on a background thread); returns at once."""
        if self._closing.is_set():
            raise CoordinatorClosedError(
                "this LeaderElection is closed; create a new one", group_id=self.group_id, member_id=""
            )
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name=f"leader-election-{self.name}", daemon=True
            )
            self._thread.start()
        return self

    def close(self, timeout: float = 30.0) -> None:
        """Step down if leading, leave the group (the others elect a successor at once) and stop,
        waiting at most about ``timeout`` seconds in all for the election thread and the
        coordinator's answer to the leave. Idempotent."""
        if self._closing.is_set():
            return
        deadline = time.monotonic() + timeout
        self._closing.set()
        self._member.wakeup()
        if self._thread is not None:
            self._thread.join(timeout)
        self._member.close(max(deadline - time.monotonic(), 0.0))
        self._step_down("the election closed", forget_leader=True)

    def __enter__(self) -> LeaderElection:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- queries ------------------------------------------------------------------------------

    def is_leader(self) -> bool:
        """True if this member leads now: elected, not stepped down, and its lease valid at this
        very moment (a paused process that resumes reads False before its heartbeat thread
        has run)."""
        with self._lock:
            if not self._leading:
                return False
            generation = self._generation
        stable = self._member.generation_if_stable()
        # The incremental protocol moves the member epoch on while leadership stays: the
        # leadership is revoked explicitly (and stepped down from) when it moves.
        return stable is not None and (self._incremental() or stable.generation_id == generation)

    def leader(self) -> str | None:
        """The leader's name, or None while no leader is known (before the first election,
        during a rebalance, after this member lost contact)."""
        info = self.leader_info()
        return info.name if info else None

    def leader_info(self) -> LeaderInfo | None:
        """The leader's identity and epoch, or None (see :meth:`leader`). With the incremental
        protocol a member learns the leader from the coordinator's answers to its heartbeats:
        at once when the group changes, else within a heartbeat interval."""
        if not self._incremental():
            with self._lock:
                return self._leader
        with self._lock:
            if self._leading:
                return LeaderInfo(
                    name=self.name,
                    address=self.address,
                    priority=self.priority,
                    version=self.version,
                    epoch=self._led_epoch,
                    member_id=self.member_id,
                )
        owner = self._member.resource_owners().get(LEADERSHIP)
        if owner is None:
            return None
        member_id, data = owner
        try:
            leader = decode(Candidate, data)
        except PayloadError:
            return None
        return LeaderInfo(
            name=leader.name,
            address=leader.address,
            priority=leader.priority,
            version=leader.version,
            epoch=leader.led_epoch,  # published by the leader once elected
            member_id=member_id,
        )

    def epoch(self) -> int:
        """The epoch of the current leadership as this member knows it (-1 before any)."""
        info = self.leader_info()
        with self._lock:
            return info.epoch if info else self._epoch_seen

    def wait_until_leader(self, timeout: float | None = None) -> bool:
        """Block until this member leads, or ``timeout`` seconds pass; True if it leads."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.is_leader():
                return True
            with self._lock:
                if self._error is not None:
                    raise self._error
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._lock.wait(0.5 if remaining is None else min(remaining, 0.5))

    # --- acting as leader -------------------------------------------------------------------

    @contextlib.contextmanager
    def leadership(
        self, timeout: float | None = None, *, resign_on_exit: bool = True
    ) -> Iterator[Leadership]:
        """Wait until this member leads and run the body as the leader.

        The body receives a :class:`Leadership` whose ``ended`` event is set when leadership
        ends; it must stop acting then. Leaving the body hands leadership over (``resign``),
        as kazoo's ``Election.run`` does, unless ``resign_on_exit=False``.

        :raises NotLeaderError: not elected within ``timeout`` seconds.
        """
        if not self.wait_until_leader(timeout):
            raise NotLeaderError(
                f"not elected within {timeout} s (leader: {self.leader() or 'none'})",
                group_id=self.group_id,
                member_id=self.member_id,
            )
        with self._lock:
            term = self._term
        if term is None:  # the term ended between the two checks
            raise NotLeaderError("leadership ended at once", group_id=self.group_id, member_id=self.member_id)
        try:
            yield term
        finally:
            if resign_on_exit and not term.ended.is_set():
                self.resign()

    def resign(self) -> None:
        """Stop leading now and let another member be elected; this member stays in the group
        and becomes eligible again after that election (or at once if nobody else can lead)."""
        with self._lock:
            leading = self._leading
            if leading:
                self._sitting_out = True
        if leading:
            self._step_down("resigned", forget_leader=True)
            self._member.request_rejoin("the leader resigned")

    # --- the member's callbacks -----------------------------------------------------------------

    def _candidate(self) -> Candidate:
        with self._lock:
            return Candidate(
                name=self.name,
                address=self.address,
                priority=self.priority,
                eligible=self.eligible and not self._sitting_out,
                version=self.version,
                epoch_seen=self._epoch_seen,
                led_epoch=self._led_epoch,
                preferred_leader=self.preferred_leader,
            )

    def _incremental(self) -> bool:
        return self._member.group_protocol == "incremental"

    def _elected(self, epoch: int) -> None:
        """The incremental protocol: the coordinator gave this member the leadership at member
        epoch ``epoch``, its fencing token."""
        with self._lock:
            self._error = None
            self._epoch_seen = max(self._epoch_seen, epoch)
            self._leading, self._generation, self._led_epoch = True, epoch, epoch
            self._terms += 1
            elected = self._term = Leadership(self, epoch, self._terms)
            self._lock.notify_all()
        # The others learn the epoch from this member's payload, which now says it.
        self._member.request_rejoin("publish the leadership epoch")
        log.info("group %s: %s leads with epoch %d", self.group_id, self.name, epoch)
        if self._on_elected is not None:
            self._call_back("on_elected", self._on_elected, elected.epoch)

    def _stand_again(self) -> None:
        """The incremental protocol: the leadership this member resigned has moved (or nobody
        else could take it): it is a candidate again."""
        with self._lock:
            if not self._sitting_out:
                return
            self._sitting_out = False
        self._member.request_rejoin("a candidate again after resigning")

    def _joined(self, generation: int, member_id: str, outcome: LeaderAssignment) -> None:
        elected: Leadership | None = None
        rejoin = False
        with self._lock:
            self._error = None
            self._epoch_seen = max(self._epoch_seen, outcome.epoch)
            self._leader = (
                LeaderInfo(
                    name=outcome.leader_name,
                    address=outcome.leader_address,
                    priority=outcome.leader_priority,
                    version=outcome.leader_version,
                    epoch=outcome.epoch,
                    member_id=outcome.leader_id,
                )
                if outcome.leader_id
                else None
            )
            if self._sitting_out and outcome.leader_id != member_id:
                self._sitting_out = False
                rejoin = not outcome.leader_id  # nobody else could lead: stand again
            if outcome.leader_id == member_id and not self._leading:
                self._leading = True
                self._generation = generation
                self._led_epoch = outcome.epoch
                self._terms += 1
                elected = self._term = Leadership(self, outcome.epoch, self._terms)
            self._lock.notify_all()
        if rejoin:
            self._member.request_rejoin("no other member could lead")
        if elected is not None:
            log.info("group %s: %s leads with epoch %d", self.group_id, self.name, elected.epoch)
            if self._on_elected is not None:
                self._call_back("on_elected", self._on_elected, elected.epoch)

    def _step_down(self, reason: str, *, forget_leader: bool) -> None:
        with self._lock:
            if forget_leader:
                self._leader = None
            if not self._leading:
                return
            self._leading = False
            term, self._term = self._term, None
            self._lock.notify_all()
        if term is not None:
            term.ended.set()
        log.info("group %s: %s stops leading: %s", self.group_id, self.name, reason)
        if self._on_revoked is not None:
            self._call_back("on_revoked", self._on_revoked)

    def _call_back(self, label: str, callback: Callable[..., None], *args: Any) -> None:
        # The application's callback must not take the membership down with it: leadership
        # has already started or ended by the time it runs.
        try:
            callback(*args)
        except Exception:
            log.exception("group %s: %s raised", self.group_id, label)

    def _run(self) -> None:
        while not self._closing.is_set():
            try:
                self._member.poll(0.25)
            except CallbackError:
                log.exception("group %s: an election callback failed", self.group_id)
            except CoordinatorApiError as exc:
                # Nothing a retry fixes (e.g. the group has another protocol type): report it
                # to whoever waits, and try again later in case it was fixed.
                log.error("group %s: %s", self.group_id, exc)
                with self._lock:
                    self._error = exc
                    self._lock.notify_all()
                self._closing.wait(1.0)


def election_member(group_id: str, bootstrap_servers: str | list[str], **options: Any) -> Coordinator:
    """The group member of a new :class:`LeaderElection`, for code that makes members by
    protocol type (``installed_plugins().protocols.create("leader", group_id, bootstrap,
    name="node-1")``): polling it runs the election, and its ``election`` is the
    :class:`LeaderElection` (``name`` and every other argument are that class's)."""
    return LeaderElection(group_id, bootstrap_servers, **options)._member
