"""KIP-848's server-side uniform assignor (Kafka's ``UniformAssignor``), for any subscriptions.

Kafka's group coordinator computes each consumer group's target assignment with this assignor:
the member epoch, not a client-side leader, decides; the coordinator then reconciles every member
towards the target on its own (revoke, bump the epoch, assign what others released). Kafka builds
it with ``UniformHomogeneousAssignmentBuilder`` when all members subscribe to the same topics and
``UniformHeterogeneousAssignmentBuilder`` otherwise; here both cases run through the engine of
``_sticky.py`` (its module docstring describes the steps), which is exact in the heterogeneous
case where Kafka's builder stops after 16 balancing rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator_consumer._model import Assignment, Cluster, Subscription
from coordinator_consumer._sticky import _balanced_sticky

__all__ = ["assign_uniform"]


def assign_uniform(
    subscriptions: Sequence[Subscription], cluster: Cluster, *, rack_aware: bool | None = None
) -> Assignment:
    """Assign partitions as KIP-848's ``UniformAssignor``: balance first, then stickiness.

    * **Balance.** With identical subscriptions each member gets ``P // M`` or ``P // M + 1``
      partitions. With different subscriptions the loads are as balanced as the subscriptions
      allow (no partition can be handed, even along a chain of members, from a member to one
      with at least two fewer), which Kafka's heterogeneous builder only approximates.
    * **Stickiness.** The current assignment is what the members own, trusted as KIP-792 says
      (highest generation wins, ties and unsubscribed topics dropped). Members keep as much of it
      as balance allows; with identical subscriptions exactly the minimum number of partitions
      changes hands: ``sum(max(0, owned - quota))``, the extra partitions going to the members
      that own the most.
    * **Layout.** Free partitions are handed out in contiguous runs in member-id order, as
      Kafka's homogeneous builder does, so a member's new partitions tend to share a topic.
    * **Target, not a step.** The result is the target assignment: a partition may move from
      one member to another in one go. The coordinator's reconciliation (revoke first) keeps it
      from being consumed twice, so nothing is held back here, unlike
      :func:`~coordinator_consumer._sticky.assign_cooperative_sticky`.
    * **Racks.** When rack-aware (by default when Kafka's rule says racks help; see
      :mod:`coordinator_consumer._racks`), the rule of
      :func:`~coordinator_consumer._sticky.assign_sticky`: same counts, owned partitions in the
      member's rack kept first, partitions that must move go to a member in one of their replica
      racks when one has room, and an owned partition outside its owner's rack moves to such a
      member only if one still has room after that.

    Pure and deterministic: the order of ``subscriptions`` and of each ``owned`` does not matter.

    >>> from coordinator_consumer._model import TopicPartition
    >>> cluster = Cluster(partitions={"t0": 3, "t1": 3})
    >>> subs = [Subscription(member_id=m, topics=frozenset({"t0", "t1"})) for m in "ab"]
    >>> {m: [f"{tp.topic}-{tp.partition}" for tp in tps] for m, tps in assign_uniform(subs, cluster).items()}
    {'a': ['t0-0', 't0-1', 't0-2'], 'b': ['t1-0', 't1-1', 't1-2']}

    Member ``c``, which only reads ``t1``, joins. Balance (two each) needs a chain: ``c`` takes
    two partitions of ``t1`` from ``b``, which takes one of ``t0`` from ``a``:

    >>> owned = {"a": (TopicPartition("t0", 0), TopicPartition("t0", 1), TopicPartition("t0", 2)),
    ...          "b": (TopicPartition("t1", 0), TopicPartition("t1", 1), TopicPartition("t1", 2))}
    >>> subs = [Subscription(member_id=m, topics=frozenset({"t0", "t1"}), owned=owned[m], generation=1)
    ...         for m in "ab"] + [Subscription(member_id="c", topics=frozenset({"t1"}))]
    >>> {m: [f"{tp.topic}-{tp.partition}" for tp in tps] for m, tps in assign_uniform(subs, cluster).items()}
    {'a': ['t0-0', 't0-1'], 'b': ['t0-2', 't1-0'], 'c': ['t1-1', 't1-2']}

    :param subscriptions: one per member of the group.
    :param cluster: partition counts, and replica racks for rack-aware mode.
    :param rack_aware: ``None`` for Kafka's rule, ``True`` or ``False`` to force it.
    :returns: member id -> its partitions, sorted; every member is a key.
    :raises ValueError: when two subscriptions carry the same member id.
    """
    return _balanced_sticky(subscriptions, cluster, rack_aware=rack_aware, spread=False, cooperative=False)
