#!/usr/bin/env python3
"""One candidate of a leader election, as a process of its own, for bench/bench_leader.py.

    python bench/leader_candidate.py --system {coordinator,kafka,zookeeper,etcd} --connect HOST:PORT \\
        --group NAME --name NAME --session-ms 6000 --heartbeat-ms 2000

It campaigns as soon as it starts and prints one JSON object per line on stdout, each with
``t`` (``time.monotonic()``: CLOCK_MONOTONIC, one clock for every process on a Linux machine),
``name`` and ``event``:

* ``started`` (the election is running), ``elected`` (with ``epoch``: the fencing token when the
  system has one, else null), ``revoked``, ``stopping``, ``stopped``, ``error`` (with ``error``);
* ``status`` (an answer to the ``status`` command): ``leader`` (a name or null), ``epoch``,
  ``members`` (the candidates the system knows of, when it says), ``leading``.

``elected`` is printed inside the system's own "you lead" moment (``on_elected``, the kazoo
Election's leader function, the etcd transaction's answer) and ``revoked`` before leadership is
given up, so the printed intervals are the ones in which this process believes it leads.

Commands, one per line on stdin: ``status``; ``stop`` (graceful: a leader prints ``revoked``,
then resigns, and the process exits). End of stdin is ``stop`` too, so a candidate never
outlives the benchmark that started it.

The elections:

* **coordinator**: :class:`coordinator_leader.LeaderElection` on the embedded coordinator;
  stopping is :meth:`LeaderElection.close`.
* **kafka**: the same :class:`coordinator_leader.LeaderElection`, with ``--connect`` naming an
  Apache Kafka cluster's bootstrap servers instead.
* **zookeeper**: kazoo's ``Election`` recipe (an ephemeral sequential node per candidate, each
  watching its predecessor) with a session of ``--session-ms``; kazoo pings every third of the
  negotiated session (not configurable, ``--heartbeat-ms`` is ignored). A leader treats a
  SUSPENDED or LOST connection as the end of its leadership, as kazoo's documentation advises.
  Stopping returns from the leader function, which deletes the node.
* **etcd**: a lease of TTL ``--session-ms`` (whole seconds), kept alive every
  ``--heartbeat-ms``; the candidate puts the election key with its lease in a transaction that
  only succeeds if the key's create_revision is 0 (absent); the winner leads with the key's
  create revision as epoch; the others watch the key through the streaming ``/v3/watch``
  endpoint (from the revision of their failed transaction, so no deletion can be missed) and
  try again when it is deleted. A leader steps down if its lease could have expired (no
  keep-alive answered for the TTL minus one heartbeat). Stopping revokes the lease, which
  deletes the key.
"""

from __future__ import annotations

import abc
import argparse
import base64
import contextlib
import http.client
import json
import math
import os
import socket
import sys
import threading
import time
from typing import Any

_print_lock = threading.Lock()
_identity = {"name": ""}


def emit(event: str, **fields: Any) -> None:
    """Print one event line, stamped with CLOCK_MONOTONIC."""
    record = {"t": time.monotonic(), "name": _identity["name"], "event": event, **fields}
    line = json.dumps(record)
    with _print_lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


class Candidate(abc.ABC):
    """What every election adapter offers the command loop."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.leading = False
        self._state_lock = threading.Lock()

    def elected(self, epoch: int | None, **fields: Any) -> None:
        with self._state_lock:
            self.leading = True
            emit("elected", epoch=epoch, **fields)

    def revoked(self, **fields: Any) -> None:
        with self._state_lock:
            if self.leading:
                self.leading = False
                emit("revoked", **fields)

    @abc.abstractmethod
    def start(self) -> None:
        """Join the election; returns once campaigning runs in the background."""

    @abc.abstractmethod
    def status(self) -> dict[str, Any]:
        """``leader``, ``epoch`` and ``members`` as this candidate's system reports them."""

    @abc.abstractmethod
    def stop(self) -> None:
        """Leave the election gracefully (printing ``revoked`` first if leading)."""


# --- coordinator_leader ---------------------------------------------------------------------------


