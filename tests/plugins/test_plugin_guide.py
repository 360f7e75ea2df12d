"""docs/plugins.md runs as written: each example is a complete module, loaded here as a plugin
and checked for doing what the page says (the discovery and pytest examples in their own
processes, with the contrib plugin installed)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from coordinator_consumer import Cluster, ConsumerGroupMember, Subscription, TopicPartition
from plugin_sites import ROOT, environment

from coordinator_api import (
    AssignmentSpec,
    CoordinatorConfig,
    EmbeddedCoordinator,
    MemberEvent,
    PluginRegistry,
    get_plugin_manager,
)
from coordinator_api._inspect import describe_group

GUIDE = ROOT / "docs" / "plugins.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)


def block_with(text: str) -> str:
    (found,) = [code for code in blocks() if text in code]
    return found


def as_plugin(code: str, tmp_path: Path) -> tuple[ModuleType, PluginRegistry, object]:
    """The example as a module, registered alone in a plugin manager, and what it registered."""
    path = tmp_path / f"example_{abs(hash(code))}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    manager = get_plugin_manager(load_entrypoints=False)
    manager.register(module)
    return module, PluginRegistry.load(manager), manager


def test_every_example_is_checked_here() -> None:
    # One check below per example; a new example must come with its own.
    assert len(blocks()) == 11


def test_protocol_examples_register_the_contrib_protocol(roundrobin: ModuleType, tmp_path: Path) -> None:
    examples = [code for code in blocks() if "coordinator_api_register_protocols" in code]
    assert len(examples) == 2
    for code in examples:
        _, registry, _ = as_plugin(code, tmp_path)
        assert registry.protocols.get("roundrobin-shards") is roundrobin.RoundRobinShardsCoordinator


def test_assignor_examples_register_assignors_that_run(roundrobin: ModuleType, tmp_path: Path) -> None:
    _, registry, _ = as_plugin(block_with('"roundrobin-shards", "roundrobin"'), tmp_path)
    assert registry.assignors.get("roundrobin-shards", "roundrobin") is roundrobin.assign_round_robin

    _, registry, _ = as_plugin(block_with("reverse-range"), tmp_path)
    reverse_range = registry.assignors.get("consumer", "reverse-range")
    members = [Subscription(member_id=m, topics=frozenset({"t"})) for m in ("a", "b")]
    t = [TopicPartition("t", p) for p in range(4)]
    assert reverse_range(members, Cluster(partitions={"t": 4})) == {"a": t[2:], "b": t[:2]}


def test_the_server_assignor_example_deals_partitions_to_subscribers(tmp_path: Path) -> None:
    _, registry, _ = as_plugin(block_with("coordinator_api_register_server_assignors"), tmp_path)
    deal = registry.server_assignors.get("consumer", "deal")
    members = [
        AssignmentSpec(member_id=m, instance_id=None, rack=None, topics=topics, current=frozenset())
        for m, topics in (("a", frozenset({"t", "u"})), ("b", frozenset({"t"})))
    ]
    assert deal(members, {"t": 3, "u": 2}) == {
        "a": [("t", 0), ("t", 2), ("u", 0), ("u", 1)],
        "b": [("t", 1)],
    }
    # The embedded coordinator runs it for a consumer group without the plugin being installed.
    config = CoordinatorConfig(consumer_group_assignors=("deal",), consumer_group_heartbeat_interval_ms=200)
    with EmbeddedCoordinator(topics={"t": 3, "u": 2}, config=config, plugins=registry) as coordinator:
        member = ConsumerGroupMember(
            "dealt", coordinator.bootstrap_servers, topics=["t", "u"], group_protocol="consumer"
        )
        try:
            deadline = time.monotonic() + 30
            while len(member.assignment()) < 5 and time.monotonic() < deadline:
                member.poll(0.1)
            assert member.assignment() == {("t", 0), ("t", 1), ("t", 2), ("u", 0), ("u", 1)}
            assert describe_group(coordinator.bootstrap_servers, "dealt").protocol == "deal"
        finally:
            member.close()


def test_the_decoder_example_prints_payloads_in_words(roundrobin: ModuleType, tmp_path: Path) -> None:
    _, registry, _ = as_plugin(block_with("coordinator_api_register_payload_decoders"), tmp_path)
    decoders = registry.payload_decoders
    assignment = roundrobin.encode_assignment(["s0", "s2"])
    assert decoders.describe_assignment("roundrobin-shards", "roundrobin", assignment) == "shards s0, s2"
    metadata = roundrobin.encode_metadata(3)
    assert decoders.describe_metadata("roundrobin-shards", "roundrobin", metadata) == "takes up to 3 shard(s)"


def test_the_command_example_runs_the_page_s_command_line(roundrobin: ModuleType, tmp_path: Path) -> None:
    _, registry, _ = as_plugin(block_with("coordinator_api_register_cli_commands"), tmp_path)
    command = registry.commands.get("roundrobin-plan")
    parser = argparse.ArgumentParser()
    assert command.configure is not None
    command.configure(parser)
    (line,) = re.findall(r"coordinator-api roundrobin-plan (.*)", GUIDE.read_text())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command.run(parser.parse_args(line.split())) == 0
    assert out.getvalue().splitlines() == ["a s0 s2", "b s1"]  # b takes at most one


def test_the_observer_example_records_rebalance_times(tmp_path: Path) -> None:
    module, _, manager = as_plugin(block_with("REBALANCE_SECONDS"), tmp_path)
    for kind, duration in (("joined", 40.0), ("assigned", 250.0), ("assigned", None)):
        event = MemberEvent(kind=kind, group_id="g", member_id="m", generation_id=1, duration_ms=duration)
        manager.hook.coordinator_api_on_member_event(event=event)  # type: ignore[attr-defined]
    assert dict(module.REBALANCE_SECONDS) == {"g": [0.25]}


def test_the_observed_member_example_prints_its_members_life(tmp_path: Path) -> None:
    script = tmp_path / "observed.py"
    script.write_text(block_with("class Alone"))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines() == ["joined watched", "assigned watched", "left watched"]
    assert "prints `joined watched`, `assigned watched` and, as the member leaves, `left watched`" in (
        " ".join(GUIDE.read_text().split())
    )


def test_the_discovery_example_finds_the_installed_plugin(roundrobin_site: Path, tmp_path: Path) -> None:
    script = tmp_path / "discover.py"
    script.write_text(block_with("get_plugin_manager()"))
    result = subprocess.run(
        [sys.executable, str(script)],
        env=environment(roundrobin_site),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["RoundRobinShardsCoordinator", "roundrobin-shards"]


@pytest.mark.timeout(180)
def test_the_plugin_test_example_passes_under_pytest(roundrobin_site: Path, tmp_path: Path) -> None:
    test_file = tmp_path / "test_roundrobin_example.py"
    test_file.write_text(block_with("member_factory"))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        env=environment(roundrobin_site),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
