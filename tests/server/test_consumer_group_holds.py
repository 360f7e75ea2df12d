"""Held ConsumerGroupHeartbeats on the embedded coordinator, sans-IO.

A heartbeat whose answer would tell the member nothing new is held (until a fifth of the
heartbeat interval is left, here) and answered the moment the member has news. The requests go through
:class:`GroupCoordinator` with a fake clock and the consumer plugin's server-side assignors, as
the server runs them; each step looks at which requests the coordinator answered, and when.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

import pytest
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from engine_checks import check_quick_looks, check_stored_changes

from coordinator_api import AssignmentSpec
from coordinator_api._plugins import Resource
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._messages import (
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    NewPartitions,
    NewTopic,
    TopicRemoved,
    TopicToDelete,
)
from coordinator_api.server._state import Effects, GroupCoordinator

INTERVAL_MS = 500
SESSION_MS = 6000
HOLD_MS = INTERVAL_MS - INTERVAL_MS // 5  # heartbeat_hold_ms is capped to end before the interval
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=SESSION_MS,
    consumer_group_heartbeat_interval_ms=INTERVAL_MS,
    heartbeat_hold_ms=5000,
)


def to_the_chosen(members: Sequence[AssignmentSpec], counts: Mapping[str, int]) -> dict[str, list[Resource]]:
    """Every resource to the first member (by id) whose payload says ``chosen``."""
    chosen = [m.member_id for m in members if m.metadata == b"chosen"]
    if not chosen:
        return {}
    return {chosen[0]: [(name, i) for name, count in sorted(counts.items()) for i in range(count)]}


class Coordinator:
    def __init__(self, config: CoordinatorConfig = CONFIG) -> None:
        self.state = GroupCoordinator(
            config, server_assignors=SERVER_ASSIGNORS, resource_assignors={"tasks": {"chosen": to_the_chosen}}
        )
        check_quick_looks(self.state)
        check_stored_changes(self.state)
        self.now = 0
        self.refs = iter(range(1, 1_000_000))
        request = CreateTopics(topics=(NewTopic(name="t", num_partitions=6, replication_factor=1),))
        self.state.handle(0, request, 0)
        (topic,) = self.state.topics()
        self.topic_id = topic.topic_id
        self.answered: dict[int, ConsumerGroupHeartbeatResult] = {}
        self.last: dict[str, int] = {}  # each member's latest request

    def take(self, fx: Effects) -> list[int]:
        """Record the answers in ``fx``; the refs answered, in order."""
        refs = []
        for ref, result in fx.replies:
            assert isinstance(ref, int) and isinstance(result, ConsumerGroupHeartbeatResult)
            self.answered[ref] = result
            refs.append(ref)
        return refs

    def send(
        self, member_id: str, epoch: int, owned: Iterable[int] = (), **fields: object
    ) -> tuple[int, list[int]]:
        """Send a full heartbeat (see :meth:`deliver`), of a member of topic ``t`` unless
        ``fields`` say otherwise."""
        parts = tuple(sorted(owned))
        fields.setdefault("subscribed_topic_names", ("t",))
        request = ConsumerGroupHeartbeat(
            group_id="g",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=4000,
            owned=((self.topic_id, parts),) if parts else (),
            **fields,  # type: ignore[arg-type]
        )
        return self.deliver(request)

    def deliver(self, request: ConsumerGroupHeartbeat) -> tuple[int, list[int]]:
        """Hand ``request`` in; its ref and the refs answered by it (its own, or held ones). As
        the server's shell does, a held request of the same member (its connection) is
        answered first."""
        released = []
        member_id = request.member_id
        if member_id in self.last and self.last[member_id] not in self.answered:
            released = self.take(self.state.release(self.last[member_id], self.now))
        ref = self.last[member_id] = next(self.refs)
        return ref, released + self.take(self.state.handle(ref, request, self.now))

    def send_task(
        self,
        member_id: str,
        epoch: int,
        owned: Iterable[int] = (),
        chosen: bool = False,
        instance_id: str | None = None,
    ) -> tuple[int, list[int]]:
        """As :meth:`send`, for a member of a group of this project's protocol type ``tasks``
        (resource group ``work``) that asks who owns every resource."""
        parts = tuple(sorted(owned))
        request = ConsumerGroupHeartbeat(
            group_id="w",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=4000,
            protocol_type="tasks",
            instance_id=instance_id,
            resources=(("work", 6),),
            metadata=(b"chosen" if chosen else b"") if epoch == 0 else None,  # None: unchanged
            owned=((b"work", parts),) if parts else (),
            list_owners=True,
        )
        return self.deliver(request)

    def held_task(self, member_id: str, owned: Iterable[int] = ()) -> int:
        """A heartbeat of ``member_id`` (of :meth:`send_task`) that is held: it heartbeats at
        the epoch of its last answer until one is."""
        for _ in range(3):
            ref, _ = self.send_task(member_id, self.answered[self.last[member_id]].member_epoch, owned)
            if ref not in self.answered:
                return ref
        raise AssertionError(f"{member_id} is never held")

    def advance(self, ms: int) -> list[int]:
        self.now += ms
        return self.take(self.state.expire(self.now))

    def partitions(self, ref: int) -> set[int]:
        assignment = self.answered[ref].assignment
        assert assignment is not None
        return {p for _, parts in assignment for p in parts}


@pytest.fixture
def c() -> Coordinator:
    return Coordinator()


def join_alone(c: Coordinator) -> None:
    ref, answered = c.send("a", 0)  # a join is never held
    assert answered == [ref] and c.partitions(ref) == set(range(6))


def test_a_heartbeat_with_nothing_new_is_held_until_the_hold_ends(c: Coordinator) -> None:
    join_alone(c)
    ref, answered = c.send("a", 2, range(6))
    assert answered == []  # held: nothing new for a
    assert c.advance(HOLD_MS - 1) == []
    assert c.advance(1) == [ref]
    result = c.answered[ref]
    assert (result.error, result.member_epoch, c.partitions(ref)) == (ErrorCode.NONE, 2, set(range(6)))


@pytest.mark.parametrize(
    ("session_ms", "interval_ms", "hold_ms", "held_ms"),
    [
        (45_000, 5_000, 5_000, 4_900),  # the defaults: 100 ms before the interval passes
        (6_000, 500, 5_000, 400),  # a fifth of a short interval before it passes
        (3_000, 2_000, 5_000, 500),  # half of what the interval leaves of the session
        (1_200, 500, 5_000, 350),  # no more than a third of the session
        (45_000, 5_000, 1_000, 1_000),  # heartbeat_hold_ms itself
    ],
)
def test_a_hold_ends_before_the_interval_passes_and_well_inside_the_session(
    session_ms: int, interval_ms: int, hold_ms: int, held_ms: int
) -> None:
    """librdkafka waits for a heartbeat's answer for the heartbeat interval, then sends the next
    with the epoch it has: an answer held to the end of the interval could come too late and
    the member be fenced. Kafka's consumers send their next heartbeat an interval after the
    answer, which must still arrive inside the session."""
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=1_000,
        consumer_group_session_timeout_ms=session_ms,
        consumer_group_heartbeat_interval_ms=interval_ms,
        heartbeat_hold_ms=hold_ms,
    )
    c = Coordinator(config)
    join_alone(c)
    ref, answered = c.send("a", 2, range(6))
    assert answered == [] and c.advance(held_ms - 1) == []
    assert c.advance(1) == [ref]
    assert held_ms < interval_ms and held_ms + interval_ms < session_ms


def test_a_held_member_learns_at_once_that_it_must_give_partitions_up(c: Coordinator) -> None:
    join_alone(c)
    held, _ = c.send("a", 2, range(6))
    c.advance(100)
    newcomer, answered = c.send("b", 0)
    # b's join moves the target: a's held heartbeat is answered in the same step, with less;
    # b's join, which would bring it nothing yet (3, 4, 5 are a's until it revokes them), waits.
    assert answered == [held]
    assert c.partitions(held) == {0, 1, 2} and c.answered[held].member_epoch == 2
    ack, answered = c.send("a", 2, {0, 1, 2})
    assert sorted(answered) == sorted([ack, newcomer])  # b's join answered with what a let go
    assert c.partitions(newcomer) == {3, 4, 5} and c.answered[newcomer].member_epoch == 3


def test_a_waiting_member_gets_released_partitions_the_moment_their_owner_acknowledges(
    c: Coordinator,
) -> None:
    join_alone(c)
    join, _ = c.send("b", 0)
    revoke, _ = c.send("a", 2, range(6))  # told to revoke 3, 4, 5: answered at once, not held
    assert c.partitions(revoke) == {0, 1, 2}
    waiting, answered = c.send("b", 3)
    # b's held join is answered (nothing yet) as it sends again; this one waits for a.
    assert answered == [join] and c.partitions(join) == set()
    ack, answered = c.send("a", 2, {0, 1, 2})  # a no longer owns 3, 4, 5
    assert set(answered) == {ack, waiting}
    assert c.answered[ack].member_epoch == 3
    assert c.partitions(waiting) == {3, 4, 5} and c.answered[waiting].member_epoch == 3


def test_leaves_errors_and_members_with_partitions_to_revoke_are_never_held(c: Coordinator) -> None:
    join_alone(c)
    c.send("b", 0)  # held: it would get nothing yet
    # a must revoke: answered at once, and so is its next heartbeat while it still owns them.
    ref, answered = c.send("a", 2, range(6))
    assert answered == [ref]
    ref, answered = c.send("a", 2, range(6))
    assert answered == [ref]
    ref, answered = c.send("x", 8, ())  # an error (unknown member)
    assert answered == [ref] and c.answered[ref].error is ErrorCode.UNKNOWN_MEMBER_ID
    ref, answered = c.send("b", -1)  # a leave (its held join is answered first, by the shell)
    assert answered[-1] == ref and c.answered[ref].error is ErrorCode.NONE


def test_a_held_heartbeat_is_answered_when_its_client_sends_again_and_forgotten_when_it_disconnects(
    c: Coordinator,
) -> None:
    join_alone(c)
    held, _ = c.send("a", 2, range(6))
    assert c.take(c.state.release(held, c.now)) == [held]  # another request on its connection
    held, _ = c.send("a", 2, range(6))
    assert c.take(c.state.abandon(held, c.now)) == []
    assert c.advance(HOLD_MS) == []  # nothing is answered on a closed connection


def test_a_held_member_gets_the_partitions_of_a_member_whose_session_ends_at_once(c: Coordinator) -> None:
    join_alone(c)
    c.send("b", 0)
    c.send("a", 2, range(6))
    c.send("a", 2, {0, 1, 2})  # a acknowledges, then falls silent: its session (6 s) runs out
    owned: set[int] = set()
    for _ in range(40):
        ref, _ = c.send("b", 3, owned)
        while ref not in c.answered:
            c.advance(50)
        owned = c.partitions(ref)
        if owned == set(range(6)):
            break
    # Answered when a expired (6 s after its last heartbeat), not at the end of b's hold.
    assert c.answered[ref].member_epoch == 4 and c.now == 6000


def test_a_heartbeat_that_says_its_partitions_are_unchanged_gets_released_ones_at_once(
    c: Coordinator,
) -> None:
    # Kafka's clients send owned partitions only when they change (null: unchanged); a newcomer
    # whose partitions were released since its last heartbeat must get them, not be held.
    join_alone(c)
    join, _ = c.send("b", 0)
    c.take(c.state.release(join, c.now))  # b's client sent something else on the connection
    assert c.partitions(join) == set()
    c.send("a", 2, range(6))  # told to revoke 3, 4, 5
    c.send("a", 2, {0, 1, 2})  # revoked
    ref = next(c.refs)
    request = ConsumerGroupHeartbeat(group_id="g", member_id="b", member_epoch=3, owned=None)
    assert c.take(c.state.handle(ref, request, c.now)) == [ref]
    assert c.partitions(ref) == {3, 4, 5}


def held_form(c: Coordinator, member_id: str) -> ConsumerGroupHeartbeat:
    """The request ``member_id``'s held heartbeat is held as (news is looked for with it)."""
    return c.state._held_group_heartbeats["g"][member_id].request


