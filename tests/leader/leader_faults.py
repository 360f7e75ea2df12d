"""Helpers for tests/leader/test_leader_processes.py: candidate processes, a coordinator behind a
TCP proxy that can partition one member from it, and the leadership timeline checks.

:class:`ProxiedCoordinator` runs an :class:`~coordinator_api.EmbeddedCoordinator` on
``127.0.0.1:P`` that advertises the port ``Q`` of a :class:`tcp_proxy.ProxyThread` on
``127.0.0.1:Q``, forwarding to ``P``: every member's coordinator connection goes through the
proxy whatever its bootstrap address (a client connects to the address the coordinator
advertises). The proxy tells candidates apart by the ``client_id`` of each connection's first
request (``leader-<name>``) and can blackhole one candidate's connections
(:meth:`ProxiedCoordinator.drop`, :meth:`ProxiedCoordinator.heal`); see tcp_proxy.py.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from member_processes import MemberProcess, check_no_crash, wait_for
from tcp_proxy import ProxyThread

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator, Listener

LEADER_PROCESS = Path(__file__).parent / "leader_process.py"


# --- candidate processes ---------------------------------------------------------------------------


class Candidate(MemberProcess):
    """A leader_process.py child. ``label`` tells processes apart (a restarted candidate keeps its
    name but is another process); faults are stamped with ``time.monotonic()``, the clock the
    child prints."""

    _serial = itertools.count(1)

    def __init__(self, bootstrap: str, name: str, **options: Any) -> None:
        super().__init__("", bootstrap, name, script=LEADER_PROCESS, **options)
        self.label = f"{name}#{next(self._serial)}"
        self.killed_at: float | None = None
        self.check_s = float(options.get("check_ms", 5.0)) / 1000  # leader_process.py's default

    def events(self, kind: str, after: float = float("-inf")) -> list[dict[str, Any]]:
        return [r for r in list(self.reports) if r.get("event") == kind and r["t"] > after]

    def kill(self) -> None:
        """SIGKILL; ``killed_at`` is taken after the process is gone (a conservative end for a
        term it never got to print)."""
        self.send_signal(signal.SIGKILL)
        self.process.wait()
        self.killed_at = time.monotonic()

    def stop(self) -> None:
        """Graceful: SIGTERM makes it close its election; wait until it exited, past the bound
        of its close (which it reports when it starts) and the few seconds that stopping its
        threads takes: a process still there then has a close that is not bounded. (A process
        that has not reported ``started`` yet may not handle SIGTERM yet: wait for that first.)"""
        wait_for(lambda: self.events("started") or not self.alive, 45.0, f"{self.label} to start")
        started = self.events("started")
        timeout = started[0]["close_timeout_s"] + 15.0 if started else 0.0  # else it is gone
        self.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.send_signal(signal.SIGUSR1)  # its threads' stacks, to stderr
            time.sleep(0.5)
            raise AssertionError(
                f"{self.label} did not exit within {timeout} s of SIGTERM\n{self.last_output(80)}"
            ) from None

    def leading(self) -> bool:
        """By its reports: elected and neither revoked since nor gone."""
        if not self.alive:
            return False
        for r in reversed(list(self.reports)):
            if r.get("event") == "elected":
                return True
            if r.get("event") == "revoked":
                return False
        return False

    def last_epoch(self) -> int | None:
        elected = self.events("elected")
        return elected[-1]["epoch"] if elected else None


def start_candidates(bootstrap: str, names: Iterable[str], **options: Any) -> list[Candidate]:
    return [Candidate(bootstrap, name, **options) for name in names]


def finish(candidates: Iterable[Candidate], timeout: float = 20.0) -> None:
    """Stop every live candidate gracefully (resuming paused ones), killing any that hangs."""
    live = [c for c in candidates if c.alive]
    for c in live:
        os.kill(c.process.pid, signal.SIGCONT)
    for c in live:
        with contextlib.suppress(AssertionError):  # SIGTERM ends it all the same
            wait_for(lambda c=c: c.events("started") or not c.alive, timeout, f"{c.label} to start")
        c.send_signal(signal.SIGTERM)
    for c in live:
        try:
            c.process.wait(timeout)
        except subprocess.TimeoutExpired:
            c.kill()
    time.sleep(0.1)  # let the reader threads take the last lines


def elected_after(candidates: Iterable[Candidate], after: float) -> tuple[Candidate, dict[str, Any]] | None:
    """The first ``elected`` report of any candidate after ``after``."""
    found = [(e["t"], id(c), c, e) for c in candidates for e in c.events("elected", after)]
    if not found:
        return None
    _, _, c, e = min(found, key=lambda x: x[0])
    return c, e


# --- the leadership timeline -------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One interval in which a process believed it led."""

    who: str
    epoch: int
    start: float
    end: float
    observed: bool  # False: elected but gone before the main thread checked is_leader()