class CoordinatorCandidate(Candidate):
    def start(self) -> None:
        from coordinator_leader import LeaderElection

        a = self.args
        self.election = LeaderElection(
            a.group,
            a.connect,
            a.name,
            session_timeout_ms=a.session_ms,
            heartbeat_interval_ms=a.heartbeat_ms,
            on_elected=lambda epoch: self.elected(int(epoch) if epoch is not None else None),
            on_revoked=self.revoked,
        )
        self.election.start()

    def status(self) -> dict[str, Any]:
        return {"leader": self.election.leader(), "epoch": self.election.epoch(), "members": None}

    def stop(self) -> None:
        self.election.close()
        # close() should have called on_revoked already; say so if it did not.
        self.revoked(after_close=True)


# --- kazoo -----------------------------------------------------------------------------------------


class ZooKeeperCandidate(Candidate):
    def start(self) -> None:
        from kazoo.client import KazooClient, KazooState

        a = self.args
        self._lost_states = {KazooState.SUSPENDED, KazooState.LOST}
        self.client = KazooClient(hosts=a.connect, timeout=a.session_ms / 1000.0)
        self.client.add_listener(self._on_state)
        self.client.start(timeout=30)
        self.negotiated_ms = getattr(self.client, "_session_timeout", None)
        self.path = f"/bench-leader/{a.group}"
        self.election = self.client.Election(self.path, a.name)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="election", daemon=True)
        self._thread.start()

    def _on_state(self, state: Any) -> None:
        if state in self._lost_states:
            emit("connection", state=str(state))
            if self.leading:  # end the leader function: leadership is over for this candidate
                self.revoked(reason=str(state))
                self._stop.set()

    def _run(self) -> None:
        try:
            self.election.run(self._lead)
        except Exception as exc:
            if not self._stop.is_set():
                emit("error", error=f"{type(exc).__name__}: {exc}")

    def _lead(self) -> None:
        node = self.election.lock.node or ""
        digits = node[-10:]
        self.elected(int(digits) if digits.isdigit() else None)
        self._stop.wait()
        self.revoked()  # before the leader function returns and the lock node is deleted

    def status(self) -> dict[str, Any]:
        contenders = self.election.contenders()
        return {
            "leader": contenders[0] if contenders else None,
            "epoch": None,
            "members": len(contenders),
            "session_ms": self.negotiated_ms,
        }

    def stop(self) -> None:
        self._stop.set()
        if not self.leading:
            self.election.cancel()
        self._thread.join(timeout=30)
        self.client.stop()
        self.client.close()


# --- etcd ------------------------------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


