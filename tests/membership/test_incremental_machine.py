"""The KIP-848 member machine against the embedded coordinator's real engine, sans-IO.

Members' machines exchange ConsumerGroupHeartbeats with a :class:`GroupCoordinator` (the
consumer plugin's real server-side assignors) over a simulated network with a fake clock;
each member's "application" applies the assignments the machine asks it to. The checks are
from the members' own point of view: what each application has started and not yet stopped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from engine_checks import check_quick_looks, check_stored_changes, first_classic_join
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_api._membership._incremental import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Event,
    GroupHeartbeatAnswered,
    IncrementalMachine,
    IncrementalSettings,
    IncrementalState,
    Reconcile,
    Reconciled,
    ReleaseHeldHeartbeat,
    SendGroupHeartbeat,
)
from coordinator_api._membership._machine import (
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
)
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._messages import (
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    CreateTopics,
    JoinGroupResult,
    NewTopic,
)
from coordinator_api.server._state import GroupCoordinator

SESSION_MS = 6000
INTERVAL_MS = 500
REBALANCE_MS = 4000
MARGIN_MS = 500
PARTITIONS = 12


def make_server(hold_ms: int = 0) -> GroupCoordinator:
    config = CoordinatorConfig(
        heartbeat_hold_ms=hold_ms,
        initial_rebalance_delay_ms=0,
        consumer_group_session_timeout_ms=SESSION_MS,
        consumer_group_heartbeat_interval_ms=INTERVAL_MS,
    )
    server = GroupCoordinator(config, server_assignors=SERVER_ASSIGNORS)
    check_quick_looks(server)
    check_stored_changes(server)
    server.handle(
        0,
        CreateTopics(
            topics=(NewTopic(name="t", num_partitions=PARTITIONS, replication_factor=1),), validate_only=False
        ),
        0,
    )
    return server


def member_settings(member_id: str, instance_id: str | None = None, **overrides: int) -> IncrementalSettings:
    values = {
        "session_timeout_ms": SESSION_MS,
        "heartbeat_interval_ms": 3000,  # the coordinator's 500 replaces it after the first answer
        "rebalance_timeout_ms": REBALANCE_MS,
        "max_poll_interval_ms": 60_000,
        "retry_backoff_ms": 100,
        "lease_margin_ms": MARGIN_MS,
        **overrides,
    }
    return IncrementalSettings(group_id="g", member_id=member_id, group_instance_id=instance_id, **values)


@dataclass
class Member:
    machine: IncrementalMachine
    started: set[tuple[bytes, int]] = field(default_factory=set)  # what the application works on
    pending: list[Reconcile] = field(default_factory=list)
    failures: list[Fail] = field(default_factory=list)
    lost: list[Lost] = field(default_factory=list)
    sent: list[SendGroupHeartbeat] = field(default_factory=list)
    releases: list[ReleaseHeldHeartbeat] = field(default_factory=list)


class Network:
    """Members, the coordinator and the messages between them, on one fake clock."""

    def __init__(self, seed: int = 0, max_delay_ms: int = 0, hold_ms: int = 0) -> None:
        self.server = make_server(hold_ms)
        # Requests the coordinator holds: ref -> (member, sent at, leaving).
        self.waiting: dict[int, tuple[Member, int, bool]] = {}
        self.now = 0
        self.refs = iter(range(1, 10**9))
        self.members: dict[str, Member] = {}
        self.rng = random.Random(seed)
        self.max_delay_ms = max_delay_ms
        # (deliver at, member, event): a member that is gone (or replaced) gets nothing more.
        self.in_transit: list[tuple[int, Member, Event]] = []
        self.joined = 0
        self.ids: set[str] = set()
        self.reachable = True
        self.cut_off: set[str] = set()  # members whose requests do not reach the coordinator
        self.paused: set[str] = set()  # processes stopped (SIGSTOP): their answers wait, they do nothing
        self.topic_id = {t.name: t.topic_id for t in self.server.topics()}["t"]

    def add(self, name: str, instance_id: str | None = None, **overrides: int) -> Member:
        self.joined += 1  # each process has its own member id, as a new process makes a new one
        member_id = f"{name}-id" if name not in self.ids else f"{name}-id{self.joined}"
        self.ids.add(name)
        member = Member(IncrementalMachine(member_settings(member_id, instance_id, **overrides)))
        self.members[name] = member
        self.feed(name, Polled())
        return member

    def feed(self, name: str, event: Event) -> None:
        member = self.members[name]
        for action in member.machine.handle(event, self.now):
            if isinstance(action, FindCoordinator):
                found = self.reaches(name)
                self.deliver(name, CoordinatorFound() if found else RequestFailed(RequestKind.FIND, "down"))
            elif isinstance(action, SendGroupHeartbeat):
                member.sent.append(action)
                self.send(name, action)
            elif isinstance(action, ReleaseHeldHeartbeat):
                # The small request behind the held heartbeat, on its connection.
                member.releases.append(action)
                assert action.after == sum(s.member_epoch >= 0 for s in member.sent)
                held = [ref for ref, (m, _, leaving) in self.waiting.items() if m is member and not leaving]
                for ref in held:
                    self.answer(self.server.release(ref, self.now).replies)
            elif isinstance(action, Reconcile):
                member.pending.append(action)
            elif isinstance(action, Lost):
                member.lost.append(action)
                member.started.clear()  # on_partitions_lost: stop at once
            elif isinstance(action, Fail):
                member.failures.append(action)

    def reaches(self, name: str) -> bool:
        return self.reachable and name not in self.cut_off

    def deliver(self, name: str, event: Event) -> None:
        delay = self.rng.randint(0, self.max_delay_ms) if self.max_delay_ms else 0
        self.in_transit.append((self.now + delay, self.members[name], event))

    def send(self, name: str, action: SendGroupHeartbeat) -> None:
        sent_at = self.now
        leaving = action.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
        if not self.reaches(name):
            kind = RequestKind.LEAVE if leaving else RequestKind.HEARTBEAT
            self.deliver(name, RequestFailed(kind, "connection refused"))
            return
        machine = self.members[name].machine
        request = ConsumerGroupHeartbeat(
            group_id="g",
            member_id=action.member_id,
            member_epoch=action.member_epoch,
            instance_id=machine.settings.group_instance_id,
            rebalance_timeout_ms=machine.settings.rebalance_timeout_ms,
            subscribed_topic_names=("t",),
            owned=self.by_topic_id(action.owned),
        )
        ref = next(self.refs)
        self.waiting[ref] = (self.members[name], sent_at, leaving)
        self.answer(self.server.handle(ref, request, self.now).replies)

    def answer(self, replies: list[tuple[object, object]]) -> None:
        """Deliver the coordinator's answers (to this request, or to held ones it released)."""
        by_member = {id(member): name for name, member in self.members.items()}
        for ref, result in replies:
            member, sent_at, leaving = self.waiting.pop(ref)  # type: ignore[call-overload]
            assert isinstance(result, ConsumerGroupHeartbeatResult)
            name = by_member.get(id(member))
            if name is None:
                continue  # the process is gone
            if leaving:
                self.deliver(name, LeaveAnswered(result.error))
                continue
            assignment = (
                None
                if result.assignment is None
                else frozenset((tid, p) for tid, parts in result.assignment for p in parts)
            )
            self.deliver(
                name,
                GroupHeartbeatAnswered(
                    sent_at,
                    result.error,
                    result.message or "",
                    result.member_epoch,
                    result.heartbeat_interval_ms,
                    assignment,
                ),
            )

    @staticmethod
    def by_topic_id(owned: frozenset[tuple[bytes, int]]) -> tuple[tuple[bytes, tuple[int, ...]], ...]:
        by_topic: dict[bytes, list[int]] = {}
        for tid, partition in sorted(owned):
            by_topic.setdefault(tid, []).append(partition)
        return tuple((tid, tuple(parts)) for tid, parts in sorted(by_topic.items()))

    def apply(self, name: str) -> None:
        """The application runs the oldest assignment change it was asked for."""
        member = self.members[name]
        action = member.pending.pop(0)
        if action is member.machine.awaiting:  # the runtime skips actions no longer wanted
            member.started -= action.revoked  # revoke first...
            member.started |= action.assigned  # ...then assign
            self.feed(name, Reconciled(action, ok=True))

    def run(self, ms: int, *, apply: bool = True, step: int = 10) -> None:
        end = self.now + ms
        while self.now < end:
            self.now += step
            self.answer(self.server.expire(self.now).replies)
            due = sorted((m for m in self.in_transit if m[0] <= self.now), key=lambda m: m[0])
            self.in_transit = [m for m in self.in_transit if m[0] > self.now]
            by_member = {id(member): name for name, member in self.members.items()}
            for at, member, event in due:
                if by_member.get(id(member)) in self.paused:
                    self.in_transit.append((at, member, event))  # read once it resumes
                elif id(member) in by_member:
                    self.feed(by_member[id(member)], event)
            for name in [n for n in self.members if n not in self.paused]:
                if apply and self.members[name].pending:
                    self.apply(name)
                self.feed(name, Tick())
            self.check_no_partition_started_twice()

    def check_no_partition_started_twice(self) -> None:
        seen: dict[tuple[bytes, int], str] = {}
        for name, member in self.members.items():
            if name in self.paused:
                continue  # checked by its lease: it may not act on them once it resumes
            for partition in member.started:
                assert partition not in seen, f"{partition} started by {seen[partition]} and {name}"
                seen[partition] = name

    def every_partition_started_once(self) -> bool:
        started = [p for m in self.members.values() for p in m.started]
        return len(started) == PARTITIONS == len(set(started))

    def tp(self, *partitions: int) -> set[tuple[bytes, int]]:
        return {(self.topic_id, p) for p in partitions}


