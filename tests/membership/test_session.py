"""The membership session in memory: the real machine and driver over a scripted wire and a fake
clock, so each test shows the exchange of one rebalance and what the application thread sees.

The wire answers nothing by itself: each test answers the request it expects, on its own thread,
so the driver's callbacks run just as when kafka-python's IO thread delivers an answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _member_driver import SETTINGS

from coordinator_api import CommitFailedError, CoordinatorClosedError, Generation, JoinedMember, MemberEvent
from coordinator_api._membership._machine import (
    Action,
    CoordinatorFound,
    Event,
    FindCoordinator,
    HeartbeatAnswered,
    JoinAnswered,
    LeaveAnswered,
    MemberMachine,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncAnswered,
)
from coordinator_api._membership._session import (
    Assign,
    Complete,
    Lost,
    MembershipSession,
    PrepareJoin,
)
from coordinator_api._protocol import ErrorCode

MEMBER = "m-1"


class FakeClock:
    """Milliseconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


class ScriptedWire:
    """Keeps each request the driver sends until the test answers it."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.sent: list[tuple[Action, int, Callable[[Event], object]]] = []
        self.calls: list[Any] = []
        self.closed = False

    def send(self, action: Action, sent_at: int, deliver: Callable[[Event], object]) -> None:
        with self.changed:
            self.sent.append((action, sent_at, deliver))
            self.changed.notify_all()

    def call(self, request: Any, *, to_coordinator: bool) -> Any:
        self.calls.append(request)
        raise AssertionError(f"no request of the application's own was expected: {request!r}")

    def close(self) -> None:
        self.closed = True

    def answer(self, kind: type[Action], answer: Callable[[Any, int], Event]) -> Action:
        """Answer the oldest unanswered request of ``kind`` with ``answer(request, sent_at)``."""
        deadline = time.monotonic() + 5
        with self.changed:
            while not any(isinstance(a, kind) for a, _, _ in self.sent):
                assert self.changed.wait(max(deadline - time.monotonic(), 0)), f"no {kind.__name__} was sent"
            index = next(i for i, (a, _, _) in enumerate(self.sent) if isinstance(a, kind))
            action, sent_at, deliver = self.sent.pop(index)
        deliver(answer(action, sent_at))
        return action


class Recorder:
    def __init__(self) -> None:
        self.events: list[MemberEvent] = []
        self.lost: list[Lost] = []

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def wire() -> ScriptedWire:
    return ScriptedWire()


@pytest.fixture
def seen() -> Recorder:
    return Recorder()


@pytest.fixture
def session(clock: FakeClock, wire: ScriptedWire, seen: Recorder) -> Iterator[MembershipSession]:
    running = MembershipSession(
        MemberMachine(SETTINGS), wire, on_lost=seen.lost.append, observe=seen.events.append, clock=clock
    )
    yield running
    running.close()


def join(session: MembershipSession, wire: ScriptedWire, clock: FakeClock) -> Complete:
    """One member, its own leader, up to the moment on_join_complete is due."""
    session.record_poll()
    wire.answer(FindCoordinator, lambda _a, _t: CoordinatorFound())
    prepare = session.next_action()
    assert isinstance(prepare, PrepareJoin) and not prepare.revoke
    session.report_metadata(prepare, [("rr", b"meta")])
    clock.now += 7  # the JoinGroup takes 7 ms
    wire.answer(
        SendJoinGroup,
        lambda _a, t: JoinAnswered(
            t, ErrorCode.NONE, 1, "rr", MEMBER, MEMBER, (JoinedMember(MEMBER, None, b"meta"),)
        ),
    )
    assign = session.next_action()
    assert isinstance(assign, Assign) and assign.members == (JoinedMember(MEMBER, None, b"meta"),)
    session.report_assignment(assign, {MEMBER: b"everything"})
    wire.answer(SendSyncGroup, lambda _a, t: SyncAnswered(t, ErrorCode.NONE, b"everything"))
    complete = session.next_action()
    assert isinstance(complete, Complete)
    return complete


def test_one_rebalance_through_the_session(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock, seen: Recorder
) -> None:
    assert session.generation() == Generation(-1, "", None)
    complete = join(session, wire, clock)
    assert (complete.generation_id, complete.member_id, complete.assignment) == (1, MEMBER, b"everything")
    assert session.stable_generation() is None  # not before on_join_complete has run
    session.report_completed(complete, ok=True)
    assert session.stable_generation() == Generation(1, MEMBER, "rr")
    assert session.holds_assignment()
    assert session.next_action() is None
    assert session.wait_until_stable(clock.now)
    assert seen.kinds() == ["joined", "assigned"]
    joined, assigned = seen.events
    assert joined.duration_ms == 7.0  # from the session's clock: JoinGroup sent and answered
    assert assigned.duration_ms == 7.0 and assigned.protocol == "rr" and assigned.generation_id == 1


def test_the_lease_is_checked_against_the_clock_before_the_heartbeat_thread_notices(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock
) -> None:
    session.report_completed(join(session, wire, clock), ok=True)
    assert session.stable_generation() is not None
    # No heartbeat is answered: the lease (SyncGroup's send time + session - margin) runs out.
    clock.now += SETTINGS.session_timeout_ms - SETTINGS.lease_margin_ms
    assert session.stable_generation() is None
    assert not session.wait_until_stable(clock.now)


def test_an_assignment_whose_lease_ran_out_before_the_application_took_it_is_refused(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock, seen: Recorder
) -> None:
    session.record_poll()
    wire.answer(FindCoordinator, lambda _a, _t: CoordinatorFound())
    prepare = session.next_action()
    assert isinstance(prepare, PrepareJoin)
    session.report_metadata(prepare, [("rr", b"meta")])
    wire.answer(
        SendJoinGroup,
        lambda _a, t: JoinAnswered(t, ErrorCode.NONE, 1, "rr", "m-2", MEMBER, ()),
    )
    wire.answer(SendSyncGroup, lambda _a, t: SyncAnswered(t, ErrorCode.NONE, b"late"))
    clock.now += SETTINGS.session_timeout_ms  # paused for a whole session
    again = session.next_action()
    assert isinstance(again, PrepareJoin), "the late assignment must not reach on_join_complete"
    assert not again.revoke  # it was never acted on
    assert "assigned" not in seen.kinds()


def test_requests_whose_generation_is_gone_are_dropped_and_late_reports_ignored(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock
) -> None:
    session.report_completed(join(session, wire, clock), ok=True)
    # A rebalance starts: the application is asked to give up its assignment...
    wire.answer(SendHeartbeat, lambda _a, t: HeartbeatAnswered(t, ErrorCode.REBALANCE_IN_PROGRESS))
    with session._driver.lock:  # the test looks; the Coordinator never does
        queued = list(session._driver.app_actions)
    assert len(queued) == 1 and isinstance(queued[0], PrepareJoin) and queued[0].revoke
    # ... but leaves before it polls: the request belongs to a generation that is gone.
    session.leave("the test left", timeout_ms=0)
    assert session.next_action() is None
    session.report_metadata(queued[0], [("rr", b"meta")])  # a report about it changes nothing
    with wire.changed:
        assert not any(isinstance(a, SendJoinGroup) for a, _, _ in wire.sent)


def test_lost_runs_on_lost_and_stops_acting(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock, seen: Recorder
) -> None:
    session.report_completed(join(session, wire, clock), ok=True)
    wire.answer(SendHeartbeat, lambda _a, t: HeartbeatAnswered(t, ErrorCode.UNKNOWN_MEMBER_ID))
    assert [lost.member_id for lost in seen.lost] == [MEMBER]
    assert "UNKNOWN_MEMBER_ID" in seen.lost[0].reason
    assert session.stable_generation() is None and not session.holds_assignment()
    assert seen.kinds()[-1] == "lost"


def test_leave_waits_for_the_answer(
    session: MembershipSession, wire: ScriptedWire, clock: FakeClock, seen: Recorder
) -> None:
    session.report_completed(join(session, wire, clock), ok=True)
    leaving = threading.Thread(target=session.leave, args=("done", 60_000))
    leaving.start()
    sent = wire.answer(SendLeaveGroup, lambda _a, _t: LeaveAnswered(ErrorCode.NONE))
    leaving.join(5)
    assert not leaving.is_alive()
    assert isinstance(sent, SendLeaveGroup) and sent.reason == "done"
    assert session.generation() == Generation(-1, "", None)
    assert seen.kinds()[-1] == "left"


def test_wakeup_ends_a_wait_for_an_action(session: MembershipSession, clock: FakeClock) -> None:
    session.wakeup()
    assert not session.wait_for_action(clock.now + 60_000)  # a wakeup before the wait counts
    result: list[bool] = []
    waiting = threading.Thread(target=lambda: result.append(session.wait_for_action(clock.now + 60_000)))
    waiting.start()
    time.sleep(0.05)
    session.wakeup()
    waiting.join(5)
    assert result == [False]


def test_a_commit_without_a_generation_sends_nothing(session: MembershipSession, wire: ScriptedWire) -> None:
    with pytest.raises(CommitFailedError, match="no generation") as refused:
        session.commit_offsets({("events", 0): 5}, generation=session.generation())
    assert refused.value.errors == (("events", 0, "UNKNOWN_MEMBER_ID"),)
    assert wire.calls == []


def test_a_closed_session_sends_nothing(session: MembershipSession, wire: ScriptedWire) -> None:
    session.close()
    session.close()  # idempotent
    assert wire.closed
    with pytest.raises(CoordinatorClosedError):
        session.send_request(object(), to_coordinator=True)
    assert wire.calls == []
