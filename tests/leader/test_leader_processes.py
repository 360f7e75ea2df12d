"""Leader election with real processes on the embedded coordinator (issue 5, item 4).

Every candidate is a process of its own (leader_process.py) that runs a ``LeaderElection`` and
checks ``is_leader()`` every 5 ms, as a leader doing work would; it prints when it was elected,
revoked, and the first and last moments each term saw itself lead, stamped with
CLOCK_MONOTONIC (one clock for every process on Linux). A process's leadership is
[min(elected, first check that said True), last check that said True] (the moment it was killed
for a term it never printed). Terms of two different processes must not intersect: no
tolerance beyond 1 ms of timestamp granularity. Liveness bounds are generous (a loaded 2-core
machine); safety bounds are not.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from coordinator_leader import LeaderElection
from leader_faults import (
    Candidate,
    ProxiedCoordinator,
    Term,
    agreed_leader,
    elected_after,
    epochs_grow,
    finish,
    leaderless_gaps,
    leadership_terms,
    overlaps,
    start_candidates,
    stderr_of,
)
from member_processes import wait_for

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.server import recording_membership

NAMES = ("c1", "c2", "c3")


def assert_safe(candidates: list[Candidate]) -> list[Term]:
    terms = leadership_terms(candidates)
    assert overlaps(terms) == [], stderr_of(candidates)
    assert epochs_grow(terms) == []
    return terms


def first_term(candidate: Candidate, epoch: int) -> dict[str, Any]:
    return next(r for r in candidate.events("term") if r["epoch"] == epoch)


def test_graceful_shutdown_of_the_leader(coordinator: EmbeddedCoordinator) -> None:
    """SIGTERM makes the leader close its election: it steps down and leaves the group
    (LeaveGroup: no expiry), and another candidate leads within one session, with a greater
    epoch. (How fast is bench/bench_leader.py's question.)"""
    session_ms = 3000
    with recording_membership() as membership:
        candidates = start_candidates(
            coordinator.bootstrap_servers, NAMES, session_ms=session_ms, group="graceful"
        )
        try:
            failovers = []
            # Three candidates, two graceful handovers: the first right after the group settled
            # (before the members' first heartbeat of the generation), the second a while after.
            for settle in (0.0, session_ms / 1000):
                old = wait_for(lambda: agreed_leader(candidates), 30, "an agreed leader")
                time.sleep(settle)
                old_epoch = old.last_epoch()
                t_stop = time.monotonic()
                old.stop()
                new, elected = wait_for(
                    lambda t_stop=t_stop: elected_after(candidates, t_stop), 10, "a successor"
                )
                failovers.append(elected["t"] - t_stop)
                assert new is not old
                assert elected["epoch"] > old_epoch
                assert old.events("revoked", t_stop)[0]["t"] < elected["t"]
                assert first_term(old, old_epoch)["last"] < elected["t"]
                assert old.events("closed"), old.stderr_text()
                assert membership.first("left", f"leader-{old.name}", t_stop) is not None
                assert membership.first("expired", f"leader-{old.name}", t_stop) is None
            finish(candidates)
            assert_safe(candidates)
            print(f"graceful failover: {[f'{f * 1000:.0f} ms' for f in failovers]}")
            assert max(failovers) < session_ms / 1000, failovers
        finally:
            finish(candidates)


def test_sigkill_of_the_leader(coordinator: EmbeddedCoordinator) -> None:
    """A SIGKILLed leader cannot leave: the others elect a successor once the coordinator has
    expired it, i.e. after about one session timeout (not before half of it, when the last
    heartbeat the coordinator received could be half a session old, and not much after it)."""
    session_ms = 1200
    candidates = start_candidates(
        coordinator.bootstrap_servers, NAMES, session_ms=session_ms, group="sigkill"
    )
    try:
        old = wait_for(lambda: agreed_leader(candidates), 30, "an agreed leader")
        old_epoch = old.last_epoch()
        t_kill = time.monotonic()
        old.kill()
        new, elected = wait_for(
            lambda: elected_after(candidates, t_kill), session_ms / 1000 + 10, "a successor"
        )
        failover = elected["t"] - t_kill
        print(f"crash failover: {failover * 1000:.0f} ms (session {session_ms} ms)")
        assert new is not old and elected["epoch"] > old_epoch
        assert session_ms / 2000 <= failover <= session_ms / 1000 + 2.0
        wait_for(lambda: agreed_leader(candidates), 20, "the survivors to agree")
        finish(candidates)
        terms = assert_safe(candidates)
        assert [t for t in terms if t.who == old.label][-1].end <= old.killed_at
    finally:
        finish(candidates)


def test_sigstop_then_sigcont_of_the_leader(coordinator: EmbeddedCoordinator) -> None:
    """A leader paused (SIGSTOP) for twice its session is replaced; once resumed (SIGCONT) its
    first ``is_leader()`` says False (the lease is checked at the call, before its heartbeat
    thread notices), so its last leading check predates the successor's election;
    it then reports ``revoked`` and follows the successor, which keeps leading."""
    session_ms = 1000
    candidates = start_candidates(
        coordinator.bootstrap_servers, NAMES, session_ms=session_ms, group="sigstop", busy=1
    )
    try:
        old = wait_for(lambda: agreed_leader(candidates), 30, "an agreed leader")
        time.sleep(session_ms / 2000)
        old_epoch = old.last_epoch()
        old.pause()
        t_pause = time.monotonic()
        new, elected = wait_for(lambda: elected_after(candidates, t_pause), 15, "a successor")
        assert new is not old and elected["epoch"] > old_epoch
        time.sleep(max(0.0, t_pause + 2 * session_ms / 1000 - time.monotonic()))
        t_resume = time.monotonic()  # before SIGCONT: the child may report before we return
        old.resume()
        # Its first check after the pause said False and printed the term it had, whose last
        # leading check predates the successor's election.
        term = wait_for(
            lambda: [r for r in old.events("term", t_resume) if r["epoch"] == old_epoch],
            10,
            "the zombie's term",
        )[0]
        assert term["last"] < elected["t"]
        revoked = wait_for(lambda: old.events("revoked", t_resume), 10, "the zombie's on_revoked")
        assert revoked[0]["t"] > t_resume
        # It rejoins as a follower: everyone names the successor, which kept leading.
        wait_for(lambda: agreed_leader(candidates) is new, 20, f"everyone to follow {new.name}")
        time.sleep(0.5)
        assert old.events("elected", t_resume) == []
        finish(candidates)
        terms = assert_safe(candidates)
        assert not [t for t in terms if t.who == old.label and t.end >= elected["t"]]
    finally:
        finish(candidates)


def test_partition_of_the_leader(fast_config: CoordinatorConfig) -> None:
    """A network partition between the leader and the coordinator, then healed.

    The proxy: a client connects to the address the coordinator *advertises* (Metadata,
    FindCoordinator), not to its bootstrap address, so a proxy that were only the partitioned
    member's bootstrap address would be bypassed. This test runs the coordinator on
    127.0.0.1:P advertising the port Q of a TCP proxy on 127.0.0.1:Q (tcp_proxy.ProxyThread)
    that forwards to it: every member's coordinator traffic crosses the proxy, which tells members
    apart by the ``client_id`` of each connection's first request. ``c1`` (the first to join,
    hence the leader) bootstraps through the proxy, ``c2`` and ``c3`` at the coordinator itself.
    Dropping ``c1`` stops forwarding its connections both ways without closing them.

    The leader, its heartbeats unanswered, must step down before the coordinator expires it and
    so before a successor is elected; once healed it rejoins as a follower of the successor.
    """
    session_ms = 1500
    with ProxiedCoordinator(fast_config) as proxied, recording_membership() as clock:
        first = Candidate(proxied.proxied, "c1", session_ms=session_ms, group="partition")
        candidates = [first]
        try:
            wait_for(first.leading, 30, "c1 to lead alone")
            candidates += [
                Candidate(proxied.direct, n, session_ms=session_ms, group="partition") for n in NAMES[1:]
            ]
            assert wait_for(lambda: agreed_leader(candidates), 30, "an agreed leader") is first
            time.sleep(session_ms / 2000)
            assert {"leader-c1", "leader-c2", "leader-c3"} <= proxied.proxy.clients  # nobody bypasses it
            old_epoch = first.last_epoch()
            t_drop = proxied.drop("leader-c1")
            revoked = wait_for(
                lambda: first.events("revoked", t_drop), session_ms / 1000 + 5, "c1 to step down"
            )
            new, elected = wait_for(lambda: elected_after(candidates, t_drop), 15, "a successor")
            expired = wait_for(lambda: clock.first("expired", "leader-c1", t_drop), 5, "c1's expiry")
            print(
                f"partition: c1 stepped down {(revoked[0]['t'] - t_drop) * 1000:.0f} ms after the drop, "
                f"expired at {(expired - t_drop) * 1000:.0f} ms, {new.name} elected at "
                f"{(elected['t'] - t_drop) * 1000:.0f} ms (session {session_ms} ms)"
            )
            assert new is not first and elected["epoch"] > old_epoch
            assert revoked[0]["t"] < expired < elected["t"]
            assert revoked[0]["t"] - t_drop < session_ms / 1000
            term = wait_for(
                lambda: [r for r in first.events("term") if r["epoch"] == old_epoch], 5, "c1's term"
            )
            assert term[0]["last"] < revoked[0]["t"]

            t_heal = proxied.heal("leader-c1")
            wait_for(
                lambda: [r for r in first.events("leader", t_heal) if r["leader"] == new.name],
                20,
                f"c1 to follow {new.name} after the partition healed",
            )
            wait_for(lambda: agreed_leader(candidates) is new, 20, f"everyone to follow {new.name}")
            time.sleep(0.5)
            assert first.events("elected", t_drop) == []
            assert first.alive
        finally:
            finish(candidates)
        assert_safe(candidates)


def test_close_is_bounded_by_its_timeout_when_the_coordinator_does_not_answer(
    fast_config: CoordinatorConfig,
) -> None:
    """A leader cut off from the coordinator (its connections blackholed, nothing closed) still
    closes within the ``timeout`` it gives ``close``: the unanswered LeaveGroup is given up, the
    leadership is stepped down from, and the election thread is stopped."""
    revoked: list[float] = []
    with ProxiedCoordinator(fast_config) as proxied:
        election = LeaderElection(
            "cut-off",
            proxied.proxied,
            "a",
            session_timeout_ms=3000,
            client_id="leader-a",
            on_revoked=lambda: revoked.append(time.monotonic()),
        )
        election.start()
        try:
            assert election.wait_until_leader(30)
            proxied.drop("leader-a")
            t0 = time.monotonic()
            election.close(timeout=2.0)
            took = time.monotonic() - t0
        finally:
            proxied.heal("leader-a")
            election.close()
    # The leave waited what was left of the 2 s, in whole milliseconds (Coordinator.close passes
    # int(timeout * 1000)), so up to 1 ms less: 1.99999 s was seen once; stopping the threads is quick.
    assert 1.99 <= took < 4.0, took
    assert not election.is_leader() and revoked


# 40 in the suite (about 30 s); the figures in docs/leader.md are from a run of 200
# (SOAK_FAULTS=200 in the environment).
SOAK_FAULTS = int(os.environ.get("SOAK_FAULTS", "40"))
SOAK_SESSION_MS = 800
# kind -> weight; pauses and partitions are shorter or longer than the session.
SOAK_KINDS = {
    "restart": 2.0,  # SIGTERM (the election closes), then a new process of the same name
    "kill": 2.0,  # SIGKILL, then a new process of the same name
    "pause-short": 2.0,
    "pause-long": 1.5,
    "partition-short": 1.0,
    "partition-long": 1.0,
}


def test_soak_of_random_faults(fast_config: CoordinatorConfig, tmp_path: Path) -> None:
    """SOAK_FAULTS random faults over 4 candidates: graceful restarts, SIGKILL and restart, SIGSTOP and
    SIGCONT (shorter and longer than the session) and partitions (through the proxy of
    :func:`test_partition_of_the_leader`, shorter and longer than the session), half of them
    aimed at the leader. The recorded timeline must show no two processes leading at once and
    epochs that grow; leaderless gaps are measured and reported (printed, and written to
    ``leader_soak.json`` in the test's tmp dir)."""
    seed = 5
    rng = random.Random(seed)
    session_s = SOAK_SESSION_MS / 1000
    faults: list[dict[str, Any]] = []
    with ProxiedCoordinator(fast_config) as proxied:

        def spawn(name: str) -> Candidate:
            bootstrap = proxied.proxied if rng.random() < 0.5 else proxied.direct
            return Candidate(bootstrap, name, session_ms=SOAK_SESSION_MS, group="soak")

        slots = {name: spawn(name) for name in ("c1", "c2", "c3", "c4")}
        everyone = list(slots.values())
        try:
            wait_for(lambda: agreed_leader(everyone), 30, "a first leader")
            t_begin = time.monotonic()
            for _ in range(SOAK_FAULTS):
                kind = rng.choices(list(SOAK_KINDS), weights=list(SOAK_KINDS.values()))[0]
                live = list(slots.values())
                leaders = [c for c in live if c.leading()]
                aim_at_leader, anyone = rng.random() < 0.5, rng.choice(live)  # drawn alike every run
                target = leaders[0] if leaders and aim_at_leader else anyone
                long_s = rng.uniform(1.3 * session_s, 2.0 * session_s)
                short_s = rng.uniform(0.05, 0.5 * session_s)
                fault = {
                    "kind": kind,
                    "target": target.label,
                    "leader": target.leading(),
                    "t": time.monotonic(),
                }
                if kind in ("restart", "kill"):
                    if kind == "restart":
                        target.stop()
                    else:
                        target.kill()
                    slots[target.name] = spawn(target.name)
                    everyone.append(slots[target.name])
                elif kind.startswith("pause"):
                    target.pause()
                    time.sleep(long_s if kind == "pause-long" else short_s)
                    target.resume()
                else:
                    proxied.drop(f"leader-{target.name}")
                    time.sleep(long_s if kind == "partition-long" else short_s)
                    proxied.heal(f"leader-{target.name}")
                faults.append(fault)
                time.sleep(rng.uniform(0.05, 0.3))
            wait_for(lambda: agreed_leader(everyone), 30, "a leader after the last fault")
            t_end = time.monotonic()
        finally:
            finish(everyone)

    terms = leadership_terms(everyone)
    overlapping = overlaps(terms)
    shrinking = epochs_grow(terms)
    gaps = [length for _, length in leaderless_gaps(terms, terms[0].start, t_end)]
    during = [g for s, g in leaderless_gaps(terms, t_begin, t_end)]
    summary = {
        "seed": seed,
        "session_ms": SOAK_SESSION_MS,
        "candidates": 4,
        "processes": len(everyone),
        "faults": len(faults),
        "faults_by_kind": dict(Counter(f["kind"] for f in faults)),
        "faults_on_the_leader": sum(f["leader"] for f in faults),
        "wall_s": round(t_end - t_begin, 1),
        "terms": len(terms),
        "terms_never_checked": sum(not t.observed for t in terms),
        "highest_epoch": max(t.epoch for t in terms),
        "overlaps": len(overlapping),
        "epoch_regressions": len(shrinking),
        "gaps": {
            "count": len(during),
            "mean_ms": round(statistics.fmean(during) * 1000, 1) if during else 0.0,
            "median_ms": round(statistics.median(during) * 1000, 1) if during else 0.0,
            "max_ms": round(max(during) * 1000, 1) if during else 0.0,
            "leaderless_s": round(sum(during), 2),
        },
        "overlap_details": overlapping[:20],
        # Graceful closes the candidate found slow (each printed its stacks to its stderr).
        "slow_closes": [
            {"who": c.label, "took_s": round(r["took"], 1), "stderr": c.stderr.name}
            for c in everyone
            for r in c.events("closed")
            if r["slow"]
        ],
    }
    path = tmp_path / "leader_soak.json"
    path.write_text(json.dumps({**summary, "fault_log": faults}, indent=1))
    print(f"\nleader soak: {json.dumps(summary)}\nwritten to {path}")
    assert len(faults) == SOAK_FAULTS
    assert overlapping == [], stderr_of(everyone[-6:])
    assert shrinking == []
    # Every process not SIGKILLed closed its election and exited by itself.
    assert [c.label for c in everyone if c.killed_at is None and not c.events("closed")] == []
    assert gaps and max(gaps) < 15.0  # liveness, generously: every fault was followed by a leader
