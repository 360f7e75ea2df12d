"""Kafka's round-robin assignor (``RoundRobinAssignor``), with a rack-preferring variant.

All partitions of all subscribed topics are laid out in order and dealt to the members in turn,
skipping a member whose subscription lacks the partition's topic.

Kafka's Java ``RoundRobinAssignor`` ignores racks. When members and partitions have racks (and
Kafka's rule of :mod:`coordinator_consumer._racks` says racks can help), this one deals the same
way and then, topic by topic, swaps which of the topic's partitions each member holds so that
members get partitions with a replica in their rack: every member keeps exactly as many
partitions of every topic as Kafka's deal gave it, so the balance is Kafka's. Without racks, or
with ``rack_aware=False``, the output is exactly Kafka's.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from operator import attrgetter

from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import subscriptions_by_member
from coordinator_consumer._racks import use_rack_aware_assignment
from coordinator_consumer._range import java_string_order, member_order

__all__ = ["assign_roundrobin"]


def assign_roundrobin(
    subscriptions: Sequence[Subscription], cluster: Cluster, *, rack_aware: bool | None = None
) -> Assignment:
    """Assign partitions exactly as Kafka's ``RoundRobinAssignor`` does, preferring racks if known.

    The partitions of every topic some member subscribes to are sorted (by topic, then number);
    the members are sorted as Kafka sorts them (:func:`~coordinator_consumer._range.member_order`:
    static members by ``group_instance_id`` first, then dynamic ones by member id). Partitions are
    dealt out one at a time, cycling over the members and skipping those not subscribed to the
    partition's topic. With identical subscriptions, member partition counts differ by at most
    one; with different subscriptions the result can be unbalanced (second example). Topics the
    cluster does not know are skipped.

    **Racks** (not in Kafka's Java assignor, which ignores them). When rack-aware (by default
    when Kafka's rule says racks can help, see :mod:`coordinator_consumer._racks`), the deal is
    done as above, then each topic's partitions are handed out again among the members that were
    dealt some of it, each taking as many as it was dealt: first partitions to members in one of
    their replicas' racks (partitions with the fewest racks first; among their racks, the one
    whose members have the most room left; in a rack, its members in turn), then the rest in
    partition order to the members with room, in member order. Per member and topic the counts
    are Kafka's; only which partitions of a topic a member gets changes.

    Pure and deterministic: the order of ``subscriptions`` does not matter.

    :param subscriptions: one per member; ``topics``, ``group_instance_id`` and ``rack`` are read.
    :param cluster: partition counts, and the racks of each partition's replicas.
    :param rack_aware: ``None`` (default): prefer racks when Kafka's rule says they help;
        ``True``: whenever members' and replicas' racks meet; ``False``: exactly Kafka's deal.
    :returns: member id -> its partitions, sorted; every member is a key (``()`` if it gets none).
    :raises ValueError: when two subscriptions carry the same member id.

    The examples of Kafka's javadoc. Two members, two topics of three partitions each:

    >>> def show(result):
    ...     return {m: [f"{p.topic}p{p.partition}" for p in ps] for m, ps in result.items()}
    >>> members = [Subscription(member_id=c, topics=frozenset({"t0", "t1"})) for c in ("C0", "C1")]
    >>> show(assign_roundrobin(members, Cluster(partitions={"t0": 3, "t1": 3})))
    {'C0': ['t0p0', 't0p2', 't1p1'], 'C1': ['t0p1', 't1p0', 't1p2']}

    Three members with different subscriptions to topics of 1, 2 and 3 partitions:

    >>> members = [Subscription(member_id="C0", topics=frozenset({"t0"})),
    ...            Subscription(member_id="C1", topics=frozenset({"t0", "t1"})),
    ...            Subscription(member_id="C2", topics=frozenset({"t0", "t1", "t2"}))]
    >>> show(assign_roundrobin(members, Cluster(partitions={"t0": 1, "t1": 2, "t2": 3})))
    {'C0': ['t0p0'], 'C1': ['t1p0'], 'C2': ['t1p1', 't2p0', 't2p1', 't2p2']}

    Static members keep their partitions across restarts, whatever member ids they come back with:

    >>> members = [Subscription(member_id=c, topics=frozenset({"t0", "t1"}), group_instance_id=i)
    ...            for c, i in (("C5", "I0"), ("C3", "I1"), ("C4", "I2"))]
    >>> show(assign_roundrobin(members, Cluster(partitions={"t0": 3, "t1": 3})))
    {'C3': ['t0p1', 't1p1'], 'C4': ['t0p2', 't1p2'], 'C5': ['t0p0', 't1p0']}

    With racks: the deal gives ``C0`` partitions 0 and 2, but partition 1 lives in ``C0``'s rack
    only, so ``C0`` takes 1 and 2 (as many as dealt), and ``C1`` in rack ``b`` takes 0:

    >>> racks = {TopicPartition("t0", 0): frozenset({"b"}), TopicPartition("t0", 1): frozenset({"a"}),
    ...          TopicPartition("t0", 2): frozenset({"a", "b"})}
    >>> members = [Subscription(member_id="C0", topics=frozenset({"t0"}), rack="a"),
    ...            Subscription(member_id="C1", topics=frozenset({"t0"}), rack="b")]
    >>> cluster = Cluster(partitions={"t0": 3}, replica_racks=racks)
    >>> show(assign_roundrobin(members, cluster, rack_aware=False)), show(assign_roundrobin(members, cluster))
    ({'C0': ['t0p0', 't0p2'], 'C1': ['t0p1']}, {'C0': ['t0p1', 't0p2'], 'C1': ['t0p0']})
    """
    by_member = subscriptions_by_member(subscriptions)
    members = member_order(by_member.values())
    topics = sorted({t for s in members for t in s.topics}, key=java_string_order)

    assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in by_member}
    turn = 0  # index into ``members`` of whose turn it is, modulo len(members)
    for topic in topics:
        for number in range(cluster.partitions.get(topic, 0)):
            # Some member subscribes to ``topic`` (that is how it got here), so this ends.
            while topic not in members[turn % len(members)].topics:
                turn += 1
            assignment[members[turn % len(members)].member_id].append(TopicPartition(topic, number))
            turn += 1

    member_racks = {s.member_id: s.rack for s in members if s.rack} if rack_aware is not False else {}
    if member_racks:
        dealt = [tp for tps in assignment.values() for tp in tps]
        partition_racks = [cluster.replica_racks.get(tp, frozenset()) for tp in dealt]
        if use_rack_aware_assignment(set(member_racks.values()), partition_racks, rack_aware):
            assignment = _prefer_racks(assignment, member_racks, cluster.replica_racks)
    return {member_id: tuple(sorted(partitions, key=_ORDER)) for member_id, partitions in assignment.items()}


_ORDER = attrgetter("topic", "partition")


def _prefer_racks(
    dealt: dict[str, list[TopicPartition]],
    member_racks: Mapping[str, str],
    replica_racks: Mapping[TopicPartition, frozenset[str]],
) -> dict[str, list[TopicPartition]]:
    """Re-deal each topic among the members dealt some of it, the same count each, racks first.

    ``dealt`` lists the members in member order; that order breaks every tie.
    """
    room_by_topic: dict[str, dict[str, int]] = {}  # topic -> member -> partitions dealt to it
    partitions_of: dict[str, list[TopicPartition]] = {}
    for member_id, partitions in dealt.items():
        for tp in partitions:
            room = room_by_topic.setdefault(tp.topic, {})
            room[member_id] = room.get(member_id, 0) + 1
            partitions_of.setdefault(tp.topic, []).append(tp)

    result: dict[str, list[TopicPartition]] = {member_id: [] for member_id in dealt}
    for topic, room in room_by_topic.items():
        queues: dict[str, deque[str]] = {}  # rack -> its members with room, whose turn comes first
        rack_room: dict[str, int] = {}
        for member_id, count in room.items():
            rack = member_racks.get(member_id)
            if rack is not None:
                queues.setdefault(rack, deque()).append(member_id)
                rack_room[rack] = rack_room.get(rack, 0) + count

        def fewest_racks_first(tp: TopicPartition) -> tuple[int, int]:
            return (len(replica_racks.get(tp, ())), tp.partition)

        unmatched: list[TopicPartition] = []
        for tp in sorted(partitions_of[topic], key=fewest_racks_first):
            near = [rack for rack in replica_racks.get(tp, ()) if rack_room.get(rack, 0) > 0]
            if not near:
                unmatched.append(tp)
                continue
            rack = min(near, key=lambda r: (-rack_room[r], r))
            queue = queues[rack]
            member_id = queue.popleft()
            result[member_id].append(tp)
            room[member_id] -= 1
            rack_room[rack] -= 1
            if room[member_id]:
                queue.append(member_id)

        takers = [member_id for member_id, left in room.items() if left > 0]
        turn = 0
        for tp in sorted(unmatched, key=_ORDER):
            while not room[takers[turn % len(takers)]]:
                turn += 1
            member_id = takers[turn % len(takers)]
            result[member_id].append(tp)
            room[member_id] -= 1
            turn += 1
    return result
