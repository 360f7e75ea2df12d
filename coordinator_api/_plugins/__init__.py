"""The plugin system: hookspecs and a plugin manager over pluggy and entry points.

One name, ``coordinator_api``, is the pluggy project name, the prefix of every hook and the
entry-point group plugins are found through. The hooks are specified in
:mod:`coordinator_api._plugins.spec`; ``docs/plugins.md`` is the plugin-authoring guide, and
``contrib/coordinator-roundrobin-plugin`` a complete plugin to copy from.

A plugin is a module with hook implementations, published through an entry point::

    # pyproject.toml
    [project.entry-points.coordinator_api]
    roundrobin = "coordinator_roundrobin"

    # coordinator_roundrobin/__init__.py
    from coordinator_api._plugins import ProtocolRegistry, hookimpl

    @hookimpl
    def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
        registry.register("roundrobin-shards", RoundRobinShardsCoordinator)

Applications load what is installed with :meth:`PluginRegistry.load` (which builds a manager
with :func:`get_plugin_manager`; nothing is loaded at import time).
"""

from coordinator_api._plugins._cli import PluginInfo, add_plugin_commands, describe_plugins, plugins_report
from coordinator_api._plugins._errors import (
    DISABLE_PLUGINS_ENV,
    DuplicateRegistrationError,
    NotRegisteredError,
    PluginError,
    PluginLoadError,
)
from coordinator_api._plugins._events import MemberEvent, MemberEventKind
from coordinator_api._plugins._manager import (
    PluginHooks,
    PluginRegistry,
    disabled_plugins,
    get_plugin_manager,
    installed_plugins,
    load_failures,
)
from coordinator_api._plugins._markers import NAME, hookimpl
from coordinator_api._plugins._registry import (
    AssignmentSpec,
    Assignor,
    AssignorRegistry,
    ClassicPayloads,
    Command,
    CommandRegistry,
    CoordinatorFactory,
    DescribePayload,
    PayloadDecoder,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    Registration,
    Resource,
    ServerAssignor,
    ServerAssignorRegistry,
)

__all__ = [
    "DISABLE_PLUGINS_ENV",
    "NAME",
    "AssignmentSpec",
    "ClassicPayloads",
    "Assignor",
    "AssignorRegistry",
    "Command",
    "CommandRegistry",
    "CoordinatorFactory",
    "DescribePayload",
    "DuplicateRegistrationError",
    "MemberEvent",
    "MemberEventKind",
    "NotRegisteredError",
    "PayloadDecoder",
    "PayloadDecoderRegistry",
    "PluginError",
    "PluginHooks",
    "PluginInfo",
    "PluginLoadError",
    "PluginRegistry",
    "ProtocolRegistry",
    "Registration",
    "Resource",
    "ServerAssignor",
    "ServerAssignorRegistry",
    "add_plugin_commands",
    "describe_plugins",
    "disabled_plugins",
    "get_plugin_manager",
    "load_failures",
    "installed_plugins",
    "hookimpl",
    "plugins_report",
]
