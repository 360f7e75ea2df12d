#!/usr/bin/env python3
"""Benchmark: leader failover with coordinator_leader, beside Kafka, ZooKeeper and etcd, in one run.

Four elections, each with three candidate processes (bench/leader_candidate.py) per trial:

* **coordinator**: :class:`coordinator_leader.LeaderElection` on the embedded coordinator
  (``python -m coordinator_api serve --port 0 --initial-rebalance-delay-ms 0``);
* **kafka**: the same ``LeaderElection`` with ``bootstrap_servers`` naming a one-broker Apache
  Kafka 4 cluster (:class:`coordinator_api.testing.KafkaCluster`, initial rebalance delay 0):
  Kafka's group coordinator in place of ours;
* **zookeeper**: kazoo's ``Election`` recipe on a standalone ZooKeeper server run from the
  jars inside the pyspark wheel;
* **etcd**: a lease-based election on a one-member etcd (Debian's ``etcd-server``): lease of
  TTL = session timeout, kept alive every heartbeat interval, a transaction "put the key with my
  lease if its create_revision is 0", the others watching the key (``/v3/watch`` stream).

For each session timeout (``--sessions``) and heartbeat interval (session / each of
``--heartbeat-divisors``; kazoo's ping interval is fixed at a third of the session, so
ZooKeeper is measured once per session), ``--repeats`` trials each measure:

* **graceful failover**: the leader is told to stop (it resigns/closes cleanly): time from the
  command being written to its stdin until another candidate prints ``elected``;
* **crash failover**: with three candidates again (a fresh one replaces the stopped leader) and
  all agreeing on the leader, the leader gets SIGKILL: time from the kill until another
  candidate prints ``elected``.

Every candidate prints its ``elected``/``revoked`` moments on CLOCK_MONOTONIC (one clock for
every process on Linux); a killed leader's leadership ends at the kill. The benchmark counts
pairs of candidates whose leadership intervals overlap (must be 0) and epochs that do not grow
from one leader to the next.

    python bench/bench_leader.py                        # full run: 2, 6 and 10 s sessions, ~15 min
    python bench/bench_leader.py --quick                # one 2 s session, 2 repeats, ~30 s
    python bench/bench_leader.py --sessions 2000,6000 --heartbeat-divisors 3,10 --repeats 5 \
        --systems coordinator,kafka,zookeeper,etcd

It prints one line per trial, then a Markdown table, and writes every trial (with every
candidate's events) to ``bench/results/leader.json`` (``--output``); the servers' and the
candidates' logs go to ``bench/results/leader-logs/``. A system that cannot run here (no
``etcd`` binary, no java or pyspark for ZooKeeper, no java or Kafka jars for Kafka, no
``coordinator_leader.LeaderElection``) is reported as "not measured" with the reason, and the
others are measured anyway.

Caveats:

* kazoo pings every third of the negotiated session and has no setting for it, so ZooKeeper
  has one row per session timeout; its ratio is taken against each of our heartbeat rows.
* ZooKeeper runs with ``tickTime`` 200 ms (``--zk-tick-ms``) instead of the sample config's
  2000 ms, which would forbid sessions under 4 s; sessions expire on tick boundaries.
* etcd lease TTLs are whole seconds, at least 2 s with etcd's default election timeout, and its
  lessor looks for expired leases every 500 ms. Keep-alives are single-request POSTs to the
  JSON gateway over a persistent HTTP/1.1 connection (etcdctl uses a gRPC stream).
* A crash failover depends on how long before the kill the leader's last heartbeat (ping,
  keep-alive) reached the server: with pings every session/3 it varies by up to a third of
  the session from trial to trial, hence the max column.
* On Kafka a heartbeat is answered at once (the embedded coordinator holds it until the group
  changes), so the other candidates hear of a leader's LeaveGroup or expiry only at their next
  heartbeat: up to one heartbeat interval more, on both failovers.
* The graceful figure includes the stop command's trip through a pipe to the leader process.
* Everything (servers, candidates, the benchmark) shares one machine; each trial records how
  busy the whole machine was (``machine_busy_cores`` in the JSON; mean printed at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))

from leader_peers import (
    REPO,
    EmbeddedCoordinatorServer,
    EtcdServer,
    KafkaBrokerServer,
    PeerServer,
    PeerUnavailable,
    ZooKeeperServer,
    child_env,
)

CANDIDATE = Path(__file__).resolve().parent / "leader_candidate.py"
DEFAULT_OUTPUT = REPO / "bench" / "results" / "leader.json"

COORDINATOR, KAFKA, ZOOKEEPER, ETCD = "coordinator", "kafka", "zookeeper", "etcd"
SYSTEMS = (COORDINATOR, KAFKA, ZOOKEEPER, ETCD)
# The systems whose candidates run coordinator_leader (the code under test).
LEADER_ELECTIONS = (COORDINATOR, KAFKA)
LABELS = {
    COORDINATOR: "coordinator_leader (embedded coordinator)",
    KAFKA: "Kafka cluster (coordinator_leader on 1 broker)",
    ZOOKEEPER: "ZooKeeper (kazoo Election)",
    ETCD: "etcd (lease + txn election)",
}
CANDIDATES = 3


class TrialFailed(RuntimeError):
    """A trial could not be completed (the message says where)."""


# --- one candidate process -------------------------------------------------------------------------


class CandidateProcess:
    """A bench/leader_candidate.py child whose JSON events are collected as they arrive."""

    def __init__(self, trial: Trial, name: str) -> None:
        self.trial = trial
        self.name = name
        self.events: list[dict[str, Any]] = []
        self.killed_at: float | None = None
        self.exited_at: float | None = None
        argv = [
            sys.executable,
            str(CANDIDATE),
            "--system",
            trial.system,
            "--connect",
            trial.address,
            "--group",
            trial.group,
            "--name",
            name,
            "--session-ms",
            str(trial.session_ms),
            "--heartbeat-ms",
            str(trial.heartbeat_ms),
        ]
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=trial.stderr_log,
            text=True,
            env=child_env(),
            cwd=REPO,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                self.trial.stderr_log.write(f"[{self.name} stdout] {line}")
                continue
            with self.trial.cond:
                self.events.append(event)
                self.trial.cond.notify_all()
        with self.trial.cond:
            self.exited_at = time.monotonic()
            self.trial.cond.notify_all()

    # state, read under trial.cond
    @property
    def alive(self) -> bool:
        return self.exited_at is None and self.killed_at is None

    @property
    def leading(self) -> bool:
        for event in reversed(self.events):
            if event["event"] == "elected":
                return self.killed_at is None
            if event["event"] == "revoked":
                return False
        return False

    def last(self, kind: str, after: float = float("-inf")) -> dict[str, Any] | None:
        for event in reversed(self.events):
            if event["event"] == kind and event["t"] > after:
                return event
        return None

    def errors(self) -> list[str]:
        return [str(e.get("error")) for e in self.events if e["event"] == "error"]

    # commands
    def send(self, command: str) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            return
        try:
            stdin.write(command + "\n")
            stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def kill(self) -> float:
        """SIGKILL; returns the moment just before the signal was sent."""
        with self.trial.cond:
            self.killed_at = time.monotonic()
        os.kill(self.process.pid, signal.SIGKILL)
        return self.killed_at

    def finish(self, timeout: float) -> None:
        """Ask it to stop (closing stdin), then kill it if it lingers."""
        self.send("stop")
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=5)


# --- one trial -------------------------------------------------------------------------------------


@dataclass
class Trial:
    system: str
    address: str
    session_ms: int
    heartbeat_ms: int
    stderr_log: IO[str]
    group: str = field(default_factory=lambda: f"bench-leader-{uuid.uuid4().hex[:12]}")
    rng: random.Random = field(default_factory=random.Random)
    cond: threading.Condition = field(default_factory=threading.Condition)
    candidates: list[CandidateProcess] = field(default_factory=list)
    next_index: int = 0

    @property
    def failover_timeout(self) -> float:
        return 3 * self.session_ms / 1000 + 15

    def settle(self) -> float:
        """Sleep before disturbing the leader; returns the random part, in seconds.

        After all candidates agree, one more heartbeat goes by (followers' watches are set, the
        generation is synced everywhere), then a random fraction of a heartbeat interval: the
        ``status`` requests of the agreement poll reach ZooKeeper as pings do, so a fixed delay
        would kill kazoo's leader at the same phase of its ping cycle every time.
        """
        interval = self.heartbeat_ms / 1000
        phase = self.rng.uniform(0, interval)
        time.sleep(interval + 0.25 + phase)
        return phase

    def spawn(self) -> CandidateProcess:
        self.next_index += 1
        candidate = CandidateProcess(self, f"c{self.next_index}")
        self.candidates.append(candidate)
        return candidate

    def live(self) -> list[CandidateProcess]:
        return [c for c in self.candidates if c.alive]

    def wait_agreement(self, count: int, timeout: float = 60.0) -> CandidateProcess:
        """Poll ``status`` until ``count`` live candidates name the same leader, which leads."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = self.live()
            for c in live:
                err = c.errors()
                if err:
                    raise TrialFailed(f"candidate {c.name} failed: {err[0]}")
            asked = time.monotonic()
            for c in live:
                c.send("status")
            with self.cond:
                self.cond.wait_for(
                    lambda live=live, asked=asked: all(c.last("status", asked) or not c.alive for c in live),
                    timeout=10,
                )
                statuses = [c.last("status", asked) for c in live]
                leader = self._agreed_leader(live, statuses, count)
            if leader is not None:
                return leader
            time.sleep(0.05)
        raise TrialFailed(f"{count} candidates did not agree on a leader within {timeout:.0f} s")

    def _agreed_leader(
        self, live: list[CandidateProcess], statuses: list[dict[str, Any] | None], count: int
    ) -> CandidateProcess | None:
        if len(live) != count or any(s is None for s in statuses):
            return None
        names = {s["leader"] for s in statuses if s is not None}
        epochs = {s.get("epoch") for s in statuses if s is not None}
        members = {s.get("members") for s in statuses if s is not None} - {None}
        if len(names) != 1 or None in names or len(epochs) != 1 or members - {count}:
            return None
        (name,) = names
        leaders = [c for c in live if c.name == name]
        if not leaders or not leaders[0].leading:
            return None
        return leaders[0]

    def wait_elected(self, excluding: CandidateProcess, after: float) -> dict[str, Any]:
        deadline = after + self.failover_timeout
        with self.cond:
            while True:
                for c in self.candidates:
                    if c is not excluding:
                        event = c.last("elected", after)
                        if event is not None:
                            return event
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TrialFailed(f"no new leader within {self.failover_timeout:.0f} s")
                if not any(c.alive for c in self.candidates if c is not excluding):
                    raise TrialFailed("every other candidate exited")
                self.cond.wait(timeout=remaining)

    def run(self) -> dict[str, Any]:
        result: dict[str, Any] = {"group": self.group, "graceful_ms": None, "crash_ms": None, "error": None}
        try:
            for _ in range(CANDIDATES):
                self.spawn()
            leader = self.wait_agreement(CANDIDATES)
            self.settle()

            # graceful: the leader resigns and exits
            t0 = time.monotonic()
            leader.send("stop")
            elected = self.wait_elected(leader, t0)
            result["graceful_ms"] = (elected["t"] - t0) * 1000
            result["graceful_stop"] = leader.name
            try:
                leader.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                leader.kill()
            with self.cond:
                self.cond.wait_for(lambda: not leader.alive, timeout=5)

            # crash: back to three candidates, then SIGKILL the leader
            self.spawn()
            leader = self.wait_agreement(CANDIDATES)
            result["crash_phase_ms"] = self.settle() * 1000
            t1 = leader.kill()
            elected = self.wait_elected(leader, t1)
            result["crash_ms"] = (elected["t"] - t1) * 1000
            result["crash_killed"] = leader.name
        except TrialFailed as exc:
            result["error"] = str(exc)
        finally:
            for c in self.candidates:
                c.finish(timeout=max(15.0, 2 * self.session_ms / 1000))
        result.update(self.check_leadership())
        result["events"] = {c.name: c.events for c in self.candidates}
        return result

    def check_leadership(self) -> dict[str, Any]:
        """Overlapping leadership intervals and epochs that fail to grow."""
        intervals: list[tuple[float, float, str]] = []
        unterminated = 0
        for c in self.candidates:
            start: float | None = None
            for event in c.events:
                if event["event"] == "elected" and start is None:
                    start = event["t"]
                elif event["event"] == "revoked" and start is not None:
                    intervals.append((start, event["t"], c.name))
                    start = None
            if start is not None:
                if c.killed_at is None:
                    unterminated += 1  # exited while leading, without printing revoked
                end = c.killed_at if c.killed_at is not None else (c.exited_at or time.monotonic())
                intervals.append((start, end, c.name))
        overlaps = []
        for i, (s1, e1, n1) in enumerate(intervals):
            for s2, e2, n2 in intervals[i + 1 :]:
                if n1 != n2 and max(s1, s2) < min(e1, e2):
                    overlaps.append({"a": n1, "b": n2, "ms": (min(e1, e2) - max(s1, s2)) * 1000})
        elections = sorted(
            (e["t"], e.get("epoch")) for c in self.candidates for e in c.events if e["event"] == "elected"
        )
        epochs = [epoch for _, epoch in elections if epoch is not None]
        regressions = sum(1 for a, b in itertools.pairwise(epochs) if b <= a)
        return {
            "overlaps": overlaps,
            "leaders_exited_without_revoked": unterminated,
            "elections": len(elections),
            "epochs": epochs,
            "epoch_regressions": regressions,
            "revoked_after_close": sum(
                1
                for c in self.candidates
                for e in c.events
                if e["event"] == "revoked" and e.get("after_close")
            ),
        }


