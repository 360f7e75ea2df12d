"""The one name of the plugin system and the pluggy markers made from it.

``coordinator_api`` is the pluggy project name, the prefix of every hook and the entry-point
group plugins are discovered through (ARCHITECTURE rule 5). The markers live in their own module
so that ``spec.py`` and the package root can both import them without an import cycle.
"""

from __future__ import annotations

from typing import Final

import pluggy

NAME: Final = "coordinator_api"

hookspec: Final = pluggy.HookspecMarker(NAME)
"""Marks the hook specifications in :mod:`coordinator_api._plugins.spec` (framework only)."""

hookimpl: Final = pluggy.HookimplMarker(NAME)
"""Marks a plugin's hook implementations::

    @hookimpl
    def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None: ...
"""
