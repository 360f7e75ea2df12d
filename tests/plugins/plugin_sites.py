"""Installing plugins for tests: real distribution metadata on a throwaway sys.path entry.

``install_distribution`` writes what ``pip install`` leaves in site-packages for a wheel (the
package and a ``*.dist-info`` directory with ``METADATA``, ``entry_points.txt`` and ``RECORD``)
into a temporary directory. A subprocess with that directory on ``PYTHONPATH`` discovers the
plugin through ``importlib.metadata`` exactly as it would an installed one, without building a
wheel or reaching a package index (neither works offline or on Python 3.12+ venvs without
setuptools).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
CONTRIB_PLUGIN = ROOT / "contrib" / "coordinator-roundrobin-plugin"


def install_distribution(
    site: Path,
    *,
    name: str,
    version: str,
    entry_points: Mapping[str, Mapping[str, str]],
    requires: tuple[str, ...] = (),
    packages: Mapping[str, Path] | None = None,
    modules: Mapping[str, str] | None = None,
) -> None:
    """Install a distribution into ``site`` as pip would: its code and its ``.dist-info``.

    :param packages: package name -> source directory to copy.
    :param modules: module name -> source text, for one-file plugins written by a test.
    """
    site.mkdir(parents=True, exist_ok=True)
    files: list[str] = []
    for package, source in (packages or {}).items():
        shutil.copytree(source, site / package, ignore=shutil.ignore_patterns("__pycache__"))
        files += [str(p.relative_to(site)) for p in (site / package).rglob("*") if p.is_file()]
    for module, text in (modules or {}).items():
        (site / f"{module}.py").write_text(text)
        files.append(f"{module}.py")
    dist_info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist_info.mkdir()
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    (dist_info / "METADATA").write_text("\n".join(metadata) + "\n")
    sections = [
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in table.items())
        for group, table in entry_points.items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(sections))
    (dist_info / "INSTALLER").write_text("tests/plugins/plugin_sites.py\n")
    own = ("METADATA", "entry_points.txt", "INSTALLER", "RECORD")
    record = [*files, *(f"{dist_info.name}/{name}" for name in own)]
    (dist_info / "RECORD").write_text("".join(f"{path},,\n" for path in record))


def install_contrib_plugin(site: Path) -> dict[str, Any]:
    """Install ``contrib/coordinator-roundrobin-plugin`` into ``site`` from its own
    ``pyproject.toml`` (name, version, dependencies, entry points); returns its ``[project]``."""
    project: dict[str, Any] = tomllib.loads((CONTRIB_PLUGIN / "pyproject.toml").read_text())["project"]
    install_distribution(
        site,
        name=project["name"],
        version=project["version"],
        entry_points=project["entry-points"],
        requires=tuple(project["dependencies"]),
        packages={"coordinator_roundrobin": CONTRIB_PLUGIN / "src" / "coordinator_roundrobin"},
    )
    return project


def environment(*sites: Path, **variables: str) -> dict[str, str]:
    """The environment for a subprocess that sees ``sites`` as installed packages; without
    ``COORDINATOR_API_DISABLE_PLUGINS`` unless given."""
    env = {k: v for k, v in os.environ.items() if k != "COORDINATOR_API_DISABLE_PLUGINS"}
    path = [*map(str, sites), str(ROOT), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(path)
    env.update(variables)
    return env