def test_a_plain_heartbeat_is_held_in_one_form_while_its_member_owns_the_same(c: Coordinator) -> None:
    # A plain heartbeat (owned null: unchanged, as Kafka's clients send it) is held with the
    # member's partitions filled in. The server's heartbeat cache hands the same request object
    # in again and again: its held form is made once while the member's partitions stay the
    # same, and anew once they change.
    join_alone(c)
    full, _ = c.send("a", 2, range(6))
    plain = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=2, owned=None)
    first, answered = c.deliver(plain)
    assert answered == [full]  # held in turn
    form = held_form(c, "a")
    assert form.owned == ((c.topic_id, tuple(range(6))),) and form.member_epoch == 2
    again, answered = c.deliver(plain)
    assert answered == [first] and held_form(c, "a") is form
    join, answered = c.send("b", 0)  # a must give 3, 4 and 5 up: news for its held heartbeat
    assert answered == [again] and c.partitions(again) == {0, 1, 2}  # b waits for them, held
    ack, answered = c.send("a", c.answered[again].member_epoch, {0, 1, 2})  # revoked: b gets them
    assert sorted(answered) == sorted([ack, join]) and c.partitions(join) == {3, 4, 5}
    epoch = c.answered[ack].member_epoch
    plain = ConsumerGroupHeartbeat(group_id="g", member_id="a", member_epoch=epoch, owned=None)
    held, answered = c.deliver(plain)
    assert held not in answered and held_form(c, "a").owned == ((c.topic_id, (0, 1, 2)),)
    leave, answered = c.send("b", -1)
    assert sorted(answered) == sorted([leave, held]) and c.partitions(held) == set(range(6))


