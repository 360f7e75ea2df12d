"""distribute() end to end on real Spark in local[2]: every unit once, skewed weights balanced,
a second run keeps the placement (all but a late slot's excess), progress reported on the
driver, bad input refused."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from coordinator_spark import DistributeError, Executor, Progress, WorkUnit, allocate, distribute
from spark_sessions import ship_by_value, start_spark

from coordinator_api import ConfigurationError, CoordinatorConfig, EmbeddedCoordinator, SaslSettings
from coordinator_api.server._sasl import add_user, save_users

ship_by_value(__name__)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = start_spark("local[2]", "coordinator-spark-local")
    yield session
    session.stop()


def square(unit: WorkUnit) -> int:
    return int(unit.id.split("-")[1]) ** 2


def test_every_unit_once_with_results_as_a_dataframe(spark: Any) -> None:
    units = [WorkUnit(f"n-{i}") for i in range(40)]
    seen: list[Progress] = []
    run = distribute(
        spark, units, square, result_type="bigint", on_progress=seen.append, progress_interval=0.5
    )
    rows = run.dataframe.orderBy("unit_id").collect()
    assert sorted(r.unit_id for r in rows) == sorted(u.id for u in units)
    assert {r.unit_id: r.result for r in rows} == {u.id: square(u) for u in units}
    assert {r.executor for r in rows} == {"driver"}  # local mode: the driver is the executor
    assert {r.attempt for r in rows} == {1}
    assert run.processed == 40 and run.duplicates == 0 and run.reprocessed == ()
    # Each unit was placed on one of the two slots. Whether both got some depends on when the
    # second Spark task started (on a loaded machine the first may finish 40 instant units
    # alone); the skewed test below, whose units take time, shows both slots sharing the work.
    assert set(run.placement) == {u.id for u in units}
    assert set(run.placement.values()) <= {"driver#0", "driver#1"}
    assert seen and seen[-1] == Progress(40, 40, 40, seen[-1].seconds)


def test_skewed_weights_are_balanced_and_a_second_run_keeps_the_placement(spark: Any) -> None:
    # Two heavy units and many light ones: by count the slots would be even; by weight each
    # heavy unit must sit alone-ish, and the light ones fill the other slot.
    cost = {f"h-{i}": 0.6 for i in range(2)} | {f"l-{i}": 0.05 for i in range(24)}
    units = [WorkUnit(name, weight) for name, weight in cost.items()]

    def sleep(unit: WorkUnit) -> str:
        time.sleep(cost[unit.id])
        return unit.id

    first = distribute(spark, units, sleep)
    assert first.results() == {u: u for u in cost}
    slots = sorted(set(first.placement.values()))
    assert len(slots) == 2
    # How even the first run is depends on when each slot joined (one that joins late runs
    # less meanwhile; on a loaded machine 2.15 s against 0.25 s was seen): the balance by weight
    # is the allocator's, for both slots from the start.
    planned = allocate([Executor(slot) for slot in slots], units, {})
    load = [sum(cost[unit] for unit in held) for held in planned.values()]
    assert max(load) - min(load) <= max(cost.values()) + 1e-9

    # The second run keeps every unit where it ran, except what its slot holds past its share
    # of the weight: the first run's placement is uneven when one slot joined late and ran
    # units alone meanwhile (seen on a loaded machine: both heavy units and six light ones on
    # one slot), and the allocator's keep pass then lets exactly that excess go.
    second = distribute(spark, units, sleep, placement=first.placement)
    kept = allocate([Executor(slot) for slot in slots], units, first.placement)
    assert second.placement == {unit: slot for slot, held in kept.items() for unit in held}


def test_a_failing_process_fails_the_job_with_a_typed_error(spark: Any) -> None:
    def boom(unit: WorkUnit) -> None:
        raise RuntimeError(f"cannot process {unit.id}")

    with pytest.raises(DistributeError, match="0 of 3 units done") as caught:
        distribute(spark, ["a", "b", "c"], boom, timeout=120)
    # The first line says which unit failed and how; the worker's traceback follows.
    first, rest = str(caught.value).split("\n", 1)
    assert re.search(r"units done: work unit '([abc])' failed: RuntimeError: cannot process \1$", first), (
        first
    )
    assert "Traceback (most recent call last)" in rest


def test_bad_arguments_are_refused_before_anything_starts(spark: Any) -> None:
    with pytest.raises(ConfigurationError, match="repeated: a"):
        distribute(spark, ["a", "a"], str)
    with pytest.raises(ConfigurationError, match="slots must be a positive integer"):
        distribute(spark, ["a"], str, slots=0)
    with pytest.raises(ConfigurationError, match=r"unknown allocator 'nope'.*weighted-sticky"):
        distribute(spark, ["a"], str, allocator="nope")
    with pytest.raises(ConfigurationError, match="SparkSession"):
        distribute("spark", ["a"], str)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="three heartbeat intervals"):
        distribute(spark, ["a"], str, session_timeout_ms=2000, heartbeat_interval_ms=1000)
    assert distribute(spark, [], str).dataframe.count() == 0


def test_a_secured_coordinator_is_reached_through_the_connection_options(spark: Any, tmp_path: Path) -> None:
    users: dict[str, Any] = {}
    add_user(users, "spark-job", "job-password", ["SCRAM-SHA-256"])
    save_users(tmp_path / "users.json", users)
    sasl = SaslSettings(users_file=tmp_path / "users.json", mechanisms=("SCRAM-SHA-256",))
    config = CoordinatorConfig(initial_rebalance_delay_ms=200)
    secured = {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "spark-job",
        "sasl_plain_password": "job-password",
    }
    units = [WorkUnit(f"u-{i}") for i in range(6)]
    with EmbeddedCoordinator(config=config, sasl=sasl) as coordinator:
        run = distribute(
            spark, units, square, bootstrap_servers=coordinator.bootstrap_servers, connection_options=secured
        )
    assert sorted(run.results().values()) == [i * i for i in range(6)]
    with pytest.raises(ConfigurationError, match="unknown connection option"):
        distribute(spark, units, square, connection_options={"sasl_password": "typo"})
