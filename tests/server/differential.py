"""Differential testing of the group protocols (classic, and KIP-848's consumer groups): the
same request sequence sent to an Apache Kafka 4 broker and to the embedded coordinator, their
answers compared field by field.

A scenario is a function of a :class:`Peer`: it opens one connection per member
(:meth:`Peer.member`), sends requests built with kafka-python's classes at explicit versions,
and records each answer (:meth:`Member.send` then :meth:`Member.answer`, or :meth:`Member.call`).
Requests that wait (a JoinGroup parked until the rebalance completes) are sent first and read
later, as real clients do. Each answer is reduced to the fields Kafka clients act on, with member
ids replaced by the names of the members they belong to (the two servers make ids differently)
and topic ids by the order in which the run first saw them, so two transcripts are equal exactly
when the servers behaved alike. What is allowed to differ is listed in ``ALLOWED``, each with its
reason.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from kafka.protocol.admin import (
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse

from coordinator_api._protocol import ErrorCode
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)

HOST: Final = "127.0.0.1"
TIMEOUT_S: Final = 30.0
# How far the waits of timed requests (a rebalance timeout, a session) may differ between the
# two servers: scheduling on a loaded machine, not behaviour.
TIMING_TOLERANCE_S: Final = 1.5

#: Differences between the two servers that are intended, not faults.
ALLOWED: Final = {
    "member id format": "Kafka makes '<client id>-<uuid>', the embedded coordinator too but from "
    "its own counter; transcripts name members by client instead",
    "held heartbeats": "the embedded coordinator may hold a Stable member's Heartbeat; the "
    "differential runs use heartbeat_hold_ms=0, Kafka's behaviour",
    "regular expressions": "a SubscribedTopicRegex that does not compile is refused by both, with "
    "the words of the regex engine after the colon: RE2/J's on Kafka, Python's re here; "
    "transcripts keep what comes before",
    "regex resolution": "Kafka resolves a new SubscribedTopicRegex in the background (the heartbeat "
    "that brings it gets the target the group has, a new group's empty one at epoch 1, and the "
    "matching partitions come with a later heartbeat) and looks for new topics that match at most "
    "every 10 s; the embedded coordinator resolves it at once, and a new topic at the next "
    "heartbeat. The differential's members subscribe by name (test_kip848_clients checks both)",
    "tie-breaks": "which of several equally placed members gets a partition follows the order in "
    "which the uniform assignor visits them: Kafka's that of a hash map of their member ids, the "
    "embedded coordinator's that of the ids; KIP-848's members here send ids that are in the same "
    "order both ways (ordered_member_id), so partitions are compared one by one",
    "next leader": "when a classic group's leader leaves, Kafka makes the first of the other "
    "members in its hash map's order of their member ids (random ones) the leader, the embedded "
    "coordinator the first of them to have joined; generated runs let a leader leave only when one "
    "member stays",
    "batched targets": "Kafka 4.3 computes a consumer group's target at most once a second by "
    "default (consumer.assignment.interval.ms, KIP-1263), this coordinator at once; the differential "
    "runs set the interval to 0 on Kafka for their groups",
}

RESPONSES: Final[dict[str, Any]] = {
    "JoinGroupRequest": JoinGroupResponse,
    "SyncGroupRequest": SyncGroupResponse,
    "HeartbeatRequest": HeartbeatResponse,
    "LeaveGroupRequest": LeaveGroupResponse,
    "OffsetCommitRequest": OffsetCommitResponse,
    "OffsetFetchRequest": OffsetFetchResponse,
    "DescribeGroupsRequest": DescribeGroupsResponse,
    "ListGroupsRequest": ListGroupsResponse,
    "DeleteGroupsRequest": DeleteGroupsResponse,
    "ConsumerGroupHeartbeatRequest": ConsumerGroupHeartbeatResponse,
    "ConsumerGroupDescribeRequest": ConsumerGroupDescribeResponse,
}


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return bytes(data)


@dataclass
class Transcript:
    """The answers of one run, member ids named by client."""

    ids: dict[str, str] = field(default_factory=dict)  # member id -> client name
    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    topic_ids: dict[str, str] = field(default_factory=dict)  # topic id -> "topic-1", ...

    def name(self, member_id: str) -> str:
        return self.ids.get(member_id, "" if not member_id else "<unknown id>")

    def topic(self, topic_id: object) -> str:
        return self.topic_ids.setdefault(str(topic_id), f"topic-{len(self.topic_ids) + 1}")

    def partitions(self, topic_partitions: Any) -> list[tuple[str, Any]]:
        """KIP-848's partitions by topic id, topics named by :meth:`topic`."""
        return sorted((self.topic(t.topic_id), sorted(t.partitions)) for t in topic_partitions)


