"""Helpers for tests/leader/test_leader_processes.py: candidate processes, a coordinator behind a
TCP proxy that can partition one member from it, and the leadership timeline checks.

**Why the proxy sits at the advertised address.** A Kafka client only bootstraps through
``bootstrap_servers``: it then connects to the address the coordinator advertises in Metadata and
FindCoordinator. So a proxy that is merely a member's bootstrap address would be bypassed.
:class:`ProxiedCoordinator` runs :class:`~coordinator_api.server.CoordinatorServer` on
``127.0.0.1:P`` with ``advertised_host="127.0.0.2"`` and :class:`PartitionProxy` on
``127.0.0.2:P`` (the whole of 127.0.0.0/8 is loopback on Linux), forwarding to ``127.0.0.1:P``:
every member's coordinator connection goes through the proxy whatever its bootstrap address. The
proxy reads the header of the first request of each connection, which names the client
(``client_id``, ``leader-<name>`` for a candidate), and :meth:`PartitionProxy.drop` blackholes
the connections of one client only: it stops forwarding in both directions without closing
anything (bytes and closes wait in the proxy, new connections are accepted and held), as a
network partition would; :meth:`PartitionProxy.heal` lets everything through again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import os
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from member_processes import MemberProcess, check_no_crash, wait_for

from coordinator_api import CoordinatorConfig
from coordinator_api.server import CoordinatorServer

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

    def stop(self, timeout: float = 30.0) -> None:
        """Graceful: SIGTERM makes it close its election; wait until it exited. (A process that
        has not reported ``started`` yet may not handle SIGTERM yet: wait for that first.)"""
        wait_for(lambda: self.events("started") or not self.alive, timeout, f"{self.label} to start")
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


def _client_id(frame: bytes) -> str | None:
    """The client id in a request header (api key, api version, correlation id, client id)."""
    if len(frame) < 10:
        return None
    (length,) = struct.unpack_from(">h", frame, 8)
    if length < 0 or len(frame) < 10 + length:
        return None
    return frame[10 : 10 + length].decode("utf-8", "replace")


class PartitionProxy:
    """TCP forwarding from ``listen`` to ``target`` that can blackhole one client's connections."""

    def __init__(self, listen: tuple[str, int], target: tuple[str, int]) -> None:
        self.listen = listen
        self.target = target
        self._open: dict[str, asyncio.Event] = {}
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.clients: set[str] = set()  # client ids seen

    def _gate(self, client_id: str) -> asyncio.Event:
        gate = self._open.get(client_id)
        if gate is None:
            gate = self._open[client_id] = asyncio.Event()
            gate.set()
        return gate

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, *self.listen)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for gate in self._open.values():
            gate.set()
        for w in list(self._writers):
            w.close()

    def set_dropped(self, client_id: str, dropped: bool) -> None:
        gate = self._gate(client_id)
        if dropped:
            gate.clear()
        else:
            gate.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await reader.readexactly(4)
            (size,) = struct.unpack(">i", head)
            frame = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        client_id = _client_id(frame) or "?"
        self.clients.add(client_id)
        gate = self._gate(client_id)
        await gate.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        up_writer.write(head + frame)
        await asyncio.gather(
            self._pump(reader, up_writer, gate), self._pump(up_reader, writer, gate), return_exceptions=True
        )
        self._writers.discard(writer)
        self._writers.discard(up_writer)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, gate: asyncio.Event
    ) -> None:
        try:
            while True:
                data = await source.read(65536)
                await gate.wait()  # a partition holds the bytes (and the close) until it heals
                if not data:
                    break
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()


class ProxiedCoordinator:
    """The embedded coordinator (``CoordinatorServer`` in a thread of its own) on
    ``127.0.0.1:P``, advertising ``127.0.0.2:P`` where a :class:`PartitionProxy` forwards to it.
    See the module docstring."""

    def __init__(self, config: CoordinatorConfig, advertised_host: str = "127.0.0.2") -> None:
        self.config = config
        self.advertised_host = advertised_host
        self.server: CoordinatorServer | None = None
        self.proxy: PartitionProxy | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ProxiedCoordinator:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(started),), daemon=True)
        self._thread.start()
        started.result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stopped is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    async def _main(self, started: concurrent.futures.Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        try:
            self.server = CoordinatorServer(
                host="127.0.0.1", port=0, config=self.config, advertised_host=self.advertised_host
            )
            await self.server.start()
            self.proxy = PartitionProxy(
                (self.advertised_host, self.server.port), ("127.0.0.1", self.server.port)
            )
            await self.proxy.start()
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(None)
        await self._stopped.wait()
        await self.proxy.close()
        await self.server.close()

    @property
    def direct(self) -> str:
        """The coordinator's own address (members still reach it through the proxy afterwards)."""
        assert self.server is not None
        return f"127.0.0.1:{self.server.port}"

    @property
    def proxied(self) -> str:
        """The proxy's address."""
        assert self.server is not None
        return f"{self.advertised_host}:{self.server.port}"

    def _set(self, client_id: str, dropped: bool) -> None:
        assert self._loop is not None and self.proxy is not None
        proxy = self.proxy

        async def apply() -> None:
            proxy.set_dropped(client_id, dropped)

        asyncio.run_coroutine_threadsafe(apply(), self._loop).result(5)

    def drop(self, client_id: str) -> float:
        """Partition ``client_id`` from the coordinator; returns the moment it took effect."""
        self._set(client_id, True)
        return time.monotonic()

    def heal(self, client_id: str) -> float:
        self._set(client_id, False)
        return time.monotonic()


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
