"""Every hook is documented: in its spec (a ``:param:`` per argument) and in docs/plugins.md."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from coordinator_api._plugins import NAME, spec

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
HOOKS = sorted(
    name for name, _ in inspect.getmembers(spec, inspect.isfunction) if name.startswith(NAME + "_")
)


def test_there_are_hooks_to_document() -> None:
    assert len(HOOKS) >= 5


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hookspec_documents_each_argument(hook: str) -> None:
    function = getattr(spec, hook)
    doc = inspect.getdoc(function)
    assert doc, f"{hook} has no docstring"
    for argument in inspect.signature(function).parameters:
        assert f":param {argument}:" in doc, f"{hook}: argument {argument!r} has no ':param {argument}:'"


@pytest.mark.parametrize("hook", HOOKS)
def test_every_hook_is_in_the_plugin_authoring_guide(hook: str) -> None:
    guide = GUIDE.read_text()
    arguments = ", ".join(inspect.signature(getattr(spec, hook)).parameters)
    assert f"### `{hook}({arguments})`" in guide, f"docs/plugins.md has no section for {hook}({arguments})"


def test_the_guide_mentions_no_hook_that_does_not_exist() -> None:
    mentioned = set(re.findall(rf"\b{NAME}_[a-z_]+\b", GUIDE.read_text()))
    misspelt_on_purpose = {f"{NAME}_register_protocol"}  # the guide's example of a load failure
    assert mentioned - set(HOOKS) == misspelt_on_purpose
