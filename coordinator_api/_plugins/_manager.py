"""Builds the plugin manager and calls the hooks through a typed wrapper.

Nothing here runs at import time: :func:`get_plugin_manager` builds a fresh manager each time it
is called (ARCHITECTURE rule 5), so tests, the CLI and applications each get the plugins the
environment says, and no module holds a global manager loaded as a side effect of an import.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata
import logging
import os
from collections.abc import Iterable
from typing import final

import pluggy

from coordinator_api._plugins import spec
from coordinator_api._plugins._errors import DISABLE_PLUGINS_ENV, PluginError, PluginLoadError
from coordinator_api._plugins._events import MemberEvent
from coordinator_api._plugins._markers import NAME
from coordinator_api._plugins._registry import (
    AssignorRegistry,
    CommandRegistry,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    _RegistryBase,
)

log = logging.getLogger("coordinator_api.plugins")


def disabled_plugins(environ: dict[str, str] | os._Environ[str] | None = None) -> list[str]:
    """The plugin names ``COORDINATOR_API_DISABLE_PLUGINS`` disables (comma-separated)."""
    value = (os.environ if environ is None else environ).get(DISABLE_PLUGINS_ENV, "")
    return [name.strip() for name in value.split(",") if name.strip()]


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager, and the installed plugins that could not be loaded into it."""

    def __init__(self) -> None:
        super().__init__(NAME)
        self.load_failures: list[PluginLoadError] = []


def load_failures(plugin_manager: pluggy.PluginManager) -> list[PluginLoadError]:
    """The installed plugins :func:`get_plugin_manager` left out, one error each."""
    return list(plugin_manager.load_failures) if isinstance(plugin_manager, _PluginManager) else []


def get_plugin_manager(
    *, load_entrypoints: bool = True, blocked: Iterable[str] | None = None
) -> pluggy.PluginManager:
    """Build a plugin manager with the hookspecs and the installed plugins.

    Every plugin is an entry point of the ``coordinator_api`` group, the built-in ones included
    (coordinator-api's own ``[project.entry-points.coordinator_api]`` table): one path, the same
    pluggy registration and the same hooks for all. Names listed in
    ``COORDINATOR_API_DISABLE_PLUGINS`` and in ``blocked`` are blocked before anything
    registers, built-ins included.

    One broken plugin never takes the others down: a plugin that cannot be imported, that
    implements a hook with arguments the hook does not have, or that implements a hook that
    does not exist (a misspelt name, with the likely one suggested) is left out, logged as a
    warning and listed by :func:`load_failures` (and by ``coordinator-api plugins``).

    :param load_entrypoints: load the installed plugins (False gives a manager with none, for
        tests that register their own plugin objects).
    :param blocked: further plugin names to block.
    """
    pm = _PluginManager()
    pm.add_hookspecs(spec)
    for name in [*disabled_plugins(), *(blocked or ())]:
        pm.set_blocked(name)
    if load_entrypoints:
        for entry_point in importlib.metadata.entry_points(group=NAME):
            if pm.has_plugin(entry_point.name) or pm.is_blocked(entry_point.name):
                continue
            failure = _load(pm, entry_point)
            if failure is not None:
                log.warning("%s", failure)
                pm.load_failures.append(failure)
    return pm


def _load(pm: pluggy.PluginManager, entry_point: importlib.metadata.EntryPoint) -> PluginLoadError | None:
    """Register one installed plugin; the error that keeps it out, if any."""
    name = entry_point.name
    origin = (
        f"distribution {entry_point.dist.metadata['Name']} {entry_point.dist.version}"
        if entry_point.dist is not None
        else "an unknown distribution"
    )
    try:
        pm.load_setuptools_entrypoints(NAME, name=name)
    except pluggy.PluginValidationError as exc:
        return PluginLoadError(f"plugin {name!r} (from {origin}) is invalid: {exc}", plugin=name)
    except Exception as exc:
        return PluginLoadError(f"plugin {name!r} (from {origin}) failed to load: {exc!r}", plugin=name)
    plugin = pm.get_plugin(name)
    unknown = sorted(
        hook
        for hook, caller in vars(pm.hook).items()
        if isinstance(caller, pluggy.HookCaller)
        and not caller.has_spec()
        and any(impl.plugin is plugin for impl in caller.get_hookimpls())
    )
    if not unknown:
        return None
    pm.unregister(plugin)
    hooks = sorted(h for h, c in vars(pm.hook).items() if isinstance(c, pluggy.HookCaller) and c.has_spec())
    described = []
    for hook in unknown:
        close = difflib.get_close_matches(hook, hooks, n=1)
        described.append(f"{hook} (did you mean {close[0]}?)" if close else hook)
    return PluginLoadError(
        f"plugin {name!r} (from {origin}) implements hooks that do not exist: {', '.join(described)}",
        plugin=name,
    )