class EtcdCandidate(Candidate):
    def start(self) -> None:
        a = self.args
        self.host, _, port = a.connect.rpartition(":")
        self.port = int(port)
        self.key = _b64(f"/bench-leader/{a.group}")
        self.ttl_s = max(1, math.ceil(a.session_ms / 1000))
        self.heartbeat_s = a.heartbeat_ms / 1000.0
        self._stop = threading.Event()
        self._http = threading.local()
        granted = self._call("/v3/lease/grant", {"TTL": self.ttl_s})
        self.lease = granted["ID"]
        self.granted_ttl_s = int(granted["TTL"])
        self._last_keepalive_sent = time.monotonic()
        self._watch_conn: http.client.HTTPConnection | None = None
        self._keepalive_thread = threading.Thread(target=self._keepalive, name="keepalive", daemon=True)
        self._campaign_thread = threading.Thread(target=self._campaign, name="campaign", daemon=True)
        self._keepalive_thread.start()
        self._campaign_thread.start()

    # one persistent HTTP/1.1 connection per thread
    def _call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        conn = getattr(self._http, "conn", None)
        for attempt in range(2):
            if conn is None:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
                self._http.conn = conn
            try:
                conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                response = conn.getresponse()
                payload = response.read()
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = self._http.conn = None
                if attempt:
                    raise
                continue
            if response.status != 200:
                raise RuntimeError(f"etcd {path}: HTTP {response.status}: {payload[:200]!r}")
            result: dict[str, Any] = json.loads(payload)
            return result
        raise AssertionError("unreachable")

    def _keepalive(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            sent = time.monotonic()
            try:
                answer = self._call("/v3/lease/keepalive", {"ID": self.lease})
            except Exception as exc:
                emit("keepalive_failed", error=f"{type(exc).__name__}: {exc}")
                continue
            if int(answer.get("result", {}).get("TTL", 0)) <= 0:
                emit("lease_expired")
                self.revoked(reason="lease expired")
                return
            self._last_keepalive_sent = sent

    def _campaign(self) -> None:
        txn = {
            "compare": [{"key": self.key, "target": "CREATE", "create_revision": "0", "result": "EQUAL"}],
            "success": [
                {"request_put": {"key": self.key, "value": _b64(self.args.name), "lease": self.lease}}
            ],
            "failure": [{"request_range": {"key": self.key}}],
        }
        try:
            while not self._stop.is_set():
                answer = self._call("/v3/kv/txn", txn)
                revision = int(answer["header"]["revision"])
                if answer.get("succeeded"):
                    self.elected(revision)
                    self._watch_lease()
                    return
                self._wait_for_delete(revision + 1)
        except Exception as exc:
            if not self._stop.is_set():
                emit("error", error=f"{type(exc).__name__}: {exc}")

    def _watch_lease(self) -> None:
        """While leading: step down once the lease could have expired without us knowing."""
        margin = self.heartbeat_s
        while not self._stop.wait(0.05):
            if time.monotonic() - self._last_keepalive_sent > self.granted_ttl_s - margin:
                self.revoked(reason="no keep-alive answered within the lease TTL")
                return

    def _wait_for_delete(self, start_revision: int) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=None)
        self._watch_conn = conn
        try:
            if self._stop.is_set():
                return
            body = {"create_request": {"key": self.key, "start_revision": str(start_revision)}}
            conn.request("POST", "/v3/watch", json.dumps(body), {"Content-Type": "application/json"})
            response = conn.getresponse()
            if response.status != 200:
                raise RuntimeError(f"etcd /v3/watch: HTTP {response.status}")
            while not self._stop.is_set():
                line = response.readline()
                if not line:
                    return  # stream closed: try the transaction again
                result = json.loads(line).get("result", {})
                if result.get("canceled"):
                    return
                if any(e.get("type") == "DELETE" for e in result.get("events", [])):
                    return
        except (OSError, http.client.HTTPException, ValueError):
            if not self._stop.is_set():
                raise
        finally:
            self._watch_conn = None
            conn.close()

    def status(self) -> dict[str, Any]:
        answer = self._call("/v3/kv/range", {"key": self.key})
        kvs = answer.get("kvs", [])
        leader = base64.b64decode(kvs[0]["value"]).decode() if kvs else None
        epoch = int(kvs[0]["create_revision"]) if kvs else None
        return {"leader": leader, "epoch": epoch, "members": None, "lease_ttl_s": self.granted_ttl_s}

    def stop(self) -> None:
        self._stop.set()
        self.revoked()  # before the lease (and with it the key) goes
        with contextlib.suppress(Exception):
            self._call("/v3/lease/revoke", {"ID": self.lease})
        conn = self._watch_conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        self._campaign_thread.join(timeout=10)
        self._keepalive_thread.join(timeout=10)


SYSTEMS = {
    "coordinator": CoordinatorCandidate,
    "kafka": CoordinatorCandidate,  # the same election, on Apache Kafka's group coordinator
    "zookeeper": ZooKeeperCandidate,
    "etcd": EtcdCandidate,
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="One leader-election candidate printing JSON events.")
    p.add_argument("--system", choices=sorted(SYSTEMS), required=True)
    p.add_argument(
        "--connect",
        required=True,
        help="HOST:PORT of the coordinator, ZooKeeper or etcd (Kafka: bootstrap servers)",
    )
    p.add_argument("--group", required=True, help="election name (group id, znode, key)")
    p.add_argument("--name", required=True, help="this candidate's name")
    p.add_argument("--session-ms", type=int, required=True)
    p.add_argument("--heartbeat-ms", type=int, required=True)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _identity["name"] = args.name
    candidate = SYSTEMS[args.system](args)
    try:
        candidate.start()
    except Exception as exc:
        emit("error", error=f"start failed: {type(exc).__name__}: {exc}")
        return 1
    emit("started", pid=os.getpid())
    for line in sys.stdin:
        command = line.strip()
        if command == "status":
            try:
                emit("status", leading=candidate.leading, **candidate.status())
            except Exception as exc:
                emit("status", leading=candidate.leading, leader=None, error=f"{type(exc).__name__}: {exc}")
        elif command == "stop":
            break
    emit("stopping", leading=candidate.leading)
    code = 0
    try:
        candidate.stop()
    except Exception as exc:
        emit("error", error=f"stop failed: {type(exc).__name__}: {exc}")
        code = 1
    emit("stopped")
    return code


if __name__ == "__main__":
    sys.exit(main())