# --- the run ---------------------------------------------------------------------------------------


@dataclass
class Config:
    system: str
    session_ms: int
    heartbeat_ms: int
    heartbeat_label: str
    trials: list[dict[str, Any]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "system": self.system,
            "session_ms": self.session_ms,
            "heartbeat_ms": self.heartbeat_ms,
            "heartbeat_label": self.heartbeat_label,
            "trials": len(self.trials),
            "failed": sum(1 for t in self.trials if t["error"]),
            "errors": [t["error"] for t in self.trials if t["error"]],
            "overlaps": sum(len(t["overlaps"]) for t in self.trials),
            "epoch_regressions": sum(t["epoch_regressions"] for t in self.trials),
            "leaders_exited_without_revoked": sum(t["leaders_exited_without_revoked"] for t in self.trials),
            "revoked_after_close": sum(t["revoked_after_close"] for t in self.trials),
            "machine_busy_cores_mean": statistics.fmean(t["machine_busy_cores"] for t in self.trials)
            if self.trials
            else None,
        }
        for kind in ("graceful", "crash"):
            values = [t[f"{kind}_ms"] for t in self.trials if t[f"{kind}_ms"] is not None]
            out[kind] = {
                "samples_ms": values,
                "mean_ms": statistics.fmean(values) if values else None,
                "median_ms": statistics.median(values) if values else None,
                "max_ms": max(values) if values else None,
            }
        return out


