"""When an assignor matches members to partitions by rack: Kafka's rule, shared by every assignor.

A member's rack is ``client.rack`` (ConsumerProtocolSubscription v3, KIP-881); a partition's
racks are the racks of the brokers holding its replicas (Metadata). Kafka's assignors use them
only when it can help (``AbstractPartitionAssignor.useRackAwareAssignment``): some member has a
rack, some partition has a replica in one of the members' racks, and the partitions do not all
have replicas in the same racks (then every member is as near to every partition as any other).

Each assignor takes ``rack_aware``:

* ``None`` (the default, as Kafka): rack-aware exactly when the rule above says so;
* ``True``: rack-aware whenever members and partitions have racks that meet, even if every
  partition has the same racks (Kafka's ``preferRackAwareLogic``, used by its tests);
* ``False``: racks are ignored.
"""

from __future__ import annotations

from collections.abc import Collection, Set

__all__ = ["use_rack_aware_assignment"]


def use_rack_aware_assignment(
    member_racks: Set[str], partition_racks: Collection[frozenset[str]], rack_aware: bool | None
) -> bool:
    """Kafka's ``useRackAwareAssignment``, with ``rack_aware`` as described in the module docstring.

    :param member_racks: the non-empty racks of the members concerned.
    :param partition_racks: the replica racks of every partition concerned (an empty set for a
        partition whose replicas have no rack).
    :param rack_aware: ``None`` for Kafka's rule, ``True`` to prefer racks, ``False`` for never.

    >>> use_rack_aware_assignment({"a"}, [frozenset({"a"}), frozenset({"b"})], None)
    True
    >>> use_rack_aware_assignment({"a"}, [frozenset({"a", "b"}), frozenset({"a", "b"})], None)
    False
    >>> use_rack_aware_assignment({"a"}, [frozenset({"a", "b"}), frozenset({"a", "b"})], True)
    True
    >>> use_rack_aware_assignment({"c"}, [frozenset({"a"}), frozenset({"b"})], True)
    False
    """
    if rack_aware is False or not member_racks:
        return False
    every_rack = frozenset().union(*partition_racks)
    if member_racks.isdisjoint(every_rack):
        return False
    return rack_aware is True or any(racks != every_rack for racks in partition_racks)