def test_a_held_member_gets_the_partitions_of_a_member_that_leaves_at_once(c: Coordinator) -> None:
    join_alone(c)
    c.send("b", 0)
    c.send("a", 2, range(6))
    c.send("a", 2, {0, 1, 2})
    c.advance(100)
    held, answered = c.send("b", 3, {3, 4, 5})
    assert answered == []  # nothing new for b: held
    leave, answered = c.send("a", -1)
    # The leave moves the target (no heartbeat computes it): b's held heartbeat is answered in
    # the same step with everything, not when its hold ends.
    assert sorted(answered) == sorted([leave, held])
    assert c.partitions(held) == set(range(6)) and c.answered[held].member_epoch == 4


def test_held_members_get_partitions_added_to_their_topic_at_once(c: Coordinator) -> None:
    """CreatePartitions (kafka-topics --alter) moves the group to a new epoch at once when its
    members' heartbeats are held: each gets its share of the new partitions in that step, not
    when its hold ends. A validate-only request, or one refused, changes nothing."""
    join_alone(c)
    c.send("b", 0)
    c.send("a", 2, range(6))
    c.send("a", 2, {0, 1, 2})
    c.advance(100)
    held_a, answered = c.send("a", 3, {0, 1, 2})
    held_b, more = c.send("b", 3, {3, 4, 5})
    assert answered + more == []  # nothing new for either: both held
    for request in (
        CreatePartitions(topics=(NewPartitions(name="t", count=10),), validate_only=True),
        CreatePartitions(topics=(NewPartitions(name="t", count=4),)),  # fewer: refused
    ):
        fx = c.state.handle(100, request, c.now)
        assert [ref for ref, _ in fx.replies] == [100] and not fx.events
    fx = c.state.handle(101, CreatePartitions(topics=(NewPartitions(name="t", count=10),)), c.now)
    grown = c.take(Effects(replies=[(ref, r) for ref, r in fx.replies if ref != 101]))
    assert sorted(grown) == sorted([held_a, held_b])
    assert c.partitions(held_a) | c.partitions(held_b) == set(range(10))
    assert c.partitions(held_a) >= {0, 1, 2} and c.partitions(held_b) >= {3, 4, 5}  # nothing moves
    assert {c.answered[r].member_epoch for r in grown} == {4}
    assert [e.detail for e in fx.events if e.kind == "rebalance"] == [
        "group epoch bumped: its subscribed topics' partitions changed"
    ]


