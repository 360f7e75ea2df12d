"""``coordinator-api demo``, the README's first command, end to end as a user runs it: in a
subprocess, its output checked for each plugin's claims, and no process of its left behind, also
after Ctrl-C or SIGTERM.

The whole demo runs once (about 40 s on 2 cores); the other tests run parts of it
(``--only``)."""

from __future__ import annotations

import importlib.util
import io
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

import psutil
from coordinator_demo._demo import _summary
from coordinator_demo._fleet import Narrator, Timing

CLI = [sys.executable, "-m", "coordinator_api"]
#: The CLI as a shell in a terminal starts it, with Ctrl-C's default action: a suite run as a
#: background job (``cmd &`` without job control) has SIGINT ignored, its processes inherit that,
#: and Python then keeps it ignored, as a background job should.
CLI_FROM_A_TERMINAL = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])",
    *CLI[1:],
]
HAS_SPARK = importlib.util.find_spec("pyspark") is not None


@dataclass
class Run:
    """A demo process: its output as it comes, and every process it started (pid, start time)."""

    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)
    descendants: dict[int, float] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)

    @property
    def out(self) -> str:
        return "".join(self.lines)

    def wait_for_line(self, pattern: str, timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.lines):
                found = re.search(pattern, line)
                if found:
                    return found
            assert self.process.poll() is None, f"the demo ended before {pattern!r}:\n{self.out}"
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r} within {timeout} s:\n{self.out}")

    def survivors(self, grace: float = 2.0) -> list[str]:
        """The processes the demo started that are still running ``grace`` seconds after it
        ended (a process may take a moment to exit once told to)."""
        deadline = time.monotonic() + grace
        while True:
            alive = self._alive()
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)

    def _alive(self) -> list[str]:
        alive = []
        for pid, created in self.descendants.items():
            try:
                p = psutil.Process(pid)
                if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{pid} {' '.join(p.cmdline())[:200]}")
            except psutil.NoSuchProcess:
                continue
        return alive


