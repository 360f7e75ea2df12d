"""The ``coordinator-api`` command, run as a real process."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaConsumer

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator

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


def test_demo_runs_the_main_job() -> None:
    result = subprocess.run(
        [*CLI, "--log-level", "WARNING", "demo"], capture_output=True, text=True, timeout=180, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "OK: after each change every partition was owned by exactly one live member" in out
    assert "partitions worked on by two members at once: 0" in out
    assert out.count(" expired ") >= 2  # the SIGKILLed and the paused member's sessions ran out
    assert "resumed: it reports its partitions lost, then rejoins: settled" in out
    assert " left " in out  # the gracefully stopped member sent LeaveGroup
