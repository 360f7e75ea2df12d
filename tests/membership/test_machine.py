"""Scenario tests for the member state machine (``coordinator_api._membership._machine``).

Each test feeds the coordinator's answers and the application's results by hand, on a fake clock
(see ``_member_driver``), and checks the exact actions. The standard timeline used by most tests:

====  ===================================================================================
t=0   JoinWanted("start")                     -> FindCoordinator
t=5   CoordinatorFound                        -> PrepareJoin(-1, "", revoke=False)
t=10  Prepared                                -> SendJoinGroup("")
t=20  JoinAnswered(MEMBER_ID_REQUIRED, "m1")  -> SendJoinGroup("m1")
t=30  JoinAnswered(NONE, gen 1, leader "m0")  -> SendSyncGroup(1, "m1")   (heartbeat due at 3030)
t=40  SyncAnswered(NONE, b"A")                -> Complete, SendHeartbeat(1, "m1")   (at once)
t=45  HeartbeatAnswered(40, NONE)             -> lease anchor 40; the next heartbeat is due at 3040
t=50  Completed(ok=True)                      -> STABLE; lease deadline 7040, heartbeats 3040, 6040...
====  ===================================================================================
"""

from __future__ import annotations

import dataclasses
import typing
from unittest.mock import ANY

import pytest
from _member_driver import SETTINGS, Member
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_api._membership._machine import (
    Assign,
    AssignmentComputed,
    AssignmentFailed,
    Complete,
    Completed,
    CoordinatorFound,
    CoordinatorLookupFailed,
    Fail,
    FindCoordinator,
    HeartbeatAnswered,
    JoinAnswered,
    JoinWanted,
    LeaveAnswered,
    LeaveWanted,
    Lost,
    MemberState,
    Polled,
    Prepared,
    PrepareFailed,
    PrepareJoin,
    RequestFailed,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncAnswered,
    Tick,
    TimerKind,
    TimerRow,
    TimerTable,
)
from coordinator_api._membership._machine import Event as MemberEvent
from coordinator_api._protocol import ErrorCode
from coordinator_api._transitions import EventTable, on
from coordinator_api._types import NO_GENERATION, Generation, JoinedMember

COORDINATOR_LOAD_IN_PROGRESS = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
COORDINATOR_NOT_AVAILABLE = ErrorCode.COORDINATOR_NOT_AVAILABLE
FENCED_INSTANCE_ID = ErrorCode.FENCED_INSTANCE_ID
ILLEGAL_GENERATION = ErrorCode.ILLEGAL_GENERATION
MEMBER_ID_REQUIRED = ErrorCode.MEMBER_ID_REQUIRED
NONE = ErrorCode.NONE
NOT_COORDINATOR = ErrorCode.NOT_COORDINATOR
REBALANCE_IN_PROGRESS = ErrorCode.REBALANCE_IN_PROGRESS
UNKNOWN_MEMBER_ID = ErrorCode.UNKNOWN_MEMBER_ID

INCONSISTENT_GROUP_PROTOCOL = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
PROTOCOLS = (("range", b"meta"),)
SESSION = SETTINGS.session_timeout_ms
MARGIN = SETTINGS.lease_margin_ms
INTERVAL = SETTINGS.heartbeat_interval_ms
BACKOFF = SETTINGS.retry_backoff_ms
SYNC_SENT = 30  # the standard timeline's SyncGroup
FIRST_HEARTBEAT = 30 + INTERVAL  # 3030: due an interval after JoinGroup's answer, while COMPLETING
SYNC_HEARTBEAT = 40  # sent at once with SyncGroup's answer; acknowledged in to_stable
NEXT_HEARTBEAT = SYNC_HEARTBEAT + INTERVAL  # 3040: the first one due once STABLE
LEASE = SYNC_HEARTBEAT + SESSION - MARGIN  # 7040
GEN1 = Generation(1, "m1", "range")


def answer_heartbeats(error: int) -> dict:
    return {"heartbeat": lambda sent: HeartbeatAnswered(sent, error)}


# --- the standard timeline, in steps --------------------------------------------------------------


def to_joining(mb: Member) -> None:
    """Up to t=20: SendJoinGroup("m1") outstanding, sent at 20."""
    assert mb.at(0, JoinWanted("start")) == [FindCoordinator()]
    assert mb.at(5, CoordinatorFound()) == [PrepareJoin(-1, "", False)]
    assert mb.at(10, Prepared(PROTOCOLS)) == [SendJoinGroup("", PROTOCOLS, "start")]
    assert mb.at(20, JoinAnswered(10, MEMBER_ID_REQUIRED, member_id="m1")) == [
        SendJoinGroup("m1", PROTOCOLS, "start")
    ]


def to_completing(mb: Member, *, leader: str = "m0") -> list:
    """Up to t=30: gen 1 joined; a follower has SendSyncGroup outstanding, a leader is asked to Assign."""
    to_joining(mb)
    return mb.at(30, JoinAnswered(20, NONE, 1, "range", leader, "m1", MEMBERS if leader == "m1" else ()))


def to_stable(mb: Member | None = None) -> Member:
    """Up to t=50: STABLE in gen 1, the heartbeat sent with SyncGroup's answer acknowledged."""
    mb = mb or Member()
    assert to_completing(mb) == [SendSyncGroup(1, "m1", "range", ())]
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    assert mb.at(45, HeartbeatAnswered(SYNC_HEARTBEAT, NONE)) == []
    assert mb.at(50, Completed(ok=True)) == []
    assert mb.machine.is_stable()
    return mb


MEMBERS = (
    JoinedMember("m1", None, b"meta-1"),
    JoinedMember("m2", None, b"meta-2"),
)


# --- joining ------------------------------------------------------------------------------------


