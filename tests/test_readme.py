"""The README's commands are the ones CI and users run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", (ROOT / "README.md").read_text())


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _readme_commands()[1]
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_readme_first_command_runs_the_demo() -> None:
    assert _readme_commands()[0].endswith("coordinator-api demo")
