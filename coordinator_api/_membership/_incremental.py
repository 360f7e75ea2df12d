"""The member side of Kafka's incremental rebalance protocol (KIP-848), as a sans-IO machine.

The coordinator computes every member's assignment; a member only says what it subscribes to
and what it owns, in ConsumerGroupHeartbeat, and reconciles on its own: no JoinGroup, no
SyncGroup, no group-wide barrier. States (Kafka's consumer names them alike)::

    UNJOINED ──app polls──▶ JOINING ──answer──▶ RECONCILING ──app applied──▶ ACKNOWLEDGING
        ▲                      ▲                     ▲                            │ answer
        │                      │                     └──── a new assignment ◀── STABLE ◀┘
        │                      └── FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, lease ran out
        └──── leave, max poll interval            FENCED ◀── FENCED_INSTANCE_ID (final)

Rules:

* **Everything that changes the machine goes through** :meth:`IncrementalMachine.handle`, as in
  the classic machine: the event's handler from the event table (``_EVENTS``), then each timer
  that is due from the timer table (``_TIMERS``), then the advance step.
* **Heartbeats carry everything.** Every heartbeat is full (subscription, rebalance timeout,
  owned partitions), so every answer carries the member's whole assignment and a lost answer
  costs nothing. Heartbeats go one at a time, every ``heartbeat_interval_ms`` *as the
  coordinator sets it* in its answers, counted from each send (a coordinator that held an
  answer gets the next heartbeat at once). An answer that moves the member to a new epoch
  with nothing to apply is followed by the next heartbeat at once too: a coordinator that
  holds heartbeats holds that one, so the member hears of the next change when it happens.
* **The application applies assignments.** An answer whose assignment differs from what the
  member owns becomes :class:`Reconcile` for the application thread: give up what is gone
  first, then start what is new (revoke before assign, as Kafka). :class:`Reconciled` tells the
  machine, which acknowledges at once with a heartbeat listing the new owned partitions: the
  coordinator frees revoked partitions for their next owners only when a heartbeat no longer
  lists them. One assignment is applied at a time; while one is, heartbeats list what it
  starts as owned too, since a newer answer may already have taken some of it away (the
  coordinator then waits for this member to give them up, instead of handing them on while it
  starts them).
* **Lease safety.** The coordinator cannot expire this member before ``session_timeout_ms``
  after it received the member's last heartbeat, which is no earlier than the member sent it.
  A member that owns partitions therefore declares them :class:`Lost` ``lease_margin_ms``
  before the send time of its last acknowledged heartbeat plus the session, and rejoins. The
  coordinator fences a member that does not revoke within its rebalance timeout, so a
  revocation the application has not finished within ``rebalance_timeout_ms`` (less the
  margin) of the heartbeat that asked for it loses everything too. The session is the
  coordinator's setting (``group.consumer.session.timeout.ms``): ``session_timeout_ms`` here
  must not exceed it.
* **Errors** as Kafka's consumer handles them: FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID lose
  the assignment and rejoin with epoch 0 (same member id), and so does GROUP_ID_NOT_FOUND (a
  coordinator that no longer knows the group), except as the answer to a join: then the group
  id is taken by a group the coordinator will not move to this protocol (a classic group of
  another protocol type, or one its migration policy keeps classic), which a retry cannot fix
  (Kafka's consumer fails there too); NOT_COORDINATOR and
  COORDINATOR_NOT_AVAILABLE find the coordinator again; COORDINATOR_LOAD_IN_PROGRESS and
  UNRELEASED_INSTANCE_ID (a static member's previous process still holds its place) retry after
  a backoff; FENCED_INSTANCE_ID is final; errors a retry cannot fix (an unsupported assignor, a
  full group, an invalid regex, a group id taken) become :class:`Fail`; a poll after that
  joins again, no sooner than ``retry_backoff_ms`` after the failure.
* **A static member starts over by releasing its place first.** The coordinator refuses a
  join (epoch 0) for an instance id whose member is still active, even from that same member
  (UNRELEASED_INSTANCE_ID, fatal in Kafka's Java consumer), until the session runs out. So a
  static member that must rejoin while the coordinator may still hold its place (fenced epoch,
  lease ran out, the application failed an assignment, a join whose answer never came) first
  leaves with epoch -2, which keeps its partitions for the instance, then joins and takes that
  place back at once: no session to wait for, no new group epoch. Whatever that leave is
  answered, the join follows (a leave by a member the coordinator does not hold changes
  nothing).
* **Max poll interval.** A member whose application has not polled for
  ``max_poll_interval_ms`` leaves so the others need not wait for it; it rejoins when the
  application polls again.

Assignments are sets of (topic id, partition) pairs; naming topics is the caller's business.
Time is ``now`` in milliseconds (any
monotonic origin); nothing here reads a clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from coordinator_api._membership._machine import (
    Action,
    CoordinatorFound,
    CoordinatorLookupFailed,
    Fail,
    FindCoordinator,
    JoinWanted,
    LeaveAnswered,
    LeaveWanted,
    Lost,
    Polled,
    RequestFailed,
    RequestKind,
    Tick,
    TimerKind,
    TimerRow,
    TimerTable,
)
from coordinator_api._protocol import ErrorCode, error_name
from coordinator_api._transitions import EventTable, on
from coordinator_api._types import Generation

#: An assignment: (topic id, partition) pairs.
Assignment = frozenset[tuple[bytes, int]]

#: The member epochs of the protocol: joining, leaving, and a static member leaving for now.
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
_REJOIN = frozenset(
    {ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.GROUP_ID_NOT_FOUND}
)
_BACK_OFF = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNRELEASED_INSTANCE_ID})


class IncrementalState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"


@dataclass(frozen=True, kw_only=True)
class IncrementalSettings:
    group_id: str
    member_id: str  # generated by the client (KIP-1082), kept for the member's whole life
    group_instance_id: str | None
    session_timeout_ms: int  # at most the coordinator's, for the lease
    heartbeat_interval_ms: int  # until the coordinator says otherwise
    rebalance_timeout_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    lease_margin_ms: int


# --- events of this protocol (the rest are shared with the classic machine) ------------------


@dataclass(frozen=True)
class GroupHeartbeatAnswered:
    """A ConsumerGroupHeartbeat's answer. ``assignment`` is None when the answer has none."""

    sent_at: int
    error: int
    message: str = ""
    member_epoch: int = JOIN_EPOCH
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True)
class Reconciled:
    """The application applied the assignment of :class:`Reconcile` (``ok``), or failed to."""

    action: Reconcile
    ok: bool


