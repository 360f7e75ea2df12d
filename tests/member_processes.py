"""Harness for tests that run group members as real processes (server/kafka_member.py,
membership/shard_member.py): start, kill, pause, resume, and read their JSON reports.

A member process that ends although the test did not end it (an exit code other than 0), or
that prints a line that is not a report, fails the test at once with its last output: every
:func:`wait_for` checks the members the running test started, and so does the end of the test
(``crash_watch``, used by tests/conftest.py). A wait that times out while a kafka-python member
is stuck in kafka-python 3.0.12's join stall raises :class:`KafkaPythonJoinStall` with the
client's own log lines: the one failure the suite runs again (tests/kafka_python_reruns.py).
"""

from __future__ import annotations

import itertools
import json
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
from typing import Any, Final

KAFKA_MEMBER = Path(__file__).parent / "server" / "kafka_member.py"
SHARD_MEMBER = Path(__file__).parent / "membership" / "shard_member.py"


class MemberCrashed(AssertionError):
    """A member process ended that the test did not end, or printed something that is not a
    report."""


class KafkaPythonJoinStall(AssertionError):
    """A wait timed out while a kafka-python member was stuck in kafka-python 3.0.12's join
    stall (:func:`kafka_python_join_stall`); ``lines`` are the client's log lines that show it."""

    def __init__(self, message: str, member: str, lines: list[str]) -> None:
        super().__init__(message)
        self.member = member
        self.lines = lines


# Every member process the running test started (``crash_watch`` resets it for each test).
_started: list[MemberProcess] = []


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
        self.client = client
        self.reports: list[dict[str, Any]] = []
        self.unparsed: list[str] = []  # stdout lines that are not JSON reports
        self.owned: frozenset[int] = frozenset()
        self.ended_at = float("inf")  # when a kill ended its ownership without a revocation
        self.ended_by_test = False  # sent SIGTERM or SIGKILL by the test: its exit is expected
        self.paused = False
        self.crash_reported = False
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
        _started.append(self)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                self.unparsed.append(line.rstrip("\n"))
                continue
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

    def last_output(self, lines: int = 30) -> str:
        """What the process said last: its last reports and the tail of its stderr, a line
        repeated back to back (kafka-python's metadata updates, ten a second while fetches fail)
        shown once with its count."""
        stderr = without_repeats(self.stderr_text().splitlines())[-lines:]
        return "\n".join(
            [
                f"--- {self.name}: last reports",
                *(json.dumps(r) for r in self.reports[-5:]),
                *(f"(not a report) {line}" for line in self.unparsed[-5:]),
                f"--- {self.name}: last {len(stderr)} lines of stderr ({self.stderr.name})",
                *stderr,
            ]
        )

    def crash(self) -> str | None:
        """Why this process counts as crashed, or None: it exited with an error although the
        test did not end it, or it printed a line that is not a report."""
        code = self.process.poll()
        if code is not None and code != 0 and not self.ended_by_test:
            return f"member process {self.name} exited with code {code}, and the test did not stop it"
        if self.unparsed:
            return f"member process {self.name} printed a line that is not a report: {self.unparsed[0]!r}"
        return None

    def stacks(self, wait_s: float = 0.5) -> list[str]:
        """Every thread's stack, as the process dumps it to stderr on the signal its "started"
        report names (``stack_dump_signal``: Python members with ``faulthandler``); [] if it
        names none, or is stopped or gone."""
        sig = next((r["stack_dump_signal"] for r in self.events("started") if "stack_dump_signal" in r), None)
        if sig is None or self.paused or not self.alive:
            return []
        before = len(self.stderr_text())
        self.process.send_signal(sig)
        time.sleep(wait_s)
        return self.stderr_text()[before:].splitlines()

    def join_stall(self) -> list[str] | None:
        """kafka-python's log lines that show this member stuck in its join stall, or None."""
        if self.client != "kafka-python" or self.paused or not self.alive:
            return None
        return kafka_python_join_stall(self.stderr_text(), time.time())

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.reports if r.get("event") == kind]

    def send_signal(self, sig: int) -> None:
        """Send ``sig``; after SIGTERM or SIGKILL, the process's exit is the test's doing."""
        if sig in (signal.SIGTERM, signal.SIGKILL):
            self.ended_by_test = True
        self.process.send_signal(sig)

    def kill(self) -> None:
        self.ended_at = time.time()
        self.send_signal(signal.SIGKILL)
        self.process.wait()
        self.owned = frozenset()

    def terminate(self) -> None:
        """Graceful stop: the client closes and leaves the group."""
        self.send_signal(signal.SIGTERM)
        self.process.wait(timeout=30)
        self.owned = frozenset()

    def pause(self) -> None:
        self.paused = True
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def summary(self) -> str:
        """One line: whether it runs, what it owns, and its last report."""
        code = self.process.poll()
        state = "paused" if self.paused else "running" if code is None else f"exited with {code}"
        last = dict(self.reports[-1]) if self.reports else {}
        at = last.pop("t", None)
        last.pop("name", None)
        last.pop("owned", None)
        ago = f" {time.time() - at:.1f} s ago" if isinstance(at, (int, float)) else ""
        owns = sorted(self.owned)
        return f"{self.name} ({self.client}): {state}, owns {owns}; last report{ago}: {json.dumps(last)}"


