"""What the observability hook receives: one event per change in a member's life."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, final, get_args

MemberEventKind = Literal["joined", "assigned", "revoked", "lost", "left"]
MEMBER_EVENT_KINDS: Final[frozenset[str]] = frozenset(get_args(MemberEventKind))


@final
@dataclass(frozen=True, kw_only=True)
class MemberEvent:
    """One change in the life of a group member, for ``coordinator_api_on_member_event``.

    Kinds, in the order a member usually sees them:

    * ``joined``: the member joined a generation (JoinGroup answered).
    * ``assigned``: the member received its assignment for the generation and acts on it.
    * ``revoked``: a rebalance started and the member gave up its assignment.
    * ``lost``: the member may no longer own its assignment (heartbeats failed for too long,
      or the coordinator fenced it) and stopped acting on it.
    * ``left``: the member left the group (LeaveGroup, or closed).

    :ivar kind: one of the kinds above.
    :ivar group_id: the group.
    :ivar member_id: the member's id ("" before the coordinator gave it one).
    :ivar generation_id: the generation the event belongs to (-1 before the first join).
    :ivar protocol: the protocol the group chose for the generation, or None before it chose.
    :ivar duration_ms: how long the step took, when it has a duration: ``joined`` from the
        start of the join to its answer, ``assigned`` from the start of the rebalance to the
        assignment, ``revoked`` the time the application took to give up its assignment.
    :ivar detail: a human-readable reason or note, e.g. why the member was lost.
    """

    kind: MemberEventKind
    group_id: str
    member_id: str
    generation_id: int
    protocol: str | None = None
    duration_ms: float | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in MEMBER_EVENT_KINDS:
            raise ValueError(
                f"MemberEvent kind must be one of {', '.join(sorted(MEMBER_EVENT_KINDS))}, got {self.kind!r}"
            )