@final
class PluginHooks:
    """Calls the hooks of a plugin manager, typed (tox 4's wrapper over ``pm.hook``).

    mypy checks every call through this class against the hookspecs' signatures, which a bare
    ``pm.hook.<name>(**kwargs)`` call does not. Every hook is called once per plugin, in
    registration order: registrations are attributed to the plugin that made
    them, and a plugin whose hook raises is named in the error.
    """

    def __init__(self, plugin_manager: pluggy.PluginManager) -> None:
        self._pm = plugin_manager

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The pluggy manager whose hooks this calls."""
        return self._pm

    def register_protocols(self, registry: ProtocolRegistry) -> None:
        """Call ``coordinator_api_register_protocols``."""
        self._register("coordinator_api_register_protocols", registry)

    def register_assignors(self, registry: AssignorRegistry) -> None:
        """Call ``coordinator_api_register_assignors``."""
        self._register("coordinator_api_register_assignors", registry)

    def register_server_assignors(self, registry: ServerAssignorRegistry) -> None:
        """Call ``coordinator_api_register_server_assignors``."""
        self._register("coordinator_api_register_server_assignors", registry)

    def register_payload_decoders(self, registry: PayloadDecoderRegistry) -> None:
        """Call ``coordinator_api_register_payload_decoders``."""
        self._register("coordinator_api_register_payload_decoders", registry)

    def register_cli_commands(self, registry: CommandRegistry) -> None:
        """Call ``coordinator_api_register_cli_commands``."""
        self._register("coordinator_api_register_cli_commands", registry)

    def on_member_event(self, event: MemberEvent) -> None:
        """Call ``coordinator_api_on_member_event``.

        An observer that raises is logged and skipped: observing a group must never break its
        members (this may run on a member's heartbeat thread).
        """
        for plugin_name, call in self._per_plugin("coordinator_api_on_member_event"):
            try:
                call(event=event)
            except Exception:
                log.exception(
                    "plugin %r raised in coordinator_api_on_member_event (%s event of group %r, member %s)",
                    plugin_name,
                    event.kind,
                    event.group_id,
                    event.member_id or "(no member id yet)",
                )

    def _register(self, hook_name: str, registry: _RegistryBase) -> None:
        for plugin_name, call in self._per_plugin(hook_name):
            with registry._registering_for(plugin_name):
                try:
                    call(registry=registry)
                except PluginError:
                    raise
                except Exception as exc:
                    raise PluginLoadError(
                        f"plugin {plugin_name!r} raised in {hook_name}: {exc!r}", plugin=plugin_name
                    ) from exc

    def _per_plugin(self, hook_name: str) -> list[tuple[str, pluggy.HookCaller]]:
        """One hook caller per implementing plugin, each calling that plugin only."""
        caller: pluggy.HookCaller = getattr(self._pm.hook, hook_name)
        impls = [impl for impl in caller.get_hookimpls() if not (impl.hookwrapper or impl.wrapper)]
        plugins = [impl.plugin for impl in caller.get_hookimpls()]
        calls = []
        for impl in impls:
            others = [plugin for plugin in plugins if plugin is not impl.plugin]
            calls.append((impl.plugin_name, self._pm.subset_hook_caller(hook_name, others)))
        return calls


@final
class PluginRegistry:
    """Everything the plugins of one plugin manager register.

    :ivar protocols: group protocols by protocol type.
    :ivar assignors: assignors by protocol type and name.
    :ivar server_assignors: server-side assignors (incremental protocol) by protocol type and name.
    :ivar payload_decoders: payload decoders by protocol type.
    :ivar commands: ``coordinator-api`` subcommands.
    :ivar plugin_manager: the plugin manager it was loaded from (None for a registry built by
        hand), whose ``coordinator_api_on_member_event`` hooks observe the members using it.
    """

    def __init__(self) -> None:
        self.protocols = ProtocolRegistry()
        self.assignors = AssignorRegistry()
        self.server_assignors = ServerAssignorRegistry()
        self.payload_decoders = PayloadDecoderRegistry()
        self.commands = CommandRegistry()
        self.failures: tuple[PluginLoadError, ...] = ()
        self.plugin_manager: pluggy.PluginManager | None = None

    @classmethod
    def load(cls, plugin_manager: pluggy.PluginManager | None = None) -> PluginRegistry:
        """Call every registry hook of ``plugin_manager`` (by default a new
        :func:`get_plugin_manager`) and return what the plugins registered.

        A plugin whose hook raises is unregistered from ``plugin_manager`` and left out with
        everything it registered (the hooks run again without it), logged as a warning; it is
        in :attr:`failures` with the plugins the manager could not load.

        :raises DuplicateRegistrationError: two plugins registered the same thing.
        """
        pm = plugin_manager if plugin_manager is not None else get_plugin_manager()
        failures = load_failures(pm)
        while True:
            registry = cls()
            hooks = PluginHooks(pm)
            try:
                hooks.register_protocols(registry.protocols)
                hooks.register_assignors(registry.assignors)
                hooks.register_server_assignors(registry.server_assignors)
                hooks.register_payload_decoders(registry.payload_decoders)
                hooks.register_cli_commands(registry.commands)
            except PluginLoadError as exc:
                broken = pm.get_plugin(exc.plugin) if exc.plugin is not None else None
                if broken is None:
                    raise
                log.warning("%s", exc)
                failures.append(exc)
                pm.unregister(broken)
                continue
            registry.failures = tuple(failures)
            registry.plugin_manager = pm
            return registry

    def registered_by(self, plugin: str) -> list[str]:
        """What ``plugin`` registered, in words (``"protocol type roundrobin-shards"``, ...)."""
        registries: tuple[_RegistryBase, ...] = (
            self.protocols,
            self.assignors,
            self.server_assignors,
            self.payload_decoders,
            self.commands,
        )
        return [what for registry in registries for by, what in registry.summary() if by == plugin]


@functools.cache
def installed_plugins() -> PluginRegistry:
    """What the installed plugins register, loaded on first use and kept for the process.

    Members find their protocol's assignors here by protocol type and name (the one place
    assignors are looked up), so an assignor a third-party package registers for ``consumer`` or
    ``streams`` is chosen exactly like a built-in one. Loading reads ``COORDINATOR_API_DISABLE_PLUGINS``
    once; give a member its own ``plugins=PluginRegistry.load(...)`` to use another set.

    Installed plugins that cannot be loaded are left out (logged, and listed in the registry's
    ``failures``).
    """
    return PluginRegistry.load()
