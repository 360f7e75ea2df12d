"""Errors of the plugin system. Messages name the plugins involved and what to do next."""

from __future__ import annotations

from coordinator_api._errors import CoordinatorApiError

DISABLE_PLUGINS_ENV = "COORDINATOR_API_DISABLE_PLUGINS"


class PluginError(CoordinatorApiError):
    """Base class of the plugin system's errors."""


class PluginLoadError(PluginError):
    """A plugin could not be loaded, or one of its hooks raised while it registered things.

    :ivar plugin: the plugin's name (its entry-point name), or None when pluggy could not say
        which plugin failed.
    """

    def __init__(self, message: str, *, plugin: str | None) -> None:
        fix = (
            f"fix or uninstall it, or disable it with {DISABLE_PLUGINS_ENV}={plugin}"
            if plugin
            else f"`coordinator-api plugins` lists the installed plugins; {DISABLE_PLUGINS_ENV} "
            "disables named ones"
        )
        super().__init__(f"{message}; {fix}")
        self.plugin = plugin


class DuplicateRegistrationError(PluginError):
    """Two plugins registered the same thing (a protocol type, an assignor, a command, ...).

    :ivar what: what was registered twice, e.g. ``"protocol type"``.
    :ivar key: its name, e.g. ``"roundrobin-shards"``.
    :ivar first_plugin: the plugin that registered it first.
    :ivar second_plugin: the plugin whose registration was refused.
    """

    def __init__(self, *, what: str, key: str, first_plugin: str, second_plugin: str) -> None:
        super().__init__(
            f"{what} {key!r} is registered by plugin {first_plugin!r} and again by plugin "
            f"{second_plugin!r}; uninstall one of them, or disable one with "
            f"{DISABLE_PLUGINS_ENV}={second_plugin}"
        )
        self.what = what
        self.key = key
        self.first_plugin = first_plugin
        self.second_plugin = second_plugin


class NotRegisteredError(PluginError, LookupError):
    """No installed plugin registered what was asked for.

    :ivar what: what was looked up, e.g. ``"protocol type"``.
    :ivar key: its name.
    """

    def __init__(self, *, what: str, key: str, known: list[str]) -> None:
        installed = ", ".join(known) if known else "none"
        super().__init__(
            f"no plugin registers {what} {key!r} (installed: {installed}); install the plugin that "
            f"provides it (`coordinator-api plugins` lists what is installed) and check that "
            f"{DISABLE_PLUGINS_ENV} does not disable it"
        )
        self.what = what
        self.key = key
