"""The documentation's code runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)


def test_quickstart_is_a_working_coordinator_in_under_40_lines(tmp_path: Path) -> None:
    (code,) = python_blocks("quickstart.md")
    assert len(code.strip().splitlines()) < 40
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2
    owned = sorted(int(s) for line in lines for s in re.findall(r"\d+", line.split("owns shards", 1)[1]))
    assert owned == list(range(8))
    assert all(" generation 1 " in line for line in lines)
