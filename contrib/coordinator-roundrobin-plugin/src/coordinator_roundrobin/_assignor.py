"""The roundrobin-shards assignor: a pure function over frozen dataclasses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import final


@final
@dataclass(frozen=True, kw_only=True)
class ShardMember:
    """A member as the assignor sees it.

    :ivar member_id: the member's id in the generation.
    :ivar capacity: the most shards it takes; None for no limit, 0 for a standby member.
    """

    member_id: str
    capacity: int | None = None


def assign_round_robin(members: Iterable[ShardMember], shards: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Deal the shards, sorted by name, to the members, sorted by member id, one at a time,
    skipping members that hold as many shards as their capacity.

    Every member gets an entry (possibly empty). Shards beyond the members' total capacity stay
    unassigned. The result depends only on the sets given, not on their order.

    Two members with no limit split five shards 3/2::

        >>> assign_round_robin([ShardMember(member_id="b"), ShardMember(member_id="a")],
        ...                    ["s4", "s3", "s2", "s1", "s0"])
        {'a': ('s0', 's2', 's4'), 'b': ('s1', 's3')}

    A member with capacity 1 takes one shard; the others go round the rest::

        >>> assign_round_robin([ShardMember(member_id="a", capacity=1), ShardMember(member_id="b")],
        ...                    ["s0", "s1", "s2"])
        {'a': ('s0',), 'b': ('s1', 's2')}

    More shards than capacity: the last ones wait for a member with room::

        >>> assign_round_robin([ShardMember(member_id="a", capacity=1)], ["s0", "s1"])
        {'a': ('s0',)}

    :param members: the generation's members.
    :param shards: the shard names (duplicates count once).
    :returns: member id -> the shards it owns, in name order.
    """
    ordered = sorted(members, key=lambda member: member.member_id)
    owned: dict[str, list[str]] = {member.member_id: [] for member in ordered}
    turn = 0
    for shard in sorted(set(shards)):
        for _ in range(len(ordered)):
            member = ordered[turn % len(ordered)]
            turn += 1
            if member.capacity is None or len(owned[member.member_id]) < member.capacity:
                owned[member.member_id].append(shard)
                break
        else:
            break  # every member is full (or there are none): the rest stay unassigned
    return {member_id: tuple(names) for member_id, names in owned.items()}
