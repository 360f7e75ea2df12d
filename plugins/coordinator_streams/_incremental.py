"""Incremental rebalancing of streams groups: tasks as the coordinator's resources, and the
server-side assignor that places them.

With ``group_protocol="incremental"`` a :class:`~coordinator_streams.StreamsGroupMember`
declares its topology to the coordinator as resource groups, one per subtopology, named by the
subtopology's number and counting its partitions: resource ``("1", 4)`` is task ``1_4``. Its
metadata (:class:`StreamsMemberMetadata`) holds what the server-side assignor needs and nothing
that changes between polls (every change starts a new group epoch): the process id and the
capacity. The member's rack travels in the heartbeat's own rack field.

The coordinator computes the target with :func:`assign_tasks_sticky` (registered as
``sticky``, the only and so the default server-side assignor of protocol type ``streams``) and
reconciles each member towards it on its own. Only active tasks take part: no standbys, no
warmups, no lags, so every task counts the same, as in Apache Kafka 4.2's streams groups run
without warmups.

    >>> from coordinator_api import AssignmentSpec
    >>> def member(member_id, current=(), capacity=1):
    ...     return AssignmentSpec(
    ...         member_id=member_id, instance_id=None, rack=None, topics=frozenset({"0", "1"}),
    ...         current=frozenset(current), metadata=encode_member_metadata(member_id, capacity))
    >>> counts = {"0": 3, "1": 3}
    >>> first = assign_tasks_sticky([member("a")], counts)
    >>> sorted(first["a"])
    [('0', 0), ('0', 1), ('0', 2), ('1', 0), ('1', 1), ('1', 2)]
    >>> second = assign_tasks_sticky([member("a", first["a"]), member("b", capacity=2)], counts)
    >>> sorted(second["a"]), sorted(second["b"])  # b has two threads: it takes 4 of 6
    ([('0', 0), ('1', 0)], [('0', 1), ('0', 2), ('1', 1), ('1', 2)])
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from coordinator_api import AssignmentSpec, PayloadError, decode, encode, payload
from coordinator_api._plugins import Resource
from coordinator_streams._model import Task, TaskAssignmentError, TaskId

__all__ = [
    "SERVER_ASSIGNOR",
    "StreamsMemberMetadata",
    "assign_tasks_sticky",
    "decode_member_metadata",
    "encode_member_metadata",
    "resource_counts",
    "resource_of",
    "task_of",
]

_Load = Callable[[int], float]
_Room = Callable[[int], bool]

SERVER_ASSIGNOR: Final = "sticky"
"""The name :func:`assign_tasks_sticky` is registered under for protocol type ``streams``."""


@payload(version=1)
@dataclass(frozen=True)
class StreamsMemberMetadata:
    """What a member of an incremental streams group tells the server-side assignor (version
    1): ties between members are broken by ``process_id`` (stable across restarts, unlike the
    member id), and load is balanced in proportion to ``capacity`` (threads)."""

    process_id: str
    capacity: int


def encode_member_metadata(process_id: str, capacity: int) -> bytes:
    """A member's metadata bytes (``GroupSubscription.metadata``)."""
    return encode(StreamsMemberMetadata(process_id, capacity))


def decode_member_metadata(data: bytes) -> StreamsMemberMetadata:
    """The inverse of :func:`encode_member_metadata`.

    :raises PayloadError: the bytes are not a streams member's metadata.
    """
    return decode(StreamsMemberMetadata, data)


def resource_of(task: TaskId) -> Resource:
    """The coordinator's name of ``task``: ``TaskId(1, 4)`` is ``("1", 4)``."""
    return (str(task.subtopology), task.partition)


def task_of(resource: Resource) -> TaskId:
    """The task a resource of a streams group names: ``("1", 4)`` is ``TaskId(1, 4)``.

    :raises TaskAssignmentError: the resource group's name is not a subtopology number.
    """
    name, index = resource
    try:
        return TaskId(int(name), index)
    except ValueError:
        raise TaskAssignmentError(f"not a streams task: resource {name!r}/{index}") from None


