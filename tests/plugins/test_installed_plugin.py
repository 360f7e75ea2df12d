"""The contrib plugin, installed with real entry-point metadata, used with no change in the
framework: discovered, listed with its distribution, disabled by name, and a group formed from
its protocol by protocol type alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from plugin_sites import environment, install_distribution

from coordinator_api import EmbeddedCoordinator
from coordinator_api.testing import MemberFactory
from coordinator_api.testing._fixtures import TEST_COORDINATOR_CONFIG

PROBE = Path(__file__).with_name("installed_plugins_probe.py")
CLI = [sys.executable, "-m", "coordinator_api"]


def probe(env: dict[str, str], *args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(PROBE), *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def test_the_plugin_is_discovered_through_its_entry_point(roundrobin_site: Path) -> None:
    report = probe(environment(roundrobin_site))
    assert "roundrobin" in report["plugins"]
    assert report["distributions"]["roundrobin"] == ["coordinator-roundrobin-plugin", "0.1.0"]
    assert "roundrobin-shards" in report["protocol_types"]
    assert report["assignors"] == ["roundrobin"]
    assert "roundrobin-plan" in report["commands"]
    # Its payload decoder reads newer payloads (unknown fields ignored) and rejects garbage.
    assert report["described_assignment"] == "shards s0, s2"
    assert "roundrobin-shards assignment is not JSON" in report["undecodable"]


def test_plugins_command_lists_it_with_its_distribution(roundrobin_site: Path) -> None:
    result = cli(environment(roundrobin_site), "plugins")
    assert result.returncode == 0, result.stderr
    assert "  roundrobin  from coordinator-roundrobin-plugin 0.1.0\n" in result.stdout
    for registered in (
        "protocol type roundrobin-shards",
        "assignor roundrobin-shards/roundrobin",
        "payload decoder roundrobin-shards",
        "command roundrobin-plan",
    ):
        assert f"    {registered}\n" in result.stdout
    assert "disabled" not in result.stdout


def test_a_group_uses_the_plugins_protocol_found_by_protocol_type(roundrobin_site: Path) -> None:
    with EmbeddedCoordinator(config=TEST_COORDINATOR_CONFIG) as coordinator:
        report = probe(environment(roundrobin_site), "--bootstrap", coordinator.bootstrap_servers)
    owned = report["owned"]
    assert len(owned) == 2
    assert report["generation"] >= 1
    everything = sorted(shard for shards in owned.values() for shard in shards)
    assert everything == [f"shard-{i}" for i in range(5)]  # every shard owned exactly once
    assert sorted(len(shards) for shards in owned.values()) == [2, 3]  # round robin: 3/2
    # The member ids sort the round: the first member by id has shard-0, shard-2, shard-4.
    assert owned[min(owned)] == ["shard-0", "shard-2", "shard-4"]
    # The framework imported the plugin because the entry point named it, not the probe.
    assert "coordinator_roundrobin" in report["plugin_modules_imported_by_the_framework"]


def test_the_disable_variable_blocks_it_by_name(roundrobin_site: Path) -> None:
    env = environment(roundrobin_site, COORDINATOR_API_DISABLE_PLUGINS="not-installed, roundrobin")
    report = probe(env)
    assert "roundrobin" not in report["plugins"]
    assert report["blocked"] == ["not-installed", "roundrobin"]
    # The built-ins' protocol types only:
    assert report["protocol_types"] == ["consumer", "leader", "spark-executor", "streams"]
    assert "no plugin registers protocol type 'roundrobin-shards'" in report["lookup_error"]
    assert report["plugin_modules_imported_by_the_framework"] == []

    result = cli(env, "plugins")
    assert result.returncode == 0, result.stderr
    disabled = result.stdout.split("disabled (COORDINATOR_API_DISABLE_PLUGINS):\n")[1]
    assert "  roundrobin  from coordinator-roundrobin-plugin 0.1.0\n" in disabled
    assert "  not-installed  (no installed plugin has this name)\n" in disabled


def test_the_plugins_cli_command_runs(roundrobin_site: Path) -> None:
    env = environment(roundrobin_site)
    result = cli(env, "roundrobin-plan", "--shard", "s2", "--shard", "s0", "--shard", "s1", "--member", "b")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "b: s0, s1, s2\n"
    result = cli(
        env, "roundrobin-plan", "--shard", "s0", "--shard", "s1", "--member", "a=1", "--member", "b=0"
    )
    assert result.stdout == "a: s0\nb: (none)\nunassigned: s1\n"
    assert "[plugin roundrobin]" in cli(env, "--help").stdout


COPYCAT = """
from coordinator_api._plugins import hookimpl