def _java_hash_map_bucket(key: str) -> int:
    """The bucket of ``key`` in a Java ``HashMap`` of 16 buckets (up to 12 entries): its
    ``String.hashCode()``, spread as ``HashMap.hash`` does, masked to 16."""
    h = 0
    for c in key:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


def ordered_member_id(n: int) -> str:
    """The member id (22 characters, as KIP-1082's clients make) of a run's ``n``-th member.

    Kafka's uniform assignor visits a group's members in the order of a ``HashMap`` keyed by
    member id; the embedded coordinator's in the order of the ids. These ids are in the same
    order both ways among up to 12 of a run's first 15 members (a map of 16 buckets): the
    ``n``-th sorts ``n``-th and lands in the ``n``-th bucket. So both servers break the
    assignor's ties alike, and a run gives the same answers every time it is replayed
    (``ALLOWED["tie-breaks"]``)."""
    candidates = (f"m{n:03d}-{filler:017d}" for filler in itertools.count())
    return next(c for c in candidates if _java_hash_map_bucket(c) == n % 16)


class Member:
    """One client's connection to the group coordinator."""

    def __init__(self, peer: Peer, client: str, coordinator: tuple[str, int]) -> None:
        self.peer = peer
        self.client = client
        self.member_id = ""
        #: What KIP-848's clients send (KIP-1082: they make their own member ids).
        self.own_member_id = ordered_member_id(len(peer.members) + 1)
        peer.transcript.ids[self.own_member_id] = client
        self.sock = socket.create_connection(coordinator, timeout=TIMEOUT_S)
        self._correlation = 0
        # correlation -> (label, class, version, sent at, whether the wait is compared)
        self._waiting: dict[int, tuple[str, Any, int, float, bool]] = {}

    def send(self, label: str, request: Any, *, timed: bool = False) -> int:
        """Send ``request`` (built at its version); read its answer with :meth:`answer`. A
        ``timed`` request's wait for its answer is compared too (within ``TIMING_TOLERANCE_S``):
        one that waits for a rebalance or a session timeout."""
        self._correlation += 1
        request.with_header(correlation_id=self._correlation, client_id=self.client)
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        response_class = RESPONSES[type(request).__name__.split("_")[0]]
        self._waiting[self._correlation] = (
            label,
            response_class,
            request.API_VERSION,
            time.monotonic(),
            timed,
        )
        return self._correlation

    def answer(self, correlation: int) -> Any:
        """Read the answer to the request ``correlation`` and record it in the transcript."""
        label, response_class, version, sent_at, timed = self._waiting.pop(correlation)
        (size,) = struct.unpack(">i", _recv_exact(self.sock, 4))
        response = response_class.decode(_recv_exact(self.sock, size), version=version, header=True)
        assert response.header.correlation_id == correlation, (label, response)
        self.peer.record(self, label, response)
        if timed:
            self.peer.transcript.steps[-1][1]["waited_s"] = time.monotonic() - sent_at
        return response

    def call(self, label: str, request: Any) -> Any:
        return self.answer(self.send(label, request))

    def close(self) -> None:
        self.sock.close()


