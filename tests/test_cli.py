"""The ``coordinator-api`` command, run as a real process."""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from coordinator_consumer import ConsumerGroupMember
from coordinator_leader import LeaderElection
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._cli import _groups_shorthand, build_parser, table
from coordinator_api.testing import KafkaCluster

CLI = [sys.executable, "-m", "coordinator_api"]
ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def serving(*args: str) -> Iterator[KafkaConsumer]:
    """``coordinator-api serve --port 0`` with ``args``, and a kafka-python consumer of it; the
    server must stop cleanly on SIGTERM afterwards."""
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("coordinator listening on 127.0.0.1:")
        consumer = KafkaConsumer(bootstrap_servers=line.rsplit(" ", 1)[1].strip())
        try:
            yield consumer
        finally:
            consumer.close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


def test_serve_declares_topics_from_flags_and_config_file(tmp_path: Path) -> None:
    # docs/coordinator.md's config file, as written (events = 12, orders = 6); the flag overrides it.
    config = tmp_path / "coordinator.toml"
    example = re.findall(r"```toml\n(.*?)```", (ROOT / "docs" / "coordinator.md").read_text(), re.DOTALL)[0]
    assert "events = 12" in example and "orders = 6" in example
    config.write_text(example)
    with serving("--topic", "events:3", "--config", str(config)) as consumer:
        assert consumer.partitions_for_topic("events") == {0, 1, 2}
        assert consumer.partitions_for_topic("orders") == set(range(6))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "events"], "NAME:PARTITIONS"),
        (["--topic", "events:0"], "NAME:PARTITIONS"),
        (["--min-session-timeout-ms", "9000", "--max-session-timeout-ms", "1000"], "must not exceed"),
        (["--network-thread"], "set heartbeat_hold_ms to 0 (it is 5000)"),
    ],
)
def test_serve_rejects_bad_arguments_with_a_clear_message(args: list[str], message: str) -> None:
    result = subprocess.run(
        [*CLI, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    assert message in result.stderr


def test_serve_with_the_network_thread_serves_clients_and_stops_on_sigterm() -> None:
    with serving("--topic", "events:3", "--heartbeat-hold-ms", "0", "--network-thread") as consumer:
        assert consumer.partitions_for_topic("events") == {0, 1, 2}


def test_serve_freezes_what_it_loaded_and_collects_young_objects_less_often() -> None:
    # The serve process's own collector settings, as it logs them (docs/coordinator.md).
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().startswith("coordinator listening on 127.0.0.1:")
    process.send_signal(signal.SIGTERM)
    _, log = process.communicate(timeout=10)
    assert process.returncode == 0
    said = r"garbage collector: (\d+) objects .* young-generation threshold 10000 \(was 700\)"
    found = re.search(said, log)
    assert found is not None, log
    assert int(found.group(1)) > 10_000  # the modules and plugins, at least


def test_serve_rejects_unknown_config_settings(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[coordinator]\nsession_timeout = 5\n")
    result = subprocess.run(
        [*CLI, "serve", "--port", "0", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "unknown coordinator setting(s) session_timeout" in result.stderr


def test_embedded_create_topic_reports_errors() -> None:
    with EmbeddedCoordinator(topics={"events": 2}, config=CoordinatorConfig()) as coordinator:
        coordinator.create_topic("more", 4)
        with pytest.raises(ConfigurationError, match="already exists"):
            coordinator.create_topic("events", 3)
        with pytest.raises(ConfigurationError, match="partitions"):
            coordinator.create_topic("empty", 0)
        consumer = KafkaConsumer(bootstrap_servers=coordinator.bootstrap_servers)
        try:
            assert consumer.partitions_for_topic("more") == {0, 1, 2, 3}
        finally:
            consumer.close()


def cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)


def test_version_and_global_flags_before_or_after_the_command() -> None:
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("coordinator-api ")
    for args in (["--log-level", "debug", "plugins"], ["plugins", "--log-level", "debug"]):
        result = cli(*args)
        assert result.returncode == 0, result.stderr
        assert "plugins (entry-point group 'coordinator_api'):" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["serve", "--port", "70000"],
            "argument --port: 70000 is out of range: give a number from 0 to 65535",
        ),
        (["serve", "--port", "nine"], "argument --port: 'nine' is not a whole number"),
        (["serve", "--heartbeat-hold-ms", "-1"], "argument --heartbeat-hold-ms: -1 is out of range"),
        (["--log-level", "LOUD", "plugins"], "argument --log-level: 'LOUD' is not one of DEBUG, INFO"),
        (["groups", "--timeout-ms", "0"], "argument --timeout-ms: 0 is out of range"),
        (["demo", "--members", "2"], "argument --members: 2 is out of range: give a number from 3 to 50"),
        (["groups", "describe"], "the following arguments are required: group"),
        (["groups", "delete"], "the following arguments are required: GROUP"),
        (
            ["groups", "reset-offsets", "g", "--topic", "t"],
            "one of the arguments --to-earliest --to-latest --to-offset is required",
        ),
        (["groups", "reset-offsets", "g", "--to-latest"], "the following arguments are required: --topic"),
        (["groups", "delete-offsets", "g"], "the following arguments are required: --topic"),
        (["groups", "delete-offsets", "g", "--topic", ":1"], "argument --topic: ':1' names no topic"),
        (
            ["groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "-1"],
            "argument --to-offset: -1 is out of range: give a number from 0 to 9223372036854775807",
        ),
        (
            ["groups", "reset-offsets", "g", "--topic", "t:0,x", "--to-latest"],
            "argument --topic: 't:0,x': partitions are whole numbers from 0, separated by commas",
        ),
        (
            ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"],
            "argument --execute: not allowed with argument --dry-run",
        ),
    ],
)
def test_bad_flags_get_one_line_and_status_2(args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    # argparse's usage, then the one line that says what is wrong; no traceback.
    assert message in result.stderr.splitlines()[-1] and "Traceback" not in result.stderr


def test_every_flag_of_every_command_has_help() -> None:
    walked = []

    def walk(name: str, command: argparse.ArgumentParser) -> None:
        walked.append(name)
        for action in command._actions:
            if action.option_strings:
                assert action.help, f"coordinator-api {name} {action.option_strings[0]} has no help"
            if isinstance(action, argparse._SubParsersAction):
                for sub, parser in action.choices.items():
                    walk(f"{name} {sub}".strip(), parser)

    walk("", build_parser())
    assert {
        "groups list",
        "groups describe",
        "groups delete",
        "groups reset-offsets",
        "groups delete-offsets",
    } <= set(walked)


def test_groups_against_no_server_says_so_in_one_line_within_seconds() -> None:
    started = time.monotonic()
    result = cli("groups", "--bootstrap-server", "127.0.0.1:9")  # nothing listens on port 9
    assert time.monotonic() - started < 15  # the interpreter's start included; the wait is 2 s
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("coordinator-api: error: no answer from 127.0.0.1:9 within 2000 ms")
    for action in (
        ["describe", "g", "--offsets"],
        ["delete", "g"],
        ["reset-offsets", "g", "--topic", "t", "--to-offset", "1"],
        ["delete-offsets", "g", "--topic", "t"],
    ):
        result = cli("groups", *action, "--bootstrap-server", "127.0.0.1:9", "--timeout-ms", "300")
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith("coordinator-api: error: no answer from 127.0.0.1:9 within 300 ms"), action


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["groups"], ["groups", "list"]),
        (["groups", "--json"], ["groups", "list", "--json"]),
        (["groups", "g", "--json"], ["groups", "describe", "g", "--json"]),
        (
            ["--log-level", "debug", "groups", "--bootstrap-server", "h:1", "g"],
            ["--log-level", "debug", "groups", "describe", "--bootstrap-server", "h:1", "g"],
        ),
        (["groups", "--timeout-ms=5", "g"], ["groups", "describe", "--timeout-ms=5", "g"]),
        (
            ["groups", "--bootstrap-server", "h:1", "delete", "a"],
            ["groups", "delete", "--bootstrap-server", "h:1", "a"],
        ),
        (["groups", "describe", "list"], ["groups", "describe", "list"]),
        (["groups", "--", "list"], ["groups", "describe", "--", "list"]),
        (["groups", "--help"], ["groups", "--help"]),
        (["topics", "list"], ["topics", "list"]),
    ],
)
def test_groups_alone_lists_and_groups_group_describes(argv: list[str], expected: list[str]) -> None:
    assert _groups_shorthand(build_parser(), argv) == expected


