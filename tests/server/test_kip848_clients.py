"""Real KIP-848 clients against the embedded coordinator's consumer groups, and against Kafka 4.

Every member is a real process on 127.0.0.1 (tests/server/kafka_member.py): librdkafka
(confluent-kafka, ``group.protocol=consumer``) and Apache Kafka's Java ``KafkaConsumer``
(JavaMember.java, ``--group-protocol consumer``), alone and mixed in one group. Each member reports
its ownership from inside its rebalance callbacks; the coordinator's view comes from
ConsumerGroupDescribe (api key 69) over a raw connection, which Kafka's brokers answer too, so the
same checks run against both; the embedded coordinator's membership log names who left, expired
or rejoined. What is shown:

* join, scale out (only the partitions that move are revoked, incrementally), SIGKILL (the
  member's partitions move once its session ends, not before) and SIGTERM (the member leaves at
  once); the same scenario on a 3-broker Apache Kafka 4 cluster for parity;
* static members (``group.instance.id``) that close and come back within the session get their
  partitions back without a new group epoch;
* regular expressions evaluated by the coordinator, including a topic created later;
* a member that never revokes (SIGSTOPped) stalls only the partitions it must give up; the others
  keep theirs and the newcomer gets what is free; then it expires and its partitions move;
* classic and incremental groups on one coordinator at once, neither disturbing the other;
* Metadata by topic id with the name left "" (how Java's consumer resolves the topics a
  broker-side regex brought it) is answered by id, as Kafka does.

Safety (a partition never has two owners, by the members' own timestamped reports) is asserted
exactly; liveness waits are generous, since the machine is small and shared.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import differential
import pytest
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.protocol.admin import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka_tools import consumer_groups, table
from member_processes import (
    MemberProcess,
    overlapping_ownership,
    owned_exactly_once,
    running_members,
    wait_for,
)

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, GroupJoinError
from coordinator_api._inspect import describe_group, group_configs, render_group
from coordinator_api._plugins import PluginRegistry
from coordinator_api.server import MembershipRecorder, recording_membership
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from coordinator_api.testing import KafkaCluster

TopicPartition = tuple[str, int]

PARTITIONS = 12
SESSION_MS = 3000  # group.consumer.session.timeout.ms: set by the coordinator, not the client
INTERVAL_MS = 400  # group.consumer.heartbeat.interval.ms
SETTLE_S = 90  # JVMs start slowly on two loaded cores
UNKNOWN_TOPIC_ID = 100
# Member processes stamp their reports with time.time(), the membership log with time.monotonic().
WALL_MINUS_MONOTONIC = time.time() - time.monotonic()
# The coordinator logs a membership event after sending the replies it caused, so a member may
# report what an expiry gave it a fraction of a millisecond before the expiry's log time.
EVENT_LOG_LAG_S = 0.05


def kip848_config(session_ms: int = SESSION_MS) -> CoordinatorConfig:
    return CoordinatorConfig(
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=500,
        consumer_group_session_timeout_ms=session_ms,
        consumer_group_heartbeat_interval_ms=INTERVAL_MS,
    )


@pytest.fixture
def membership() -> Iterator[MembershipRecorder]:
    with recording_membership() as recorder:
        yield recorder


def start(bootstrap: str, group: str, client: str, name: str, **options: Any) -> MemberProcess:
    """A member of the incremental protocol (``client`` is "confluent", "java" or "ours")."""
    return MemberProcess(client, bootstrap, name, group=group, group_protocol="consumer", **options)


# --- the members' own view -----------------------------------------------------------------


def held(member: MemberProcess) -> frozenset[TopicPartition]:
    """What the member owns now, by its reports (topic and partition: regexes span topics)."""
    owned: set[TopicPartition] = set()
    for report in list(member.reports):
        changed = {(t, p) for t, p in report.get("topic_partitions", ())}
        if report.get("event") == "assigned":
            owned |= changed
        elif report.get("event") in ("revoked", "lost"):
            owned -= changed
    return frozenset(owned)


def marks(members: Iterable[MemberProcess]) -> dict[str, int]:
    """Where each member's reports stand now, for :func:`moves`."""
    return {m.name: len(m.reports) for m in members}


def moves(
    member: MemberProcess, since: dict[str, int]
) -> tuple[frozenset[TopicPartition], frozenset[TopicPartition]]:
    """(gained, given up): the partitions the member reported assigned, and revoked or lost,
    after ``since`` was taken."""
    gained: set[TopicPartition] = set()
    given: set[TopicPartition] = set()
    for report in member.reports[since.get(member.name, 0) :]:
        changed = {(t, p) for t, p in report.get("topic_partitions", ())}
        if report.get("event") == "assigned":
            gained |= changed
        elif report.get("event") in ("revoked", "lost"):
            given |= changed
    return frozenset(gained), frozenset(given)


def acquired_at(
    member: MemberProcess, partitions: frozenset[TopicPartition], since: dict[str, int]
) -> list[float]:
    """When the member reported being assigned any of ``partitions`` after ``since``."""
    return [
        r["t"]
        for r in member.reports[since.get(member.name, 0) :]
        if r.get("event") == "assigned" and partitions & {(t, p) for t, p in r["topic_partitions"]}
    ]


def overlaps_by_topic(members: Iterable[MemberProcess]) -> list[str]:
    """:func:`overlapping_ownership` for members of several topics (it keys by partition only)."""
    spans: dict[TopicPartition, list[tuple[float, float, str]]] = {}
    for member in members:
        since: dict[TopicPartition, float] = {}
        for report in member.reports:
            changed = [(t, p) for t, p in report.get("topic_partitions", ())]
            if report.get("event") == "assigned":
                for tp in changed:
                    since.setdefault(tp, report["t"])
            elif report.get("event") in ("revoked", "lost"):
                for tp in changed:
                    if tp in since:
                        spans.setdefault(tp, []).append((since.pop(tp), report["t"], member.name))
        for tp, begun in since.items():
            spans.setdefault(tp, []).append((begun, member.ended_at, member.name))
    problems = []
    for tp, intervals in spans.items():
        intervals.sort()
        for (_, end, first), (begin, _, second) in itertools.pairwise(intervals):
            if begin < end and first != second:
                problems.append(f"{tp}: {first} until {end:.3f}, {second} from {begin:.3f}")
    return problems


# --- the coordinator's view (ConsumerGroupDescribe, which Kafka's brokers answer as well) ----


def _call(address: str, request: Any, response_cls: Any, version: int) -> Any:
    host, port = address.rsplit(":", 1)
    request.with_header(correlation_id=1, client_id="kip848-probe")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = int.from_bytes(_recv(sock, 4), "big")
        return response_cls.decode(_recv(sock, size), version=version, header=True)


