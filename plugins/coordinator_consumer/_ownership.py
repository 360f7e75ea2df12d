"""Which owned-partition claims a leader may trust, and whether an assignment is sound.

Members of a consumer group tell the leader what they own now (``OwnedPartitions``,
ConsumerProtocolSubscription v1+) and in which generation they owned it (``GenerationId``, v2+;
KIP-792). A claim can be stale: a member that missed a rebalance still reports what it owned
generations ago, while the partition has since moved on. Trusting such a claim made sticky and
cooperative rebalances hand one partition to two members or get stuck (KAFKA-12984,
KAFKA-13406). :func:`owned_partitions` applies the rule Kafka's ``AbstractStickyAssignor`` has
used since 3.x; :func:`validate_assignment` checks what an assignor returns before it is sent.

Both are pure functions (ARCHITECTURE rule 1): no I/O, no clock, same answer for the same input.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, final

from coordinator_api import trusted_claims
from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition

#: The generation of a member that has none to report: a v0/v1 subscription, or a member that
#: has never been part of a generation. Kafka's ``AbstractStickyAssignor.DEFAULT_GENERATION``.
DEFAULT_GENERATION: Final = -1

__all__ = [
    "DEFAULT_GENERATION",
    "AssignmentError",
    "owned_partitions",
    "subscriptions_by_member",
    "trusted_owned",
    "validate_assignment",
]


@final
class AssignmentError(ValueError):
    """An assignment would give a partition to two members, to a member not subscribed to its
    topic, or to a member that is not in the group, or gives a partition that does not exist.

    Sending it would break the group (two members consuming one partition, or a member told to
    consume what it cannot), so the leader must not send it: fix the assignor, or rejoin so the
    assignor runs on fresh metadata.

    :ivar problems: one sentence per problem, each naming the partition and the members involved,
        in a deterministic order.
    """

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        listing = "; ".join(self.problems)
        super().__init__(
            f"invalid assignment ({len(self.problems)} problem(s)): {listing}. The leader must not send "
            "it: fix the assignor, or rejoin the group so that it runs again on fresh metadata"
        )


def subscriptions_by_member(subscriptions: Iterable[Subscription]) -> dict[str, Subscription]:
    """Index subscriptions by member id, in member-id order.

    :raises ValueError: when two subscriptions carry the same member id (a member joins a
        generation once; two entries mean the caller merged two groups or two generations).

    >>> s = subscriptions_by_member([Subscription(member_id="b", topics=frozenset()),
    ...                              Subscription(member_id="a", topics=frozenset())])
    >>> list(s)
    ['a', 'b']
    """
    by_member: dict[str, Subscription] = {}
    for subscription in sorted(subscriptions, key=lambda s: s.member_id):
        if subscription.member_id in by_member:
            raise ValueError(
                f"member {subscription.member_id!r} has two subscriptions; each member of a "
                "generation has exactly one: pass the subscriptions of a single JoinGroup round"
            )
        by_member[subscription.member_id] = subscription
    return by_member


def owned_partitions(subscriptions: Sequence[Subscription]) -> dict[str, frozenset[TopicPartition]]:
    """Decide which owned-partition claims to trust, as Kafka's ``AbstractStickyAssignor`` does.

    For every partition claimed by at least one member:

    * the claim made in the highest generation wins, and every older claim is dropped (the older
      claimant missed the rebalance that moved the partition on);
    * if two or more members claim it in that highest generation, nobody is trusted with it: all
      claims are dropped and the assignor treats the partition as unowned;
    * members whose subscription is v0 or v1 report generation -1 (:data:`DEFAULT_GENERATION`),
      so any claim with a real generation beats theirs, and two such claims cancel out.

    Then, claims of partitions of topics the claimant no longer subscribes to are dropped (after
    the conflicts are settled, as Kafka does, so a newer claim that is dropped for this reason
    still overrules an older one: that older owner is stale either way).

    A member listing the same partition twice makes one claim. Claims are not checked against
    the cluster: a partition of a deleted topic is dropped only if the claimant unsubscribed.

    :param subscriptions: one per member of the generation being assigned.
    :returns: member id -> the partitions it may be assumed to own; every member is a key.
    :raises ValueError: when two subscriptions carry the same member id.

    A stale claim from an older generation loses to a newer one:

    >>> t0p0 = TopicPartition("t0", 0)
    >>> members = [
    ...     Subscription(member_id="a", topics=frozenset({"t0"}), owned=(t0p0,), generation=4),
    ...     Subscription(member_id="b", topics=frozenset({"t0"}), owned=(t0p0,), generation=5),
    ... ]
    >>> owned_partitions(members)
    {'a': frozenset(), 'b': frozenset({TopicPartition(topic='t0', partition=0)})}

    Two claims in the same generation are both dropped:

    >>> members = [
    ...     Subscription(member_id="a", topics=frozenset({"t0"}), owned=(t0p0,), generation=5),
    ...     Subscription(member_id="b", topics=frozenset({"t0"}), owned=(t0p0,), generation=5),
    ...     Subscription(member_id="c", topics=frozenset({"t0"}), owned=(t0p0,), generation=3),
    ... ]
    >>> owned_partitions(members)
    {'a': frozenset(), 'b': frozenset(), 'c': frozenset()}

    A claim on a topic the member no longer subscribes to is dropped:

    >>> members = [Subscription(member_id="a", topics=frozenset({"t1"}), owned=(t0p0,), generation=5)]
    >>> owned_partitions(members)
    {'a': frozenset()}
    """
    subscriptions_by_member(subscriptions)  # rejects duplicate member ids
    return dict(zip((s.member_id for s in subscriptions), trusted_owned(subscriptions), strict=True))


def trusted_owned(subscriptions: Sequence[Subscription]) -> list[frozenset[TopicPartition]]:
    """:func:`owned_partitions` for subscriptions already known to carry distinct member ids:
    each one's trusted partitions, in their order. When no partition is claimed twice, a
    subscription trusted with all it owns is given its own :attr:`~Subscription.owned_set`."""
    claims = trusted_claims([(s.generation, s.owned_set) for s in subscriptions])
    for k, (subscription, claim) in enumerate(zip(subscriptions, claims, strict=True)):
        if not claim:
            continue
        claimed = subscription.owned_topics if claim is subscription.owned_set else {tp.topic for tp in claim}
        topics = subscription.topics
        if not claimed <= topics:
            claims[k] = frozenset(tp for tp in claim if tp.topic in topics)
    return claims


def validate_assignment(
    assignment: Assignment, subscriptions: Sequence[Subscription], cluster: Cluster
) -> None:
    """Check an assignment before the leader sends it; raise if any partition is misassigned.

    An assignment is sound when every member id in it belongs to the group, every partition in it
    exists in ``cluster``, is given to at most one member (once), and only to a member subscribed
    to its topic. It need not give out every partition (a cooperative assignor holds back the
    partitions that are still being revoked), nor name every member.

    :param assignment: member id -> partitions, as an assignor returned it.
    :param subscriptions: the group's subscriptions the assignor was given.
    :param cluster: the metadata the assignor was given.
    :raises AssignmentError: listing every problem found, each naming the partition and members.
    :raises ValueError: when two subscriptions carry the same member id.

    >>> members = [Subscription(member_id="a", topics=frozenset({"t0"})),
    ...            Subscription(member_id="b", topics=frozenset({"t1"}))]
    >>> cluster = Cluster(partitions={"t0": 2, "t1": 1})
    >>> validate_assignment({"a": (TopicPartition("t0", 0),), "b": (TopicPartition("t1", 0),)},
    ...                     members, cluster)
    >>> try:
    ...     validate_assignment({"a": (TopicPartition("t0", 0),), "b": (TopicPartition("t0", 0),),
    ...                          "z": (TopicPartition("t9", 0),)}, members, cluster)
    ... except AssignmentError as error:
    ...     print(*error.problems, sep="\\n")
    member 'z' is not in the group (known members: 'a', 'b'), yet is assigned [t9-0]
    partition t0-0 is assigned 2 times, to members 'a', 'b'
    partition t0-0 is assigned to member 'b', which does not subscribe to topic 't0'
    partition t9-0 does not exist (topic 't9' is not in the cluster metadata), yet is assigned to 'z'
    """
    by_member = subscriptions_by_member(subscriptions)
    problems: list[str] = []
    holders: dict[TopicPartition, list[str]] = {}

    for member_id in sorted(assignment):
        partitions = assignment[member_id]
        subscription = by_member.get(member_id)
        if subscription is None:
            problems.append(
                f"member {member_id!r} is not in the group (known members: {_names(by_member)}), "
                f"yet is assigned {_partitions(partitions)}"
            )
        for partition in sorted(partitions):
            holders.setdefault(partition, []).append(member_id)

    for partition in sorted(holders):
        members = holders[partition]
        name = _partition(partition)
        if len(members) > 1:
            listing = ", ".join(repr(m) for m in members)
            problems.append(f"partition {name} is assigned {len(members)} times, to members {listing}")
        if not _exists(partition, cluster.partitions):
            count = cluster.partitions.get(partition.topic)
            known = "is not in the cluster metadata" if count is None else f"has {count} partition(s)"
            problems.append(
                f"partition {name} does not exist (topic {partition.topic!r} {known}), "
                f"yet is assigned to {_names(members)}"
            )
        for member_id in sorted(set(members)):
            subscription = by_member.get(member_id)
            if subscription is not None and partition.topic not in subscription.topics:
                problems.append(
                    f"partition {name} is assigned to member {member_id!r}, which does not "
                    f"subscribe to topic {partition.topic!r}"
                )

    if problems:
        raise AssignmentError(problems)


def _exists(partition: TopicPartition, partitions: Mapping[str, int]) -> bool:
    return 0 <= partition.partition < partitions.get(partition.topic, 0)


def _partition(partition: TopicPartition) -> str:
    return f"{partition.topic}-{partition.partition}"


def _partitions(partitions: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(_partition(p) for p in sorted(partitions)) + "]"


def _names(member_ids: Iterable[str]) -> str:
    return ", ".join(repr(m) for m in sorted(set(member_ids)))