def coordinator_leader_available() -> str | None:
    """None if ``coordinator_leader.LeaderElection`` imports in a child, else why not."""
    done = subprocess.run(
        [sys.executable, "-c", "from coordinator_leader import LeaderElection"],
        check=False,
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=REPO,
        timeout=120,
    )
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["unknown error"])[-1]
    return f"coordinator_leader.LeaderElection is not importable ({last})"


def start_servers(args: argparse.Namespace, log_dir: Path) -> tuple[dict[str, PeerServer], dict[str, str]]:
    servers: dict[str, PeerServer] = {}
    unavailable: dict[str, str] = {}
    smallest = min(args.sessions)
    for system in args.systems:
        server: PeerServer
        if system in LEADER_ELECTIONS:
            reason = coordinator_leader_available()
            if reason:
                unavailable[system] = reason
                continue
        if system == COORDINATOR:
            server = EmbeddedCoordinatorServer(log_dir, min_session_ms=min(1000, smallest))
        elif system == KAFKA:
            server = KafkaBrokerServer(log_dir, min_session_ms=min(1000, smallest))
        elif system == ZOOKEEPER:
            server = ZooKeeperServer(
                log_dir, tick_ms=args.zk_tick_ms, min_session_ms=min(2 * args.zk_tick_ms, smallest)
            )
        else:
            server = EtcdServer(log_dir, binary=args.etcd_binary)
        try:
            server.start()
        except PeerUnavailable as exc:
            unavailable[system] = str(exc)
            continue
        servers[system] = server
        print(f"{LABELS[system]}: {server.address} ({'; '.join(server.notes)})", flush=True)
    for system, reason in unavailable.items():
        print(f"{LABELS[system]}: NOT MEASURED: {reason}", flush=True)
    return servers, unavailable