def resource_counts(tasks: Iterable[Task]) -> dict[str, int]:
    """The resource groups a member declares for ``tasks``: one per subtopology, its partition
    count as the count.

    :raises TaskAssignmentError: a subtopology's partitions are not ``0 .. n-1`` (a resource
        group holds the resources ``0 .. count-1``, so a gap would be a task nobody declared).
    """
    partitions: dict[int, set[int]] = {}
    for task in tasks:
        partitions.setdefault(task.id.subtopology, set()).add(task.id.partition)
    counts: dict[str, int] = {}
    for subtopology, found in sorted(partitions.items()):
        if min(found) < 0:
            raise TaskAssignmentError(f"subtopology {subtopology}: a partition is negative")
        if max(found) + 1 != len(found):
            missing = list(itertools.islice((p for p in range(max(found)) if p not in found), 5))
            raise TaskAssignmentError(
                f"subtopology {subtopology}: with group_protocol='incremental' its partitions must be "
                f"0 .. n-1, but {', '.join(f'{subtopology}_{p}' for p in missing)} "
                f"{'is' if max(found) + 1 - len(found) == 1 else 'are'} missing"
            )
        counts[str(subtopology)] = len(found)
    return counts


@dataclass
class _Member:
    member_id: str
    process_id: str
    capacity: int
    groups: frozenset[str]  # the resource groups it declares that have resources
    current: frozenset[Resource]


def _member(spec: AssignmentSpec, counts: Mapping[str, int]) -> _Member:
    try:
        meta = decode_member_metadata(spec.metadata)
        process_id, capacity = meta.process_id, max(1, meta.capacity)
    except PayloadError:
        # Not a streams member's metadata (another client, a damaged payload): it declared the
        # tasks, so it runs its share of them as a member of one thread.
        process_id, capacity = "", 1
    return _Member(
        spec.member_id, process_id, capacity, frozenset(g for g in spec.topics if g in counts), spec.current
    )


def assign_tasks_sticky(
    members: Sequence[AssignmentSpec], resource_counts: Mapping[str, int]
) -> dict[str, list[Resource]]:
    """The server-side assignor of streams groups: balanced by capacity, then sticky.

    1. **Quotas.** The tasks are shared in proportion to capacity: each member's quota is its
       exact share rounded down; the tasks left over go one each to members whose share has a
       fraction: first to those that hold more than their rounded-down share now (so they keep
       a task), then to those that hold less (they receive tasks anyway), then by the largest
       fraction. Every quota is within one task of the exact share.
    2. **Sticky.** Each member keeps the tasks it holds (its current target) up to its quota;
       one above its quota keeps a spread over its subtopologies and releases the rest.
    3. **Fill.** The other tasks, those of subtopologies fewer members declare first, each go
       to the declaring member with room below its quota that has the fewest tasks per thread
       (ties: process id, then member id). Where no declaring member has room (members declare
       different subtopologies), to the least loaded declaring member.

    Deterministic (members are ordered by process id, then member id, whatever the input
    order); each task goes to exactly one member that declares its subtopology, and to none if
    no member declares it. A member joining a group of equal members takes its rounded-down
    share and nothing else moves; a member leaving releases only its own tasks.
    ``O(T log M + M log M)`` for ``T`` tasks and ``M`` members when all declare the same
    subtopologies.

    :param members: the group's members as the coordinator shows them (metadata:
        :class:`StreamsMemberMetadata`; a member whose metadata does not decode counts as one
        thread).
    :param resource_counts: subtopology (resource group) -> partition count.
    :returns: member id -> its tasks as resources, for every member.
    """
    counts = {name: count for name, count in resource_counts.items() if count > 0}
    ordered = sorted((_member(spec, counts) for spec in members), key=lambda m: (m.process_id, m.member_id))
    n = len(ordered)
    capacity = [m.capacity for m in ordered]
    declaring: dict[str, list[int]] = {name: [] for name in counts}
    for i, m in enumerate(ordered):
        for name in m.groups:
            declaring[name].append(i)
    live = sorted(name for name, holders in declaring.items() if holders)
    total = sum(counts[name] for name in live)

    # What each member holds and may keep: tasks that exist, of subtopologies it declares; a
    # task two members claim counts for the first in member order.
    held: list[list[Resource]] = [[] for _ in range(n)]
    claimed: set[Resource] = set()
    for i, m in enumerate(ordered):
        for name, index in sorted(m.current):
            resource = (name, index)
            if name in m.groups and 0 <= index < counts[name] and resource not in claimed:
                claimed.add(resource)
                held[i].append(resource)

    quotas = _quotas(total, capacity, [bool(m.groups) for m in ordered], [len(h) for h in held])
    assigned = [_spread(held[i], i)[: quotas[i]] for i in range(n)]
    taken = {resource for tasks in assigned for resource in tasks}

    def load(i: int) -> float:
        return len(assigned[i]) / capacity[i]

    pools: dict[tuple[int, ...], list[tuple[float, int]]] = {}
    for name in sorted(live, key=lambda g: (len(declaring[g]), g)):
        eligible = tuple(declaring[name])
        pool = pools.get(eligible)
        if pool is None:
            pool = [(load(i), i) for i in eligible if len(assigned[i]) < quotas[i]]
            heapq.heapify(pool)
            pools[eligible] = pool
        for index in range(counts[name]):
            resource = (name, index)
            if resource in taken:
                continue
            chosen = _least_loaded_with_room(pool, load, lambda i: len(assigned[i]) < quotas[i])
            if chosen is None:
                chosen = min(eligible, key=lambda i: (load(i), i))
            assigned[chosen].append(resource)
            if len(assigned[chosen]) < quotas[chosen]:
                heapq.heappush(pool, (load(chosen), chosen))
    return {m.member_id: assigned[i] for i, m in enumerate(ordered)}


