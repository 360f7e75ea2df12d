"""The ``spark-executor`` group's payloads: member metadata and assignments (versioned, see
docs/payloads.md), and their descriptions for ``coordinator-api groups``."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from coordinator_api import PayloadError, decode, encode, payload

__all__ = [
    "ALLOCATOR",
    "PROTOCOL_TYPE",
    "SERVER_ASSIGNOR",
    "SlotAssignment",
    "SlotMetadata",
    "SlotProfile",
    "describe_assignment",
    "describe_metadata",
]

PROTOCOL_TYPE = "spark-executor"
ALLOCATOR = "weighted-sticky"
"""The protocol name members offer in JoinGroup: the allocator the leader runs."""
SERVER_ASSIGNOR = "weighted-sticky"
"""The server-side assignor members of the incremental protocol ask the coordinator for."""


@payload(version=1)
@dataclass(frozen=True)
class SlotMetadata:
    """What a member tells the leader about itself when it joins.

    :ivar executor_id: the Spark executor it runs on (``"driver"`` in local mode).
    :ivar host: that executor's host.
    :ivar cores: the cores its task holds (``spark.task.cpus``).
    :ivar memory_mb: the executor's memory, as far as the task can tell (0 when unknown).
    :ivar slot: the slot name it held in the last generation (``""`` before its first), which
        the leader keeps so that names, and so placement, stay put.
    :ivar owned: indices of the units it holds and has not finished yet.
    :ivar owned_generation: the generation it was given them in (-1: none), so that the leader
        trusts the newest claim when a zombie and its successor claim the same unit.
    :ivar attempt: the Spark task attempt number of the member's task.
    """

    executor_id: str
    host: str
    cores: int
    memory_mb: int
    slot: str
    owned: tuple[int, ...]
    owned_generation: int
    attempt: int


@payload(version=1)
@dataclass(frozen=True)
class SlotProfile:
    """What a member of the incremental protocol tells the coordinator's assignor about itself
    (``GroupSubscription.metadata``). Every heartbeat carries it and a change starts a new group
    epoch, so it holds only what stays put for the member's life: no units (the coordinator
    knows which it gave), no slot name.

    :ivar executor_id: the Spark executor it runs on (``"driver"`` in local mode).
    :ivar host: that executor's host.
    :ivar cores: the cores its task holds: the assignor's weight for the member.
    :ivar memory_mb: the executor's memory, as far as the task can tell (0 when unknown).
    :ivar attempt: the Spark task attempt number of the member's task.
    """

    executor_id: str
    host: str
    cores: int
    memory_mb: int
    attempt: int


@payload(version=1)
@dataclass(frozen=True)
class SlotAssignment:
    """What the leader gives each member.

    :ivar slot: the member's slot name, ``"<executor id>#<n>"``: the id the allocator places
        units on, stable across runs on the same executors.
    :ivar units: indices of the units to process, in that order (heaviest first).
    """

    slot: str
    units: tuple[int, ...]


@payload(version=1)
@dataclass(frozen=True)
class UnitDone:
    """What a member records when it completes a unit: the metadata of the unit's commit, which
    the driver reads when the job ends.

    :ivar token: the token the driver's result collector gave the unit's result.
    :ivar slot: the slot that completed it.
    """

    token: int
    slot: str

    def as_commit_metadata(self) -> str:
        """The versioned payload as text (Kafka's offset metadata is a string): base64."""
        return base64.b64encode(encode(self)).decode("ascii")

    @classmethod
    def from_commit_metadata(cls, text: str) -> UnitDone:
        """Read a unit's commit metadata back.

        :raises PayloadError: the text is not a completion record.
        """
        try:
            data = base64.b64decode(text.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error) as exc:
            raise PayloadError(f"a unit's commit metadata is not a completion record: {text[:64]!r}") from exc
        return decode(cls, data)


def _indices(units: tuple[int, ...]) -> str:
    if not units:
        return "no units"
    shown = ", ".join(map(str, units[:8]))
    return f"{len(units)} unit(s): {shown}{', ...' if len(units) > 8 else ''}"


def describe_metadata(protocol: str, data: bytes) -> str:
    """``executor 3 on host-a, 2 core(s), 4096 MB, slot 3#0; owns 2 unit(s): 4, 9 (generation 5)``;
    a member of the incremental protocol's :class:`SlotProfile`: ``executor 3 on host-a, 2
    core(s), 4096 MB``."""
    try:
        meta = decode(SlotMetadata, data)
    except PayloadError as not_classic:
        try:
            profile = decode(SlotProfile, data)
        except PayloadError:
            raise not_classic from None
        return _executor_words(profile.executor_id, profile.host, profile.cores, profile.memory_mb)
    words = _executor_words(meta.executor_id, meta.host, meta.cores, meta.memory_mb)
    if meta.slot:
        words += f", slot {meta.slot}"
    if meta.owned:
        words += f"; owns {_indices(meta.owned)} (generation {meta.owned_generation})"
    return words


def _executor_words(executor_id: str, host: str, cores: int, memory_mb: int) -> str:
    words = f"executor {executor_id} on {host or '?'}, {cores} core(s)"
    if memory_mb:
        words += f", {memory_mb} MB"
    return words


def describe_assignment(protocol: str, data: bytes) -> str:
    """``slot 3#0: 2 unit(s): 4, 9``"""
    assignment = decode(SlotAssignment, data)
    return f"slot {assignment.slot}: {_indices(assignment.units)}"
