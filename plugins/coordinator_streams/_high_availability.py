"""The high-availability task assignor: KIP-441's warmup replicas and probing rebalances.

The rule it keeps: **no stateful active task waits on a restoration that a caught-up member
could have avoided.** A member is *caught up* on a task when it ran the task in the previous
generation or its lag is at most ``acceptable_recovery_lag``.

One call, in four steps:

1. **Balanced target.** Each member's share of the stateful tasks, by capacity
   (:func:`~coordinator_streams._placement.stateful_quotas`). Each member keeps the tasks it ran,
   up to its share; a member above its share gives up first the tasks another member is most
   caught up on (so a warmup that has caught up is what moves). The tasks left go, scarcest
   first, to the member with room that is most caught up on them, else to the least loaded.
2. **Actives.** A task whose target member is caught up (or that no member is more caught up
   on) runs there. Otherwise it stays on a caught-up member (the one that ran it, else the least
   loaded caught-up one) and the move to the target is *pending*; with no caught-up member at
   all it goes to the most caught-up one.
3. **Warmups.** Up to ``max_warmup_replicas`` pending moves get a warmup replica on their target,
   those closest to caught up first, so a warmup already restoring keeps going.
4. **Standbys and stateless tasks**
   (:func:`~coordinator_streams._placement.place_standbys`,
   :func:`~coordinator_streams._placement.place_stateless`).

While moves are pending the result asks for a probing rebalance. Each probing round moves every
task whose warmup caught up and starts the next warmups, so a group with ``k`` tasks to move
converges in ``ceil(k / max_warmup_replicas)`` rounds when each warmup catches up within one
probing interval.

The algorithm follows what shipped in Kafka Streams' ``HighAvailabilityTaskAssignor``, with one
difference: Kafka's balanced target is a fresh round robin, so tasks also move between
caught-up members; here the target is sticky, so a task stays where it ran unless balance needs
it elsewhere.

Worked example: three members ran 4 tasks each and a fourth joins without state::

    >>> from coordinator_streams import AssignmentConfig, ClientState, Task, TaskId, assign_tasks
    >>> tasks = [Task(TaskId(0, p)) for p in range(12)]
    >>> ran = {"a": range(0, 4), "b": range(4, 8), "c": range(8, 12), "d": range(0)}
    >>> clients = [ClientState(member_id=m, previous_active=frozenset(TaskId(0, p) for p in ps))
    ...            for m, ps in ran.items()]
    >>> result = assign_tasks(clients, tasks, AssignmentConfig(max_warmup_replicas=2))
    >>> sorted(str(t) for t in result.members["d"].active), sorted(str(t) for t in result.members["d"].warmup)
    ([], ['0_3', '0_7'])
    >>> result.probing_rebalance_needed, result.pending_moves
    (True, 3)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from coordinator_streams._model import AssignmentConfig, ClientState, Task, TaskAssignment, TaskId
from coordinator_streams._placement import (
    UNKNOWN,
    Group,
    fill_to_quotas,
    place_standbys,
    place_stateless,
    prepare,
    stateful_quotas,
)

__all__ = ["assign_tasks"]

_DEFAULT = AssignmentConfig()


def assign_tasks(
    clients: Sequence[ClientState], tasks: Sequence[Task], config: AssignmentConfig = _DEFAULT
) -> TaskAssignment:
    """Assign tasks for high availability (see the module docstring for the algorithm).

    :param clients: every member of the generation, in any order.
    :param tasks: every task of the topology, in any order.
    :param config: the warmup, standby and lag settings.
    :returns: each member's active, standby and warmup tasks, and whether a probing rebalance
        should follow.
    :raises TaskAssignmentError: the input is inconsistent (see
        :class:`~coordinator_streams.TaskAssignmentError`).
    """
    group = prepare(clients, tasks, config)
    if not group.clients:
        return TaskAssignment(members={})
    target = _balanced_target(group)
    pending = _place_actives(group, target)
    _start_warmups(group, pending, config.max_warmup_replicas)
    place_standbys(group, config)
    place_stateless(group)
    return TaskAssignment(
        members=group.result(), probing_rebalance_needed=bool(pending), pending_moves=len(pending)
    )


def _balanced_target(group: Group) -> dict[TaskId, int]:
    quotas = stateful_quotas(group)
    target: dict[TaskId, int] = {}
    counts = [0] * len(group.clients)
    ran: list[list[TaskId]] = [[] for _ in group.clients]
    for task in group.stateful:
        owner = group.previous_owner.get(task)
        if owner is not None:
            ran[owner].append(task)
    for i, kept in enumerate(ran):
        if len(kept) > quotas[i]:
            # Keep the tasks nobody else is caught up on; give up those another member could
            # take over soonest (a finished warmup, a caught-up standby).
            kept.sort(key=functools.partial(_keep_order, group, i))
            del kept[quotas[i] :]
        for task in kept:
            target[task] = i
        counts[i] = len(kept)
    left = [t for t in group.stateful if t not in target]
    fill_to_quotas(group, left, target, counts, quotas)
    return target


def _keep_order(group: Group, client: int, task: TaskId) -> tuple[int, TaskId]:
    return (-_best_elsewhere(group, task, client), task)


def _best_elsewhere(group: Group, task: TaskId, client: int) -> int:
    for rank, holder in group.ranks.get(task, ()):
        if holder != client:
            return max(rank, 0)
    return UNKNOWN


def _place_actives(group: Group, target: dict[TaskId, int]) -> list[tuple[int, int, TaskId, int]]:
    """Run each task on its target when that waits on no avoidable restore; return the pending
    moves as (target's rank, caught-up members, task, target) for warmup priority."""
    deferred: list[tuple[TaskId, int, list[tuple[int, int]]]] = []
    for task in group.stateful:
        destination = target[task]
        candidates = group.ranks.get(task, [])
        best = candidates[0][0] if candidates else UNKNOWN
        if group.rank(task, destination) <= max(best, 0):
            group.active[destination].append(task)
        else:
            deferred.append((task, destination, candidates))
    pending = []
    for task, destination, candidates in deferred:
        caught_up = [i for rank, i in candidates if rank <= 0]
        owner = group.previous_owner.get(task)
        if owner is not None and owner in caught_up:
            source = owner
        elif caught_up:
            source = min(caught_up, key=lambda i: (len(group.active[i]) / group.capacity[i], i))
        else:
            # Nobody is caught up: the most caught-up member restores the least.
            best = candidates[0][0]
            source = min(
                (i for rank, i in candidates if rank == best),
                key=lambda i: (len(group.active[i]) / group.capacity[i], i),
            )
        group.active[source].append(task)
        pending.append((group.rank(task, destination), len(caught_up), task, destination))
    return pending


def _start_warmups(group: Group, pending: list[tuple[int, int, TaskId, int]], limit: int) -> None:
    pending.sort()
    for _rank, _caught_up, task, destination in pending[:limit]:
        group.warmup[destination].append(task)
