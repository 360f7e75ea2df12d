"""What candidates advertise, what they are told, and the pure rules that elect a leader.

With the classic protocol the rule (:func:`elect`) runs in the group's leader member (the
member that computes assignments) and must give every member the same answer for the same
inputs, so it is a pure, deterministic function of the members' metadata and the generation.
With the incremental protocol the coordinator runs :func:`elect_on_coordinator`, which hands
out the one resource :data:`LEADERSHIP` by the same ranking.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from coordinator_api import AssignmentSpec, PayloadError, decode, payload, since

PROTOCOL_TYPE = "leader"
PROTOCOL_NAME = "leader-election"

#: The incremental protocol's one resource of a leader group: whoever owns it leads.
LEADERSHIP = ("leadership", 0)


@payload(version=2)
@dataclass(frozen=True)
class Candidate:
    """A member's metadata: who it is and what it knows of past leadership.

    :ivar name: the service instance's name, shown to every member as the leader's identity.
    :ivar address: where the instance can be reached (e.g. ``host:port``), or "".
    :ivar priority: higher is preferred when a leader is elected.
    :ivar eligible: False for members that follow but must not lead (now).
    :ivar version: the application's version, shown to the other members.
    :ivar epoch_seen: the highest leadership epoch this member has been told (-1: none).
    :ivar led_epoch: the epoch of the last leadership this member held (-1: none), so that the
        leader of the generation that just ended can be kept.
    :ivar preferred_leader: (version 2) the member asks that the best-ranked member lead, even
        if another holds the leadership (the incremental protocol's rule reads it; with the
        classic protocol the group leader's own setting counts).
    """

    name: str
    address: str = ""
    priority: int = 0
    eligible: bool = True
    version: str = ""
    epoch_seen: int = -1
    led_epoch: int = -1
    preferred_leader: bool = field(default=False, metadata=since(2))


@payload(version=1)
@dataclass(frozen=True)
class LeaderAssignment:
    """What every member is told after a rebalance.

    :ivar leader_id: the member id of the leader, or "" if no member is eligible.
    :ivar leader_name: the leader's ``name`` (or "").
    :ivar leader_address: the leader's ``address``.
    :ivar leader_priority: the leader's ``priority``.
    :ivar leader_version: the leader's ``version``.
    :ivar epoch: the leadership epoch of this generation: the fencing token, greater than every
        epoch any member has seen.
    """

    leader_id: str
    leader_name: str = ""
    leader_address: str = ""
    leader_priority: int = 0
    leader_version: str = ""
    epoch: int = -1


def rank(member_id: str, candidate: Candidate) -> tuple[bool, int, str, str]:
    """Sort key of a fresh election: eligible first, then higher priority, then name and member
    id (a stable tiebreak every member computes alike)."""
    return (not candidate.eligible, -candidate.priority, candidate.name, member_id)


def elect(
    candidates: Mapping[str, Candidate], generation: int, *, preferred_leader: bool = False
) -> LeaderAssignment:
    """Elect the leader of a generation; every member is sent the returned assignment.

    * The epoch is the generation, raised above every epoch a member has seen, so it only grows
      even if the coordinator forgot the group (a new group restarts its generations at 1).
    * Every member stopped acting as leader when the rebalance began, so any choice is safe;
      to avoid needless moves, the leader of the previous epoch keeps leading while it is present
      and eligible, unless ``preferred_leader`` asks for the best-ranked member.
    * Otherwise the best eligible member by :func:`rank` leads; with none eligible, nobody does.

    >>> a, b = Candidate("a", priority=1), Candidate("b", priority=5)
    >>> elect({"m-1": a, "m-2": b}, generation=3).leader_name
    'b'
    >>> last = Candidate("a", priority=1, epoch_seen=3, led_epoch=3)
    >>> elect({"m-1": last, "m-2": Candidate("b", priority=5, epoch_seen=3)}, generation=4).leader_name
    'a'
    >>> elect({"m-1": last, "m-2": b}, generation=4, preferred_leader=True).leader_name
    'b'
    """
    seen = max((c.epoch_seen for c in candidates.values()), default=-1)
    epoch = max(generation, seen + 1)
    eligible = [m for m, c in candidates.items() if c.eligible]
    if not eligible:
        return LeaderAssignment(leader_id="", epoch=epoch)
    previous = [m for m in eligible if candidates[m].led_epoch == seen >= 0]
    if previous and not preferred_leader:
        leader = min(previous, key=lambda m: rank(m, candidates[m]))
    else:
        leader = min(eligible, key=lambda m: rank(m, candidates[m]))
    chosen = candidates[leader]
    return LeaderAssignment(
        leader_id=leader,
        leader_name=chosen.name,
        leader_address=chosen.address,
        leader_priority=chosen.priority,
        leader_version=chosen.version,
        epoch=epoch,
    )


def elect_on_coordinator(
    members: Sequence[AssignmentSpec], resource_counts: Mapping[str, int]
) -> Mapping[str, Iterable[tuple[str, int]]]:
    """The incremental protocol's election, run by the coordinator: :data:`LEADERSHIP` to one
    member. The member that holds it keeps it while it is eligible, unless a member asks for
    the preferred leader; otherwise the best eligible member by :func:`rank` gets it. A member
    whose payload is not a :class:`Candidate` cannot lead. Each member's metadata is its
    Candidate; the leadership epoch is the coordinator's member epoch at which it was given.

    >>> from coordinator_api import AssignmentSpec, encode
    >>> def spec(member_id, candidate, holds=False):
    ...     return AssignmentSpec(member_id=member_id, instance_id=None, rack=None,
    ...         topics=frozenset({"leadership"}), current=frozenset({LEADERSHIP} if holds else ()),
    ...         metadata=encode(candidate))
    >>> a, b = Candidate("a", priority=1), Candidate("b", priority=5)
    >>> elect_on_coordinator([spec("m-1", a), spec("m-2", b)], {"leadership": 1})
    {'m-2': [('leadership', 0)]}
    >>> elect_on_coordinator([spec("m-1", a, holds=True), spec("m-2", b)], {"leadership": 1})
    {'m-1': [('leadership', 0)]}
    """
    name, _ = LEADERSHIP
    if name not in resource_counts:
        return {}
    candidates: dict[str, Candidate] = {}
    for member in members:
        if name not in member.topics:
            continue
        try:
            candidates[member.member_id] = decode(Candidate, member.metadata)
        except PayloadError:
            continue  # not a candidate this rule can read
    eligible = [m for m, c in candidates.items() if c.eligible]
    if not eligible:
        return {}
    holders = [m.member_id for m in members if LEADERSHIP in m.current and m.member_id in eligible]
    if holders and not any(c.preferred_leader for c in candidates.values()):
        leader = holders[0]
    else:
        leader = min(eligible, key=lambda m: rank(m, candidates[m]))
    return {leader: [LEADERSHIP]}
