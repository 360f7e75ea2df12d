"""The documentation site: mkdocs builds every page of docs/ with warnings as errors (broken
links, pages left out of the nav, docstrings the API reference cannot read)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The packages docs/reference.md documents: every name of their __all__ must be shown.
PUBLIC_PACKAGES = (
    "coordinator_api",
    "coordinator_consumer",
    "coordinator_streams",
    "coordinator_leader",
    "coordinator_spark",
)


def test_the_site_builds_strictly_with_every_page_in_the_nav(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pages = {p.stem for p in (ROOT / "docs").glob("*.md")}
    built = {p.parent.name for p in (tmp_path / "site").glob("*/index.html")}
    assert pages - {"index"} <= built, pages - built
    reference = (tmp_path / "site" / "reference" / "index.html").read_text()
    missing = [
        f"{package}.{name}"
        for package in PUBLIC_PACKAGES
        for name in importlib.import_module(package).__all__
        if f'id="{package}.{name}"' not in reference
    ]
    assert not missing, f"public names the API reference does not show: {missing}"
