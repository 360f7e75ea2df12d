"""The ``coordinator-api`` command, run as a real process."""

from __future__ import annotations

import argparse
import base64
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from coordinator_consumer import ConsumerGroupMember
from coordinator_leader import LeaderElection
from kafka import KafkaConsumer

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._cli import build_parser
from coordinator_api.testing import KafkaCluster

CLI = [sys.executable, "-m", "coordinator_api"]


def test_serve_declares_topics_from_flags_and_config_file(tmp_path: Path) -> None:
    config = tmp_path / "coordinator.toml"
    config.write_text("[coordinator]\ninitial_rebalance_delay_ms = 0\n\n[topics]\norders = 6\n")
    process = subprocess.Popen(
        [*CLI, "serve", "--port", "0", "--topic", "events:3", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("coordinator listening on 127.0.0.1:")
        bootstrap = line.rsplit(" ", 1)[1].strip()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap)
        try:
            assert consumer.partitions_for_topic("events") == {0, 1, 2}
            assert consumer.partitions_for_topic("orders") == set(range(6))
        finally:
            consumer.close()
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--topic", "events"], "NAME:PARTITIONS"),
        (["--topic", "events:0"], "NAME:PARTITIONS"),
        (["--min-session-timeout-ms", "9000", "--max-session-timeout-ms", "1000"], "must not exceed"),
    ],
)
def test_serve_rejects_bad_arguments_with_a_clear_message(args: list[str], message: str) -> None:
    result = subprocess.run(
        [*CLI, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30, check=False
    )
    assert result.returncode == 2
    assert message in result.stderr


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
    ],
)
def test_bad_flags_get_one_line_and_status_2(args: list[str], message: str) -> None:
    result = cli(*args)
    assert result.returncode == 2
    # argparse's usage, then the one line that says what is wrong; no traceback.
    assert message in result.stderr.splitlines()[-1] and "Traceback" not in result.stderr


def test_every_flag_of_every_command_has_help() -> None:
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name, command in {"": parser, **commands.choices}.items():
        for action in command._actions:
            if action.option_strings:
                assert action.help, f"coordinator-api {name} {action.option_strings[0]} has no help"


def test_groups_against_no_server_says_so_in_one_line_within_seconds() -> None:
    started = time.monotonic()
    result = cli("groups", "--bootstrap-server", "127.0.0.1:9")  # nothing listens on port 9
    assert time.monotonic() - started < 15  # the interpreter's start included; the wait is 2 s
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("coordinator-api: error: no answer from 127.0.0.1:9 within 2000 ms")


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
            }
            assert (document["group_epoch"], member["member_epoch"], member["assigned"]) == (None, None, None)
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
    gone = cli("topics", "list", "--bootstrap-server", "127.0.0.1:9")
    assert gone.returncode == 2 and len(gone.stderr.strip().splitlines()) == 1, gone.stderr
