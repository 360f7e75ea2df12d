"""What the streams assignors share: input checks, ranks, quotas, standby and stateless placement.

Everything works on indexes: clients sorted by ``(process_id, member_id)`` become ``0..M-1`` and
that order breaks every tie, so the same input always gives the same assignment.

Costs, for ``T`` tasks, ``M`` members, ``L`` reported lags and ``G`` distinct rack/tag
signatures: ``O(L + T log M)`` overall, ``O(T * S * G)`` for ``S`` standbys per task (``G`` is the
number of racks or zones, a handful in practice).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from coordinator_streams._model import (
    AssignmentConfig,
    ClientState,
    MemberTasks,
    Task,
    TaskAssignmentError,
    TaskId,
)

__all__ = [
    "RUNNING",
    "UNKNOWN",
    "Group",
    "fill_to_quotas",
    "place_standbys",
    "place_stateless",
    "prepare",
    "stateful_quotas",
]

#: Rank of a member that ran the task as its active task (more caught up than any lag).
RUNNING: Final = -1
#: Rank of a member without local state for the task.
UNKNOWN: Final = 1 << 62


@dataclass
class Group:
    """The assignor's working state: validated, indexed input and the assignment being built."""

    clients: list[ClientState]
    capacity: list[int]
    stateful: list[TaskId]
    stateless: list[TaskId]
    #: Stateful task -> [(rank, client)] for the members with local state, best first. Rank is
    #: ``RUNNING``, 0 for a lag within the acceptable recovery lag, else the lag itself.
    ranks: dict[TaskId, list[tuple[int, int]]]
    #: Stateful or stateless task -> the member that ran it (the first claimant in member order).
    previous_owner: dict[TaskId, int]
    active: list[list[TaskId]]
    standby: list[list[TaskId]]
    warmup: list[list[TaskId]]

    def rank(self, task: TaskId, client: int) -> int:
        for rank, holder in self.ranks.get(task, ()):
            if holder == client:
                return rank
        return UNKNOWN

    def load(self, client: int) -> float:
        """Every task the member holds, per thread."""
        return (
            len(self.active[client]) + len(self.standby[client]) + len(self.warmup[client])
        ) / self.capacity[client]

    def result(self) -> dict[str, MemberTasks]:
        return {
            client.member_id: MemberTasks(
                frozenset(self.active[i]), frozenset(self.standby[i]), frozenset(self.warmup[i])
            )
            for i, client in enumerate(self.clients)
        }


def prepare(clients: Sequence[ClientState], tasks: Sequence[Task], config: AssignmentConfig) -> Group:
    """Check the input and index it.

    :raises TaskAssignmentError: a member id is empty or repeated, a capacity is not a positive
        integer, a lag is negative, or a task is declared twice.
    """
    if not isinstance(config, AssignmentConfig):
        raise TaskAssignmentError(f"config must be an AssignmentConfig, got {type(config).__name__}")
    seen_tasks: dict[TaskId, Task] = {}
    for declared in tasks:
        if not isinstance(declared, Task) or not isinstance(declared.id, TaskId):
            raise TaskAssignmentError(f"tasks must be Task(TaskId(...)) values, got {declared!r}")
        if declared.id in seen_tasks:
            raise TaskAssignmentError(f"task {declared.id} is declared twice")
        seen_tasks[declared.id] = declared
    seen_members: set[str] = set()
    for client in clients:
        if not isinstance(client, ClientState):
            raise TaskAssignmentError(f"clients must be ClientState values, got {type(client).__name__}")
        if not client.member_id or client.member_id in seen_members:
            raise TaskAssignmentError(f"member id {client.member_id!r} is empty or appears twice")
        seen_members.add(client.member_id)
        if type(client.capacity) is not int or client.capacity < 1:
            raise TaskAssignmentError(
                f"member {client.member_id}: capacity must be a positive integer, got {client.capacity!r}"
            )
        for lagging, lag in client.lags.items():
            if type(lag) is not int or lag < 0:
                raise TaskAssignmentError(
                    f"member {client.member_id}: lag of task {lagging} must be an integer >= 0, got {lag!r}"
                )
    ordered = sorted(clients, key=lambda c: (c.process_id, c.member_id))
    stateful = sorted(t.id for t in seen_tasks.values() if t.stateful)
    stateless = sorted(t.id for t in seen_tasks.values() if not t.stateful)
    stateful_set = frozenset(stateful)
    acceptable = config.acceptable_recovery_lag
    ranks: dict[TaskId, list[tuple[int, int]]] = {}
    previous_owner: dict[TaskId, int] = {}
    for i, client in enumerate(ordered):
        running = client.previous_active
        for task in running:
            if task in seen_tasks:
                # Two members claiming one task (a zombie, a restarted process): the first in
                # member order counts as its owner; both still count as caught up on it.
                previous_owner.setdefault(task, i)
        for task in sorted(running | client.lags.keys()):
            if task not in stateful_set:
                continue
            if task in running:
                rank = RUNNING
            else:
                lag = client.lags[task]
                rank = 0 if lag <= acceptable else lag
            ranks.setdefault(task, []).append((rank, i))
    for candidates in ranks.values():
        candidates.sort()
    m = len(ordered)
    return Group(
        clients=ordered,
        capacity=[c.capacity for c in ordered],
        stateful=stateful,
        stateless=stateless,
        ranks=ranks,
        previous_owner=previous_owner,
        active=[[] for _ in range(m)],
        standby=[[] for _ in range(m)],
        warmup=[[] for _ in range(m)],
    )


