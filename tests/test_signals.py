"""exit_on_sigterm: a member process ended with SIGTERM leaves its group on the way out (the
coordinator records a leave, never an expiry), so its peers go on at once instead of after
its session; without the helper, the same process is expired a session later. stop_event: the
member processes' own way to stop, which signals cannot deadlock."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from member_processes import wait_for

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator, exit_on_sigterm
from coordinator_api._signals import stop_event
from coordinator_api.server import recording_membership

SESSION_MS = 30_000  # far longer than any bound below: a leave is what makes them hold

MEMBER = """
import sys, time
from coordinator_api import exit_on_sigterm

kind, bootstrap, group, name, helper, session = sys.argv[1:7]
if helper == "1":
    exit_on_sigterm()
if kind == "leader":
    from coordinator_leader import LeaderElection

    member = LeaderElection(group, bootstrap, name, session_timeout_ms=int(session))
else:
    from coordinator_consumer import ConsumerGroupMember

    member = ConsumerGroupMember(group, bootstrap, topics=["t"], session_timeout_ms=int(session))
with member:
    if kind == "consumer":
        member.ensure_active_group(60)
    else:
        member.wait_until_leader(60)
    print("ready", flush=True)
    while True:
        member.poll(0.2) if kind == "consumer" else time.sleep(0.2)
"""


def start(
    tmp_path: Path, kind: str, bootstrap: str, group: str, name: str, helper: bool
) -> subprocess.Popen[str]:
    script = tmp_path / "member.py"
    script.write_text(MEMBER)
    process = subprocess.Popen(
        [sys.executable, str(script), kind, bootstrap, group, name, "1" if helper else "0", str(SESSION_MS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if line.strip() != "ready":
        process.kill()
        pytest.fail(f"{kind} member did not start: {line}{process.communicate()[1][-3000:]}")
    return process


@pytest.mark.parametrize("kind", ["leader", "consumer"])
@pytest.mark.parametrize("helper", [True, False], ids=["exit_on_sigterm", "default"])
def test_sigterm_leaves_the_group_with_the_helper_and_not_without(
    tmp_path: Path, kind: str, helper: bool
) -> None:
    group = f"sigterm-{kind}-{helper}"
    with (
        recording_membership() as membership,
        EmbeddedCoordinator(
            topics={"t": 4}, config=CoordinatorConfig(initial_rebalance_delay_ms=0)
        ) as coordinator,
    ):
        process = start(tmp_path, kind, coordinator.bootstrap_servers, group, "m1", helper)
        try:
            joined = membership.of("joined", group)
            assert len(joined) == 1
            process.send_signal(signal.SIGTERM)
            status = process.wait(30)
            if helper:
                assert status == 143, process.communicate()[1][-3000:]
                # Left on the way out: recorded by the time the process has exited.
                left = wait_for(lambda: membership.of("left", group), 5, "the member to leave")
                assert left[0].member_id == joined[0].member_id
            else:
                assert status == -signal.SIGTERM
                time.sleep(1.0)
                assert not membership.of("left", group), "a default SIGTERM left the group"
        finally:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    "install", [exit_on_sigterm, lambda: stop_event(signal.SIGTERM)], ids=["exit_on_sigterm", "stop_event"]
)
def test_signal_handlers_belong_to_the_main_thread(install: Callable[[], object]) -> None:
    errors: list[BaseException] = []

    def call() -> None:
        try:
            install()
        except ConfigurationError as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    assert len(errors) == 1 and "main thread" in str(errors[0])


SPINNER = """
import signal, sys, time
from coordinator_api._signals import stop_event

stop = stop_event(signal.SIGUSR2)
print("ready", flush=True)
seen, end = 0, time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    if stop.wait(0.00001):  # the main thread holds the Event's lock often, for short whiles
        seen += 1
        stop.clear()
print(seen, flush=True)
"""


def test_a_stop_event_is_set_by_signals_that_arrive_while_the_main_thread_waits_on_it(
    tmp_path: Path,
) -> None:
    """A handler that set the Event itself would, now and then, run while the main thread holds
    the Event's lock inside ``wait()``: ``set()`` then waits for that lock forever (a test's
    member process once hung so on SIGTERM). Signals sent every 0.2 ms for 3 s, from
    another process, hit that window; the process must go on and see them."""
    script = tmp_path / "spinner.py"
    script.write_text(SPINNER)
    spin_s = 3.0
    process = subprocess.Popen(
        [sys.executable, str(script), str(spin_s)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready", process.communicate()[1][-3000:]
        sent = 0
        end = time.monotonic() + spin_s - 0.5
        while time.monotonic() < end:
            process.send_signal(signal.SIGUSR2)
            sent += 1
            time.sleep(0.0002)
        out, err = process.communicate(timeout=30)
        assert process.returncode == 0, err[-3000:]
        assert int(out) > 0, f"none of {sent} signals set the Event"
    finally:
        process.kill()
        process.wait()