def test_held_members_give_up_the_partitions_of_a_deleted_topic_at_once(c: Coordinator) -> None:
    """DeleteTopics: the group moves to a new epoch at once, and the held member that owned the
    topic's partitions is told to give them up in that step."""
    second = NewTopic(name="u", num_partitions=2, replication_factor=1)
    c.state.handle(100, CreateTopics(topics=(second,)), c.now)
    (u,) = [t for t in c.state.topics() if t.name == "u"]
    ref, answered = c.send("a", 0, subscribed_topic_names=("t", "u"))
    assert answered == [ref] and c.partitions(ref) == set(range(6)) | {0, 1}  # t's 0-5 and u's 0-1
    owned = ((c.topic_id, tuple(range(6))), (u.topic_id, (0, 1)))
    request = ConsumerGroupHeartbeat(
        group_id="g", member_id="a", member_epoch=c.answered[ref].member_epoch, owned=owned
    )
    held, answered = c.deliver(request)
    assert answered == []
    fx = c.state.handle(101, DeleteTopics(topics=(TopicToDelete(name="u"),)), c.now)
    assert sorted(ref for ref, _ in fx.replies) == sorted([101, held])
    answer = c.answered[held] = next(r for ref, r in fx.replies if ref == held)
    assert isinstance(answer, ConsumerGroupHeartbeatResult) and answer.assignment is not None
    assert answer.assignment == ((c.topic_id, tuple(range(6))),)  # u's partitions gone
    assert TopicRemoved(name="u") in fx.writes