def test_first_join_as_follower() -> None:
    mb = Member()
    machine = mb.machine
    assert machine.state is MemberState.UNJOINED
    assert machine.generation() == NO_GENERATION
    assert machine.next_deadline() is None

    assert mb.at(0, JoinWanted("start")) == [FindCoordinator()]
    assert mb.at(5, CoordinatorFound()) == [PrepareJoin(-1, "", False)]
    assert machine.state is MemberState.UNJOINED  # until the application has run it
    assert mb.at(10, Prepared(PROTOCOLS)) == [SendJoinGroup("", PROTOCOLS, "start")]
    assert machine.state is MemberState.JOINING

    # KIP-394: the coordinator hands out the id and wants it back.
    assert mb.at(20, JoinAnswered(10, MEMBER_ID_REQUIRED, member_id="m1")) == [
        SendJoinGroup("m1", PROTOCOLS, "start")
    ]
    assert machine.state is MemberState.JOINING

    joined = JoinAnswered(20, NONE, 1, "range", "m0", "m1", ())
    assert mb.at(30, joined) == [SendSyncGroup(1, "m1", "range", ())]
    assert machine.state is MemberState.COMPLETING
    assert machine.generation() == GEN1
    assert not machine.is_stable()
    assert machine.lease_deadline() is None  # nothing held yet
    assert machine.next_deadline() == FIRST_HEARTBEAT

    # A heartbeat goes at once, not at FIRST_HEARTBEAT (see test_heartbeat_at_once_after_sync).
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    assert machine.state is MemberState.COMPLETING
    assert not machine.is_stable()  # on_join_complete has not run

    assert mb.at(50, Completed(ok=True)) == []
    assert machine.state is MemberState.STABLE
    assert machine.is_stable()
    assert machine.generation() == GEN1
    assert machine.lease_deadline() == SYNC_SENT + SESSION - MARGIN  # the heartbeat is unanswered
    assert machine.next_deadline() == SYNC_SENT + SESSION - MARGIN  # no second one while it is out
    assert mb.at(55, HeartbeatAnswered(SYNC_HEARTBEAT, NONE)) == []
    assert machine.lease_deadline() == LEASE
    assert machine.next_deadline() == NEXT_HEARTBEAT
    assert mb.issued(SendHeartbeat) == [SYNC_HEARTBEAT]


def test_a_lookup_refused_for_authorization_fails_instead_of_retrying() -> None:
    mb = Member()
    assert mb.at(0, JoinWanted("start")) == [FindCoordinator()]
    assert mb.at(5, CoordinatorLookupFailed("timed out")) == []  # retried after the backoff
    assert mb.machine.next_deadline() is not None
    refused = CoordinatorLookupFailed("refused", "GROUP_AUTHORIZATION_FAILED")
    message = "FindCoordinator: the coordinator answered GROUP_AUTHORIZATION_FAILED"
    assert mb.at(10, refused) == [Fail("join", message, "GROUP_AUTHORIZATION_FAILED")]
    assert mb.machine.state is MemberState.UNJOINED and mb.machine.next_deadline() is None


def test_leader_assigns_then_syncs_the_assignment() -> None:
    mb = Member()
    assert to_completing(mb, leader="m1") == [Assign("m1", "range", MEMBERS)]
    assert mb.machine.state is MemberState.COMPLETING
    assert "sync" not in mb.outstanding

    assignments = (("m1", b"a1"), ("m2", b"a2"))
    assert mb.at(35, AssignmentComputed(assignments)) == [SendSyncGroup(1, "m1", "range", assignments)]
    assert mb.at(40, SyncAnswered(35, NONE, b"a1")) == [
        Complete(1, "m1", "range", b"a1"),
        SendHeartbeat(1, "m1"),
    ]
    assert mb.at(50, Completed(ok=True)) == []
    assert mb.machine.is_stable()
    assert mb.machine.lease_deadline() == 35 + SESSION - MARGIN  # the heartbeat is unanswered


def test_a_leader_told_to_skip_the_assignment_syncs_without_one() -> None:
    """JoinGroup v9+ (KIP-814): a static leader restarted into a Stable group leads, sees every
    member, and assigns nothing; its SyncGroup returns the assignment the group kept."""
    mb = Member()
    to_joining(mb)
    answer = JoinAnswered(20, NONE, 1, "range", "m1", "m1", MEMBERS, skip_assignment=True)
    assert mb.at(30, answer) == [SendSyncGroup(1, "m1", "range", ())]
    assert mb.at(40, SyncAnswered(30, NONE, b"kept")) == [
        Complete(1, "m1", "range", b"kept"),
        SendHeartbeat(1, "m1"),
    ]


def test_leader_assignment_failure_leaves_so_the_group_is_not_stuck() -> None:
    mb = Member()
    assert to_completing(mb, leader="m1") == [Assign("m1", "range", MEMBERS)]
    actions = mb.at(35, AssignmentFailed())
    # It leaves (the coordinator then picks another leader); the next poll starts a new round.
    assert actions == [SendLeaveGroup("m1", ANY)]
    assert mb.machine.state is MemberState.UNJOINED
    assert not mb.machine.is_stable()
    # A late AssignmentComputed is ignored; no SyncGroup, no more heartbeats for the old generation.
    assert mb.at(36, AssignmentComputed((("m1", b"a1"),))) == []
    assert mb.at(37, LeaveAnswered(NONE)) == []
    mb.run_until(10_000)
    assert mb.issued(SendHeartbeat) == []
    assert mb.issued(SendSyncGroup) == []
    assert mb.at(10_001, Polled()) == [PrepareJoin(-1, "", False)]


def test_leader_assignment_failure_forgets_the_generation_it_left() -> None:
    mb = Member()
    to_completing(mb, leader="m1")
    assert mb.at(35, AssignmentFailed())[0] == SendLeaveGroup("m1", ANY)
    # "m1" is gone from the group: it is no fencing token any more, and rejoining with it costs
    # an UNKNOWN_MEMBER_ID round trip (LeaveWanted and the max poll interval do reset it).
    assert mb.machine.generation() == NO_GENERATION


# --- heartbeats -----------------------------------------------------------------------------------


