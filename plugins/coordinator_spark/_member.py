"""A ``spark-executor`` group member: one Spark task slot that takes units from the leader's
allocation and records each completion as a generation-fenced offset commit."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from coordinator_api import (
    CommitFailedError,
    ConfigurationError,
    Coordinator,
    JoinedMember,
    PluginRegistry,
    decode,
    decode_members,
    encode,
    installed_plugins,
    trusted_claims,
)
from coordinator_spark._model import Executor, WorkUnit
from coordinator_spark._payloads import ALLOCATOR, PROTOCOL_TYPE, SlotAssignment, SlotMetadata, UnitDone

__all__ = ["DONE_OFFSET", "SlotMember", "completed_units"]

DONE_OFFSET = 1
"""The offset a completed unit's partition of the job topic is committed at."""


def completed_units(committed: Mapping[tuple[str, int], tuple[int, str]], topic: str) -> dict[int, str]:
    """Unit index -> commit metadata, for every unit of ``topic`` committed as done."""
    return {p: meta for (t, p), (offset, meta) in committed.items() if t == topic and offset >= DONE_OFFSET}


class SlotMember(Coordinator):
    """One Spark task slot as a member of the job's ``spark-executor`` group.

    Every member holds the job's whole unit list; the leader allocates the units that are not
    done yet (it reads the job topic's committed offsets) over the members with
    :func:`~coordinator_spark.allocate`, each member naming the units it still holds so the
    allocation stays sticky. A member processes its units in order and, for each, calls
    :meth:`complete`: an offset commit of partition ``unit index`` of the job topic at
    offset 1, fenced by the member's generation, so a member whose generation has passed (a
    zombie whose units have moved) cannot mark anything done.

    :param units: the job's units, in the job's order (the index is the unit's partition).
    :param topic: the job topic, one partition per unit.
    :param executor_id: the Spark executor this member runs on.
    :param host: that executor's host.
    :param cores: the cores the member's task holds.
    :param memory_mb: the executor's memory (0 if unknown).
    :param attempt: the Spark task attempt number.
    :param placement: unit id -> slot name from an earlier run, for stickiness across runs.
    :param allocator: the allocator, by the name a plugin registered it under for protocol type
        ``spark-executor`` (the built-in ``weighted-sticky``, :func:`~coordinator_spark.allocate`,
        whose signature a plugin's allocator has). Every member of a job uses the same one (it
        is the group's protocol name).
    :param plugins: where the allocator is looked up (default: the installed plugins).
    :param options: settings of :class:`~coordinator_api.Coordinator`.
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        *,
        units: Sequence[WorkUnit],
        topic: str,
        executor_id: str,
        host: str = "",
        cores: int = 1,
        memory_mb: int = 0,
        attempt: int = 0,
        placement: Mapping[str, str] | None = None,
        allocator: str = ALLOCATOR,
        plugins: PluginRegistry | None = None,
        **options: Any,
    ) -> None:
        super().__init__(group_id, bootstrap_servers, **options)
        registry = plugins if plugins is not None else installed_plugins()
        self._allocate = registry.assignors.choose(
            PROTOCOL_TYPE, allocator, group_id=group_id, what="allocator"
        )
        self._allocator_name = allocator
        if not topic:
            raise ConfigurationError(f"group {group_id!r}: the job topic must be named")
        self._units = list(units)
        self._topic = topic
        self._identity = (executor_id, host, cores, memory_mb, attempt)
        self._placement = dict(placement or {})
        self._lock = threading.Lock()
        self._slot = ""
        self._queue: deque[int] = deque()
        self._owned: set[int] = set()
        self._owned_generation = -1
        self._acting_generation: int | None = None

    # --- the Coordinator contract ----------------------------------------------------------------

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        executor_id, host, cores, memory_mb, attempt = self._identity
        with self._lock:
            meta = SlotMetadata(
                executor_id=executor_id,
                host=host,
                cores=cores,
                memory_mb=memory_mb,
                slot=self._slot,
                owned=tuple(sorted(self._owned)),
                owned_generation=self._owned_generation,
                attempt=attempt,
            )
        return [(self._allocator_name, encode(meta))]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        decoded, _failed = decode_members(SlotMetadata, members)  # the failed ones get nothing
        done = completed_units(self.committed_offsets(), self._topic)
        slots = name_slots(decoded)
        previous = dict(self._placement)
        # The newest claim wins: a zombie's stale claim never beats its successor's.
        claims = trusted_claims(
            [
                (meta.owned_generation, meta.owned if meta.owned_generation >= 0 else ())
                for meta in decoded.values()
            ]
        )
        for member_id, owned in zip(decoded, claims, strict=True):
            for index in owned:
                if 0 <= index < len(self._units):
                    previous[self._units[index].id] = slots[member_id]
        remaining = [unit for index, unit in enumerate(self._units) if index not in done]
        executors = [
            Executor(slots[m], host=meta.host, cores=max(1, meta.cores), memory_mb=max(0, meta.memory_mb))
            for m, meta in decoded.items()
        ]
        allocation: Mapping[str, Sequence[str]] = self._allocate(executors, remaining, previous)
        index_of = {unit.id: index for index, unit in enumerate(self._units)}
        assignments = {
            m: encode(SlotAssignment(slot=slots[m], units=tuple(index_of[u] for u in allocation[slots[m]])))
            for m in decoded
        }
        for member in members:
            assignments.setdefault(member.member_id, encode(SlotAssignment(slot="", units=())))
        return assignments

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        # Eager protocol: stop taking units now, but remember them as a claim for the leader.
        with self._lock:
            self._queue.clear()
            self._acting_generation = None

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        given = decode(SlotAssignment, assignment)
        with self._lock:
            self._slot = given.slot
            self._queue = deque(given.units)
            self._owned = set(given.units)
            self._owned_generation = generation
            self._acting_generation = generation

    def on_lost(self, reason: str) -> None:
        # The units may already be another member's: stop, and claim nothing on rejoining.
        with self._lock:
            self._queue.clear()
            self._owned.clear()
            self._owned_generation = -1
            self._acting_generation = None

    # --- the task's view ------------------------------------------------------------------------------

    @property
    def slot(self) -> str:
        """This member's slot name (``""`` before its first assignment)."""
        with self._lock:
            return self._slot

    def next_unit(self) -> tuple[int, int] | None:
        """The next unit to process as (index, generation), or None when this member holds
        nothing to do in a settled generation."""
        with self._lock:
            if self._acting_generation is None or not self._queue:
                return None
            return self._queue.popleft(), self._acting_generation

    def complete(self, index: int, generation: int, record: UnitDone) -> bool:
        """Record unit ``index`` as done, fenced by ``generation``; ``record`` goes into the
        commit's metadata.

        :returns: True if the coordinator accepted it; False if it refused (this member's
            generation has passed: the unit may be someone else's now), after which the member
            stops acting on its assignment until it has rejoined.
        """
        with self._lock:
            current = self._acting_generation
        if current != generation:
            return False  # revoked or lost since the unit was taken: do not even try
        try:
            self.commit_offsets({(self._topic, index): (DONE_OFFSET, record.as_commit_metadata())})
        except CommitFailedError:
            with self._lock:
                self._queue.clear()
                self._acting_generation = None
            return False
        with self._lock:
            self._owned.discard(index)
        return True


