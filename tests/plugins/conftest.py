"""Fixtures of the plugin-system tests: the contrib plugin, installed or imported from source."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from plugin_sites import CONTRIB_PLUGIN, install_contrib_plugin


@pytest.fixture(scope="module")
def roundrobin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway site-packages directory with the contrib plugin installed."""
    site = tmp_path_factory.mktemp("roundrobin-site")
    install_contrib_plugin(site)
    return site


@pytest.fixture(scope="module")
def roundrobin() -> Iterator[ModuleType]:
    """The contrib plugin's package, imported from its source tree (for its unit tests)."""
    source = str(CONTRIB_PLUGIN / "src")
    sys.path.insert(0, source)
    try:
        yield importlib.import_module("coordinator_roundrobin")
    finally:
        sys.path.remove(source)
        for name in [n for n in sys.modules if n.split(".")[0] == "coordinator_roundrobin"]:
            del sys.modules[name]
