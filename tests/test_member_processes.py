"""The process harness itself (tests/member_processes.py): a member process that crashes fails the
test at once with its last output, and kafka-python 3.0.12's join stall is told apart from any
other timeout by the client's own log."""

from __future__ import annotations

import importlib.util
import inspect
import time
from pathlib import Path

import kafka.coordinator.base
import kafka.coordinator.consumer
import pytest
from member_processes import (
    JOIN_COMPLETED,
    JOIN_STARTED,
    KAFKA_MEMBER,
    POLL_GAVE_UP,
    SHARD_MEMBER,
    STALL_QUIET_S,
    SYNC_ANSWERED,
    KafkaPythonJoinStall,
    MemberCrashed,
    MemberProcess,
    crash_watch,
    kafka_python_join_stall,
    owned_exactly_once,
    running_members,
    wait_for,
    without_repeats,
)

from coordinator_api import EmbeddedCoordinator

PARTITIONS = 12

# --- a member that crashes ---------------------------------------------------------------------


def test_a_member_that_crashes_at_start_fails_the_wait_at_once_with_its_last_output(
    coordinator: EmbeddedCoordinator,
) -> None:
    """Two good members settle the group; the third dies at start (librdkafka refuses its
    assignor). Counting only live members, the group looked settled; now the wait fails at
    once, naming the member, its exit code and what it printed last."""
    good = [
        MemberProcess("confluent", coordinator.bootstrap_servers, f"good-{i}", session_ms=3000)
        for i in range(2)
    ]
    broken = MemberProcess(
        "confluent", coordinator.bootstrap_servers, "broken", session_ms=3000, assignor="no-such-assignor"
    )
    with running_members([*good, broken]) as members:
        started = time.monotonic()
        with pytest.raises(MemberCrashed) as crashed:
            wait_for(lambda: owned_exactly_once(members, PARTITIONS), 60, "the group to settle")
        assert time.monotonic() - started < 30, "a crash is reported at once, not at the timeout"
    message = str(crashed.value)
    assert "member process broken exited with code 1, and the test did not stop it" in message
    assert "no-such-assignor" in message  # librdkafka's own words, from the member's stderr
    assert "good-" not in message.splitlines()[0]


def test_the_group_helper_of_a_test_fails_on_a_crash_too(coordinator: EmbeddedCoordinator) -> None:
    """The helpers that count live members check for crashes themselves, without a wait."""
    broken = MemberProcess(
        "confluent", coordinator.bootstrap_servers, "broken", session_ms=3000, assignor="no-such-assignor"
    )
    broken.process.wait(timeout=30)
    with pytest.raises(MemberCrashed, match="broken exited with code 1"):
        owned_exactly_once([broken], PARTITIONS)


def test_a_shard_member_that_crashes_is_reported_with_its_traceback(coordinator: EmbeddedCoordinator) -> None:
    broken = MemberProcess("", coordinator.bootstrap_servers, "v3", script=SHARD_MEMBER, release=3)
    with running_members([broken]), pytest.raises(MemberCrashed) as crashed:
        wait_for(lambda: False, 60, "nothing")
    assert "KeyError: 3" in str(crashed.value)  # the last line of its traceback


def test_members_the_test_ends_are_not_crashes(coordinator: EmbeddedCoordinator) -> None:
    members = [
        MemberProcess("confluent", coordinator.bootstrap_servers, f"m-{i}", session_ms=3000) for i in range(3)
    ]
    with running_members(members):
        wait_for(lambda: owned_exactly_once(members, PARTITIONS), 60, "three members")
        members[0].kill()
        members[1].terminate()
        wait_for(lambda: owned_exactly_once(members, PARTITIONS), 60, "the last member")
    assert all(m.crash() is None for m in members)


def test_a_crash_after_the_last_wait_fails_the_test_at_its_end(coordinator: EmbeddedCoordinator) -> None:
    def a_test_whose_member_dies_after_its_last_wait() -> None:
        with crash_watch():  # around each test, as tests/conftest.py does
            late = MemberProcess(
                "confluent",
                coordinator.bootstrap_servers,
                "late",
                session_ms=3000,
                assignor="no-such-assignor",
            )
            late.process.wait(timeout=30)

    with pytest.raises(MemberCrashed, match="late exited with code 1"):
        a_test_whose_member_dies_after_its_last_wait()


