"""Public value types of the Coordinator API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

NO_MEMBER_ID = ""
NO_GENERATION_ID = -1


@final
@dataclass(frozen=True)
class Generation:
    """A member's view of one generation of its group.

    :ivar generation_id: the coordinator's generation counter (-1 before the first join). It is
        the fencing token of the classic protocol: offset commits and other fenced actions carry
        it, and the coordinator rejects stale ones.
    :ivar member_id: the id the coordinator gave this member ("" before it has one).
    :ivar protocol_name: the protocol the group chose for this generation (None before).
    """

    generation_id: int
    member_id: str
    protocol_name: str | None

    def has_member_id(self) -> bool:
        """True once the coordinator has given this member an id."""
        return self.member_id != NO_MEMBER_ID


NO_GENERATION = Generation(NO_GENERATION_ID, NO_MEMBER_ID, None)


@final
@dataclass(frozen=True)
class JoinedMember:
    """A member of the generation being assigned, as the leader sees it.

    :ivar member_id: the member's id in this generation.
    :ivar group_instance_id: its static id (KIP-345), or None for a dynamic member.
    :ivar metadata: the member's metadata for the chosen protocol, as its ``metadata()`` said.
    """

    member_id: str
    group_instance_id: str | None
    metadata: bytes
