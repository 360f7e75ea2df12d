"""Real Kafka clients (kafka-python, librdkafka) in real processes, grouped by the embedded coordinator."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import kafka.errors
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.protocol.consumer.group import (
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
)
from kafka.structs import OffsetAndMetadata
from member_processes import (
    MemberProcess,
    overlapping_ownership,
    owned_exactly_once,
    running_members,
    wait_for,
)

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import MembershipRecorder, recording_membership
from coordinator_api.testing import free_port

PARTITIONS = 12
SESSION_MS = 3000
SETTLE_S = 60
QUIET_S = 2.0

# Tests marked kafka_python start kafka-python members. kafka-python 3.0.12 has a join stall of
# its own (tests/member_processes.py, kafka_python_join_stall); such a test runs again only when
# a wait timed out while a member's log showed that stall (tests/kafka_python_reruns.py). Every
# other failure, and any failure of a librdkafka-only test, fails the run.


@pytest.fixture
def membership() -> Iterator[MembershipRecorder]:
    with recording_membership() as recorder:
        yield recorder


def start(
    coordinator: EmbeddedCoordinator, client: str, names: list[str], **options: object
) -> list[MemberProcess]:
    options.setdefault("session_ms", SESSION_MS)
    return [MemberProcess(client, coordinator.bootstrap_servers, name, **options) for name in names]


def settle(members: list[MemberProcess], what: str) -> None:
    wait_for(lambda: owned_exactly_once(members, PARTITIONS), SETTLE_S, what)


def settle_steadily(
    members: list[MemberProcess], membership: MembershipRecorder, group: str, what: str
) -> int:
    """:func:`settle`, and then wait until ``group`` has gone ``QUIET_S`` without a rebalance
    starting or a generation forming, its partitions owned exactly once; returns how many
    generations it had. A kafka-python 3.0.12 leader assigns its first generation from an empty
    metadata snapshot and joins again once its metadata arrives, half a second or so later (its
    ``need_rejoin``), so a group of kafka-python members is steady only after that. The rebalance
    counts from its start: the followers rejoin at their next heartbeat, which with 15 s
    sessions is 2.5 s away, longer than ``QUIET_S``."""
    settle(members, what)

    def changes() -> int:
        return len(membership.of("rebalance", group)) + len(membership.of("generation", group))

    def quiet() -> int | None:
        before = changes()
        time.sleep(QUIET_S)
        steady = before and changes() == before and owned_exactly_once(members, PARTITIONS)
        return len(membership.of("generation", group)) if steady else None

    generations: int = wait_for(quiet, SETTLE_S, f"{what}, steady")
    return generations


@pytest.mark.kafka_python
@pytest.mark.parametrize("size", [1, 3, 10])
def test_kafka_python_group_owns_every_partition_once(coordinator: EmbeddedCoordinator, size: int) -> None:
    names = [f"kp-{i}" for i in range(size)]
    with running_members(start(coordinator, "kafka-python", names)) as members:
        settle(members, f"{size} kafka-python members to own 12 partitions once")
        assert len({p for m in members for p in m.owned}) == PARTITIONS
        if size == 1:
            return
        members[0].terminate()
        settle(members, "the group to reassign the partitions of a member that left")
        members[1].kill()
        settle(members, "the group to reassign the partitions of a SIGKILLed member")
        assert not overlapping_ownership(members)


@pytest.mark.kafka_python
def test_cooperative_sticky_moves_only_what_must(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    names = ["coop-0", "coop-1", "coop-2"]
    # Sessions long enough that a member starved of CPU keeps its place: the test counts what moves.
    opts = {"assignor": "cooperative-sticky", "session_ms": 10_000}
    with running_members(start(coordinator, "kafka-python", names, **opts)) as members:
        settle(members, "three cooperative members to settle")
        before = {p: m.name for m in members for p in m.owned}
        seen = [len(m.reports) for m in members]
        members.extend(start(coordinator, "kafka-python", ["coop-3"], **opts))
        settle(members, "four cooperative members to settle")
        after = {p: m.name for m in members for p in m.owned}
        moved = {p for p in range(PARTITIONS) if before[p] != after[p]}
        # Only what the newcomer needs moves, and each moved partition went to it.
        history = {m.name: m.reports[count:] for m, count in zip(members, [*seen, 0])}
        assert len(moved) == PARTITIONS // 4, (before, after, history)
        assert all(after[p] == "coop-3" for p in moved)
        assert not overlapping_ownership(members)
        # Since the newcomer arrived, nothing was revoked that did not move.
        for m, count in zip(members, seen):
            later = m.reports[count:]
            revoked = {p for r in later if r.get("event") == "revoked" for p in r["partitions"]}
            assert revoked <= moved, f"{m.name} revoked {revoked - moved} that did not need to move"


def test_librdkafka_group_owns_every_partition_once(coordinator: EmbeddedCoordinator) -> None:
    names = ["rd-0", "rd-1", "rd-2"]
    with running_members(start(coordinator, "confluent", names)) as members:
        settle(members, "three librdkafka members to own 12 partitions once")
        members[0].terminate()
        settle(members, "librdkafka members to reassign after a graceful leave")
        members[1].kill()
        settle(members, "librdkafka members to reassign after SIGKILL")
        assert not overlapping_ownership(members)


def test_librdkafka_cooperative_sticky(coordinator: EmbeddedCoordinator) -> None:
    opts = {"assignor": "cooperative-sticky"}
    with running_members(start(coordinator, "confluent", ["rc-0", "rc-1", "rc-2"], **opts)) as members:
        settle(members, "three cooperative librdkafka members")
        before = {p: m.name for m in members for p in m.owned}
        members[2].terminate()
        settle(members, "two cooperative librdkafka members")
        after = {p: m.name for m in members for p in m.owned}
        moved = {p for p in range(PARTITIONS) if before[p] != after[p]}
        assert moved == {p for p, name in before.items() if name == "rc-2"}
        assert not overlapping_ownership(members)


@pytest.mark.kafka_python
def test_mixed_kafka_python_and_librdkafka_group_converges(coordinator: EmbeddedCoordinator) -> None:
    kp = start(coordinator, "kafka-python", ["mix-kp-0", "mix-kp-1"])
    rd = start(coordinator, "confluent", ["mix-rd-0", "mix-rd-1"])
    with running_members(kp + rd) as members:
        settle(members, "a mixed group of kafka-python and librdkafka members")
        assert all(len(m.owned) == 3 for m in members)
        rd[0].kill()
        settle(members, "the mixed group after a librdkafka member died")


@pytest.mark.kafka_python
def test_static_member_restart_gets_its_partitions_back_without_rebalance(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    session_ms = 15000  # long enough to restart a process inside it
    names = ["static-0", "static-1", "static-2"]
    members = [
        MemberProcess(
            "kafka-python",
            coordinator.bootstrap_servers,
            name,
            instance_id=f"{name}-instance",
            session_ms=session_ms,
        )
        for name in names
    ]
    with running_members(members):
        # Steady first: kafka-python's leader rejoins once after its first assignment, a
        # rebalance before the restart that must not be counted as the restart's.
        settle_steadily(members, membership, "g", "three static members")
        mine = members[1].owned
        others = {m.name: m.owned for m in (members[0], members[2])}
        rebalances_before = len(membership.of("rebalance", "g"))
        revocations_before = [len(m.events("revoked")) for m in (members[0], members[2])]
        members[1].kill()
        members[1] = MemberProcess(
            "kafka-python",
            coordinator.bootstrap_servers,
            "static-1",
            instance_id="static-1-instance",
            session_ms=session_ms,
        )
        settle(members, "the restarted static member to take its partitions back")
        assert members[1].owned == mine
        assert {m.name: m.owned for m in (members[0], members[2])} == others
        assert len(membership.of("rebalance", "g")) == rebalances_before, "a rebalance happened"
        assert [len(m.events("revoked")) for m in (members[0], members[2])] == revocations_before
        fenced = membership.of("fenced", "g")
        assert fenced and fenced[-1].group_instance_id == "static-1-instance"


@pytest.mark.kafka_python
def test_zombie_is_fenced_and_rejoins_as_a_new_member(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    names = ["z-0", "z-1", "z-2"]
    with running_members(start(coordinator, "kafka-python", names, commit_every_ms=200)) as members:
        settle(members, "three members")
        zombie = members[2]
        joined = [e for e in membership.of("joined", "g") if (e.member_id or "").startswith("z-2-")]
        old_member_id = joined[-1].member_id
        old_generation = membership.of("generation", "g")[-1].generation_id
        zombie.pause()
        # Past its session the coordinator expires it and the others take its partitions.
        wait_for(
            lambda: any(e.member_id == old_member_id for e in membership.of("expired", "g")),
            SETTLE_S,
            "the paused member's session to expire",
        )
        wait_for(
            lambda: sorted(p for m in members[:2] for p in m.owned) == list(range(PARTITIONS)),
            SETTLE_S,
            "the live members to take over",
        )
        # The zombie's identity can no longer commit.
        assert probe_commit(coordinator, old_member_id, old_generation) == ErrorCode.UNKNOWN_MEMBER_ID
        zombie.resume()
        wait_for(
            lambda: any(e.member_id == old_member_id for e in membership.of("rejected", "g")),
            SETTLE_S,
            "the zombie's first request to be rejected",
        )
        settle(members, "the zombie to rejoin")
        rejoined = [e for e in membership.of("joined", "g") if (e.member_id or "").startswith("z-2-")]
        assert rejoined[-1].member_id != old_member_id
        rejected = [e.detail for e in membership.of("rejected", "g") if e.member_id == old_member_id]
        assert any(d.startswith(("Heartbeat", "OffsetCommit", "SyncGroup")) for d in rejected)
        # The zombie learnt it had lost its partitions before anyone else owned them.
        assert zombie.events("lost") or zombie.events("revoked")


def probe_commit(coordinator: EmbeddedCoordinator, member_id: str | None, generation: int) -> int:
    """Commit as the given member with a raw OffsetCommit; return the partition's error code."""
    import socket

    request = OffsetCommitRequest(
        version=7,
        group_id="g",
        generation_id_or_member_epoch=generation,
        member_id=member_id or "",
        group_instance_id=None,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name="events",
                partitions=[
                    OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=999,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )
    request.with_header(correlation_id=1, client_id="probe")
    host, port = coordinator.bootstrap_servers.split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request.encode(header=True, framed=True))
        size = int.from_bytes(_recv(sock, 4), "big")
        response = OffsetCommitResponse.decode(_recv(sock, size), version=7, header=True)
    return int(response.topics[0].partitions[0].error_code)


