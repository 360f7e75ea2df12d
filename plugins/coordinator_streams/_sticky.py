"""The eager sticky task assignor: what Kafka Streams did before KIP-441 (the baseline).

It balances active tasks by capacity and is sticky: each member keeps the tasks it ran, up to
its share; the rest go to a member that kept the task as a standby, else to the least loaded.
It ignores lags: a task moved to a member without its state is down until that member has
restored it. No warmups, so no probing rebalance. Standbys and stateless tasks are placed as by
the high-availability assignor.

    >>> from coordinator_streams import ClientState, Task, TaskId, assign_tasks_eager_sticky
    >>> tasks = [Task(TaskId(0, p)) for p in range(4)]
    >>> clients = [ClientState(member_id="a", previous_active=frozenset(t.id for t in tasks)),
    ...            ClientState(member_id="b")]
    >>> result = assign_tasks_eager_sticky(clients, tasks)
    >>> sorted(str(t) for t in result.members["b"].active)  # b restores these from scratch
    ['0_2', '0_3']
"""

from __future__ import annotations

from collections.abc import Sequence

from coordinator_streams._model import AssignmentConfig, ClientState, Task, TaskAssignment, TaskId
from coordinator_streams._placement import (
    RUNNING,
    fill_to_quotas,
    place_standbys,
    place_stateless,
    prepare,
    stateful_quotas,
)

__all__ = ["assign_tasks_eager_sticky"]

_DEFAULT = AssignmentConfig()


def assign_tasks_eager_sticky(
    clients: Sequence[ClientState], tasks: Sequence[Task], config: AssignmentConfig = _DEFAULT
) -> TaskAssignment:
    """Assign tasks as Kafka Streams' sticky assignor did before KIP-441: balanced, sticky to
    previous actives then previous standbys, blind to lags (see the module docstring).

    :param clients: every member of the generation, in any order.
    :param tasks: every task of the topology, in any order.
    :param config: only ``num_standby_replicas`` and ``rack_aware_assignment_tags`` matter.
    :returns: each member's active and standby tasks (never warmups).
    :raises TaskAssignmentError: the input is inconsistent.
    """
    group = prepare(clients, tasks, config)
    if not group.clients:
        return TaskAssignment(members={})
    # Blind to lags: only "ran it" and "kept a standby of it" count, and count as equally good.
    stateful = frozenset(group.stateful)
    ranks: dict[TaskId, list[tuple[int, int]]] = {}
    for i, client in enumerate(group.clients):
        for task in sorted(client.previous_active | client.previous_standby):
            if task in stateful:
                ranks.setdefault(task, []).append((RUNNING if task in client.previous_active else 0, i))
    for candidates in ranks.values():
        candidates.sort()
    group.ranks = ranks
    quotas = stateful_quotas(group)
    target: dict[TaskId, int] = {}
    counts = [0] * len(group.clients)
    for task in group.stateful:
        owner = group.previous_owner.get(task)
        if owner is not None and counts[owner] < quotas[owner]:
            target[task] = owner
            counts[owner] += 1
    fill_to_quotas(group, [t for t in group.stateful if t not in target], target, counts, quotas)
    for task, member in target.items():
        group.active[member].append(task)
    place_standbys(group, config)
    place_stateless(group)
    return TaskAssignment(members=group.result())