def test_tables_are_aligned_on_a_terminal_and_tab_separated_otherwise() -> None:
    rows = [("readers", "consumer", "Stable"), ("svc", "-", "Empty")]
    assert table(("GROUP", "PROTOCOL-TYPE", "STATE"), rows, aligned=False) == (
        "readers\tconsumer\tStable\nsvc\t-\tEmpty"
    )
    drawn = table(("GROUP", "PROTOCOL-TYPE", "STATE"), rows, aligned=True)  # by rich
    assert "\x1b[1mGROUP" in drawn  # the header in bold
    lines = unstyled(drawn).splitlines()
    assert lines[0].split() == ["GROUP", "PROTOCOL-TYPE", "STATE"] and set(lines[1]) == {"─"}
    assert [line.split() for line in lines[2:]] == [["readers", "consumer", "Stable"], ["svc", "-", "Empty"]]
    assert lines[2].index("consumer") == lines[0].index("PROTOCOL-TYPE")  # columns aligned
    assert table(("GROUP",), [], aligned=False) == ""


def test_groups_lists_describes_and_refuses_an_unknown_group() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    with EmbeddedCoordinator(topics={"t": 2}, config=config) as coordinator:
        consumer = KafkaConsumer("t", bootstrap_servers=coordinator.bootstrap_servers, group_id="readers")
        try:
            consumer.poll(5000)
            listed = cli("groups", "--bootstrap-server", coordinator.bootstrap_servers)
            assert listed.returncode == 0 and listed.stdout == "readers\tconsumer\tStable\n", listed.stderr
            assert listed.stderr == ""  # quiet: no client library logs
            described = cli("groups", "readers", "--bootstrap-servers", coordinator.bootstrap_servers)
            assert described.returncode == 0
            assert described.stdout.startswith("group readers: Stable, protocol type consumer")
            listed_json = json.loads(
                cli("groups", "--json", "--bootstrap-server", coordinator.bootstrap_servers).stdout
            )
            assert listed_json == [{"group_id": "readers", "protocol_type": "consumer", "state": "Stable"}]
            document = json.loads(
                cli("groups", "readers", "--json", "--bootstrap-server", coordinator.bootstrap_servers).stdout
            )
            assert (document["group_id"], document["state"], document["protocol_type"]) == (
                "readers",
                "Stable",
                "consumer",
            )
            (member,) = document["members"]
            assert set(member) == {
                "member_id",
                "group_instance_id",
                "client_id",
                "client_host",
                "metadata",
                "assignment",
                "metadata_base64",
                "assignment_base64",
                "member_epoch",
                "subscribed",
                "assigned",
                "classic_protocol",
            }
            assert (document["group_epoch"], member["member_epoch"], member["assigned"]) == (None, None, None)
            assert member["classic_protocol"] is False  # only said of a consumer group's members
            assert "t" in member["assignment"] and base64.b64decode(member["assignment_base64"])
            missing = cli("groups", "nobody", "--bootstrap-server", coordinator.bootstrap_servers)
            assert missing.returncode == 2
            assert missing.stderr.strip() == (
                f"coordinator-api: error: group 'nobody' does not exist on {coordinator.bootstrap_servers}"
            )
        finally:
            consumer.close()


