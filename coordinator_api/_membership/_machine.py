"""The member side of Kafka's classic group protocol, as a sans-IO state machine.

States::

    UNJOINED ──want to join──▶ JOINING ──JoinGroup ok──▶ COMPLETING ──SyncGroup ok──▶ STABLE
        ▲                        ▲  │                        │                         │
        │                        │  └── errors: retry, find the coordinator again ─────┤
        │                        └────────── rebalance seen (heartbeat), app polls ◀────┤
        │                                                                               │
        └──── leave, max poll interval ◀── LOST ◀── heartbeats failing past the lease ──┘
                                     FENCED ◀── FENCED_INSTANCE_ID (final)

Rules:

* **Everything that changes the machine goes through** :meth:`MemberMachine.handle`, in one
  order: the event's handler from the event table (``_EVENTS``, a row per event type), then each
  timer that is due from the timer table (``_TIMERS``, a row per :class:`TimerKind`), then the
  advance step, which issues whatever the new state allows. Nothing outside writes its fields.
* **The application's thread runs the application's code.** The machine asks for it with
  actions (:class:`PrepareJoin`, :class:`Assign`, :class:`Complete`) and waits for the matching
  event. Network actions (:class:`SendJoinGroup`, ...) and the lease hook (:class:`Lost`) are
  for the background driver. A rebalance therefore advances only while the application polls,
  while heartbeats go on without it, as in Kafka's Java consumer.
* **Heartbeats** go every ``heartbeat_interval_ms`` while the member is in a generation
  (COMPLETING or STABLE), one at a time, and not while a JoinGroup is outstanding.
* **Lease safety.** The coordinator cannot expire this member before ``session_timeout_ms`` has
  passed since it *received* the member's last request, which is no earlier than the member
  *sent* it. So a member that holds an assignment knows a time before which nobody else can be
  given it: the send time of its last acknowledged request plus the session timeout, and, once
  it has seen a rebalance start, the send time of its last request acknowledged as stable plus
  the rebalance timeout (the coordinator removes members that have not rejoined by then). The
  machine declares the assignment :class:`Lost` ``lease_margin_ms`` before the earlier of the
  two, then rejoins.
* **Max poll interval.** A member whose application has not polled for
  ``max_poll_interval_ms`` leaves the group, so the others need not wait for it, and rejoins
  when the application polls again.
* Errors the coordinator returns are handled as Kafka's clients handle them: a new member id
  on MEMBER_ID_REQUIRED; a fresh join on UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION or
  REBALANCE_IN_PROGRESS; finding the coordinator again on NOT_COORDINATOR and
  COORDINATOR_NOT_AVAILABLE; a backoff on COORDINATOR_LOAD_IN_PROGRESS; FENCED for
  FENCED_INSTANCE_ID; and a :class:`Fail` for errors a retry cannot fix (the application may
  ask again: that join waits out ``retry_backoff_ms`` from the failure).

Time is ``now`` in milliseconds (any monotonic origin); nothing here reads a clock.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from coordinator_api._protocol import ErrorCode, error_name
from coordinator_api._transitions import EventTable, on
from coordinator_api._types import NO_GENERATION_ID, NO_MEMBER_ID, Generation, JoinedMember

_COORDINATOR_MOVED = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


class RequestKind(str, enum.Enum):
    """A request the member sends; one of each kind may be in flight at a time."""

    FIND = "find"
    JOIN = "join"
    SYNC = "sync"
    HEARTBEAT = "heartbeat"
    LEAVE = "leave"


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    COMPLETING = "completing"
    STABLE = "stable"
    LOST = "lost"
    FENCED = "fenced"


@dataclass(frozen=True, kw_only=True)
class MemberSettings:
    group_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    heartbeat_interval_ms: int
    rebalance_timeout_ms: int
    max_poll_interval_ms: int
    retry_backoff_ms: int
    lease_margin_ms: int


# --- events: what happened --------------------------------------------------------------------


@dataclass(frozen=True)
class _Event:
    """Base of the events; :data:`Event` is their union, and :data:`_EVENTS` gives each its
    handler."""


@dataclass(frozen=True)
class JoinWanted(_Event):
    """The application wants to be in the group (again), e.g. ensure_active_group, rejoin."""

    reason: str


@dataclass(frozen=True)
class Polled(_Event):
    """The application called poll (or ensure_active_group): it takes part in the group."""


@dataclass(frozen=True)
class CoordinatorFound(_Event):
    pass


@dataclass(frozen=True)
class CoordinatorLookupFailed(_Event):
    error: str
    #: set when FindCoordinator answered an error no retry can fix (GROUP_AUTHORIZATION_FAILED)
    fatal_error: str = ""


@dataclass(frozen=True)
class Prepared(_Event):
    """The application ran on_join_prepare (if asked) and metadata()."""

    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class PrepareFailed(_Event):
    """on_join_prepare or metadata() failed; the next round asks again."""


@dataclass(frozen=True)
class JoinAnswered(_Event):
    sent_at: int
    error: int
    generation_id: int = NO_GENERATION_ID
    protocol_name: str | None = None
    leader_id: str = ""
    member_id: str = ""
    members: tuple[JoinedMember, ...] = ()
    skip_assignment: bool = False  # v9+ (KIP-814): the group keeps its assignment


@dataclass(frozen=True)
class AssignmentComputed(_Event):
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class AssignmentFailed(_Event):
    """perform_assignment raised or returned something unusable."""


@dataclass(frozen=True)
class SyncAnswered(_Event):
    sent_at: int
    error: int
    assignment: bytes = b""


@dataclass(frozen=True)
class Completed(_Event):
    """The application ran on_join_complete; ``ok`` is False if it raised or if the assignment
    was refused before it ran (``reason`` says which)."""

    ok: bool
    reason: str = "on_join_complete raised"


@dataclass(frozen=True)
class HeartbeatAnswered(_Event):
    sent_at: int
    error: int


@dataclass(frozen=True)
class RequestFailed(_Event):
    """A request got no answer (connection lost, timeout)."""

    kind: RequestKind
    error: str


@dataclass(frozen=True)
class LeaveWanted(_Event):
    reason: str


@dataclass(frozen=True)
class LeaveAnswered(_Event):
    error: int


@dataclass(frozen=True)
class Tick(_Event):
    """Time passed."""


Event = (
    JoinWanted
    | Polled
    | CoordinatorFound
    | CoordinatorLookupFailed
    | Prepared
    | PrepareFailed
    | JoinAnswered
    | AssignmentComputed
    | AssignmentFailed
    | SyncAnswered
    | Completed
    | HeartbeatAnswered
    | RequestFailed
    | LeaveWanted
    | LeaveAnswered
    | Tick
)


_Machine = TypeVar("_Machine")


class TimerKind(enum.Enum):
    """What a member machine waits for. A machine's :class:`TimerTable` says when each is due
    and what happens once it is."""

    LEASE = "lease"  # what the member holds must be given up
    MAX_POLL = "max poll interval"  # the application stopped polling: leave
    RETRY = "retry"  # a backoff after a failure ends
    HEARTBEAT = "heartbeat"  # the next heartbeat may go


@dataclass(frozen=True)
class TimerRow(Generic[_Machine]):
    """One row of a machine's timer table: when ``kind`` is due (None: not running, or unable
    to lead to an action) and what happens once it is (``expire``; None for a timer the
    machine's advance step acts on, as it sends the heartbeat that is due)."""

    kind: TimerKind
    due: Callable[[_Machine], int | None]
    expire: Callable[[_Machine, int], None] | None  # None: the advance step acts on it


class TimerTable(Generic[_Machine]):
    """A machine's timers, every :class:`TimerKind` once, in the order they expire in one step:
    the driver's next wake-up and the expiries come from the same rows, so they cannot differ
    on which timers exist or when they are due."""

    def __init__(self, *rows: TimerRow[_Machine]) -> None:
        kinds = [row.kind for row in rows]
        if len(kinds) != len(set(kinds)) or set(kinds) != set(TimerKind):
            raise TypeError(f"a timer table must give every timer kind one row: {[k.name for k in kinds]}")
        self._rows = rows

    def next_deadline(self, machine: _Machine) -> int | None:
        return min((d for d in (row.due(machine) for row in self._rows) if d is not None), default=None)

    def expire(self, machine: _Machine, now: int) -> None:
        """Run every timer that is due at ``now``; each row's deadline is read after the rows
        before it have run (a lease that ran out ends the poll interval's timer too)."""
        for row in self._rows:
            if row.expire is None:
                continue
            due = row.due(machine)
            if due is not None and now >= due:
                row.expire(machine, now)


# --- actions: what to do -------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    pass


@dataclass(frozen=True)
class FindCoordinator(Action):
    pass


@dataclass(frozen=True)
class PrepareJoin(Action):
    """Application thread: call on_join_prepare (if ``revoke``), then metadata()."""

    generation_id: int
    member_id: str
    revoke: bool


@dataclass(frozen=True)
class SendJoinGroup(Action):
    member_id: str
    protocols: tuple[tuple[str, bytes], ...]
    reason: str


@dataclass(frozen=True)
class Assign(Action):
    """Application thread: the leader computes the assignment."""

    leader_id: str
    protocol_name: str
    members: tuple[JoinedMember, ...]


@dataclass(frozen=True)
class SendSyncGroup(Action):
    generation_id: int
    member_id: str
    protocol_name: str | None
    assignments: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Complete(Action):
    """Application thread: call on_join_complete."""

    generation_id: int
    member_id: str
    protocol_name: str
    assignment: bytes


@dataclass(frozen=True)
class SendHeartbeat(Action):
    generation_id: int
    member_id: str


@dataclass(frozen=True)
class SendLeaveGroup(Action):
    member_id: str
    reason: str


@dataclass(frozen=True)
class Lost(Action):
    """Background thread: the assignment is no longer safe to act on (lease hook)."""

    generation_id: int
    member_id: str
    reason: str


@dataclass(frozen=True)
class Fail(Action):
    """Application thread: raise this to the caller of poll/ensure_active_group."""

    kind: str  # join, fenced
    message: str
    error_name: str = ""


@dataclass
class _Timers:
    next_heartbeat: int | None = None
    retry_at: int | None = None


@dataclass
class MemberMachine:
    settings: MemberSettings
    state: MemberState = MemberState.UNJOINED
    generation_id: int = NO_GENERATION_ID
    member_id: str = NO_MEMBER_ID
    protocol_name: str | None = None
    # What the application wants, and what is under way.
    want_join: bool = False  # a new round is wanted (cleared when one starts)
    join_reason: str = ""
    round_reason: str = ""  # why the current round started, sent with JoinGroup
    coordinator_known: bool = False
    finding: bool = False
    in_flight: set[RequestKind] = field(default_factory=set)
    awaiting_app: str | None = None  # prepare, assign, complete
    awaiting_action: Action | None = None  # the exact request the application has to answer
    holds_assignment: bool = False  # between Complete and the next PrepareJoin/Lost
    rebalance_seen: bool = False
    protocols: tuple[tuple[str, bytes], ...] = ()
    # Lease anchors: send times of the last acknowledged request, and of the last one that
    # found the group stable.
    session_anchor: int | None = None
    stable_anchor: int | None = None
    last_poll: int = 0
    timers: _Timers = field(default_factory=_Timers)
    _actions: list[Action] = field(default_factory=list)

    # --- queries --------------------------------------------------------------------------------

    def generation(self) -> Generation:
        return Generation(self.generation_id, self.member_id, self.protocol_name)

    def is_stable(self, now: int | None = None) -> bool:
        """True while the member holds a settled assignment it may act on; given ``now``, also
        only while its lease has not run out (a process resumed after a pause must not act
        before the heartbeat thread had a chance to notice)."""
        if self.state is not MemberState.STABLE or not self.holds_assignment:
            return False
        lease = self.lease_deadline()
        return now is None or lease is None or now < lease

    def awaits(self, action: Action) -> bool:
        """Whether the machine still waits for the application to answer ``action``."""
        return self.awaiting_app is not None and self.awaiting_action is action

    def lease_deadline(self) -> int | None:
        """When the assignment must be given up, or None if none is held."""
        return self._lease_end() if self.holds_assignment else None

    def assignment_fresh(self, now: int) -> bool:
        """Whether an assignment waiting for the application (``Complete``) may still be acted
        on: its lease, counted from the acknowledged SyncGroup and heartbeats, has not run out.
        A process paused between the SyncGroup answer and ``on_join_complete`` must not start
        on an assignment the coordinator may already have given to someone else."""
        end = self._lease_end()
        return end is None or now < end

    def _lease_end(self) -> int | None:
        if self.session_anchor is None:
            return None
        s = self.settings
        deadline = self.session_anchor + s.session_timeout_ms
        # A rebalance may start right after the last request the group answered as stable, and
        # remove this member a rebalance timeout later if it has not rejoined by then, whether or
        # not the member heard of the rebalance (it may have been paused since).
        if self.stable_anchor is not None:
            deadline = min(deadline, self.stable_anchor + s.rebalance_timeout_ms)
        return deadline - s.lease_margin_ms

    def next_deadline(self) -> int | None:
        """When the driver must call :meth:`handle` again (with :class:`Tick`) if nothing else
        happens first."""
        return _TIMERS.next_deadline(self)

    # --- the one entry point ----------------------------------------------------------------------

    def handle(self, event: Event, now: int) -> list[Action]:
        if self.state is MemberState.FENCED and not isinstance(event, LeaveWanted):
            return []
        _EVENTS.handler(event)(self, event, now)
        _TIMERS.expire(self, now)
        self._advance(now)
        actions, self._actions = self._actions, []
        return actions

    # --- events -------------------------------------------------------------------------------

    def _on_JoinWanted(self, event: JoinWanted, now: int) -> None:
        self.want_join = True
        self.join_reason = self.join_reason or event.reason
        self.last_poll = now

    def _on_Polled(self, event: Polled, now: int) -> None:
        # Polling means taking part: a member outside the group (new, lost, or after leaving)
        # joins again.
        self.last_poll = now
        if self.state is MemberState.LOST:
            self.state = MemberState.UNJOINED
        if (
            self.state is MemberState.UNJOINED
            and self.awaiting_app is None
            and not self.in_flight & {RequestKind.JOIN, RequestKind.SYNC}
        ):
            self._rejoin("the application polled")

    def _on_Tick(self, event: Tick, now: int) -> None:
        pass

    def _on_CoordinatorFound(self, event: CoordinatorFound, now: int) -> None:
        self.finding = False
        self.coordinator_known = True
        self.timers.retry_at = None

    def _on_CoordinatorLookupFailed(self, event: CoordinatorLookupFailed, now: int) -> None:
        self.finding = False
        if event.fatal_error:
            self.state, self.want_join, self.join_reason = MemberState.UNJOINED, False, ""
            self.timers.retry_at = None
            message = f"FindCoordinator: the coordinator answered {event.fatal_error}"
            self._actions.append(Fail("join", message, event.fatal_error))
            return
        self.timers.retry_at = now + self.settings.retry_backoff_ms

    def _on_Prepared(self, event: Prepared, now: int) -> None:
        if self.awaiting_app != "prepare":
            return
        self.awaiting_app = None
        self.holds_assignment = False  # the application has released it
        self.protocols = event.protocols
        self.state = MemberState.JOINING

    def _on_PrepareFailed(self, event: PrepareFailed, now: int) -> None:
        if self.awaiting_app == "prepare":
            self.awaiting_app = None
            self.holds_assignment = False
            self.state = MemberState.UNJOINED

    def _on_JoinAnswered(self, event: JoinAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.JOIN)
        if self.state is not MemberState.JOINING:
            return
        error = event.error
        if error == ErrorCode.NONE:
            self._acknowledged(event.sent_at)
            self.generation_id = event.generation_id
            self.member_id = event.member_id
            self.protocol_name = event.protocol_name
            self.state = MemberState.COMPLETING
            self.rebalance_seen = False
            self.timers.next_heartbeat = now + self.settings.heartbeat_interval_ms
            if event.leader_id == event.member_id and not event.skip_assignment:
                self._ask_app("assign", Assign(event.leader_id, event.protocol_name or "", event.members))
            else:
                # A follower; or a static leader restarted into a Stable group, whose
                # assignment stands (Kafka's ConsumerCoordinator assigns nothing then either).
                self._send_sync(())
        elif error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = event.member_id  # join again at once with it
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation(member_id_too=error == ErrorCode.UNKNOWN_MEMBER_ID)  # and join again
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            pass  # superseded by a newer join of ours; join again
        elif error == ErrorCode.FENCED_INSTANCE_ID:
            self._fence()
        else:
            self._retry_or_fail("join", error, now)

    def _on_AssignmentComputed(self, event: AssignmentComputed, now: int) -> None:
        if self.awaiting_app != "assign" or self.state is not MemberState.COMPLETING:
            return
        self.awaiting_app = None
        self._send_sync(event.assignments)

    def _on_AssignmentFailed(self, event: AssignmentFailed, now: int) -> None:
        # Leave, so the coordinator picks another leader and the group settles without us.
        if self.awaiting_app != "assign":
            return
        self.awaiting_app = None
        self._leave("the leader's perform_assignment failed")
        self._reset_generation(member_id_too=True)
        self.state = MemberState.UNJOINED

    def _on_SyncAnswered(self, event: SyncAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.SYNC)
        if self.state is not MemberState.COMPLETING:
            return
        error = event.error
        if error == ErrorCode.NONE:
            self._acknowledged(event.sent_at, stable=True)
            # Heartbeat at once in the new generation: a coordinator that holds heartbeats (the
            # embedded one) can then tell this member of the next rebalance the moment it starts.
            self.timers.next_heartbeat = now
            self._ask_app(
                "complete",
                Complete(self.generation_id, self.member_id, self.protocol_name or "", event.assignment),
            )
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self._rejoin("the group started another rebalance")
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            self._reset_generation(member_id_too=error == ErrorCode.UNKNOWN_MEMBER_ID)
            self.state = MemberState.UNJOINED
            self._rejoin("SyncGroup was refused")
        elif error == ErrorCode.FENCED_INSTANCE_ID:
            self._fence()
        else:
            self._retry_or_fail("sync", error, now)

    def _on_Completed(self, event: Completed, now: int) -> None:
        if self.awaiting_app != "complete":
            return
        self.awaiting_app = None
        self.state = MemberState.STABLE
        self.holds_assignment = True
        if not event.ok:
            self.holds_assignment = False
            self._rejoin(event.reason)

    def _on_HeartbeatAnswered(self, event: HeartbeatAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.HEARTBEAT)
        error = event.error
        if self.state not in (MemberState.COMPLETING, MemberState.STABLE):
            return
        if error == ErrorCode.NONE:
            self._acknowledged(event.sent_at, stable=True)
        elif error == ErrorCode.REBALANCE_IN_PROGRESS:
            self._acknowledged(event.sent_at)
            if not self.rebalance_seen:
                self.rebalance_seen = True
                self._rejoin("the group is rebalancing")
        elif error in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
            name = error_name(error)
            self._lose(f"the coordinator no longer knows this member's generation ({name})")
            self._reset_generation(member_id_too=error == ErrorCode.UNKNOWN_MEMBER_ID)
            self._rejoin("fenced by the coordinator")
        elif error == ErrorCode.FENCED_INSTANCE_ID:
            self._fence()
        elif error in _COORDINATOR_MOVED:
            self.coordinator_known = False
        # Anything else: keep heartbeating; the lease decides when it is too late.

    def _on_RequestFailed(self, event: RequestFailed, now: int) -> None:
        self.in_flight.discard(event.kind)
        if event.kind is RequestKind.FIND:
            self.finding = False
        self.coordinator_known = False
        self.timers.retry_at = now + self.settings.retry_backoff_ms
        if event.kind in (RequestKind.JOIN, RequestKind.SYNC) and self.state in (
            MemberState.JOINING,
            MemberState.COMPLETING,
        ):
            # The answer is lost; join again (the coordinator keeps our member id).
            self.state = MemberState.JOINING if self.protocols else MemberState.UNJOINED
            self.awaiting_app = None

    def _on_LeaveWanted(self, event: LeaveWanted, now: int) -> None:
        self.want_join = False
        if self.member_id and self.state is not MemberState.FENCED:
            self._leave(event.reason)
        self._reset_generation(member_id_too=True)
        self.awaiting_app = None
        if self.state is not MemberState.FENCED:
            self.state = MemberState.UNJOINED

    def _on_LeaveAnswered(self, event: LeaveAnswered, now: int) -> None:
        self.in_flight.discard(RequestKind.LEAVE)

    # --- helpers ------------------------------------------------------------------------------

    def _ask_app(self, kind: str, action: Action) -> None:
        self.awaiting_app = kind
        self.awaiting_action = action
        self._actions.append(action)

    def _acknowledged(self, sent_at: int, *, stable: bool = False) -> None:
        self.session_anchor = max(self.session_anchor or sent_at, sent_at)
        if stable:
            self.stable_anchor = max(self.stable_anchor or sent_at, sent_at)

    def _send_sync(self, assignments: tuple[tuple[str, bytes], ...]) -> None:
        self.in_flight.add(RequestKind.SYNC)
        self._actions.append(
            SendSyncGroup(self.generation_id, self.member_id, self.protocol_name, assignments)
        )

    def _reset_generation(self, *, member_id_too: bool) -> None:
        self.generation_id = NO_GENERATION_ID
        self.protocol_name = None
        if member_id_too:
            self.member_id = NO_MEMBER_ID
        self.session_anchor = self.stable_anchor = None
        self.timers.next_heartbeat = None

    def _rejoin(self, reason: str) -> None:
        self.want_join = True
        self.join_reason = self.join_reason or reason

    def _lose(self, reason: str) -> None:
        if self.holds_assignment:
            self.holds_assignment = False
            self._actions.append(Lost(self.generation_id, self.member_id, reason))
        # Whatever the application was about to be asked belongs to a generation now gone.
        self.awaiting_app = None
        self.state = MemberState.LOST

    def _fence(self) -> None:
        self._lose("another process joined with this member's group_instance_id")
        self.state = MemberState.FENCED
        self.timers = _Timers()
        self._actions.append(
            Fail(
                "fenced",
                f"fenced: another process joined with group_instance_id "
                f"{self.settings.group_instance_id!r}; give each process its own id and close this one",
                "FENCED_INSTANCE_ID",
            )
        )

    def _leave(self, reason: str) -> None:
        if self.member_id:
            self.in_flight.add(RequestKind.LEAVE)
            self._actions.append(SendLeaveGroup(self.member_id, reason))
        self.holds_assignment = False
        self.timers.next_heartbeat = None

    def _retry_or_fail(self, kind: str, error: int, now: int) -> None:
        if error in _COORDINATOR_MOVED:
            self.coordinator_known = False
            self.state = MemberState.JOINING if self.protocols else MemberState.UNJOINED
        elif error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self.timers.retry_at = now + self.settings.retry_backoff_ms
            self.state = MemberState.JOINING if self.protocols else MemberState.UNJOINED
        else:
            # A retry cannot fix it: tell the application, which may call again (its next join
            # waits out the retry backoff, however soon it calls).
            self.state = MemberState.UNJOINED
            self.want_join = False
            self.join_reason = ""
            self.timers.retry_at = now + self.settings.retry_backoff_ms
            self._actions.append(
                Fail("join", f"{kind}: the coordinator answered {error_name(error)}", error_name(error))
            )

    # --- timers (only those that can lead to an action are due, so a driver never wakes for
    # nothing) ------------------------------------------------------------------------------------

    def _on_lease_expired(self, now: int) -> None:
        self._lose(
            "heartbeats have not been acknowledged in time; the coordinator may soon give this "
            "member's assignment to another"
        )
        self._rejoin("lease expired")

    def _max_poll_due(self) -> int | None:
        if self.state is MemberState.STABLE and self.holds_assignment:
            return self.last_poll + self.settings.max_poll_interval_ms
        return None

    def _on_max_poll_expired(self, now: int) -> None:
        self._lose(
            f"the application did not poll for more than {self.settings.max_poll_interval_ms} ms "
            "(max_poll_interval_ms); leaving so the group can go on"
        )
        self._leave("max poll interval exceeded")
        self._reset_generation(member_id_too=True)
        self.state = MemberState.LOST
        self._rejoin("max poll interval exceeded")

    def _retry_due(self) -> int | None:
        # After a failure the backoff holds nothing back until there is something to do again:
        # a join the application asks for, or a coordinator to find for a generation it holds.
        idle = (
            self.state is MemberState.UNJOINED
            and not self.want_join
            and (self.coordinator_known or self.generation_id == NO_GENERATION_ID)
        )
        return None if idle else self.timers.retry_at

    def _on_retry_expired(self, now: int) -> None:
        self.timers.retry_at = None

    def _heartbeat_due(self) -> int | None:
        return self.timers.next_heartbeat if self._can_heartbeat() else None

    def _can_heartbeat(self) -> bool:
        return (
            self.coordinator_known
            and self.timers.retry_at is None
            and self.state in (MemberState.COMPLETING, MemberState.STABLE)
            and self.timers.next_heartbeat is not None
            and not self.in_flight & {RequestKind.HEARTBEAT, RequestKind.JOIN}
        )

    def _advance(self, now: int) -> None:
        """Issue whatever the current state allows."""
        if self.state in (MemberState.FENCED, MemberState.LOST):
            return
        if self.timers.retry_at is not None:
            return
        if not self.coordinator_known:
            needed = self.want_join or self.state is MemberState.JOINING
            if not self.finding and (needed or self.generation_id != NO_GENERATION_ID):
                self.finding = True
                self._actions.append(FindCoordinator())
            return
        # Heartbeats while in a generation.
        if (
            self._can_heartbeat()
            and self.timers.next_heartbeat is not None
            and now >= self.timers.next_heartbeat
        ):
            self.in_flight.add(RequestKind.HEARTBEAT)
            self.timers.next_heartbeat = now + self.settings.heartbeat_interval_ms
            self._actions.append(SendHeartbeat(self.generation_id, self.member_id))
        if self.awaiting_app is not None or self.in_flight & {RequestKind.JOIN, RequestKind.SYNC}:
            return
        if self.state is MemberState.JOINING and self.protocols:
            self.in_flight.add(RequestKind.JOIN)
            self._actions.append(SendJoinGroup(self.member_id, self.protocols, self.round_reason))
            return
        if self.want_join and self.state in (
            MemberState.UNJOINED,
            MemberState.STABLE,
            MemberState.COMPLETING,
        ):
            # A new round: the application must release what it holds and say its metadata.
            # Requests to rejoin that arrive from now on ask for yet another round.
            self.want_join = False
            self.round_reason, self.join_reason = self.join_reason, ""
            revoke = self.holds_assignment
            self.protocols = ()
            self._ask_app("prepare", PrepareJoin(self.generation_id, self.member_id, revoke))


_EVENTS: EventTable[MemberMachine, [int]] = EventTable(
    Event,
    on(JoinWanted, MemberMachine._on_JoinWanted),
    on(Polled, MemberMachine._on_Polled),
    on(CoordinatorFound, MemberMachine._on_CoordinatorFound),
    on(CoordinatorLookupFailed, MemberMachine._on_CoordinatorLookupFailed),
    on(Prepared, MemberMachine._on_Prepared),
    on(PrepareFailed, MemberMachine._on_PrepareFailed),
    on(JoinAnswered, MemberMachine._on_JoinAnswered),
    on(AssignmentComputed, MemberMachine._on_AssignmentComputed),
    on(AssignmentFailed, MemberMachine._on_AssignmentFailed),
    on(SyncAnswered, MemberMachine._on_SyncAnswered),
    on(Completed, MemberMachine._on_Completed),
    on(HeartbeatAnswered, MemberMachine._on_HeartbeatAnswered),
    on(RequestFailed, MemberMachine._on_RequestFailed),
    on(LeaveWanted, MemberMachine._on_LeaveWanted),
    on(LeaveAnswered, MemberMachine._on_LeaveAnswered),
    on(Tick, MemberMachine._on_Tick),
)


_TIMERS: TimerTable[MemberMachine] = TimerTable(
    TimerRow(TimerKind.LEASE, MemberMachine.lease_deadline, MemberMachine._on_lease_expired),
    TimerRow(TimerKind.MAX_POLL, MemberMachine._max_poll_due, MemberMachine._on_max_poll_expired),
    TimerRow(TimerKind.RETRY, MemberMachine._retry_due, MemberMachine._on_retry_expired),
    TimerRow(TimerKind.HEARTBEAT, MemberMachine._heartbeat_due, None),
)