def _recv(sock: object, n: int) -> bytes:
    import socket as _socket

    assert isinstance(sock, _socket.socket)
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


@pytest.mark.kafka_python
def test_restart_with_data_dir_keeps_offsets_and_members_rejoin(
    tmp_path: object, fast_config: CoordinatorConfig, membership: MembershipRecorder
) -> None:
    data_dir = str(tmp_path)
    # The second coordinator binds the first one's port again: one below the ephemeral range,
    # which no outgoing connection can take as its local port in between.
    port = free_port()
    with EmbeddedCoordinator(
        topics={"events": PARTITIONS}, config=fast_config, data_dir=data_dir, port=port
    ) as first:
        members = [
            MemberProcess(
                "kafka-python", first.bootstrap_servers, "dur-0", session_ms=10000, commit_every_ms=200
            )
        ]
        with running_members(members):
            # Not while the member joins again (kafka-python then never rejoins the restarted
            # coordinator: its SyncGroup's connection was lost).
            settle_steadily(members, membership, "g", "a member before the restart")
            wait_for(lambda: bool(committed(first)), 30, "offsets to be committed")
            # Frozen across the restart (well within its 10 s session), so that what the
            # restarted coordinator answers first is what it read back, not a newer commit.
            members[0].pause()
            first.close()
            before = committed_offline(data_dir)
            with EmbeddedCoordinator(
                topics={"events": PARTITIONS}, config=fast_config, data_dir=data_dir, port=port
            ) as second:
                assert committed(second) == before
                assert set(before) == {TopicPartition("events", p) for p in range(PARTITIONS)}
                members[0].resume()
                # The member reconnects to the restarted coordinator and keeps (or rejoins) its group.
                wait_for(
                    lambda: committed(second) != before and owned_exactly_once(members, PARTITIONS),
                    SETTLE_S,
                    "the member to commit again through the restarted coordinator",
                )