Event = (
    JoinWanted
    | Polled
    | CoordinatorFound
    | CoordinatorLookupFailed
    | GroupHeartbeatAnswered
    | Reconciled
    | RequestFailed
    | LeaveWanted
    | LeaveAnswered
    | Tick
)


# --- actions -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendGroupHeartbeat(Action):
    """Send a full heartbeat: ``member_epoch`` 0 joins, -1 or -2 leave (``owned`` is then
    empty)."""

    member_id: str
    member_epoch: int
    owned: Assignment


@dataclass(frozen=True)
class ReleaseHeldHeartbeat(Action):
    """Send the coordinator one small request on the heartbeats' connection: a coordinator that
    holds heartbeats with nothing new (the embedded one) answers the held one the moment another
    request arrives on its connection, so the heartbeat that must follow it goes at once. Kafka's
    brokers hold nothing and merely answer it. ``after``: the number of heartbeats (not leaves)
    this member has sent, the last of them being the one to release; it must reach the
    coordinator first."""

    after: int


@dataclass(frozen=True)
class Reconcile(Action):
    """Application thread: revoke ``revoked``, then start ``assigned``; ``assignment`` is what
    the member then owns."""

    member_epoch: int
    member_id: str
    assignment: Assignment
    revoked: Assignment
    assigned: Assignment