def name_slots(members: Mapping[str, SlotMetadata]) -> dict[str, str]:
    """Member id -> slot name ``"<executor id>#<n>"``: a member keeps the name it had when no
    other member of its executor holds it too (the newest generation wins); others take the
    lowest free number on their executor, in member-id order. Same executors, same slot count:
    same names, run after run.

    >>> meta = SlotMetadata("3", "h", 1, 0, "", (), -1, 0)
    >>> name_slots({"m-b": meta, "m-a": meta, "m-c": SlotMetadata("4", "h", 1, 0, "", (), -1, 0)})
    {'m-a': '3#0', 'm-b': '3#1', 'm-c': '4#0'}
    """
    names: dict[str, str] = {}
    taken: set[str] = set()
    by_claim = sorted(members.items(), key=lambda kv: (-kv[1].owned_generation, kv[0]))
    for member_id, meta in by_claim:
        if meta.slot.startswith(f"{meta.executor_id}#") and meta.slot not in taken:
            names[member_id] = meta.slot
            taken.add(meta.slot)
    for member_id, meta in sorted(members.items()):
        if member_id in names:
            continue
        n = 0
        while f"{meta.executor_id}#{n}" in taken:
            n += 1
        names[member_id] = f"{meta.executor_id}#{n}"
        taken.add(names[member_id])
    return dict(sorted(names.items()))
