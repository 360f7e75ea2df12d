"""The classic member machine against the embedded coordinator's real classic groups, sans-IO.

Members' machines exchange JoinGroup, SyncGroup, Heartbeat and LeaveGroup with a
:class:`GroupCoordinator` over a simulated network with a fake clock, as h11's ConnectionPair
pairs client and server. Each member's "application" runs what the machine asks of it: revoke
and say its metadata, compute the assignment when it leads (round-robin of the shards over the
members sorted by id), start the shards of its assignment, stop everything when it is lost. The
checks are from the members' own point of view: which shards each application holds, and at
which generation.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_api._membership._machine import (
    Action,
    Assign,
    AssignmentComputed,
    Complete,
    Completed,
    CoordinatorFound,
    Event,
    Fail,
    FindCoordinator,
    HeartbeatAnswered,
    JoinAnswered,
    LeaveAnswered,
    LeaveWanted,
    Lost,
    MemberMachine,
    MemberSettings,
    Polled,
    Prepared,
    PrepareJoin,
    RequestKind,
    SendHeartbeat,
    SendJoinGroup,
    SendLeaveGroup,
    SendSyncGroup,
    SyncAnswered,
    Tick,
)
from coordinator_api._types import JoinedMember
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server import _messages as msg
from coordinator_api.server._state import GroupCoordinator

SESSION_MS = 6000
INTERVAL_MS = 500
REBALANCE_MS = 8000  # longer than the session, as Kafka's defaults (max.poll.interval.ms 300 s)
MARGIN_MS = 500
POLL_MS = 100  # how often each application polls
SHARDS = 12
ALL = set(range(SHARDS))
PROTOCOL_TYPE = "shards"
PROTOCOL = "round-robin"


def member_settings(instance_id: str | None, rebalance_ms: int) -> MemberSettings:
    return MemberSettings(
        group_id="g",
        group_instance_id=instance_id,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=INTERVAL_MS,
        rebalance_timeout_ms=rebalance_ms,
        max_poll_interval_ms=60_000,
        retry_backoff_ms=100,
        lease_margin_ms=MARGIN_MS,
    )


def round_robin(members: tuple[JoinedMember, ...]) -> tuple[tuple[str, bytes], ...]:
    """The leader's assignor: shard i to the i-th member (mod n), members sorted by id."""
    ids = sorted(m.member_id for m in members)
    return tuple((m, json.dumps([s for s in range(SHARDS) if ids[s % len(ids)] == m]).encode()) for m in ids)


@dataclass(eq=False)
class Member:
    """One process: its machine and what its application holds."""

    name: str
    machine: MemberMachine
    owned: set[int] = field(default_factory=set)  # the shards the application works on
    generations: list[int] = field(default_factory=list)  # of each assignment it started
    pending: list[Action] = field(default_factory=list)  # callbacks for the application
    lost: list[tuple[int, Lost]] = field(default_factory=list)
    failures: list[Fail] = field(default_factory=list)
    prepares: int = 0
    assigns: int = 0
    frozen: bool = False  # the process is paused: it gets no events, its application does nothing
    closed: bool = False  # it left and no longer polls
    max_generation: int = -1
    last_tick: int = 0


