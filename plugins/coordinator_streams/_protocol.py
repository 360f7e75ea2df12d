"""The streams protocol's payloads: member metadata (subscription) and assignment, versioned.

Both are :func:`coordinator_api.payload` classes, so later releases append fields and members of
mixed releases keep rebalancing (ARCHITECTURE rule 6). Task ids travel as ``(subtopology,
partition)`` pairs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from coordinator_api import JoinedMember, PayloadError, decode, decode_members, encode, payload
from coordinator_streams._model import ClientState, MemberTasks, Task, TaskId

PROTOCOL_TYPE: Final = "streams"
"""The protocol type of Streams-style groups."""

__all__ = [
    "StreamsAssignmentPayload",
    "StreamsSubscription",
    "decode_assignment",
    "decode_subscriptions",
    "describe_assignment",
    "describe_subscription",
    "encode_assignment",
    "encode_subscription",
]

_Pair = tuple[int, int]


@payload(version=1)
@dataclass(frozen=True)
class StreamsSubscription:
    """What a member sends in JoinGroup (version 1)."""

    process_id: str
    capacity: int
    rack: str | None
    client_tags: dict[str, str]
    stateful_tasks: frozenset[_Pair]
    stateless_tasks: frozenset[_Pair]
    task_lags: dict[_Pair, int]
    previous_active: frozenset[_Pair]
    previous_standby: frozenset[_Pair]


@payload(version=1)
@dataclass(frozen=True)
class StreamsAssignmentPayload:
    """What a member receives in SyncGroup (version 1).

    ``next_probing_rebalance_ms`` is a wall-clock time (ms since the epoch) at which this member
    should rejoin to probe whether warmups caught up, or -1; the leader sets it on one member.
    """

    active: frozenset[_Pair]
    standby: frozenset[_Pair]
    warmup: frozenset[_Pair]
    next_probing_rebalance_ms: int = -1


def _pairs(tasks: Iterable[TaskId]) -> frozenset[_Pair]:
    return frozenset((t.subtopology, t.partition) for t in tasks)


def _ids(pairs: Iterable[_Pair]) -> frozenset[TaskId]:
    return frozenset(TaskId(s, p) for s, p in pairs)


def encode_subscription(client: ClientState, tasks: Sequence[Task]) -> bytes:
    """A member's metadata: ``client`` (its member id is not sent) and the tasks it declares."""
    return encode(
        StreamsSubscription(
            process_id=client.process_id,
            capacity=client.capacity,
            rack=client.rack,
            client_tags=dict(client.client_tags),
            stateful_tasks=_pairs(t.id for t in tasks if t.stateful),
            stateless_tasks=_pairs(t.id for t in tasks if not t.stateful),
            task_lags={(t.subtopology, t.partition): lag for t, lag in client.lags.items()},
            previous_active=_pairs(client.previous_active),
            previous_standby=_pairs(client.previous_standby),
        )
    )


def _client(member_id: str, s: StreamsSubscription) -> ClientState:
    return ClientState(
        member_id=member_id,
        process_id=s.process_id,
        capacity=s.capacity,
        rack=s.rack,
        client_tags=s.client_tags,
        lags={TaskId(*pair): lag for pair, lag in s.task_lags.items()},
        previous_active=_ids(s.previous_active),
        previous_standby=_ids(s.previous_standby),
    )


def decode_subscriptions(
    members: Sequence[JoinedMember],
) -> tuple[list[ClientState], list[Task], dict[str, PayloadError]]:
    """The leader's view of a generation: each decodable member as a :class:`ClientState`, the
    union of the tasks they declare (stateful if any member says so), and the error for each
    member whose metadata does not decode (it gets nothing)."""
    decoded, failed = decode_members(StreamsSubscription, members)
    clients = [_client(member_id, s) for member_id, s in sorted(decoded.items())]
    stateful = set().union(*(s.stateful_tasks for s in decoded.values()))
    stateless = set().union(*(s.stateless_tasks for s in decoded.values())) - stateful
    tasks = [Task(TaskId(*p), True) for p in sorted(stateful)] + [
        Task(TaskId(*p), False) for p in sorted(stateless)
    ]
    return clients, tasks, failed


def encode_assignment(tasks: MemberTasks, next_probing_rebalance_ms: int = -1) -> bytes:
    """A member's assignment bytes."""
    return encode(
        StreamsAssignmentPayload(
            _pairs(tasks.active), _pairs(tasks.standby), _pairs(tasks.warmup), next_probing_rebalance_ms
        )
    )


def decode_assignment(data: bytes) -> tuple[MemberTasks, int]:
    """``(tasks, next_probing_rebalance_ms)`` from assignment bytes; empty bytes (a member the
    leader could not read) are an empty assignment.

    :raises PayloadError: the bytes are not a streams assignment.
    """
    if not data:
        return MemberTasks(), -1
    a = decode(StreamsAssignmentPayload, data)
    return MemberTasks(_ids(a.active), _ids(a.standby), _ids(a.warmup)), a.next_probing_rebalance_ms


def _tasks(tasks: Iterable[TaskId]) -> str:
    return ", ".join(str(t) for t in sorted(tasks)) or "none"


def describe_subscription(protocol: str, data: bytes) -> str:
    """``process p1, 2 threads, rack r1; ran 0_0, 0_1; standby 0_2; lags 0_3=120``"""
    s = decode(StreamsSubscription, data)
    words = [f"process {s.process_id or '?'}, {s.capacity} thread{'s' if s.capacity != 1 else ''}"]
    if s.rack:
        words[0] += f", rack {s.rack}"
    words.append(f"ran {_tasks(_ids(s.previous_active))}")
    if s.previous_standby:
        words.append(f"standby {_tasks(_ids(s.previous_standby))}")
    lags: Mapping[TaskId, int] = {TaskId(*p): lag for p, lag in s.task_lags.items()}
    if lags:
        words.append("lags " + ", ".join(f"{t}={lags[t]}" for t in sorted(lags)))
    return "; ".join(words)


def describe_assignment(protocol: str, data: bytes) -> str:
    """``active 0_0, 0_1; standby 0_2; warmup 0_3; probing rebalance at 1700000000000``"""
    tasks, probe = decode_assignment(data)
    words = [f"active {_tasks(tasks.active)}"]
    if tasks.standby:
        words.append(f"standby {_tasks(tasks.standby)}")
    if tasks.warmup:
        words.append(f"warmup {_tasks(tasks.warmup)}")
    if probe >= 0:
        words.append(f"probing rebalance at {probe}")
    return "; ".join(words)
