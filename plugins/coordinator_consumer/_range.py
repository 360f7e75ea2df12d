"""Kafka's range assignor (``RangeAssignor``), rack-aware mode (KIP-881) included.

Per topic, the partitions in numeric order are cut into contiguous ranges, one per subscribed
member in member order; when they do not divide evenly, the first members get one more.
Because every topic is cut the same way, members subscribed to the same topics get the same
partition numbers of each: "co-partitioning", which joins of keyed topics rely on.

This module also holds :func:`member_order`, the order Kafka's assignors put members in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, repeat
from operator import attrgetter

from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import subscriptions_by_member
from coordinator_consumer._racks import use_rack_aware_assignment

__all__ = ["assign_range", "java_string_order", "member_order"]


def java_string_order(text: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does.

    Java compares UTF-16 code units, Python compares code points; the two disagree only when a
    character above U+FFFF meets one in U+E000..U+FFFF. Kafka's assignors sort member ids and
    topic names with Java's order, so ours do too.

    >>> sorted(["\\uffff", "\\U0001f600"]), sorted(["\\uffff", "\\U0001f600"], key=java_string_order)
    (['\\uffff', '😀'], ['😀', '\\uffff'])
    """
    return text.encode("utf-16-be", "surrogatepass")


def member_order(subscriptions: Iterable[Subscription]) -> list[Subscription]:
    """Members in the order Kafka's assignors go through them (``MemberInfo.compareTo``).

    Static members (those with a ``group_instance_id``, KIP-345) come first, by instance id, so
    that a restarted static member, which gets a new member id, keeps its place and therefore its
    partitions; then dynamic members by member id.

    >>> order = member_order([Subscription(member_id="m1", topics=frozenset()),
    ...                       Subscription(member_id="m2", topics=frozenset(), group_instance_id="i9"),
    ...                       Subscription(member_id="m0", topics=frozenset())])
    >>> [s.member_id for s in order]
    ['m2', 'm0', 'm1']
    """

    def key(subscription: Subscription) -> tuple[int, bytes, bytes]:
        instance = subscription.group_instance_id
        if instance is not None:
            return (0, java_string_order(instance), java_string_order(subscription.member_id))
        return (1, java_string_order(subscription.member_id), b"")

    return sorted(subscriptions, key=key)


