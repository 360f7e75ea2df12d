"""The allocation model: frozen inputs and outputs of the ``spark-executor`` allocator.

The allocator is a pure function (ARCHITECTURE rule 1)::

    allocate(executors, units, previous) -> {executor id: (unit id, ...)}

An *executor* here is one allocation target: a group member, which the runner makes of one
Spark task slot (``"3#0"`` is slot 0 of Spark executor 3). A *work unit* is anything a job
processes as a whole (a file, a shard, an API page, a model batch) with a weight, its expected
cost in any unit of your choice, and optionally the hosts that hold its data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from coordinator_api import ConfigurationError, CoordinatorApiError

__all__ = ["Allocation", "AllocationError", "DistributeError", "Executor", "WorkUnit"]


class AllocationError(ConfigurationError):
    """The allocator's input is unusable: duplicate ids, a weight that is not a positive finite
    number, cores below 1. The message names the offending unit or executor."""


class DistributeError(CoordinatorApiError, RuntimeError):
    """A :func:`~coordinator_spark.distribute` job did not complete: the Spark job failed, or its
    tasks ended with units still undone. The message says how many units were done."""


@dataclass(frozen=True, slots=True)
class WorkUnit:
    """One unit of work.

    :ivar id: unique within a job; what ``process`` receives (with the rest of the unit) and
        what the output's ``unit_id`` column holds.
    :ivar weight: the unit's expected cost (seconds, bytes, rows: any unit, the same for all);
        a positive finite number. The allocator balances the sum of weights per core.
    :ivar preferred_hosts: hosts holding the unit's data; the allocator places the unit on one
        of them when that costs no balance.
    """

    id: str
    weight: float = 1.0
    preferred_hosts: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise AllocationError(f"a work unit's id must be a non-empty string, got {self.id!r}")
        weight = self.weight
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
            raise AllocationError(f"work unit {self.id!r}: weight must be a finite number, got {weight!r}")
        if weight <= 0:
            raise AllocationError(f"work unit {self.id!r}: weight must be positive, got {weight!r}")
        if not isinstance(self.preferred_hosts, frozenset) or not all(
            isinstance(h, str) for h in self.preferred_hosts
        ):
            raise AllocationError(
                f"work unit {self.id!r}: preferred_hosts must be a frozenset of host names, "
                f"got {self.preferred_hosts!r}"
            )


@dataclass(frozen=True, slots=True)
class Executor:
    """One allocation target: a group member standing for one Spark task slot.

    :ivar id: unique among the executors of one allocation; stickiness is by this id, so give
        the same slot the same id from run to run (the runner uses ``"<executor id>#<slot>"``).
    :ivar host: the host it runs on, matched against :attr:`WorkUnit.preferred_hosts`.
    :ivar cores: the cores it works with (at least 1); weight is balanced per core.
    :ivar memory_mb: its memory, for the record (``coordinator-api groups`` shows it).
    """

    id: str
    host: str = ""
    cores: int = 1
    memory_mb: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise AllocationError(f"an executor's id must be a non-empty string, got {self.id!r}")
        if isinstance(self.cores, bool) or not isinstance(self.cores, int) or self.cores < 1:
            raise AllocationError(f"executor {self.id!r}: cores must be an integer >= 1, got {self.cores!r}")
        if not isinstance(self.host, str):
            raise AllocationError(f"executor {self.id!r}: host must be a string, got {self.host!r}")


Allocation = dict[str, tuple[str, ...]]
"""Executor id -> the ids of the units it processes, heaviest first (the order to run them in)."""
