"""distribute() on a real local-cluster (two executor JVMs): one executor is SIGKILLed mid-job;
the job completes, every unit's result appears exactly once, and the units processed twice are
counted and bounded by what the dead executor held."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark")
psutil = pytest.importorskip("psutil")

from coordinator_spark import Progress, WorkUnit, distribute  # noqa: E402
from spark_sessions import ship_by_value, start_spark  # noqa: E402

ship_by_value(__name__)

UNIT_SECONDS = 0.25


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = start_spark("local-cluster[2,1,1024]", "coordinator-spark-cluster")
    wait_for_executors(session, 2)
    yield session
    session.stop()


def live_executors(spark: Any) -> set[str]:
    listed = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    ids = {listed.apply(i).id() for i in range(listed.size())}
    return ids - {"driver"}


def wait_for_executors(spark: Any, count: int, timeout: float = 120.0) -> set[str]:
    deadline = time.monotonic() + timeout
    while len(live_executors(spark)) < count:
        assert time.monotonic() < deadline, f"fewer than {count} executors registered"
        time.sleep(0.2)
    return live_executors(spark)


def executor_jvms() -> dict[str, Any]:
    """Executor id -> the executor's JVM process (descendants of this test process)."""
    found = {}
    for process in psutil.Process().children(recursive=True):
        try:
            cmdline = process.cmdline()
        except psutil.Error:
            continue
        if any("CoarseGrainedExecutorBackend" in part for part in cmdline) and "--executor-id" in cmdline:
            found[cmdline[cmdline.index("--executor-id") + 1]] = process
    return found


def slow_double(unit: WorkUnit) -> int:
    time.sleep(UNIT_SECONDS)
    return 2 * int(unit.id.removeprefix("unit-"))


def test_an_executor_killed_mid_job_loses_no_unit_and_duplicates_are_bounded(spark: Any) -> None:
    units = [WorkUnit(f"unit-{i}") for i in range(40)]
    killed: dict[str, Any] = {}
    kill_lock = threading.Lock()

    def kill_one_executor(progress: Progress) -> None:
        with kill_lock:
            if killed or progress.done < 6:
                return
            jvms = executor_jvms()
            victim = min(jvms)
            killed["id"], killed["done"] = victim, progress.done
            os.kill(jvms[victim].pid, signal.SIGKILL)

    run = distribute(
        spark,
        units,
        slow_double,
        result_type="bigint",
        session_timeout_ms=3_000,
        heartbeat_interval_ms=500,
        on_progress=kill_one_executor,
        progress_interval=0.2,
        timeout=180,
    )
    assert killed, "the job ended before an executor could be killed"
    assert killed["done"] < len(units)

    rows = run.dataframe.collect()
    assert sorted(r.unit_id for r in rows) == sorted(u.id for u in units)  # exactly once each
    assert {r.unit_id: r.result for r in rows} == {u.id: 2 * i for i, u in enumerate(units)}

    dead = killed["id"]
    from_dead = [d for d in run.deliveries if d.executor_id == dead]
    assert from_dead, "the killed executor had delivered nothing"
    # The survivors finished what the dead executor held: some units it was given were
    # completed elsewhere after the kill.
    assert any(c.executor != dead for c in run.completions)
    # Duplicates: only a unit the dead executor delivered but could not commit can be processed
    # again, and its one task slot had at most one unit in flight.
    assert run.duplicates == len(run.reprocessed) <= 1
    for unit_id in run.reprocessed:
        index = int(unit_id.removeprefix("unit-"))
        assert any(d.unit == index for d in from_dead)
    assert run.processed == len(units) + run.duplicates
    print(
        f"killed executor {dead} at {killed['done']}/{len(units)}; {run.seconds:.1f} s; "
        f"duplicates {run.duplicates}; executors {sorted({c.executor for c in run.completions})}"
    )
