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
reconciles each member towards it on its own. No warmups and no lags take part, so every task
counts the same, as in Apache Kafka's streams groups, which run without warmups.

**Standby tasks** are resources too, one resource group per stateful subtopology and replica:
:func:`standby_group` names them (``"0/standby"`` for the first replica of subtopology 0, as a
streams group on Kafka names its standbys, ``"0/standby2"`` for the second), counting the
subtopology's partitions. A member declares as many as its
:attr:`~coordinator_streams.AssignmentConfig.num_standby_replicas` asks for; each standby
resource has one owner like any other, so the coordinator's revoke-before-assign rule holds for
standbys too, and the assignor places them so that no process holds a task twice (active and
standby, or two replicas).

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
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from coordinator_api import AssignmentSpec, KafkaStreamsGroup, PayloadError, decode, encode, payload
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
    "standby_group",
    "task_of",
    "tasks_of",
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


def standby_group(subtopology: int | str, replica: int = 1) -> str:
    """The resource group of replica ``replica`` (from 1) of ``subtopology``'s standby tasks:
    ``standby_group(0)`` is ``"0/standby"`` (:attr:`coordinator_api.KafkaStreamsGroup.STANDBY`),
    ``standby_group(0, 2)`` is ``"0/standby2"``."""
    return f"{subtopology}{KafkaStreamsGroup.STANDBY}{replica if replica > 1 else ''}"


def _replica(group: str) -> int:
    """Which replica a :func:`standby_group` holds (from 1)."""
    return int(group.partition(KafkaStreamsGroup.STANDBY)[2] or 1)


def tasks_of(resources: Iterable[Resource]) -> tuple[frozenset[TaskId], frozenset[TaskId]]:
    """The active and the standby tasks that ``resources`` name (of any replica).

    :raises TaskAssignmentError: a resource group's name is not a subtopology number or a
        :func:`standby_group`.
    """
    active: set[TaskId] = set()
    standby: set[TaskId] = set()
    for name, index in resources:
        subtopology = KafkaStreamsGroup.standby_of(name)
        if subtopology is None:
            active.add(task_of((name, index)))
        else:
            standby.add(task_of((subtopology, index)))
    return frozenset(active), frozenset(standby)


def resource_counts(tasks: Iterable[Task], standby_replicas: int = 0) -> dict[str, int]:
    """The resource groups a member declares for ``tasks``: one per subtopology, its partition
    count as the count, and ``standby_replicas`` :func:`standby_group` groups per subtopology
    whose tasks are all stateful.

    :raises TaskAssignmentError: a subtopology's partitions are not ``0 .. n-1`` (a resource
        group holds the resources ``0 .. count-1``, so a gap would be a task nobody declared).
    """
    tasks = list(tasks)
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
    stateless = {task.id.subtopology for task in tasks if not task.stateful}
    for subtopology, found in sorted(partitions.items()):
        if subtopology not in stateless:
            for replica in range(1, standby_replicas + 1):
                counts[standby_group(subtopology, replica)] = len(found)
    return counts


@dataclass
class _Member:
    member_id: str
    process_id: str
    capacity: int
    groups: frozenset[str]  # the resource groups of active tasks it declares that have resources
    declared: frozenset[str]  # every resource group it declares
    current: frozenset[Resource]
    rack: str | None

    @property
    def process(self) -> str:
        """Where its tasks' state lives: its process id (its own id if it gave none)."""
        return self.process_id or f"member {self.member_id}"


def _member(spec: AssignmentSpec, counts: Mapping[str, int]) -> _Member:
    try:
        meta = decode_member_metadata(spec.metadata)
        process_id, capacity = meta.process_id, max(1, meta.capacity)
    except PayloadError:
        # Not a streams member's metadata (another client, a damaged payload): it declared the
        # tasks, so it runs its share of them as a member of one thread.
        process_id, capacity = "", 1
    return _Member(
        spec.member_id,
        process_id,
        capacity,
        frozenset(g for g in spec.topics if g in counts),
        frozenset(spec.topics),
        spec.current,
        spec.rack,
    )


