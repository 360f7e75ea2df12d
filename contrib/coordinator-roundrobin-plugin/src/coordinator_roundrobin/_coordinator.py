"""The roundrobin-shards group member."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any, Final

from coordinator_api import ConfigurationError, Coordinator, JoinedMember
from coordinator_roundrobin._assignor import ShardMember, assign_round_robin
from coordinator_roundrobin._payloads import (
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)

log = logging.getLogger("coordinator_roundrobin")

PROTOCOL_TYPE: Final = "roundrobin-shards"
ASSIGNOR_NAME: Final = "roundrobin"


class RoundRobinShardsCoordinator(Coordinator):
    """A member of a group that spreads named shards round robin over its members.

    Every member is configured with the same shard names; the group's leader deals them out
    (:func:`~coordinator_roundrobin.assign_round_robin`), respecting each member's capacity.
    :attr:`owned_shards` is what this member owns now; ``on_assigned`` and ``on_revoked`` are
    called as that changes::

        member = RoundRobinShardsCoordinator("indexers", bootstrap, shards=["s0", "s1", "s2"])
        member.ensure_active_group()
        while True:
            member.poll(1.0)
            index(member.owned_shards)

    :param group_id: the group to join.
    :param bootstrap_servers: the coordinator (embedded or a Kafka cluster).
    :param shards: the shard names to spread (the leader's list is the one used).
    :param capacity: the most shards this member takes; None for no limit.
    :param on_assigned: called with this member's shards once a generation settles.
    :param on_revoked: called with the shards the member gives up (a rebalance starts, it
        leaves, or it lost its session).
    :param options: :class:`~coordinator_api.Coordinator` settings.
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        *,
        shards: Iterable[str],
        capacity: int | None = None,
        on_assigned: Callable[[tuple[str, ...]], None] | None = None,
        on_revoked: Callable[[tuple[str, ...]], None] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(group_id, bootstrap_servers, **options)
        names = tuple(shards) if not isinstance(shards, str) else (shards,)
        if not names or not all(isinstance(name, str) and name for name in names):
            raise ConfigurationError(f"group {group_id!r}: shards must be non-empty names, got {names!r}")
        if capacity is not None and (not isinstance(capacity, int) or capacity < 0):
            raise ConfigurationError(f"group {group_id!r}: capacity must be a non-negative integer or None")
        self._shards = tuple(sorted(set(names)))
        self._capacity = capacity
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        # on_lost runs on the heartbeat thread, the other callbacks on the polling thread.
        self._lock = threading.Lock()
        self._owned: tuple[str, ...] = ()

    @property
    def shards(self) -> tuple[str, ...]:
        """Every shard name this member was configured with, sorted."""
        return self._shards

    @property
    def owned_shards(self) -> tuple[str, ...]:
        """The shards this member owns now (empty between generations)."""
        with self._lock:
            return self._owned

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def metadata(self) -> list[tuple[str, bytes]]:
        return [(ASSIGNOR_NAME, encode_metadata(self._capacity))]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        plan = assign_round_robin(
            (ShardMember(member_id=m.member_id, capacity=decode_metadata(m.metadata)) for m in members),
            self._shards,
        )
        unassigned = sorted(set(self._shards).difference(*plan.values()))
        if unassigned:
            log.warning(
                "group %s: the members' capacity leaves %d shard(s) unassigned: %s",
                self.group_id,
                len(unassigned),
                ", ".join(unassigned),
            )
        return {member_id: encode_assignment(shards) for member_id, shards in plan.items()}

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        shards = decode_assignment(assignment)
        with self._lock:
            self._owned = shards
        if self._on_assigned is not None:
            self._on_assigned(shards)

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        self._revoke()

    def on_leave_prepare(self) -> None:
        self._revoke()

    def on_lost(self, reason: str) -> None:
        log.warning("group %s: lost shards (%s)", self.group_id, reason)
        self._revoke()

    def _revoke(self) -> None:
        with self._lock:
            shards, self._owned = self._owned, ()
        if shards and self._on_revoked is not None:
            self._on_revoked(shards)
