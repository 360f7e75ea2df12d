"""Kafka's server-side assignors (``uniform``, ``range``) for the incremental protocol.

The embedded coordinator computes a consumer group's target assignment itself (KIP-848) with
the same pure functions a classic group's leader runs: each member's current target reaches the
assignor as the partitions it owns, so ``uniform`` stays sticky across epochs, as Kafka's
``UniformAssignor`` is.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from itertools import starmap

from coordinator_api import AssignmentSpec
from coordinator_api._plugins import Resource, ServerAssignor
from coordinator_consumer._model import Assignor, Cluster, Subscription, TopicPartition
from coordinator_consumer._range import assign_range
from coordinator_consumer._uniform import assign_uniform

# Every member's current target comes from the same assignment epoch: equal generations, so
# the ownership rule (KIP-792) trusts every claim, and targets never overlap.
_SAME_EPOCH = 0


class ServerSideAssignor:
    """A consumer assignor run over the coordinator's view of the members (a
    :data:`~coordinator_api.ServerAssignor`).

    A member whose spec is the same as at the previous target keeps its Subscription: building
    these objects (a TopicPartition for every partition a member holds) was half the cost of a
    target in a large group, where a change moves few members. Once the kept Subscriptions count
    :attr:`limit` members and partitions in all (members that left stay until then), they are
    dropped and built again. One instance serves every coordinator of the process (each on its
    own thread), so what is kept is changed under a lock.
    """

    def __init__(self, assign: Assignor, limit: int = 200_000) -> None:
        self._assign = assign
        self.limit = limit
        self._kept: dict[str, tuple[AssignmentSpec, Subscription]] = {}  # member id -> its last spec's
        self.kept_size = 0  # members and partitions in ``_kept``
        self._lock = threading.Lock()

    def __call__(
        self, members: Sequence[AssignmentSpec], partition_counts: Mapping[str, int]
    ) -> Mapping[str, Iterable[Resource]]:
        with self._lock:
            subscriptions = [self._subscription(m) for m in members]
        assignment = self._assign(subscriptions, Cluster(partitions=dict(partition_counts)))
        # A member given exactly what it has (most members, at a change in a large group) gets
        # its current target back, the same object: nothing to convert or compare. Its
        # Subscription lists its partitions in the order the assignors give them, and they
        # give it back the same objects, so that is a comparison of pointers.
        return {
            m.member_id: m.current if parts == s.owned else [(tp.topic, tp.partition) for tp in parts]
            for m, s in zip(members, subscriptions, strict=True)
            if (parts := assignment.get(m.member_id)) is not None
        }

    def _subscription(self, m: AssignmentSpec) -> Subscription:
        last = self._kept.get(m.member_id)
        if last is not None and (last[0] is m or last[0] == m):
            return last[1]
        made = Subscription(
            member_id=m.member_id,
            topics=m.topics,
            owned=tuple(starmap(TopicPartition, sorted(m.current))),  # as assignors give them out
            generation=_SAME_EPOCH,
            rack=m.rack,
            group_instance_id=m.instance_id,
        )
        if last is not None:
            self.kept_size -= 1 + len(last[1].owned)
        if self.kept_size + 1 + len(made.owned) > self.limit:
            self._kept.clear()
            self.kept_size = 0
        self._kept[m.member_id] = (m, made)
        self.kept_size += 1 + len(made.owned)
        return made


SERVER_ASSIGNORS: dict[str, ServerAssignor] = {
    "uniform": ServerSideAssignor(assign_uniform),
    "range": ServerSideAssignor(assign_range),
}
"""Kafka's ``group.consumer.assignors``, in Kafka's default order (the first is the default)."""