def check_no_crash(members: Iterable[MemberProcess] | None = None) -> None:
    """Raise :class:`MemberCrashed`, with its last output, for the first of ``members`` (by
    default, every member process the running test started) that crashed."""
    for member in list(_started if members is None else members):
        why = member.crash()
        if why is not None and not member.crash_reported:
            member.crash_reported = True  # reported once: the end of the test does not repeat it
            raise MemberCrashed(f"{why}\n{member.last_output()}")


@contextmanager
def crash_watch() -> Iterator[None]:
    """Around one test: forget the member processes of earlier tests, and after the test fail
    if one of its members crashed after its last wait."""
    _started.clear()
    try:
        yield
        check_no_crash()
    finally:
        _started.clear()


def owned_exactly_once(members: Iterable[MemberProcess], partitions: int) -> bool:
    """Every partition is owned by exactly one live member, and each of the first
    ``partitions`` live members owns some. A member that crashed fails the test instead of
    being left out."""
    members = list(members)
    check_no_crash(members)
    live = [m for m in members if m.alive]
    owned = sorted(p for m in live for p in m.owned)
    return owned == list(range(partitions)) and all(m.owned for m in live[:partitions])


def wait_for(condition: Callable[[], Any], timeout: float, what: str, step: float = 0.05) -> Any:
    """Poll ``condition`` until it returns something true, and return that.

    Fails at once if a member process of the running test crashed. Raises
    :class:`KafkaPythonJoinStall` as soon as a kafka-python member of the test shows its join
    stall (looked for once a second; its log shows it ``STALL_QUIET_S`` after the SyncGroup
    answer), rather than at the timeout; on a timeout without one, an AssertionError that
    names ``what``."""
    started = time.monotonic()
    deadline, next_look = started + timeout, started + 1.0
    while True:
        check_no_crash()
        value = condition()
        if value:
            return value
        now = time.monotonic()
        if now >= next_look or now > deadline:
            timed_out = now > deadline
            waited = f"timed out after {timeout} s" if timed_out else f"after {now - started:.0f} s"
            message = f"{waited} waiting for {what}"
            _raise_if_join_stall(message)
            if timed_out:
                raise AssertionError(f"{message}\n{members_now()}")
            next_look = now + 1.0
        time.sleep(step)


def _raise_if_join_stall(message: str) -> None:
    for member in list(_started):
        lines = member.join_stall()
        if lines is not None:
            raise KafkaPythonJoinStall(
                f"{message}: kafka-python member {member.name} is stuck in kafka-python "
                "3.0.12's join stall (a poll() gave up mid-join, the coordinator answered its "
                "SyncGroup, and the client never completed the join). Its log:\n"
                + "\n".join(line[:240] for line in lines),
                member.name,
                lines,
            )


def members_now(log_lines: int = 25, stack_lines: int = 80) -> str:
    """Why a wait timed out, in the failure's own message: a line for each member process of the
    running test, the coordinator's view of their groups (:func:`groups_now`), then what each
    process said last and its threads' stacks if it can dump them."""
    members = list(_started)
    parts = ["--- every member, in a line", *(member.summary() for member in members), *groups_now(members)]
    for member in members:
        parts.append(member.last_output(log_lines))
        stacks = member.stacks()
        if stacks:
            parts.append(f"--- {member.name}: its threads now ({len(stacks)} lines, the first {stack_lines})")
            parts.extend(stacks[:stack_lines])
    return "\n".join(parts)