def test_heartbeats_every_interval_while_completing_and_stable_one_at_a_time() -> None:
    mb = Member()
    assert to_completing(mb) == [SendSyncGroup(1, "m1", "range", ())]
    assert mb.run_until(FIRST_HEARTBEAT) == [(3030, SendHeartbeat(1, "m1"))]
    assert mb.machine.state is MemberState.COMPLETING  # heartbeats while SyncGroup waits
    assert mb.at(3040, HeartbeatAnswered(3030, NONE)) == []
    # SyncGroup's answer sends one at once (due 6030 otherwise); the cadence goes on from it.
    assert mb.at(4000, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    assert mb.at(4005, HeartbeatAnswered(4000, NONE)) == []
    assert mb.at(4010, Completed(ok=True)) == []
    assert mb.run_until(7000) == [(7000, SendHeartbeat(1, "m1"))]
    assert mb.at(7005, HeartbeatAnswered(7000, NONE)) == []
    assert mb.run_until(10_000) == [(10_000, SendHeartbeat(1, "m1"))]
    # Unanswered: the one due at 13000 waits for it.
    assert mb.run_until(13_499) == []
    assert mb.machine.is_stable()  # acknowledged 7000, so the lease runs to 14000
    # The answer comes; the overdue heartbeat goes at once, then the cadence resumes from there.
    assert mb.at(13_500, HeartbeatAnswered(10_000, NONE)) == [SendHeartbeat(1, "m1")]
    assert mb.at(13_501, HeartbeatAnswered(13_500, NONE)) == []
    assert mb.run_until(16_500) == [(16_500, SendHeartbeat(1, "m1"))]
    assert mb.issued(SendHeartbeat) == [3030, 4000, 7000, 10_000, 13_500, 16_500]
    assert mb.machine.lease_deadline() == 13_500 + SESSION - MARGIN


@pytest.mark.parametrize("leader", ["m0", "m1"], ids=["follower", "leader"])
def test_heartbeat_at_once_after_sync(leader: str) -> None:
    """SyncGroup answered NONE sends a heartbeat in the new generation at once, not an interval
    after JoinGroup's answer, so a coordinator that holds heartbeats can tell the member of the
    next rebalance as soon as it starts. The cadence then runs from that heartbeat."""
    mb = Member()
    completing = to_completing(mb, leader=leader)
    if leader == "m1":
        assert completing == [Assign("m1", "range", MEMBERS)]
        assignments = (("m1", b"A"), ("m2", b"B"))
        assert mb.at(35, AssignmentComputed(assignments)) == [SendSyncGroup(1, "m1", "range", assignments)]
    else:
        assert completing == [SendSyncGroup(1, "m1", "range", ())]
    assert mb.machine.next_deadline() == FIRST_HEARTBEAT  # 3030, an interval after the join
    sync_sent = mb.sent["sync"]

    assert mb.at(40, SyncAnswered(sync_sent, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),  # at 40, long before 3030, and before on_join_complete runs
    ]
    assert mb.issued(SendHeartbeat) == [SYNC_HEARTBEAT]
    assert mb.at(45, HeartbeatAnswered(SYNC_HEARTBEAT, NONE)) == []
    assert mb.machine.next_deadline() == SYNC_HEARTBEAT + INTERVAL
    assert mb.at(50, Completed(ok=True)) == []
    assert mb.machine.is_stable()
    assert mb.machine.lease_deadline() == SYNC_HEARTBEAT + SESSION - MARGIN

    # The next one comes an interval after the immediate one (nothing at 3030), then on.
    assert mb.run_until(SYNC_HEARTBEAT + INTERVAL - 1) == []
    assert mb.run_until(SYNC_HEARTBEAT + INTERVAL) == [(3040, SendHeartbeat(1, "m1"))]
    assert mb.at(3045, HeartbeatAnswered(3040, NONE)) == []
    assert mb.run_until(6040) == [(6040, SendHeartbeat(1, "m1"))]
    assert mb.issued(SendHeartbeat) == [40, 3040, 6040]


def test_rebalance_seen_by_heartbeat_asks_the_app_to_prepare_at_once() -> None:
    mb = to_stable()
    assert mb.run_until(NEXT_HEARTBEAT) == [(3040, SendHeartbeat(1, "m1"))]
    # The PrepareJoin is issued with the answer, for the application thread to run at its next poll.
    assert mb.at(3045, HeartbeatAnswered(3040, REBALANCE_IN_PROGRESS)) == [PrepareJoin(1, "m1", True)]
    assert mb.machine.state is MemberState.STABLE
    assert mb.machine.is_stable()  # the application still holds its assignment until it runs it
    # Polling alone does not repeat it, and heartbeats go on until the application prepared.
    assert mb.at(3100, Polled()) == []
    assert mb.run_until(6040) == [(6040, SendHeartbeat(1, "m1"))]
    assert mb.at(6045, HeartbeatAnswered(6040, REBALANCE_IN_PROGRESS)) == []
    assert mb.at(6100, Prepared(PROTOCOLS)) == [SendJoinGroup("m1", PROTOCOLS, ANY)]
    assert mb.machine.state is MemberState.JOINING
    assert not mb.machine.is_stable()
    assert mb.machine.lease_deadline() is None
    # No heartbeats while the JoinGroup is outstanding, however long the coordinator holds it.
    mb.run_until(26_100)
    assert mb.issued(SendHeartbeat, since=6041) == []
    joined = JoinAnswered(6100, NONE, 2, "range", "m0", "m1", ())
    assert mb.at(26_100, joined) == [SendSyncGroup(2, "m1", "range", ())]
    assert mb.machine.generation() == Generation(2, "m1", "range")
    assert mb.run_until(29_100) == [(29_100, SendHeartbeat(2, "m1"))]


def test_join_wanted_while_stable_starts_a_round_with_revoke() -> None:
    mb = to_stable()
    assert mb.at(100, JoinWanted("metadata changed")) == [PrepareJoin(1, "m1", True)]
    assert mb.at(110, Prepared(PROTOCOLS)) == [SendJoinGroup("m1", PROTOCOLS, "metadata changed")]


@pytest.mark.parametrize(
    ("error", "member_after"),
    [(ILLEGAL_GENERATION, "m1"), (UNKNOWN_MEMBER_ID, "")],
    ids=["ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"],
)
def test_heartbeat_refused_loses_the_assignment_and_rejoins(error: int, member_after: str) -> None:
    mb = to_stable()
    mb.run_until(3040)
    actions = mb.at(3045, HeartbeatAnswered(3040, error))
    assert actions == [Lost(1, "m1", ANY)]
    assert ("ILLEGAL_GENERATION" if error == ILLEGAL_GENERATION else "UNKNOWN_MEMBER_ID") in actions[0].reason
    assert mb.machine.state is MemberState.LOST
    assert not mb.machine.is_stable()
    assert mb.machine.generation() == Generation(-1, member_after, None)
    assert mb.machine.lease_deadline() is None
    assert mb.run_until(20_000) == []  # no heartbeats for a generation that is gone
    # The application polls: a new round with the generation reset (and the id, if unknown).
    assert mb.at(20_000, Polled()) == [PrepareJoin(-1, member_after, False)]
    assert mb.at(20_010, Prepared(PROTOCOLS)) == [SendJoinGroup(member_after, PROTOCOLS, ANY)]


def test_fenced_heartbeat_is_final() -> None:
    mb = to_stable()
    mb.run_until(3040)
    actions = mb.at(3045, HeartbeatAnswered(3040, FENCED_INSTANCE_ID))
    assert actions == [Lost(1, "m1", ANY), Fail("fenced", ANY, "FENCED_INSTANCE_ID")]
    assert mb.machine.state is MemberState.FENCED
    assert not mb.machine.is_stable()
    assert mb.machine.next_deadline() is None
    for t, event in enumerate(
        [
            Tick(),
            Polled(),
            JoinWanted("again"),
            CoordinatorFound(),
            HeartbeatAnswered(3040, NONE),
            JoinAnswered(3040, NONE, 2, "range", "m1", "m1", MEMBERS),
            RequestFailed("heartbeat", "x"),
            LeaveWanted("bye"),
            Polled(),
        ],
        start=4000,
    ):
        assert mb.at(t, event) == [], event
        assert mb.machine.state is MemberState.FENCED
    assert mb.run_until(100_000) == []


@pytest.mark.parametrize("where", ["join", "sync"])
def test_fenced_while_joining_fails_without_a_lost(where: str) -> None:
    mb = Member()
    if where == "join":
        to_joining(mb)
        actions = mb.at(25, JoinAnswered(20, FENCED_INSTANCE_ID))
    else:
        to_completing(mb)
        actions = mb.at(35, SyncAnswered(30, FENCED_INSTANCE_ID))
    assert actions == [Fail("fenced", ANY, "FENCED_INSTANCE_ID")]  # nothing was held
    assert mb.machine.state is MemberState.FENCED
    assert mb.at(40, JoinWanted("again")) == []


# --- lease safety -------------------------------------------------------------------------------


def test_lease_lost_exactly_at_margin_when_heartbeats_get_no_answer() -> None:
    mb = to_stable()
    assert mb.run_until(LEASE - 1) == [(3040, SendHeartbeat(1, "m1"))]
    assert mb.machine.is_stable()
    assert mb.run_until(LEASE) == [(LEASE, Lost(1, "m1", ANY))]
    assert not mb.machine.is_stable()
    assert mb.machine.state is MemberState.LOST
    assert mb.machine.generation() == GEN1  # kept: the rejoin may still be in time


def test_lease_lost_when_heartbeats_fail_and_the_coordinator_cannot_be_found() -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, HeartbeatAnswered(3040, NONE)) == []
    assert mb.machine.lease_deadline() == 3040 + SESSION - MARGIN  # 10040
    mb.run_until(6040)
    assert mb.at(6050, RequestFailed("heartbeat", "connection reset")) == []
    assert mb.run_until(6150) == [(6150, FindCoordinator())]
    lookups_fail = {"find": lambda sent: CoordinatorLookupFailed("no broker")}
    mb.run_until(10_039, lookups_fail)
    assert mb.machine.is_stable()
    assert mb.issued(Lost) == []
    assert mb.run_until(10_040, lookups_fail) == [(10_040, Lost(1, "m1", ANY))]
    assert mb.issued(SendHeartbeat) == [SYNC_HEARTBEAT, 3040, 6040]