def _recv(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        data += chunk
    return bytes(data)


def heartbeat(address: str, group: str, member_id: str, epoch: int, **fields: Any) -> Any:
    """A ConsumerGroupHeartbeat (v1) of ``member_id`` at ``epoch``, sent to ``address``, and its
    answer, which must carry no error."""
    request = ConsumerGroupHeartbeatRequest(
        version=1, group_id=group, member_id=member_id, member_epoch=epoch, **fields
    )
    answer = _call(address, request, ConsumerGroupHeartbeatResponse, 1)
    assert answer.error_code == 0, answer
    return answer


def partitions_given(answer: Any) -> int | None:
    """How many partitions a ConsumerGroupHeartbeat ``answer`` assigned; None if it says nothing."""
    if answer.assignment is None:
        return None
    return sum(len(t.partitions) for t in answer.assignment.topic_partitions)


def described(address: str, group: str) -> Any:
    request = ConsumerGroupDescribeRequest(version=0, group_ids=[group], include_authorized_operations=False)
    return _call(address, request, ConsumerGroupDescribeResponse, 0).groups[0]


def described_as_classic(address: str, group: str, version: int) -> tuple[int, str | None, str, Any]:
    """DescribeGroups of ``group`` at ``version``, asked what the client may do to it: its error,
    error message (v6), state and the operations (codes) the client may perform."""
    request = DescribeGroupsRequest(version=version, groups=[group], include_authorized_operations=True)
    (answer,) = _call(address, request, DescribeGroupsResponse, version).groups
    return (
        answer.error_code,
        getattr(answer, "error_message", None),
        answer.group_state,
        answer.authorized_operations,
    )


# What a client may do to a group on a server without an authorizer: READ, DELETE, DESCRIBE,
# DESCRIBE_CONFIGS and ALTER_CONFIGS, every operation a group supports.
EVERY_GROUP_OPERATION = {3, 6, 8, 10, 11}


def partitions_of(assignment: Any) -> frozenset[TopicPartition]:
    return frozenset((t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions)


def settled(
    address: Callable[[], str], group: str, members: list[MemberProcess], expected: frozenset[TopicPartition]
) -> Any:
    """The described group once it is Stable with exactly the live ``members`` (by client id),
    each at its target and reporting that same assignment itself, and the assignments together
    cover ``expected`` once; otherwise None."""
    described_group = described(address(), group)
    if described_group.error_code != 0 or described_group.group_state != "Stable":
        return None
    live = {m.name: m for m in members if m.alive}
    if sorted(m.client_id for m in described_group.members) != sorted(live):
        return None
    server: dict[str, frozenset[TopicPartition]] = {}
    for m in described_group.members:
        server[m.client_id] = partitions_of(m.assignment)
        if partitions_of(m.target_assignment) != server[m.client_id]:
            return None
    if any(held(live[name]) != owned for name, owned in server.items()):
        return None
    everything = [tp for owned in server.values() for tp in owned]
    if len(everything) != len(set(everything)) or set(everything) != expected:
        return None
    return described_group


def wait_settled(
    address: Callable[[], str],
    group: str,
    members: list[MemberProcess],
    expected: frozenset[TopicPartition],
    what: str,
) -> Any:
    return wait_for(lambda: settled(address, group, members, expected), SETTLE_S, what, step=0.2)


def member_ids(described_group: Any) -> dict[str, str]:
    """Member id by client id (member ids are made by the clients: KIP-1082)."""
    return {m.client_id: m.member_id for m in described_group.members}


def logged(membership: MembershipRecorder, kind: str, group: str, member_id: str) -> list[float]:
    """Wall-clock times at which the coordinator logged ``kind`` for ``member_id``."""
    return [
        t + WALL_MINUS_MONOTONIC
        for t, _, e in membership.logged()
        if e.kind == kind and e.group_id == group and e.member_id == member_id
    ]


# --- join, scale out, SIGKILL, SIGTERM: one scenario for both servers -------------------------


def join_scale_kill_leave(
    address: Callable[[], str],
    bootstrap: str,
    group: str,
    topic: str,
    clients: tuple[str, str, str],
    membership: MembershipRecorder | None,
) -> dict[str, float]:
    """Two members join, a third scales the group out, one is SIGKILLed, one SIGTERMed.

    Returns how long each step took to settle (seconds) and the group epochs seen.
    """
    every = frozenset((topic, p) for p in range(PARTITIONS))
    names = [f"{client[0]}{i}" for i, client in enumerate(clients)]  # c(onfluent), j(ava), o(urs)
    figures: dict[str, float] = {}
    members = [start(bootstrap, group, clients[i], names[i], topic=topic) for i in range(2)]
    with running_members(members):
        began = time.monotonic()
        first = wait_settled(address, group, members, every, f"{names[:2]} to share {topic}")
        figures["join 2 s"] = time.monotonic() - began
        assert sorted(len(held(m)) for m in members) == [6, 6]

        # Scale out: the old members give up only what moves to the newcomer, and keep the rest.
        before = {m.name: held(m) for m in members}
        since = marks(members)
        members.append(start(bootstrap, group, clients[2], names[2], topic=topic))
        began = time.monotonic()
        second = wait_settled(address, group, members, every, f"{names[2]} to join {names[:2]}")
        figures["scale out s"] = time.monotonic() - began
        assert sorted(len(held(m)) for m in members) == [4, 4, 4]
        for m in members[:2]:
            gained, given = moves(m, since)
            assert gained == frozenset(), f"{m.name} was assigned {gained} when a member joined"
            assert given == before[m.name] - held(m), f"{m.name} revoked more than what moved"
        assert held(members[2]) == (before[names[0]] | before[names[1]]) - held(members[0]) - held(members[1])
        assert second.group_epoch > first.group_epoch

        # SIGKILL: the member's partitions move once its session has ended, not before; the
        # survivors revoke nothing.
        victim, ids = members[0], member_ids(second)
        before = {m.name: held(m) for m in members}
        since = marks(members)
        victim.kill()
        third = wait_settled(
            address, group, members, every, f"the survivors to take over SIGKILLed {victim.name}'s partitions"
        )
        taken = min(t for m in members[1:] for t in acquired_at(m, before[victim.name], since))
        figures["SIGKILL moved after s"] = taken - victim.ended_at
        for m in members[1:]:
            assert moves(m, since)[1] == frozenset(), f"{m.name} revoked partitions when {victim.name} died"
        assert moves(members[1], since)[0] | moves(members[2], since)[0] == before[victim.name]
        assert third.group_epoch > second.group_epoch
        if membership is not None:
            expired = logged(membership, "expired", group, ids[victim.name])
            assert expired, "the killed member did not expire"
            assert taken > expired[0] - EVENT_LOG_LAG_S, (
                "the killed member's partitions moved before its session ended"
            )
            figures["SIGKILL expired after s"] = expired[0] - victim.ended_at

        # SIGTERM: the client leaves the group (epoch -1) and the last member takes everything.
        leaver, ids = members[1], member_ids(third)
        leaving = held(leaver)
        since = marks(members)
        stopped = time.time()
        leaver.terminate()
        fourth = wait_settled(address, group, members, every, f"{names[2]} to take over from {leaver.name}")
        figures["SIGTERM moved after s"] = min(acquired_at(members[2], leaving, since)) - stopped
        assert leaver.events("closed")
        assert moves(members[2], since) == (leaving, frozenset())
        assert held(members[2]) == every
        assert fourth.group_epoch > third.group_epoch
        if membership is not None:
            assert logged(membership, "left", group, ids[leaver.name]), "the stopped member did not leave"
            assert not logged(membership, "expired", group, ids[leaver.name])
        figures.update(
            {f"epoch {i}": float(d.group_epoch) for i, d in enumerate((first, second, third, fourth), 1)}
        )
    assert not overlapping_ownership(members), overlapping_ownership(members)
    return figures


@pytest.mark.parametrize(
    "clients",
    [
        ("confluent", "confluent", "confluent"),
        ("java", "java", "java"),
        ("java", "confluent", "java"),
        ("ours", "ours", "ours"),
        ("ours", "confluent", "java"),
    ],
    ids=["librdkafka", "java", "mixed", "ours", "ours-mixed"],
)
def test_join_scale_out_sigkill_and_sigterm(
    membership: MembershipRecorder, clients: tuple[str, str, str]
) -> None:
    """librdkafka and Java members alone and mixed: incremental revocation on scale out, a
    SIGKILLed member expires after the coordinator's session, a SIGTERMed one leaves at once."""
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=kip848_config()) as coordinator:
        figures = join_scale_kill_leave(
            lambda: coordinator.bootstrap_servers,
            coordinator.bootstrap_servers,
            f"kip848-{'-'.join(clients)}",
            "events",
            clients,
            membership,
        )
    print(f"embedded coordinator, {clients}: {figures}")


def test_join_scale_out_sigkill_and_sigterm_on_kafka(kafka: KafkaCluster) -> None:
    """The same scenario on Apache Kafka 4 (3 brokers), with the same session and heartbeat
    set as the group's own config (KIP-848's dynamic group configs), for parity."""
    group, topic = "kip848-parity", "kip848-parity-events"
    kafka.create_topic(topic, PARTITIONS)
    kafka.set_group_config(
        group, {"consumer.session.timeout.ms": SESSION_MS, "consumer.heartbeat.interval.ms": INTERVAL_MS}
    )

    def coordinator() -> str:
        return kafka.broker(kafka.coordinator_of(group)).address

    figures = join_scale_kill_leave(
        coordinator, kafka.bootstrap_servers, group, topic, ("ours", "confluent", "java"), None
    )
    print(f"Apache Kafka 4 (3 brokers), mixed: {figures}")

    # Java's client asks for its assigned topics by id with the name left "" (see below): Kafka
    # resolves them by id.
    assert metadata_by_id(coordinator(), topic) == [(topic, 0)]


def test_librdkafka_gets_every_held_answer_before_it_gives_up_waiting_for_it() -> None:
    """librdkafka waits for a ConsumerGroupHeartbeat's answer only for the heartbeat interval,
    then sends the next heartbeat with the epoch it has; an answer held longer would come too
    late, and a new epoch in it be lost (the member fenced). With a 6 s session and a 400 ms
    interval a third of the session would be 2 s: the hold ends before the interval instead."""
    every = frozenset(("events", p) for p in range(PARTITIONS))
    config = kip848_config(session_ms=6000)
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=config) as coordinator:
        member = start(coordinator.bootstrap_servers, "held", "confluent", "c0", topic="events", log_level=5)
        with running_members([member]):
            wait_for(lambda: held(member) == every, SETTLE_S, "c0 to own every partition")
            time.sleep(3)  # about ten held heartbeats
            log = member.stderr_text()
    gave_up = [line for line in log.splitlines() if "REQTMOUT" in line]  # librdkafka's notice
    assert gave_up == [], gave_up


