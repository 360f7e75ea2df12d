"""Held ConsumerGroupHeartbeats on the embedded coordinator, sans-IO.

A heartbeat whose answer would tell the member nothing new is held (until a fifth of the
heartbeat interval is left, here) and answered the moment the member has news. The requests go through
:class:`GroupCoordinator` with a fake clock and the consumer plugin's server-side assignors, as
the server runs them; each step looks at which requests the coordinator answered, and when.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS
from engine_checks import check_quick_looks

from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._messages import (
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    CreateTopics,
    NewTopic,
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


class Coordinator:
    def __init__(self, config: CoordinatorConfig = CONFIG) -> None:
        self.state = GroupCoordinator(config, server_assignors=SERVER_ASSIGNORS)
        check_quick_looks(self.state)
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
        """Send a full heartbeat; its ref and the refs answered by it (its own, or held ones).
        As the server's shell does, a held request of the same member (its connection) is
        answered first."""
        released = []
        if member_id in self.last and self.last[member_id] not in self.answered:
            released = self.take(self.state.release(self.last[member_id], self.now))
        ref = self.last[member_id] = next(self.refs)
        parts = tuple(sorted(owned))
        request = ConsumerGroupHeartbeat(
            group_id="g",
            member_id=member_id,
            member_epoch=epoch,
            rebalance_timeout_ms=4000,
            subscribed_topic_names=("t",),
            owned=((self.topic_id, parts),) if parts else (),
            **fields,  # type: ignore[arg-type]
        )
        return ref, released + self.take(self.state.handle(ref, request, self.now))

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


def test_a_held_member_whose_partitions_do_not_move_stays_held_through_a_change(c: Coordinator) -> None:
    # Every member's epoch moves at each change, but only those that give partitions up or get
    # some need telling at once; a held member with nothing to do is left held (as Kafka's
    # brokers tell a member its new epoch at its next heartbeat), or each change would cost the
    # whole group a round trip.
    join_alone(c)
    held, answered = c.send("a", 2, range(6))
    assert answered == []
    # A member of another topic joins: a new group epoch, and nothing moves for a.
    ref = next(c.refs)
    other = ConsumerGroupHeartbeat(
        group_id="g",
        member_id="x",
        member_epoch=0,
        rebalance_timeout_ms=4000,
        subscribed_topic_names=("u",),
        owned=(),
    )
    assert c.take(c.state.handle(ref, other, c.now)) == [ref]
    assert c.answered[ref].member_epoch == 3
    assert held not in c.answered  # still held
    assert c.advance(HOLD_MS) == [held]  # answered when its hold ends, as it was
    assert c.answered[held].member_epoch == 2
    again, answered = c.send("a", 2, range(6))  # its next heartbeat moves it to the new epoch
    assert answered == [again] and c.answered[again].member_epoch == 3