def test_a_line_that_is_not_a_report_is_a_crash(tmp_path: Path) -> None:
    chatty = tmp_path / "chatty_member.py"
    chatty.write_text('import json\nprint(json.dumps({"event": "started"}))\nprint("not json")\n')
    member = MemberProcess("", "127.0.0.1:1", "chatty", script=chatty)
    member.process.wait(timeout=30)
    member._reader.join(timeout=10)
    with pytest.raises(MemberCrashed, match="chatty printed a line that is not a report: 'not json'"):
        wait_for(lambda: False, 10, "nothing")
    assert member.reports == [{"event": "started"}]


# --- kafka-python 3.0.12's join stall ------------------------------------------------------------


def line(t: float, message: str, thread: str = "kafka-io-m", logger: str = "kafka.coordinator") -> str:
    return f"{t:.3f} {thread} {logger} DEBUG {message}"


STARTED = line(100.0, JOIN_STARTED)
GAVE_UP = line(100.1, POLL_GAVE_UP, "MainThread", "kafka.coordinator.consumer")
ANSWERED = line(100.2, SYNC_ANSWERED + "SyncGroupResponse(version=5, throttle_time_ms=0, error_code=0, x=1)")
REFUSED = line(100.2, SYNC_ANSWERED + "SyncGroupResponse(version=5, throttle_time_ms=0, error_code=27, x=1)")
COMPLETED = line(100.3, JOIN_COMPLETED, logger="kafka.coordinator.heartbeat")
LATER = 100.2 + STALL_QUIET_S + 1


def test_the_stall_is_a_poll_that_gave_up_then_a_sync_answer_and_no_completion() -> None:
    log = "\n".join(
        [line(99.0, "Successfully joined group g", logger="kafka.coordinator"), STARTED, GAVE_UP, ANSWERED]
    )
    assert kafka_python_join_stall(log, LATER) == [STARTED, GAVE_UP, ANSWERED]


@pytest.mark.parametrize(
    ("lines", "now", "why"),
    [
        ([STARTED, GAVE_UP, ANSWERED, COMPLETED], LATER, "the join completed"),
        ([STARTED, ANSWERED], LATER, "no poll gave up during the join"),
        ([STARTED, GAVE_UP, REFUSED], LATER, "the SyncGroup was refused: the client rejoins"),
        ([STARTED, GAVE_UP], LATER, "still waiting for the coordinator's answer"),
        ([STARTED, GAVE_UP, ANSWERED], 100.2 + STALL_QUIET_S - 1, "the next poll may still complete it"),
        ([STARTED, ANSWERED, GAVE_UP], LATER, "the poll gave up after the answer"),
        ([GAVE_UP, ANSWERED], LATER, "no join attempt in the log"),
        ([STARTED, GAVE_UP, ANSWERED, COMPLETED, line(101.0, JOIN_STARTED)], LATER, "a new attempt runs"),
        ([], LATER, "an empty log"),
    ],
)
def test_anything_else_is_not_the_stall(lines: list[str], now: float, why: str) -> None:
    assert kafka_python_join_stall("\n".join(lines), now) is None, why


def test_the_messages_are_kafka_pythons_own_and_the_member_logs_each_of_them() -> None:
    """If kafka-python changed a message, the stall would never be recognised again: fail here."""
    source = inspect.getsource(kafka.coordinator.base) + inspect.getsource(kafka.coordinator.consumer)
    for message in (JOIN_STARTED, POLL_GAVE_UP, SYNC_ANSWERED + "%s", JOIN_COMPLETED):
        assert f"'{message}'" in source or f'"{message}"' in source, message
    spec = importlib.util.spec_from_file_location("kafka_member", KAFKA_MEMBER)
    assert spec is not None and spec.loader is not None
    kafka_member = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kafka_member)
    logged = kafka_member.JOIN_LOG
    assert logged == {JOIN_STARTED, POLL_GAVE_UP, SYNC_ANSWERED + "%s", JOIN_COMPLETED}