def start_demo(*args: str) -> Run:
    process = subprocess.Popen(
        [*CLI_FROM_A_TERMINAL, "--log-level", "WARNING", "demo", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    run = Run(process)

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            run.lines.append(line)

    def watch() -> None:
        parent = psutil.Process(process.pid)
        while process.poll() is None:
            try:
                children = parent.children(recursive=True)
            except psutil.Error:
                children = []
            for child in children:
                try:
                    run.descendants.setdefault(child.pid, child.create_time())
                    run.names[child.pid] = child.name()  # the latest: a script may exec java
                except psutil.Error:
                    continue  # it ended meanwhile
            time.sleep(0.05)

    threading.Thread(target=read, daemon=True).start()
    threading.Thread(target=watch, daemon=True).start()
    return run


def finish(run: Run, timeout: float) -> int:
    try:
        code = run.process.wait(timeout)
    except subprocess.TimeoutExpired:
        run.process.kill()
        raise
    time.sleep(0.3)  # the reader's last lines
    return code


def leadership_changes(out: str) -> list[tuple[str, str, int | None]]:
    """The leader part's narration in order: (who, what, epoch)."""
    changes: list[tuple[str, str, int | None]] = []
    for line in out.splitlines():
        if found := re.search(r"(l\d) is elected: it leads with epoch (\d+)", line):
            changes.append((found[1], "elected", int(found[2])))
        elif found := re.search(r"(l\d) steps down", line):
            changes.append((found[1], "stepped down", None))
        elif found := re.search(r"SIGKILL (l\d), the leader", line):
            changes.append((found[1], "killed", None))
    return changes


def check_leader_claims(out: str) -> None:
    assert "ok: exactly one leader at a time" in out, out
    assert "ok: epochs only grow" in out
    crash = re.search(r"crash failover: (l\d) leads with epoch (\d+), ([\d.]+) (ms|s) after the SIGKILL", out)
    graceful = re.search(
        r"graceful failover: (l\d) leads with epoch (\d+), ([\d.]+) (ms|s) after the SIGTERM", out
    )
    assert crash and graceful, out
    assert int(graceful[2]) > int(crash[2])
    in_seconds = [float(m[3]) / (1000 if m[4] == "ms" else 1) for m in (crash, graceful)]
    assert in_seconds[1] < in_seconds[0]  # leaving is faster than waiting for an expiry
    # From the narration itself: at most one leader at any moment, epochs growing.
    leading: set[str] = set()
    epochs: list[int] = []
    for who, what, epoch in leadership_changes(out):
        if what == "elected":
            assert not leading, f"{who} elected while {leading} led:\n{out}"
            leading.add(who)
            assert epoch is not None
            epochs.append(epoch)
        else:
            leading.discard(who)
    assert len(epochs) >= 3 and all(b > a for a, b in itertools.pairwise(epochs)), epochs


def test_the_whole_demo_keeps_each_plugins_promises_and_leaves_nothing_behind() -> None:
    started = time.monotonic()
    run = start_demo()
    code = finish(run, 180)
    took = time.monotonic() - started
    out = run.out
    assert code == 0, out
    assert "OK: every part behaved as its plugin promises" in out
    assert took < 180
    assert "\x1b[" not in out  # plain text when stdout is not a terminal
    # 1. The custom Coordinator.
    assert "ok: after each change every partition was owned by exactly one live member" in out
    assert "partitions worked on by two members at once: 0" in out
    assert out.count(" expired ") >= 2  # the SIGKILLed and the paused member's sessions ran out
    assert "resumed: it reports its partitions lost, then rejoins: settled" in out
    assert " left " in out  # the gracefully stopped member sent LeaveGroup
    # 2. Leader election.
    check_leader_claims(out)
    # 3. The consumer group: each change moved only what it had to, the rest stayed put.
    assert "ok: members kept the partitions that did not move" in out
    assert "ok: no partition was owned by two members at once" in out
    joined = re.search(
        r"c4 joined: settled in .*?: (\d+) of 12 partitions stayed with their members, (\d+) moved", out
    )
    assert joined and joined[1] == "9" and joined[2] == "3", out
    # 4. The streams group.
    assert "ok: c and d were first given no active task, as they were caught up on none" in out
    assert re.search(r"ok: each of the \d+ tasks that moved arrived caught up", out)
    assert "ok: no task was active on two members at once" in out
    assert re.search(r"balanced after .*: a runs 3, b runs 3, c runs 3, d runs 3", out)
    # 5. Spark, if installed (the suite installs the spark extra).
    if HAS_SPARK:
        assert "ok: every unit's result is in the output exactly once (24 rows, checked)" in out
        assert "ok: a task was killed mid-job" in out
        assert re.search(r"ok: units processed twice: [01] ", out)
    else:
        assert "skipped: pyspark is not installed" in out
    # The closing table: every part measured something.
    table = out.split("== timings measured", 1)[1].split("== verdicts", 1)[0]
    for part in ("coordinator", "leader", "consumer", "streams", *(["spark"] if HAS_SPARK else [])):
        assert re.search(rf"^   {part} ", table, re.MULTILINE), table
    assert "crash failover" in table and "graceful failover" in table
    assert run.survivors() == []
    assert len(run.descendants) >= 3 + 3 + 4 + 4  # every part's member processes were seen


def test_describe_prints_commands_that_inspect_the_groups_while_it_runs() -> None:
    run = start_demo("--only", "coordinator,leader", "--describe")
    try:
        printed = run.wait_for_line(r"^   coordinator-api (groups demo --bootstrap-server \S+)$", 30)
        run.wait_for_line(r"^   coordinator-api groups demo-leader --bootstrap-server \S+$", 5)
        # While the first part's group is up, the printed command, run as printed, describes it
        # with the members it has then. The part SIGKILLs member-3 as soon as all have joined,
        # and its 3 s session may run out before a CLI started on a loaded machine asks; member-2
        # is paused only once member-3's expiry has settled, and stays in the group a session
        # longer; member-1 leaves last, seconds after that.
        run.wait_for_line(r"^== all members joined: settled", 60)
        result = subprocess.run(
            [*CLI, *printed[1].split()], capture_output=True, text=True, timeout=30, check=False
        )
        assert result.returncode == 0, result.stderr
        assert "protocol type demo-partitions" in result.stdout, result.stdout
        described = set(re.findall(r"^  (member-\d+)-\S+ ", result.stdout, re.MULTILINE))
        assert {"member-1", "member-2"} <= described <= {"member-1", "member-2", "member-3"}, result.stdout
        bootstrap = printed[1].split()[-1]
        listing = subprocess.run(
            [*CLI, "groups", "--bootstrap-server", bootstrap, "--json"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        groups = {g["group_id"]: g["protocol_type"] for g in json.loads(listing.stdout)}
        assert groups.get("demo") == "demo-partitions", listing.stdout
        code = finish(run, 120)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert code == 0, run.out
    assert "[1/2] coordinator:" in run.out and "[2/2] leader:" in run.out and "[1/5]" not in run.out
    assert "\n   inspect: coordinator-api groups demo-leader --bootstrap-server " in run.out
    check_leader_claims(run.out)
    assert run.survivors() == []


def test_no_spark_and_a_missing_pyspark_skip_the_spark_part_in_one_line() -> None:
    result = subprocess.run(
        [*CLI, "demo", "--only", "spark", "--no-spark"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\n   skipped (--no-spark)\n" in result.stdout
    assert re.search(r"^   spark +skipped$", result.stdout, re.MULTILINE)
    # As after the README's install, which has no spark extra: pyspark cannot be imported.
    hide_pyspark = (
        "import sys; sys.modules['pyspark'] = None; from coordinator_api._cli import main; "
        "sys.exit(main(['demo', '--only', 'spark']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", hide_pyspark], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    skipped = [line for line in result.stdout.splitlines() if "skipped:" in line]
    assert skipped == ["   skipped: pyspark is not installed (pip install 'coordinator-api[spark]')"]


def test_bad_parts_are_refused_in_one_line() -> None:
    result = subprocess.run(
        [*CLI, "demo", "--only", "leader,zookeeper"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert (
        "argument --only: 'leader,zookeeper': give one or more of coordinator, leader, consumer"
        in (result.stderr.splitlines()[-1])
    )


def interrupt_leaves_nothing(args: list[str], when: str, sig: int, code: int, timeout: float) -> Run:
    run = start_demo(*args)
    try:
        run.wait_for_line(when, timeout)
        time.sleep(0.5)  # let the watcher see the processes started by now
        run.process.send_signal(sig)
        assert finish(run, 60) == code, run.out
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert "interrupted; stopping its processes" in run.out
    assert run.survivors() == [], run.out
    return run


def test_ctrl_c_mid_run_leaves_no_process_behind() -> None:
    # Interrupted while a member is paused with SIGSTOP: it must be resumed to be stopped.
    run = interrupt_leaves_nothing(["--only", "coordinator"], r"SIGSTOP member-2", signal.SIGINT, 130, 60)
    assert len(run.descendants) >= 3


def test_sigterm_during_the_spark_job_leaves_no_process_behind() -> None:
    if not HAS_SPARK:
        return
    # Once a unit is done, the members run in Spark's Python workers, forked by the JVM.
    run = interrupt_leaves_nothing(["--only", "spark"], r"[1-9]\d*/24 units done", signal.SIGTERM, 143, 120)
    names = set(run.names.values())
    assert "java" in names and any(name.startswith("python") for name in names), names


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_status_line_is_rich_s_spinner_and_lines_stay_plain_text() -> None:
    terminal = _Terminal()
    narrator = Narrator(terminal)
    narrator.status("waiting for the leader (1.0 s)")
    time.sleep(0.25)  # the spinner draws a few frames meanwhile
    narrator.line("elected")
    narrator.status("again")
    narrator.line("done")
    drawn = terminal.getvalue()
    assert "waiting for the leader (1.0 s)" in drawn and any(frame in drawn for frame in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
    assert drawn.index("waiting") < drawn.index("elected\n") < drawn.index("done\n")
    assert narrator._status is None  # each line stops the spinner first
    plain = io.StringIO()  # not a terminal: lines only, no status
    Narrator(plain).status("waiting")
    assert plain.getvalue() == ""


def test_the_closing_timings_table_is_drawn_by_rich_on_a_terminal_and_plain_lines_elsewhere() -> None:
    timings = [
        Timing("coordinator", "settled after a SIGKILL", "3.46 s"),
        Timing("leader", "crash failover", "812 ms"),
    ]
    results: list[tuple[str, bool | None]] = [("coordinator", True), ("leader", True), ("spark", None)]

    terminal = _Terminal()
    assert _summary(Narrator(terminal), timings, results, 12.3) == 0
    drawn = terminal.getvalue().split("== timings measured\n", 1)[1].split("== verdicts\n", 1)[0]
    assert drawn.startswith("\x1b[1mpart")  # rich's bold header
    header, rule, *rows = re.sub(r"\x1b\[[0-9;]*m", "", drawn).splitlines()
    assert header.split() == ["part", "measured", "value"]
    assert set(rule) == {"─"} and len(rule) >= len(max(rows, key=len))
    assert [re.split(r" {2,}", row) for row in rows] == [
        ["coordinator", "settled after a SIGKILL", "3.46 s"],
        ["leader", "crash failover", "812 ms"],
    ]
    for column, cells in (("measured", ("settled", "crash")), ("value", ("3.46 s", "812 ms"))):
        assert {header.index(column)} == {row.index(cell) for row, cell in zip(rows, cells)}, drawn
    assert terminal.getvalue().endswith(
        "== verdicts\n   coordinator  ok\n   leader       ok\n   spark        skipped\n\n"
        "OK: every part behaved as its plugin promises (12 s in all)\n"
    )

    plain = io.StringIO()  # not a terminal: plain lines, as the rest of the narration
    assert _summary(Narrator(plain), timings, results, 12.3) == 0
    assert plain.getvalue().split("== timings measured\n", 1)[1].split("== verdicts\n", 1)[0] == (
        "   part         measured                  value\n"
        "   coordinator  settled after a SIGKILL  3.46 s\n"
        "   leader       crash failover           812 ms\n"
    )
