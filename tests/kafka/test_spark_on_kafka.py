"""``coordinator_spark.distribute`` on real local Spark with the coordination on a real 3-broker
Apache Kafka cluster (``bootstrap_servers=``) instead of an embedded coordinator.

On Kafka the driver creates the job topic (one partition per unit) with kafka-python's admin
client: topics are not auto-created there, and its replication factor must be one the cluster
can place. The Spark tasks join the job's group on the cluster and record each unit's
completion as an offset commit fenced by their generation, which Kafka only accepts for a topic
it knows; the driver reads those commits back through the same admin client. (Kafka 4 offers
OffsetCommit v10, which names topics by id only: a commit negotiated up to it with topic names
was refused UNKNOWN_TOPIC_ID for every unit, and the job never finished. This test found it.)
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from coordinator_spark import Progress, WorkUnit, distribute
from kafka.admin import KafkaAdminClient
from spark.spark_sessions import ship_by_value, start_spark

from coordinator_api.testing import KafkaCluster

ship_by_value(__name__)

UNITS = 30
UNIT_SECONDS = 0.2  # 6 s of work for one slot: the second slot joins the group well before


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = start_spark("local[2]", "coordinator-spark-on-kafka")
    yield session
    session.stop()


def cube(unit: WorkUnit) -> int:
    time.sleep(UNIT_SECONDS)
    return int(unit.id.removeprefix("k-")) ** 3


def expected(unit: WorkUnit) -> int:
    return int(unit.id.removeprefix("k-")) ** 3


def job_topics(kafka: KafkaCluster) -> dict[str, list[dict[str, Any]]]:
    """The cluster's ``distribute`` job topics: name -> partitions (as kafka-python describes)."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        names = [t for t in admin.list_topics() if t.startswith("spark-") and t.endswith("-units")]
        return {t["name"]: t["partitions"] for t in admin.describe_topics(names)} if names else {}
    finally:
        admin.close()


def group_offsets(kafka: KafkaCluster, group: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        committed = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): om.offset for tp, om in committed.items()}


def test_every_unit_once_with_the_coordination_on_kafka(spark: Any, kafka: KafkaCluster) -> None:
    before = set(job_topics(kafka))
    units = [WorkUnit(f"k-{i}") for i in range(UNITS)]
    seen: list[Progress] = []
    run = distribute(
        spark,
        units,
        cube,
        result_type="bigint",
        bootstrap_servers=kafka.bootstrap_servers,
        replication_factor=3,
        session_timeout_ms=6_000,
        heartbeat_interval_ms=1_000,
        on_progress=seen.append,
        progress_interval=1.0,
        timeout=120,
    )
    rows = run.dataframe.collect()
    assert sorted(r.unit_id for r in rows) == sorted(u.id for u in units)
    assert {r.unit_id: r.result for r in rows} == {u.id: expected(u) for u in units}
    assert [c.unit_id for c in run.completions] == [u.id for u in units]  # one completion each
    # Both slots took part. The cluster starts a group's first generation at once
    # (group.initial.rebalance.delay.ms=0 here; Kafka's default of 3 s, like the 200 ms the
    # embedded coordinator is given, would gather both tasks first), so the second slot's
    # arrival rebalances the job while the first works: the unit it was processing when the
    # rebalance began is handed out again, and one processing may be repeated.
    assert set(run.placement.values()) == {"driver#0", "driver#1"}
    assert run.duplicates == len(run.reprocessed) <= 1
    assert run.processed == UNITS + run.duplicates
    assert seen and seen[-1].done == seen[-1].total == UNITS

    # The job's topic was created on the cluster, replicated to all three brokers, and the
    # group's completions are Kafka's committed offsets: one per unit.
    (topic,) = set(job_topics(kafka)) - before
    partitions = job_topics(kafka)[topic]
    assert len(partitions) == UNITS
    assert all(sorted(p["replica_nodes"]) == [1, 2, 3] for p in partitions)
    group = topic.removesuffix("-units")
    assert group_offsets(kafka, group) == {(topic, i): 1 for i in range(UNITS)}
    per_slot = Counter(run.placement.values())
    print(
        f"\nspark on Kafka: {UNITS} units over 2 slots in {run.seconds:.1f} s, every unit completed "
        f"once; per slot {dict(sorted(per_slot.items()))}, {run.duplicates} processed twice"
    )