def plan(args: argparse.Namespace, measured: list[str]) -> list[Config]:
    configs = []
    for session in args.sessions:
        for system in measured:
            if system == ZOOKEEPER:
                hb = session // 3
                configs.append(Config(system, session, hb, f"{hb} ms (kazoo: session/3, fixed)"))
                continue
            for divisor in args.heartbeat_divisors:
                hb = session // divisor
                configs.append(Config(system, session, hb, f"{hb} ms (session/{divisor})"))
    return configs


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def print_trial(config: Config, repeat: int, result: dict[str, Any]) -> None:
    graceful = "failed" if result["graceful_ms"] is None else f"{result['graceful_ms']:.1f} ms"
    crash = "failed" if result["crash_ms"] is None else f"{result['crash_ms']:.1f} ms"
    extra = f"; ERROR: {result['error']}" if result["error"] else ""
    print(
        f"[{config.system} session {config.session_ms} ms, heartbeat {config.heartbeat_ms} ms, "
        f"#{repeat + 1}] "
        f"graceful {graceful}, crash {crash}, overlaps {len(result['overlaps'])}, "
        f"elections {result['elections']}, machine busy {result['machine_busy_cores']:.2f} cores{extra}",
        flush=True,
    )


_IMPORTED_FILES = """
import sys, coordinator_leader
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None)
    if path:
        print(path)
"""


