"""The suite's one rerun rule, as a pytest plugin (loaded by tests/conftest.py).

A test marked ``kafka_python`` (it starts kafka-python member processes) runs again, up to
twice, only when it failed with :class:`~member_processes.KafkaPythonJoinStall`: a wait timed
out while a kafka-python member's own log showed kafka-python 3.0.12's join stall. Any other
failure of the same test (a safety check, a timeout with no stalled member, a crashed member)
fails at once, and a test that starts no kafka-python member never runs again. Every rerun is
listed at the end of the run with the client's log lines.

The reruns themselves are pytest-rerunfailures'; without that plugin (``-p no:rerunfailures``)
nothing runs again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import pytest
from member_processes import KafkaPythonJoinStall

if TYPE_CHECKING:
    from _pytest.terminal import TerminalReporter

MARKER: Final = "kafka_python"
RERUNS: Final = 2


def is_join_stall(error: BaseException | None) -> bool:
    """The failure itself is the stall: not a failure raised while handling one."""
    return isinstance(error, KafkaPythonJoinStall)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: the test starts kafka-python member processes; it runs again (up to {RERUNS} "
        "times) only when it fails with kafka-python 3.0.12's join stall",
    )
    config.pluginmanager.register(RerunLog(), "kafka-python-rerun-log")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("rerunfailures"):
        return
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            item.add_marker(
                pytest.mark.flaky(reruns=RERUNS, only_rerun=[KafkaPythonJoinStall], condition=is_join_stall)
            )


class RerunLog:
    """Keeps each rerun's failure and lists them at the end of the run."""

    def __init__(self) -> None:
        self.reruns: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.outcome == "rerun":
            crash = getattr(report.longrepr, "reprcrash", None)
            self.reruns.append((report.nodeid, crash.message if crash is not None else str(report.longrepr)))

    def pytest_terminal_summary(self, terminalreporter: TerminalReporter) -> None:
        if not self.reruns:
            return
        terminalreporter.write_sep("=", "run again after kafka-python 3.0.12's join stall", yellow=True)
        for nodeid, message in self.reruns:
            terminalreporter.write_line(f"RERUN {nodeid}")
            for line in message.splitlines():
                terminalreporter.write_line(f"    {line}")