def committed(coordinator: EmbeddedCoordinator) -> dict[TopicPartition, int]:
    admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap_servers)
    try:
        return {tp: meta.offset for tp, meta in admin.list_group_offsets("g")["g"].items()}
    finally:
        admin.close()


def committed_offline(data_dir: str) -> dict[TopicPartition, int]:
    from pathlib import Path

    from coordinator_api.server._store import SqliteStore

    store = SqliteStore(Path(data_dir))
    try:
        _, _, offsets = store.load()
    finally:
        store.close()
    return {TopicPartition(o.topic, o.partition): o.offset for group, o in offsets if group == "g"}


def test_kafka_pythons_admin_client_deletes_offsets_durably(tmp_path: Path) -> None:
    """kafka-python's ``KafkaAdminClient.delete_group_offsets`` (OffsetDelete): while a consumer
    reads ``events``, its offsets stay (GROUP_SUBSCRIBED_TO_TOPIC) and another topic's go; once
    the group is Empty, any go; a group that does not exist is refused. What is deleted is gone
    from the data directory."""
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    events, other = [TopicPartition("events", p) for p in range(2)], TopicPartition("other", 0)
    with EmbeddedCoordinator(
        topics={"events": 2, "other": 1}, config=config, data_dir=tmp_path
    ) as coordinator:
        consumer = KafkaConsumer("events", bootstrap_servers=coordinator.bootstrap_servers, group_id="g")
        admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap_servers)
        try:

            def joined() -> bool:
                # A long poll: one that gives up mid-join hits kafka-python 3.0.12's join stall.
                consumer.poll(timeout_ms=2000)
                return bool(consumer.assignment())

            wait_for(joined, 30, "the consumer to join")
            consumer.commit({tp: OffsetAndMetadata(7, "", -1) for tp in (*events, other)})
            assert admin.delete_group_offsets("g", [events[0], other]) == {
                events[0]: kafka.errors.GroupSubscribedToTopicError,
                other: kafka.errors.NoError,
            }
            consumer.close()
            assert admin.delete_group_offsets("g", [events[0]]) == {events[0]: kafka.errors.NoError}
            with pytest.raises(kafka.errors.GroupIdNotFoundError):
                admin.delete_group_offsets("nobody", [events[0]])
            assert set(admin.list_group_offsets({"g": None})["g"]) == {events[1]}
        finally:
            consumer.close()
            admin.close()
    assert committed_offline(str(tmp_path)) == {events[1]: 7}


