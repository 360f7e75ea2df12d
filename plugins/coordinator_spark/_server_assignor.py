"""The ``spark-executor`` server-side assignor: :func:`allocate` run by the coordinator, for
groups of the incremental protocol.

With ``group_protocol="incremental"`` nobody in the group allocates: each member declares the
job's units as one resource group (named after the job topic; resource ``(topic, i)`` is unit
``i``) and a :class:`~coordinator_spark.SlotProfile`, and the coordinator computes the target
with this function whenever the group changes. It is :func:`allocate` over what the coordinator
can see:

* each member is an :class:`Executor` whose id is its member id, weighted by the cores of its
  profile (a profile that does not decode counts as one core on no known host);
* each resource is a :class:`WorkUnit` of weight 1, its id the index in decimal: the coordinator
  knows neither the units' weights nor their preferred hosts, nor which units are done (those
  live in the job's committed offsets, which an assignor does not read), so it balances the
  number of units per core, done or not;
* each member's current target is its previous placement, so the keep pass of
  :func:`allocate` makes the result sticky: when a member joins or leaves, close to the minimum
  number of units moves.

Each resource group is allocated on its own, over the members that declare it (a job has one).
The function is pure and deterministic, never raises for what members send, and gives each
resource to exactly one member that declares its group (none when no member does).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

from coordinator_api import AssignmentSpec, PayloadError, decode
from coordinator_api._plugins import Resource
from coordinator_spark._allocator import allocate
from coordinator_spark._model import Executor, WorkUnit
from coordinator_spark._payloads import SlotProfile

__all__ = ["assign_units", "profile_of"]

_UNKNOWN = SlotProfile(executor_id="", host="", cores=1, memory_mb=0, attempt=0)


def profile_of(metadata: bytes) -> SlotProfile:
    """A member's profile from its metadata; one core on no known host if it does not decode."""
    try:
        return decode(SlotProfile, metadata)
    except (PayloadError, ValueError, TypeError):
        return _UNKNOWN


@functools.lru_cache(maxsize=8)
def _units(count: int) -> tuple[WorkUnit, ...]:
    """Units ``"0"`` .. ``str(count - 1)`` of weight 1 (the same job's count comes back at every
    group epoch: built once)."""
    return tuple(WorkUnit(str(i)) for i in range(count))


def assign_units(
    members: Sequence[AssignmentSpec], resource_counts: Mapping[str, int]
) -> dict[str, list[Resource]]:
    """The coordinator's target for a ``spark-executor`` group: each resource group's units over
    the members that declare it, balanced per core and sticky (:func:`allocate`).

    :param members: the group's members (the coordinator sorts them by id; any order gives the
        same answer).
    :param resource_counts: resource group name -> how many units it has.
    :returns: member id -> its units as (resource group, index); every member is present.

    One core and three, eight units; then a member with four cores joins and takes its share,
    one unit from the first and three from the second:

    >>> from coordinator_api import AssignmentSpec, encode
    >>> def member(name, cores, current=()):
    ...     profile = encode(SlotProfile("1", "h", cores, 0, 0))
    ...     return AssignmentSpec(member_id=name, instance_id=None, rack=None,
    ...                           topics=frozenset({"job"}), current=frozenset(current), metadata=profile)
    >>> first = assign_units([member("a", 1), member("b", 3)], {"job": 8})
    >>> {m: sorted(i for _, i in units) for m, units in first.items()}
    {'a': [2, 6], 'b': [0, 1, 3, 4, 5, 7]}
    >>> again = assign_units([member("a", 1, first["a"]), member("b", 3, first["b"]), member("c", 4)],
    ...                      {"job": 8})
    >>> {m: sorted(i for _, i in units) for m, units in again.items()}
    {'a': [2], 'b': [0, 1, 3], 'c': [4, 5, 6, 7]}
    """
    result: dict[str, list[Resource]] = {m.member_id: [] for m in members}
    profiles = {m.member_id: profile_of(m.metadata) for m in members}
    for name, count in sorted(resource_counts.items()):
        declaring = sorted((m for m in members if name in m.topics), key=lambda m: m.member_id)
        if not declaring or count < 1:
            continue
        executors = [
            Executor(
                m.member_id,
                host=profiles[m.member_id].host,
                cores=max(1, profiles[m.member_id].cores),
                memory_mb=max(0, profiles[m.member_id].memory_mb),
            )
            for m in declaring
        ]
        previous = {
            str(index): m.member_id
            for m in declaring
            for group, index in sorted(m.current)
            if group == name and 0 <= index < count
        }
        for member_id, units in allocate(executors, _units(count), previous).items():
            result[member_id].extend((name, int(unit)) for unit in units)
    return result