def test_a_kafka_python_member_without_the_workarounds_stalls_and_the_harness_says_so(
    coordinator: EmbeddedCoordinator,
) -> None:
    """The real stall, provoked: a member that joins before it knows the topic's partitions and
    polls for 1 ms assigns nothing, rejoins when the metadata arrives, and its poll gives up
    during that join. (It stalls more often than not, but not every time: up to eight members are
    tried, each in a few seconds when it joins.) The wait reports the stall as soon as the
    member's log shows it, long before the wait's own timeout."""
    stall: KafkaPythonJoinStall | None = None
    for attempt in range(8):
        member = MemberProcess(
            "kafka-python",
            coordinator.bootstrap_servers,
            f"stalling-{attempt}",
            group=f"stall-{attempt}",
            session_ms=3000,
            poll_ms=1,
            join_before_metadata=1,
        )
        with running_members([member]):
            started = time.monotonic()
            try:
                wait_for(lambda m=member: len(m.owned) == PARTITIONS, 60, "a lone member")
            except KafkaPythonJoinStall as raised:
                stall, reported_after = raised, time.monotonic() - started
                break
    assert stall is not None, "eight kafka-python members without the workarounds all joined: no stall"
    assert reported_after < 30, reported_after  # as soon as the log shows it, not at the timeout
    assert stall.member == member.name
    assert stall.lines[1].endswith(POLL_GAVE_UP)
    assert "error_code=0," in stall.lines[2]
    assert all(text in member.stderr_text() for text in stall.lines)
    assert POLL_GAVE_UP in str(stall)


# Marked as every test with kafka-python members is: it runs again if one of them really stalls.
@pytest.mark.kafka_python
def test_a_healthy_kafka_python_member_is_never_taken_for_a_stalled_one(
    coordinator: EmbeddedCoordinator,
) -> None:
    members = [
        MemberProcess(
            "kafka-python",
            coordinator.bootstrap_servers,
            f"healthy-{i}",
            session_ms=3000,
            assignor="cooperative-sticky",
        )
        for i in range(3)
    ]
    with running_members(members):
        wait_for(lambda: owned_exactly_once(members, PARTITIONS), 60, "three kafka-python members")
        log = members[0].stderr_text()
        assert JOIN_STARTED in log and SYNC_ANSWERED in log and JOIN_COMPLETED in log
        assert all(kafka_python_join_stall(m.stderr_text(), time.time() + 3600) is None for m in members)


def test_a_wait_that_times_out_shows_what_each_member_said_last_and_its_threads(
    coordinator: EmbeddedCoordinator,
) -> None:
    """A wait for what never comes fails with a line for each member, the coordinator's view of
    their group, the members' last reports, the tail of their logs (for this project's member,
    its machine's events and actions) and every thread's stack."""
    member = MemberProcess(
        "ours", coordinator.bootstrap_servers, "o0", group="g", group_protocol="consumer", session_ms=3000
    )
    with running_members([member]):
        wait_for(lambda: member.events("assigned"), 60, "o0 to be assigned")
        with pytest.raises(AssertionError) as timed_out:
            wait_for(lambda: False, 0.5, "what never comes")
    message = str(timed_out.value)
    assert message.startswith("timed out after 0.5 s waiting for what never comes\n")
    assert "\no0 (ours): running, owns [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]; last report " in message
    view = "\ngroup g: Stable, protocol type consumer, incremental protocol"
    assert view in message  # the coordinator's view of the group
    assert '"event": "assigned"' in message  # its last reports
    assert "SendGroupHeartbeat(" in message and "owned=frozenset({" in message  # its machine's log
    assert "(b'" not in message  # partitions by number
    assert "o0: its threads now" in message and "_driver.py" in message  # its stacks
    assert "in run_ours" in message  # the application's thread, where it is


def test_a_log_line_repeated_back_to_back_is_shown_once_with_its_count() -> None:
    metadata = "kafka.cluster INFO Updated metadata: ClusterMetadata(brokers: 1)"
    log = [
        f"1.0 io {metadata}",
        f"1.1 io {metadata}",
        f"1.2 main {metadata}",
        "1.3 io kafka.coordinator INFO (Re-)joining group g",
        f"1.4 io {metadata}",
    ]
    assert without_repeats(log) == [
        f"1.0 io {metadata}",
        "(the line above 2 more times)",
        "1.3 io kafka.coordinator INFO (Re-)joining group g",
        f"1.4 io {metadata}",
    ]
