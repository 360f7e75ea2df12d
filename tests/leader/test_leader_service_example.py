"""contrib/leader-service as three real processes: one leader runs the fenced job; killing it
hands the job to another instance with a greater epoch, and the store never goes backwards."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from coordinator_api import EmbeddedCoordinator

SERVICE = Path(__file__).resolve().parents[2] / "contrib" / "leader-service" / "leader_service.py"


class Instance:
    def __init__(self, name: str, bootstrap: str, db: Path) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [
                sys.executable,
                str(SERVICE),
                "--name",
                name,
                "--bootstrap-servers",
                bootstrap,
                "--db",
                str(db),
                "--session-timeout-ms",
                "1500",
                "--period",
                "0.05",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        first = json.loads(self.process.stdout.readline())
        assert first["event"] == "serving"
        self.port = first["port"]

    def status(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/status", timeout=5) as answer:
            return dict(json.loads(answer.read()))


@pytest.fixture
def instances(coordinator: EmbeddedCoordinator, tmp_path: Path) -> Iterator[list[Instance]]:
    started = [Instance(n, coordinator.bootstrap_servers, tmp_path / "jobs.db") for n in ("a", "b", "c")]
    yield started
    for instance in started:
        if instance.process.poll() is None:
            instance.process.send_signal(signal.SIGTERM)
    for instance in started:
        try:
            instance.process.wait(10)
        except subprocess.TimeoutExpired:
            instance.process.kill()


def agreed_leader(instances: list[Instance], timeout: float = 20) -> Instance:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        statuses = [i.status() for i in instances]
        leaders = [i for i, s in zip(instances, statuses) if s["is_leader"]]
        if len(leaders) == 1 and all(s["leader"] == leaders[0].name for s in statuses):
            return leaders[0]
        time.sleep(0.05)
    pytest.fail("the instances did not agree on one leader")


def runs(db: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(db) as conn:
        return [(e, w) for e, w in conn.execute("SELECT epoch, writer FROM runs ORDER BY rowid")]


def test_three_instances_one_fenced_job_and_failover(instances: list[Instance], tmp_path: Path) -> None:
    db = tmp_path / "jobs.db"
    leader = agreed_leader(instances)
    deadline = time.monotonic() + 10
    while len(runs(db)) < 5:
        assert time.monotonic() < deadline, "the leader's job did not run"
        time.sleep(0.05)
    first_epoch = leader.status()["epoch"]
    assert {w for _, w in runs(db)} == {leader.name}
    assert all(i.status()["leader_address"] == f"127.0.0.1:{leader.port}" for i in instances)

    leader.process.kill()
    leader.process.wait()
    survivors = [i for i in instances if i is not leader]
    successor = agreed_leader(survivors)
    deadline = time.monotonic() + 10
    while not any(w == successor.name for _, w in runs(db)):
        assert time.monotonic() < deadline, "the new leader's job did not run"
        time.sleep(0.05)
    assert successor.status()["epoch"] > first_epoch

    written = runs(db)
    epochs = [e for e, _ in written]
    assert epochs == sorted(epochs), "the store went back to an older epoch"
    writers_by_epoch: dict[int, set[str]] = {}
    for epoch, writer in written:
        writers_by_epoch.setdefault(epoch, set()).add(writer)
    assert all(len(w) == 1 for w in writers_by_epoch.values()), writers_by_epoch


def test_the_readme_commands_work_with_the_defaults(tmp_path: Path) -> None:
    """contrib/leader-service/README.md: `coordinator-api serve` with its defaults (sessions of
    6 s at least, a first rebalance after 3 s) and an instance started with the README's flags
    only: it is elected."""
    server = subprocess.Popen(
        [sys.executable, "-m", "coordinator_api", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    service = None
    try:
        assert server.stdout is not None
        bootstrap = server.stdout.readline().rsplit(" ", 1)[1].strip()
        db = str(tmp_path / "jobs.db")
        flags = ["--name", "a", "--port", "0", "--bootstrap-servers", bootstrap, "--db", db]
        service = subprocess.Popen(
            [sys.executable, str(SERVICE), *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert service.stdout is not None
        port = json.loads(service.stdout.readline())["port"]
        deadline = time.monotonic() + 30
        status: dict[str, Any] = {}
        while time.monotonic() < deadline and not status.get("is_leader"):
            time.sleep(0.2)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=5) as answer:
                status = json.loads(answer.read())
        assert status.get("is_leader"), status
    finally:
        for process in (service, server):
            if process is not None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