# --- static members -------------------------------------------------------------------------


def test_static_members_come_back_without_a_new_group_epoch(membership: MembershipRecorder) -> None:
    """A static librdkafka, Java and ConsumerGroupMember each close (SIGTERM: they leave with
    epoch -2, keeping their place) and are restarted with the same instance id inside the
    session: each gets exactly its partitions back, the group epoch does not move, and nobody
    else revokes."""
    group, every = "kip848-static", frozenset(("events", p) for p in range(PARTITIONS))
    session_ms = 15_000  # a JVM restarts well inside it, even on a loaded machine
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=kip848_config(session_ms)) as coordinator:
        bootstrap = coordinator.bootstrap_servers

        def static(client: str, name: str) -> MemberProcess:
            # The Java member commits as it goes: OffsetCommit and OffsetFetch v10, by topic id.
            commits = 300 if client == "java" else None
            return start(
                bootstrap, group, client, name, instance_id=f"{name}-instance", commit_every_ms=commits
            )

        members = [static("confluent", "rs0"), static("java", "js1"), static("ours", "os2")]
        retired: list[MemberProcess] = []
        with running_members(members):
            current = wait_settled(lambda: bootstrap, group, members, every, "three static members")
            assert_kafka_consumer_groups_shows(bootstrap, group, current)
            for index, client in ((0, "confluent"), (1, "java"), (2, "ours")):
                name, old_id = members[index].name, member_ids(current)[members[index].name]
                mine = held(members[index])
                others = {m.name: held(m) for m in members if m.name != name}
                rebalances = len(membership.of("rebalance", group))
                since = marks(members)
                members[index].terminate()
                wait_for(functools.partial(logged, membership, "left", group, old_id), 30, f"{name} to leave")
                left = [e for e in membership.of("left", group) if e.member_id == old_id]
                assert left[0].detail == "static member left temporarily"  # epoch -2, not -1
                retired.append(members[index])
                members[index] = static(client, name)
                current_epoch = current.group_epoch
                current = wait_settled(
                    lambda: bootstrap, group, members, every, f"static {name} to come back"
                )
                # What the coordinator saw since the restart says whether the session ran out
                # (an "expired" event, a new group epoch) or the assignment itself changed.
                assert held(members[index]) == mine, (
                    f"{name} came back with {sorted(held(members[index]))}, not {sorted(mine)}; "
                    f"the group's last events: {[e for e in membership.events if e.group_id == group][-12:]}"
                )
                assert current.group_epoch == current_epoch, "a static member's return bumped the group epoch"
                assert len(membership.of("rebalance", group)) == rebalances
                new_id = member_ids(current)[name]
                assert new_id != old_id
                joined = [e for e in membership.of("joined", group) if e.member_id == new_id]
                assert joined and joined[0].detail == f"replaces static member {old_id}"
                for m in members:
                    if m.name != name:
                        assert held(m) == others[m.name] and moves(m, since) == (frozenset(), frozenset())
        assert not [e for e in membership.events if e.group_id == group and e.kind == "expired"]
        assert not overlapping_ownership(retired + members), overlapping_ownership(retired + members)
    java = [m for m in retired + members if m.client == "java"]
    assert len(java) == 2 and all(m.events("commit") for m in java), "a Java incarnation never committed"
    assert all(r["ok"] for m in java for r in m.events("commit")), [m.events("commit") for m in java]


def assert_kafka_consumer_groups_shows(bootstrap: str, group: str, described_group: Any) -> None:
    """Kafka's kafka-consumer-groups describes the group as the coordinator does (it reads a
    consumer group with ConsumerGroupDescribe, as on a Kafka 4 cluster): each member's instance
    id, client, epoch, assignment and target (``--members --verbose``), and the group's assignor
    and epochs (``--state --verbose``)."""

    def cell(assignment: Any) -> str:  # one topic here: "events:0,1,2"
        partitions = sorted(p for _, p in partitions_of(assignment))
        return f"events:{','.join(map(str, partitions))}" if partitions else "-"

    members = consumer_groups(bootstrap, "--describe", "--group", group, "--members", "--verbose")
    rows = {row["CONSUMER-ID"]: row for row in table(members.stdout)}
    assert sorted(rows) == sorted(m.member_id for m in described_group.members), members
    for m in described_group.members:
        row = rows[m.member_id]
        assert (row["GROUP-INSTANCE-ID"], row["CLIENT-ID"], row["HOST"]) == (
            m.instance_id,
            m.client_id,
            "/127.0.0.1",
        )
        assert (int(row["CURRENT-EPOCH"]), row["CURRENT-ASSIGNMENT"]) == (m.member_epoch, cell(m.assignment))
        target = (int(row["TARGET-EPOCH"]), row["TARGET-ASSIGNMENT"])
        assert target == (described_group.assignment_epoch, cell(m.target_assignment)), row
    state = consumer_groups(bootstrap, "--describe", "--group", group, "--state", "--verbose")
    [row] = table(state.stdout)
    assert (row["ASSIGNMENT-STRATEGY"], row["STATE"], row["#MEMBERS"]) == (
        described_group.assignor_name,
        "Stable",
        str(len(described_group.members)),
    ), state
    epochs = (int(row["GROUP-EPOCH"]), int(row["TARGET-ASSIGNMENT-EPOCH"]))
    assert epochs == (described_group.group_epoch, described_group.assignment_epoch), state