def test_lease_lost_when_every_heartbeat_says_not_coordinator() -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, HeartbeatAnswered(3040, NONE)) == []
    mb.run_until(6040)
    assert mb.at(6050, HeartbeatAnswered(6040, NOT_COORDINATOR)) == [FindCoordinator()]
    assert mb.at(6060, CoordinatorFound()) == []
    moving = {**answer_heartbeats(NOT_COORDINATOR), "find": lambda sent: CoordinatorFound()}
    mb.run_until(10_039, moving)
    assert mb.machine.is_stable()
    assert mb.run_until(10_040, moving) == [(10_040, Lost(1, "m1", ANY))]
    assert mb.issued(SendHeartbeat) == [SYNC_HEARTBEAT, 3040, 6040, 9040]


def test_late_acknowledgement_counts_from_its_send_time() -> None:
    mb = to_stable()
    mb.run_until(3040)
    # Answered after 3.46 s: the coordinator may have received it right after 3040, no later.
    assert mb.at(6500, HeartbeatAnswered(3040, NONE)) == [SendHeartbeat(1, "m1")]  # the overdue one
    assert mb.machine.lease_deadline() == 3040 + SESSION - MARGIN
    assert mb.run_until(10_040) == [(10_040, Lost(1, "m1", ANY))]