def test_without_held_heartbeats_new_partitions_come_with_the_next_heartbeat() -> None:
    """As Kafka's coordinator: a group whose members' heartbeats are not held moves to a new
    epoch at its next heartbeat after the topic grew."""
    c = Coordinator(dataclasses.replace(CONFIG, heartbeat_hold_ms=0))
    join_alone(c)
    fx = c.state.handle(100, CreatePartitions(topics=(NewPartitions(name="t", count=8),)), c.now)
    assert not fx.events
    ref, answered = c.send("a", 2, range(6))
    assert answered == [ref] and c.answered[ref].member_epoch == 3 and c.partitions(ref) == set(range(8))


def test_a_held_member_whose_partitions_do_not_move_stays_held_through_a_change(c: Coordinator) -> None:
    # Every member's epoch moves at each change, but only those that give partitions up or get
    # some need telling at once; a held member with nothing to do is left held, or each change
    # would cost the whole group a round trip.
    join_alone(c)
    held, answered = c.send("a", 2, range(6))
    assert answered == []
    # A member of another topic joins: a new group epoch, and nothing moves for a.
    ref, answered = c.send("x", 0, subscribed_topic_names=("u",))
    assert answered == [ref]
    assert c.answered[ref].member_epoch == 3
    assert held not in c.answered  # still held
    # When its hold ends the answer goes out anyway: with the new epoch, as a broker would
    # answer the heartbeat at that moment.
    assert c.advance(HOLD_MS) == [held]
    assert c.answered[held].member_epoch == 3 and c.partitions(held) == set(range(6))
    # So its next heartbeat, an interval after the previous one (Kafka's consumers), carries the
    # new epoch and is held again: a second change reaches it when it happens.
    again, answered = c.send("a", 3, range(6))
    assert answered == []
    c.advance(100)
    ref, answered = c.send("b", 0)
    assert again in answered and c.partitions(again) == {0, 1, 2}  # a must give 3, 4, 5 up


