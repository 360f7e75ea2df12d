"""One candidate of a ``coordinator_leader`` election as a process of its own, for
tests/leader/test_leader_processes.py.

    python leader_process.py --bootstrap HOST:PORT --name c1 [--group G] [--session-ms 1500]
        [--heartbeat-ms N] [--check-ms 5] [--busy 1]

It runs a :class:`coordinator_leader.LeaderElection` and prints one JSON object per line, each
with ``t`` (``time.monotonic()``: CLOCK_MONOTONIC, one clock for every process of a Linux
machine, so the timestamps of different processes compare), ``name`` and ``event``:

* ``started``; ``elected`` (``epoch``, printed by ``on_elected``); ``revoked`` (by
  ``on_revoked``); ``leader`` (``leader``: the leader's name or null, ``epoch``) whenever
  ``leader()`` changes; ``closing`` and ``closed`` (``took``: seconds the close took; one that
  takes more than 5 s prints every thread's stack to stderr as it goes on);
* ``term`` (``epoch``, ``first``, ``last``, ``checks``): the moments this process saw itself
  lead. Like a leader doing work, the main thread calls ``is_leader()`` every ``--check-ms``;
  ``first`` is the start of the first call of the term that said True, ``last`` the end of the
  last one (its start if the call itself took more than 2 ms: the process was paused or
  descheduled inside it, after the lease was checked); with ``--busy 1`` a leader checks without
  pausing, as a CPU-bound leader would, so after SIGCONT it checks before its other threads
  run. A term is printed when a call says False,
  when the epoch changes and when the process stops, so a process resumed after SIGSTOP prints
  the term it lost right after its first check. ``t`` of a ``term`` is when it was printed.

SIGTERM closes the election (the leader steps down and leaves, the others elect at once) and
exits; so does the end of the parent process. SIGUSR1 prints every thread's stack to stderr.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
from typing import Any

from coordinator_leader import LeaderElection

from coordinator_api._signals import stop_event

CLOSE_TIMEOUT_S = 30.0  # LeaderElection.close's bound
SLOW_CLOSE_S = 5.0

_lock = threading.Lock()
_name = {"value": ""}


def emit(event: str, **fields: Any) -> None:
    record = {"t": time.monotonic(), "name": _name["value"], "event": event, **fields}
    with _lock:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="leader-test")
    parser.add_argument("--session-ms", type=int, default=1500)
    parser.add_argument("--heartbeat-ms", type=int)
    parser.add_argument("--check-ms", type=float, default=5.0)
    parser.add_argument("--busy", type=int, default=0, help="1: while leading, check without pausing")
    parser.add_argument("--priority", type=int, default=0)
    args = parser.parse_args()
    _name["value"] = args.name
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if os.environ.get("LEADER_PROCESS_DEBUG") else logging.INFO,
        format="%(relativeCreated)d %(threadName)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("kafka").setLevel(logging.WARNING)

    stop = stop_event(signal.SIGTERM)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a test that waits in vain asks
    election = LeaderElection(
        args.group,
        args.bootstrap,
        args.name,
        priority=args.priority,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        on_elected=lambda epoch: emit("elected", epoch=epoch),
        on_revoked=lambda: emit("revoked"),
        client_id=f"leader-{args.name}",
    )
    election.start()
    emit("started", pid=os.getpid(), close_timeout_s=CLOSE_TIMEOUT_S)

    term: dict[str, Any] | None = None  # the term being observed: epoch, first, last, checks
    known: tuple[str | None, int] | None = None

    def end_term() -> None:
        nonlocal term
        if term is not None:
            emit("term", **term)
            term = None

    parent = os.getppid()
    check_s = args.check_ms / 1000
    while not stop.is_set() and os.getppid() == parent:
        t0 = time.monotonic()
        leading = election.is_leader()
        t1 = time.monotonic()
        if leading:
            epoch = election.epoch()
            seen_at = t1 if t1 - t0 <= 0.002 else t0
            if term is not None and term["epoch"] != epoch:
                end_term()
            if term is None:
                term = {"epoch": epoch, "first": t0, "last": seen_at, "checks": 0}
            term["last"] = seen_at
            term["checks"] += 1
        else:
            end_term()
        now_known = (election.leader(), election.epoch())
        if now_known != known:
            known = now_known
            emit("leader", leader=known[0], epoch=known[1])
        if not (leading and args.busy):
            stop.wait(check_s)
    end_term()
    emit("closing")
    closing_at = time.monotonic()
    # A close that takes long prints every thread's stack to stderr as it goes on.
    faulthandler.dump_traceback_later(SLOW_CLOSE_S)
    election.close(timeout=CLOSE_TIMEOUT_S)
    faulthandler.cancel_dump_traceback_later()
    took = time.monotonic() - closing_at
    emit("closed", took=took, slow=took > SLOW_CLOSE_S)


if __name__ == "__main__":
    main()
