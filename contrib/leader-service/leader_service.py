"""An example service: several instances, one leader that runs a periodic job.

Each instance serves HTTP on 127.0.0.1 (``GET /status``: who it is, who leads, the epoch) and
joins the election ``--group``. Only the leader runs the job: every ``--period`` seconds it
appends a row to a shared SQLite database, carrying its leadership epoch. The database is the
"downstream store" of fencing: a write whose epoch is older than one already written is refused
(:class:`coordinator_leader.EpochFence`), so a deposed leader that wakes up late cannot write.

Run three instances against a coordinator (``coordinator-api serve --port 9092``)::

    python leader_service.py --name a --port 8001 --bootstrap-servers 127.0.0.1:9092 --db jobs.db
    python leader_service.py --name b --port 8002 --bootstrap-servers 127.0.0.1:9092 --db jobs.db
    python leader_service.py --name c --port 8003 --bootstrap-servers 127.0.0.1:9092 --db jobs.db
    curl -s 127.0.0.1:8002/status
"""

from __future__ import annotations

import argparse
import json
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from coordinator_leader import EpochFence, LeaderElection, Leadership, StaleEpochError


class FencedStore:
    """The job's output, in SQLite, shared by every instance: each write carries the writer's
    epoch and is refused if a newer epoch has already written."""

    def __init__(self, path: str) -> None:
        self._path = path
        with self._connect() as db:
            db.execute("CREATE TABLE IF NOT EXISTS runs (epoch INTEGER, writer TEXT, at REAL)")
            db.execute("CREATE TABLE IF NOT EXISTS fence (highest INTEGER)")
            if db.execute("SELECT COUNT(*) FROM fence").fetchone()[0] == 0:
                db.execute("INSERT INTO fence VALUES (-1)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self._path, timeout=30, isolation_level=None)

    def write(self, epoch: int, writer: str) -> None:
        """Append a run. :raises StaleEpochError: ``epoch`` has been superseded."""
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")  # one writer at a time: the check and the write are atomic
            fence = EpochFence(db.execute("SELECT highest FROM fence").fetchone()[0])
            fence.admit(epoch)
            db.execute("UPDATE fence SET highest = ?", (fence.highest,))
            db.execute("INSERT INTO runs VALUES (?, ?, ?)", (epoch, writer, time.time()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        finally:
            db.close()


def run_job(term: Leadership, store: FencedStore, name: str, period: float) -> None:
    """The leader's periodic job: runs while the term lasts."""
    while term.active:
        try:
            store.write(term.epoch, name)
        except StaleEpochError as exc:
            print(json.dumps({"event": "refused", "name": name, "reason": str(exc)}), flush=True)
            return
        print(json.dumps({"event": "ran", "name": name, "epoch": term.epoch}), flush=True)
        term.wait(period)


def _status(name: str, election: LeaderElection) -> dict[str, Any]:
    info = election.leader_info()
    return {
        "name": name,
        "leader": election.leader(),
        "is_leader": election.is_leader(),
        "epoch": election.epoch(),
        "leader_address": info.address if info else None,
    }


class _StatusHandler(BaseHTTPRequestHandler):
    describe: Callable[[], dict[str, Any]] = dict

    def do_GET(self) -> None:
        if self.path != "/status":
            self.send_error(404)
            return
        data = json.dumps(type(self).describe()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *values: Any) -> None:  # quiet
        pass


def serve(args: argparse.Namespace) -> None:
    store = FencedStore(args.db)
    http = ThreadingHTTPServer(("127.0.0.1", args.port), _StatusHandler)
    port = http.server_address[1]
    election = LeaderElection(
        args.group,
        args.bootstrap_servers,
        args.name,
        priority=args.priority,
        address=f"127.0.0.1:{port}",
        session_timeout_ms=args.session_timeout_ms,
    )

    _StatusHandler.describe = lambda: _status(args.name, election)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(json.dumps({"event": "serving", "name": args.name, "port": port}), flush=True)
    with election:
        while not stop.is_set():
            if election.wait_until_leader(0.2):
                with election.leadership(timeout=0, resign_on_exit=False) as term:
                    worker = threading.Thread(target=run_job, args=(term, store, args.name, args.period))
                    worker.start()
                    while not stop.is_set() and not term.wait(0.1):
                        pass
                    worker.join()
    http.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--group", default="leader-service")
    parser.add_argument("--db", required=True, help="the shared SQLite file the job writes")
    parser.add_argument("--priority", type=int, default=0)
    parser.add_argument("--period", type=float, default=0.2, help="seconds between job runs")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)  # the coordinator's minimum
    serve(parser.parse_args())


if __name__ == "__main__":
    main()