# --- regular expressions on the server ----------------------------------------------------------


def test_regex_subscriptions_are_resolved_by_the_coordinator(membership: MembershipRecorder) -> None:
    """librdkafka subscribes to "^ev.*" and Java to SubscriptionPattern("ev.*"): the coordinator
    matches them against its topics, and a topic created later (CreateTopics from kafka-python's
    admin client) that matches is assigned too; topics that do not match never are."""
    group = "kip848-regex"
    topics = {"events": 6, "evx": 2, "other": 3}
    with EmbeddedCoordinator(topics=topics, config=kip848_config()) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        members = [
            start(bootstrap, group, "confluent", "rx0", topic="^ev.*"),
            start(bootstrap, group, "java", "jx1", pattern="ev.*"),
        ]
        expected = frozenset((t, p) for t in ("events", "evx") for p in range(topics[t]))
        with running_members(members):
            first = wait_settled(lambda: bootstrap, group, members, expected, "the regex members to settle")
            regexes = {m.client_id: m.subscribed_topic_regex for m in first.members}
            assert regexes["jx1"] == "ev.*"
            assert "^ev.*" in regexes["rx0"]  # librdkafka sends its regexes joined, "(^ev.*)"
            assert all(not m.subscribed_topic_names for m in first.members)

            admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-admin")
            try:
                admin.create_topics([NewTopic("evolved", 4, 1), NewTopic("unrelated", 2, 1)])
            finally:
                admin.close()
            expected |= {("evolved", p) for p in range(4)}
            second = wait_settled(lambda: bootstrap, group, members, expected, "the new topic to be assigned")
            assert second.group_epoch > first.group_epoch
            assert all(held(m) for m in members)
        assert not overlaps_by_topic(members), overlaps_by_topic(members)


def metadata_by_id(address: str, topic: str) -> list[tuple[str | None, int]]:
    """Ask Metadata v12 for ``topic`` by its id, and for an unknown id, with the names left ""
    as Java's client does; return (name, error code) of the answer's topics."""
    topic_cls = MetadataRequest.MetadataRequestTopic

    def metadata(topics: list[Any]) -> Any:
        request = MetadataRequest(
            version=12,
            topics=topics,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        return _call(address, request, MetadataResponse, 12)

    by_name = metadata([topic_cls(version=12, name=topic, topic_id=uuid.UUID(int=0))])
    topic_id = by_name.topics[0].topic_id
    unknown = uuid.UUID(int=topic_id.int ^ 1)
    answer = metadata([topic_cls(version=12, name="", topic_id=i) for i in (topic_id, unknown)])
    found = sorted((t.name, t.error_code) for t in answer.topics if t.topic_id == topic_id)
    missing = [t.error_code for t in answer.topics if t.topic_id == unknown]
    assert missing == [UNKNOWN_TOPIC_ID], answer
    return found


def test_metadata_by_topic_id_with_an_empty_name() -> None:
    """What Java's consumer sends for its assigned topics under a broker-side regex: ids, with
    the name at its default "". Kafka looks such a topic up by id; so must the coordinator (it
    used to take "" for a name, and the Java member never learned its topics' names)."""
    with EmbeddedCoordinator(topics={"events": 3}, config=kip848_config()) as coordinator:
        assert metadata_by_id(coordinator.bootstrap_servers, "events") == [("events", 0)]


# --- what makes a new group epoch -----------------------------------------------------------------

#: One member's heartbeats, each changing one thing, and what Kafka 4.3.1's broker answers to
#: each: how far the group epoch moved from where the member's join left it, and the assignor
#: ConsumerGroupDescribe names. A new rack or server assignor is no new epoch (the next target
#: takes it into account); a new subscription is.
EPOCH_TOPICS = {"epochs-a": 4, "epochs-b": 2}
EPOCH_CHANGES: list[tuple[str, dict[str, Any], int, str]] = [
    ("rack r2", {"rack_id": "r2"}, 0, "uniform"),
    ("server assignor range", {"server_assignor": "range"}, 0, "range"),
    ("rebalance timeout 40 s", {"rebalance_timeout_ms": 40_000}, 0, "range"),
    ("a second topic", {"subscribed_topic_names": list(EPOCH_TOPICS)}, 1, "range"),
]


def epochs_after_changes(address: str, group: str) -> list[tuple[str, int, str]]:
    """Send :data:`EPOCH_CHANGES` as one member's heartbeats to ``address``, the group's
    coordinator (the member joins subscribed to the first of :data:`EPOCH_TOPICS`); for each,
    the group epoch's move and the assignor ConsumerGroupDescribe names."""

    member_id = uuid.uuid4().hex[:22]
    beat = functools.partial(heartbeat, address, group, member_id)
    joined = beat(
        0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=list(EPOCH_TOPICS)[:1],
        topic_partitions=[],
        rack_id="r1",
        server_assignor="uniform",
    )
    epoch = beat(joined.member_epoch, topic_partitions=differential.owned(joined)).member_epoch
    start_epoch, moves = described(address, group).group_epoch, []
    for label, change, _, _ in EPOCH_CHANGES:
        epoch = beat(epoch, **change).member_epoch
        group_now = described(address, group)
        moves.append((label, group_now.group_epoch - start_epoch, group_now.assignor_name))
    assert [m.rack_id for m in group_now.members] == ["r2"]
    return moves


def test_a_new_rack_or_assignor_is_no_new_group_epoch() -> None:
    with EmbeddedCoordinator(topics=EPOCH_TOPICS, config=kip848_config()) as coordinator:
        moves = epochs_after_changes(coordinator.bootstrap_servers, "epochs")
    assert moves == [(label, move, assignor) for label, _, move, assignor in EPOCH_CHANGES]


def test_a_new_rack_or_assignor_is_no_new_group_epoch_on_kafka(kafka: KafkaCluster) -> None:
    """The same heartbeats to Apache Kafka 4's broker, for parity."""
    for topic, partitions in EPOCH_TOPICS.items():
        kafka.create_topic(topic, partitions)
    moves = epochs_after_changes(kafka.broker(kafka.coordinator_of("epochs")).address, "epochs")
    assert moves == [(label, move, assignor) for label, _, move, assignor in EPOCH_CHANGES]


# --- batched targets (KIP-1263) --------------------------------------------------------------------

BATCHED_TOPIC = "batched"  # 4 partitions
ASSIGNMENT_INTERVAL_MS = 1500


def set_assignment_interval(bootstrap: str, address: str, group: str, interval_ms: int) -> None:
    """Give ``group`` its own ``consumer.assignment.interval.ms`` (as ``kafka-configs`` does),
    and wait until its coordinator (``address``) has it (a Kafka broker applies the controller's
    metadata a moment later)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-probe")
    try:
        configs = {"consumer.assignment.interval.ms": str(interval_ms)}
        admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs)], incremental=True)
    finally:
        admin.close()
    wait_for(
        lambda: group_configs(bootstrap, group).items() >= configs.items(),
        30,
        f"{address} to have {group}'s assignment interval",
    )


def targets_batched(bootstrap: str, address: str, group: str) -> list[tuple[Any, ...]]:
    """Two members' heartbeats to ``address``, ``group``'s coordinator, with the group's
    assignment interval at 1.5 s: b joins just after a, and the target that gives b partitions
    waits for the first heartbeat after the interval. For each step, what the answer and
    ConsumerGroupDescribe say, epochs counted from a's first."""
    set_assignment_interval(bootstrap, address, group, ASSIGNMENT_INTERVAL_MS)

    beat = functools.partial(heartbeat, address, group)

    def joining(member_id: str) -> Any:
        return beat(
            member_id,
            0,
            rebalance_timeout_ms=30_000,
            subscribed_topic_names=[BATCHED_TOPIC],
            topic_partitions=[],
        )

    steps: list[tuple[Any, ...]] = []

    def look(label: str) -> None:
        g = described(address, group)
        steps.append((label, g.group_state, g.group_epoch - first, g.assignment_epoch - first))

    a_id, b_id = uuid.uuid4().hex[:22], uuid.uuid4().hex[:22]
    joined = joining(a_id)
    first = joined.member_epoch
    a_epoch = beat(a_id, first, topic_partitions=differential.owned(joined)).member_epoch
    look("a alone, its target at once")
    b = joining(b_id)
    steps.append(("b joins within the interval", b.member_epoch - first, partitions_given(b)))
    look("b joined: no new target yet")
    a = beat(a_id, a_epoch)
    steps.append(("a heartbeats within the interval", a.member_epoch - first, partitions_given(a)))
    time.sleep(ASSIGNMENT_INTERVAL_MS / 1000 + 0.3)
    look("the interval passed, no heartbeat since")
    a = beat(a_id, a_epoch)
    steps.append(("a heartbeats after it: gives up half", a.member_epoch - first, partitions_given(a)))
    look("the new target")
    return steps


def test_a_groups_assignment_interval_batches_its_targets() -> None:
    with EmbeddedCoordinator(topics={BATCHED_TOPIC: 4}, config=kip848_config()) as coordinator:
        address = coordinator.bootstrap_servers
        steps = targets_batched(address, address, "batched")
    assert steps == BATCHED_STEPS


def test_a_groups_assignment_interval_batches_its_targets_on_kafka(kafka: KafkaCluster) -> None:
    """The same heartbeats to Apache Kafka 4.3's broker, for parity."""
    kafka.create_topic(BATCHED_TOPIC, 4)
    address = kafka.broker(kafka.coordinator_of("batched")).address
    assert targets_batched(kafka.bootstrap_servers, address, "batched") == BATCHED_STEPS


#: What both servers answer (seen on Kafka 4.3.1's broker).
BATCHED_STEPS: list[tuple[Any, ...]] = [
    ("a alone, its target at once", "Stable", 0, 0),
    ("b joins within the interval", 0, 0),
    ("b joined: no new target yet", "Assigning", 1, 0),
    ("a heartbeats within the interval", 0, None),
    ("the interval passed, no heartbeat since", "Assigning", 1, 0),
    ("a heartbeats after it: gives up half", 0, 2),
    ("the new target", "Reconciling", 1, 1),
]


# --- regular expressions, resolved at once ------------------------------------------------------

REGEX_TOPIC, LATER_TOPIC = "regex-a", "regex-b"  # 2 partitions; 1, created during the run


def regex_resolution(bootstrap: str, address: str, group: str) -> list[tuple[str, int, int | None, float]]:
    """One member, subscribed by regex, heartbeating to ``address`` (``group``'s coordinator,
    its assignment interval 0) every 100 ms: until it has the 2 partitions of regex-a, then,
    once regex-b has been created, until it has that one too (for up to 15 s). For the join and
    each answer that brought a new epoch or partitions: what happened last, the answer's epoch,
    how many partitions it gave, and how long after that event it came."""
    set_assignment_interval(bootstrap, address, group, 0)
    member_id = uuid.uuid4().hex[:22]
    beat = functools.partial(heartbeat, address, group, member_id)

    since = time.monotonic()
    answer = beat(0, rebalance_timeout_ms=30_000, subscribed_topic_regex="regex-.*", topic_partitions=[])
    steps = [("join", answer.member_epoch, partitions_given(answer), time.monotonic() - since)]
    owned, epoch = differential.owned(answer), answer.member_epoch

    def beat_until(event: str, partitions: int) -> None:
        nonlocal owned, epoch
        deadline = time.monotonic() + 15
        while sum(len(t.partitions) for t in owned) < partitions:
            assert time.monotonic() < deadline, f"{partitions} partitions never came: {steps}"
            time.sleep(0.1)
            answer = beat(epoch, topic_partitions=owned)
            if answer.member_epoch != epoch or answer.assignment is not None:
                steps.append((event, answer.member_epoch, partitions_given(answer), time.monotonic() - since))
            owned = differential.owned(answer) if answer.assignment is not None else owned
            epoch = answer.member_epoch

    beat_until("join", 2)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="kip848-probe")
    try:
        admin.create_topics([NewTopic(LATER_TOPIC, 1, 1)])
    finally:
        admin.close()
    since = time.monotonic()
    beat_until(f"{LATER_TOPIC} created", 3)
    return steps