class Peer:
    """One server under test: where its group coordinator is, and the transcript of a run."""

    def __init__(self, kind: str, bootstrap: str, group_id: str) -> None:
        self.kind = kind
        self.group_id = group_id
        self.transcript = Transcript()
        self.members: list[Member] = []
        host, port = bootstrap.split(",", maxsplit=1)[0].rsplit(":", 1)
        self.bootstrap = (host, int(port))
        self.coordinator = _find_coordinator(self.bootstrap, group_id)

    def member(self, client: str, *, coordinator_of: str | None = None) -> Member:
        """A client connected to the group's coordinator (or to ``coordinator_of``'s: on a
        Kafka cluster, another group may have another coordinator)."""
        address = (
            self.coordinator if coordinator_of is None else _find_coordinator(self.bootstrap, coordinator_of)
        )
        member = Member(self, client, address)
        self.members.append(member)
        return member

    def wait_for_state(self, state: str) -> None:
        """Wait, outside the transcript, until the group is in ``state``: a request sent on
        another connection has been taken in (a JoinGroup that waits shows no answer)."""
        deadline = time.monotonic() + TIMEOUT_S
        with socket.create_connection(self.coordinator, timeout=TIMEOUT_S) as sock:
            while True:
                request = DescribeGroupsRequest(
                    version=5, groups=[self.group_id], include_authorized_operations=False
                )
                request.with_header(correlation_id=1, client_id="differential")
                sock.sendall(bytes(request.encode(header=True, framed=True)))
                (size,) = struct.unpack(">i", _recv_exact(sock, 4))
                response = DescribeGroupsResponse.decode(_recv_exact(sock, size), version=5, header=True)
                if response.groups[0].group_state == state:
                    return
                assert time.monotonic() < deadline, f"{self.group_id} never reached {state}"
                time.sleep(0.02)

    def close(self) -> None:
        for member in self.members:
            member.close()

    def record(self, member: Member, label: str, response: Any) -> None:
        t = self.transcript
        name = type(response).__name__
        fields: dict[str, Any] = {"error": getattr(response, "error_code", None)}
        if name.startswith("JoinGroupResponse"):
            if response.member_id and response.member_id not in t.ids:
                t.ids[response.member_id] = member.client
            if response.member_id:
                member.member_id = response.member_id
            fields.update(
                generation=response.generation_id,
                protocol=(response.protocol_type, response.protocol_name),
                leader=t.name(response.leader),
                member=t.name(response.member_id),
                skip_assignment=getattr(response, "skip_assignment", False),
                members=sorted(
                    (t.name(m.member_id), m.group_instance_id, bytes(m.metadata)) for m in response.members
                ),
            )
        elif name.startswith("SyncGroupResponse"):
            fields.update(
                protocol=(getattr(response, "protocol_type", None), getattr(response, "protocol_name", None)),
                assignment=bytes(response.assignment),
            )
        elif name.startswith("LeaveGroupResponse"):
            fields["members"] = sorted(
                (t.name(m.member_id), m.group_instance_id, m.error_code)
                for m in getattr(response, "members", [])
            )
        elif name.startswith("OffsetCommitResponse"):
            errors = [
                (topic.name, p.partition_index, p.error_code)
                for topic in response.topics
                for p in topic.partitions
            ]
            fields = {"errors": sorted(errors)}
        elif name.startswith("OffsetFetchResponse"):  # v8+: one group
            (group,) = response.groups
            fields = {
                "error": group.error_code,
                "offsets": sorted(
                    (topic.name, p.partition_index, p.committed_offset, p.error_code)
                    for topic in group.topics
                    for p in topic.partitions
                ),
            }
        elif name.startswith("DescribeGroupsResponse"):
            (group,) = response.groups
            fields = {
                "error": group.error_code,
                "message": (getattr(group, "error_message", None) or "").replace(
                    self.group_id, "<group>"
                ),  # v6
                "state": group.group_state,
                "protocol": (group.protocol_type, group.protocol_data),
                "members": sorted(
                    (
                        t.name(m.member_id),
                        m.group_instance_id,
                        bytes(m.member_metadata),
                        bytes(m.member_assignment),
                    )
                    for m in group.members
                ),
            }
        elif name.startswith("ListGroupsResponse"):  # only this run's groups: others share Kafka
            fields["groups"] = sorted(
                (
                    g.group_id.replace(self.group_id, "<group>"),
                    g.protocol_type,
                    getattr(g, "group_state", None),
                )
                for g in response.groups
                if g.group_id.startswith(self.group_id)
            )
        elif name.startswith("ConsumerGroupHeartbeatResponse"):
            message = (response.error_message or "").replace(self.group_id, "<group>")
            for member_id, client in t.ids.items():
                message = message.replace(member_id, client)
            if response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION:
                message = message.split(": ", 1)[0]
            fields.update(
                message=message,
                member=t.name(response.member_id or ""),
                epoch=response.member_epoch,
                interval_ms=response.heartbeat_interval_ms,
                assignment=None
                if response.assignment is None
                else t.partitions(response.assignment.topic_partitions),
            )
        elif name.startswith("ConsumerGroupDescribeResponse"):
            (group,) = response.groups
            fields = {
                "error": group.error_code,
                "message": (group.error_message or "").replace(self.group_id, "<group>"),
                "state": group.group_state,
                "epochs": (group.group_epoch, group.assignment_epoch),
                "assignor": group.assignor_name,
                "members": sorted(
                    (
                        t.name(m.member_id),
                        m.instance_id,
                        m.member_epoch,
                        sorted(m.subscribed_topic_names),
                        t.partitions(m.assignment.topic_partitions),
                        t.partitions(m.target_assignment.topic_partitions),
                    )
                    for m in group.members
                ),
            }
        elif name.startswith("DeleteGroupsResponse"):
            fields = {
                "results": sorted(
                    (r.group_id.replace(self.group_id, "<group>"), r.error_code) for r in response.results
                )
            }
        t.steps.append((label, fields))


