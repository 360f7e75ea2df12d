"""The layout's one rule of direction (ARCHITECTURE.md): imports point downwards only. The
framework never imports a plugin; the built-in plugins are found through entry points, as
third-party ones are."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN_PACKAGES = {path.name for path in (ROOT / "plugins").iterdir() if (path / "__init__.py").exists()}


def imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_the_framework_imports_no_plugin() -> None:
    assert {"coordinator_consumer", "coordinator_demo"} <= PLUGIN_PACKAGES
    upward = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & PLUGIN_PACKAGES)
        for path in sorted((ROOT / "coordinator_api").rglob("*.py"))
    }
    assert {path: plugins for path, plugins in upward.items() if plugins} == {}