def test_a_regex_is_resolved_at_once_and_a_new_topic_assigned_at_the_next_heartbeat() -> None:
    """The heartbeat that brings a regex gets what it matches, and a topic created later that
    matches comes with the next heartbeat (Kafka: below)."""
    with EmbeddedCoordinator(topics={REGEX_TOPIC: 2}, config=kip848_config()) as coordinator:
        address = coordinator.bootstrap_servers
        steps = regex_resolution(address, address, "regex")
    assert [step[:3] for step in steps] == [("join", 2, 2), (f"{LATER_TOPIC} created", 3, 3)]
    assert steps[1][3] < 2, steps  # the first heartbeat after it: 100 ms and a round trip


def test_kafka_resolves_a_regex_in_the_background_and_looks_for_new_topics_every_10_s(
    kafka: KafkaCluster,
) -> None:
    """Apache Kafka 4.3's broker, with the same heartbeats: the join is answered with the new
    group's empty target (epoch 1) while the regex is resolved in the background, and the
    partitions come with a later heartbeat; a topic created later is looked for at most every
    10 s (GroupMetadataManager's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS). ALLOWED["regex
    resolution"] in tests/server/differential.py."""
    kafka.create_topic(REGEX_TOPIC, 2)
    address = kafka.broker(kafka.coordinator_of("regex")).address
    steps = regex_resolution(kafka.bootstrap_servers, address, "regex")
    assert [step[:3] for step in steps] == [
        ("join", 1, 0),
        ("join", 2, 2),
        (f"{LATER_TOPIC} created", 3, 3),
    ]
    assert steps[2][3] > 5, steps  # 10 s after the regex was first resolved


# --- a member that never revokes -----------------------------------------------------------------