def candidate_code_files() -> list[Path]:
    """The repository's files a coordinator candidate imports (the code under test)."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_FILES],
        check=False,
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=REPO,
        timeout=120,
    )
    files = (Path(line).resolve() for line in done.stdout.splitlines() if line.strip())
    return sorted(f for f in files if f.is_relative_to(REPO) and f.is_file())


def code_fingerprint(files: list[Path]) -> dict[str, int]:
    """Modification times of ``files``, to notice edits made while the bench runs.

    Candidates are fresh processes, so they import whatever is on disk when they start.
    """
    stamps = {}
    for path in files:
        try:
            stamps[str(path.relative_to(REPO))] = path.stat().st_mtime_ns
        except OSError:
            stamps[str(path.relative_to(REPO))] = -1
    return stamps


def _busy_cores(before: Any, after: Any, since: float) -> float:
    """Cores busy on the whole machine (every process, the candidates and servers included)."""

    def idle(t: Any) -> float:
        return float(t.idle + getattr(t, "iowait", 0.0))

    busy = (sum(after) - idle(after)) - (sum(before) - idle(before))
    return busy / max(time.monotonic() - since, 1e-9)


def run_benchmark(args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    started = time.perf_counter()
    servers, unavailable = start_servers(args, log_dir)
    report: dict[str, Any] = {
        "servers": {
            s: {"address": v.address, "version": v.version, "notes": v.notes} for s, v in servers.items()
        },
        "unavailable": unavailable,
    }
    logs = {s: open(log_dir / f"candidates-{s}.log", "w") for s in servers}  # noqa: SIM115
    configs = plan(args, [s for s in args.systems if s in servers])
    rng = random.Random(args.seed)
    code_files = candidate_code_files() if any(s in servers for s in LEADER_ELECTIONS) else []
    code = code_fingerprint(code_files)
    changed: set[str] = set()
    try:
        for session in args.sessions:
            batch = [c for c in configs if c.session_ms == session]
            # Alternate the systems repeat by repeat, so slow drift in the machine's load hits all.
            for repeat in range(args.repeats):
                for config in batch:
                    trial = Trial(
                        config.system,
                        servers[config.system].address,
                        config.session_ms,
                        config.heartbeat_ms,
                        logs[config.system],
                        rng=rng,
                    )
                    before, t_before = psutil.cpu_times(), time.monotonic()
                    result = trial.run()
                    result["machine_busy_cores"] = _busy_cores(before, psutil.cpu_times(), t_before)
                    result["repeat"] = repeat
                    config.trials.append(result)
                    print_trial(config, repeat, result)
                    now = code_fingerprint(code_files)
                    edited = {f for f in code.keys() | now.keys() if code.get(f) != now.get(f)} - changed
                    if edited:
                        changed |= edited
                        print(
                            "WARNING: code under test changed on disk during the run: "
                            f"{', '.join(sorted(edited))} (later candidates import the new code)",
                            flush=True,
                        )
    finally:
        for server in servers.values():
            server.stop()
        for log in logs.values():
            log.close()
    report["code_changed_during_run"] = sorted(changed)
    report["results"] = [c.summary() for c in configs]
    report["trials"] = [
        {"system": c.system, "session_ms": c.session_ms, "heartbeat_ms": c.heartbeat_ms, **t}
        for c in configs
        for t in c.trials
    ]
    report["wall_seconds"] = time.perf_counter() - started
    return report


# --- the table -------------------------------------------------------------------------------------


def _triple(figures: dict[str, Any]) -> str:
    if figures["mean_ms"] is None:
        return "failed"
    return f"{_fmt(figures['mean_ms'])} / {_fmt(figures['median_ms'])} / {_fmt(figures['max_ms'])}"


def _ratio(ours: float | None, peer: float | None) -> str:
    if ours is None or peer is None or peer <= 0:
        return "n/a"
    return f"{ours / peer:.2f}x"


def _ratio_cell(ours: dict[str, Any], peer: dict[str, Any] | None, why_not: str | None) -> str:
    if peer is None:
        return f"n/a ({why_not})" if why_not else "n/a"
    graceful = _ratio(ours["graceful"]["mean_ms"], peer["graceful"]["mean_ms"])
    crash = _ratio(ours["crash"]["mean_ms"], peer["crash"]["mean_ms"])
    return f"{graceful}; {crash}"


def table(report: dict[str, Any], args: argparse.Namespace) -> str:
    """The results as a Markdown table (ratios: ours / peer of the means; lower is better)."""
    header = (
        "system",
        "session timeout",
        "heartbeat interval",
        "graceful failover ms (mean / median / max)",
        "crash failover ms (mean / median / max)",
        "overlaps",
        "ours / Kafka (graceful; crash)",
        "ours / ZooKeeper (graceful; crash)",
        "ours / etcd (graceful; crash)",
    )
    rows: list[tuple[str, ...]] = [header]
    results = report["results"]
    unavailable = report["unavailable"]

    def find(system: str, session: int, heartbeat: int | None) -> dict[str, Any] | None:
        for r in results:
            same_heartbeat = heartbeat is None or r["heartbeat_ms"] == heartbeat
            if r["system"] == system and r["session_ms"] == session and same_heartbeat:
                return r
        return None

    def why_not(system: str) -> str | None:
        if system in unavailable:
            return "not measured"
        return None if system in args.systems else "not run"

    versions = {s: v["version"] for s, v in report["servers"].items()}
    for session in args.sessions:
        for system in args.systems:
            label = LABELS[system] + (f" {versions[system]}" if system in versions else "")
            if system in unavailable:
                short = unavailable[system].split(" (")[0].split(";")[0]
                rows.append((label, f"{session} ms", "-", f"not measured: {short}", "-", "-", "-", "-", "-"))
                continue
            for r in (r for r in results if r["system"] == system and r["session_ms"] == session):
                failed = f" ({r['failed']} of {r['trials']} trials failed)" if r["failed"] else ""
                overlaps = str(r["overlaps"])
                if r["epoch_regressions"]:
                    overlaps += f", {r['epoch_regressions']} epoch regressions"
                if system == COORDINATOR:
                    kafka = find(KAFKA, session, r["heartbeat_ms"])
                    zk = find(ZOOKEEPER, session, None)
                    etcd = find(ETCD, session, r["heartbeat_ms"])
                    vs_kafka = _ratio_cell(r, kafka, why_not(KAFKA))
                    vs_zk = _ratio_cell(r, zk, why_not(ZOOKEEPER))
                    vs_etcd = _ratio_cell(r, etcd, why_not(ETCD))
                else:
                    vs_kafka = vs_zk = vs_etcd = "-"
                rows.append(
                    (
                        label,
                        f"{session} ms",
                        r["heartbeat_label"],
                        _triple(r["graceful"]) + failed,
                        _triple(r["crash"]),
                        overlaps,
                        vs_kafka,
                        vs_zk,
                        vs_etcd,
                    )
                )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


# --- command line ----------------------------------------------------------------------------------


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", ",").split(",") if x]


def _systems(text: str) -> list[str]:
    chosen = [x for x in text.split(",") if x]
    unknown = set(chosen) - set(SYSTEMS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown system(s) {sorted(unknown)}; known: {', '.join(SYSTEMS)}")
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Leader failover time (graceful and on SIGKILL) of coordinator_leader on the "
        "embedded coordinator beside the same election on an Apache Kafka broker, kazoo's Election on "
        "ZooKeeper and a lease-based election on etcd, in the same run."
    )
    p.add_argument(
        "--sessions", type=_int_list, default=[2000, 6000, 10000], help="session timeouts, ms (comma list)"
    )
    p.add_argument(
        "--heartbeat-divisors",
        type=_int_list,
        default=[3, 10],
        help="heartbeat interval = session / each of these (comma list; ZooKeeper: kazoo's fixed session/3)",
    )
    p.add_argument("--repeats", type=int, default=5, help="trials per configuration")
    p.add_argument(
        "--systems", type=_systems, default=list(SYSTEMS), help="comma list of " + ",".join(SYSTEMS)
    )
    p.add_argument("--quick", action="store_true", help="one 2 s session, session/3 heartbeats, 2 repeats")
    p.add_argument(
        "--zk-tick-ms", type=int, default=200, help="ZooKeeper's tickTime (session expiry granularity)"
    )
    p.add_argument(
        "--etcd-binary", default=None, help="etcd server binary (default: etcd on PATH, /usr/bin/etcd)"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the random delays before each stop and kill")
    p.add_argument("--output", type=Path, default=None, help=f"JSON results (default {DEFAULT_OUTPUT})")
    args = p.parse_args(argv)
    if args.quick:
        args.sessions = [2000]
        args.heartbeat_divisors = [3]
        args.repeats = 2
    if not args.sessions or not args.heartbeat_divisors or args.repeats < 1:
        p.error("need at least one session, one heartbeat divisor and one repeat")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    output = args.output or DEFAULT_OUTPUT
    output.parent.mkdir(parents=True, exist_ok=True)
    log_dir = output.parent / (output.stem + "-logs")
    log_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"leader failover: systems {','.join(args.systems)}, sessions {args.sessions} ms, heartbeat = "
        f"session / {args.heartbeat_divisors}, {args.repeats} repeats, {CANDIDATES} candidates per trial; "
        f"logs in {log_dir}",
        flush=True,
    )
    report = run_benchmark(args, log_dir)
    import kazoo

    report["config"] = {
        "systems": args.systems,
        "sessions_ms": args.sessions,
        "heartbeat_divisors": args.heartbeat_divisors,
        "repeats": args.repeats,
        "candidates": CANDIDATES,
        "zk_tick_ms": args.zk_tick_ms,
        "seed": args.seed,
        "quick": args.quick,
    }
    report["environment"] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "kazoo": getattr(kazoo, "__version__", "unknown"),
    }
    text = table(report, args)
    print()
    print(text)
    print(
        "\nfigures in ms; ratios are ours / peer of the means (lower is better); overlaps = pairs of "
        "candidates that both believed they led at the same moment"
    )
    for system, reason in report["unavailable"].items():
        print(f"{LABELS[system]} was not measured: {reason}")
    if report["code_changed_during_run"]:
        print(
            "WARNING: files that coordinator candidates import changed on disk during the run, so the "
            f"trials did not all run the same code: {', '.join(report['code_changed_during_run'])}"
        )
    busy = [
        r["machine_busy_cores_mean"] for r in report["results"] if r["machine_busy_cores_mean"] is not None
    ]
    if busy:
        print(
            f"machine CPU busy during the trials (everything, these processes included): mean "
            f"{statistics.fmean(busy):.2f} of {os.cpu_count()} cores"
        )
    print(f"wall time {report['wall_seconds']:.1f} s; results in {output}")
    report["table"] = text
    output.write_text(json.dumps(report, indent=2, default=str) + "\n")
    ours = [r for r in report["results"] if r["system"] in LEADER_ELECTIONS]
    failed = any(r["failed"] for r in report["results"]) or any(r["overlaps"] for r in ours)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