def assign_range(
    subscriptions: Sequence[Subscription], cluster: Cluster, *, rack_aware: bool | None = None
) -> Assignment:
    """Assign partitions exactly as Kafka's ``RangeAssignor`` (3.5+) does.

    For each topic, its subscribers in :func:`member_order` get contiguous ranges of its
    partitions: with ``n`` partitions and ``m`` subscribers, each gets ``n // m`` and the first
    ``n % m`` one more. Topics the cluster does not know, or with no partitions, are skipped.

    Rack-aware mode (KIP-881) switches on when some topic needs it: a subscriber of the topic has
    a rack (an empty rack counts as none), some partition of the topic has a replica there, and
    the partitions of the topic do not all have replicas on the same racks. Then, before the plain
    ranges, partitions go to members in the same rack as one of their replicas, without breaking
    the balance range gives: every member still gets ``n // m`` or ``n // m + 1`` partitions of
    each topic, and at most ``n % m`` get the extra one, but which members get it may change.
    Topics with the same subscribers (and racks) and the same partition count stay co-partitioned:
    partition ``p`` of all of them goes to one member, whose rack has a replica of each, if any.
    What cannot be matched is then assigned by plain ranges.

    Pure and deterministic: the order of ``subscriptions`` does not matter. Without rack
    matching it costs O(members + partitions), whatever the number of topics.

    :param subscriptions: one per member; ``topics``, ``group_instance_id`` and ``rack`` are read.
    :param cluster: partition counts, and the racks of each partition's replicas.
    :param rack_aware: ``None`` (default) for KIP-881's per-topic rule above, ``True`` to match
        racks even in topics whose partitions all have the same racks, ``False`` to ignore racks
        (see :mod:`coordinator_consumer._racks`).
    :returns: member id -> its partitions, sorted; every member is a key (``()`` if it gets none).
    :raises ValueError: when two subscriptions carry the same member id.

    The example of Kafka's javadoc: two members, two topics of three partitions each.

    >>> members = [Subscription(member_id=c, topics=frozenset({"t0", "t1"})) for c in ("C1", "C0")]
    >>> result = assign_range(members, Cluster(partitions={"t0": 3, "t1": 3}))
    >>> {m: [f"{p.topic}p{p.partition}" for p in ps] for m, ps in result.items()}
    {'C0': ['t0p0', 't0p1', 't1p0', 't1p1'], 'C1': ['t0p2', 't1p2']}

    Rack-aware: partition 2 has its only replica in rack ``a``, so the member in rack ``a`` takes
    it, and the member in rack ``b`` takes the extra partition:

    >>> members = [Subscription(member_id="C0", topics=frozenset({"t0"}), rack="a"),
    ...            Subscription(member_id="C1", topics=frozenset({"t0"}), rack="b")]
    >>> racks = {TopicPartition("t0", 0): frozenset({"b"}), TopicPartition("t0", 1): frozenset({"b"}),
    ...          TopicPartition("t0", 2): frozenset({"a"})}
    >>> result = assign_range(members, Cluster(partitions={"t0": 3}, replica_racks=racks))
    >>> {m: [p.partition for p in ps] for m, ps in result.items()}
    {'C0': [2], 'C1': [0, 1]}
    """
    by_member = subscriptions_by_member(subscriptions)
    ordered = member_order(by_member.values())
    topics = _subscribers_by_topic(ordered, cluster.partitions)
    assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in by_member}

    racks = {s.member_id: s.rack for s in ordered if s.rack} if rack_aware is not False else {}
    if racks:
        states = [
            _TopicState(topic, count, consumers, racks, cluster.replica_racks, rack_aware)
            for topic, count, consumers in topics
        ]
        if any(state.needs_rack_aware_assignment for state in states):
            _assign_with_rack_matching(states, assignment)
            for state in states:
                _assign_ranges(state, lambda _consumer, _partition: True, assignment)
            return {member_id: tuple(sorted(parts, key=_ORDER)) for member_id, parts in assignment.items()}

    # Plain ranges: work in proportion to the partitions, not to partitions x members. Topics go in
    # name order and each range upwards, so every member's list comes out sorted.
    for topic, count, consumers in topics:
        partitions = list(map(TopicPartition, repeat(topic, count), range(count)))
        per, extra = divmod(count, len(consumers))
        if per == 0:  # more members than partitions: the first ``count`` take one each
            for consumer, partition in zip(consumers[:count], partitions, strict=True):
                assignment[consumer].append(partition)
            continue
        start = 0
        for k, consumer in enumerate(consumers):
            end = start + per + (k < extra)
            assignment[consumer].extend(partitions[start:end])
            start = end
    return {member_id: tuple(parts) for member_id, parts in assignment.items()}


_ORDER = attrgetter("topic", "partition")


def _subscribers_by_topic(
    ordered: Sequence[Subscription], counts: Mapping[str, int]
) -> list[tuple[str, int, list[str]]]:
    """(topic, partition count, subscribers in member order) for every subscribed topic with
    partitions, in topic order.

    Members with the same subscription are handled together, so that a group where everybody
    reads the same topics costs O(members + topics), not O(members x topics).
    """
    positions_of: dict[frozenset[str], list[int]] = {}
    for position, subscription in enumerate(ordered):
        positions_of.setdefault(subscription.topics, []).append(position)
    classes = list(positions_of.values())
    classes_of: dict[str, list[int]] = {}
    for c, topics in enumerate(positions_of):
        for topic in topics:
            if counts.get(topic, 0) > 0:
                classes_of.setdefault(topic, []).append(c)
    subscribers: dict[tuple[int, ...], list[str]] = {}
    result = []
    for topic in sorted(classes_of):
        key = tuple(classes_of[topic])
        consumers = subscribers.get(key)
        if consumers is None:
            positions = classes[key[0]] if len(key) == 1 else sorted(chain(*(classes[c] for c in key)))
            consumers = subscribers[key] = [ordered[p].member_id for p in positions]
        result.append((topic, counts[topic], consumers))
    return result