def test_a_member_that_never_revokes_stalls_only_what_it_must_give_up(membership: MembershipRecorder) -> None:
    """A member frozen (SIGSTOP) just as a newcomer joins holds partitions the new target moves
    away. Only those wait: the other member gives up just what the newcomer needs from it and
    keeps the rest throughout, the newcomer (this project's ConsumerGroupMember) gets those at
    once, and the frozen member's partitions move only when its session has ended (never two
    owners)."""
    group, every = "kip848-stall", frozenset(("events", p) for p in range(PARTITIONS))
    session_ms = 8000  # the newcomer starts and reconciles well inside it
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=kip848_config(session_ms)) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        frozen, other = start(bootstrap, group, "confluent", "ra"), start(bootstrap, group, "java", "jb")
        members = [frozen, other]
        with running_members(members):
            first = wait_settled(lambda: bootstrap, group, members, every, "two members to settle")
            frozen_id = member_ids(first)["ra"]
            before = {m.name: held(m) for m in members}
            since = marks(members)
            frozen.pause()
            stopped_at = time.time()
            newcomer = start(bootstrap, group, "ours", "oc")
            members.append(newcomer)

            # While "ra" is frozen: "jb" gives up two partitions and keeps four, "oc" gets those
            # two; "ra"'s two to-be-moved partitions are unreleased.
            wait_for(lambda: len(held(newcomer)) == 2, SETTLE_S, "the newcomer to get what jb released")
            wait_for(lambda: len(held(other)) == 4, 30, "jb's revocation report to be read")
            stalled = described(bootstrap, group)
            assert not logged(membership, "expired", group, frozen_id), (
                "the session is too short for this machine"
            )
            view = {m.client_id: m for m in stalled.members}
            assert stalled.group_state == "Reconciling"
            assert partitions_of(view["ra"].assignment) == before["ra"]  # still its own, pending revocation
            assert len(partitions_of(view["ra"].target_assignment)) == 4
            assert len(partitions_of(view["oc"].target_assignment)) == 4
            assert partitions_of(view["oc"].assignment) == held(newcomer)
            kept = held(other)
            assert len(kept) == 4 and kept < before["jb"]
            assert moves(other, since) == (frozenset(), before["jb"] - kept)
            assert held(newcomer) == before["jb"] - kept
            assert not (held(newcomer) & before["ra"])

            # The session ends: "ra" expires and its partitions move, "jb" revokes nothing more.
            final = wait_settled(
                lambda: bootstrap, group, [other, newcomer], every, "ra's partitions to move"
            )
            expired = logged(membership, "expired", group, frozen_id)
            assert expired, "the frozen member did not expire"
            assert all(m.member_id != frozen_id for m in final.members)
            assert (
                min(acquired_at(other, before["ra"], since) + acquired_at(newcomer, before["ra"], since))
                > expired[0] - EVENT_LOG_LAG_S
            )
            assert moves(other, since)[1] == before["jb"] - kept
            assert kept <= held(other)
            assert sorted(len(held(m)) for m in (other, newcomer)) == [6, 6]
            frozen.kill()
            frozen.ended_at = stopped_at  # frozen, it did nothing with its partitions after this
            print(
                f"stalled member expired {expired[0] - stopped_at:.2f} s after SIGSTOP "
                f"(session {session_ms} ms)"
            )
        assert not overlapping_ownership(members), overlapping_ownership(members)


# --- classic and incremental groups together -------------------------------------------------------


def test_classic_and_incremental_groups_on_one_coordinator(membership: MembershipRecorder) -> None:
    """A classic group (kafka-python and librdkafka, eager range) and an incremental one
    (librdkafka and Java, server-side "range" via group.remote.assignor) share one coordinator
    and one topic: scaling the incremental group out does not touch the classic group, and a
    classic member's death does not touch the incremental group."""
    classic_group, incremental_group = "kip848-beside-classic", "kip848-beside-incremental"
    every = frozenset(("events", p) for p in range(PARTITIONS))
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=kip848_config()) as coordinator:
        bootstrap = coordinator.bootstrap_servers

        def incremental(client: str, name: str) -> MemberProcess:
            return start(bootstrap, incremental_group, client, name, remote_assignor="range")

        classic = [
            MemberProcess(client, bootstrap, name, group=classic_group, session_ms=SESSION_MS)
            for client, name in (("kafka-python", "kc0"), ("confluent", "rc1"))
        ]
        members = [incremental("confluent", "ri0"), incremental("java", "ji1")]
        with running_members(classic + members):
            wait_for(lambda: owned_exactly_once(classic, PARTITIONS), SETTLE_S, "the classic group to settle")
            settled_group = wait_settled(
                lambda: bootstrap, incremental_group, members, every, "the incremental group"
            )
            assert settled_group.assignor_name == "range"

            # The incremental group scales out; the classic group sees nothing.
            classic_owned = [m.owned for m in classic]
            classic_reports = [len(m.reports) for m in classic]
            classic_rebalances = len(membership.of("rebalance", classic_group))
            members.append(incremental("confluent", "ri2"))
            scaled = wait_settled(lambda: bootstrap, incremental_group, members, every, "ri2 to join")
            assert scaled.group_epoch > settled_group.group_epoch
            assert [m.owned for m in classic] == classic_owned
            assert [len(m.reports) for m in classic] == classic_reports
            assert len(membership.of("rebalance", classic_group)) == classic_rebalances

            # A classic member is SIGKILLed; the incremental group sees nothing.
            since = marks(members)
            classic[0].kill()
            wait_for(
                lambda: (
                    [
                        m
                        for m in membership.of("expired", classic_group)
                        if (m.member_id or "").startswith("kc0-")
                    ]
                    and owned_exactly_once(classic, PARTITIONS)
                ),
                SETTLE_S,
                "the classic group to take over kc0's partitions",
            )
            still = settled(lambda: bootstrap, incremental_group, members, every)
            assert still is not None and still.group_epoch == scaled.group_epoch
            assert all(moves(m, since) == (frozenset(), frozenset()) for m in members)
            assert not [
                e
                for e in membership.events
                if e.group_id == incremental_group
                and e.kind == "rebalance"
                and e.generation_id > scaled.group_epoch
            ]
        assert not overlapping_ownership(classic), overlapping_ownership(classic)
        assert not overlapping_ownership(members), overlapping_ownership(members)


# --- online migration: classic <-> incremental -----------------------------------------------


@contextlib.contextmanager
def upgraded_group(
    address: Callable[[], str], bootstrap: str, group: str, topic: str, newcomer: str, **options: Any
) -> Iterator[tuple[list[MemberProcess], list[MemberProcess], Any]]:
    """A classic group (kafka-python and librdkafka, eager range), once settled, joined by a
    member of the incremental protocol (``newcomer``'s client, "ri2", with ``options``): while
    they run, the classic members, all the members, and the group described once upgraded and
    Stable, every member at its target and the members' own reports agreeing."""
    classic = [
        MemberProcess(client, bootstrap, name, group=group, topic=topic, session_ms=SESSION_MS * 2)
        for client, name in (("kafka-python", "kc0"), ("confluent", "rc1"))
    ]
    members = list(classic)

    def reconciled() -> Any:
        upgraded = described(address(), group)
        if upgraded.error_code != 0 or upgraded.group_state != "Stable":
            return None
        if any(partitions_of(m.assignment) != partitions_of(m.target_assignment) for m in upgraded.members):
            return None
        by_client = {m.client_id: {p for _, p in partitions_of(m.assignment)} for m in upgraded.members}
        if any(by_client.get(m.name) != m.owned for m in members):
            return None
        return upgraded if owned_exactly_once(members, PARTITIONS) else None

    with running_members(members):
        wait_for(lambda: owned_exactly_once(classic, PARTITIONS), SETTLE_S, "the classic group to settle")
        assert described(address(), group).error_code == 69  # GROUP_ID_NOT_FOUND: not a consumer group
        members.append(start(bootstrap, group, newcomer, "ri2", topic=topic, **options))
        yield classic, members, wait_for(reconciled, SETTLE_S, "the upgraded group to reconcile", step=0.2)


