"""A simulated streams application and a simulated group, on a clock the caller advances.

:class:`SimulatedApplication` is one instance's local state: each stateful task has a changelog
of a fixed size, and every task the instance holds (active, standby or warmup) restores at
``restore_rate`` records per second until it has the whole changelog. An active stateful task
*runs* (processes records) only once restored; a stateless one runs at once. State stays on disk
when a task leaves, so the instance reports its lag if the task comes back.

:class:`GroupSimulation` drives a streams assignor through rebalances with such instances: a
member joining or leaving (or crashing) triggers one, a probing rebalance follows
``probing_rebalance_interval_ms`` after an assignment that asked for it, and an early one when a
warmup has caught up, as :class:`~coordinator_streams.StreamsGroupMember` does. It measures
**downtime** (for each task, the seconds in which no member runs it) and records a timeline.
Rebalances take no time here, for every assignor alike.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import final

from coordinator_streams._model import (
    AssignmentConfig,
    ClientState,
    MemberTasks,
    StreamsAssignor,
    Task,
    TaskAssignment,
    TaskAssignmentError,
    TaskId,
)

__all__ = ["ColdHandoff", "GroupSimulation", "SimulatedApplication", "TimelineEvent", "timeline_text"]


@final
class SimulatedApplication:
    """One application instance's state stores, restored at a fixed rate on a given clock.

    :param tasks: the topology's tasks.
    :param changelog_records: records in each stateful task's changelog (one number for all,
        or per task).
    :param restore_rate: records per second each held task restores.
    :param now: the clock's current time, in seconds.
    :param restored: records already on disk per task (e.g. a restarted instance).
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        changelog_records: int | Mapping[TaskId, int],
        restore_rate: float,
        now: float = 0.0,
        restored: Mapping[TaskId, int] | None = None,
    ) -> None:
        if not restore_rate > 0:
            raise TaskAssignmentError(f"restore_rate must be positive, got {restore_rate!r}")
        self._stateful = frozenset(t.id for t in tasks if t.stateful)
        if isinstance(changelog_records, int):
            self._end = dict.fromkeys(self._stateful, changelog_records)
        else:
            self._end = {t: changelog_records[t] for t in self._stateful}
        if any(end < 0 for end in self._end.values()):
            raise TaskAssignmentError("changelog_records must be >= 0")
        self._rate = restore_rate
        self._now = now
        self._position: dict[TaskId, float] = {t: float(n) for t, n in (restored or {}).items()}
        self.tasks = MemberTasks()

    @property
    def now(self) -> float:
        """The time the state was last advanced to, in seconds."""
        return self._now

    def advance(self, now: float) -> None:
        """Restore every held stateful task up to time ``now`` (seconds; never backwards)."""
        elapsed = max(0.0, now - self._now)
        self._now = max(now, self._now)
        if not elapsed:
            return
        held = self.tasks.active | self.tasks.standby | self.tasks.warmup
        for task in held & self._stateful:
            position = self._position.get(task, 0.0)
            self._position[task] = min(float(self._end[task]), position + self._rate * elapsed)

    def assign(self, tasks: MemberTasks) -> None:
        """Hold these tasks from now on (their state starts restoring; local state of tasks that
        left stays on disk)."""
        self.tasks = tasks
        for task in (tasks.active | tasks.standby | tasks.warmup) & self._stateful:
            self._position.setdefault(task, 0.0)

    def lag(self, task: TaskId) -> int | None:
        """Records its copy of ``task``'s state is behind, or None without local state."""
        position = self._position.get(task)
        return None if position is None else self._end[task] - math.floor(position)

    def lags(self) -> dict[TaskId, int]:
        """Lag of every stateful task with local state: what the member reports in metadata."""
        return {task: self._end[task] - math.floor(p) for task, p in self._position.items()}

    def running(self) -> frozenset[TaskId]:
        """The active tasks it processes: stateless ones, and stateful ones fully restored."""
        return frozenset(t for t in self.tasks.active if t not in self._stateful or self.lag(t) == 0)

    def seconds_to_restore(self, task: TaskId) -> float:
        """How long until ``task`` is fully restored at the restore rate."""
        lag = self.lag(task)
        return (self._end.get(task, 0) if lag is None else lag) / self._rate


