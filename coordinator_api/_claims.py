"""Which of the resources members say they own a leader may trust: the newest claim wins.

In an eager or cooperative rebalance every member tells the leader what it still owns (its
partitions, units, tasks) and in which generation it was given them. A member that missed a
rebalance (a zombie: paused, partitioned away) may still claim what has moved on since; its
successor claims the same resource in a newer generation. Kafka's ``AbstractStickyAssignor``
settles this, and so does every sticky assignor here, through :func:`trusted_claims`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import TypeVar

R = TypeVar("R", bound=Hashable)


def trusted_claims(claims: Sequence[tuple[int, Iterable[R]]]) -> list[frozenset[R]]:
    """For each member's ``(generation, resources it says it owns)``, the resources it may be
    trusted with, in the same order.

    * The claim made in the highest generation wins; every older claim of the same resource is
      dropped (the older claimant missed the rebalance that moved it on).
    * If two or more members claim a resource in that highest generation, nobody is trusted
      with it: it counts as unowned.
    * A member listing the same resource twice makes one claim.

    >>> trusted_claims([(4, ["u1", "u2"]), (5, ["u1"])])
    [frozenset({'u2'}), frozenset({'u1'})]
    >>> trusted_claims([(5, ["u1"]), (5, ["u1"]), (3, ["u1"])])
    [frozenset(), frozenset(), frozenset()]
    """
    sets = [frozenset(resources) for _, resources in claims]
    # The common case, where nothing is claimed twice, costs one hash per claim.
    claimed: set[R] = set()
    claimed.update(*sets)  # merges the frozensets' stored hashes: no __hash__ calls
    if len(claimed) == sum(map(len, sets)):
        return sets
    best: dict[R, tuple[int, int]] = {}  # resource -> (generation, claimant index or -1)
    for index, ((generation, _), mine) in enumerate(zip(claims, sets, strict=True)):
        for resource in mine:
            current = best.get(resource)
            if current is None or generation > current[0]:
                best[resource] = (generation, index)
            elif generation == current[0]:
                best[resource] = (generation, -1)
    settled: list[set[R]] = [set() for _ in sets]
    for resource, (_, index) in best.items():
        if index >= 0:
            settled[index].add(resource)
    return [frozenset(s) for s in settled]