def assign_tasks_sticky(
    members: Sequence[AssignmentSpec], resource_counts: Mapping[str, int]
) -> dict[str, list[Resource]]:
    """The server-side assignor of streams groups: balanced by capacity, then sticky; standby
    tasks, where members declare :func:`standby_group` groups, each on a process that holds
    the task in no other form.

    1. **Quotas.** The tasks are shared in proportion to capacity: each member's quota is its
       exact share rounded down; the tasks left over go one each to members whose share has a
       fraction: first to those that hold more than their rounded-down share now (so they keep
       a task), then to those that hold less (they receive tasks anyway), then by the largest
       fraction. Every quota is within one task of the exact share.
    2. **Sticky.** Each member keeps the tasks it holds (its current target) up to its quota;
       one above its quota keeps a spread over its subtopologies and releases the rest.
    3. **Fill.** The other tasks, those of subtopologies fewer members declare first, each go
       to a member that kept a standby of it (its state is there) if one has room below its
       quota, else to the declaring member with room below its quota that has the fewest tasks
       per thread (ties: process id, then member id). Where no declaring member has room
       (members declare different subtopologies), to the least loaded declaring member.
    4. **Standbys.** Each replica of each stateful task, in replica order, goes to a member
       declaring that replica's group whose process holds the task in no other form (neither
       active nor another replica): its current owner if it is below its quota of standbys
       (its share, by capacity, of all the standby resources, rounded up), else one below its
       quota (when all have reached theirs, one of them first hands a standby it was given to a
       member below its quota that may hold it, if it can), its current owner, one that held the
       task in any form, then the one with the fewest standbys per thread in a rack that holds
       the task in no form (the heartbeat's rack id), if one below its quota is, else the one
       with the fewest standbys per thread. A replica no such member can take stays without an
       owner.

    Deterministic (members are ordered by process id, then member id, whatever the input
    order); each task goes to exactly one member that declares its subtopology, and to none if
    no member declares it. A member joining a group of equal members takes its rounded-down
    share of the active tasks and nothing else of them moves; a member leaving releases only
    its own active tasks.
    ``O(T log M + M log M)`` for ``T`` tasks and ``M`` members when all declare the same
    subtopologies.

    :param members: the group's members as the coordinator shows them (metadata:
        :class:`StreamsMemberMetadata`; a member whose metadata does not decode counts as one
        thread).
    :param resource_counts: subtopology (resource group) -> partition count.
    :returns: member id -> its tasks as resources, for every member.
    """
    # Each resource group's subtopology if it holds standby tasks, else None (and below, those
    # of the groups members only claim resources of).
    standby_of = {name: KafkaStreamsGroup.standby_of(name) for name in resource_counts}
    counts = {name: size for name, size in resource_counts.items() if size > 0 and standby_of[name] is None}
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

    def room(i: int) -> bool:
        return len(assigned[i]) < quotas[i]

    # Who held each task before, in any form, and who kept a standby of it (its state is there):
    # the members in member order; and each standby resource's current owners.
    held_before: dict[Resource, list[int]] = {}
    standby_holders: dict[Resource, list[int]] = {}
    owners: dict[Resource, list[int]] = {}
    for i, m in enumerate(ordered):
        for name, index in sorted(m.current):
            if name not in standby_of:
                standby_of[name] = KafkaStreamsGroup.standby_of(name)
            subtopology = standby_of[name]
            if subtopology is None:
                held_before.setdefault((name, index), []).append(i)
            else:
                held_before.setdefault((subtopology, index), []).append(i)
                standby_holders.setdefault((subtopology, index), []).append(i)
                owners.setdefault((name, index), []).append(i)

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
            kept_standby = [
                i for i in standby_holders.get(resource, ()) if name in ordered[i].groups and room(i)
            ]
            chosen = min(kept_standby, key=lambda i: (load(i), i)) if kept_standby else None
            if chosen is None:
                chosen = _least_loaded_with_room(pool, load, room)
            if chosen is None:
                chosen = min(eligible, key=lambda i: (load(i), i))
            assigned[chosen].append(resource)
            if room(chosen) and not kept_standby:
                heapq.heappush(pool, (load(chosen), chosen))
    standby_counts = {
        name: count for name, count in resource_counts.items() if count > 0 and standby_of[name] is not None
    }
    if standby_counts:
        subtopologies = {name: standby_of[name] or "" for name in standby_counts}
        _place_standbys(_Standbys(ordered, assigned, standby_counts, subtopologies, held_before, owners))
    return {m.member_id: assigned[i] for i, m in enumerate(ordered)}


