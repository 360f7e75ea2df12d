"""A scenario driver for the sans-IO :class:`GroupCoordinator`: a fake clock, numbered request
refs and one-line helpers per request, so state-machine tests read like Kafka client scenarios.

Every reply the coordinator produces is recorded by ref; a second reply to one ref, or a reply
to a ref that was never sent, fails the test at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator_api._plugins._registry import ClassicPayloads
from coordinator_api._protocol import ErrorCode
from coordinator_api.server._config import CoordinatorConfig
from coordinator_api.server._messages import (
    CommittedOffset,
    CreateTopics,
    CreateTopicsResult,
    DeleteGroups,
    DeleteGroupsResult,
    DescribedGroup,
    DescribeGroups,
    Effects,
    FetchedOffset,
    GroupState,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeavingMember,
    ListGroups,
    ListGroupsResult,
    MembershipEvent,
    NewTopic,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
    OffsetFetch,
    OffsetFetchResult,
    Request,
    Result,
    StoreWrite,
    SyncGroup,
    SyncGroupResult,
)
from coordinator_api.server._state import GroupCoordinator

GROUP = "g"
SESSION_MS = 10_000
REBALANCE_MS = 60_000
RANGE = (("range", b"range-meta"),)


def protocols_for(name: str, *names: str) -> tuple[tuple[str, bytes], ...]:
    """Protocols in preference order, each with metadata naming the protocol and the member."""
    return tuple((protocol, f"{protocol}:{name}".encode()) for protocol in names)


@dataclass
class Formed:
    """A group brought to Stable by :meth:`Driver.form_group`."""

    generation: int
    leader: str
    ids: dict[str, str]  # client name -> member id
    assignments: dict[str, bytes]  # member id -> assignment
    join_results: dict[str, JoinGroupResult] = field(default_factory=dict)  # client name -> result

    def followers(self) -> list[str]:
        return [m for m in self.ids.values() if m != self.leader]


class Driver:
    """Runs a :class:`GroupCoordinator` on a fake clock (``now``, in ms); ``classic_payloads``
    reads the consumer protocol's metadata (the consumer plugin's), as the server has it."""

    def __init__(self, *, classic_payloads: ClassicPayloads | None = None, **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 3000)
        # Heartbeats are answered at once unless a test is about holding them.
        config.setdefault("heartbeat_hold_ms", 0)
        self.config = CoordinatorConfig(**config)
        self._member_seq = itertools.count(1)
        self._topic_seq = itertools.count(1)
        self.coordinator = GroupCoordinator(
            self.config,
            member_id_factory=lambda prefix: f"{prefix}-{next(self._member_seq)}",
            topic_id_factory=lambda: next(self._topic_seq).to_bytes(16, "big"),
            classic_payloads=classic_payloads,
        )
        self.now = 0
        self._ref_seq = itertools.count(1)
        self.sent: dict[int, Request] = {}
        self.replies: dict[int, Result] = {}
        self.abandoned: set[int] = set()
        self.writes: list[StoreWrite] = []
        self.events: list[MembershipEvent] = []

    # --- plumbing -----------------------------------------------------------------------

    def absorb(self, fx: Effects) -> list[tuple[int, Result]]:
        delivered = []
        for ref, result in fx.replies:
            if ref is None:  # create_topic() answers no request
                continue
            assert ref in self.sent, f"reply to ref {ref!r} that was never sent: {result}"
            assert ref not in self.replies, (
                f"second reply to ref {ref}: first {self.replies[ref]}, then {result}"
            )
            assert ref not in self.abandoned, f"reply to abandoned ref {ref}: {result}"
            self.replies[ref] = result
            delivered.append((ref, result))
        self.writes.extend(fx.writes)
        self.events.extend(fx.events)
        return delivered

    def send(self, request: Request) -> int:
        ref = next(self._ref_seq)
        self.sent[ref] = request
        # As the server takes a request: a steady heartbeat answered by renew, the rest by handle.
        renewed = self.coordinator.renew(request, self.now)
        if renewed is not None:
            self.absorb(Effects(replies=[(ref, renewed)]))
        else:
            self.absorb(self.coordinator.handle(ref, request, self.now))
        return ref

    def release(self, ref: int) -> list[tuple[int, Result]]:
        """The client behind ``ref`` sent another request on the same connection."""
        return self.absorb(self.coordinator.release(ref, self.now))

    def reply(self, ref: int) -> Any:
        return self.replies.get(ref)

    def call(self, request: Request) -> Any:
        return self.reply(self.send(request))

    def outstanding(self) -> set[int]:
        return set(self.sent) - set(self.replies) - self.abandoned

    def advance(self, ms: int) -> list[tuple[int, Result]]:
        """Move the clock ``ms`` forward, firing timers at their deadlines as the shell does."""
        return self.advance_to(self.now + ms)

    def advance_to(self, t: int) -> list[tuple[int, Result]]:
        assert t >= self.now
        delivered = []
        for _ in range(100_000):
            deadline = self.coordinator.next_deadline()
            if deadline is None or deadline > t:
                break
            self.now = max(self.now, deadline)
            delivered += self.absorb(self.coordinator.expire(self.now))
        else:  # pragma: no cover - only on a timer loop
            raise AssertionError("timers keep firing without time passing")
        self.now = t
        delivered += self.absorb(self.coordinator.expire(t))
        return delivered

    def abandon(self, ref: int) -> None:
        self.abandoned.add(ref)
        self.absorb(self.coordinator.abandon(ref, self.now))

    def writes_of(self, kind: type) -> list[Any]:
        return [w for w in self.writes if isinstance(w, kind)]

    def events_of(self, kind: str) -> list[MembershipEvent]:
        return [e for e in self.events if e.kind == kind]

    # --- group membership ---------------------------------------------------------------

    def join_ref(
        self,
        member_id: str = "",
        *,
        group: str = GROUP,
        instance: str | None = None,
        client: str = "c",
        protocols: tuple[tuple[str, bytes], ...] = RANGE,
        protocol_type: str = "consumer",
        session: int = SESSION_MS,
        rebalance: int = REBALANCE_MS,
        version_requires_known_id: bool = True,
        skip_assignment_supported: bool = True,
    ) -> int:
        return self.send(
            JoinGroup(
                group_id=group,
                member_id=member_id,
                group_instance_id=instance,
                client_id=client,
                client_host="/127.0.0.1",
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                protocol_type=protocol_type,
                protocols=protocols,
                require_known_member_id=version_requires_known_id,
                skip_assignment_supported=skip_assignment_supported,
            )
        )

    def join(self, member_id: str = "", **kwargs: Any) -> JoinGroupResult | None:
        """The JoinGroup reply, or None while the request is parked."""
        return self.reply(self.join_ref(member_id, **kwargs))

    def new_member_id(self, **kwargs: Any) -> str:
        """KIP-394's first round trip: a JoinGroup with no member id, answered with the id to use."""
        result = self.join("", **kwargs)
        assert result is not None
        assert result.error is ErrorCode.MEMBER_ID_REQUIRED, result
        assert result.member_id
        return result.member_id

    def sync_ref(
        self,
        member_id: str,
        generation: int,
        *,
        group: str = GROUP,
        instance: str | None = None,
        assignments: Mapping[str, bytes] | None = None,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
    ) -> int:
        return self.send(
            SyncGroup(
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                protocol_type=protocol_type,
                protocol_name=protocol_name,
                assignments=tuple((assignments or {}).items()),
            )
        )

    def sync(self, member_id: str, generation: int, **kwargs: Any) -> SyncGroupResult | None:
        return self.reply(self.sync_ref(member_id, generation, **kwargs))

    def heartbeat(
        self, member_id: str, generation: int, *, group: str = GROUP, instance: str | None = None
    ) -> ErrorCode:
        result = self.call(
            Heartbeat(
                group_id=group, generation_id=generation, member_id=member_id, group_instance_id=instance
            )
        )
        assert isinstance(result, HeartbeatResult)
        return result.error

    def leave(self, *members: str | tuple[str, str | None], group: str = GROUP) -> LeaveGroupResult:
        leaving = []
        for m in members:
            member_id, instance = (m, None) if isinstance(m, str) else m
            leaving.append(LeavingMember(member_id=member_id, group_instance_id=instance))
        result = self.call(LeaveGroup(group_id=group, members=tuple(leaving)))
        assert isinstance(result, LeaveGroupResult)
        return result

    # --- offsets ----------------------------------------------------------------------------

    def commit(
        self,
        member_id: str,
        generation: int,
        offsets: Mapping[tuple[str, int], int] | Iterable[CommittedOffset],
        *,
        group: str = GROUP,
        instance: str | None = None,
        version: int = 9,
        retention_ms: int = -1,
    ) -> dict[tuple[str, int], ErrorCode]:
        if isinstance(offsets, Mapping):
            committed = tuple(
                CommittedOffset(topic=t, partition=p, offset=o, metadata="") for (t, p), o in offsets.items()
            )
        else:
            committed = tuple(offsets)
        result = self.call(
            OffsetCommit(
                group_id=group,
                generation_id=generation,
                member_id=member_id,
                group_instance_id=instance,
                offsets=committed,
                version=version,
                retention_ms=retention_ms,
            )
        )
        assert isinstance(result, OffsetCommitResult)
        errors = {(t, p): e for t, p, e in result.errors}
        assert len(errors) == len(committed)
        return errors

    def fetch(
        self, partitions: Iterable[tuple[str, int]] | None = None, *, group: str = GROUP
    ) -> OffsetFetchResult:
        result = self.call(
            OffsetFetch(group_id=group, partitions=None if partitions is None else tuple(partitions))
        )
        assert isinstance(result, OffsetFetchResult)
        return result

    def fetched(
        self, partitions: Iterable[tuple[str, int]] | None = None, *, group: str = GROUP
    ) -> dict[tuple[str, int], FetchedOffset]:
        result = self.fetch(partitions, group=group)
        assert result.error is ErrorCode.NONE
        return {(o.topic, o.partition): o for o in result.offsets}

    def delete_offsets(
        self, partitions: Iterable[tuple[str, int]], *, group: str = GROUP
    ) -> OffsetDeleteResult:
        result = self.call(OffsetDelete(group_id=group, partitions=tuple(partitions)))
        assert isinstance(result, OffsetDeleteResult)
        return result

    # --- administration ------------------------------------------------------------------------

    def describe(self, group: str = GROUP) -> DescribedGroup:
        (described,) = self.call(DescribeGroups(group_ids=(group,))).groups
        assert described.group_id == group
        return described

    def member_ids(self, group: str = GROUP) -> set[str]:
        return {m.member_id for m in self.describe(group).members}

    def state(self, group: str = GROUP) -> GroupState:
        return self.coordinator.group_state(group)

    def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> ListGroupsResult:
        return self.call(ListGroups(states=frozenset(states), types=frozenset(types)))

    def delete_groups(self, *group_ids: str) -> DeleteGroupsResult:
        return self.call(DeleteGroups(group_ids=group_ids))

    def create_topics(self, *topics: tuple[str, int, int], validate_only: bool = False) -> CreateTopicsResult:
        request = CreateTopics(
            topics=tuple(NewTopic(name=n, num_partitions=p, replication_factor=r) for n, p, r in topics),
            validate_only=validate_only,
        )
        return self.call(request)

    # --- scenarios -------------------------------------------------------------------------------

    def form_group(
        self,
        clients: Iterable[str],
        *,
        group: str = GROUP,
        static: bool = False,
        protocols: Mapping[str, tuple[tuple[str, bytes], ...]] | None = None,
        session: int = SESSION_MS,
        rebalance: int = REBALANCE_MS,
    ) -> Formed:
        """Join every client (KIP-394 round trip for dynamic ones), complete the rebalance, have
        the leader assign ``<member id>-assignment`` to each member and every member sync."""
        clients = list(clients)
        protocols = protocols or {}

        def kwargs(name: str) -> dict[str, Any]:
            return {
                "group": group,
                "client": name,
                "instance": name if static else None,
                "protocols": protocols.get(name, RANGE),
                "session": session,
                "rebalance": rebalance,
            }

        refs = {}
        for name in clients:
            member_id = "" if static else self.new_member_id(**kwargs(name))
            refs[name] = self.join_ref(member_id, **kwargs(name))
        for _ in range(20):
            if self.state(group) is GroupState.COMPLETING_REBALANCE and all(
                self.reply(r) is not None for r in refs.values()
            ):
                break
            for name, ref in refs.items():
                result = self.reply(ref)
                if result is not None:
                    # Answered by an earlier generation (initial delay 0): rejoin for this one.
                    assert result.error is ErrorCode.NONE, result
                    refs[name] = self.join_ref(result.member_id, **kwargs(name))
            deadline = self.coordinator.next_deadline()
            if self.state(group) is GroupState.PREPARING_REBALANCE and deadline is not None:
                self.advance_to(deadline)
        results = {name: self.reply(ref) for name, ref in refs.items()}
        assert all(r is not None and r.error is ErrorCode.NONE for r in results.values()), results
        generations = {r.generation_id for r in results.values()}
        assert len(generations) == 1, results
        (generation,) = generations
        leaders = {r.leader for r in results.values()}
        assert len(leaders) == 1, results
        (leader,) = leaders
        ids = {name: r.member_id for name, r in results.items()}
        assignments = {m: f"{m}-assignment".encode() for m in ids.values()}
        sync_refs = {
            name: self.sync_ref(
                ids[name],
                generation,
                group=group,
                instance=name if static else None,
                assignments=assignments if ids[name] == leader else None,
            )
            for name in sorted(ids, key=lambda n: ids[n] == leader)  # leader last
        }
        for name, ref in sync_refs.items():
            result = self.reply(ref)
            assert result is not None, f"{name}'s SyncGroup was not answered"
            assert result.error is ErrorCode.NONE, result
            assert result.assignment == assignments[ids[name]]
        assert self.state(group) is GroupState.STABLE
        return Formed(
            generation=generation, leader=leader, ids=ids, assignments=assignments, join_results=results
        )
