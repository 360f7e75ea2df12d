"""The consumer plugin is a built-in found through the same entry points as any plugin."""

from __future__ import annotations

import subprocess
import sys
import time

from coordinator_consumer import TopicPartition, encode_assignment
from kafka import KafkaConsumer

from coordinator_api import EmbeddedCoordinator, PluginRegistry, get_plugin_manager


def test_the_consumer_plugin_is_discovered_through_its_entry_point() -> None:
    pm = get_plugin_manager()
    assert "consumer" in {name for name, _ in pm.list_name_plugin()}
    registry = PluginRegistry.load(pm)
    for name in ("range", "roundrobin", "sticky", "cooperative-sticky", "uniform"):
        assert registry.assignors.get("consumer", name) is not None
    decoders = registry.payload_decoders
    data = encode_assignment([TopicPartition("events", 3), TopicPartition("events", 1)])
    assert decoders.describe_assignment("consumer", "range", data) == "events 1, 3"


def test_groups_command_shows_a_kafka_python_consumer_group_in_words(
    coordinator: EmbeddedCoordinator,
) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=coordinator.bootstrap_servers,
        group_id="words",
        session_timeout_ms=3000,
        heartbeat_interval_ms=1000,
    )
    try:
        while not consumer.partitions_for_topic("events"):
            time.sleep(0.05)
        consumer.subscribe(["events"])
        deadline = time.monotonic() + 30
        while len(consumer.assignment()) < 12:
            assert time.monotonic() < deadline, "the consumer did not get its partitions"
            consumer.poll(timeout_ms=200)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "coordinator_api",
                "groups",
                "words",
                "--bootstrap-servers",
                coordinator.bootstrap_servers,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        consumer.close()
    assert result.returncode == 0, result.stderr
    assert "protocol type consumer, protocol range" in result.stdout
    assert "metadata:   topics events" in result.stdout
    assert "assignment: events 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11" in result.stdout