def test_groups_describes_incremental_groups_of_any_protocol_type() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    with EmbeddedCoordinator(topics={"t": 3}, config=config) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        election = LeaderElection("svc", bootstrap, name="node-1", group_protocol="incremental").start()
        consumer = ConsumerGroupMember("readers", bootstrap, topics=["t"], group_protocol="consumer")
        try:
            assert election.wait_until_leader(10)
            deadline = time.monotonic() + 10
            while len(consumer.assignment()) < 3:
                assert time.monotonic() < deadline
                consumer.poll(0.05)
            leader = cli("groups", "svc", "--bootstrap-server", bootstrap)
            assert leader.returncode == 0, leader.stderr
            head, member, subscribed, metadata, assigned = leader.stdout.splitlines()
            assert (
                head.startswith("group svc: ")
                and ("protocol type leader, incremental protocol, assignor leader-election, group epoch ")
                in head
            )
            assert member.startswith(f"  {election.member_id} leader-node-1@") and ", epoch " in member
            assert subscribed == "    subscribed: leadership"
            assert metadata.startswith("    metadata:   node-1, priority 0, eligible")
            assert assigned == "    assigned:   leadership 0"
            document = json.loads(cli("groups", "readers", "--json", "--bootstrap-server", bootstrap).stdout)
            assert (document["protocol_type"], document["protocol"]) == ("consumer", "uniform")
            (reader,) = document["members"]
            assert (reader["subscribed"], reader["assigned"]) == (["t"], {"t": [0, 1, 2]})
            assert reader["member_epoch"] == document["group_epoch"] >= 1
        finally:
            consumer.close()
            election.close()