@final
@dataclass(frozen=True)
class TimelineEvent:
    """One line of a simulation's timeline.

    :ivar at: seconds since the start.
    :ivar kind: ``join``, ``leave``, ``crash``, ``rebalance`` or ``caught-up``.
    :ivar detail: what happened, in words.
    """

    at: float
    kind: str
    detail: str


@final
@dataclass(frozen=True)
class ColdHandoff:
    """A stateful active task handed to a member that was not caught up on it.

    :ivar at: seconds since the start.
    :ivar member: the member.
    :ivar task: the task.
    :ivar avoidable: another member was caught up on the task at the time.
    """

    at: float
    member: str
    task: TaskId
    avoidable: bool


@dataclass
class _Member:
    app: SimulatedApplication
    capacity: int
    rack: str | None
    client_tags: Mapping[str, str]


@final
class GroupSimulation:
    """A group of :class:`SimulatedApplication` members driven through rebalances by an assignor.

    :param tasks: the topology.
    :param assignor: a streams assignor (:func:`~coordinator_streams.assign_tasks` or
        :func:`~coordinator_streams.assign_tasks_eager_sticky`).
    :param config: the assignor's settings; the probing interval also drives the clock here.
    :param changelog_records: records per stateful task's changelog.
    :param restore_rate: records per second each member restores per held task.
    :param tick: seconds per simulation step (downtime is measured to this resolution).
    :param early_probe: rebalance as soon as a warmup has caught up, not only at the interval.
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        assignor: StreamsAssignor,
        config: AssignmentConfig,
        *,
        changelog_records: int | Mapping[TaskId, int],
        restore_rate: float,
        tick: float = 1.0,
        early_probe: bool = True,
    ) -> None:
        self.tasks = list(tasks)
        self.assignor = assignor
        self.config = config
        self._records = changelog_records
        self._rate = restore_rate
        self.tick = tick
        self.early_probe = early_probe
        self.now = 0.0
        self.members: dict[str, _Member] = {}
        self.timeline: list[TimelineEvent] = []
        self.rebalances = 0
        self.last: TaskAssignment | None = None
        self.next_probe: float | None = None
        #: Seconds without a running active, per task.
        self.downtime: dict[TaskId, float] = dict.fromkeys((t.id for t in tasks), 0.0)
        #: Every stateful active task handed to a member that was not caught up on it.
        self.cold_handoffs: list[ColdHandoff] = []
        self._stateful = frozenset(t.id for t in tasks if t.stateful)
        self._membership_changed = False

    # --- membership -----------------------------------------------------------------------------

    def join(
        self,
        name: str,
        *,
        capacity: int = 1,
        rack: str | None = None,
        client_tags: Mapping[str, str] | None = None,
        restored: Mapping[TaskId, int] | None = None,
    ) -> None:
        """A member joins (a rebalance follows at the next step)."""
        app = SimulatedApplication(
            self.tasks,
            changelog_records=self._records,
            restore_rate=self._rate,
            now=self.now,
            restored=restored,
        )
        self.members[name] = _Member(app, capacity, rack, dict(client_tags or {}))
        self._membership_changed = True
        self._log("join", name)

    def leave(self, name: str, *, crash: bool = False) -> None:
        """A member leaves (or crashes); its tasks are down until the rebalance at the next step."""
        del self.members[name]
        self._membership_changed = True
        self._log("crash" if crash else "leave", name)

    # --- the clock ------------------------------------------------------------------------------

    def step(self) -> None:
        """Rebalance if something asks for it, then advance the clock by one tick."""
        if self._membership_changed:
            self.rebalance("membership changed")
        elif self.next_probe is not None and self.now >= self.next_probe:
            self.rebalance("probing rebalance")
        elif self.early_probe and self._warmup_caught_up():
            self.rebalance("a warmup caught up")
        running = frozenset().union(*(m.app.running() for m in self.members.values()))
        for task in self.downtime:
            if task not in running:
                self.downtime[task] += self.tick
        self.now += self.tick
        for member in self.members.values():
            member.app.advance(self.now)

    def run(self, seconds: float) -> None:
        """Step for ``seconds``."""
        end = self.now + seconds - self.tick / 2
        while self.now < end:
            self.step()

    def run_until_settled(self, limit: float) -> bool:
        """Step until no rebalance is pending and every active task runs; False at ``limit``."""
        end = self.now + limit
        while self.now < end:
            self.step()
            if self.settled():
                return True
        return False

    def settled(self) -> bool:
        """No membership change or probe pending, and every task runs."""
        if self._membership_changed or self.next_probe is not None:
            return False
        running = frozenset().union(*(m.app.running() for m in self.members.values()))
        return len(running) == len(self.tasks)

    # --- rebalancing ----------------------------------------------------------------------------

    def client_states(self) -> list[ClientState]:
        """Each member as the leader would decode it from its metadata."""
        return [
            ClientState(
                member_id=name,
                process_id=name,
                capacity=m.capacity,
                rack=m.rack,
                client_tags=m.client_tags,
                lags=m.app.lags(),
                previous_active=m.app.tasks.active,
                previous_standby=m.app.tasks.standby | m.app.tasks.warmup,
            )
            for name, m in sorted(self.members.items())
        ]

    def rebalance(self, reason: str) -> TaskAssignment:
        """Run the assignor and hand every member its tasks."""
        self._membership_changed = False
        clients = self.client_states()
        result = self.assignor(clients, self.tasks, self.config)
        self.rebalances += 1
        acceptable = self.config.acceptable_recovery_lag
        caught_up: dict[TaskId, set[str]] = {}
        for client in clients:
            for task, lag in client.lags.items():
                if lag <= acceptable:
                    caught_up.setdefault(task, set()).add(client.member_id)
            for task in client.previous_active:
                caught_up.setdefault(task, set()).add(client.member_id)
        for name, tasks in sorted(result.members.items()):
            app = self.members[name].app
            for task in sorted((tasks.active - app.tasks.active) & self._stateful):
                if name not in caught_up.get(task, ()):
                    self.cold_handoffs.append(ColdHandoff(self.now, name, task, bool(caught_up.get(task))))
            app.assign(tasks)
        self.last = result
        self.next_probe = (
            self.now + self.config.probing_rebalance_interval_ms / 1000
            if result.probing_rebalance_needed
            else None
        )
        self._log(
            "rebalance",
            f"{reason}: "
            + "; ".join(_describe(name, tasks) for name, tasks in sorted(result.members.items()))
            + (f" (moves pending: {result.pending_moves})" if result.pending_moves else ""),
        )
        return result

    def balanced(self) -> bool:
        """Stateful active tasks per thread differ by at most one between members."""
        if self.last is None or not self.members:
            return False
        per_thread = [
            len(tasks.active & self._stateful) / self.members[name].capacity
            for name, tasks in self.last.members.items()
        ]
        return max(per_thread) - min(per_thread) <= 1

    def _warmup_caught_up(self) -> bool:
        acceptable = self.config.acceptable_recovery_lag
        for name, member in self.members.items():
            for task in member.app.tasks.warmup:
                lag = member.app.lag(task)
                if lag is not None and lag <= acceptable:
                    self._log("caught-up", f"{name} warmup {task}")
                    return True
        return False

    def _log(self, kind: str, detail: str) -> None:
        self.timeline.append(TimelineEvent(self.now, kind, detail))


def _describe(name: str, tasks: MemberTasks) -> str:
    words = f"{name} active {len(tasks.active)}"
    if tasks.standby:
        words += f", standby {len(tasks.standby)}"
    if tasks.warmup:
        words += f", warmup {' '.join(str(t) for t in sorted(tasks.warmup))}"
    return words


def timeline_text(events: Iterable[TimelineEvent]) -> str:
    """The timeline as ``  12.0 s  rebalance  ...`` lines."""
    return "\n".join(f"{e.at:8.1f} s  {e.kind:<9}  {e.detail}" for e in events)