def _quotas(total: int, capacity: list[int], takes: list[bool], held: list[int]) -> list[int]:
    """Each member's number of tasks (see :func:`assign_tasks_sticky`, step 1); members that
    declare nothing get 0 and take no share."""
    threads = sum(c for c, t in zip(capacity, takes, strict=True) if t)
    quotas = [total * c // threads if t else 0 for c, t in zip(capacity, takes, strict=True)]
    if not threads:
        return quotas
    left = total - sum(quotas)
    # Fewer than the members with a fraction: the fractions add up to `left`, each below 1.
    fractional = [i for i, t in enumerate(takes) if t and total * capacity[i] % threads]
    # Those holding more than their rounded-down share first: they keep a task instead of
    # releasing it. Then those holding less, which receive tasks anyway, so that no member which
    # holds its share is disturbed to take one more. Then by the largest fraction.
    fractional.sort(
        key=lambda i: (held[i] <= quotas[i], held[i] == quotas[i], -(total * capacity[i] % threads), i)
    )
    for i in fractional[:left]:
        quotas[i] += 1
    return quotas


def _spread(tasks: list[Resource], turn: int) -> list[Resource]:
    """``tasks`` (sorted) in the order a member keeps them: round robin over its subtopologies,
    starting at a different one for each member (``turn``, its place in member order), so that a
    member above its quota keeps some of each, and members releasing tasks together release
    tasks of different subtopologies."""
    groups = sorted({name for name, _ in tasks})
    position = {name: (k - turn) % len(groups) for k, name in enumerate(groups)}
    rank: dict[str, int] = {}
    keyed = []
    for resource in tasks:
        k = rank.get(resource[0], 0)
        rank[resource[0]] = k + 1
        keyed.append((k, position[resource[0]], resource))
    keyed.sort()
    return [resource for _, _, resource in keyed]


def _least_loaded_with_room(pool: list[tuple[float, int]], load: _Load, room: _Room) -> int | None:
    """Pop the least loaded member of ``pool`` that has room, or None. Entries are refreshed
    lazily: a member the pool shares with another pool may have taken tasks since it was
    pushed (its load only grows), and one without room any more is dropped for good."""
    while pool:
        queued, i = pool[0]
        if not room(i):
            heapq.heappop(pool)
            continue
        now = load(i)
        if now != queued:
            heapq.heapreplace(pool, (now, i))
            continue
        heapq.heappop(pool)
        return i
    return None
