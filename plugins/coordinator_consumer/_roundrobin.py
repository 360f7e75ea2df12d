"""Kafka's round-robin assignor (``RoundRobinAssignor``).

All partitions of all subscribed topics are laid out in order and dealt to the members in turn,
skipping a member whose subscription lacks the partition's topic.
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import subscriptions_by_member
from coordinator_consumer._range import java_string_order, member_order

__all__ = ["assign_roundrobin"]


def assign_roundrobin(subscriptions: Sequence[Subscription], cluster: Cluster) -> Assignment:
    """Assign partitions exactly as Kafka's ``RoundRobinAssignor`` does.

    The partitions of every topic some member subscribes to are sorted (by topic, then number);
    the members are sorted as Kafka sorts them (:func:`~coordinator_consumer._range.member_order`:
    static members by ``group_instance_id`` first, then dynamic ones by member id). Partitions are
    dealt out one at a time, cycling over the members and skipping those not subscribed to the
    partition's topic. With identical subscriptions, member partition counts differ by at most
    one; with different subscriptions the result can be unbalanced (second example). Topics the
    cluster does not know are skipped.

    Pure and deterministic: the order of ``subscriptions`` does not matter.

    :param subscriptions: one per member; ``topics`` and ``group_instance_id`` are read.
    :param cluster: partition counts.
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
    return {member_id: tuple(sorted(partitions)) for member_id, partitions in assignment.items()}