def _place_standbys(placement: _Standbys) -> None:
    """Step 4 of :func:`assign_tasks_sticky`: adds each member's standby resources to its
    assigned resources (which hold its active ones).

    Two passes over the standby resources (by subtopology, partition, then replica): the first
    keeps each with its current owner while that is allowed and below its quota; the second
    places the rest. A resource whose allowed members have all reached their quota first tries
    to make room: one of them hands a standby it was given to a member below its quota that
    may hold it, and takes this one instead. Then each task's earliest replicas are the ones
    with owners, and what is still without an owner is tried again while that places any."""
    left = []
    for resource in placement.resources:
        keep = placement.owner.get(resource)
        if keep is not None and placement.allowed(keep, resource) and not placement.full(keep):
            placement.give(keep, resource)
        else:
            left.append(resource)
    for resource in left:
        placement.place(resource)
    placement.lowest_replicas_first()
    # A standby moved to make room frees its task on one process: a replica that found no
    # member before may find one now.
    while any(placement.place(r) is not None for r in placement.unplaced()):
        pass
    for i, resources in enumerate(placement.given):
        placement.assigned[i].extend(resources)


class _Standbys:
    """The state of :func:`_place_standbys`."""

    def __init__(
        self,
        ordered: list[_Member],
        assigned: list[list[Resource]],
        counts: Mapping[str, int],
        subtopologies: Mapping[str, str],
        held_before: Mapping[Resource, list[int]],
        owners: Mapping[Resource, list[int]],
    ) -> None:
        n = len(ordered)
        self.ordered = ordered
        self.assigned = assigned
        replica = {group: _replica(group) for group in counts}
        self.subtopology = subtopologies  # each standby group's
        self.resources = sorted(
            ((group, index) for group, count in counts.items() for index in range(count)),
            key=lambda r: (self.subtopology[r[0]], r[1], replica[r[0]], r[0]),
        )
        self.declaring = {group: {i for i in range(n) if group in ordered[i].declared} for group in counts}
        # task -> the processes that hold it in some form: its active's, then each replica's;
        # and how many of those are in each rack.
        self.used: dict[Resource, set[str]] = {}
        self.racks: dict[Resource, Counter[str]] = {}
        for i in range(n):
            rack = ordered[i].rack
            for task in assigned[i]:
                self.used[task] = {ordered[i].process}
                if rack is not None:
                    self.racks[task] = Counter((rack,))
        # The racks of the members declaring each group: whether another rack may be had at all.
        self.group_racks: dict[str, set[str]] = {
            group: {rack for i in members if (rack := ordered[i].rack) is not None}
            for group, members in self.declaring.items()
        }
        # Each standby's current owner (the first in member order), and the members that held
        # each task in any form.
        self.owner = {
            resource: members[0]
            for resource, members in owners.items()
            if 0 <= resource[1] < counts.get(resource[0], 0)
        }
        self.held_before = held_before
        threads = sum(m.capacity for m in ordered if m.declared & counts.keys())
        total = sum(counts.values())
        self.quota = [-(-total * m.capacity // threads) if threads else 0 for m in ordered]
        self.given: list[list[Resource]] = [[] for _ in range(n)]
        # For each set of members declaring a group, those below their quota by standbys per
        # thread (entries refreshed lazily, as the active tasks' pools: a member's standbys only
        # grow, as one that makes room takes one for the one it hands on).
        self.pools: dict[str, list[tuple[float, int]]] = {}
        shared: dict[frozenset[int], list[tuple[float, int]]] = {}
        for group, members in self.declaring.items():
            pool = shared.get(frozenset(members))
            if pool is None:
                pool = shared[frozenset(members)] = [(0.0, i) for i in sorted(members) if self.quota[i] > 0]
                heapq.heapify(pool)
            self.pools[group] = pool

    def task(self, resource: Resource) -> Resource:
        return (self.subtopology[resource[0]], resource[1])

    def allowed(self, i: int, resource: Resource) -> bool:
        return i in self.declaring[resource[0]] and self.ordered[i].process not in self.used.get(
            self.task(resource), ()
        )

    def full(self, i: int) -> bool:
        return len(self.given[i]) >= self.quota[i]

    def load(self, i: int) -> float:
        return len(self.given[i]) / self.ordered[i].capacity

    def give(self, i: int, resource: Resource) -> None:
        self.given[i].append(resource)
        task = self.task(resource)
        self.used.setdefault(task, set()).add(self.ordered[i].process)
        rack = self.ordered[i].rack
        if rack is not None:
            self.racks.setdefault(task, Counter())[rack] += 1

    def take_back(self, i: int, resource: Resource) -> None:
        self.given[i].remove(resource)
        task = self.task(resource)
        self.used[task].discard(self.ordered[i].process)
        rack = self.ordered[i].rack
        if rack is not None:
            self.racks[task][rack] -= 1

    def place(self, resource: Resource) -> int | None:
        """Gives ``resource`` to a member; which, or None if none may hold it. Among those that
        may: one below its quota (else one makes room, if it can), its current owner, one that
        held the task in any form, then the fewest standbys per thread."""
        keep = self.owner.get(resource)
        held = set(self.held_before.get(self.task(resource), ()))
        known = held if keep is None else held | {keep}
        first = [i for i in sorted(known) if self.allowed(i, resource) and not self.full(i)]
        chosen = min(first, key=lambda i: (i != keep, self.load(i), i)) if first else None
        if chosen is None:
            chosen = self._least_loaded_below_quota(resource)
        if chosen is None:
            valid = [i for i in sorted(self.declaring[resource[0]]) if self.allowed(i, resource)]
            if not valid:
                return None  # every process that may hold it holds its task already
            made_room = self._make_room(valid, resource)
            if made_room is not None:
                return made_room
            chosen = min(valid, key=lambda i: (i != keep, i not in held, self.load(i), i))
        self.give(chosen, resource)
        return chosen

    def _least_loaded_below_quota(self, resource: Resource) -> int | None:
        """The member below its quota with the fewest standbys per thread (then the first in
        member order) that may hold ``resource``, in a rack that holds its task in no form if
        there is one, or None."""
        pool = self.pools[resource[0]]
        held_in = self.racks.get(self.task(resource))
        # Another rack is worth looking for only if a declaring member is in one.
        look_for_rack = any(held_in is None or not held_in[r] for r in self.group_racks[resource[0]])
        passed: list[tuple[float, int]] = []  # not chosen: back into the pool after
        chosen = fallback = None
        while pool:
            queued, i = pool[0]
            if self.full(i):
                heapq.heappop(pool)
                continue
            if queued != self.load(i):
                heapq.heapreplace(pool, (self.load(i), i))
                continue
            passed.append(heapq.heappop(pool))
            if not self.allowed(i, resource):
                continue
            rack = self.ordered[i].rack
            if not look_for_rack or (rack is not None and (held_in is None or not held_in[rack])):
                chosen = i
                break
            if fallback is None:
                fallback = i
        if chosen is None:
            chosen = fallback
        for entry in passed:
            heapq.heappush(pool, entry)
        return chosen

    def unplaced(self) -> list[Resource]:
        owned = {resource for resources in self.given for resource in resources}
        return [resource for resource in self.resources if resource not in owned]

    def lowest_replicas_first(self) -> None:
        """Where a replica of a task has no owner and a later replica of it has one that may
        hold the earlier, that owner holds the earlier instead: replicas of one task are alike,
        and this way a settled group's standbys stay where they are when computed again."""
        owners = {resource: i for i, resources in enumerate(self.given) for resource in resources}
        by_task: dict[Resource, list[Resource]] = {}
        for resource in self.resources:
            by_task.setdefault(self.task(resource), []).append(resource)
        for replicas in by_task.values():
            for k, free in enumerate(replicas):
                if free in owners:
                    continue
                taken = [r for r in replicas[k + 1 :] if r in owners]
                later = next((r for r in taken if owners[r] in self.declaring[free[0]]), None)
                if later is not None:
                    i = owners.pop(later)
                    self.given[i][self.given[i].index(later)] = free
                    owners[free] = i
                    placed = self.place(later)  # somebody else may hold that one
                    if placed is not None:
                        owners[later] = placed

    def _make_room(self, valid: list[int], resource: Resource) -> int | None:
        """One of ``valid`` (all full) hands a standby to a member below its quota that may
        hold it and takes ``resource``: which, or None if none can."""
        for i in valid:
            for other in list(self.given[i]):
                self.take_back(i, other)
                taker = next(
                    (
                        j
                        for j in range(len(self.ordered))
                        if j != i and not self.full(j) and self.allowed(j, other)
                    ),
                    None,
                )
                if taker is not None:
                    self.give(taker, other)
                    self.give(i, resource)
                    return i
                self.give(i, other)  # (at the end of its list: it is looked at once)
        return None


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