class _TopicState:
    """The assignment of one topic in progress, local to one call of :func:`assign_range`.

    Mirrors ``RangeAssignor.TopicAssignmentState``: it tracks how many partitions each subscriber
    may still take so that rack matching never breaks range's balance.
    """

    __slots__ = (
        "consumers",
        "count",
        "extra_left",
        "needs_rack_aware_assignment",
        "num_assigned",
        "partition_racks",
        "per_consumer",
        "topic",
        "unassigned",
    )

    def __init__(
        self,
        topic: str,
        count: int,
        consumers: list[str],
        member_racks: Mapping[str, str],
        replica_racks: Mapping[TopicPartition, frozenset[str]],
        rack_aware: bool | None,
    ) -> None:
        self.topic = topic
        self.count = count
        # subscriber -> its rack (None: no rack), in member order
        self.consumers: dict[str, str | None] = {c: member_racks.get(c) for c in consumers}
        # dict as an ordered set: what is left, in partition order
        self.unassigned: dict[int, None] = dict.fromkeys(range(count))
        self.num_assigned = dict.fromkeys(consumers, 0)
        self.per_consumer, self.extra_left = divmod(count, len(consumers))

        consumer_racks = {rack for rack in self.consumers.values() if rack is not None}
        # Kafka reads the replicas' racks only when some subscriber has a rack.
        self.partition_racks: dict[int, frozenset[str]] = (
            {p: replica_racks.get(TopicPartition(topic, p), frozenset()) for p in range(count)}
            if consumer_racks
            else {}
        )
        self.needs_rack_aware_assignment = use_rack_aware_assignment(
            consumer_racks, list(self.partition_racks.values()), rack_aware
        )

    def racks_match(self, consumer: str, partition: int) -> bool:
        rack = self.consumers[consumer]
        return rack is None or rack in self.partition_racks.get(partition, frozenset())

    def max_assignable(self, consumer: str) -> int:
        limit = self.per_consumer + (1 if self.extra_left > 0 else 0)
        return max(0, limit - self.num_assigned[consumer])

    def on_assigned(self, consumer: str, partitions: Sequence[int]) -> None:
        self.num_assigned[consumer] += len(partitions)
        if self.num_assigned[consumer] > self.per_consumer:
            self.extra_left -= 1
        for partition in partitions:
            del self.unassigned[partition]


def _assign(
    consumer: str, partitions: Sequence[int], state: _TopicState, assignment: dict[str, list[TopicPartition]]
) -> None:
    assignment[consumer].extend(TopicPartition(state.topic, p) for p in partitions)
    state.on_assigned(consumer, partitions)


def _assign_ranges(
    state: _TopicState,
    may_assign: Callable[[str, int], bool],
    assignment: dict[str, list[TopicPartition]],
) -> None:
    for consumer in state.consumers:
        if not state.unassigned:
            break
        limit = state.max_assignable(consumer)
        assignable = [p for p in state.unassigned if may_assign(consumer, p)][:limit]
        if assignable:
            _assign(consumer, assignable, state, assignment)


def _assign_with_rack_matching(
    states: Sequence[_TopicState], assignment: dict[str, list[TopicPartition]]
) -> None:
    # Topics with the same subscribers (and their racks) and the same number of known partition
    # racks are co-partitioned and matched together; a lone topic is matched on its own, and only
    # if it needs it. Kafka groups the same way, so the same topics end up matched together.
    groups: dict[tuple[tuple[tuple[str, str | None], ...], int], list[_TopicState]] = {}
    for state in states:
        key = (tuple(state.consumers.items()), len(state.partition_racks))
        groups.setdefault(key, []).append(state)
    for (_consumers, num_partitions), group in groups.items():
        if len(group) > 1:
            _assign_co_partitioned_with_rack_matching(num_partitions, group, assignment)
        elif group[0].needs_rack_aware_assignment:
            _assign_ranges(group[0], group[0].racks_match, assignment)


def _assign_co_partitioned_with_rack_matching(
    num_partitions: int, states: Sequence[_TopicState], assignment: dict[str, list[TopicPartition]]
) -> None:
    remaining = list(states[0].consumers)
    for partition in range(num_partitions):
        match = next(
            (
                consumer
                for consumer in remaining
                if all(s.racks_match(consumer, partition) and s.max_assignable(consumer) > 0 for s in states)
            ),
            None,
        )
        if match is None:
            continue
        for state in states:
            _assign(match, [partition], state, assignment)
        if all(state.max_assignable(match) <= 0 for state in states):
            remaining.remove(match)
            if not remaining:
                break
