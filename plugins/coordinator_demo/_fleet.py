"""What the parts of ``coordinator-api demo`` share: the live narration, the member processes
and their reports, the coordinator's membership events, the timings measured."""

from __future__ import annotations

import heapq
import itertools
import json
import math
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from coordinator_api.server import MembershipEvent, MembershipRecorder

if TYPE_CHECKING:
    from rich.status import Status

MEMBER_MODULE = "coordinator_demo._members"

#: How long a report is held before it is handled, to handle reports in the order they happened.
REORDER_S = 0.1


class DemoError(Exception):
    """A part cannot go on: a member process died on its own, or a step never happened."""


class Narrator:
    """Prints each step as it happens. On a terminal it also keeps a status line (what the demo
    is waiting for, and for how long, beside rich's spinner) under the narration; otherwise it
    prints plain lines."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.tty = self.stream.isatty()
        self.color = self.tty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        self.started = time.monotonic()
        self.part_started = self.started
        self._status: Status | None = None  # shown while the demo waits; stopped for each line
        self._status_at = 0.0

    def _style(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def line(self, text: str = "") -> None:
        self._clear_status()
        self.stream.write(text + "\n")
        self.stream.flush()

    def part(self, index: int, total: int, name: str, title: str) -> None:
        self.part_started = time.monotonic()
        self.line()
        self.line(self._style(f"[{index}/{total}] {name}: {title}", "1"))

    def event(self, text: str, at: float | None = None) -> None:
        """A line stamped with the seconds since the part started (``at``: when it happened)."""
        when = (time.monotonic() if at is None else at) - self.part_started
        self.line(f"   {when:6.2f} s  {text}")

    def outcome(self, text: str) -> None:
        self.line(f"== {text}")

    def detail(self, text: str) -> None:
        self.line(f"   {text}")

    def verdict(self, ok: bool, text: str) -> None:
        mark = self._style("ok", "32") if ok else self._style("FAILED", "1;31")
        self.line(f"   {mark}: {text}")

    def table(self, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        """Rows under a header. On a terminal rich draws them as the CLI draws its tables (a
        bold header, a rule, columns fitted to the terminal's width); otherwise each row is a
        plain line indented as a detail, its columns padded with spaces (the last one
        right-aligned, as numbers are)."""
        if self.tty:
            from coordinator_api._cli import table

            self.line(table(header, rows, aligned=True))
            return
        lines = [tuple(header), *(tuple(row) for row in rows)]
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        for line in lines:
            padded = [cell.ljust(width) for cell, width in zip(line[:-1], widths[:-1], strict=True)]
            self.detail("  ".join([*padded, line[-1].rjust(widths[-1])]))

    def status(self, text: str) -> None:
        """Show ``text`` on the status line (terminals only; at most ten times a second)."""
        now = time.monotonic()
        if not self.tty or now - self._status_at < 0.1:
            return
        self._status_at = now
        if self._status is None:
            from rich.console import Console

            console = Console(file=self.stream, force_terminal=True, no_color=not self.color)
            self._status = console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

    def _clear_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None


@dataclass(eq=False)
class Member:
    """One member process and the reports it printed (read on the demo's main thread)."""

    name: str
    kind: str
    process: subprocess.Popen[str]
    stderr_path: Path
    reports: list[dict[str, Any]] = field(default_factory=list)
    ended_by_demo: bool = False  # sent SIGTERM or SIGKILL: its exit is expected
    paused: bool = False
    ended_at: float = math.inf  # when a SIGKILL ended it

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def events(self, kind: str, since: float = -math.inf) -> list[dict[str, Any]]:
        return [r for r in self.reports if r.get("event") == kind and r["t"] >= since]

    def stderr_tail(self, lines: int = 6) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@dataclass(frozen=True)
class CoordinatorEvent:
    """A membership event the embedded coordinator logged, stamped with ``time.monotonic()``."""

    t: float
    event: MembershipEvent


ReportHandler = Callable[[Member, dict[str, Any]], None]
EventHandler = Callable[[CoordinatorEvent], None]


class Fleet:
    """The member processes of the whole demo, each part's in turn.

    Reports and the coordinator's membership events arrive on one queue and are handled on the
    main thread, in :meth:`wait`, by the running part's handlers (which narrate them)."""

    def __init__(self, bootstrap: str, narrator: Narrator, workdir: Path) -> None:
        self.bootstrap = bootstrap
        self.narrator = narrator
        self.workdir = workdir
        self.members: dict[str, Member] = {}
        self.coordinator_events: list[CoordinatorEvent] = []
        self.on_report: ReportHandler | None = None
        self.on_coordinator_event: EventHandler | None = None
        self._queue: queue.Queue[tuple[Member, dict[str, Any]] | CoordinatorEvent] = queue.Queue()
        self._pending: list[tuple[float, int, tuple[Member, dict[str, Any]] | CoordinatorEvent]] = []
        self._order = itertools.count()

    # --- starting and signalling members -------------------------------------------------------

    def start(self, kind: str, name: str, **options: Any) -> Member:
        """Start a member process (from the main thread: on Linux it dies with this thread)."""
        stderr_path = self.workdir / f"{name}.stderr"
        argv = [sys.executable, "-m", MEMBER_MODULE, kind, self.bootstrap, name]
        argv.append(json.dumps({**options, "parent": os.getpid()}))
        with stderr_path.open("w") as stderr:
            process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        member = Member(name, kind, process, stderr_path)
        self.members[name] = member
        threading.Thread(target=self._pump, args=(member,), name=f"demo-{name}", daemon=True).start()
        return member

    def _pump(self, member: Member) -> None:
        assert member.process.stdout is not None
        for line in member.process.stdout:
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                report = {"t": time.monotonic(), "member": member.name, "event": "unparsed", "line": line}
            self._queue.put((member, report))

    def kill(self, member: Member) -> None:
        """SIGKILL: no goodbye; the coordinator must expire its session."""
        member.ended_by_demo = True
        member.process.kill()
        member.process.wait()
        member.ended_at = time.monotonic()

    def terminate(self, member: Member) -> None:
        """SIGTERM: the member closes gracefully (it leaves its group) and exits."""
        member.ended_by_demo = True
        member.process.terminate()

    def pause(self, member: Member) -> None:
        member.process.send_signal(signal.SIGSTOP)
        member.paused = True

    def resume(self, member: Member) -> None:
        member.process.send_signal(signal.SIGCONT)
        member.paused = False

    def stop(self, members: list[Member] | None = None, timeout: float = 15.0) -> None:
        """End these members (by default every one still running): resume the paused, SIGTERM
        everyone, wait for them (handling their last reports), SIGKILL the ones that are slow."""
        chosen = [m for m in (self.members.values() if members is None else members) if m.running]
        for m in chosen:
            m.ended_by_demo = True
            if m.paused:
                self.resume(m)
            m.process.terminate()
        deadline = time.monotonic() + timeout
        while any(m.running for m in chosen) and time.monotonic() < deadline:
            self.drain(0.05)
        for m in chosen:
            if m.running:
                m.process.kill()
            m.process.wait()
        self.drain(0.05)
        self._release(math.inf)

    def stop_quietly(self) -> None:
        """The last resort (Ctrl-C, SIGTERM, an error): end every member at once, reports unread."""
        alive = [m for m in self.members.values() if m.running]
        for m in alive:
            m.ended_by_demo = True
            try:
                m.process.send_signal(signal.SIGCONT)
                m.process.terminate()
            except OSError:
                pass
        deadline = time.monotonic() + 5.0
        for m in alive:
            try:
                m.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                m.process.kill()
                m.process.wait()

    # --- reports and events ---------------------------------------------------------------------

    def coordinator_event(self, event: MembershipEvent) -> None:
        """Called on the coordinator's thread for each membership event it logs."""
        self._queue.put(CoordinatorEvent(time.monotonic(), event))

    def drain(self, timeout: float) -> None:
        """Handle what arrived, in the order it happened (by its ``t``), waiting up to
        ``timeout`` seconds for something new. Items are held :data:`REORDER_S` before they are
        handled, so that one that happened earlier but took longer to arrive (each process's
        reports cross a pipe and a thread of their own) is handled first."""
        try:
            item = self._queue.get(timeout=timeout) if timeout > 0 else self._queue.get_nowait()
            while True:
                t = item.t if isinstance(item, CoordinatorEvent) else float(item[1]["t"])
                heapq.heappush(self._pending, (t, next(self._order), item))
                item = self._queue.get_nowait()
        except queue.Empty:
            pass
        self._release(time.monotonic() - REORDER_S)

    def _release(self, until: float) -> None:
        while self._pending and self._pending[0][0] <= until:
            _, _, item = heapq.heappop(self._pending)
            self._handle(item)

    def _handle(self, item: tuple[Member, dict[str, Any]] | CoordinatorEvent) -> None:
        if isinstance(item, CoordinatorEvent):
            self.coordinator_events.append(item)
            if self.on_coordinator_event is not None:
                self.on_coordinator_event(item)
            return
        member, report = item
        member.reports.append(report)
        if report.get("event") == "unparsed":
            raise DemoError(f"member process {member.name} printed {report['line']!r}")
        if self.on_report is not None:
            self.on_report(member, report)

    def check_members(self) -> None:
        """Raise :class:`DemoError` if a member ended although the demo did not end it."""
        for m in self.members.values():
            code = m.process.poll()
            if code is not None and not m.ended_by_demo:
                m.ended_by_demo = True  # reported once
                tail = m.stderr_tail()
                raise DemoError(
                    f"member process {m.name} exited with code {code}" + (f":\n{tail}" if tail else "")
                )

    def wait(self, done: Callable[[], bool], timeout: float, what: str) -> bool:
        """Handle reports until ``done()`` (True) or ``timeout`` seconds pass (False)."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            self.drain(0)
            if done():
                return True
            self.check_members()
            now = time.monotonic()
            if now >= deadline:
                return False
            self.narrator.status(f"{what} ({now - started:.1f} s)")
            self.drain(min(0.05, deadline - now))

    def pause_for(self, seconds: float, what: str) -> None:
        """Let the members run for ``seconds``, handling their reports."""
        self.wait(lambda: False, seconds, what)

    def name_of(self, member_id: str | None) -> str:
        """The demo's name for a member id a member reported, or the id itself."""
        if member_id:
            for m in self.members.values():
                if any(r.get("member_id") == member_id for r in m.reports):
                    return m.name
                if member_id.startswith(f"{m.name}-") or member_id.startswith(f"leader-{m.name}-"):
                    return m.name
        return member_id or "?"


@dataclass
class Timing:
    part: str
    measure: str
    value: str


@dataclass
class Context:
    """What a part gets: the coordinator's address, the fleet, the narrator, where timings go."""

    bootstrap: str
    fleet: Fleet
    narrator: Narrator
    workdir: Path
    recorder: MembershipRecorder
    timings: list[Timing] = field(default_factory=list)
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def timing(self, part: str, measure: str, value: str) -> None:
        self.timings.append(Timing(part, measure, value))


def seconds(value: float) -> str:
    """``0.012`` -> ``12 ms``, ``3.456`` -> ``3.46 s``."""
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"