# --- conformance with Kafka's group coordinator, with real clients (see test_differential.py) -----


@pytest.mark.kafka_python
def test_an_absent_static_leader_is_replaced_and_stays_in_the_group(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    """Static kafka-python members, session 20 s (a heartbeat every 3.3 s), rebalance timeout
    8 s. The leader is paused (SIGSTOP) and a third member joins: when the rebalance times out,
    a member that rejoined leads and assigns over all three (the paused static member keeps its
    place and its share until its session ends), as Kafka's maybeElectNewJoinedLeader does,
    instead of naming the absent leader and waiting for it; the paused member is not evicted by
    the rebalance. (What the paused member believes it owns is its own business: it learns only
    when resumed.)"""

    def static(name: str) -> MemberProcess:
        return MemberProcess(
            "kafka-python",
            coordinator.bootstrap_servers,
            name,
            group="absent-leader",
            instance_id=f"{name}-instance",
            session_ms=20_000,
            max_poll_ms=8_000,
        )

    leader = static("kl-0")
    members = [leader]
    with running_members(members):
        wait_for(lambda: owned_exactly_once([leader], PARTITIONS), SETTLE_S, "the first member to lead")
        members.append(static("kl-1"))
        settle(members, "two static members")
        leader.pause()
        members.append(static("kl-2"))
        owned_without_leader = wait_for(
            lambda: all(m.owned for m in members[1:]) and sum(len(m.owned) for m in members[1:]) == 8,
            SETTLE_S,
            "the members that rejoined to share 8 partitions, 4 staying with the paused leader",
        )
        assert owned_without_leader
        gone = [
            e for e in membership.events if e.group_id == "absent-leader" and e.kind in ("removed", "expired")
        ]
        assert not gone, f"the paused static leader was evicted by the rebalance: {gone}"
        leader.resume()
        settle(members, "the resumed member to rejoin")
    assert not overlapping_ownership(members[1:])


@pytest.mark.kafka_python
def test_the_first_rebalance_does_not_wait_for_a_member_that_never_came_back(
    coordinator: EmbeddedCoordinator,
) -> None:
    """A JoinGroup answered MEMBER_ID_REQUIRED whose client never comes back (session 30 s)
    does not hold up the first rebalance of the group (no initial delay here, as in Kafka's 0 ms
    timer): a kafka-python member settles at once, not after that session."""
    request = JoinGroupRequest(
        version=5,
        group_id="pending-first",
        session_timeout_ms=30_000,
        rebalance_timeout_ms=30_000,
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")],
    )
    request.with_header(correlation_id=1, client_id="vanishing")
    host, port = coordinator.bootstrap_servers.rsplit(":", 1)
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = int.from_bytes(sock.recv(4), "big")
        answer = JoinGroupResponse.decode(sock.recv(size), version=5, header=True)
    assert answer.error_code == ErrorCode.MEMBER_ID_REQUIRED
    (member,) = start(coordinator, "kafka-python", ["kp-first"], group="pending-first")
    with running_members([member]):
        wait_for(
            lambda: owned_exactly_once([member], PARTITIONS), 20, "the member to settle without the other"
        )


@pytest.mark.kafka_python
def test_a_member_beyond_the_group_max_size_is_turned_away(membership: MembershipRecorder) -> None:
    """``max_group_size`` with real clients: a third kafka-python member of a group limited to
    two is turned away (GROUP_MAX_SIZE_REACHED) and gets nothing; the two keep every partition
    without a rebalance."""
    config = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500, max_group_size=2)
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=config) as coordinator:
        # Sessions long enough that a member starved of CPU a few seconds keeps its place: the
        # group must not change but for the third member (a 3 s session once expired the leader).
        members = start(
            coordinator, "kafka-python", ["kmax-0", "kmax-1"], group="max-size", session_ms=15_000
        )
        with running_members(members):
            # A third member that joined during the leader's second join would be let in, and,
            # as on Kafka, the last of the group to rejoin turned away instead.
            generations = settle_steadily(members, membership, "max-size", "two members")
            before = [m.owned for m in members]
            (third,) = start(coordinator, "kafka-python", ["kmax-2"], group="max-size", session_ms=15_000)
            third.ended_by_test = True  # kafka-python may give up on GROUP_MAX_SIZE_REACHED
            members.append(third)
            wait_for(
                lambda: (
                    "GroupMaxSizeReached" in third.stderr_text()
                    or "GROUP_MAX_SIZE_REACHED" in third.stderr_text()
                ),
                SETTLE_S,
                "the third member to be turned away",
            )
            assert not third.owned
            assert [m.owned for m in members[:2]] == before
            assert len(membership.of("generation", "max-size")) == generations
