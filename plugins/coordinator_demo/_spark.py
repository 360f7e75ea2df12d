"""The Spark part of ``coordinator-api demo``: ``coordinator_spark.distribute`` on ``local[2]``
spreads weighted work units over two task slots, coordinated by the demo's embedded
coordinator, and the Python worker of one task is SIGKILLed mid-job.

pyspark is an optional extra: without it (or without Java, or with ``--no-spark``) the part is
skipped with one line saying why. The work function lives here so that Spark's Python workers
import it by name (this module imports pyspark only inside :func:`run_spark`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coordinator_spark import Progress, WorkUnit

from coordinator_demo._fleet import Context, seconds

# Skewed costs: a few heavy units and many light ones (weights in tenths of a second).
WEIGHTS = (8, 6, 5, 4, 4, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
SECONDS_PER_WEIGHT = 0.1
SLOTS = 2
SESSION_MS = 2000
KILL_AFTER = 5  # units done


def unavailable(enabled: bool) -> str | None:
    """Why the Spark part cannot run here, or None."""
    if not enabled:
        return "skipped (--no-spark)"
    if importlib.util.find_spec("pyspark") is None:
        return "skipped: pyspark is not installed (pip install 'coordinator-api[spark]')"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return "skipped: pyspark needs Java 17+, and there is no `java` on PATH (nor JAVA_HOME)"
    return None


def expected(unit_id: str) -> int:
    """What processing the unit returns: a number the driver can check."""
    return int(unit_id.rsplit("-", 1)[1]) ** 2


@dataclass(frozen=True)
class Work:
    """The work function, run in Spark's Python workers: it notes which unit this worker is on
    (so the demo can pick a busy worker to kill, and tell afterwards whose work it was), then
    works for the unit's weight."""

    busy_dir: str

    def __call__(self, unit: WorkUnit) -> int:
        busy = Path(self.busy_dir)
        (busy / str(os.getpid())).write_text(unit.id)
        with (busy.parent / "spark-units.log").open("a") as log:
            log.write(f"{os.getpid()} {unit.id}\n")
        time.sleep(unit.weight * SECONDS_PER_WEIGHT)
        return expected(unit.id)


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """Point this process's stderr (file descriptor 2) at ``path`` meanwhile: the JVM that
    pyspark starts, and the Python workers it forks, inherit it and keep writing there."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as target:
            os.dup2(target.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _quiet_collector_threads(ctx: Context) -> None:
    """Until the demo ends, do not print the error a result-connection thread of
    ``coordinator_spark``'s collector raises when the driver closes the collector while the
    thread waits for a task's message (an interrupted job): ``Connection.recv`` on a connection
    closed by another thread raises TypeError, which the thread does not expect."""
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        thread = args.thread.name if args.thread is not None else ""
        if thread == "spark-result-connection" and args.exc_type is TypeError:
            return
        previous(args)

    threading.excepthook = hook

    def restore() -> None:
        threading.excepthook = previous

    ctx.cleanups.insert(0, restore)  # the cleanups run last to first: this one at the very end


def run_spark(ctx: Context, enabled: bool) -> bool | None:
    """Run the Spark part; None if it was skipped."""
    say = ctx.narrator
    why = unavailable(enabled)
    if why is not None:
        say.detail(why)
        return None
    from coordinator_spark import distribute
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run this interpreter
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    busy = ctx.workdir / "spark-busy"
    busy.mkdir()
    t0 = time.monotonic()
    _quiet_collector_threads(ctx)
    spark_log = ctx.workdir / "spark.stderr"
    say.event("starting Spark: local[2], two task slots, each task a group member in a Python worker")
    with _stderr_to(spark_log):  # the JVM's chatter (and the killed worker's stack traces)
        spark = (
            # local[2,4]: two cores, and a failed task is retried (local[N] never retries).
            SparkSession.builder.master(f"local[{SLOTS},4]")
            .appName("coordinator-api-demo")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "512m")
            .config("spark.python.worker.reuse", "true")
            .getOrCreate()
        )

    def stop_spark() -> None:
        """Stop the job, the session and the JVM (whose Python workers go with it)."""
        from pyspark import SparkContext

        with contextlib.suppress(Exception):
            spark.sparkContext.cancelAllJobs()
        with contextlib.suppress(Exception):
            spark.stop()
        gateway: Any = SparkContext._gateway
        jvm = getattr(gateway, "proc", None)
        if gateway is not None:
            with contextlib.suppress(Exception):
                gateway.shutdown()
        if jvm is not None:
            with contextlib.suppress(Exception):
                jvm.terminate()
                jvm.wait(15)
        SparkContext._gateway = None
        SparkContext._jvm = None

    ctx.cleanups.append(stop_spark)
    spark.sparkContext.setLogLevel("OFF")
    started = time.monotonic() - t0
    units = [WorkUnit(f"batch-{i:02d}", weight=float(w)) for i, w in enumerate(WEIGHTS, 1)]
    total = sum(WEIGHTS)
    say.event(
        f"Spark is up after {seconds(started)}; distribute {len(units)} units of total weight {total} "
        f"(a unit works {SECONDS_PER_WEIGHT:.1f} s per unit of weight, heaviest {max(WEIGHTS)}) "
        f"over {SLOTS} slots, coordinated by the demo's coordinator"
    )
    ctx.timing("spark", "Spark session start (JVM)", seconds(started))
    killed: dict[str, Any] = {}
    last_done = [-1]

    def on_progress(progress: Progress) -> None:
        if progress.done != last_done[0]:
            last_done[0] = progress.done
            say.event(f"{progress.done}/{progress.total} units done ({progress.processed} results received)")
        if killed or progress.done < KILL_AFTER or progress.done >= progress.total:
            return
        for marker in sorted(busy.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True):
            pid = int(marker.name)
            if pid == os.getpid():
                continue
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
            killed.update(pid=pid, unit=marker.read_text(), t=time.monotonic(), done=progress.done)
            marker.unlink()
            say.event(
                f"SIGKILL the Python worker of a task (pid {pid}, working on {killed['unit']}): its "
                f"units move to the others once its {SESSION_MS / 1000:.0f} s session expires; Spark "
                "retries the task, which joins as a new member"
            )
            return

    run = distribute(
        spark,
        units,
        Work(str(busy)),
        result_type="bigint",
        bootstrap_servers=ctx.bootstrap,
        session_timeout_ms=SESSION_MS,
        heartbeat_interval_ms=500,
        max_unit_seconds=20.0,
        on_progress=on_progress,
        progress_interval=0.2,
        timeout=150.0,
    )
    say.outcome(
        f"all {len(units)} units done in {seconds(run.seconds)} (the work alone is "
        f"{total * SECONDS_PER_WEIGHT / SLOTS:.1f} s per slot; add the tasks' start, the group's join "
        f"and the killed task's {SESSION_MS / 1000:.0f} s session)"
    )
    started_by: dict[str, set[int]] = {}  # unit id -> the pids of the workers that started it
    with contextlib.suppress(OSError):
        for line in (ctx.workdir / "spark-units.log").read_text().splitlines():
            pid, unit_id = line.split(" ", 1)
            started_by.setdefault(unit_id, set()).add(int(pid))
    shares: dict[str, list[float]] = {}  # member id -> [first delivery, units, weight]
    slots: dict[str, str] = {}
    for d in run.deliveries:
        share = shares.setdefault(d.member_id, [d.received, 0, 0.0])
        share[1] += 1
        share[2] += units[d.unit].weight
        slots[d.member_id] = d.slot
    for member_id, (_first, count, weight) in sorted(shares.items(), key=lambda kv: kv[1][0]):
        mine = {units[d.unit].id for d in run.deliveries if d.member_id == member_id}
        was_killed = bool(killed) and all(killed["pid"] in started_by.get(u, set()) for u in mine)
        who = "the killed task" if was_killed else "a task"
        say.detail(f"{who} in slot {slots[member_id]}: {count:.0f} units, weight {weight:g}")
    ids = [c.unit_id for c in run.completions]
    once = sorted(ids) == sorted(u.id for u in units)
    right = all(c.result == expected(c.unit_id) for c in run.completions)
    say.verdict(
        once and right, f"every unit's result is in the output exactly once ({len(ids)} rows, checked)"
    )
    say.verdict(
        bool(killed),
        f"a task was killed mid-job at {killed.get('done', '?')}/{len(units)} units done, and the "
        "job still finished"
        if killed
        else "the job ended before a task could be killed",
    )
    say.verdict(
        run.duplicates <= 1,
        f"units processed twice: {run.duplicates} (at most the one in flight on the killed task"
        + (f": {', '.join(run.reprocessed)})" if run.reprocessed else ")"),
    )
    ctx.timing(
        "spark", f"job: {len(units)} units of total weight {total}, one task killed", seconds(run.seconds)
    )
    ctx.timing("spark", "units in the output / results received", f"{len(ids)} / {run.processed}")
    stop_spark()
    ctx.cleanups.remove(stop_spark)
    return once and right and bool(killed) and run.duplicates <= 1