def test_rebalance_lease_when_the_app_does_not_poll() -> None:
    mb = to_stable()
    assert mb.at(3000, Polled()) == []  # the last poll: max poll interval ends at 63000
    mb.run_until(3040)
    assert mb.at(3040, HeartbeatAnswered(3040, NONE)) == []  # the last stable acknowledgement
    mb.run_until(6040)
    assert mb.at(6041, HeartbeatAnswered(6040, REBALANCE_IN_PROGRESS)) == [PrepareJoin(1, "m1", True)]
    assert mb.machine.lease_deadline() == 6040 + SESSION - MARGIN  # still the session's, for now
    rebalance_lease = 3040 + SETTINGS.rebalance_timeout_ms - MARGIN  # 60040
    # The coordinator keeps acknowledging heartbeats, but nobody runs the PrepareJoin.
    mb.run_until(rebalance_lease - 1, answer_heartbeats(REBALANCE_IN_PROGRESS))
    assert mb.machine.is_stable()
    assert mb.machine.lease_deadline() == rebalance_lease
    assert mb.issued(Lost) == []
    assert mb.run_until(rebalance_lease, answer_heartbeats(REBALANCE_IN_PROGRESS)) == [
        (rebalance_lease, Lost(1, "m1", ANY))
    ]
    assert mb.machine.state is MemberState.LOST


def test_rebalance_lease_is_capped_by_the_session_lease() -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, HeartbeatAnswered(3040, REBALANCE_IN_PROGRESS)) == [PrepareJoin(1, "m1", True)]
    # Rebalance lease 40 + 60000 - 3000; session lease 3040 + 10000 - 3000 is earlier.
    assert mb.machine.lease_deadline() == 3040 + SESSION - MARGIN
    assert mb.run_until(10_040) == [(6040, SendHeartbeat(1, "m1")), (10_040, Lost(1, "m1", ANY))]


HEARTBEAT_ERRORS = [
    NONE,
    REBALANCE_IN_PROGRESS,
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NOT_COORDINATOR,
    ILLEGAL_GENERATION,
    UNKNOWN_MEMBER_ID,
    FENCED_INSTANCE_ID,
    INCONSISTENT_GROUP_PROTOCOL,
]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_never_stable_past_the_session_of_the_last_acknowledged_request(data: st.DataObject) -> None:
    """Whatever the heartbeats meet (answers, errors, failures, delays, a coordinator that moves
    or cannot be found, an application that polls or not), the member is never stable at a time
    the coordinator could already have expired it: ``t < last acknowledged send + session``, and
    in fact it lets go ``lease_margin_ms`` before that. Once a rebalance was seen (and the
    application does not rejoin: it never runs the PrepareJoin here), also
    ``t < last stable acknowledgement's send + rebalance_timeout - margin``."""
    # A long max poll interval too, so that the rebalance lease, not the poll, ends a rebalance.
    max_poll = data.draw(st.sampled_from([SETTINGS.max_poll_interval_ms, 300_000, 300_000]), label="max poll")
    mb = Member(dataclasses.replace(SETTINGS, max_poll_interval_ms=max_poll), stall_step_ms=250)
    # to_stable ends with the heartbeat sent with SyncGroup's answer acknowledged (NONE).
    acked = [SYNC_HEARTBEAT]  # the send time of the last acknowledged request
    acked_stable = [SYNC_HEARTBEAT]  # ... of the last one answered as stable (NONE)
    rebalancing = [False]  # a heartbeat was answered REBALANCE_IN_PROGRESS

    def check(mb: Member) -> None:
        if mb.machine.is_stable():
            assert mb.now < acked[0] + SESSION - MARGIN, (mb.now, acked[0])
            if rebalancing[0]:
                bound = acked_stable[0] + SETTINGS.rebalance_timeout_ms - MARGIN
                assert mb.now < bound, (mb.now, acked_stable[0])

    def answered(sent: int, error: int) -> HeartbeatAnswered:
        if error in (NONE, REBALANCE_IN_PROGRESS):
            acked[0] = max(acked[0], sent)
        if error == NONE:
            acked_stable[0] = max(acked_stable[0], sent)
        rebalancing[0] = rebalancing[0] or error == REBALANCE_IN_PROGRESS
        return HeartbeatAnswered(sent, error)

    mb.checks.append(check)
    to_stable(mb)
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        ops = ["wait", "poll", "wait, heartbeats answered at once"]
        if "heartbeat" in mb.outstanding:
            ops += ["heartbeat answer", "heartbeat answer", "heartbeat failure"]
        if "find" in mb.outstanding:
            ops += ["coordinator found", "lookup failed"]
        if "leave" in mb.outstanding:
            ops += ["leave answer"]
        op = data.draw(st.sampled_from(ops), label="op")
        delay = data.draw(st.integers(0, 12_000), label="delay")
        t = mb.now + delay
        if op == "wait":
            mb.run_until(t)
        elif op == "wait, heartbeats answered at once":
            # Long runs of one answer: a rebalance the application ignores, a coordinator that
            # keeps moving (and is found again at once), one that keeps loading...
            error = data.draw(st.sampled_from([REBALANCE_IN_PROGRESS, NOT_COORDINATOR, *HEARTBEAT_ERRORS]))
            span = data.draw(st.one_of(st.integers(0, 70_000), st.just(60_000)), label="span")
            network = {
                "heartbeat": lambda sent, e=error: answered(sent, e),
                "find": lambda sent: CoordinatorFound(),
            }
            if "heartbeat" in mb.outstanding:
                mb.handle(answered(mb.outstanding["heartbeat"], error), network)
            mb.run_until(mb.now + span, network)
        elif op == "poll":
            mb.at(t, Polled())
        elif op == "heartbeat answer":
            error = data.draw(st.sampled_from(HEARTBEAT_ERRORS), label="error")
            sent = mb.outstanding["heartbeat"]
            mb.run_until(t)
            mb.handle(answered(sent, error))
        elif op == "heartbeat failure":
            mb.at(t, RequestFailed("heartbeat", "timed out"))
        elif op == "coordinator found":
            mb.at(t, CoordinatorFound())
        elif op == "lookup failed":
            mb.at(t, CoordinatorLookupFailed("no broker"))
        else:
            mb.at(t, LeaveAnswered(NONE))
    mb.run_until(mb.now + 2 * SESSION)
    assert not mb.machine.is_stable() or mb.machine.lease_deadline() is not None


# --- max poll interval ----------------------------------------------------------------------------