def test_a_member_joins_gets_everything_and_acknowledges_at_once() -> None:
    net = Network()
    a = net.add("a")
    net.run(20, apply=False)
    # Its own member id; joined, it heartbeats again at once (a coordinator that holds heartbeats
    # answers that one the moment it has news), listing as owned what it is about to start.
    assert [(s.member_id, s.member_epoch) for s in a.sent] == [("a-id", 0), ("a-id", 2)]
    assert a.sent[-1].owned == net.tp(*range(PARTITIONS))
    (reconcile,) = a.pending
    assert reconcile.assigned == net.tp(*range(PARTITIONS)) and not reconcile.revoked
    assert a.machine.state is IncrementalState.RECONCILING and a.machine.is_stable() is False
    net.apply("a")
    # The acknowledgement goes at once, not an interval later.
    assert a.sent[-1].member_epoch == 2 and a.sent[-1].owned == net.tp(*range(PARTITIONS))
    assert a.machine.state.value == "acknowledging"
    net.run(10)
    assert a.machine.state.value == "stable" and a.machine.is_stable(net.now)
    assert a.machine.generation().generation_id == 2
    # Then heartbeats follow the coordinator's interval (500 ms), not the member's 3,000: an
    # interval after each answer (answers take one 10 ms step here).
    before = len(a.sent)
    net.run(2100)
    assert len(a.sent) - before == 4