def upgrade_and_downgrade(
    address: Callable[[], str], bootstrap: str, group: str, topic: str, newcomer: str = "confluent"
) -> None:
    """A classic group (kafka-python and librdkafka, eager range) is joined by a member of the
    incremental protocol: it becomes a consumer group, the classic members staying in it with
    their partitions and reconciling through JoinGroup/SyncGroup/Heartbeat. When that member
    leaves, the group is classic again and the classic members share everything."""
    with upgraded_group(address, bootstrap, group, topic, newcomer) as (classic, members, upgraded):
        assert sorted(m.client_id for m in upgraded.members) == ["kc0", "rc1", "ri2"]
        assert sorted(len(m.owned) for m in members) == [4, 4, 4]
        # Which protocol each member speaks (ConsumerGroupDescribe v1's member type, KIP-1099),
        # as Kafka's tool shows it for a group with members of both.
        verbose = consumer_groups(bootstrap, "--describe", "--group", group, "--members", "--verbose")
        upgraded_column = {row["CLIENT-ID"]: row["UPGRADED"] for row in table(verbose.stdout)}
        assert upgraded_column == {"kc0": "false", "rc1": "false", "ri2": "true"}, verbose.stdout
        ours = describe_group(bootstrap, group)  # what `coordinator-api groups` shows
        assert {m.client_id: m.classic for m in ours.members} == {"kc0": True, "rc1": True, "ri2": False}
        assert render_group(ours, PluginRegistry.load().payload_decoders).count(", classic protocol") == 2
        # The classic describe: Dead without an error before v6, not a classic group at v6.
        assert described_as_classic(address(), group, 5) == (0, None, "Dead", EVERY_GROUP_OPERATION)
        not_classic = (69, f"Group {group} is not a classic group.", "Dead", None)
        assert described_as_classic(address(), group, 6) == not_classic

        members[2].terminate()  # leaves with epoch -1: the last member of the incremental protocol
        wait_for(
            lambda: owned_exactly_once(classic, PARTITIONS) and described(address(), group).error_code == 69,
            SETTLE_S,
            "the group to be classic again and its members to share everything",
        )
        assert all(m.alive for m in classic)
        described_again = described_as_classic(address(), group, 6)
        assert described_again[:2] == (0, None) and described_again[3] == EVERY_GROUP_OPERATION
    assert not overlapping_ownership(members), overlapping_ownership(members)


@pytest.mark.kafka_python
@pytest.mark.parametrize("newcomer", ["confluent", "ours"])
def test_online_upgrade_and_downgrade_with_real_clients(
    membership: MembershipRecorder, newcomer: str
) -> None:
    group = "migrating"
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=kip848_config()) as coordinator:
        upgrade_and_downgrade(
            lambda: coordinator.bootstrap_servers, coordinator.bootstrap_servers, group, "events", newcomer
        )
    upgraded = [e for e in membership.of("rebalance", group) if "upgraded" in e.detail]
    downgraded = [e for e in membership.of("rebalance", group) if "classic again" in e.detail]
    assert len(upgraded) == len(downgraded) == 1


@pytest.mark.kafka_python
def test_online_upgrade_and_downgrade_on_kafka(kafka: KafkaCluster) -> None:
    """The same scenario on Apache Kafka 4 (its default group.consumer.migration.policy,
    bidirectional), for parity."""
    group, topic = "migrating-parity", "migrating-parity-events"
    kafka.create_topic(topic, PARTITIONS)
    kafka.set_group_config(
        group, {"consumer.session.timeout.ms": SESSION_MS, "consumer.heartbeat.interval.ms": INTERVAL_MS}
    )
    upgrade_and_downgrade(
        lambda: kafka.broker(kafka.coordinator_of(group)).address, kafka.bootstrap_servers, group, topic
    )


STATIC_SESSION_MS = 15_000  # a restarted process is back well inside it, even on a loaded machine


def ownership_changes(member: MemberProcess, since: dict[str, int]) -> list[dict[str, Any]]:
    """The member's ownership reports after ``since`` was taken (see :func:`marks`)."""
    return [
        r for r in member.reports[since[member.name] :] if r.get("event") in ("assigned", "revoked", "lost")
    ]


def static_member_returns_classic(address: Callable[[], str], bootstrap: str, group: str, topic: str) -> None:
    """The only member of the incremental protocol in a group of classic members is static,
    and its process is restarted with a classic client under the same group.instance.id (a
    rollback of one instance). It replaces its old self, nobody speaks the incremental protocol
    any more, and the group is classic again at once; its subscription being the same, Kafka 4
    makes the classic group Stable with everyone's assignment: the restarted member gets its
    instance's partitions from its first JoinGroup and SyncGroup, and nobody else rebalances."""
    with upgraded_group(address, bootstrap, group, topic, "confluent", instance_id="node-2") as (
        classic,
        members,
        _,
    ):
        instance_had = members[2].owned
        since = marks(classic)
        members[2].terminate()  # a static member leaves with epoch -2: its place is kept
        restarted = MemberProcess(
            "confluent",
            bootstrap,
            "rc2",
            group=group,
            topic=topic,
            session_ms=SESSION_MS * 2,
            instance_id="node-2",
        )
        members.append(restarted)
        wait_for(
            lambda: (
                restarted.owned == instance_had
                and owned_exactly_once([*classic, restarted], PARTITIONS)
                and described(address(), group).error_code == 69
            ),  # GROUP_ID_NOT_FOUND: classic again
            SETTLE_S,
            "the restarted member to own its instance's partitions in a classic group",
        )
        time.sleep(3)  # three classic heartbeat intervals: a rebalance would show by then
        assert [r["event"] for r in ownership_changes(restarted, {"rc2": 0})] == ["assigned"]
        for member in classic:
            assert ownership_changes(member, since) == [], f"{member.name} rebalanced"
        assert owned_exactly_once([*classic, restarted], PARTITIONS)
    assert not overlapping_ownership(members), overlapping_ownership(members)


@pytest.mark.kafka_python
def test_a_static_member_restarted_as_a_classic_member_downgrades_without_a_rebalance(
    membership: MembershipRecorder,
) -> None:
    group = "static-rollback"
    config = kip848_config(STATIC_SESSION_MS)
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=config) as coordinator:
        static_member_returns_classic(
            lambda: coordinator.bootstrap_servers, coordinator.bootstrap_servers, group, "events"
        )
    downgrades = [e for e in membership.events if e.group_id == group and "classic again" in e.detail]
    assert [e.kind for e in downgrades] == ["generation"], downgrades  # formed, not a rebalance


@pytest.mark.kafka_python
def test_a_static_member_restarted_as_a_classic_member_on_kafka(kafka: KafkaCluster) -> None:
    """The same scenario on Apache Kafka 4, the reference."""
    group, topic = "static-rollback-parity", "static-rollback-parity-events"
    kafka.create_topic(topic, PARTITIONS)
    kafka.set_group_config(
        group,
        {"consumer.session.timeout.ms": STATIC_SESSION_MS, "consumer.heartbeat.interval.ms": INTERVAL_MS},
    )
    static_member_returns_classic(
        lambda: kafka.broker(kafka.coordinator_of(group)).address, kafka.bootstrap_servers, group, topic
    )


def quiet(members: list[MemberProcess], seconds: float = 2.0) -> bool:
    """Every partition owned once, and no member's partitions moved for ``seconds`` (a classic
    group may rebalance once more after it first looks settled)."""
    moved = [r["t"] for m in members for r in ownership_changes(m, {m.name: 0})]
    return owned_exactly_once(members, PARTITIONS) and time.time() - max(moved, default=0) > seconds


def refused_join(bootstrap: str, group: str, topic: str, group_protocol: str) -> GroupJoinError:
    """What this project's member of ``group_protocol``, in this process, fails with when it
    tries to join ``group``."""
    member = ConsumerGroupMember(
        group,
        bootstrap,
        topics=[topic],
        group_protocol=group_protocol,
        client_id=f"refused-{group_protocol}",
        session_timeout_ms=SESSION_MS * 2 if group_protocol == "classic" else SESSION_MS,
        heartbeat_interval_ms=INTERVAL_MS,
    )
    try:
        with pytest.raises(GroupJoinError) as refused:
            member.ensure_active_group(30)
        return refused.value
    finally:
        member.close(timeout=5)