class Copycat:
    pass

@hookimpl
def coordinator_api_register_protocols(registry):
    registry.register("roundrobin-shards", Copycat)
"""


def test_two_plugins_registering_one_protocol_type_fail_naming_both(
    roundrobin_site: Path, tmp_path: Path
) -> None:
    install_distribution(
        tmp_path,
        name="coordinator-copycat",
        version="2.0",
        entry_points={"coordinator_api": {"copycat": "copycat_plugin"}},
        modules={"copycat_plugin": COPYCAT},
    )
    env = environment(roundrobin_site, tmp_path)
    result = cli(env, "plugins")
    assert result.returncode == 2
    assert "protocol type 'roundrobin-shards' is registered by plugin" in result.stderr
    assert "'roundrobin'" in result.stderr and "'copycat'" in result.stderr
    # The built-in commands still work; the plugins' commands (the demo among them) are left out
    # with a warning.
    result = cli(env, "serve", "--help")
    assert result.returncode == 0
    assert "warning: plugin commands are unavailable" in result.stderr
    result = cli(env, "demo", "--help")
    assert result.returncode == 2 and "invalid choice: 'demo'" in result.stderr
    # Disabling one of the two settles it.
    result = cli({**env, "COORDINATOR_API_DISABLE_PLUGINS": "copycat"}, "plugins")
    assert result.returncode == 0, result.stderr
    assert "  copycat  from coordinator-copycat 2.0\n" in result.stdout.split("disabled")[1]


def test_a_plugin_that_fails_to_import_is_named_with_the_fix(tmp_path: Path) -> None:
    install_distribution(
        tmp_path,
        name="coordinator-broken",
        version="0.0.1",
        entry_points={"coordinator_api": {"broken": "broken_plugin"}},
        modules={"broken_plugin": "import a_module_that_is_not_installed\n"},
    )
    env = environment(tmp_path)
    result = cli(env, "plugins")
    # Reported (exit 1, a warning and a section of its own) while every other plugin is listed.
    assert result.returncode == 1
    assert "plugin 'broken' (from distribution coordinator-broken 0.0.1) failed to load" in result.stderr
    assert "failed to load (left out; the others work):" in result.stdout
    assert "COORDINATOR_API_DISABLE_PLUGINS=broken" in result.stdout
    assert "  consumer  from coordinator-api" in result.stdout
    assert cli({**env, "COORDINATOR_API_DISABLE_PLUGINS": "broken"}, "plugins").returncode == 0


def test_groups_command_lists_groups_and_describes_payloads_in_words(
    roundrobin_site: Path, roundrobin: Any
) -> None:
    with EmbeddedCoordinator(config=TEST_COORDINATOR_CONFIG) as coordinator:
        factory = MemberFactory(coordinator.bootstrap_servers)
        shards = [f"s{i}" for i in range(4)]
        # Nobody polls while the CLI runs three times (seconds each on a loaded machine): a long
        # poll interval keeps the members in the group meanwhile.
        members = [
            factory(
                roundrobin.RoundRobinShardsCoordinator,
                "described",
                shards=shards,
                max_poll_interval_ms=120_000,
            )
            for _ in range(2)
        ]
        try:
            factory.settle(*members)
            env = environment(roundrobin_site)
            listed = cli(env, "groups", "--bootstrap-servers", coordinator.bootstrap_servers)
            assert listed.returncode == 0, listed.stderr
            assert "described\troundrobin-shards\tStable" in listed.stdout
            described = cli(env, "groups", "described", "--bootstrap-servers", coordinator.bootstrap_servers)
            assert described.returncode == 0, described.stderr
            text = described.stdout
            assert "group described: Stable, protocol type roundrobin-shards" in text
            assert text.count("    assignment: shards ") == 2  # each member's share, in words
            assert "no decoder installed" not in text
            # Without the plugin the same payloads are shown as bytes, and nothing fails.
            bare = cli(
                environment(Path("/nonexistent")),
                "groups",
                "described",
                "--bootstrap-servers",
                coordinator.bootstrap_servers,
            )
            assert bare.returncode == 0, bare.stderr
            assert "no decoder installed" in bare.stdout
        finally:
            for member in members:
                member.close(timeout=5)