def owned(answer: Any) -> list[Any]:
    """The partitions a ConsumerGroupHeartbeat ``answer`` assigned, as the member lists them
    back in its next heartbeat."""
    return [
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=t.topic_id, partitions=list(t.partitions))
        for t in answer.assignment.topic_partitions
    ]


def _find_coordinator(address: tuple[str, int], group_id: str) -> tuple[str, int]:
    """The group's coordinator, asked of any broker (Kafka may not have it loaded at once)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        with socket.create_connection(address, timeout=TIMEOUT_S) as sock:
            request = FindCoordinatorRequest(version=3, key=group_id, key_type=0)
            request.with_header(correlation_id=1, client_id="differential")
            sock.sendall(bytes(request.encode(header=True, framed=True)))
            (size,) = struct.unpack(">i", _recv_exact(sock, 4))
            response = FindCoordinatorResponse.decode(_recv_exact(sock, size), version=3, header=True)
        if response.error_code == 0:
            return response.host, response.port
        assert time.monotonic() < deadline, f"no coordinator for {group_id}: {response}"
        time.sleep(0.2)


def run(
    kind: str,
    bootstrap: str,
    scenario: Callable[[Peer], None],
    before: Callable[[str], None] | None = None,
) -> Transcript:
    """Run ``scenario`` against one server, in a group of its own (``before`` is given its id
    first); return its transcript."""
    peer = Peer(kind, bootstrap, f"differential-{scenario.__name__}-{uuid.uuid4().hex[:8]}")
    if before is not None:
        before(peer.group_id)
    try:
        scenario(peer)
    finally:
        peer.close()
    return peer.transcript


def differences(kafka: Transcript, embedded: Transcript) -> list[str]:
    """Each step at which the two transcripts differ, in words."""
    found = []
    for i, ((label_k, k), (label_e, e)) in enumerate(zip(kafka.steps, embedded.steps, strict=False)):
        assert label_k == label_e, (i, label_k, label_e)
        for key in sorted(set(k) | set(e)):
            if key == "waited_s" and key in k and key in e:
                if abs(k[key] - e[key]) > TIMING_TOLERANCE_S:
                    found.append(
                        f"step {i} {label_k}: waited {k[key]:.2f} s on Kafka, {e[key]:.2f} s embedded"
                    )
            elif k.get(key) != e.get(key):
                found.append(f"step {i} {label_k}: {key}: Kafka {k.get(key)!r}, embedded {e.get(key)!r}")
    if len(kafka.steps) != len(embedded.steps):
        found.append(
            f"Kafka answered {len(kafka.steps)} requests, the embedded coordinator {len(embedded.steps)}"
        )
    return found