def test_a_heartbeat_released_by_the_next_request_gets_the_new_epoch(c: Coordinator) -> None:
    # Another request on the connection ends the hold as its timer does: the answer says what a
    # broker would answer now, so the epoch moves with it.
    join_alone(c)
    held, answered = c.send("a", 2, range(6))
    assert answered == []
    c.send("x", 0, subscribed_topic_names=("u",))
    c.take(c.state.release(held, c.now))
    assert c.answered[held].member_epoch == 3


def settle(c: Coordinator, members: Sequence[str]) -> dict[str, set[int]]:
    """Each member heartbeats with what its last answer gave it until all are held; what each
    owns then."""
    owned: dict[str, set[int]] = {}
    for _ in range(10):
        sent = False
        for m in members:
            ref = c.last.get(m)
            if ref is not None and ref not in c.answered:
                continue  # held
            answer = c.answered[ref] if ref is not None else None
            if answer is not None and answer.assignment is not None:
                owned[m] = c.partitions(ref)  # type: ignore[arg-type]
            c.send(m, answer.member_epoch if answer is not None else 0, owned.get(m, ()))
            sent = True
        if not sent:
            return owned
    raise AssertionError("the group did not settle")


def record_looks(c: Coordinator) -> list[str]:
    """The members whose held heartbeats the coordinator looks at after each change, in order,
    from now on."""
    looks: list[str] = []
    to_look_at = c.state._held_to_look_at

    def looked_at(group_id: str, now_ms: int) -> list[str]:
        chosen = to_look_at(group_id, now_ms)
        looks.extend(chosen)
        return chosen

    setattr(c.state, "_held_to_look_at", looked_at)  # noqa: B010 (a method of this one object)
    return looks


def test_a_member_moving_to_the_new_epoch_costs_no_look_at_the_others_held_heartbeats(c: Coordinator) -> None:
    # After each change every member moves to the new epoch at its next heartbeat; in a group of
    # 1,000, a look at every held heartbeat each time cost a million looks per change. Only what
    # others may have to hear of (their targets, who owns what) makes the coordinator look again,
    # and a change of owners only at the members waiting for partitions.
    looks = record_looks(c)
    owned = settle(c, "abc")
    looks.clear()
    c.advance(100)
    ref, answered = c.send("x", 0, subscribed_topic_names=("u",))  # a member of another topic
    assert answered == [ref]
    assert looks == []  # a new group epoch, but nobody's target moved: no look at the held ones
    epoch = c.answered[ref].member_epoch
    looks.clear()
    moved, answered = c.send("a", epoch - 1, owned["a"])  # its held one is answered first
    assert answered[-1] == moved and c.answered[moved].member_epoch == epoch  # a moves to it
    assert looks == []  # and nobody else's held heartbeat is looked at again


def test_a_leave_looks_once_at_the_held_heartbeats_of_those_it_gives_partitions(c: Coordinator) -> None:
    # A leave moves the target, which the coordinator computes before it looks at the held
    # heartbeats: the look sees the new target, and the target does not bring on a second look
    # (at 1,000 members, a thousand more looks a change). It looks only at the members whose
    # target moved: the others' held heartbeats stay held without a look.
    looks = record_looks(c)
    settle(c, "abcdef")  # a partition each
    looks.clear()
    c.advance(100)
    held = {m: c.last[m] for m in "abcde"}
    assert not any(ref in c.answered for ref in held.values())
    leave, answered = c.send("f", -1)
    given = [m for m, ref in held.items() if ref in answered]
    assert leave in answered and len(given) == 1  # f's partition, to one of them at once
    assert looks == given  # looked at once, and nobody else