def test_groups_describes_a_kip848_consumer_group_on_kafka(kafka: KafkaCluster) -> None:
    kafka.create_topic("cli-t", partitions=2)
    consumer = ConsumerGroupMember(
        "cli-readers", kafka.bootstrap_servers, topics=["cli-t"], group_protocol="consumer"
    )
    try:
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 2:
            assert time.monotonic() < deadline
            consumer.poll(0.1)
        described = cli(
            "groups", "cli-readers", "--bootstrap-server", kafka.bootstrap_servers, "--timeout-ms", "10000"
        )
        assert described.returncode == 0, described.stderr
        lines = described.stdout.splitlines()
        assert "protocol type consumer, incremental protocol, assignor uniform" in lines[0]
        assert lines[-1] == "    assigned:   cli-t 0-1"
    finally:
        consumer.close()


def committed(bootstrap_servers: str, group_id: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        offsets = admin.list_group_offsets({group_id: None})[group_id]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a failed command prints, with its exit status 2 and nothing on stdout."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    return line


def on_a_terminal(*args: str) -> str:
    """What the command prints with a terminal as its stdout (a short output: read once it ends)."""
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [*CLI, *args], stdout=follower, stderr=subprocess.PIPE, text=True, timeout=30, check=False
        )
    finally:
        os.close(follower)
    out = b""
    try:
        while chunk := os.read(leader, 65536):
            out += chunk
    except OSError:  # EIO: the terminal is closed and drained
        pass
    finally:
        os.close(leader)
    assert result.returncode == 0, result.stderr
    return out.decode().replace("\r\n", "\n")


def unstyled(text: str) -> str:
    """``text`` without its ANSI styles and trailing blanks."""
    return "\n".join(re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip() for line in text.splitlines())