def test_max_poll_interval_leaves_the_group_and_a_later_poll_rejoins() -> None:
    mb = to_stable()
    assert mb.at(1000, Polled()) == []
    mb.run_until(60_999, answer_heartbeats(NONE))
    assert mb.machine.is_stable()
    mb.run_until(61_001, answer_heartbeats(NONE))
    losses = mb.issued(Lost)
    # Within run_until's last step. That the loss comes exactly at the deadline the machine
    # announces is checked by test_max_poll_interval_is_enforced_at_the_deadline_it_announces.
    assert len(losses) == 1 and 61_000 <= losses[0] <= 61_001
    assert mb.actions_since(losses[0]) == [
        (losses[0], Lost(1, "m1", ANY)),
        (losses[0], SendLeaveGroup("m1", ANY)),
    ]
    assert mb.machine.state is MemberState.LOST
    assert mb.machine.generation() == NO_GENERATION
    assert mb.machine.next_deadline() is None
    assert mb.at(61_010, LeaveAnswered(NONE)) == []
    assert mb.run_until(90_000) == []  # out of the group until the application polls
    assert mb.at(90_000, Polled()) == [PrepareJoin(-1, "", False)]
    assert mb.at(90_010, Prepared(PROTOCOLS)) == [SendJoinGroup("", PROTOCOLS, ANY)]


def test_polling_keeps_the_member_in_the_group() -> None:
    mb = to_stable()
    for t in range(20_000, 200_001, 20_000):
        mb.run_until(t, answer_heartbeats(NONE))
        assert mb.at(t, Polled()) == []
    assert mb.machine.is_stable()
    assert mb.issued(Lost) == []
    # The one at 40, then one every interval.
    assert mb.issued(SendHeartbeat) == list(range(SYNC_HEARTBEAT, 200_001, INTERVAL))


def test_max_poll_interval_is_enforced_at_the_deadline_it_announces() -> None:
    mb = to_stable(Member(dataclasses.replace(SETTINGS, max_poll_interval_ms=5000)))
    mb.run_until(3040)
    assert mb.at(3040, HeartbeatAnswered(3040, NONE)) == []
    assert mb.machine.next_deadline() == 5000  # last poll at 0 (JoinWanted)
    assert mb.tick_at_deadline() == [Lost(1, "m1", ANY), SendLeaveGroup("m1", ANY)]


# --- coordinator moves and retries ------------------------------------------------------------------


MOVED = pytest.mark.parametrize(
    "error", [NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE], ids=["NOT_COORDINATOR", "NOT_AVAILABLE"]
)


@MOVED
def test_join_to_a_moved_coordinator_finds_it_and_retries(error: int) -> None:
    mb = Member()
    to_joining(mb)
    assert mb.at(25, JoinAnswered(20, error)) == [FindCoordinator()]
    assert mb.machine.state is MemberState.JOINING
    assert mb.at(30, CoordinatorFound()) == [SendJoinGroup("m1", PROTOCOLS, "start")]


@MOVED
def test_sync_to_a_moved_coordinator_finds_it_and_joins_again(error: int) -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, error)) == [FindCoordinator()]
    # As Kafka's clients do: the rebalance is redone from JoinGroup at the new coordinator.
    assert mb.at(50, CoordinatorFound()) == [SendJoinGroup("m1", PROTOCOLS, "start")]
    assert mb.machine.state is MemberState.JOINING


@MOVED
def test_heartbeat_to_a_moved_coordinator_finds_it_and_heartbeats_on(error: int) -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, HeartbeatAnswered(3040, error)) == [FindCoordinator()]
    assert mb.machine.is_stable()
    assert mb.at(3060, CoordinatorFound()) == []
    assert mb.run_until(6040) == [(6040, SendHeartbeat(1, "m1"))]


def test_join_coordinator_loading_retries_after_backoff() -> None:
    mb = Member()
    to_joining(mb)
    assert mb.at(25, JoinAnswered(20, COORDINATOR_LOAD_IN_PROGRESS)) == []
    assert mb.machine.next_deadline() == 25 + BACKOFF
    assert mb.run_until(25 + BACKOFF) == [(125, SendJoinGroup("m1", PROTOCOLS, "start"))]


def test_sync_coordinator_loading_joins_again_after_backoff() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, COORDINATOR_LOAD_IN_PROGRESS)) == []
    assert mb.run_until(40 + BACKOFF) == [(140, SendJoinGroup("m1", PROTOCOLS, "start"))]


def test_heartbeat_coordinator_loading_keeps_heartbeating() -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, HeartbeatAnswered(3040, COORDINATOR_LOAD_IN_PROGRESS)) == []
    assert mb.machine.is_stable()
    assert mb.machine.lease_deadline() == LEASE  # not an acknowledgement
    assert mb.run_until(6040) == [(6040, SendHeartbeat(1, "m1"))]


def test_lookup_failure_retries_after_backoff() -> None:
    mb = Member()
    assert mb.at(0, JoinWanted("start")) == [FindCoordinator()]
    assert mb.at(5, CoordinatorLookupFailed("no broker")) == []
    assert mb.run_until(104) == []
    assert mb.run_until(105) == [(105, FindCoordinator())]
    assert mb.at(110, CoordinatorFound()) == [PrepareJoin(-1, "", False)]


def test_join_request_failure_finds_the_coordinator_after_backoff() -> None:
    mb = Member()
    to_joining(mb)
    assert mb.at(25, RequestFailed("join", "connection reset")) == []
    assert mb.run_until(125) == [(125, FindCoordinator())]
    assert mb.at(130, CoordinatorFound()) == [SendJoinGroup("m1", PROTOCOLS, "start")]


def test_sync_request_failure_finds_the_coordinator_and_joins_again() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, RequestFailed("sync", "connection reset")) == []
    assert mb.run_until(140) == [(140, FindCoordinator())]
    assert mb.at(150, CoordinatorFound()) == [SendJoinGroup("m1", PROTOCOLS, "start")]


