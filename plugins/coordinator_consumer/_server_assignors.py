"""Kafka's server-side assignors (``uniform``, ``range``) for the incremental protocol.

The embedded coordinator computes a consumer group's target assignment itself (KIP-848) with
the same pure functions a classic group's leader runs: each member's current target reaches the
assignor as the partitions it owns, so ``uniform`` stays sticky across epochs, as Kafka's
``UniformAssignor`` is.
"""

from __future__ import annotations

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


def server_assignor(assign: Assignor) -> ServerAssignor:
    """Run a consumer assignor over the coordinator's view of the members."""

    def assign_on_server(
        members: Sequence[AssignmentSpec], partition_counts: Mapping[str, int]
    ) -> Mapping[str, Iterable[Resource]]:
        subscriptions = [
            Subscription(
                member_id=m.member_id,
                topics=m.topics,
                owned=tuple(starmap(TopicPartition, m.current)),  # in any order: assignors are pure
                generation=_SAME_EPOCH,
                rack=m.rack,
                group_instance_id=m.instance_id,
            )
            for m in members
        ]
        assignment = assign(subscriptions, Cluster(partitions=dict(partition_counts)))
        return {member: [(tp.topic, tp.partition) for tp in parts] for member, parts in assignment.items()}

    return assign_on_server


SERVER_ASSIGNORS: dict[str, ServerAssignor] = {
    "uniform": server_assignor(assign_uniform),
    "range": server_assignor(assign_range),
}
"""Kafka's ``group.consumer.assignors``, in Kafka's default order (the first is the default)."""
