"""What candidates advertise, what they are told, and the pure rule that elects a leader.

The rule runs in the group's leader member (Kafka's classic protocol: the member that computes
assignments) and must give every member the same answer for the same inputs, so it is a pure,
deterministic function of the members' metadata and the generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from coordinator_api import payload

PROTOCOL_TYPE = "leader"
PROTOCOL_NAME = "leader-election"


@payload(version=1)
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
    """

    name: str
    address: str = ""
    priority: int = 0
    eligible: bool = True
    version: str = ""
    epoch_seen: int = -1
    led_epoch: int = -1


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