def migrations_disabled(address: Callable[[str], str], bootstrap: str, topic: str) -> None:
    """``group.consumer.migration.policy=disabled``: a classic group with members stays classic
    when a member of the incremental protocol asks to join (GROUP_ID_NOT_FOUND: this project's
    member fails with it at once rather than asking again and again), and a consumer group with
    members takes no classic member (INCONSISTENT_GROUP_PROTOCOL, as on Kafka 4.3); the members
    already there never notice."""
    group = "classic-kept"
    classic = [
        MemberProcess(client, bootstrap, name, group=group, topic=topic, session_ms=SESSION_MS * 2)
        for client, name in (("kafka-python", "kc0"), ("confluent", "rc1"))
    ]
    with running_members(classic):
        wait_for(
            lambda: quiet(classic),
            SETTLE_S,
            "the classic group to settle, no one's partitions moving for 2 s",
        )
        since = marks(classic)
        refused = refused_join(bootstrap, group, topic, "consumer")
        assert refused.error_name == "GROUP_ID_NOT_FOUND"
        assert str(refused).endswith("because online upgrade is disabled."), refused  # Kafka's words
        assert described(address(group), group).error_code == 69  # still not a consumer group
        time.sleep(2)  # several classic heartbeat intervals: a rebalance would show by then
        for member in classic:
            assert ownership_changes(member, since) == [], f"{member.name} rebalanced"
    assert not overlapping_ownership(classic), overlapping_ownership(classic)

    group = "incremental-kept"
    first = start(bootstrap, group, "confluent", "ri0", topic=topic)
    with running_members([first]):
        wait_for(lambda: owned_exactly_once([first], PARTITIONS), SETTLE_S, "ri0 to own everything")
        since = marks([first])
        assert refused_join(bootstrap, group, topic, "classic").error_name == "INCONSISTENT_GROUP_PROTOCOL"
        assert [m.client_id for m in described(address(group), group).members] == ["ri0"]
        assert ownership_changes(first, since) == [] and len(first.owned) == PARTITIONS


def downgrade_disabled(address: Callable[[str], str], bootstrap: str, topic: str, *, on_kafka: bool) -> None:
    """``group.consumer.migration.policy=upgrade``: a classic group joined by a member of the
    incremental protocol becomes a consumer group, and stays one when that member leaves.
    Here its classic members then share everything: each is told to rejoin once the group's
    epoch has moved, and their JoinGroups make the new target. Kafka 4.3.1's broker makes a
    target only at a ConsumerGroupHeartbeat or a classic JoinGroup, and tells a classic member
    to rejoin only once the target's epoch has moved, so there the group stays Assigning and
    the leaver's partitions stay unowned: pinned below, so that a Kafka that fixes it shows."""
    group = "upgraded-for-good"
    with upgraded_group(lambda: address(group), bootstrap, group, topic, "confluent") as (
        classic,
        members,
        _,
    ):
        leaver_had = members[2].owned
        members[2].terminate()  # leaves with epoch -1: the last member of the incremental protocol

        def kept() -> Any:
            now = described(address(group), group)
            if now.error_code != 0 or sorted(m.client_id for m in now.members) != ["kc0", "rc1"]:
                return None
            return now if on_kafka or owned_exactly_once(classic, PARTITIONS) else None

        what = "the group to stay a consumer group" + (
            "" if on_kafka else ", its classic members sharing everything"
        )
        stayed = wait_for(kept, SETTLE_S, what)
        if on_kafka:
            time.sleep(3)  # seven classic heartbeat intervals of the members
            stayed = described(address(group), group)
            assert stayed.group_state == "Assigning"
            assert all(m.member_epoch < stayed.group_epoch for m in stayed.members)
            assert not leaver_had & {p for m in classic for p in m.owned}
        assert all(m.alive for m in classic)
    assert not overlapping_ownership(members), overlapping_ownership(members)


def keeps_groups_where_they_are(
    policy: str, address: Callable[[str], str], bootstrap: str, topic: str, *, on_kafka: bool
) -> None:
    if policy == "disabled":
        migrations_disabled(address, bootstrap, topic)
    else:
        downgrade_disabled(address, bootstrap, topic, on_kafka=on_kafka)


@pytest.mark.kafka_python
@pytest.mark.parametrize("policy", ["disabled", "upgrade"])
def test_a_migration_policy_that_keeps_groups_with_members_where_they_are(policy: str) -> None:
    config = dataclasses.replace(kip848_config(), consumer_group_migration_policy=policy)
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=config) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        keeps_groups_where_they_are(policy, lambda _group: bootstrap, bootstrap, "events", on_kafka=False)


@pytest.mark.kafka_python
@pytest.mark.parametrize("policy", ["disabled", "upgrade"])
def test_a_migration_policy_that_keeps_groups_with_members_where_they_are_on_kafka(policy: str) -> None:
    """The same on a one-broker Apache Kafka 4 cluster started with the policy, the reference
    (each group computing its targets at once, as the embedded coordinator does by default)."""
    topic = "events"
    settings = {
        "consumer.session.timeout.ms": SESSION_MS,
        "consumer.heartbeat.interval.ms": INTERVAL_MS,
        "consumer.assignment.interval.ms": 0,
    }
    with KafkaCluster(brokers=1, broker_config={"group.consumer.migration.policy": policy}) as kafka:
        kafka.create_topic(topic, PARTITIONS)
        for group in ("classic-kept", "incremental-kept", "upgraded-for-good"):
            kafka.set_group_config(group, settings)
        keeps_groups_where_they_are(
            policy,
            lambda group: kafka.broker(kafka.coordinator_of(group)).address,
            kafka.bootstrap_servers,
            topic,
            on_kafka=True,
        )


@pytest.mark.kafka_python
def test_classic_members_wait_out_a_deferred_target_without_rejoining(membership: MembershipRecorder) -> None:
    """A consumer group of classic and incremental members, its assignment interval 3 s
    (KIP-1263): two newcomers join at once, so at least the second change waits for the next
    target. The classic members (kafka-python, librdkafka) go on heartbeating until it is due,
    then rejoin once and reconcile; no SyncGroup of theirs is sent back to rejoin. (They used
    to be told to rejoin at the first heartbeat after the change, and their JoinGroups gave them
    the old target's epoch, so every SyncGroup was refused until the interval had passed: a
    JoinGroup and SyncGroup loop.)"""
    group, interval_ms = "mixed-batched", 3000
    config = dataclasses.replace(kip848_config(), consumer_group_assignment_interval_ms=interval_ms)
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=config) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        with upgraded_group(lambda: bootstrap, bootstrap, group, "events", "confluent") as (
            classic,
            members,
            _,
        ):
            since = time.monotonic()
            members += [start(bootstrap, group, "confluent", name, topic="events") for name in ("ri3", "ri4")]
            deferred = False

            def settled_five() -> bool:
                nonlocal deferred
                now = described(bootstrap, group)
                deferred |= now.group_epoch > now.assignment_epoch
                return len(now.members) == 5 and owned_exactly_once(members, PARTITIONS)

            wait_for(settled_five, SETTLE_S, "the five members to share everything", step=0.1)
            assert deferred, "no target was deferred: the newcomers joined an interval apart"
            assert all(m.alive for m in classic)
    sent_back = [
        e
        for t, _, e in membership.logged()
        if t > since and e.kind == "rejected" and e.group_id == group and "REBALANCE_IN_PROGRESS" in e.detail
    ]
    assert sent_back == [], sent_back
    assert not overlapping_ownership(members), overlapping_ownership(members)
