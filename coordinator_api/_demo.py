"""The main job on one machine: an embedded coordinator and a group of real member processes.

``coordinator-api demo`` starts the embedded coordinator, starts member processes (each a
kafka-python ``KafkaConsumer`` in its own interpreter, a Kafka client written by others),
waits until the group owns every partition exactly once, kills one member with SIGKILL,
stops another gracefully, and prints what happened: the coordinator's membership log and the
assignment each member reported at every step.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator, MembershipEvent

GROUP = "demo"
TOPIC = "events"
SESSION_TIMEOUT_MS = 6000


def member_main(bootstrap_servers: str, name: str) -> None:
    """One member process: report its assignment as a JSON line whenever it changes."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap_servers,
        group_id=GROUP,
        client_id=name,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=1000,
        enable_auto_commit=False,
    )
    # Learn the partitions before joining: a kafka-python 3.0 leader that joins before its
    # metadata arrives assigns nothing, and its next rebalance can stall.
    while not consumer.partitions_for_topic(TOPIC) and not stop.is_set():
        time.sleep(0.05)
    consumer.subscribe([TOPIC])
    last: list[int] | None = None
    while not stop.is_set():
        # The coordinator keeps no log: fetches fail while membership goes on.
        with contextlib.suppress(KafkaError):
            consumer.poll(timeout_ms=500)
        owned = sorted(tp.partition for tp in consumer.assignment())
        if owned != last:
            last = owned
            print(json.dumps({"member": name, "partitions": owned}), flush=True)
    consumer.close()
    print(json.dumps({"member": name, "closed": True}), flush=True)


@dataclass
class _Member:
    name: str
    process: subprocess.Popen[str]
    partitions: list[int] = field(default_factory=list)
    alive: bool = True


class _Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[float, MembershipEvent]] = []

    def emit(self, record: logging.LogRecord) -> None:
        doc = getattr(record, "membership_event", None)
        if doc is not None:
            self.events.append((record.created, MembershipEvent(**doc)))


def _start_member(bootstrap: str, name: str, reports: queue.Queue[dict[str, object]]) -> _Member:
    process = subprocess.Popen(
        [sys.executable, "-m", "coordinator_api._demo", bootstrap, name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            reports.put(json.loads(line))

    threading.Thread(target=pump, daemon=True).start()
    return _Member(name, process)


def _await(
    members: dict[str, _Member],
    reports: queue.Queue[dict[str, object]],
    done: Callable[[], bool],
    timeout_s: float,
) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            report = reports.get(timeout=min(remaining, 0.5))
        except queue.Empty:
            continue
        member = members[str(report["member"])]
        if "partitions" in report:
            member.partitions = list(report["partitions"])  # type: ignore[call-overload]
    return True


def _owned_exactly_once(members: dict[str, _Member], partitions: int, alive: int) -> bool:
    live = [m for m in members.values() if m.alive]
    owned = sorted(p for m in live for p in m.partitions)
    return len(live) == alive and owned == list(range(partitions)) and all(m.partitions for m in live)


def _show(title: str, members: dict[str, _Member]) -> None:
    print(f"\n== {title}")
    for m in members.values():
        state = "running" if m.alive else "gone"
        print(f"   {m.name:<10} {state:<8} partitions {m.partitions}")


def run_demo(*, members: int = 3, partitions: int = 12) -> int:
    """Run the demo; return 0 when every step behaved as the group protocol promises."""
    if members < 2 or partitions < members:
        print("the demo needs at least 2 members and as many partitions as members", file=sys.stderr)
        return 2
    recorder = _Recorder()
    membership_log = logging.getLogger("coordinator_api.server.membership")
    membership_log.addHandler(recorder)
    # The demo prints the log itself at the end, whatever --log-level says.
    saved_level, saved_propagate = membership_log.level, membership_log.propagate
    membership_log.setLevel(logging.INFO)
    membership_log.propagate = False
    config = CoordinatorConfig(initial_rebalance_delay_ms=0)
    reports: queue.Queue[dict[str, object]] = queue.Queue()
    ok = True
    started = time.time()
    with EmbeddedCoordinator(topics={TOPIC: partitions}, config=config) as coordinator:
        print(
            f"embedded coordinator on {coordinator.bootstrap_servers}, topic {TOPIC!r} "
            f"with {partitions} partitions, group {GROUP!r}"
        )
        group = {
            f"member-{i}": _start_member(coordinator.bootstrap_servers, f"member-{i}", reports)
            for i in range(1, members + 1)
        }
        try:
            steps: list[tuple[str, Callable[[], None], int]] = [
                ("all members joined", lambda: None, members),
            ]
            victim, leaver = f"member-{members}", f"member-{members - 1}"

            def kill() -> None:
                group[victim].process.kill()
                group[victim].alive = False
                group[victim].partitions = []

            def leave() -> None:
                group[leaver].process.terminate()
                group[leaver].alive = False
                group[leaver].partitions = []

            steps.append((f"{victim} killed with SIGKILL (its session expires)", kill, members - 1))
            steps.append((f"{leaver} stopped gracefully (LeaveGroup)", leave, members - 2))
            for title, action, alive in steps:
                t0 = time.monotonic()
                action()
                settled = _await(group, reports, partial(_owned_exactly_once, group, partitions, alive), 60)
                _show(
                    f"{title}: {'settled' if settled else 'DID NOT SETTLE'} in {time.monotonic() - t0:.1f} s",
                    group,
                )
                ok = ok and settled
        finally:
            for m in group.values():
                if m.process.poll() is None:
                    m.process.terminate()
            for m in group.values():
                m.process.wait(timeout=30)
    membership_log.removeHandler(recorder)
    membership_log.setLevel(saved_level)
    membership_log.propagate = saved_propagate
    print("\n== coordinator membership log")
    for created, event in recorder.events:
        who = f" member={event.member_id}" if event.member_id else ""
        print(
            f"   +{created - started:6.2f}s {event.kind:<10} generation={event.generation_id}{who}"
            f" {event.detail}"
        )
    if ok:
        print("\nOK: after each change every partition was owned by exactly one live member")
    else:
        print("\nFAILED: the group did not settle after every change")
    return 0 if ok else 1


if __name__ == "__main__":
    member_main(sys.argv[1], sys.argv[2])