def test_changes_made_while_nothing_is_held_bring_a_look_at_every_held_heartbeat_past_a_bound(
    c: Coordinator,
) -> None:
    # The group notes whom its changes concern until it has looked at its held heartbeats; with
    # none held, nobody looks, so past as many as it has members it notes "all" instead (and
    # the next look is at every held heartbeat), then starts a new list.
    looks = record_looks(c)
    settle(c, "ab")
    looks.clear()
    c.advance(INTERVAL_MS)  # the holds end: nothing is held
    assert not c.state._held_group_heartbeats
    for k in range(3):
        c.send(f"x{k}", 0, subscribed_topic_names=("u",))  # of another topic
        c.send(f"x{k}", -1)
    assert looks == []
    settle(c, "ab")  # held again, nothing new for either
    looks.clear()
    c.send("y", 0, subscribed_topic_names=("u",))
    assert looks == ["a", "b"]  # every held heartbeat, though neither's target moved
    looks.clear()
    c.send("z", 0, subscribed_topic_names=("u",))
    assert looks == []  # and, the list started anew, only those a change concerns


def test_a_member_that_asks_who_owns_what_hears_of_a_new_owner_at_once(c: Coordinator) -> None:
    # A change of owners alone (l gives everything up, k takes it) is news for members that ask
    # who owns every resource, as the leader plugin's followers do, though nothing of theirs moves.
    c.send_task("l", 0, chosen=True)
    c.send_task("w", 0)
    held_l, held_w = c.held_task("l", range(6)), c.held_task("w")
    k, answered = c.send_task("k", 0, chosen=True)  # k (first by id) becomes the chosen one
    # l must give all up, and while it does nobody owns anything: news for all three.
    assert sorted(answered) == sorted([held_l, held_w, k])
    assert c.answered[held_w].owners == c.answered[k].owners == () and c.partitions(k) == set()
    held_w = c.held_task("w")
    ack, answered = c.send_task("l", c.answered[held_l].member_epoch, ())  # l gave it all up
    assert answered == [ack]  # for w, still nobody owns anything: k takes it at its next heartbeat
    took, answered = c.send_task("k", c.answered[k].member_epoch)
    assert sorted(answered) == sorted([took, held_w]) and c.partitions(took) == set(range(6))
    assert {owner for _, _, owner, _ in c.answered[held_w].owners or ()} == {"k"}  # w hears of it


def test_a_member_that_asks_who_owns_what_hears_of_a_static_members_new_incarnation_at_once(
    c: Coordinator,
) -> None:
    first, _ = c.send_task("s1", 0, chosen=True, instance_id="i")
    c.send_task("w", 0)
    epoch = c.answered[first].member_epoch
    held_w = c.held_task("w")
    c.send_task("s1", -2, instance_id="i")  # the static member closes: its place waits for it
    again, answered = c.send_task("s2", 0, chosen=True, instance_id="i")  # and comes back
    assert sorted(answered) == sorted([again, held_w]) and c.answered[again].member_epoch >= epoch
    assert {owner for _, _, owner, _ in c.answered[held_w].owners or ()} == {"s2"}


def test_a_target_computed_when_the_assignment_interval_has_passed_reaches_the_held_at_once() -> None:
    # KIP-1263: a change within the interval waits for the first heartbeat after it, which
    # computes the target; the held member that must give partitions up hears of it then.
    c = Coordinator(
        CoordinatorConfig(
            initial_rebalance_delay_ms=0,
            consumer_group_session_timeout_ms=45_000,
            consumer_group_heartbeat_interval_ms=5_000,  # held for up to 4 s
            heartbeat_hold_ms=5_000,
        )
    )
    c.state.set_group_assignment_interval("g", 1000)
    join_alone(c)
    held, answered = c.send("a", 2, range(6))
    assert answered == []
    c.advance(100)
    join, answered = c.send("b", 0)  # within the interval: the target stays a's
    assert answered == [join] and c.partitions(join) == set() and held not in c.answered
    c.advance(900)
    _, answered = c.send("b", c.answered[join].member_epoch)  # the first heartbeat after it
    assert held in answered and c.partitions(held) == {0, 1, 2}  # a must give 3, 4, 5 up