def test_groups_list_describe_delete_and_reset_offsets_on_the_embedded_coordinator() -> None:
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    with EmbeddedCoordinator(topics={"t": 3}, config=config) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        server = ("--bootstrap-server", bootstrap)
        member = ConsumerGroupMember("readers", bootstrap, topics=["t"])
        try:
            deadline = time.monotonic() + 10
            while len(member.assignment()) < 3:
                assert time.monotonic() < deadline
                member.poll(0.05)
            member.commit({("t", 0): 5, ("t", 1): 7})

            for listing in (cli("groups", "list", *server), cli("groups", *server)):
                assert (listing.returncode, listing.stdout, listing.stderr) == (
                    0,
                    "readers\tconsumer\tStable\n",
                    "",
                )
            drawn = on_a_terminal("groups", "list", *server)  # rich's table: a bold header, a rule
            assert "\x1b[1mGROUP" in drawn
            assert [line.split() for line in unstyled(drawn).splitlines()] == [
                ["GROUP", "PROTOCOL-TYPE", "STATE"],
                ["─" * len(unstyled(drawn).splitlines()[1])],
                ["readers", "consumer", "Stable"],
            ]

            state = cli("groups", "describe", "readers", "--state", *server)
            assert state.stdout == (
                "group readers: Stable, protocol type consumer, protocol cooperative-sticky, 1 member(s)\n"
            )
            assert json.loads(cli("groups", "describe", "readers", "--state", "--json", *server).stdout) == {
                "group_id": "readers",
                "state": "Stable",
                "protocol_type": "consumer",
                "protocol": "cooperative-sticky",
                "group_epoch": None,
                "member_count": 1,
            }
            whole = cli("groups", "describe", "readers", *server)
            assert whole.stdout == cli("groups", "readers", *server).stdout
            assert whole.stdout.startswith(state.stdout) and "    assignment: t 0, 1, 2\n" in whole.stdout
            document = json.loads(cli("groups", "describe", "readers", "--members", "--json", *server).stdout)
            assert set(document) == {"group_id", "members"}
            (described,) = document["members"]
            member_id, client_id, host = (described[k] for k in ("member_id", "client_id", "client_host"))
            members = cli("groups", "describe", "readers", "--members", *server)
            assert members.stdout == f"{member_id}\t-\t{client_id}\t{host}\t-\tt 0, 1, 2\n"

            # Committed offsets, no log-end offset nor lag (no log here), and who owns each.
            owner = f"{member_id}\t{host}\t{client_id}"
            offsets = cli("groups", "describe", "readers", "--offsets", *server)
            assert offsets.stdout.splitlines() == [
                f"t\t0\t5\t-\t-\t{owner}",
                f"t\t1\t7\t-\t-\t{owner}",
                f"t\t2\t-\t-\t-\t{owner}",
            ]
            document = json.loads(cli("groups", "describe", "readers", "--offsets", "--json", *server).stdout)
            assert set(document) == {"group_id", "offsets"}
            assert document["offsets"][0] == {
                "topic": "t",
                "partition": 0,
                "committed_offset": 5,
                "log_end_offset": None,
                "lag": None,
                "member_id": member_id,
                "client_id": client_id,
                "client_host": host,
            }
            together = cli("groups", "describe", "readers", "--state", "--members", "--offsets", *server)
            assert together.stdout == "\n".join([state.stdout, members.stdout, offsets.stdout])

            # A dry run prints the plan and changes nothing; with a live member nothing is committed.
            plan = cli("groups", "reset-offsets", "readers", "--topic", "t:0,1", "--to-offset", "2", *server)
            assert (plan.returncode, plan.stdout) == (0, "t\t0\t5\t2\nt\t1\t7\t2\n"), plan.stderr
            assert committed(bootstrap, "readers") == {("t", 0): 5, ("t", 1): 7}
            refused = cli(
                "groups", "reset-offsets", "readers", "--topic", "t", "--to-offset", "2", "--execute", *server
            )
            assert error_line(refused) == (
                "coordinator-api: error: cannot reset the offsets of group 'readers': OffsetCommit "
                "answered UNKNOWN_MEMBER_ID (offsets are reset only while the group has no active "
                "members: stop them first)"
            )
            no_log = cli("groups", "reset-offsets", "readers", "--topic", "t", "--to-earliest", *server)
            assert error_line(no_log) == (
                f"coordinator-api: error: {bootstrap} keeps no log (ListOffsets answered "
                "INVALID_REQUEST; the embedded coordinator has none), so it has no earliest offset for "
                "--to-earliest: give the offset with --to-offset N"
            )
            unknown_topic = cli(
                "groups", "reset-offsets", "readers", "--topic", "u", "--to-offset", "0", *server
            )
            assert (
                error_line(unknown_topic)
                == f"coordinator-api: error: topic 'u' does not exist on {bootstrap}"
            )
            no_partition = cli(
                "groups", "reset-offsets", "readers", "--topic", "t:3", "--to-offset", "0", *server
            )
            assert error_line(no_partition) == (
                "coordinator-api: error: topic 't' has no partition 3 (its partitions: 0-2)"
            )
            assert error_line(cli("groups", "delete", "readers", *server)) == (
                "coordinator-api: error: cannot delete group 'readers': NON_EMPTY_GROUP (it has "
                "members: stop them first)"
            )
            # The member subscribes to t: its offsets stay (OffsetDelete), all in the table.
            kept = cli("groups", "delete-offsets", "readers", "--topic", "t:0,1", *server)
            assert (kept.returncode, kept.stdout) == (
                2,
                "t\t0\tGROUP_SUBSCRIBED_TO_TOPIC\nt\t1\tGROUP_SUBSCRIBED_TO_TOPIC\n",
            )
            assert kept.stderr == (
                "coordinator-api: error: cannot delete the offsets of group 'readers' of t:0,1: "
                "GROUP_SUBSCRIBED_TO_TOPIC (the group's members subscribe to the topic: stop them first)\n"
            )
            assert committed(bootstrap, "readers") == {("t", 0): 5, ("t", 1): 7}
        finally:
            member.close()

        # Without members: the reset commits (and creates a group), delete deletes.
        executed = cli(
            "groups",
            "reset-offsets",
            "readers",
            "--topic",
            "t",
            "--to-offset",
            "3",
            "--execute",
            "--json",
            *server,
        )
        assert json.loads(executed.stdout) == {
            "group_id": "readers",
            "executed": True,
            "offsets": [
                {"topic": "t", "partition": 0, "current_offset": 5, "new_offset": 3},
                {"topic": "t", "partition": 1, "current_offset": 7, "new_offset": 3},
                {"topic": "t", "partition": 2, "current_offset": None, "new_offset": 3},
            ],
        }
        assert committed(bootstrap, "readers") == {("t", 0): 3, ("t", 1): 3, ("t", 2): 3}
        # Without members nothing is subscribed to: the offsets go.
        forgotten = cli("groups", "delete-offsets", "readers", "--topic", "t:1", "--json", *server)
        assert (forgotten.returncode, json.loads(forgotten.stdout)) == (
            0,
            {"group_id": "readers", "offsets": [{"topic": "t", "partition": 1, "error": None}]},
        )
        assert committed(bootstrap, "readers") == {("t", 0): 3, ("t", 2): 3}
        assert error_line(cli("groups", "delete-offsets", "nobody", "--topic", "t", *server)) == (
            "coordinator-api: error: cannot delete the offsets of group 'nobody': GROUP_ID_NOT_FOUND "
            "(no such group)"
        )
        created = cli(
            "groups", "reset-offsets", "list", "--topic", "t:1", "--to-offset", "9", "--execute", *server
        )
        assert created.stdout == "t\t1\t-\t9\n", created.stderr
        assert cli("groups", "describe", "list", "--offsets", *server).stdout == "t\t1\t9\t-\t-\t-\t-\t-\n"
        assert cli("groups", "list", *server).stdout == "list\t-\tEmpty\nreaders\tconsumer\tEmpty\n"
        deleted = cli("groups", "delete", "readers", "list", *server)
        assert (deleted.returncode, deleted.stdout) == (0, "deleted group readers\ndeleted group list\n")
        gone = cli("groups", "delete", "readers", "--json", *server)
        assert gone.returncode == 2
        assert json.loads(gone.stdout) == [{"group_id": "readers", "error": "GROUP_ID_NOT_FOUND"}]
        assert gone.stderr == (
            "coordinator-api: error: cannot delete group 'readers': GROUP_ID_NOT_FOUND (no such group)\n"
        )
        assert error_line(cli("groups", "describe", "readers", "--offsets", *server)) == (
            f"coordinator-api: error: group 'readers' does not exist on {bootstrap}"
        )
        assert cli("groups", *server).stdout == ""


