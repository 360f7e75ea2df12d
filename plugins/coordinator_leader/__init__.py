"""Leader election for services, with fencing tokens (protocol type ``leader``).

Built in, and registered through the ``coordinator_api`` entry points like a third-party
plugin. It provides:

* :class:`LeaderElection` (and :class:`AsyncLeaderElection`): one leader among a service's
  instances, elected deterministically (eligible first, then priority, then a stable
  tiebreak), with a leadership **epoch** that only grows: the fencing token the leader attaches
  to its writes;
* :class:`EpochFence`: the other half of fencing, for the store that receives those writes;
* the pure election rule :func:`elect` over :class:`Candidate` metadata, registered as the
  ``leader/leader-election`` assignor, and its incremental-protocol form
  :func:`elect_on_coordinator`, registered as the server-side assignor of the same name (the
  embedded coordinator hands the leadership out itself: ``group_protocol="incremental"``), and
  payload decoders so ``coordinator-api groups GROUP`` shows candidates and the elected leader
  in words.

See docs/leader.md for the guide.
"""

from __future__ import annotations

from coordinator_api import (
    AssignorRegistry,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    decode,
    hookimpl,
)
from coordinator_leader._aio import AsyncLeaderElection
from coordinator_leader._election import (
    LeaderElection,
    LeaderInfo,
    Leadership,
    NotLeaderError,
    election_member,
)
from coordinator_leader._election_rule import (
    LEADERSHIP,
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    Candidate,
    LeaderAssignment,
    elect,
    elect_on_coordinator,
    rank,
)
from coordinator_leader._fence import EpochFence, StaleEpochError


def describe_candidate(protocol: str, data: bytes) -> str:
    """``node-1 at 10.0.0.5:8080, priority 2, eligible, seen epoch 7, led epoch 7``"""
    c = decode(Candidate, data)
    words = [c.name + (f" at {c.address}" if c.address else ""), f"priority {c.priority}"]
    words.append("eligible" if c.eligible else "not eligible")
    if c.version:
        words.append(f"version {c.version}")
    words.append(f"seen epoch {c.epoch_seen}")
    if c.led_epoch >= 0:
        words.append(f"led epoch {c.led_epoch}")
    return ", ".join(words)


def describe_leader(protocol: str, data: bytes) -> str:
    """``leader node-1 (epoch 7)`` or ``no leader (epoch 7)``"""
    a = decode(LeaderAssignment, data)
    who = f"leader {a.leader_name}" + (f" at {a.leader_address}" if a.leader_address else "")
    return f"{who if a.leader_id else 'no leader'} (epoch {a.epoch})"


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, election_member)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, PROTOCOL_NAME, elect)


@hookimpl
def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, PROTOCOL_NAME, elect_on_coordinator)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_candidate, assignment=describe_leader)


__all__ = [
    "LEADERSHIP",
    "PROTOCOL_NAME",
    "PROTOCOL_TYPE",
    "AsyncLeaderElection",
    "Candidate",
    "EpochFence",
    "LeaderAssignment",
    "LeaderElection",
    "LeaderInfo",
    "Leadership",
    "NotLeaderError",
    "StaleEpochError",
    "describe_candidate",
    "describe_leader",
    "elect",
    "elect_on_coordinator",
    "election_member",
    "rank",
]