def groups_now(members: Iterable[MemberProcess]) -> list[str]:
    """Each group the ``members`` named in their "started" reports, as its coordinator describes
    it (``coordinator-api groups describe``): its state and each member's assignment."""
    from coordinator_api._inspect import describe_group, render_group
    from coordinator_api._plugins import PluginRegistry

    starts = [report for member in members for report in member.events("started")]
    named = sorted({(r["bootstrap"], r["group"]) for r in starts if "group" in r})
    lines = []
    for bootstrap, group in named:
        lines.append(f"--- group {group!r} as its coordinator at {bootstrap} describes it")
        try:
            described = describe_group(bootstrap, group, timeout_ms=5000)
            lines.append(render_group(described, PluginRegistry.load().payload_decoders))
        except Exception as exc:  # the failure being explained matters more than this view of it
            lines.append(f"(not described: {exc!r})")
    return lines


def without_repeats(lines: list[str]) -> list[str]:
    """``lines`` with each run of lines that differ only in their first two fields (a log's time
    and thread) kept as its first line and a count of the others."""
    kept: list[str] = []
    run_key, repeats = None, 0
    for line in [*lines, None]:
        key = line.split(" ", 2)[2:] if line is not None else None
        if line is not None and key and key == run_key:
            repeats += 1
            continue
        if repeats:
            kept.append(f"(the line above {repeats} more times)")
        if line is not None:
            kept.append(line)
        run_key, repeats = key, 0
    return kept


# kafka-python 3.0.12's own log messages (kafka/coordinator/base.py and consumer.py), which
# kafka_member.py always writes to stderr as "<time.time()> <thread> <logger> <level> <message>".
JOIN_STARTED: Final = "Disabling heartbeat during join-group"
POLL_GAVE_UP: Final = "coordinator.poll: timeout in ensure_active_group; returning early"
SYNC_ANSWERED: Final = "Received SyncGroup response: "
JOIN_COMPLETED: Final = "Enabling heartbeat"
# A healthy member completes its join at the poll after the SyncGroup answer (500 ms apart).
STALL_QUIET_S: Final = 5.0


def kafka_python_join_stall(log: str, now: float, quiet_s: float = STALL_QUIET_S) -> list[str] | None:
    """The lines of a kafka-python member's log that show kafka-python 3.0.12's join stall, or
    None if the log does not show it.

    kafka-python 3.0.12 runs JoinGroup and SyncGroup as one task, and ``poll()`` awaits that task
    only while ``need_rejoin()`` is true. When a poll times out mid-join (``POLL_GAVE_UP``) and
    the join was asked for by a metadata or subscription change, the leader's own assignment
    (or the JoinGroup itself) makes ``need_rejoin()`` false before the task's result is taken:
    no later poll completes the join (``JOIN_COMPLETED`` never comes), heartbeats stay disabled,
    and the member drops out of the group although the coordinator answered every request.

    So, in the latest join attempt (from its ``JOIN_STARTED``): a poll gave up, then a SyncGroup
    was answered without error, and in the ``quiet_s`` since (by the log's timestamps, against
    ``now``) the join was not completed. Returns the attempt's first line, the poll's and the
    SyncGroup answer's.
    """
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if line.endswith(" " + JOIN_STARTED)]
    if not starts:
        return None
    attempt = lines[starts[-1] :]
    syncs = [i for i, line in enumerate(attempt) if f" {SYNC_ANSWERED}" in line]
    if not syncs or "error_code=0," not in attempt[syncs[-1]]:
        return None
    synced = attempt[syncs[-1]]
    gave_up = [line for line in attempt[: syncs[-1]] if line.endswith(" " + POLL_GAVE_UP)]
    if not gave_up or any(line.endswith(" " + JOIN_COMPLETED) for line in attempt[syncs[-1] :]):
        return None
    try:
        synced_at = float(synced.split(" ", 1)[0])
    except ValueError:
        return None
    if now - synced_at < quiet_s:
        return None
    return [attempt[0], gave_up[-1], synced]


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
                m.send_signal(signal.SIGTERM)
        for m in members:
            try:
                m.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                m.process.kill()