def test_heartbeat_request_failure_finds_the_coordinator_after_backoff() -> None:
    mb = to_stable()
    mb.run_until(3040)
    assert mb.at(3050, RequestFailed("heartbeat", "connection reset")) == []
    assert mb.machine.is_stable()
    assert mb.run_until(3150) == [(3150, FindCoordinator())]
    assert mb.at(3160, CoordinatorFound()) == []
    assert mb.run_until(6040) == [(6040, SendHeartbeat(1, "m1"))]


# --- errors a retry cannot fix ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "name"),
    [
        (INCONSISTENT_GROUP_PROTOCOL, "INCONSISTENT_GROUP_PROTOCOL"),
        (24, "INVALID_GROUP_ID"),
        (30, "GROUP_AUTHORIZATION_FAILED"),
        (81, "GROUP_MAX_SIZE_REACHED"),
    ],
)
def test_join_error_a_retry_cannot_fix_fails_the_join(error: int, name: str) -> None:
    mb = Member()
    mb.at(0, JoinWanted("start"))
    mb.at(5, CoordinatorFound())
    mb.at(10, Prepared(PROTOCOLS))
    assert mb.at(20, JoinAnswered(10, error)) == [
        Fail("join", f"join: the coordinator answered {name}", name)
    ]
    assert mb.machine.state is MemberState.UNJOINED
    assert mb.machine.next_deadline() is None
    assert mb.run_until(100_000) == []  # no retry on its own
    assert mb.at(100_000, JoinWanted("again")) == [PrepareJoin(-1, "", False)]


def test_a_join_asked_for_again_at_once_after_a_failure_waits_out_the_retry_backoff() -> None:
    mb = Member()
    mb.at(0, JoinWanted("start"))
    mb.at(5, CoordinatorFound())
    mb.at(10, Prepared(PROTOCOLS))
    (failed,) = mb.at(20, JoinAnswered(10, INCONSISTENT_GROUP_PROTOCOL))
    assert isinstance(failed, Fail)
    assert mb.at(21, JoinWanted("again")) == []
    assert mb.machine.next_deadline() == 20 + BACKOFF
    assert mb.run_until(20 + 2 * BACKOFF) == [(20 + BACKOFF, PrepareJoin(-1, "", False))]


def test_sync_error_a_retry_cannot_fix_fails_the_join() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, 30)) == [
        Fail(
            "join", "sync: the coordinator answered GROUP_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED"
        )
    ]
    assert mb.machine.state is MemberState.UNJOINED
    assert not mb.machine.is_stable()


# --- the application's callbacks failing -------------------------------------------------------------


def test_on_join_complete_failing_starts_a_new_round() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    assert mb.at(50, Completed(ok=False)) == [PrepareJoin(1, "m1", False)]
    assert not mb.machine.is_stable()
    assert mb.machine.lease_deadline() is None
    assert mb.at(60, Prepared(PROTOCOLS)) == [SendJoinGroup("m1", PROTOCOLS, "on_join_complete raised")]


def test_an_assignment_the_application_reaches_after_its_lease_is_refused() -> None:
    """Paused between SyncGroup's answer and on_join_complete for longer than the lease: the
    assignment may already be someone else's, so the driver refuses it and the member rejoins."""
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, NONE, b"A"))[0] == Complete(1, "m1", "range", b"A")
    lease_end = 30 + SESSION - MARGIN  # counted from the acknowledged SyncGroup's send
    assert mb.machine.assignment_fresh(lease_end - 1)
    assert not mb.machine.assignment_fresh(lease_end)
    late = "the assignment arrived after the lease ran out"
    assert mb.at(lease_end, Completed(ok=False, reason=late)) == [PrepareJoin(1, "m1", False)]
    assert not mb.machine.is_stable()
    assert mb.at(lease_end + 10, Prepared(PROTOCOLS)) == [SendJoinGroup("m1", PROTOCOLS, late)]


def test_prepare_failing_on_first_join_asks_again() -> None:
    mb = Member()
    mb.at(0, JoinWanted("start"))
    assert mb.at(5, CoordinatorFound()) == [PrepareJoin(-1, "", False)]
    assert mb.at(10, PrepareFailed()) == []
    assert mb.machine.state is MemberState.UNJOINED
    assert mb.issued(SendJoinGroup) == []
    assert mb.at(15, Polled()) == [PrepareJoin(-1, "", False)]  # the next poll asks again
    assert mb.at(20, Prepared(PROTOCOLS)) == [SendJoinGroup("", PROTOCOLS, ANY)]


def test_prepare_failing_during_a_rebalance_releases_and_asks_again() -> None:
    mb = to_stable()
    assert mb.at(100, JoinWanted("rejoin")) == [PrepareJoin(1, "m1", True)]
    assert mb.at(110, PrepareFailed()) == []
    assert mb.at(115, Polled()) == [PrepareJoin(1, "m1", False)]  # released: no revoke again
    assert mb.machine.state is MemberState.UNJOINED
    assert not mb.machine.is_stable()
    assert mb.machine.lease_deadline() is None


def test_stale_application_results_are_ignored() -> None:
    mb = to_stable()
    assert mb.at(100, Prepared(PROTOCOLS)) == []
    assert mb.at(101, PrepareFailed()) == []
    assert mb.at(102, AssignmentComputed((("m1", b"x"),))) == []
    assert mb.at(103, Completed(ok=False)) == []
    assert mb.machine.is_stable()
    assert mb.machine.generation() == GEN1


# --- leaving --------------------------------------------------------------------------------------


def test_leave_wanted_sends_leave_and_resets_the_generation() -> None:
    mb = to_stable()
    assert mb.at(100, LeaveWanted("bye")) == [SendLeaveGroup("m1", "bye")]
    assert mb.machine.state is MemberState.UNJOINED
    assert mb.machine.generation() == NO_GENERATION
    assert not mb.machine.is_stable()
    assert mb.machine.next_deadline() is None
    assert mb.at(110, LeaveAnswered(NONE)) == []
    assert mb.run_until(100_000) == []
    assert mb.at(100_000, JoinWanted("back")) == [PrepareJoin(-1, "", False)]