def test_the_groups_examples_of_the_guide_run_as_written() -> None:
    """docs/coordinator.md's `groups` commands, against a coordinator as `serve --port 9092 --topic
    events:12` runs it (here on a free port)."""
    guide = (Path(__file__).resolve().parent.parent / "docs" / "coordinator.md").read_text()
    section = guide.split("## Groups from the command line", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    commands = [shlex.split(line.split("#", 1)[0]) for line in block[1].splitlines()]
    assert all(argv[:2] == ["coordinator-api", "groups"] for argv in commands) and len(commands) == 10
    with EmbeddedCoordinator(topics={"events": 12}) as coordinator:
        printed = [cli(*argv[1:], "--bootstrap-server", coordinator.bootstrap_servers) for argv in commands]
    assert [(p.returncode, p.stderr) for p in printed] == [(0, "")] * len(commands)
    assert printed[0].stdout == printed[1].stdout == "events\t0\t-\t5\nevents\t1\t-\t5\n"
    assert printed[2].stdout == "my-group\t-\tEmpty\n"
    assert json.loads(printed[7].stdout)["offsets"][1]["committed_offset"] == 5
    assert printed[8].stdout == "events\t0\tdeleted\n"  # delete-offsets: events 1 stays
    assert printed[9].stdout == "deleted group my-group\n"


def test_groups_offsets_show_lag_and_reset_to_the_log_on_kafka(kafka: KafkaCluster) -> None:
    kafka.create_topic("cli-lag", partitions=2)
    bootstrap = kafka.bootstrap_servers
    server = ("--bootstrap-server", bootstrap, "--timeout-ms", "10000")
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")  # the high watermark moves
    try:
        for partition, count in ((0, 5), (1, 3)):
            for _ in range(count):
                producer.send("cli-lag", b"record", partition=partition)
        producer.flush(timeout=30)
    finally:
        producer.close()
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        errors = admin.alter_group_offsets(
            "cli-lagging", {TopicPartition("cli-lag", 0): OffsetAndMetadata(2, "", -1)}
        )
        assert [e.__name__ for e in errors.values()] == ["NoError"]
    finally:
        admin.close()

    offsets = cli("groups", "describe", "cli-lagging", "--offsets", *server)
    assert offsets.stdout == "cli-lag\t0\t2\t5\t3\t-\t-\t-\n", offsets.stderr
    (row,) = json.loads(cli("groups", "describe", "cli-lagging", "--offsets", "--json", *server).stdout)[
        "offsets"
    ]
    assert (row["committed_offset"], row["log_end_offset"], row["lag"], row["member_id"]) == (2, 5, 3, None)

    latest = cli(
        "groups", "reset-offsets", "cli-lagging", "--topic", "cli-lag", "--to-latest", "--execute", *server
    )
    assert latest.stdout == "cli-lag\t0\t2\t5\ncli-lag\t1\t-\t3\n", latest.stderr
    assert committed(bootstrap, "cli-lagging") == {("cli-lag", 0): 5, ("cli-lag", 1): 3}
    earliest = cli(
        "groups",
        "reset-offsets",
        "cli-lagging",
        "--topic",
        "cli-lag:0",
        "--to-earliest",
        "--execute",
        *server,
    )
    assert earliest.stdout == "cli-lag\t0\t5\t0\n", earliest.stderr
    beyond = cli(
        "groups", "reset-offsets", "cli-lagging", "--topic", "cli-lag:1", "--to-offset", "99", *server
    )
    assert beyond.stdout == "cli-lag\t1\t3\t3\n", beyond.stderr  # moved to the log's end, as Kafka's tool
    assert committed(bootstrap, "cli-lagging") == {("cli-lag", 0): 0, ("cli-lag", 1): 3}
    deleted = cli("groups", "delete", "cli-lagging", *server)
    assert deleted.stdout == "deleted group cli-lagging\n", deleted.stderr


def test_topics_list_describe_and_create_as_kafka_topics_does() -> None:
    with EmbeddedCoordinator(topics={"events": 3}) as coordinator:
        server = ("--bootstrap-server", coordinator.bootstrap_servers)
        created = cli("topics", "create", "orders", "--partitions", "6", *server)
        assert created.returncode == 0 and created.stdout == "created topic orders with 6 partition(s)\n"
        listed = cli("topics", "list", *server)
        assert [line.split("\t")[:2] for line in listed.stdout.splitlines()] == [
            ["events", "3 partition(s)"],
            ["orders", "6 partition(s)"],
        ]
        described = json.loads(cli("topics", "describe", "orders", "--json", *server).stdout)
        assert described["topic"] == "orders" and described["partitions"] == 6 and described["topic_id"]
        again = cli("topics", "create", "orders", *server)
        assert again.returncode == 2
        exists = "cannot create topic 'orders': TopicAlreadyExistsError: topic 'orders' already exists"
        assert again.stderr.strip() == f"coordinator-api: error: {exists}"
        missing = cli("topics", "describe", "nope", *server)
        assert missing.returncode == 2 and "topic 'nope' does not exist" in missing.stderr
        grown = cli("topics", "alter", "orders", "--partitions", "8", *server)
        assert grown.returncode == 0 and grown.stdout == "topic orders has 8 partition(s) now\n"
        assert json.loads(cli("topics", "describe", "orders", "--json", *server).stdout)["partitions"] == 8
        deleted = cli("topics", "delete", "events", *server)
        assert deleted.returncode == 0 and deleted.stdout == "deleted topic events\n"
        left = cli("topics", "list", *server).stdout.splitlines()
        assert [line.split("\t")[0] for line in left] == ["orders"]
        again = cli("topics", "delete", "events", *server)
        assert again.returncode == 2 and again.stderr.strip() == (
            "coordinator-api: error: cannot delete topic 'events': UnknownTopicOrPartitionError: "
            "This server does not host this topic-partition."
        )
        fewer = cli("topics", "alter", "orders", "--partitions", "4", *server)
        assert fewer.returncode == 2
        assert fewer.stderr.strip() == (
            "coordinator-api: error: cannot give topic 'orders' 4 partitions: InvalidPartitionsError: "
            "The topic orders currently has 8 partition(s); 4 would not be an increase."
        )
    gone = cli("topics", "list", "--bootstrap-server", "127.0.0.1:9")
    assert gone.returncode == 2 and len(gone.stderr.strip().splitlines()) == 1, gone.stderr
