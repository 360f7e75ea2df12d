"""Run as a subprocess by test_installed_plugin.py, with plugins installed on PYTHONPATH.

Loads whatever plugins the environment has, as an application would, and prints one JSON
document describing them. Given ``--bootstrap``, it also forms a group of two members from the
protocol registered for ``--protocol-type``, found by protocol type alone (this script imports
no plugin), settles it and reports what each member owns.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from coordinator_api import PayloadError
from coordinator_api._plugins import NotRegisteredError, PluginRegistry, get_plugin_manager
from coordinator_api.testing._fixtures import MemberFactory


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--protocol-type", default="roundrobin-shards")
    parser.add_argument("--bootstrap")
    parser.add_argument("--shards", type=int, default=5)
    args = parser.parse_args()

    plugin_manager = get_plugin_manager()
    registry = PluginRegistry.load(plugin_manager)
    report: dict[str, Any] = {
        "plugins": sorted(name for name, plugin in plugin_manager.list_name_plugin() if plugin is not None),
        "blocked": sorted(name for name, plugin in plugin_manager.list_name_plugin() if plugin is None),
        "distributions": {
            plugin_manager.get_name(plugin): [dist.project_name, dist.version]
            for plugin, dist in plugin_manager.list_plugin_distinfo()
        },
        "protocol_types": registry.protocols.protocol_types(),
        "assignors": registry.assignors.names(args.protocol_type),
        "commands": [command.name for command in registry.commands.commands()],
    }
    try:
        factory = registry.protocols.get(args.protocol_type)
    except NotRegisteredError as exc:
        report["lookup_error"] = str(exc)
        finish(report)
        return
    assignment = b'{"version": 1, "shards": ["s0", "s2"], "added_in_a_later_version": true}'
    report["described_assignment"] = registry.payload_decoders.describe_assignment(
        args.protocol_type, "roundrobin", assignment
    )
    try:
        registry.payload_decoders.describe_assignment(args.protocol_type, "roundrobin", b"\xff")
    except PayloadError as exc:
        report["undecodable"] = str(exc)
    if args.bootstrap:
        shards = [f"shard-{i}" for i in range(args.shards)]
        members = MemberFactory(args.bootstrap)
        try:
            first = members(factory, "indexers", shards=shards)
            second = members(factory, "indexers", shards=shards)
            report["generation"] = members.settle(first, second)
            report["owned"] = {member.member_id: list(member.owned_shards) for member in (first, second)}
        finally:
            members.close_all()
    finish(report)


def finish(report: dict[str, Any]) -> None:
    report["plugin_modules_imported_by_the_framework"] = sorted(
        name for name in sys.modules if name.startswith("coordinator_roundrobin")
    )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