class Network:
    """Members, the coordinator and the messages between them, on one fake clock."""

    def __init__(
        self, hold_ms: int = 0, rebalance_ms: int = REBALANCE_MS, max_delay_ms: int = 0, seed: int = 0
    ) -> None:
        counter = itertools.count(1)
        self.server = GroupCoordinator(
            CoordinatorConfig(initial_rebalance_delay_ms=0, heartbeat_hold_ms=hold_ms),
            member_id_factory=lambda prefix: f"{prefix}-{next(counter)}",
        )
        self.rebalance_ms = rebalance_ms
        self.max_delay_ms = max_delay_ms  # answers take up to this long (a random round trip)
        self.rng = random.Random(seed)
        self.now = 0
        self.refs = itertools.count(1)
        self.members: dict[str, Member] = {}  # by name: the current process of each
        self.waiting: dict[int, tuple[Member, msg.Request, int]] = {}  # ref -> (member, request, sent at)
        self.in_transit: list[tuple[int, Member, Event]] = []  # (deliver at, member, event)
        self.events: list[tuple[int, msg.MembershipEvent]] = []  # the coordinator's, with their time
        self.checking = True

    # --- processes -----------------------------------------------------------------------------

    def add(self, name: str, instance_id: str | None = None) -> Member:
        """Start a process (a new one if ``name`` had one: that one is gone, without leaving)."""
        member = Member(name, MemberMachine(member_settings(instance_id, self.rebalance_ms)))
        member.last_tick = self.now
        self.members[name] = member
        self.feed(member, Polled())
        return member

    def leave(self, name: str) -> None:
        member = self.members[name]
        member.owned.clear()  # the runtime revokes everything before leaving
        member.closed = True
        self.feed(member, LeaveWanted("closing"))

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if not (m.closed or m.frozen)]

    # --- the member's side: machine actions as requests, answers as events ------------------------

    def feed(self, member: Member, event: Event) -> None:
        for action in member.machine.handle(event, self.now):
            if isinstance(action, FindCoordinator):
                self.deliver(member, CoordinatorFound())
            elif isinstance(action, SendJoinGroup | SendSyncGroup | SendHeartbeat | SendLeaveGroup):
                self.send(member, action)
            elif isinstance(action, Lost):
                member.lost.append((self.now, action))
                member.owned.clear()  # on_lost: stop at once
            elif isinstance(action, Fail):
                member.failures.append(action)
            else:
                member.pending.append(action)
        generation = member.machine.generation_id
        if generation >= 0:
            assert generation >= member.max_generation, f"{member.name}: generation {generation} went back"
            member.max_generation = generation

    def deliver(self, member: Member, event: Event) -> None:
        delay = self.rng.randint(0, self.max_delay_ms) if self.max_delay_ms else 0
        self.in_transit.append((self.now + delay, member, event))

    def send(self, member: Member, action: Action) -> None:
        s, g, i = member.machine.settings, "g", member.machine.settings.group_instance_id
        request: msg.Request
        if isinstance(action, SendJoinGroup):
            request = msg.JoinGroup(
                group_id=g,
                member_id=action.member_id,
                group_instance_id=i,
                client_id=member.name,
                client_host="sim",
                session_timeout_ms=s.session_timeout_ms,
                rebalance_timeout_ms=s.rebalance_timeout_ms,
                protocol_type=PROTOCOL_TYPE,
                protocols=action.protocols,
                require_known_member_id=True,
                reason=action.reason or None,
            )
        elif isinstance(action, SendSyncGroup):
            request = msg.SyncGroup(
                group_id=g,
                generation_id=action.generation_id,
                member_id=action.member_id,
                group_instance_id=i,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=action.protocol_name,
                assignments=action.assignments,
            )
        elif isinstance(action, SendHeartbeat):
            gen, mid = action.generation_id, action.member_id
            request = msg.Heartbeat(group_id=g, generation_id=gen, member_id=mid, group_instance_id=i)
        else:
            assert isinstance(action, SendLeaveGroup)
            leaving = msg.LeavingMember(member_id=action.member_id, group_instance_id=i)
            request = msg.LeaveGroup(group_id=g, members=(leaving,))
        # One connection per member: a request behind a held heartbeat releases it (the shell's rule).
        for ref, (sender, sent, _) in list(self.waiting.items()):
            if sender is member and isinstance(sent, msg.Heartbeat):
                self.answer(self.server.release(ref, self.now).replies)
        ref = next(self.refs)
        self.waiting[ref] = (member, request, self.now)
        fx = self.server.handle(ref, request, self.now)
        self.events += [(self.now, e) for e in fx.events]
        self.answer(fx.replies)

    def answer(self, replies: Sequence[tuple[object, object]]) -> None:
        for ref, r in replies:
            assert isinstance(ref, int)
            member, _, sent_at = self.waiting.pop(ref)
            event: Event
            if isinstance(r, msg.JoinGroupResult):
                args = (r.generation_id, r.protocol_name, r.leader, r.member_id, r.members, r.skip_assignment)
                event = JoinAnswered(sent_at, r.error, *args)
            elif isinstance(r, msg.SyncGroupResult):
                event = SyncAnswered(sent_at, r.error, r.assignment)
            elif isinstance(r, msg.HeartbeatResult):
                event = HeartbeatAnswered(sent_at, r.error)
            else:
                assert isinstance(r, msg.LeaveGroupResult)
                event = LeaveAnswered(r.members[0].error if r.members else r.error)
            self.deliver(member, event)

    # --- the application ---------------------------------------------------------------------------

    def application(self, member: Member) -> None:
        """Run the callbacks the machine asked for, as the session hands them out."""
        while member.pending:
            action = member.pending.pop(0)
            if not member.machine.awaits(action):
                continue  # its generation is gone
            if isinstance(action, PrepareJoin):
                member.prepares += 1
                member.owned.clear()  # on_join_prepare: revoke
                metadata = json.dumps({"name": member.name}).encode()
                self.feed(member, Prepared(((PROTOCOL, metadata),)))
            elif isinstance(action, Assign):
                member.assigns += 1
                self.feed(member, AssignmentComputed(round_robin(action.members)))
            else:
                assert isinstance(action, Complete)
                if not member.machine.assignment_fresh(self.now):  # paused past the lease
                    self.feed(member, Completed(ok=False, reason="the assignment arrived too late"))
                    continue
                member.owned = set(json.loads(action.assignment))
                member.generations.append(action.generation_id)
                self.feed(member, Completed(ok=True))

    # --- time ----------------------------------------------------------------------------------------

    def run(self, ms: int, step: int = 10) -> None:
        end = self.now + ms
        while self.now < end:
            self.now += step
            deadline = self.server.next_deadline()
            if deadline is not None and deadline <= self.now:
                fx = self.server.expire(self.now)
                self.events += [(self.now, e) for e in fx.events]
                self.answer(fx.replies)
            # A process that is gone gets nothing more; a paused one gets it when it resumes.
            alive = [m for m in self.in_transit if self.members.get(m[1].name) is m[1]]
            due = [m for m in alive if m[0] <= self.now and not m[1].frozen]
            self.in_transit = [m for m in alive if m[0] > self.now or m[1].frozen]
            for _, member, event in sorted(due, key=lambda m: m[0]):
                self.feed(member, event)
            for member in list(self.members.values()):
                if member.frozen:
                    continue
                self.application(member)
                if not member.closed and self.now % POLL_MS == 0:
                    self.feed(member, Polled())
                wake = member.machine.next_deadline()
                # The driver's thread wakes at the machine's deadline, and at least every second.
                if (wake is not None and wake <= self.now) or self.now - member.last_tick >= 1000:
                    member.last_tick = self.now
                    self.feed(member, Tick())
            if self.checking:
                self.check_no_shard_held_twice()

    def check_no_shard_held_twice(self) -> None:
        """No shard is held by two applications that may act on it: a paused process may act on
        what it holds only while its lease runs (it checks it first when it resumes)."""
        seen: dict[int, str] = {}
        for member in self.members.values():
            lease = member.machine.lease_deadline()
            if member.frozen and (lease is None or lease <= self.now):
                continue
            for shard in member.owned:
                assert shard not in seen, f"at {self.now}: {shard} held by {seen[shard]} and {member.name}"
                seen[shard] = member.name

    def settled(self) -> bool:
        """The live members own every shard exactly once, at one generation, and say so."""
        live = self.live()
        owned = [s for m in live for s in m.owned]
        generations = {m.machine.generation_id for m in live} | {g for m in live for g in m.generations[-1:]}
        stable = all(m.machine.is_stable(self.now) for m in live)
        return sorted(owned) == sorted(ALL) and len(generations) == 1 and stable

    def settle(self, limit_ms: int = 4 * SESSION_MS + 2 * REBALANCE_MS) -> None:
        for _ in range(limit_ms // 100):
            if self.settled():
                return
            self.run(100)
        assert self.settled(), {m.name: (m.machine.generation_id, sorted(m.owned)) for m in self.live()}

    def group_generation(self) -> int:
        ((_, result),) = self.server.handle(None, msg.DescribeGroups(group_ids=("g",)), self.now).replies
        assert isinstance(result, msg.DescribeGroupsResult)
        return result.groups[0].generation_id


def three_members(net: Network, instance_a: str | None = None) -> tuple[Member, Member, Member]:
    a = net.add("a", instance_a)
    b = net.add("b")
    c = net.add("c")
    net.settle()
    return a, b, c


@pytest.mark.parametrize("hold_ms", [0, 2000])
def test_three_members_form_one_generation_and_share_every_shard(hold_ms: int) -> None:
    net = Network(hold_ms=hold_ms)
    a, b, c = three_members(net)
    assert sorted(a.owned | b.owned | c.owned) == sorted(ALL)
    assert len(a.owned) == len(b.owned) == len(c.owned) == SHARDS // 3
    generation = a.generations[-1]
    assert generation > 0 and b.generations[-1] == c.generations[-1] == generation
    assert {m.machine.generation_id for m in (a, b, c)} == {generation} == {net.group_generation()}
    # The leader is one of them: its application alone computed the assignment.
    (leader,) = [m for m in (a, b, c) if m.assigns]
    assigned = [e for _, e in net.events if e.kind == "assigned" and e.generation_id == generation]
    assert [e.member_id for e in assigned] == [leader.machine.member_id]
    # Nothing moves while nothing changes.
    net.run(3 * SESSION_MS)
    assert [len(m.generations) for m in (a, b, c)] == [1, 1, 1] and net.settled()
    assert not (a.failures or b.failures or c.failures or a.lost or b.lost or c.lost)


@pytest.mark.parametrize("hold_ms", [0, 2000])
def test_a_member_that_leaves_hands_its_shards_to_the_others_in_a_new_generation(hold_ms: int) -> None:
    net = Network(hold_ms=hold_ms)
    a, b, c = three_members(net)
    before, left_at = a.generations[-1], net.now
    net.leave("b")
    assert not b.owned and b.machine.generation_id == -1
    net.settle()
    # At the others' next heartbeat (at once where heartbeats are held), not a session later.
    assert net.now - left_at <= INTERVAL_MS + 100
    assert sorted(a.owned | c.owned) == sorted(ALL) and len(a.owned) == len(c.owned) == SHARDS // 2
    assert a.generations[-1] == c.generations[-1] > before
    assert not b.owned and b.generations == [before] and not b.lost and not b.pending
    assert not (a.lost or c.lost or a.failures or c.failures)


def run_until_moved(net: Network, shards: set[int], limit_ms: int) -> int:
    """Run until another application holds one of ``shards``; the time it first does."""
    start = net.now
    while not any(m.owned & shards for m in net.live()):
        net.run(10)
        assert net.now - start < limit_ms, "the shards never moved"
    return net.now


@pytest.mark.parametrize("hold_ms", [0, 2000])
def test_a_silent_member_loses_its_lease_before_its_shards_can_move(hold_ms: int) -> None:
    net = Network(hold_ms=hold_ms)
    a, b, c = three_members(net)
    generation, c_shards, c_id = c.generations[-1], set(c.owned), c.machine.member_id
    c.frozen = True  # paused: it sends nothing, and what is sent to it waits
    anchor, lease = c.machine.session_anchor, c.machine.lease_deadline()
    assert anchor is not None and lease is not None
    # Its own machine says when its assignment ends: a margin before the coordinator may end it,
    # a session after the send of its last acknowledged request.
    assert lease <= anchor + SESSION_MS - MARGIN_MS
    taken_at = run_until_moved(net, c_shards, 2 * SESSION_MS + REBALANCE_MS)
    (expired_at,) = [t for t, e in net.events if e.kind == "expired" and e.member_id == c_id]
    assert lease < anchor + SESSION_MS <= expired_at <= taken_at
    assert not c.machine.is_stable(taken_at)  # were it to wake now, it would not act on them
    net.settle()
    assert sorted(a.owned | b.owned) == sorted(ALL) and a.generations[-1] > generation
    assert c.owned == c_shards and not c.lost  # paused: its application still has them...
    c.frozen = False
    net.run(10)
    # ...and the first thing it does on waking is to give them up.
    assert not c.owned and [lost.generation_id for _, lost in c.lost] == [generation]
    net.settle()  # then it rejoins
    assert len(c.owned) == SHARDS // 3 and c.generations[-1] > a.generations[0]


@pytest.mark.parametrize("instance_id", [None, "c-static"], ids=["dynamic", "static"])
def test_a_paused_member_that_misses_a_rebalance_gives_its_shards_up_before_they_move(
    instance_id: str | None,
) -> None:
    # The rebalance timeout (4 s) is shorter than the session (6 s), as a short
    # max_poll_interval_ms makes it. c pauses just after its heartbeat was acknowledged; d joins
    # at once. The rebalance ends 4 s later without c (removed; a static c stays, but its shards
    # are assigned anew) and c's shards move, while c's lease (session less margin, 5.5 s) runs.
    net = Network(rebalance_ms=4000)
    net.add("a")
    net.add("b")
    c = net.add("c", instance_id)
    net.settle()
    while RequestKind.HEARTBEAT in c.machine.in_flight or net.now - (c.machine.session_anchor or 0) > 10:
        net.run(10)
    c.frozen = True
    lease = c.machine.lease_deadline()
    net.add("d")
    net.checking = False  # the check below says it more precisely
    taken_at = run_until_moved(net, set(c.owned), 2 * SESSION_MS)
    assert lease is not None and lease <= taken_at, (
        f"c's lease ends at {lease}; its shards moved at {taken_at}"
    )


@pytest.mark.parametrize("leads", [True, False], ids=["leader", "follower"])
def test_a_static_member_restarted_gets_its_shards_back_without_a_rebalance(leads: bool) -> None:
    net = Network()
    if leads:
        a, b, c = three_members(net, instance_a="a-static")  # the first to join leads
    else:  # joins last, once the others have formed a group: b leads
        b = net.add("b")
        c = net.add("c")
        net.settle()
        a = net.add("a", "a-static")
        net.settle()
    generation, kept = net.group_generation(), set(a.owned)
    assert a.generations == [generation] and kept and bool(a.assigns) == leads
    others = {m.name: (set(m.owned), m.prepares) for m in (b, c)}
    net.members.pop("a")  # the process dies without leaving, as a static member does
    net.run(200)
    a2 = net.add("a", "a-static")
    net.settle()
    assert a2.owned == kept and a2.generations == [generation] and a2.machine.member_id != a.machine.member_id
    assert net.group_generation() == generation
    assert {m.name: (set(m.owned), m.prepares) for m in (b, c)} == others  # they saw nothing
    assert not a2.failures and not b.lost and not c.lost and not a2.assigns  # a leader only learns it leads
    # The coordinator fenced the old process's member id (it was replaced, not removed).
    assert [e.member_id for _, e in net.events if e.kind == "fenced"] == [a.machine.member_id]


Step = tuple[str, int, int]
OPS = ["join", "leave", "silent", "resume", "restart", "wait"]
WAITS = [0, 200, 1000, 3000, SESSION_MS + 1000]  # ms after a step: around the lease and session
STEPS = st.tuples(st.sampled_from(OPS), st.integers(0, 4), st.sampled_from(WAITS))
STATIC = {"a": "a-static", "b": "b-static"}  # two of the five are static members


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    hold_ms=st.sampled_from([0, 2000]),
    delay=st.sampled_from([0, 80, 300]),
    seed=st.integers(0, 1000),
    first=st.integers(1, 5),
    steps=st.lists(STEPS, min_size=2, max_size=12),
)
def test_members_coming_going_and_pausing_never_hold_a_shard_twice(
    hold_ms: int, delay: int, seed: int, first: int, steps: list[Step]
) -> None:
    # Members join, leave, pause, resume, or die and start again (without leaving); answers take
    # up to `delay` ms. After every step (and every 10 ms between) no shard is held by two
    # applications that may act on it, and no member sees its generation go back; once everyone
    # is awake and polling long enough, the live members own every shard exactly once, at one
    # generation.
    net = Network(hold_ms=hold_ms, max_delay_ms=delay, seed=seed)
    for name in "abcde"[:first]:
        net.add(name, STATIC.get(name))
    for op, i, wait in steps:
        # Each step acts on one of the members it can act on (the i-th, cyclically), if any.
        members = net.members
        can = {
            "join": [n for n in "abcde" if n not in members or members[n].closed],
            "leave": [m.name for m in net.live()],
            "silent": [m.name for m in net.live()],
            "resume": [n for n, m in members.items() if m.frozen],
            "restart": list(members),
            "wait": [],
        }[op]
        if can:
            name = can[i % len(can)]
            if op in ("join", "restart"):
                net.add(name, STATIC.get(name))  # the old process, if any, is gone
            elif op == "leave":
                net.leave(name)
            else:
                members[name].frozen = op == "silent"
        net.run(wait)
    for member in net.members.values():
        member.frozen = False
    if not net.live():
        net.add("z")
    net.settle()