def test_a_newcomer_gets_partitions_as_soon_as_their_owner_has_revoked_them() -> None:
    net = Network()
    a = net.add("a")
    net.run(100)
    b = net.add("b")
    net.run(10, apply=False)
    assert b.machine.state is not IncrementalState.STABLE and not b.started
    net.run(2 * INTERVAL_MS)
    assert net.every_partition_started_once()
    assert len(a.started) == len(b.started) == PARTITIONS // 2
    assert a.machine.is_stable() and b.machine.is_stable()
    assert a.machine.member_epoch == b.machine.member_epoch == 3


def test_a_new_subscription_goes_at_once_even_while_a_heartbeat_is_held() -> None:
    # The coordinator holds heartbeats with nothing new for 5 s. Asked to rejoin (its
    # subscription changed), the member cannot send the heartbeat that says so before the one in
    # flight is answered: it asks the coordinator to answer that one now (a small request behind
    # it on the connection), once, and sends the news as soon as the answer is in.
    net = Network(hold_ms=5000)
    a = net.add("a")
    net.run(INTERVAL_MS + 100)
    assert RequestKind.HEARTBEAT in a.machine.in_flight and not a.releases
    sent = len(a.sent)
    net.feed("a", JoinWanted("the subscription changed"))
    net.feed("a", Tick())
    assert [r.after for r in a.releases] == [sent]
    net.run(20)
    assert len(a.sent) == sent + 1 and a.sent[-1].member_epoch == 2 and len(a.releases) == 1
    assert a.machine.news_to_send is False