@dataclass
class IncrementalMachine:
    settings: IncrementalSettings
    state: IncrementalState = IncrementalState.UNJOINED
    member_epoch: int = JOIN_EPOCH
    owned: Assignment = frozenset()  # what the application has applied
    target: Assignment | None = None  # the latest assignment the coordinator gave
    heartbeat_interval_ms: int = 0
    want_join: bool = False
    coordinator_known: bool = False
    finding: bool = False
    in_flight: set[RequestKind] = field(default_factory=set)
    awaiting: Reconcile | None = None  # the assignment the application is applying
    # Send time of the heartbeat whose answer asked to revoke, until the coordinator has read a
    # heartbeat that no longer lists the revoked partitions: until then it fences the member (and
    # takes everything it owns) a rebalance timeout after asking.
    revocation_asked_at: int | None = None
    revoked_unacknowledged: Assignment = frozenset()  # revoked, not yet listed as gone
    session_anchor: int | None = None  # send time of the last acknowledged heartbeat
    # Send time of the first heartbeat sent since the last answer read: the coordinator may have
    # answered it with a revocation this member has not read (it may be paused), starting the
    # rebalance timeout after which it hands the partitions on, no earlier than that send.
    unanswered_since: int | None = None
    last_poll: int = 0
    next_heartbeat: int | None = None
    retry_at: int | None = None
    news_to_send: bool = False  # the subscription changed: heartbeat as soon as one may go
    must_release: bool = False  # a static member leaves with epoch -2 before it joins again
    releasing: bool = False  # that leave is in flight
    incarnation: int = 0  # grows whenever a membership ends; older answers are ignored
    _sent_incarnation: int = 0
    _sent_owned: Assignment = frozenset()  # what the heartbeat in flight lists as owned
    _sent_epoch: int = JOIN_EPOCH  # the epoch the heartbeat in flight carries
    _acknowledged_owned: Assignment = frozenset()  # what the last answered heartbeat listed
    _released_held: bool = False  # asked the coordinator to answer the heartbeat in flight now
    _heartbeats_sent: int = 0  # heartbeats (not leaves) sent so far
    _actions: list[Action] = field(default_factory=list)  # FindCoordinator, SendGroupHeartbeat,
    # Reconcile, Lost, Fail

    def __post_init__(self) -> None:
        self.heartbeat_interval_ms = self.settings.heartbeat_interval_ms

    # --- queries ---------------------------------------------------------------------------

    @property
    def member_id(self) -> str:
        return self.settings.member_id

    def generation(self) -> Generation:
        """The member epoch plays the generation's part (commits are fenced by it)."""
        if self.state in (IncrementalState.UNJOINED, IncrementalState.FENCED) or self.member_epoch <= 0:
            return Generation(-1, "", None)
        return Generation(self.member_epoch, self.member_id, None)

    def is_stable(self, now: int | None = None) -> bool:
        """True while the member may act on what it owns: it is in the group, has applied the
        latest assignment it was given (none waits for the application) and, given ``now``,
        its lease has not run out. Reconciliations do not interrupt it: nobody else can be
        given a partition before this member acknowledges giving it up."""
        if self.state in (IncrementalState.UNJOINED, IncrementalState.FENCED) or self.member_epoch <= 0:
            return False
        return self.awaiting is None and self.assignment_fresh(now)

    def assignment_fresh(self, now: int | None) -> bool:
        """Whether, at ``now``, the lease of what the member owns or is about to start holds."""
        lease = self.lease_deadline()
        return now is None or lease is None or now < lease

    def acknowledging(self) -> bool:
        """Whether the member has applied an assignment the coordinator has not yet heard it
        applied: the answer to that acknowledgement may move its epoch."""
        return self.state is IncrementalState.ACKNOWLEDGING

    @property
    def holds_assignment(self) -> bool:
        """Whether the application works on partitions it has not released yet."""
        return bool(self.owned)

    def awaits(self, action: Action) -> bool:
        """Whether the machine still waits for the application to carry out ``action``."""
        return action is self.awaiting

    def lease_deadline(self) -> int | None:
        """When what the member owns (or is about to start) must be given up; None if nothing."""
        holds = self.owned or (self.awaiting is not None and self.awaiting.assigned)
        if not holds or self.session_anchor is None:
            return None
        s = self.settings
        deadline = self.session_anchor + s.session_timeout_ms
        if self.revocation_asked_at is not None:
            deadline = min(deadline, self.revocation_asked_at + s.rebalance_timeout_ms)
        if self.unanswered_since is not None:
            deadline = min(deadline, self.unanswered_since + s.rebalance_timeout_ms)
        return deadline - s.lease_margin_ms

    def next_deadline(self) -> int | None:
        """When the driver must call :meth:`handle` again (with :class:`Tick`) if nothing else
        happens first."""
        return _TIMERS.next_deadline(self)

    # --- the one entry point ---------------------------------------------------------------

    def handle(self, event: Event, now: int) -> list[Action]:
        if self.state is IncrementalState.FENCED and not isinstance(event, LeaveWanted):
            return []
        _EVENTS.handler(event)(self, event, now)
        _TIMERS.expire(self, now)
        self._advance(now)
        actions, self._actions = self._actions, []
        return actions

    # --- events ----------------------------------------------------------------------------

    def _on_JoinWanted(self, event: JoinWanted, now: int) -> None:
        self._take_part(now)
        if self._joined() and self.next_heartbeat is not None:
            # Asked to rejoin while in the group: what it subscribes to may have changed, so the
            # coordinator hears it now (a heartbeat carries it all), or as soon as the heartbeat
            # in flight is answered.
            self.news_to_send = True
            self.next_heartbeat = min(self.next_heartbeat, now)

    def _on_Polled(self, event: Polled, now: int) -> None:
        self._take_part(now)

    def _take_part(self, now: int) -> None:
        self.last_poll = now
        self.want_join = True

    def _on_CoordinatorFound(self, event: CoordinatorFound, now: int) -> None:
        self.finding, self.coordinator_known, self.retry_at = False, True, None

    def _on_CoordinatorLookupFailed(self, event: CoordinatorLookupFailed, now: int) -> None:
        self.finding = False
        if not event.fatal_error:
            self.retry_at = now + self.settings.retry_backoff_ms
            return
        self._lose(f"the coordinator answered {event.fatal_error}")
        self._rejoin_from_nothing(release=False)
        self.state, self.want_join = IncrementalState.UNJOINED, False
        message = f"FindCoordinator: the coordinator answered {event.fatal_error}"
        self._actions.append(Fail("join", message, event.fatal_error))

    def _on_RequestFailed(self, event: RequestFailed, now: int) -> None:
        self.in_flight.discard(event.kind)
        self.finding = self.finding and event.kind is not RequestKind.FIND
        self.coordinator_known = False
        self.retry_at = now + self.settings.retry_backoff_ms
        if event.kind is RequestKind.HEARTBEAT and self.next_heartbeat is not None:
            self.next_heartbeat = self.retry_at
        if event.kind is RequestKind.HEARTBEAT and self._sent_epoch == JOIN_EPOCH:
            # The join may have reached the coordinator: this member may hold its place.
            self.must_release = self._static()
        elif event.kind is RequestKind.LEAVE and self.releasing:
            self.releasing, self.must_release = False, True  # again, once it is reachable

    def _on_LeaveAnswered(self, event: LeaveAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.LEAVE)
        if self.releasing:
            self.releasing, self.next_heartbeat = False, now  # now join

    def _on_Tick(self, event: Tick, now: int) -> None:
        pass

    def _on_GroupHeartbeatAnswered(self, event: GroupHeartbeatAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.HEARTBEAT)
        if self.state in (IncrementalState.UNJOINED, IncrementalState.FENCED) or (
            self._sent_incarnation != self.incarnation
        ):
            return  # answers a heartbeat of a membership that has ended since
        self.unanswered_since = None
        error = event.error
        if error == ErrorCode.NONE:
            self.session_anchor = max(self.session_anchor or event.sent_at, event.sent_at)
            self.member_epoch = event.member_epoch
            if event.heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = event.heartbeat_interval_ms
            # An interval after the send, not after the answer: an answer the coordinator held
            # (the embedded one holds those with nothing new) is followed by the next at once,
            # so the member is always reachable for news; otherwise it changes nothing.
            self.next_heartbeat = max(now, event.sent_at + self.heartbeat_interval_ms)
            if self._sent_epoch == JOIN_EPOCH or self.news_to_send:
                # Joined (or the subscription changed meanwhile): heartbeat again at once. A
                # coordinator that holds heartbeats then answers the moment this member's
                # partitions are released by their owners; one that does not answers at once.
                self.next_heartbeat = now
            self._acknowledged_owned = self._sent_owned
            if self.awaiting is None and not self._sent_owned & self.revoked_unacknowledged:
                self._forget_revocation()  # the coordinator has read that they are gone
            if event.assignment is not None:
                self.target = event.assignment
            self._settle(event.sent_at)
            if event.member_epoch != self._sent_epoch and self.state is IncrementalState.STABLE:
                # A new epoch and nothing to apply: heartbeat again at once. A coordinator that
                # holds heartbeats holds that one, so the next change reaches this member when
                # it happens rather than an interval later; one that does not answers it at once
                # (one heartbeat more per change), and the interval goes on from there.
                self.next_heartbeat = now
        elif error in _REJOIN and not (
            error == ErrorCode.GROUP_ID_NOT_FOUND and self._sent_epoch == JOIN_EPOCH
        ):
            self._lose(f"the coordinator fenced this member ({error_name(error)}: {event.message})")
            # FENCED_MEMBER_EPOCH leaves the member in the group; the others mean it is gone.
            self._rejoin_from_nothing(release=error == ErrorCode.FENCED_MEMBER_EPOCH)
        elif error == ErrorCode.FENCED_INSTANCE_ID:
            self._fence()
        elif error in _COORDINATOR_MOVED:
            self.coordinator_known = False
            self.next_heartbeat = now  # to the new coordinator as soon as it is found
        elif error in _BACK_OFF:
            self.retry_at = self.next_heartbeat = now + self.settings.retry_backoff_ms
        else:
            # A retry cannot fix it: stop and tell the application, which may poll again (its
            # next join waits out the retry backoff, however often it polls).
            self._lose(f"the coordinator answered {error_name(error)}")
            self._rejoin_from_nothing(release=False)
            self.state, self.want_join = IncrementalState.UNJOINED, False
            self.retry_at = now + self.settings.retry_backoff_ms
            detail = f": {event.message}" if event.message else ""
            self._actions.append(
                Fail(
                    "join",
                    f"heartbeat: the coordinator answered {error_name(error)}{detail}",
                    error_name(error),
                )
            )

    def _on_Reconciled(self, event: Reconciled, now: int) -> None:
        if event.action is not self.awaiting:
            return  # the membership it belongs to has ended
        self.awaiting = None
        self.revoked_unacknowledged |= event.action.revoked
        if not event.ok:
            # The application could not apply it: start over, owning nothing.
            self._lose("the application failed to apply its assignment")
            self._rejoin_from_nothing(release=True)
            return
        self.owned = event.action.assignment
        self._settle(now)

    def _settle(self, asked_at: int) -> None:
        """Apply the latest assignment if the application is free to, else note where we are."""
        if self.awaiting is not None:
            return  # the application applies one assignment at a time; the newest comes next
        target = self.target if self.target is not None else self.owned
        revoked, assigned = self.owned - target, target - self.owned
        if revoked or assigned:
            self.awaiting = Reconcile(self.member_epoch, self.member_id, target, revoked, assigned)
            if revoked:
                # The earliest ask not yet acknowledged (a send time of 0 is a time too).
                earlier = self.revocation_asked_at
                self.revocation_asked_at = asked_at if earlier is None else min(earlier, asked_at)
            self.state = IncrementalState.RECONCILING
            self._actions.append(self.awaiting)
        elif self._acknowledged_owned == self.owned:
            self.state = IncrementalState.STABLE
        else:
            # Acknowledge at once: revoked partitions are free for others only when a heartbeat
            # no longer lists them, and new ones count as started only once one lists them.
            self.state = IncrementalState.ACKNOWLEDGING
            self.next_heartbeat = (
                asked_at if self.next_heartbeat is None else min(self.next_heartbeat, asked_at)
            )

    def _on_LeaveWanted(self, event: LeaveWanted, now: int) -> None:
        self.want_join = self.must_release = self.releasing = False
        if self._joined() and self.state is not IncrementalState.FENCED:
            epoch = STATIC_LEAVE_EPOCH if self._static() else LEAVE_EPOCH
            self.in_flight.add(RequestKind.LEAVE)
            self._actions.append(SendGroupHeartbeat(self.member_id, epoch, frozenset()))
        self.owned, self.target, self.awaiting = frozenset(), None, None
        self.member_epoch, self.session_anchor, self.next_heartbeat = JOIN_EPOCH, None, None
        self.unanswered_since = None
        self._forget_revocation()
        self.incarnation += 1
        if self.state is not IncrementalState.FENCED:
            self.state = IncrementalState.UNJOINED

    # --- helpers ---------------------------------------------------------------------------

    def _static(self) -> bool:
        return self.settings.group_instance_id is not None

    def _joined(self) -> bool:
        return self.state is not IncrementalState.UNJOINED and (
            self.member_epoch > 0 or self.session_anchor is not None
        )

    def _lose(self, reason: str) -> None:
        if self.owned or self.awaiting is not None:
            self._actions.append(Lost(self.member_epoch, self.member_id, reason))
        self.owned, self.target, self.awaiting = frozenset(), None, None
        self._forget_revocation()

    def _forget_revocation(self) -> None:
        """No revocation can get this member fenced any more: the coordinator has read that the
        partitions are gone, or the membership has ended."""
        self.revocation_asked_at, self.revoked_unacknowledged = None, frozenset()

    def _rejoin_from_nothing(self, *, release: bool) -> None:
        """Join again with epoch 0; ``release``: the coordinator may still hold this member."""
        self.must_release = release and self._static() and (self.member_epoch > 0 or self.must_release)
        self.incarnation += 1
        self.member_epoch, self.session_anchor, self.unanswered_since = JOIN_EPOCH, None, None
        self._forget_revocation()
        self.state, self.want_join = IncrementalState.JOINING, True
        self.next_heartbeat = None

    def _fence(self) -> None:
        self._lose("another process joined with this member's group_instance_id")
        self.state = IncrementalState.FENCED
        self.next_heartbeat = self.retry_at = None
        self._actions.append(
            Fail(
                "fenced",
                f"fenced: another process joined with group_instance_id "
                f"{self.settings.group_instance_id!r}; give each process its own id and close this one",
                "FENCED_INSTANCE_ID",
            )
        )

    # --- timers (only those that can lead to an action are due, so a driver never wakes for
    # nothing) -------------------------------------------------------------------------------

    def _on_lease_expired(self, now: int) -> None:
        self._lose(
            "heartbeats have not been acknowledged in time (or a revocation took longer than the "
            "rebalance timeout); the coordinator may soon give this member's partitions to another"
        )
        self._rejoin_from_nothing(release=True)

    def _max_poll_due(self) -> int | None:
        if self._joined() and self.state is not IncrementalState.FENCED:
            return self.last_poll + self.settings.max_poll_interval_ms
        return None

    def _on_max_poll_expired(self, now: int) -> None:
        self._lose(
            f"the application did not poll for more than {self.settings.max_poll_interval_ms} ms "
            "(max_poll_interval_ms); leaving so the group can go on"
        )
        self._on_LeaveWanted(LeaveWanted("max poll interval exceeded"), now)

    def _retry_due(self) -> int | None:
        # After a failure the backoff matters once the application asks to join again.
        return None if self.state is IncrementalState.UNJOINED and not self.want_join else self.retry_at

    def _on_retry_expired(self, now: int) -> None:
        self.retry_at = None

    def _heartbeat_due(self) -> int | None:
        return self.next_heartbeat if self._can_heartbeat() else None

    def _can_heartbeat(self) -> bool:
        return (
            self.coordinator_known
            and self.retry_at is None
            and not (self.must_release or self.releasing)
            and self.next_heartbeat is not None
            and self.state not in (IncrementalState.UNJOINED, IncrementalState.FENCED)
            and RequestKind.HEARTBEAT not in self.in_flight
        )

    def _advance(self, now: int) -> None:
        if self.state is IncrementalState.FENCED or self.retry_at is not None:
            return
        if self.state is IncrementalState.UNJOINED and self.want_join:
            self.state, self.member_epoch, self.next_heartbeat = IncrementalState.JOINING, JOIN_EPOCH, None
        if self.state is IncrementalState.UNJOINED:
            return
        if not self.coordinator_known:
            if not self.finding:
                self.finding = True
                self._actions.append(FindCoordinator())
            return
        if self.must_release and RequestKind.LEAVE not in self.in_flight:
            self.must_release, self.releasing = False, True
            self.in_flight.add(RequestKind.LEAVE)
            self._actions.append(SendGroupHeartbeat(self.member_id, STATIC_LEAVE_EPOCH, frozenset()))
        joining = self.state is IncrementalState.JOINING and self.member_epoch == JOIN_EPOCH
        if joining and self.next_heartbeat is None and RequestKind.HEARTBEAT not in self.in_flight:
            self.next_heartbeat = now  # join at once
        if self._can_heartbeat() and self.next_heartbeat is not None and now >= self.next_heartbeat:
            self.in_flight.add(RequestKind.HEARTBEAT)
            self.next_heartbeat = now + self.heartbeat_interval_ms
            self.news_to_send = False
            # Owned: what the application works on, and what it may be starting right now: an
            # assignment it is applying may include partitions a newer answer took away, and the
            # coordinator must not give those to anyone before this member has let them go.
            starting = self.awaiting.assigned if self.awaiting is not None else frozenset()
            self._sent_incarnation, self._sent_owned = self.incarnation, self.owned | starting
            self._sent_epoch = self.member_epoch
            self._released_held = False
            self._heartbeats_sent += 1
            if self.unanswered_since is None:
                self.unanswered_since = now
            self._actions.append(SendGroupHeartbeat(self.member_id, self.member_epoch, self._sent_owned))
        elif (
            self._heartbeat_waits_behind_one_in_flight() or self._held_answer_nears_the_lease(now)
        ) and not self._released_held:
            self._released_held = True
            self._actions.append(ReleaseHeldHeartbeat(self._heartbeats_sent))

    def _held_answer_nears_the_lease(self, now: int) -> bool:
        """Whether the heartbeat in flight has gone unanswered for half of what the rebalance
        timeout leaves the lease: a coordinator holding it (nothing new to say) must answer it
        now, or the lease would end for want of an answer (it matters only with a rebalance
        timeout shorter than the hold)."""
        if self.unanswered_since is None or RequestKind.HEARTBEAT not in self.in_flight:
            return False
        s = self.settings
        return (
            self._sent_incarnation == self.incarnation
            and now >= self.unanswered_since + max(0, s.rebalance_timeout_ms - s.lease_margin_ms) // 2
        )

    def _heartbeat_waits_behind_one_in_flight(self) -> bool:
        """Whether a heartbeat that must go now (it carries a new subscription) waits for the
        answer to the one in flight. (A member with partitions to give up is never held.)"""
        return (
            self.news_to_send
            and RequestKind.HEARTBEAT in self.in_flight
            and self._sent_incarnation == self.incarnation
        )


