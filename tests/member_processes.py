"""Harness for tests that run group members as real processes (server/kafka_member.py,
membership/shard_member.py): start, kill, pause, resume, and read their JSON reports."""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from coordinator_api.server import MembershipEvent

KAFKA_MEMBER = Path(__file__).parent / "server" / "kafka_member.py"
SHARD_MEMBER = Path(__file__).parent / "membership" / "shard_member.py"


class MemberProcess:
    """One member process; its reports are collected by a reader thread."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        name: str,
        *,
        script: Path = KAFKA_MEMBER,
        env: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        self.name = name
        self.reports: list[dict[str, Any]] = []
        self.owned: frozenset[int] = frozenset()
        self.ended_at = float("inf")  # when a kill ended its ownership without a revocation
        argv = [sys.executable, str(script), "--bootstrap", bootstrap, "--name", name]
        if client:
            argv += ["--client", client]
        for key, value in options.items():
            if value is not None:
                argv += ["--" + key.replace("_", "-"), str(value)]
        # stderr goes to a file, so a failing test can show what the client said.
        self.stderr = tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".stderr", delete=False)
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            report = json.loads(line)
            self.reports.append(report)
            if "owned" in report:
                self.owned = frozenset(report["owned"])
            elif report.get("event") == "assigned" and "shards" in report:
                self.owned = frozenset(report["shards"])
            elif report.get("event") in ("revoked", "lost") and "shards" in report:
                self.owned = frozenset()

    def stderr_text(self) -> str:
        with open(self.stderr.name, encoding="utf-8", errors="replace") as f:
            return f.read()

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.reports if r.get("event") == kind]

    def kill(self) -> None:
        self.ended_at = time.time()
        self.process.kill()
        self.process.wait()
        self.owned = frozenset()

    def terminate(self) -> None:
        """Graceful stop: the client closes and leaves the group."""
        self.process.terminate()
        self.process.wait(timeout=30)
        self.owned = frozenset()

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


def owned_exactly_once(members: Iterable[MemberProcess], partitions: int) -> bool:
    live = [m for m in members if m.alive]
    owned = sorted(p for m in live for p in m.owned)
    return owned == list(range(partitions)) and all(m.owned for m in live[:partitions])


def wait_for(condition: Callable[[], Any], timeout: float, what: str, step: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something true, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


def ownership_intervals(members: Iterable[MemberProcess]) -> dict[int, list[tuple[float, float, str]]]:
    """For each partition, the (start, end, member) intervals in which a member owned it."""
    intervals: dict[int, list[tuple[float, float, str]]] = {}
    for member in members:
        since: dict[int, float] = {}
        for report in member.reports:
            if report.get("event") == "assigned":
                for p in report["partitions"]:
                    since.setdefault(p, report["t"])
            elif report.get("event") in ("revoked", "lost"):
                for p in report["partitions"]:
                    if p in since:
                        intervals.setdefault(p, []).append((since.pop(p), report["t"], member.name))
        for p, start in since.items():
            intervals.setdefault(p, []).append((start, member.ended_at, member.name))
    return intervals


def overlapping_ownership(members: Iterable[MemberProcess]) -> list[str]:
    """Partitions two members owned at the same moment, by their own reports."""
    problems = []
    for partition, spans in ownership_intervals(members).items():
        spans.sort()
        for (_s1, e1, m1), (s2, _e2, m2) in itertools.pairwise(spans):
            if s2 < e1 and m1 != m2:
                problems.append(f"partition {partition}: {m1} until {e1:.3f}, {m2} from {s2:.3f}")
    return problems


@contextmanager
def running_members(members: list[MemberProcess]) -> Iterator[list[MemberProcess]]:
    try:
        yield members
    finally:
        for m in members:
            if m.alive:
                m.resume()
                m.process.terminate()
        for m in members:
            try:
                m.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                m.process.kill()


class MembershipRecorder(logging.Handler):
    """Collects the embedded coordinator's membership events (logged in this process as they
    happen), each stamped with ``time.monotonic()``, the clock member processes report on."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.events: list[MembershipEvent] = []
        self.times: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        doc = getattr(record, "membership_event", None)
        if doc is not None:
            self.events.append(MembershipEvent(**doc))
            self.times.append(time.monotonic())

    def of(self, kind: str, group: str | None = None) -> list[MembershipEvent]:
        return [e for e in self.events if e.kind == kind and (group is None or e.group_id == group)]

    def first(self, kind: str, member_prefix: str, after: float) -> float | None:
        """When the coordinator first logged ``kind`` after ``after`` for a member id starting
        with ``member_prefix``."""
        return min(
            (
                t
                for t, e in zip(self.times, self.events)
                if t > after and e.kind == kind and (e.member_id or "").startswith(member_prefix)
            ),
            default=None,
        )


@contextmanager
def recording_membership() -> Iterator[MembershipRecorder]:
    logger = logging.getLogger("coordinator_api.server.membership")
    recorder = MembershipRecorder()
    saved = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(recorder)
    try:
        yield recorder
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(saved)
