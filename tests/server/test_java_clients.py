"""Apache Kafka's Java client and its kafka-consumer-groups tool against the embedded coordinator.

Java ``KafkaConsumer`` members (tests/server/JavaMember.java, Kafka 4.3.1, classic protocol) share
groups with kafka-python and librdkafka members, each a real process; ``kafka-consumer-groups``
(Kafka's ``ConsumerGroupCommand``) lists, describes and deletes the groups and their offsets, and
the tests read what it prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.admin import KafkaAdminClient
from kafka_tools import consumer_groups, probe_commit, raw_group, table
from member_processes import (
    MemberProcess,
    overlapping_ownership,
    owned_exactly_once,
    running_members,
    wait_for,
)

from coordinator_api import EmbeddedCoordinator
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import MembershipRecorder, recording_membership

PARTITIONS = 12
SESSION_MS = 3000
SETTLE_S = 90  # JVMs start slowly on two loaded cores
# Tests marked kafka_python have kafka-python members: kafka-python 3.0.12's own join stall, and
# nothing else, runs them again (tests/kafka_python_reruns.py).


@pytest.fixture
def membership() -> Iterator[MembershipRecorder]:
    with recording_membership() as recorder:
        yield recorder


def start(
    coordinator: EmbeddedCoordinator, group: str, client: str, name: str, **options: Any
) -> MemberProcess:
    options.setdefault("session_ms", SESSION_MS)
    return MemberProcess(client, coordinator.bootstrap_servers, name, group=group, **options)


def settle(members: list[MemberProcess], what: str) -> None:
    wait_for(lambda: owned_exactly_once(members, PARTITIONS), SETTLE_S, what)


def member_ids(membership: MembershipRecorder, kind: str, group: str, name: str) -> list[str]:
    """Member ids of ``name`` (ids are the client id and a suffix) in ``kind`` events, in order."""
    return [
        e.member_id for e in membership.of(kind, group) if e.member_id and e.member_id.startswith(f"{name}-")
    ]


@pytest.mark.kafka_python
@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_mixed_group_of_java_kafka_python_and_librdkafka_members(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder, assignor: str
) -> None:
    """Three client implementations agree on one group through the coordinator (held heartbeats
    on): each partition is owned once, by nobody twice; a killed Java member's partitions move
    once its session expires (only those, under cooperative-sticky), and a Java member that is
    stopped gracefully leaves at once instead of expiring."""
    group = f"mixed-{assignor}"
    clients = [("java", "jm-0"), ("kafka-python", "km-1"), ("confluent", "rm-2"), ("java", "jm-3")]
    members = [start(coordinator, group, client, name, assignor=assignor) for client, name in clients]
    with running_members(members):
        settle(members, f"two Java, a kafka-python and a librdkafka member ({assignor}) to settle")
        assert [len(m.owned) for m in members] == [3, 3, 3, 3]
        before = {p: m.name for m in members for p in m.owned}

        members[0].kill()  # SIGKILL: only its session's expiry tells the coordinator
        settle(members, "the group to take over the SIGKILLed Java member's partitions")
        assert member_ids(membership, "expired", group, "jm-0"), "the killed member did not expire"
        if assignor == "cooperative-sticky":
            after = {p: m.name for m in members for p in m.owned}
            moved = {p for p in range(PARTITIONS) if after[p] != before[p]}
            assert moved == {p for p, name in before.items() if name == "jm-0"}

        members[3].terminate()  # SIGTERM: the Java consumer closes and sends LeaveGroup
        settle(members, "the group to take over the partitions of the Java member that left")
        assert member_ids(membership, "left", group, "jm-3"), "the Java member did not leave"
        assert not member_ids(membership, "expired", group, "jm-3")
        assert members[3].events("closed")
        assert not overlapping_ownership(members)


@pytest.mark.kafka_python
def test_static_java_member_restarts_without_a_rebalance(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    """KIP-345 with Kafka's own client: a static Java member killed and restarted inside its
    session is fenced under its old member id and gets its partitions back without a rebalance;
    nobody else sees a revocation. The restarted member is the group's leader: its JoinGroup
    (v9) is answered as Kafka answers it, naming it leader with every member and telling it to
    skip the assignment (KIP-814), and the Java client syncs without assigning."""
    group = "java-static"
    session_ms = 30_000  # a JVM restarts well inside it, even on a loaded machine

    def static(client: str, name: str) -> MemberProcess:
        return start(coordinator, group, client, name, instance_id=f"{name}-instance", session_ms=session_ms)

    members = [static("java", "js-0")]
    with running_members(members):
        settle(members, "the first static member, the group's leader")
        members += [static("kafka-python", "ks-1"), static("java", "js-2")]
        settle(members, "three static members to settle")
        mine = members[0].owned
        others = [m.owned for m in members[1:]]
        rebalances = len(membership.of("rebalance", group))
        revocations = [len(m.events("revoked")) for m in members[1:]]
        members[0].kill()
        members[0] = static("java", "js-0")
        settle(members, "the restarted static Java member to take its partitions back")
        assert members[0].owned == mine
        assert [m.owned for m in members[1:]] == others
        assert len(membership.of("rebalance", group)) == rebalances, "a rebalance happened"
        assert [len(m.events("revoked")) for m in members[1:]] == revocations
        fenced = membership.of("fenced", group)
        assert [e.group_instance_id for e in fenced] == ["js-0-instance"]
        assert not overlapping_ownership(members)


@pytest.mark.kafka_python
def test_paused_java_member_is_fenced_and_its_commits_refused(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    """A Java member frozen (SIGSTOP) past its session is expired and its partitions given away;
    thawed, it is a zombie whose old identity the coordinator refuses (its commits included), and
    it learns it lost its partitions before it owns any again under a new member id."""
    group = "java-zombie"
    bootstrap = coordinator.bootstrap_servers
    zombie = start(coordinator, group, "java", "jz-0", commit_every_ms=100)
    members = [
        zombie,
        start(coordinator, group, "kafka-python", "kz-1"),
        start(coordinator, group, "java", "jz-2"),
    ]
    with running_members(members):
        settle(members, "three members to settle")
        # Its reports say when a commit's outcome changes: the last one must be a success.
        wait_for(
            lambda: zombie.events("commit")[-1:] and zombie.events("commit")[-1]["ok"], SETTLE_S, "a commit"
        )
        old_member_id = member_ids(membership, "joined", group, "jz-0")[-1]
        old_generation = membership.of("generation", group)[-1].generation_id
        owned_before = zombie.owned

        zombie.pause()  # SIGSTOP: the JVM, heartbeat thread included, stands still
        wait_for(
            lambda: old_member_id in member_ids(membership, "expired", group, "jz-0"),
            SETTLE_S,
            "the paused Java member's session to expire",
        )
        wait_for(
            lambda: sorted(p for m in members[1:] for p in m.owned) == list(range(PARTITIONS)),
            SETTLE_S,
            "the live members to take over",
        )
        assert probe_commit(bootstrap, group, old_member_id, old_generation) == ErrorCode.UNKNOWN_MEMBER_ID

        seen = len(zombie.reports)
        zombie.resume()  # SIGCONT: it still believes it owns its partitions
        settle(members, "the fenced Java member to rejoin")
        rejected = [e.detail for e in membership.of("rejected", group) if e.member_id == old_member_id]
        assert rejected, "no request of the old identity was refused"
        assert all(
            d.split(":")[0] in ("Heartbeat", "OffsetCommit", "SyncGroup", "JoinGroup") for d in rejected
        )
        rejoined = member_ids(membership, "joined", group, "jz-0")[-1]
        assert rejoined != old_member_id
        # It learnt it had lost its partitions before it owned anything again, and no commit of
        # its old generation went through after the pause (a commit's first report after
        # resuming is a refusal, or it committed nothing before rejoining).
        after = [r for r in zombie.reports[seen:] if r.get("event") in ("lost", "revoked", "assigned")]
        assert after[0]["event"] == "lost", after
        assert set(after[0]["partitions"]) == set(owned_before)
        commits = [r for r in zombie.reports[seen:] if r.get("event") == "commit"]
        lost_at = after[0]["t"]
        assert all(not c["ok"] for c in commits if c["t"] <= lost_at), commits


def assigned(row: dict[str, str]) -> set[int]:
    """The partitions of ``events`` in a CURRENT-ASSIGNMENT cell such as 'events:0,1,2'."""
    cell = row["CURRENT-ASSIGNMENT"]
    return set() if cell == "-" else {int(p) for p in cell.removeprefix("events:").split(",")}


@pytest.mark.kafka_python
def test_kafka_consumer_groups_lists_describes_and_deletes_groups(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    """Kafka's kafka-consumer-groups reads the coordinator as it reads a Kafka cluster: groups,
    members, client ids, assignments and states match the members' own reports; what it cannot
    show (lag, since there is no log) fails as docs/coordinator.md says."""
    group = "tool-group"
    bootstrap = coordinator.bootstrap_servers
    clients = [("java", "jt-0"), ("kafka-python", "kt-1"), ("confluent", "rt-2")]
    # The Java member commits (librdkafka members here never do), so the group keeps offsets.
    members = [start(coordinator, group, c, n, commit_every_ms=500 if c == "java" else 0) for c, n in clients]
    # A group of another protocol type, as this project's own Coordinator groups are: the tool
    # only shows consumer groups, as it does against a Kafka cluster.
    with running_members(members), raw_group(bootstrap, "shard-group", protocol_type="shard"):
        settle(members, "a Java, a kafka-python and a librdkafka member to settle")
        wait_for(lambda: members[0].events("commit"), SETTLE_S, "the Java member to commit")

        listed = consumer_groups(bootstrap, "--list")
        assert listed.returncode == 0, listed
        assert listed.stdout.split() == [group], listed

        state = wait_for(lambda: stable_state(bootstrap, group), SETTLE_S, "the tool to see a Stable group")
        assert state["COORDINATOR (ID)"].split() == [bootstrap, "(0)"]
        assert state["ASSIGNMENT-STRATEGY"] == "range"
        assert state["#MEMBERS"] == "3"

        described = consumer_groups(bootstrap, "--describe", "--group", group, "--members", "--verbose")
        rows = {row["CLIENT-ID"]: row for row in table(described.stdout)}
        assert sorted(rows) == ["jt-0", "kt-1", "rt-2"], described
        for m in members:
            row = rows[m.name]
            assert row["GROUP"] == group
            assert row["CONSUMER-ID"].startswith(f"{m.name}-")
            assert row["HOST"] == "/127.0.0.1"
            assert int(row["#PARTITIONS"]) == 4
            assert assigned(row) == set(m.owned), (row, m.owned)

        # The offsets view needs every partition's log-end offset (ListOffsets) to show lag; the
        # coordinator keeps no log and says so (INVALID_REQUEST), and the tool gives up.
        offsets = consumer_groups(bootstrap, "--describe", "--group", group)
        assert "Error: Executing consumer group command failed" in offsets.output, offsets
        assert "InvalidRequestException" in offsets.output, offsets
        assert not table(offsets.stdout), offsets

        other = consumer_groups(bootstrap, "--describe", "--group", "shard-group", "--members")
        assert "GroupId shard-group is not a consumer group (shard)" in other.output, other

        refused = consumer_groups(bootstrap, "--delete", "--group", group)
        assert "GroupNotEmptyException" in refused.output, refused

        for m in members:
            m.terminate()
        wait_for(lambda: membership.of("emptied", group), SETTLE_S, "the group to empty")

    # Empty, its committed offsets kept: described, then deleted.
    state = consumer_groups(bootstrap, "--describe", "--group", group, "--state")
    [row] = table(state.stdout)
    assert (row["STATE"], row["#MEMBERS"]) == ("Empty", "0"), state
    empty = consumer_groups(bootstrap, "--describe", "--group", group, "--members")
    assert f"Consumer group '{group}' has no active members." in empty.output, empty
    # --delete-offsets (OffsetDelete) of one partition the Java member committed, and of one that
    # does not exist: the first goes, the others stay, the second is refused.
    first, *others = sorted(committed_partitions(bootstrap, group))
    assert others, "the Java member committed fewer partitions than it owned"
    forgot = consumer_groups(
        bootstrap, "--delete-offsets", "--group", group, "--topic", f"events:{first}", "--topic", "events:99"
    )
    assert forgot.returncode == 0, forgot
    assert re.search(rf"^events +{first} +Successful *$", forgot.stdout, re.MULTILINE), forgot
    assert re.search(
        r"^events +99 +Error: .*UnknownTopicOrPartitionException", forgot.stdout, re.MULTILINE
    ), forgot
    assert committed_partitions(bootstrap, group) == set(others)

    deleted = consumer_groups(bootstrap, "--delete", "--group", group)
    assert f"Deletion of requested consumer groups ('{group}') was successful." in deleted.output, deleted
    assert membership.of("deleted", group)
    gone = consumer_groups(bootstrap, "--list")
    assert gone.stdout.split() == [], gone
    # As Kafka 4.3.1's broker answers it (DescribeGroups v6, KIP-1043), the tool says so.
    missing = consumer_groups(bootstrap, "--describe", "--group", group, "--state")
    assert f"GroupIdNotFoundException: Group {group} not found." in missing.output, missing


def committed_partitions(bootstrap: str, group: str) -> set[int]:
    """The partitions of ``events`` with a committed offset in ``group`` (kafka-python's admin)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {tp.partition for tp, meta in offsets.items() if tp.topic == "events" and meta.offset >= 0}


def stable_state(bootstrap: str, group: str) -> dict[str, str] | None:
    """The tool's --state row for ``group`` once it says Stable (None before)."""
    run = consumer_groups(bootstrap, "--describe", "--group", group, "--state")
    rows = table(run.stdout)
    return rows[0] if len(rows) == 1 and rows[0]["STATE"] == "Stable" else None
