"""The command-line side of the plugin system: ``coordinator-api plugins`` and plugin subcommands."""

from __future__ import annotations

import argparse
import functools
import importlib.metadata
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import final

import pluggy

from coordinator_api._plugins._errors import (
    DISABLE_PLUGINS_ENV,
    DuplicateRegistrationError,
    PluginError,
    PluginLoadError,
)
from coordinator_api._plugins._manager import PluginRegistry, get_plugin_manager
from coordinator_api._plugins._markers import NAME


@final
@dataclass(frozen=True, kw_only=True)
class PluginInfo:
    """One plugin as ``coordinator-api plugins`` shows it.

    :ivar name: the plugin's name (its entry-point name).
    :ivar distribution: the distribution it comes from, or None if unknown.
    :ivar version: that distribution's version, or None.
    :ivar builtin: it is one of coordinator-api's built-in plugins.
    :ivar blocked: it is disabled (``COORDINATOR_API_DISABLE_PLUGINS`` or ``blocked=``).
    :ivar registers: what it registered, in words; empty for a blocked plugin.
    """

    name: str
    distribution: str | None
    version: str | None
    builtin: bool
    blocked: bool
    registers: tuple[str, ...]


BUILTIN_DISTRIBUTION = "coordinator-api"
"""The distribution whose plugins are the built-in ones."""


def describe_plugins(plugin_manager: pluggy.PluginManager, registry: PluginRegistry) -> list[PluginInfo]:
    """The registered plugins (sorted by name) followed by the blocked ones."""
    origins: dict[str, tuple[str | None, str | None]] = {}
    for plugin, dist in plugin_manager.list_plugin_distinfo():
        plugin_name = plugin_manager.get_name(plugin)
        if plugin_name is not None:
            origins[plugin_name] = (str(dist.project_name), str(dist.version))
    # A blocked plugin is not loaded, so pluggy has no distribution for it: find its entry point.
    for entry_point in importlib.metadata.entry_points(group=NAME):
        if entry_point.dist is not None:
            origins.setdefault(
                entry_point.name, (entry_point.dist.metadata["Name"], entry_point.dist.version)
            )
    registered: list[PluginInfo] = []
    blocked: list[PluginInfo] = []
    for name, plugin in sorted(plugin_manager.list_name_plugin()):
        distribution, version = origins.get(name, (None, None))
        info = PluginInfo(
            name=name,
            distribution=distribution,
            version=version,
            builtin=distribution == BUILTIN_DISTRIBUTION,
            blocked=plugin is None,
            registers=() if plugin is None else tuple(registry.registered_by(name)),
        )
        (blocked if plugin is None else registered).append(info)
    return registered + blocked


def render_plugin_report(plugins: list[PluginInfo], failures: Sequence[PluginLoadError] = ()) -> str:
    """The text ``coordinator-api plugins`` prints: the plugins, the disabled ones, and the ones
    that could not be loaded (``failures``), each with its error."""
    active = [p for p in plugins if not p.blocked]
    blocked = [p for p in plugins if p.blocked]
    lines = [f"plugins (entry-point group {NAME!r}):"]
    if not active:
        lines.append("  (none installed)")
    for plugin in active:
        lines.append(f"  {plugin.name}  from {_origin(plugin)}")
        lines += [f"    {what}" for what in plugin.registers] or ["    (registers nothing)"]
    if blocked:
        lines.append(f"disabled ({DISABLE_PLUGINS_ENV}):")
        lines += [
            f"  {plugin.name}  from {_origin(plugin)}"
            if plugin.distribution is not None
            else f"  {plugin.name}  (no installed plugin has this name)"
            for plugin in blocked
        ]
    if failures:
        lines.append("failed to load (left out; the others work):")
        lines += [f"  {failure.plugin or '(unknown)'}: {failure}" for failure in failures]
    return "\n".join(lines) + "\n"


def _origin(plugin: PluginInfo) -> str:
    if plugin.distribution is None:
        where = "an unknown distribution"
    else:
        where = f"{plugin.distribution} {plugin.version or '(version unknown)'}"
    return f"{where} (built-in)" if plugin.builtin else where


def plugins_report() -> tuple[str, bool]:
    """Load the plugins as the environment says and describe them (``coordinator-api plugins``):
    the report, and whether any plugin failed to load.

    :raises DuplicateRegistrationError: two plugins registered the same thing.
    """
    plugin_manager = get_plugin_manager()
    registry = PluginRegistry.load(plugin_manager)
    report = render_plugin_report(describe_plugins(plugin_manager, registry), registry.failures)
    return report, bool(registry.failures)


def add_plugin_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    parents: Sequence[argparse.ArgumentParser] = (),
) -> None:
    """Add the plugins' subcommands to ``coordinator-api``, each with the flags of ``parents``
    (the global ones, such as ``--log-level``, which every command takes after its name too).

    A plugin that cannot be loaded must not take the built-in commands down with it (least of
    all ``coordinator-api plugins``, which reports the problem), nor the other plugins'
    commands: a plugin left out is logged as a warning, a command named like a built-in one is
    skipped with a warning, and a command whose parser cannot be configured answers with the
    error when run.
    """
    try:
        registrations = PluginRegistry.load().commands.registrations()
    except PluginError as exc:  # two plugins registered one command
        print(f"coordinator-api: warning: plugin commands are unavailable: {exc}", file=sys.stderr)
        return
    for registration in registrations:
        command = registration.value
        if registration.key in subparsers.choices:
            clash = DuplicateRegistrationError(
                what="command",
                key=registration.key,
                first_plugin="coordinator-api (built-in command)",
                second_plugin=registration.plugin,
            )
            print(f"coordinator-api: warning: {clash}", file=sys.stderr)
            continue
        parser = subparsers.add_parser(
            command.name,
            help=f"{command.help} [plugin {registration.plugin}]",
            description=command.help,
            parents=list(parents),
        )
        parser.set_defaults(func=command.run)
        if command.configure is not None:
            try:
                command.configure(parser)
            except Exception as exc:
                broken = PluginLoadError(
                    f"plugin {registration.plugin!r} failed to configure command {command.name!r}: {exc!r}",
                    plugin=registration.plugin,
                )
                parser.set_defaults(func=functools.partial(_refuse, broken))


def _refuse(error: PluginError, args: argparse.Namespace) -> int:
    raise error