def leadership_terms(candidates: Iterable[Candidate]) -> list[Term]:
    """Each process's leadership intervals: [min(elected, first check that said True), last check
    that said True]: a process acts as leader only after a check says so, as a service does.

    A term whose ``term`` line never came (SIGKILL) ends when it was killed. A term no check
    saw (it ended, or the process was paused or killed, before its main thread ran the next
    check) ends at the revocation or the kill, but no later than one check period after the
    election: a process that was not stopped checks within that period, and one that was
    stopped acts on nothing until it runs again (its ``revoked`` line, printed after it resumes,
    says when it noticed, not when it could last have acted)."""
    terms: list[Term] = []
    for c in candidates:
        reports = list(c.reports)
        elected = [r for r in reports if r.get("event") == "elected"]
        revoked = [r["t"] for r in reports if r.get("event") == "revoked"]
        used: set[int] = set()
        for r in reports:
            if r.get("event") != "term":
                continue
            start = r["first"]
            matching = [
                i for i, e in enumerate(elected) if e["epoch"] == r["epoch"] and e["t"] <= r["last"] + 0.05
            ]
            if matching:
                used.add(matching[-1])
                start = min(start, elected[matching[-1]]["t"])
            terms.append(Term(c.label, r["epoch"], start, r["last"], True))
        for i, e in enumerate(elected):
            if i in used:
                continue
            after = [t for t in revoked if t >= e["t"]]
            if after:
                end = after[0]
            elif c.killed_at is not None:
                end = c.killed_at
            else:
                raise AssertionError(f"{c.label}: elected for epoch {e['epoch']} but its term never ended")
            end = min(end, e["t"] + c.check_s)
            terms.append(Term(c.label, e["epoch"], e["t"], end, False))
    return sorted(terms, key=lambda term: term.start)


def overlaps(terms: list[Term], tolerance: float = 0.001) -> list[str]:
    """Pairs of terms of different processes that intersect (beyond ``tolerance`` seconds)."""
    problems = []
    for i, a in enumerate(terms):
        for b in terms[i + 1 :]:
            if b.start >= a.end - tolerance:
                break  # sorted by start: no later term can intersect ``a``
            if a.who != b.who:
                problems.append(
                    f"{a.who} led epoch {a.epoch} [{a.start:.4f}, {a.end:.4f}] while {b.who} led epoch "
                    f"{b.epoch} [{b.start:.4f}, {b.end:.4f}]: {min(a.end, b.end) - b.start:.4f} s"
                )
    return problems


def leaderless_gaps(terms: list[Term], since: float, until: float) -> list[tuple[float, float]]:
    """The (start, length) of each moment without a leader between ``since`` and ``until``."""
    gaps: list[tuple[float, float]] = []
    covered_to = since
    for term in terms:
        if term.start >= until:
            break
        if term.start > covered_to:
            gaps.append((covered_to, term.start - covered_to))
        covered_to = max(covered_to, term.end)
    if until > covered_to:
        gaps.append((covered_to, until - covered_to))
    return gaps


def epochs_grow(terms: list[Term]) -> list[str]:
    """Terms of different processes whose epochs do not grow with time."""
    problems = []
    for a, b in itertools.pairwise(sorted(terms, key=lambda t: t.start)):
        if a.who != b.who and b.epoch <= a.epoch:
            problems.append(f"{b.who} led epoch {b.epoch} after {a.who} led epoch {a.epoch}")
    return problems


# --- a coordinator whose members can be partitioned ---------------------------------------------------


class ProxiedCoordinator:
    """The embedded coordinator on ``127.0.0.1:P``, advertising ``127.0.0.1:Q`` where a
    :class:`tcp_proxy.ProxyThread` forwards to it. See the module docstring."""

    def __init__(self, config: CoordinatorConfig) -> None:
        self.config = config
        self.proxy = ProxyThread()
        self.coordinator: EmbeddedCoordinator | None = None

    def __enter__(self) -> ProxiedCoordinator:
        self.proxy.__enter__()
        try:
            listener = Listener(port=0, advertised_port=self.proxy.port)
            self.coordinator = EmbeddedCoordinator(config=self.config, listeners=[listener]).__enter__()
        except BaseException:
            self.proxy.__exit__(None, None, None)
            raise
        self.proxy.target = ("127.0.0.1", self.coordinator.port)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.coordinator is not None
        try:
            self.proxy.__exit__(*exc)
        finally:
            self.coordinator.__exit__(None, None, None)

    @property
    def direct(self) -> str:
        """The coordinator's own address (members still reach it through the proxy afterwards)."""
        assert self.coordinator is not None
        return f"127.0.0.1:{self.coordinator.port}"

    @property
    def proxied(self) -> str:
        """The proxy's address, which the coordinator advertises."""
        return f"127.0.0.1:{self.proxy.port}"

    def drop(self, client_id: str) -> float:
        """Partition ``client_id`` from the coordinator; returns the moment it took effect."""
        return self.proxy.drop(client_id)

    def heal(self, client_id: str) -> float:
        return self.proxy.heal(client_id)


def agreed_leader(candidates: list[Candidate]) -> Candidate | None:
    """The leader every live candidate names (by its last ``leader`` report), if it leads. A
    candidate that crashed fails the test instead of being left out."""
    check_no_crash(candidates)
    live = [c for c in candidates if c.alive]
    named = set()
    for c in live:
        known = c.events("leader")
        named.add(known[-1]["leader"] if known else None)
    if len(named) != 1 or None in named:
        return None
    leaders = [c for c in live if c.name == next(iter(named)) and c.leading()]
    return leaders[0] if len(leaders) == 1 else None


def stderr_of(candidates: list[Candidate]) -> str:
    return "\n".join(f"--- {c.label}\n{c.stderr_text()[-3000:]}" for c in candidates)