def stateful_quotas(group: Group) -> list[int]:
    """How many stateful active tasks each member gets once balanced: its share of the tasks in
    proportion to its capacity, the remainders going to the largest fractional shares, then to
    the members that ran the most of them (fewer moves), then in member order."""
    total = len(group.stateful)
    threads = sum(group.capacity)
    quotas = [total * c // threads for c in group.capacity]
    left = total - sum(quotas)
    if left:
        ran = [0] * len(group.clients)
        for task in group.stateful:
            owner = group.previous_owner.get(task)
            if owner is not None:
                ran[owner] += 1
        by_claim = sorted(
            range(len(quotas)), key=lambda i: (-(total * group.capacity[i] % threads), -ran[i], i)
        )
        for i in by_claim[:left]:
            quotas[i] += 1
    return quotas


_LoadFn = Callable[[int], float]
_AllowFn = Callable[[int], bool]


class _LeastLoaded:
    """Members by load per thread, least loaded first, with lazy updates: an entry whose load
    is stale is refreshed when it reaches the top, so each pick costs O(log M)."""

    def __init__(self, members: Iterable[int], load: _LoadFn) -> None:
        self._load = load
        self._heap = [(load(i), i) for i in members]
        heapq.heapify(self._heap)

    def pick(self, allowed: _AllowFn) -> int | None:
        """The least loaded member ``allowed`` accepts, or None; refused entries stay queued."""
        refused = []
        found = None
        while self._heap:
            load, i = self._heap[0]
            current = self._load(i)
            if current != load:
                heapq.heapreplace(self._heap, (current, i))
                continue
            if allowed(i):
                found = i
                break
            refused.append(heapq.heappop(self._heap))
        for entry in refused:
            heapq.heappush(self._heap, entry)
        return found


def fill_to_quotas(
    group: Group, tasks: list[TaskId], target: dict[TaskId, int], counts: list[int], quotas: list[int]
) -> None:
    """Give each of ``tasks`` a target member with room below its quota: scarcest first (tasks
    with state on fewer members), each to the member with room that is most caught up on it, else
    to the member with the fewest targeted tasks per thread. ``sum(quotas)`` must cover them."""
    capacity = group.capacity

    def scarcity(task: TaskId) -> tuple[int, int, TaskId]:
        candidates = group.ranks.get(task)
        if not candidates:
            return (1, 0, task)
        return (0, sum(1 for rank, _ in candidates if rank <= 0), task)

    pool = _LeastLoaded(range(len(group.clients)), lambda i: counts[i] / capacity[i])
    for task in sorted(tasks, key=scarcity):
        best: tuple[int, float, int] | None = None
        for rank, i in group.ranks.get(task, ()):
            if counts[i] < quotas[i]:
                key = (max(rank, 0), counts[i] / capacity[i], i)
                if best is None or key < best:
                    best = key
        chosen = best[2] if best is not None else pool.pick(lambda i: counts[i] < quotas[i])
        if chosen is None:  # pragma: no cover - the quotas add up to the number of tasks
            raise AssertionError(f"no member has room for task {task}")
        target[task] = chosen
        counts[chosen] += 1


def place_standbys(group: Group, config: AssignmentConfig) -> None:
    """Give each stateful task ``num_standby_replicas`` standbys on distinct members that hold
    neither its active nor its warmup.

    Each standby goes to the member that spreads the task's replicas over the most racks (and
    rack-aware tag values) not yet used by its other replicas; among those, a member that
    already has state for the task (it was a standby before, or restored some), then the least
    loaded. A member keeps at most its share (by capacity) of the standbys, rounded up, while
    it is chosen for its state, so that new members get standbys too.
    """
    replicas = config.num_standby_replicas
    if replicas == 0 or not group.stateful:
        return
    keys = config.rack_aware_assignment_tags
    use_rack = any(c.rack is not None for c in group.clients)
    signatures: list[tuple[str | None, ...]] = [
        ((c.rack,) if use_rack else ()) + tuple(c.client_tags.get(k) for k in keys) for c in group.clients
    ]
    by_signature: dict[tuple[str | None, ...], list[int]] = {}
    for i, signature in enumerate(signatures):
        by_signature.setdefault(signature, []).append(i)
    pools = [
        (signature, _LeastLoaded(members, group.load))
        for signature, members in sorted(by_signature.items(), key=lambda item: item[1][0])
    ]
    threads = sum(group.capacity)
    wanted = len(group.stateful) * replicas
    share = [-(-wanted * c // threads) for c in group.capacity]
    holding: dict[TaskId, list[int]] = {}
    for i in range(len(group.clients)):
        for task in group.active[i]:
            holding.setdefault(task, []).append(i)
        for task in group.warmup[i]:
            holding.setdefault(task, []).append(i)
    holders: set[int] = set()

    def spread(signature: tuple[str | None, ...], used: list[set[str | None]]) -> int:
        # How many placement dimensions this signature adds a value to; unknown values add none.
        return sum(1 for k, value in enumerate(signature) if value is not None and value not in used[k])

    def free(i: int) -> bool:
        return i not in holders

    dimensions = len(signatures[0]) if signatures else 0
    for task in group.stateful:
        holders.clear()
        holders.update(holding.get(task, ()))
        used: list[set[str | None]] = [set() for _ in range(dimensions)]
        for i in holders:
            for k, value in enumerate(signatures[i]):
                used[k].add(value)
        for _ in range(replicas):
            picks = [(spread(signature, used), pool.pick(free)) for signature, pool in pools]
            best = max((score for score, i in picks if i is not None), default=-1)
            if best < 0:
                break  # every member already holds the task: fewer standbys than asked
            chosen = None
            for _rank, i in group.ranks.get(task, ()):
                if free(i) and len(group.standby[i]) < share[i] and spread(signatures[i], used) == best:
                    chosen = i
                    break
            if chosen is None:
                chosen = min((group.load(i), i) for score, i in picks if i is not None and score == best)[1]
            group.standby[chosen].append(task)
            holders.add(chosen)
            for k, value in enumerate(signatures[chosen]):
                used[k].add(value)


def place_stateless(group: Group) -> None:
    """Give each stateless task to the member that ran it while that member is within its share
    (by capacity, rounded up) of all active tasks, else to the member with the fewest active
    tasks per thread."""
    if not group.stateless:
        return
    total = len(group.stateful) + len(group.stateless)
    threads = sum(group.capacity)
    share = [-(-total * c // threads) for c in group.capacity]
    pool = _LeastLoaded(range(len(group.clients)), lambda i: len(group.active[i]) / group.capacity[i])
    for task in group.stateless:
        owner = group.previous_owner.get(task)
        if owner is None or len(group.active[owner]) >= share[owner]:
            owner = pool.pick(lambda i: True)
        assert owner is not None  # the pool holds every member and refuses none
        group.active[owner].append(task)