def leave(net: Network, name: str) -> None:
    net.members[name].started.clear()  # the runtime revokes everything before leaving
    net.feed(name, LeaveWanted("closing"))
    del net.members[name]


def test_a_member_moved_to_a_new_epoch_alone_is_reachable_for_the_next_change() -> None:
    # Five members share 12 partitions, 3, 3, 2, 2 and 2. A two-partition member leaves: the
    # two others with two take its partitions; the three-partition members keep theirs, and
    # the coordinator moves them to the new epoch at their next heartbeat, answered at once
    # since the epoch is news. Each then heartbeats again at once, and that heartbeat, with
    # nothing new, is held: when a three-partition member leaves just after, the partitions it
    # frees reach the other one at once instead of at its next heartbeat, an interval later.
    net = Network(hold_ms=5000)
    for name in "abcde":
        net.add(name)
    net.run(4 * INTERVAL_MS)
    assert net.every_partition_started_once()
    by_size = sorted(net.members, key=lambda n: (len(net.members[n].started), n))
    assert [len(net.members[n].started) for n in by_size] == [2, 2, 2, 3, 3]
    stay, goes = by_size[3], by_size[4]  # unconcerned by the leave
    epoch = net.members[stay].machine.member_epoch
    leave(net, by_size[0])
    for _ in range(2 * INTERVAL_MS // 10):
        net.run(10)
        if {m.machine.member_epoch for m in net.members.values()} == {epoch + 1}:
            break
    assert {m.machine.member_epoch for m in net.members.values()} == {epoch + 1}
    assert len(net.members[stay].started) == 3 and net.every_partition_started_once()

    leave(net, goes)
    net.run(50)
    assert net.every_partition_started_once(), {n: len(m.started) for n, m in net.members.items()}
    assert len(net.members[stay].started) == 4


def test_a_new_epoch_costs_one_heartbeat_more_where_heartbeats_are_answered_at_once() -> None:
    net = Network()  # no holds, as Kafka's brokers
    net.add("a")
    net.add("b")
    net.run(4 * INTERVAL_MS)
    a = net.members["a"]
    before, epoch = len(a.sent), a.machine.member_epoch
    net.add("c")  # a gives partitions up: the acknowledgement, and then the new epoch
    net.run(10 * INTERVAL_MS)
    assert a.machine.member_epoch > epoch and net.every_partition_started_once()
    # Ten intervals: ten heartbeats, the acknowledgement, and at most one more per new epoch.
    assert len(a.sent) - before <= 10 + 1 + (a.machine.member_epoch - epoch)


def test_a_member_that_leaves_revokes_nothing_twice_and_its_partitions_move() -> None:
    net = Network()
    net.add("a")
    net.add("b")
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once()
    b = net.members["b"]
    b.started.clear()  # the runtime revokes everything before leaving
    net.feed("b", LeaveWanted("closing"))
    assert b.sent[-1].member_epoch == LEAVE_EPOCH and b.machine.state is IncrementalState.UNJOINED
    del net.members["b"]
    net.run(2 * INTERVAL_MS)
    assert net.every_partition_started_once() and len(net.members["a"].started) == PARTITIONS


def test_a_static_member_leaves_with_epoch_minus_two_and_its_successor_takes_over() -> None:
    net = Network()
    net.add("a", instance_id="a-1")
    net.add("b")
    net.run(3 * INTERVAL_MS)
    kept = set(net.members["a"].started)
    net.members["a"].started.clear()
    net.feed("a", LeaveWanted("restarting"))
    assert net.members["a"].sent[-1].member_epoch == STATIC_LEAVE_EPOCH
    del net.members["a"]
    net.run(100)
    assert len(net.members["b"].started) == PARTITIONS // 2  # a's place is kept for it
    net.add("a2", instance_id="a-1")
    net.run(2 * INTERVAL_MS)
    assert net.members["a2"].started == kept and net.every_partition_started_once()


def test_a_fenced_member_loses_everything_and_rejoins_with_epoch_zero_and_the_same_id() -> None:
    net = Network()
    a = net.add("a")
    net.run(3 * INTERVAL_MS)
    # The coordinator forgets the group (say, a new coordinator without the data directory).
    net.server = make_server()
    net.run(INTERVAL_MS + 20, apply=False)
    # Kafka's coordinator too answers a heartbeat for a group it does not know GROUP_ID_NOT_FOUND.
    assert a.lost and a.lost[-1].reason.startswith("the coordinator fenced this member (GROUP_ID_NOT_FOUND")
    # It joined again with epoch 0, keeping its member id.
    assert [s.member_epoch for s in a.sent[1:]].count(0) == 1 and {s.member_id for s in a.sent} == {"a-id"}
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once() and a.machine.is_stable()


def group_epoch(net: Network) -> int:
    ((_, result),) = net.server.handle(0, ConsumerGroupDescribe(group_ids=("g",)), net.now).replies
    assert isinstance(result, ConsumerGroupDescribeResult)
    return result.groups[0].group_epoch


def settled_static_pair(net: Network) -> tuple[Member, Member, int]:
    """Static member a (instance a-1) and dynamic member b, settled; and the group epoch."""
    a = net.add("a", instance_id="a-1")
    b = net.add("b")
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once() and a.started and b.started
    return a, b, group_epoch(net)


def releases_then_rejoins(member: Member, since: int) -> bool:
    """The member's sends since ``since``: a static leave (-2), then a join (0), nothing else
    before that join."""
    epochs = [s.member_epoch for s in member.sent[since:]]
    return epochs[:2] == [STATIC_LEAVE_EPOCH, 0]


def test_a_static_member_whose_lease_ran_out_takes_its_place_back_at_once() -> None:
    # Cut off for longer than the lease, shorter than the session: the coordinator still holds a,
    # and a join (epoch 0) would be refused (UNRELEASED_INSTANCE_ID) until the session ran out and
    # the group rebalanced twice. a leaves with -2 first and joins into its own place.
    net = Network()
    a, b, epoch = settled_static_pair(net)
    kept, b_kept = set(a.started), set(b.started)
    net.cut_off.add("a")
    while not a.lost:
        net.run(10)
    sent = len(a.sent)
    net.cut_off.clear()
    net.run(3 * INTERVAL_MS)
    assert releases_then_rejoins(a, sent), [s.member_epoch for s in a.sent[sent:]]
    assert a.started == kept and b.started == b_kept and group_epoch(net) == epoch
    assert not a.failures


def test_a_static_member_fenced_by_epoch_takes_its_place_back_at_once() -> None:
    net = Network()
    a, b, epoch = settled_static_pair(net)
    kept, b_kept, sent = set(a.started), set(b.started), len(a.sent)
    net.feed("a", GroupHeartbeatAnswered(net.now, ErrorCode.FENCED_MEMBER_EPOCH, "epoch 3 is fenced"))
    assert a.lost and not a.started
    net.run(2 * INTERVAL_MS)
    assert releases_then_rejoins(a, sent), [s.member_epoch for s in a.sent[sent:]]
    assert a.started == kept and b.started == b_kept and group_epoch(net) == epoch


def test_a_static_member_whose_join_answer_was_lost_takes_the_place_it_was_given() -> None:
    net = Network()
    a = net.add("a", instance_id="a-1")
    net.run(10)  # its join reaches the coordinator...
    (answer,) = [e for _, member, e in net.in_transit if isinstance(e, GroupHeartbeatAnswered)]
    net.in_transit.clear()  # ...and the answer is lost with the connection
    assert answer.member_epoch > 0
    net.feed("a", RequestFailed(RequestKind.HEARTBEAT, "connection reset"))
    net.run(3 * INTERVAL_MS)
    assert releases_then_rejoins(a, 1), [s.member_epoch for s in a.sent]
    assert net.every_partition_started_once() and a.machine.is_stable()


def test_a_new_static_process_whose_first_join_failed_still_replaces_its_predecessor() -> None:
    # The release of a member id the coordinator never held is refused (FENCED_INSTANCE_ID: the
    # instance is the predecessor's); the join follows anyway and takes the predecessor's place.
    net = Network()
    a, _, epoch = settled_static_pair(net)
    kept = set(a.started)
    a.started.clear()
    net.feed("a", LeaveWanted("restarting"))
    del net.members["a"]
    net.run(100)
    send = net.send

    def lost_on_the_way(name: str, action: SendGroupHeartbeat) -> None:
        net.send = send
        net.deliver(name, RequestFailed(RequestKind.HEARTBEAT, "connection reset"))

    net.send = lost_on_the_way  # type: ignore[method-assign]
    a2 = net.add("a", instance_id="a-1")
    net.run(3 * INTERVAL_MS)
    assert releases_then_rejoins(a2, 1), [s.member_epoch for s in a2.sent]
    assert a2.started == kept and group_epoch(net) == epoch and not a2.failures


def test_an_unreachable_coordinator_ends_the_lease_before_the_session_can() -> None:
    net = Network()
    a = net.add("a")
    net.run(3 * INTERVAL_MS)
    last_acknowledged = a.machine.session_anchor
    assert last_acknowledged is not None and a.started
    net.reachable = False
    net.run(SESSION_MS)
    (lost,) = a.lost
    assert not a.started
    # Declared lost a margin before the earliest moment the coordinator could expire it.
    assert a.machine.lease_deadline() is None
    assert "not been acknowledged in time" in lost.reason
    net.reachable = True
    net.run(SESSION_MS + 3 * INTERVAL_MS)
    assert net.every_partition_started_once()


def test_a_member_paused_before_reading_a_revocation_gives_its_partitions_up_before_they_move() -> None:
    # The rebalance timeout (2 s) is shorter than the session (6 s). d joins; c sends its next
    # heartbeat and is paused (SIGSTOP) before it reads the answer, which asks it to revoke and
    # starts the coordinator's rebalance timeout: 2 s later c is fenced and its partitions move,
    # while a lease counted from c's last acknowledged heartbeat would run for about 5.5 s.
    net = Network()
    for name in "abc":
        net.add(name, rebalance_timeout_ms=2000)
    net.run(3000)
    assert net.every_partition_started_once()
    c = net.members["c"]
    net.add("d", rebalance_timeout_ms=2000)
    net.run(20)  # d has joined: a new target, in which c gives partitions up
    sent = len(c.sent)
    while len(c.sent) == sent:
        net.run(10)
    assert c.machine.awaiting is None  # it has not read the answer yet
    net.paused.add("c")
    lease = c.machine.lease_deadline()
    held = set(c.started)
    start = net.now
    while not any(p in net.members[n].started for n in "abd" for p in held) and net.now < start + 10_000:
        net.run(10)
    assert net.now < start + 10_000, "c's partitions never moved"
    assert lease is not None and lease <= net.now, (
        f"c's lease ends at {lease}; its partitions moved at {net.now}"
    )
    net.paused.clear()
    net.run(10)
    assert not c.started and c.lost  # the first thing it does on waking is to give them up


def test_a_held_heartbeat_is_released_before_its_rebalance_timeout_could_end_the_lease() -> None:
    # A rebalance timeout (600 ms) barely above the lease margin (500 ms): a heartbeat held for
    # its usual 400 ms would end the lease, so the member asks for the answer after 50 ms.
    net = Network(hold_ms=10_000)
    for name in "ab":
        net.add(name, rebalance_timeout_ms=600)
    net.run(5000)
    assert net.every_partition_started_once()
    assert all(not m.lost and not m.failures for m in net.members.values())
    assert all(len(m.releases) > 5 for m in net.members.values())


def test_an_application_that_never_finishes_revoking_loses_before_the_coordinator_fences_it() -> None:
    net = Network()
    a = net.add("a")
    net.run(3 * INTERVAL_MS)
    net.add("b")
    # a is asked to revoke half but its application never gets to it.
    for _ in range(REBALANCE_MS // 10 + 100):
        net.now += 10
        net.answer(net.server.expire(net.now).replies)
        due = [m for m in net.in_transit if m[0] <= net.now]
        net.in_transit = [m for m in net.in_transit if m[0] > net.now]
        for _, member, event in due:
            net.feed("a" if member is a else "b", event)
        if net.members["b"].pending:
            net.apply("b")
        net.feed("a", Tick())
        net.feed("b", Tick())
        net.check_no_partition_started_twice()
    assert a.lost, "the revocation outlived the rebalance timeout and the member kept its partitions"
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once()


def test_errors_a_retry_cannot_fix_fail_and_a_fenced_instance_is_final() -> None:
    net = Network()
    net.server = GroupCoordinator(CoordinatorConfig(), server_assignors={})  # no assignor at all
    a = net.add("a")
    net.run(20)
    (failure,) = a.failures
    assert failure.kind == "join" and failure.error_name == "UNSUPPORTED_ASSIGNOR"
    assert a.machine.state is IncrementalState.UNJOINED

    net = Network()
    a = net.add("a", instance_id="i")
    net.run(3 * INTERVAL_MS)
    net.feed("a", GroupHeartbeatAnswered(net.now, ErrorCode.FENCED_INSTANCE_ID))
    assert a.machine.state is IncrementalState.FENCED and not a.started and a.lost
    assert [f.error_name for f in a.failures] == ["FENCED_INSTANCE_ID"]
    net.feed("a", Polled())
    net.run(3 * INTERVAL_MS)
    assert a.machine.state is IncrementalState.FENCED and not a.started  # final


def test_a_join_refused_because_the_group_id_is_taken_fails_and_is_asked_again_only_after_a_backoff() -> None:
    """The group id is a classic group's the coordinator will not move to this protocol (here
    one of another protocol type): its join is answered GROUP_ID_NOT_FOUND, which a retry
    cannot change, so the member fails, as Kafka's consumer does, instead of joining again and
    again; an application that polls again has it join again, no sooner than the retry
    backoff. (A heartbeat past the join answered so is a coordinator that forgot the group: the
    member rejoins, test_a_fenced_member_loses_everything_and_rejoins_with_epoch_zero_and_the_same_id.)"""
    net = Network()
    join = first_classic_join("g", "leader", (("leader", b""),))
    ((_, joined),) = net.server.handle(0, join, net.now).replies
    assert isinstance(joined, JoinGroupResult) and joined.error is ErrorCode.NONE
    a = net.add("a")
    net.run(20)
    (failure,) = a.failures  # answered at once: within the first 10 ms step
    assert (failure.kind, failure.error_name) == ("join", "GROUP_ID_NOT_FOUND")
    assert failure.message.endswith(
        "Cannot upgrade classic group g to consumer group because the group does not use the consumer "
        "embedded protocol."
    )
    assert a.machine.state is IncrementalState.UNJOINED
    net.run(3 * INTERVAL_MS)
    assert [s.member_epoch for s in a.sent] == [0]  # nothing more until the application polls
    # An application that polls again at once asks again, no sooner than the retry backoff
    # (100 ms after the failure), however often it polls.
    net = Network()
    net.server.handle(0, join, net.now)
    a = net.add("a")
    while len(a.sent) < 2:
        net.run(10)
        net.feed("a", Polled())
    assert 100 <= net.now <= 130 and len(a.failures) == 1
    net.run(20)
    assert [f.error_name for f in a.failures] == ["GROUP_ID_NOT_FOUND"] * 2


def test_a_member_that_stops_polling_leaves_and_rejoins_when_polled_again() -> None:
    net = Network()
    a = net.add("a", max_poll_interval_ms=2000)
    net.add("b")
    net.run(1900)
    net.feed("b", Polled())
    net.run(200)
    assert a.lost and a.sent[-1].member_epoch == LEAVE_EPOCH
    net.run(2 * INTERVAL_MS)
    assert len(net.members["b"].started) == PARTITIONS
    net.feed("a", Polled())
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once() and a.started


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    delay=st.sampled_from([0, 80, 300, 700]),
    hold_ms=st.sampled_from([0, 500]),
    joins=st.lists(st.sampled_from("abcdef"), min_size=2, max_size=10),
)
def test_members_joining_and_leaving_at_random_never_start_a_partition_twice(
    seed: int, delay: int, hold_ms: int, joins: list[str]
) -> None:
    play_a_random_group(seed, delay, hold_ms, joins)


def test_a_revocation_done_but_not_yet_acknowledged_still_bounds_the_lease() -> None:
    # Found by the property above with a 1.2 s rebalance timeout: b revoked two partitions in
    # time, but its acknowledgement waited behind a heartbeat whose answer took 590 ms, so the
    # coordinator fenced it a rebalance timeout after asking and gave away what b still owned,
    # while b, done revoking, counted its lease from its session only.
    play_a_random_group(128, 700, 0, ["b", "a", "a", "a", "a", "a"], rebalance_timeout_ms=1200)


def play_a_random_group(seed: int, delay: int, hold_ms: int, joins: list[str], **overrides: int) -> None:
    # Answers take up to `delay` ms; members come, leave or crash; after every step no partition
    # has been started by two applications, and once things stop changing (and the sessions of
    # crashed members ran out) every partition is started exactly once.
    # With hold_ms the coordinator holds heartbeats that have no news for up to an interval.
    net = Network(seed=seed, max_delay_ms=delay, hold_ms=hold_ms)
    rng = random.Random(seed)
    for name in joins:
        if name in net.members and rng.random() < 0.5:
            net.members[name].started.clear()
            if rng.random() < 0.5:
                net.feed(name, LeaveWanted("done"))  # leaves cleanly; else crashes
            del net.members[name]
            continue
        if name not in net.members:
            net.add(name, **overrides)
        net.run(rng.randint(0, 6) * INTERVAL_MS // 2)
    if not net.members:
        net.add("z", **overrides)
    net.run(SESSION_MS + 16 * INTERVAL_MS)
    assert net.every_partition_started_once(), {n: len(m.started) for n, m in net.members.items()}
    assert all(m.machine.is_stable() for m in net.members.values())


def test_an_answer_of_an_ended_membership_is_ignored() -> None:
    net = Network()
    a = net.add("a")
    net.run(3 * INTERVAL_MS)
    while RequestKind.HEARTBEAT not in a.machine.in_flight:  # a heartbeat goes out...
        net.now += 10
        net.feed("a", Tick())
    (answer,) = [event for _, member, event in net.in_transit if member is a]
    net.in_transit.clear()  # ...and its answer is late
    a.started.clear()
    net.feed("a", LeaveWanted("bye"))
    net.feed("a", Polled())  # wants to join again at once, but one heartbeat at a time
    assert a.sent[-1].member_epoch == LEAVE_EPOCH
    net.feed("a", answer)  # the late answer of the old membership changes nothing...
    assert a.machine.member_epoch == 0 and a.machine.target is None and not a.pending
    assert a.sent[-1].member_epoch == 0  # ...and the join goes out now
    net.run(3 * INTERVAL_MS)
    assert net.every_partition_started_once()


def test_a_lookup_refused_for_authorization_fails_instead_of_retrying() -> None:
    machine = IncrementalMachine(member_settings("m"))
    assert machine.handle(Polled(), 0) == [FindCoordinator()]
    refused = CoordinatorLookupFailed("refused", "GROUP_AUTHORIZATION_FAILED")
    (failed,) = machine.handle(refused, 5)
    assert failed == Fail(
        "join",
        "FindCoordinator: the coordinator answered GROUP_AUTHORIZATION_FAILED",
        "GROUP_AUTHORIZATION_FAILED",
    )
    assert machine.state is IncrementalState.UNJOINED and machine.handle(Tick(), 10_000) == []


@pytest.mark.parametrize("error", [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNRELEASED_INSTANCE_ID])
def test_retriable_errors_back_off(error: ErrorCode) -> None:
    machine = IncrementalMachine(member_settings("m"))
    machine.handle(Polled(), 0)
    sent = [a for a in machine.handle(CoordinatorFound(), 0) if isinstance(a, SendGroupHeartbeat)]
    assert [s.member_epoch for s in sent] == [0] and machine.in_flight == {RequestKind.HEARTBEAT}
    assert machine.handle(GroupHeartbeatAnswered(0, error), 5) == []
    assert machine.next_deadline() == 105
    actions = machine.handle(Tick(), 105)
    assert [type(a) for a in actions] == [SendGroupHeartbeat]