_EVENTS: EventTable[IncrementalMachine, [int]] = EventTable(
    Event,
    on(JoinWanted, IncrementalMachine._on_JoinWanted),
    on(Polled, IncrementalMachine._on_Polled),
    on(CoordinatorFound, IncrementalMachine._on_CoordinatorFound),
    on(CoordinatorLookupFailed, IncrementalMachine._on_CoordinatorLookupFailed),
    on(GroupHeartbeatAnswered, IncrementalMachine._on_GroupHeartbeatAnswered),
    on(Reconciled, IncrementalMachine._on_Reconciled),
    on(RequestFailed, IncrementalMachine._on_RequestFailed),
    on(LeaveWanted, IncrementalMachine._on_LeaveWanted),
    on(LeaveAnswered, IncrementalMachine._on_LeaveAnswered),
    on(Tick, IncrementalMachine._on_Tick),
)


_TIMERS: TimerTable[IncrementalMachine] = TimerTable(
    TimerRow(TimerKind.LEASE, IncrementalMachine.lease_deadline, IncrementalMachine._on_lease_expired),
    TimerRow(TimerKind.MAX_POLL, IncrementalMachine._max_poll_due, IncrementalMachine._on_max_poll_expired),
    TimerRow(TimerKind.RETRY, IncrementalMachine._retry_due, IncrementalMachine._on_retry_expired),
    TimerRow(TimerKind.HEARTBEAT, IncrementalMachine._heartbeat_due, None),
)
