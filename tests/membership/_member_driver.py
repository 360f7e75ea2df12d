"""A scenario driver for the sans-IO :class:`MemberMachine`: a fake clock in milliseconds, a log
of every action with the time it was issued, and the driver's duty of feeding :class:`Tick` at
``next_deadline()``.

Answers are fed explicitly by the tests (there is no fake coordinator), so every test shows its
exchange. The driver only keeps the bookkeeping a real driver would have:

* ``sent``: when each network request was last issued, so answers can carry ``sent_at``;
* ``outstanding``: the requests issued and not yet answered (or failed). Issuing a second
  heartbeat, JoinGroup or SyncGroup while one is outstanding, or a heartbeat while a JoinGroup
  is outstanding, fails the test at once;
* ``stalls``: the times at which ``next_deadline()`` was not in the future right after a Tick
  at that very time. The real driver then wakes again at once (a busy loop); the fake one
  steps ``stall_step_ms`` forward (never past the lease deadline, which stays exact).
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator_api._membership._machine import (
    Action,
    CoordinatorFound,
    CoordinatorLookupFailed,
    Event,
    FindCoordinator,
    HeartbeatAnswered,
    JoinAnswered,
    LeaveAnswered,
    MemberMachine,
    MemberSettings,
    RequestFailed,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncAnswered,
    Tick,
)

SETTINGS = MemberSettings(
    group_id="g",
    group_instance_id=None,
    session_timeout_ms=10_000,
    heartbeat_interval_ms=3_000,
    rebalance_timeout_ms=60_000,
    max_poll_interval_ms=60_000,
    retry_backoff_ms=100,
    lease_margin_ms=3_000,
)

# Which network request an action issues, and which request an answer event ends.
_KIND_OF_ACTION: dict[type[Action], str] = {
    FindCoordinator: "find",
    SendJoinGroup: "join",
    SendSyncGroup: "sync",
    SendHeartbeat: "heartbeat",
    SendLeaveGroup: "leave",
}
_KIND_OF_ANSWER: dict[type[Event], str] = {
    CoordinatorFound: "find",
    CoordinatorLookupFailed: "find",
    JoinAnswered: "join",
    SyncAnswered: "sync",
    HeartbeatAnswered: "heartbeat",
    LeaveAnswered: "leave",
}

# Answers the fake network gives at once, by request kind: (sent_at) -> event.
AutoAnswers = dict[str, Callable[[int], Event]]


class Member:
    """One member machine on a fake clock."""

    def __init__(self, settings: MemberSettings = SETTINGS, *, stall_step_ms: int = 1) -> None:
        self.machine = MemberMachine(settings)
        self.settings = settings
        self.now = 0
        self.log: list[tuple[int, Action]] = []
        self.sent: dict[str, int] = {}
        self.outstanding: dict[str, int] = {}
        self.stalls: list[int] = []
        self.checks: list[Callable[[Member], None]] = []
        self.stall_step_ms = stall_step_ms
        self._ticked_at: int | None = None

    # --- feeding events ---------------------------------------------------------------------------

    def handle(self, event: Event, auto: AutoAnswers | None = None) -> list[Action]:
        """Feed one event now; returns the actions it led to (and those of any auto answers)."""
        kind = _KIND_OF_ANSWER.get(type(event))
        if isinstance(event, RequestFailed):
            kind = event.kind
        if kind is not None:
            self.outstanding.pop(kind, None)
        actions = self.machine.handle(event, self.now)
        if isinstance(event, Tick):
            self._ticked_at = self.now
        for action in actions:
            self.log.append((self.now, action))
            self._issued(action)
        for check in self.checks:
            check(self)
        result = list(actions)
        for action in actions:
            answer = (auto or {}).get(_KIND_OF_ACTION.get(type(action), ""))
            if answer is not None:
                result += self.handle(answer(self.now), auto)
        return result

    def at(self, t: int, event: Event, auto: AutoAnswers | None = None) -> list[Action]:
        """Let time run to ``t`` (Ticks at the deadlines), then feed ``event`` at ``t``; returns only
        the event's actions (what the Ticks did is in ``log``)."""
        self.run_until(t, auto)
        return self.handle(event, auto)

    def run_until(self, t: int, auto: AutoAnswers | None = None) -> list[tuple[int, Action]]:
        """Deliver a Tick at every deadline up to and including ``t``, as the real driver does, then
        set the clock to ``t``; returns the (time, action) pairs issued meanwhile."""
        assert t >= self.now, f"time runs backwards: {t} < {self.now}"
        start = len(self.log)
        while True:
            deadline = self.machine.next_deadline()
            if deadline is None:
                break
            when = max(deadline, self.now)
            if when == self._ticked_at:
                # A Tick at this very time already ran and the deadline did not move.
                self.stalls.append(when)
                when = self.now + self.stall_step_ms
                lease = self.machine.lease_deadline()
                if lease is not None and lease > self.now:
                    when = min(when, lease)
            if when > t:
                break
            self.now = when
            self.handle(Tick(), auto)
        self.now = t
        return self.log[start:]

    def tick_at_deadline(self) -> list[Action]:
        """One Tick at ``next_deadline()`` (or now, if that is in the past), whatever it holds."""
        deadline = self.machine.next_deadline()
        assert deadline is not None, "no deadline"
        self.now = max(deadline, self.now)
        return self.handle(Tick())

    # --- queries ---------------------------------------------------------------------------------

    def actions_since(self, t: int) -> list[tuple[int, Action]]:
        return [(when, action) for when, action in self.log if when >= t]

    def issued(self, kind: type[Action], since: int = 0) -> list[int]:
        """The times at which actions of ``kind`` were issued, from ``since`` on."""
        return [when for when, action in self.log if isinstance(action, kind) and when >= since]

    # --- bookkeeping -----------------------------------------------------------------------------

    def _issued(self, action: Action) -> None:
        kind = _KIND_OF_ACTION.get(type(action))
        if kind is None:
            return
        if kind in ("heartbeat", "join", "sync"):
            assert kind not in self.outstanding, (
                f"a second {kind} request at {self.now} while the one sent at "
                f"{self.outstanding[kind]} is unanswered"
            )
        if kind == "heartbeat":
            assert "join" not in self.outstanding, f"a heartbeat at {self.now} while a JoinGroup is out"
        self.sent[kind] = self.now
        self.outstanding[kind] = self.now