def test_leave_wanted_before_having_an_id_sends_nothing() -> None:
    mb = Member()
    mb.at(0, JoinWanted("start"))
    mb.at(5, CoordinatorFound())
    assert mb.at(10, Prepared(PROTOCOLS)) == [SendJoinGroup("", PROTOCOLS, "start")]
    assert mb.at(15, LeaveWanted("bye")) == []
    assert mb.machine.state is MemberState.UNJOINED
    # The JoinGroup's answer, when it comes, is ignored.
    assert mb.at(20, JoinAnswered(10, MEMBER_ID_REQUIRED, member_id="m1")) == []
    assert mb.machine.generation() == NO_GENERATION


def test_leave_wanted_while_completing_ignores_the_sync_answer() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(35, LeaveWanted("bye")) == [SendLeaveGroup("m1", "bye")]
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == []
    assert not mb.machine.is_stable()
    assert mb.run_until(20_000) == []


# --- SyncGroup answered REBALANCE_IN_PROGRESS --------------------------------------------------------


def test_sync_rebalance_in_progress_starts_a_new_round() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, REBALANCE_IN_PROGRESS)) == [PrepareJoin(1, "m1", False)]
    assert not mb.machine.is_stable()
    assert mb.at(50, Prepared(PROTOCOLS)) == [SendJoinGroup("m1", PROTOCOLS, ANY)]
    joined = JoinAnswered(50, NONE, 2, "range", "m0", "m1", ())
    assert mb.at(60, joined) == [SendSyncGroup(2, "m1", "range", ())]


@pytest.mark.parametrize(
    ("error", "member_after"),
    [(ILLEGAL_GENERATION, "m1"), (UNKNOWN_MEMBER_ID, "")],
    ids=["ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID"],
)
def test_sync_refused_starts_over_with_reset_generation(error: int, member_after: str) -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, error)) == [PrepareJoin(-1, member_after, False)]
    assert mb.machine.generation() == Generation(-1, member_after, None)


# --- suspected bugs -------------------------------------------------------------------------------


def test_rebalance_seen_while_completing_is_not_forgotten() -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    # The heartbeat sent at once learns of the next rebalance while the application is slow to
    # run on_join_complete.
    assert mb.at(45, HeartbeatAnswered(40, REBALANCE_IN_PROGRESS)) == []
    mb.run_until(3040)
    assert mb.issued(SendHeartbeat) == [40, 3040]
    mb.at(3100, Completed(ok=True))
    mb.run_until(20_000, answer_heartbeats(REBALANCE_IN_PROGRESS))
    assert PrepareJoin(1, "m1", True) in [a for _, a in mb.actions_since(3100)]


@pytest.mark.parametrize("error", [ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID])
def test_completed_after_the_generation_was_lost_does_not_make_it_stable(error: int) -> None:
    mb = Member()
    to_completing(mb)
    assert mb.at(40, SyncAnswered(30, NONE, b"A")) == [
        Complete(1, "m1", "range", b"A"),
        SendHeartbeat(1, "m1"),
    ]
    mb.run_until(3030)  # the application is slow to run on_join_complete
    assert mb.at(3035, HeartbeatAnswered(40, error)) == []  # nothing held yet: no Lost
    assert mb.machine.state is MemberState.LOST
    mb.at(3100, Completed(ok=True))
    # The generation is gone; claiming an assignment now (with no lease at all) is unsafe.
    assert not mb.machine.is_stable(), (mb.machine.generation(), mb.machine.lease_deadline())


def _heartbeat_in_flight(mb: Member) -> None:
    to_stable(mb)
    mb.run_until(3040)  # sent, unanswered; the next is due at 6040
    mb.run_until(6040)


def _join_outstanding(mb: Member) -> None:
    to_stable(mb)
    mb.run_until(3040)
    mb.at(3045, HeartbeatAnswered(3040, REBALANCE_IN_PROGRESS))
    mb.at(3050, Prepared(PROTOCOLS))  # JoinGroup out; the coordinator holds it for seconds
    mb.run_until(6040)


def _coordinator_unknown(mb: Member) -> None:
    to_stable(mb)
    mb.run_until(3040)
    mb.at(3045, HeartbeatAnswered(3040, NOT_COORDINATOR))
    mb.at(3050, CoordinatorLookupFailed("no broker"))
    mb.run_until(6040, {"find": lambda sent: CoordinatorLookupFailed("no broker")})


def _lost_by_lease(mb: Member) -> None:
    to_stable(mb)
    mb.run_until(LEASE)  # Lost at 7040; the heartbeat sent at 3040 is still unanswered


@pytest.mark.parametrize(
    "scenario", [_heartbeat_in_flight, _join_outstanding, _coordinator_unknown, _lost_by_lease]
)
def test_next_deadline_moves_past_a_tick(scenario) -> None:
    mb = Member()
    scenario(mb)
    if mb.machine.next_deadline() is not None:  # None: nothing to wake for, which is fine
        mb.tick_at_deadline()
    deadline = mb.machine.next_deadline()
    assert deadline is None or deadline > mb.now, (deadline, mb.now)


def test_a_machine_table_that_misses_an_event_or_a_timer_is_refused() -> None:
    def nothing(machine: object, event: object, now: int) -> None:
        pass

    def expire(machine: object, now: int) -> None:
        pass

    rows = [on(event_type, nothing) for event_type in typing.get_args(MemberEvent)]
    EventTable(MemberEvent, *rows)
    with pytest.raises(TypeError, match="'Tick'"):
        EventTable(MemberEvent, *(r for r in rows if r.event_type is not Tick))
    with pytest.raises(TypeError, match="a row twice"):
        EventTable(MemberEvent, *rows, rows[0])
    timers = [TimerRow(kind, lambda machine: None, expire) for kind in TimerKind]
    TimerTable(*timers)
    with pytest.raises(TypeError, match="every timer kind"):
        TimerTable(*timers[1:])
    with pytest.raises(TypeError, match="every timer kind"):
        TimerTable(*timers, timers[0])
