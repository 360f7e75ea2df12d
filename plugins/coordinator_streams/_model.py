"""The streams task-assignment model: frozen inputs and outputs of every streams assignor.

Assignors are pure functions (ARCHITECTURE rule 1)::

    assign(clients, tasks, config) -> TaskAssignment

A *task* is one unit of work, ``(subtopology, partition)``, as in Kafka Streams. A *stateful*
task keeps local state (a store backed by a changelog topic); moving it to a member that has not
restored that state means the task is down until the restore finishes. A *stateless* task can
run anywhere at once. Each group member is one application instance (a *client*): it reports
its capacity (threads), where it runs (rack, client tags), how far behind the end of each
changelog its local copy of each task's state is (its *lag*), and what it ran before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, final

from coordinator_api import ConfigurationError

__all__ = [
    "DEFAULT_ACCEPTABLE_RECOVERY_LAG",
    "DEFAULT_MAX_WARMUP_REPLICAS",
    "DEFAULT_PROBING_REBALANCE_INTERVAL_MS",
    "AssignmentConfig",
    "ClientState",
    "MemberTasks",
    "StreamsAssignor",
    "Task",
    "TaskAssignment",
    "TaskAssignmentError",
    "TaskId",
]

# Kafka Streams' defaults (acceptable.recovery.lag, max.warmup.replicas,
# probing.rebalance.interval.ms).
DEFAULT_ACCEPTABLE_RECOVERY_LAG = 10_000
DEFAULT_MAX_WARMUP_REPLICAS = 2
DEFAULT_PROBING_REBALANCE_INTERVAL_MS = 600_000


class TaskAssignmentError(ConfigurationError):
    """An assignor's input cannot be assigned: duplicate member ids, a capacity below one, a
    negative lag, a task declared twice, a configuration value out of range. The message names
    the member or the setting and the value."""


@final
@dataclass(frozen=True, order=True, slots=True)
class TaskId:
    """A task: one partition of one subtopology (``str()`` gives Kafka's ``"1_4"`` notation).

    :ivar subtopology: the subtopology (a connected part of the processing graph).
    :ivar partition: the input partition it reads.
    """

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """The inverse of ``str()``: ``TaskId.parse("1_4") == TaskId(1, 4)``.

        :raises TaskAssignmentError: ``text`` is not ``<int>_<int>``.
        """
        left, sep, right = text.partition("_")
        try:
            if not sep:
                raise ValueError(text)
            return cls(int(left), int(right))
        except ValueError:
            raise TaskAssignmentError(f"not a task id: {text!r} (expected e.g. '1_4')") from None


@final
@dataclass(frozen=True, order=True, slots=True)
class Task:
    """A task of the application's topology.

    :ivar id: the task.
    :ivar stateful: whether it keeps local state restored from a changelog (only stateful tasks
        get standbys and warmups, and only their placement depends on lags).
    """

    id: TaskId
    stateful: bool = True


@final
@dataclass(frozen=True, kw_only=True)
class ClientState:
    """One member (application instance) as the assignor sees it.

    :ivar member_id: the member's id in this generation; the assignment is keyed by it.
    :ivar process_id: a stable id of the instance (it survives restarts, as the state directory
        does); ties between otherwise equal members are broken by it, so an assignment does not
        change just because a restarted member got a new member id.
    :ivar capacity: how many threads it runs; load is balanced in proportion to it.
    :ivar rack: where it runs; standbys prefer racks that do not already hold the task.
    :ivar client_tags: further placement tags (``{"zone": "eu-1a"}``); the keys named in
        :attr:`AssignmentConfig.rack_aware_assignment_tags` spread standbys as the rack does.
    :ivar lags: for each stateful task whose state it holds on disk, how many records its copy is
        behind the end of the task's changelog (0 = caught up). A task missing here has no
        local state: its lag is unknown and counts as the largest possible.
    :ivar previous_active: the tasks it ran as active tasks in the previous generation. A
        stateful task it ran is caught up on it, whatever its reported lag.
    :ivar previous_standby: the tasks it kept as standby (or warmup) replicas.
    """

    member_id: str
    process_id: str = ""
    capacity: int = 1
    rack: str | None = None
    client_tags: Mapping[str, str] = field(default_factory=dict)
    lags: Mapping[TaskId, int] = field(default_factory=dict)
    previous_active: frozenset[TaskId] = frozenset()
    previous_standby: frozenset[TaskId] = frozenset()


@final
@dataclass(frozen=True, kw_only=True)
class AssignmentConfig:
    """The knobs of the high-availability assignor (Kafka Streams' names in parentheses).

    :ivar acceptable_recovery_lag: a member whose lag on a task is at most this is *caught up*
        on it and may run it as an active task right away (``acceptable.recovery.lag``).
    :ivar max_warmup_replicas: how many warmup replicas, group-wide, may restore state at once
        for tasks that should move to a member that is not caught up (``max.warmup.replicas``).
    :ivar num_standby_replicas: standby replicas of each stateful task, each on a different
        member from the active and from each other (``num.standby.replicas``).
    :ivar probing_rebalance_interval_ms: while warmups exist, how long until the follow-up
        ("probing") rebalance that checks whether they caught up
        (``probing.rebalance.interval.ms``).
    :ivar rack_aware_assignment_tags: the client-tag keys standbys spread over, in addition to
        the rack (``rack.aware.assignment.tags``).
    """

    acceptable_recovery_lag: int = DEFAULT_ACCEPTABLE_RECOVERY_LAG
    max_warmup_replicas: int = DEFAULT_MAX_WARMUP_REPLICAS
    num_standby_replicas: int = 0
    probing_rebalance_interval_ms: int = DEFAULT_PROBING_REBALANCE_INTERVAL_MS
    rack_aware_assignment_tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name, value, low in (
            ("acceptable_recovery_lag", self.acceptable_recovery_lag, 0),
            ("max_warmup_replicas", self.max_warmup_replicas, 1),
            ("num_standby_replicas", self.num_standby_replicas, 0),
            ("probing_rebalance_interval_ms", self.probing_rebalance_interval_ms, 1),
        ):
            if type(value) is not int or value < low:
                raise TaskAssignmentError(f"{name} must be an integer >= {low}, got {value!r}")
        if not all(isinstance(key, str) and key for key in self.rack_aware_assignment_tags):
            raise TaskAssignmentError(
                "rack_aware_assignment_tags must be non-empty strings, "
                f"got {self.rack_aware_assignment_tags!r}"
            )


@final
@dataclass(frozen=True)
class MemberTasks:
    """What one member runs in a generation.

    :ivar active: tasks it processes.
    :ivar standby: stateful tasks whose state it keeps up to date, to take over at once if the
        active's member fails.
    :ivar warmup: stateful tasks whose state it restores because the assignor wants to move the
        active task here once it is caught up; a member treats them as standbys.
    """

    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()
    warmup: frozenset[TaskId] = frozenset()


@final
@dataclass(frozen=True)
class TaskAssignment:
    """An assignor's answer.

    :ivar members: member id -> its tasks; every member of the input appears.
    :ivar probing_rebalance_needed: some active task is not yet where the balanced assignment
        wants it (its target member is not caught up): a follow-up rebalance should come after
        ``probing_rebalance_interval_ms``, or earlier once a warmup has caught up.
    :ivar pending_moves: how many active tasks are held on a caught-up member while their
        balanced target catches up (0 once the group is balanced).
    """

    members: Mapping[str, MemberTasks]
    probing_rebalance_needed: bool = False
    pending_moves: int = 0

    def active_owner(self) -> dict[TaskId, str]:
        """Task -> the member running it as the active task."""
        return {task: member for member, tasks in self.members.items() for task in tasks.active}


class StreamsAssignor(Protocol):
    """The signature every streams assignor has."""

    def __call__(
        self, clients: Sequence[ClientState], tasks: Sequence[Task], config: AssignmentConfig = ...
    ) -> TaskAssignment: ...
