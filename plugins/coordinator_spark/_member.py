"""A ``spark-executor`` group member: one Spark task slot that takes units from the leader's
allocation (or, with the incremental protocol, from the coordinator's) and records each
completion as an offset commit fenced by its generation (member epoch)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from coordinator_api import (
    CommitFailedError,
    ConfigurationError,
    Coordinator,
    GroupSubscription,
    JoinedMember,
    PluginRegistry,
    decode,
    decode_members,
    encode,
    installed_plugins,
    trusted_claims,
)
from coordinator_spark._model import Executor, WorkUnit
from coordinator_spark._payloads import (
    ALLOCATOR,
    PROTOCOL_TYPE,
    SERVER_ASSIGNOR,
    SlotAssignment,
    SlotMetadata,
    SlotProfile,
    UnitDone,
)

__all__ = ["DONE_OFFSET", "SlotMember", "completed_units"]

log = logging.getLogger("coordinator_spark")

# How often a member whose commit was refused looks whether its epoch has moved on.
_RECHECK_SECONDS = 0.02

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

    With ``group_protocol="incremental"`` (an option of :class:`~coordinator_api.Coordinator`)
    and a coordinator that serves it (the embedded one), nobody in the group allocates: the
    member declares the job's units as resources (one resource group named after the job topic,
    resource ``(topic, i)`` being unit ``i``) and a :class:`~coordinator_spark.SlotProfile`, the
    coordinator's server-side assignor (``server_assignor``) computes the target, and each
    member reconciles on its own in :meth:`on_reconcile_resources`: it drops the units it gives
    up from its queue and queues the ones it is given, less those already committed as done.
    Members that keep their units never stop for a rebalance. Completions are still offset
    commits, fenced by the member epoch. Where the coordinator does not serve the incremental
    protocol (a Kafka cluster) the member speaks the classic one, as above, and
    :attr:`~coordinator_api.Coordinator.group_protocol` reads ``"classic"``.

    :param units: the job's units, in the job's order (the index is the unit's partition).
    :param topic: the job topic, one partition per unit.
    :param executor_id: the Spark executor this member runs on.
    :param host: that executor's host.
    :param cores: the cores the member's task holds.
    :param memory_mb: the executor's memory (0 if unknown).
    :param attempt: the Spark task attempt number.
    :param placement: unit id -> slot name from an earlier run, for stickiness across runs (the
        classic protocol only: the coordinator's assignor sees unit indices, not ids).
    :param allocator: the allocator, by the name a plugin registered it under for protocol type
        ``spark-executor`` (the built-in ``weighted-sticky``, :func:`~coordinator_spark.allocate`,
        whose signature a plugin's allocator has). Every member of a job uses the same one (it
        is the group's protocol name). The classic protocol only.
    :param server_assignor: the coordinator's assignor for the incremental protocol, by the
        name a plugin registered it under as a server-side assignor of ``spark-executor`` (the
        built-in ``weighted-sticky``, :func:`~coordinator_spark.assign_units`); the plugin must
        be installed where the coordinator runs.
    :param plugins: where the allocator is looked up (default: the installed plugins).
    :param options: settings of :class:`~coordinator_api.Coordinator`.
    :raises ConfigurationError: no job topic, an unknown allocator, or no units with
        ``group_protocol="incremental"`` (a resource group has at least one resource).
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
        server_assignor: str = SERVER_ASSIGNOR,
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
        if not self._units and self.group_protocol == "incremental":
            raise ConfigurationError(
                f"group {group_id!r}: a job without units has nothing to rebalance incrementally"
            )
        self._topic = topic
        self._server_assignor = server_assignor
        self._identity = (executor_id, host, cores, memory_mb, attempt)
        self._placement = dict(placement or {})
        self._lock = threading.Lock()
        self._slot = ""
        self._queue: deque[int] = deque()
        self._owned: set[int] = set()
        self._owned_generation = -1
        self._acting_generation: int | None = None
        # The incremental protocol: unit index -> the member epoch it was given in, for every
        # unit this member holds and has not completed (queued or taken).
        self._holding: dict[int, int] = {}
        # Heaviest first, ties by id: the order allocate() gives a classic assignment.
        self._rank = {i: (-u.weight, u.id) for i, u in enumerate(self._units)}

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
            self._holding.clear()

    # --- the incremental protocol ---------------------------------------------------------------

    def group_subscription(self) -> GroupSubscription:
        executor_id, host, cores, memory_mb, attempt = self._identity
        profile = SlotProfile(
            executor_id=executor_id, host=host, cores=cores, memory_mb=memory_mb, attempt=attempt
        )
        return GroupSubscription(
            resources={self._topic: len(self._units)},
            metadata=encode(profile),
            server_assignor=self._server_assignor,
        )

    def on_reconcile_resources(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[str, int]],
        assigned: frozenset[tuple[str, int]],
    ) -> None:
        # Revoked first: a unit given up leaves the queue (one already taken is being processed
        # now on this thread, and its commit came before this call).
        gone = {index for name, index in revoked if name == self._topic}
        given = sorted(
            index for name, index in assigned if name == self._topic and 0 <= index < len(self._units)
        )
        with self._lock:
            for index in gone:
                self._holding.pop(index, None)
            if gone:
                self._queue = deque(index for index in self._queue if index not in gone)
        done = self._done_among(given)
        with self._lock:
            if not self._slot:
                self._slot = f"{self._identity[0]}#{member_id[:8]}"
            for index in given:
                if index not in done:
                    self._holding[index] = member_epoch
            if given:
                queued = set(self._queue) | {index for index in given if index not in done}
                self._queue = deque(sorted(queued, key=self._rank.__getitem__))

    def _done_among(self, indices: Sequence[int]) -> set[int]:
        """Which of ``indices`` are committed as done (the classic leader excludes them too)."""
        if not indices:
            return set()
        try:
            committed = self.committed_offsets([(self._topic, index) for index in indices])
        except Exception as exc:  # queue them all: a unit done twice beats one never done
            log.warning(
                "group %s: cannot read which of %d given unit(s) are done (%s); queueing them all",
                self.group_id,
                len(indices),
                exc,
            )
            return set()
        return set(completed_units(committed, self._topic))

    # --- the task's view ------------------------------------------------------------------------------

    @property
    def slot(self) -> str:
        """This member's slot name (``""`` before its first assignment)."""
        with self._lock:
            return self._slot

    def next_unit(self) -> tuple[int, int] | None:
        """The next unit to process as (index, generation), or None when this member holds
        nothing to do in a settled generation. With the incremental protocol the generation is
        the member epoch the unit was given in, and nothing waits for the group to settle."""
        with self._lock:
            if self.group_protocol != "classic":
                if not self._queue:
                    return None
                index = self._queue.popleft()
                return index, self._holding[index]
            if self._acting_generation is None or not self._queue:
                return None
            return self._queue.popleft(), self._acting_generation

    def complete(self, index: int, generation: int, record: UnitDone) -> bool:
        """Record unit ``index`` as done, fenced by ``generation``; ``record`` goes into the
        commit's metadata.

        With the incremental protocol the member epoch moves whenever the group changes, even
        for members whose units stay: so the commit carries the current epoch, and is made only
        while this member still holds the unit as :meth:`next_unit` gave it (``generation`` is
        the epoch it was given in; not revoked, the membership not lost since). A commit refused
        while it does (the coordinator moved the member to a new epoch whose answer is still on
        its way, or briefly could not take it) is made again once the member's epoch changes,
        for up to a session; if the member still holds the unit after that, the unit goes back
        to the queue.

        :returns: True if the coordinator accepted it; False if it refused (this member's
            generation has passed: the unit may be someone else's now), after which a member of
            the classic protocol stops acting on its assignment until it has rejoined; or, with
            the incremental protocol, if the member no longer holds the unit.
        """
        if self.group_protocol != "classic":
            return self._complete_incremental(index, generation, record)
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

    def _complete_incremental(self, index: int, given_in: int, record: UnitDone) -> bool:
        offsets = {(self._topic, index): (DONE_OFFSET, record.as_commit_metadata())}
        deadline: float | None = None
        while True:
            with self._lock:
                if self._holding.get(index) != given_in:
                    return False  # revoked, or lost, since it was given out
            epoch = self.generation().generation_id
            try:
                self.commit_offsets(offsets)
            except CommitFailedError as exc:
                if deadline is None:
                    deadline = time.monotonic() + self.session_timeout_ms / 1000
                if not self._await_new_epoch(index, given_in, epoch, deadline):
                    with self._lock:
                        still_held = self._holding.get(index) == given_in
                        if still_held:
                            self._queue.append(index)  # processed again: at least once
                    log.warning(
                        "group %s: the completion of unit %d was refused (%s)%s",
                        self.group_id,
                        index,
                        ", ".join(name for _, _, name in exc.errors) or exc,
                        "; it goes back to the queue" if still_held else "",
                    )
                    return False
                continue
            with self._lock:
                self._holding.pop(index, None)
            return True

    def _await_new_epoch(self, index: int, given_in: int, epoch: int, deadline: float) -> bool:
        """Wait until the member's epoch is no longer ``epoch`` while it still holds the unit:
        True then (commit again), False if it stopped holding it or ``deadline`` passed."""
        while time.monotonic() < deadline:
            with self._lock:
                if self._holding.get(index) != given_in:
                    return False
            current = self.generation().generation_id
            if current > 0 and current != epoch:
                return True
            time.sleep(_RECHECK_SECONDS)
        return False


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
