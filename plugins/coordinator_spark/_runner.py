"""``distribute``: run work units on Spark executors, one group member per task slot.

The driver starts an embedded coordinator (unless given a Kafka cluster), a result collector
and one Spark job of ``slots`` long-lived tasks. Each task joins the job's ``spark-executor``
group, processes the units the leader allocates to it (with ``group_protocol="incremental"``,
those the coordinator's assignor gives it), hands each result to the driver's collector and
then commits the unit's completion, fenced by its generation. The driver watches the committed
offsets for progress and, once every unit is committed, tells the tasks to end and builds the
output from the commits: one row per unit, the delivery the commit names.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, final

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from coordinator_api import (
    CONNECTION_OPTIONS,
    ConfigurationError,
    CoordinatorConfig,
    EmbeddedCoordinator,
    GroupTimeoutError,
    installed_plugins,
)
from coordinator_spark._collector import CollectorClient, Delivery, ResultCollector
from coordinator_spark._identity import executor_identity
from coordinator_spark._member import SlotMember, completed_units
from coordinator_spark._model import DistributeError, WorkUnit
from coordinator_spark._payloads import ALLOCATOR, PROTOCOL_TYPE, UnitDone

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("coordinator_spark")

__all__ = ["Completion", "Distribution", "Progress", "distribute"]

# The embedded coordinator's default bound on a topic's partitions: one partition per unit.
_MAX_UNITS = CoordinatorConfig().max_partitions_per_topic

_GROUP_PROTOCOLS = ("classic", "incremental")


@dataclass(frozen=True, slots=True)
class Progress:
    """How far a job is, as the driver's progress callback receives it.

    :ivar done: units whose completion the coordinator accepted.
    :ivar total: units in the job.
    :ivar processed: results the driver has received, duplicates included.
    :ivar seconds: time since the job started.
    """

    done: int
    total: int
    processed: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Completion:
    """One unit's result, as the output holds it.

    :ivar unit_id: the unit.
    :ivar result: what ``process`` returned for it.
    :ivar executor: the Spark executor that produced it.
    :ivar attempt: which delivery of the unit this is (1 unless an earlier processing was lost).
    :ivar slot: the member's slot name, the placement a later run can keep.
    :ivar generation: the group generation the unit was completed in.
    """

    unit_id: str
    result: Any
    executor: str
    attempt: int
    slot: str
    generation: int


@dataclass(frozen=True)
class Distribution:
    """What :func:`distribute` returns.

    :ivar dataframe: one row per unit: ``unit_id``, ``result``, ``executor``, ``attempt``.
    :ivar completions: the same, in the order of the job's units.
    :ivar processed: results delivered to the driver, duplicates included.
    :ivar duplicates: ``processed`` minus the units: processings whose result was not used
        (an executor died between delivering and committing, or a zombie was fenced).
    :ivar reprocessed: ids of the units delivered more than once.
    :ivar deliveries: every delivery, in arrival order (executor, member, generation).
    :ivar placement: unit id -> slot name; pass it as ``placement=`` to the next run to keep
        units where they were (warm caches, local data).
    :ivar seconds: wall time from launching the Spark job to the last unit's commit.
    """

    dataframe: DataFrame
    completions: tuple[Completion, ...]
    processed: int
    duplicates: int
    reprocessed: tuple[str, ...]
    deliveries: tuple[Delivery, ...]
    placement: dict[str, str]
    seconds: float

    def results(self) -> dict[str, Any]:
        """Unit id -> result."""
        return {c.unit_id: c.result for c in self.completions}


class _JobObserver:
    """The driver's view of the job: it creates the job topic on a Kafka cluster and reads the
    group's committed offsets (the completions) with kafka-python's admin client; it never
    joins the group."""

    def __init__(self, group_id: str, bootstrap_servers: str, connection_options: Mapping[str, Any]) -> None:
        self._group_id = group_id
        self._admin = KafkaAdminClient(
            bootstrap_servers=bootstrap_servers,
            client_id=f"{group_id}-driver",
            request_timeout_ms=30_000,
            **connection_options,
        )

    def create_topic(self, topic: str, partitions: int, replication_factor: int) -> None:
        try:
            self._admin.create_topics([NewTopic(topic, partitions, replication_factor)])
        except KafkaError as exc:
            raise DistributeError(
                f"cannot create the job topic {topic!r} ({partitions} partitions): {exc}"
            ) from exc

    def committed_offsets(self) -> dict[tuple[str, int], tuple[int, str]]:
        offsets = self._admin.list_group_offsets({self._group_id: None})[self._group_id]
        return {(tp.topic, tp.partition): (om.offset, om.metadata or "") for tp, om in offsets.items()}

    def close(self) -> None:
        self._admin.close()


@final
@dataclass(frozen=True)
class _SlotTask:
    """The function each Spark task runs (pickled to the executors with everything it needs)."""

    units: tuple[WorkUnit, ...]
    process: Callable[[WorkUnit], Any]
    group_id: str
    bootstrap_servers: str
    topic: str
    collector: tuple[str, int]
    authkey: bytes
    placement: Mapping[str, str]
    member_options: Mapping[str, Any]

    def __call__(self, partition: int, rows: Iterable[int]) -> Iterator[tuple[str, str, int]]:
        from pyspark import TaskContext

        context = TaskContext.get()
        attempt = context.attemptNumber() if context is not None else 0
        cores = context.cpus() if context is not None else 1
        identity = executor_identity()
        client = CollectorClient(self.collector, self.authkey)
        done = 0
        try:
            if client.finished():  # a retried task that starts after the job is done
                return iter(())
            member = SlotMember(
                self.group_id,
                self.bootstrap_servers,
                units=self.units,
                topic=self.topic,
                executor_id=identity.executor_id,
                host=identity.host,
                cores=max(1, int(cores)),
                memory_mb=identity.memory_mb,
                attempt=attempt,
                placement=self.placement,
                client_id=f"spark-{identity.executor_id}-{partition}",
                **self.member_options,
            )
            try:
                done = self._work(member, client, identity.executor_id)
            finally:
                member.close(timeout=5.0)
        finally:
            client.close()
        return iter([(identity.executor_id, identity.source, done)])

    def _work(self, member: SlotMember, client: CollectorClient, executor_id: str) -> int:
        done = 0
        while True:
            try:
                member.ensure_active_group(1.0)
                break
            except GroupTimeoutError:
                if client.finished():
                    return done
        while True:
            member.poll(0)
            work = member.next_unit()
            if work is None:
                if client.finished():
                    return done
                member.poll(0.05)  # short: an idle member's wait is the job's tail
                continue
            index, generation = work
            unit = self.units[index]
            try:
                result = self.process(unit)
            except Exception as exc:
                # The driver shows the last line of the worker's traceback first: make it say
                # which unit failed and how.
                raise UnitFailedError(f"work unit {unit.id!r} failed: {type(exc).__name__}: {exc}") from exc
            slot = member.slot
            token = client.deliver(
                index,
                result,
                executor_id=executor_id,
                slot=slot,
                member_id=member.member_id,
                generation=generation,
            )
            if member.complete(index, generation, UnitDone(token=token, slot=slot)):
                done += 1


def _as_units(units: Iterable[WorkUnit | str]) -> tuple[WorkUnit, ...]:
    listed = tuple(u if isinstance(u, WorkUnit) else WorkUnit(u) for u in units)
    ids = Counter(u.id for u in listed)
    repeated = sorted(i for i, n in ids.items() if n > 1)
    if repeated:
        raise ConfigurationError(f"work unit ids must be unique; repeated: {', '.join(repeated[:10])}")
    return listed


def distribute(
    spark: SparkSession,
    units: Iterable[WorkUnit | str],
    process: Callable[[WorkUnit], Any],
    *,
    slots: int | None = None,
    placement: Mapping[str, str] | None = None,
    result_type: str | None = None,
    bootstrap_servers: str | None = None,
    replication_factor: int = 1,
    session_timeout_ms: int = 6_000,
    heartbeat_interval_ms: int = 1_000,
    max_unit_seconds: float = 300.0,
    on_progress: Callable[[Progress], None] | None = None,
    progress_interval: float = 5.0,
    timeout: float | None = None,
    allocator: str = ALLOCATOR,
    group_protocol: str = "classic",
    connection_options: Mapping[str, Any] | None = None,
) -> Distribution:
    """Process ``units`` on the Spark cluster, balanced by weight, sticky, surviving executor loss.

    One long-lived Spark task runs per slot; each is a member of the job's ``spark-executor``
    group. The group's leader allocates the units not yet done with :func:`allocate`; members
    process theirs, heaviest first, and record each completion through the coordinator, fenced
    by their generation. When an executor dies, its members' sessions expire and their undone
    units move to the survivors; executors that join take a share. Every unit completes once
    when nothing fails and at least once when executors die; the output holds exactly one
    result per unit.

    :param spark: the active SparkSession.
    :param units: :class:`WorkUnit` objects or plain ids (weight 1); ids must be unique, and a
        job holds at most 100,000 units with the embedded coordinator.
    :param process: ``process(unit) -> result``, run on the executors; results travel to the
        driver pickled. An exception fails the Spark task (Spark retries it as a new member).
    :param slots: tasks to run; default ``sparkContext.defaultParallelism`` (every core).
    :param placement: :attr:`Distribution.placement` of an earlier run, to keep units where
        they were.
    :param result_type: the Spark SQL type of the ``result`` column (e.g. ``"bigint"``,
        ``"string"``, ``"array<double>"``); None lets Spark infer it from the results.
    :param bootstrap_servers: a Kafka cluster (or a running coordinator) to coordinate through;
        None starts an embedded coordinator on the driver, at ``spark.driver.host``.
    :param replication_factor: for the job topic on a Kafka cluster.
    :param session_timeout_ms: how long after an executor dies its units move.
    :param heartbeat_interval_ms: heartbeat period (below a third of the session timeout).
    :param max_unit_seconds: the longest a unit may take: a rebalance waits this long for a
        busy member, and a member that does not finish a unit in time is dropped.
    :param on_progress: called on the driver every ``progress_interval`` seconds and at the end.
    :param progress_interval: seconds between progress reports (also logged at INFO on the
        ``coordinator_spark`` logger).
    :param timeout: give up (cancel the Spark job) after this many seconds; None waits.
    :param allocator: the allocator, by the name a plugin registered it under for protocol type
        ``spark-executor`` (default the built-in :func:`allocate`); the plugin must be installed
        where the executors run.
    :param connection_options: kafka-python's connection settings for a secured coordinator or
        Kafka cluster (``security_protocol``, ``ssl_cafile``, ``sasl_mechanism``,
        ``sasl_plain_username``, ``sasl_plain_password``, ...), for the driver's admin client
        and every member; pickled to the executors with the task, so give files that exist
        there (an SSLContext does not travel).
    :param group_protocol: ``"classic"`` (the default: the leader allocates, rebalances are
        eager) or ``"incremental"``: the coordinator allocates with its server-side assignor
        (:func:`~coordinator_spark.assign_units`) and each member reconciles on its own, so
        members whose units stay never stop when another joins or leaves. The assignor sees
        neither the units' weights and hosts nor which are done, and ``placement`` is not used.
        A coordinator that does not serve it (a Kafka cluster) gets the classic protocol, with
        a warning in the log (docs/spark.md, "Incremental rebalancing").
    :raises ConfigurationError: invalid arguments (the message says which).
    :raises DistributeError: the Spark job failed, or its tasks ended with units undone.
    """
    security = dict(connection_options or {})
    unknown = sorted(set(security) - CONNECTION_OPTIONS)
    if unknown:
        raise ConfigurationError(f"distribute: unknown connection option(s) {', '.join(unknown)}")
    from pyspark.sql import SparkSession

    if not isinstance(spark, SparkSession):
        raise ConfigurationError(f"distribute needs a SparkSession, got {type(spark).__name__}")
    if not callable(process):
        raise ConfigurationError(f"process must be callable, got {process!r}")
    if group_protocol not in _GROUP_PROTOCOLS:
        raise ConfigurationError(
            f"group_protocol must be one of {', '.join(map(repr, _GROUP_PROTOCOLS))}, got {group_protocol!r}"
        )
    group_id = f"spark-{uuid.uuid4().hex[:16]}"
    installed_plugins().assignors.choose(PROTOCOL_TYPE, allocator, group_id=group_id, what="allocator")
    listed = _as_units(units)
    sc = spark.sparkContext
    if slots is None:
        task_cpus = int(sc.getConf().get("spark.task.cpus", "1"))
        slots = max(1, sc.defaultParallelism // task_cpus)
    if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
        raise ConfigurationError(f"slots must be a positive integer, got {slots!r}")
    if bootstrap_servers is None and len(listed) > _MAX_UNITS:
        raise ConfigurationError(
            f"{len(listed)} units exceed the embedded coordinator's {_MAX_UNITS} per job; "
            "group them into larger units or split the job"
        )
    if not math.isfinite(max_unit_seconds) or max_unit_seconds <= 0:
        raise ConfigurationError(f"max_unit_seconds must be positive, got {max_unit_seconds!r}")
    if progress_interval <= 0:
        raise ConfigurationError(f"progress_interval must be positive, got {progress_interval!r}")
    if session_timeout_ms < 3 * heartbeat_interval_ms:
        raise ConfigurationError(
            f"session_timeout_ms ({session_timeout_ms}) must be at least three heartbeat intervals "
            f"({heartbeat_interval_ms} ms)"
        )
    if not listed:
        return _output(spark, listed, {}, [], 0.0, result_type)

    topic = f"{group_id}-units"
    driver_host = sc.getConf().get("spark.driver.host", "127.0.0.1")
    embedded: EmbeddedCoordinator | None = None
    if bootstrap_servers is None:
        embedded = EmbeddedCoordinator(
            host=driver_host,
            topics={topic: len(listed)},
            config=CoordinatorConfig(
                # Tasks start within a second or so of each other: one rebalance for all of them.
                initial_rebalance_delay_ms=200,
                min_session_timeout_ms=min(1_000, session_timeout_ms),
                # The incremental protocol: the coordinator sets the session and the heartbeat
                # interval; the job's own settings.
                consumer_group_session_timeout_ms=session_timeout_ms,
                consumer_group_heartbeat_interval_ms=heartbeat_interval_ms,
            ),
        ).start()
        bootstrap_servers = embedded.bootstrap_servers
    collector = ResultCollector(driver_host)
    observer = _JobObserver(group_id, bootstrap_servers, security)
    try:
        if embedded is None:
            observer.create_topic(topic, len(listed), replication_factor)
        task = _SlotTask(
            units=listed,
            process=process,
            group_id=group_id,
            bootstrap_servers=bootstrap_servers,
            topic=topic,
            collector=collector.address,
            authkey=collector.authkey,
            placement=dict(placement or {}),
            member_options={
                "session_timeout_ms": session_timeout_ms,
                "heartbeat_interval_ms": heartbeat_interval_ms,
                "rebalance_timeout_ms": int(max_unit_seconds * 1000),
                "allocator": allocator,
                "group_protocol": group_protocol,
                **security,
            },
        )
        committed, seconds = _run(
            spark,
            task,
            slots,
            collector,
            observer,
            topic,
            len(listed),
            on_progress,
            progress_interval,
            timeout,
        )
        return _output(spark, listed, committed, collector.deliveries(), seconds, result_type)
    finally:
        observer.close()
        collector.close()
        if embedded is not None:
            embedded.close()


def _run(
    spark: SparkSession,
    task: _SlotTask,
    slots: int,
    collector: ResultCollector,
    observer: _JobObserver,
    topic: str,
    total: int,
    on_progress: Callable[[Progress], None] | None,
    progress_interval: float,
    timeout: float | None,
) -> tuple[dict[int, str], float]:
    sc = spark.sparkContext
    outcome: dict[str, Any] = {}

    def run_job() -> None:
        sc.setJobGroup(task.group_id, f"coordinator_spark: {total} units over {slots} slots", True)
        try:
            outcome["tasks"] = sc.parallelize(range(slots), slots).mapPartitionsWithIndex(task).collect()
        except BaseException as exc:
            outcome["error"] = exc

    started = time.monotonic()
    job = threading.Thread(target=run_job, name=f"distribute-{task.group_id}", daemon=True)
    job.start()
    next_report = started + progress_interval
    committed: dict[int, str] = {}
    # Reading every partition's offset is O(units): poll less often for big jobs.
    pause = min(1.0, 0.05 + total / 100_000)
    while True:
        committed = completed_units(observer.committed_offsets(), topic)
        now = time.monotonic()
        if len(committed) >= total:
            collector.finish()
            break
        if not job.is_alive():
            error = outcome.get("error")
            raise DistributeError(
                f"the Spark job of group {task.group_id} ended with {len(committed)} of {total} units "
                f"done: {_first_cause(error)}"
            ) from error
        if timeout is not None and now - started > timeout:
            sc.cancelJobGroup(task.group_id)
            raise DistributeError(
                f"group {task.group_id}: {len(committed)} of {total} units done after {timeout} s; "
                "the Spark job was cancelled"
            )
        if now >= next_report:
            _report(on_progress, Progress(len(committed), total, collector.delivered(), now - started))
            next_report = now + progress_interval
        time.sleep(pause)
    seconds = time.monotonic() - started
    _report(on_progress, Progress(total, total, collector.delivered(), seconds))
    job.join()
    if "error" in outcome:
        # Every unit is done and its result on the driver; a task that failed afterwards (its
        # executor died while it was idle) changes nothing.
        log.warning("a task of group %s failed after the job completed: %s", task.group_id, outcome["error"])
    return committed, seconds


class UnitFailedError(Exception):
    """Raised on an executor when the work function raised for a unit (its message names the
    unit and the original error, which is chained)."""


def _first_cause(error: BaseException | None) -> str:
    """What went wrong, in its first line; the whole of it (a Spark error carries the worker's
    Python traceback, whose last line says what failed) after that."""
    if error is None:
        return "its tasks returned early"
    text = str(error).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    marker = f"{UnitFailedError.__name__}: "
    cause = next((line for line in reversed(lines) if marker in line), None)
    if cause is None or len(lines) == 1:
        return text
    return f"{cause.split(marker, 1)[1]}\n{text}"


def _report(on_progress: Callable[[Progress], None] | None, progress: Progress) -> None:
    log.info(
        "%d/%d units done (%d processed) after %.1f s",
        progress.done,
        progress.total,
        progress.processed,
        progress.seconds,
    )
    if on_progress is not None:
        on_progress(progress)


def _output(
    spark: SparkSession,
    units: Sequence[WorkUnit],
    committed: Mapping[int, str],
    deliveries: list[Delivery],
    seconds: float,
    result_type: str | None,
) -> Distribution:
    by_token = {d.token: d for d in deliveries}
    completions = []
    for index, unit in enumerate(units):
        token = UnitDone.from_commit_metadata(committed[index]).token
        delivery = by_token[token]
        completions.append(
            Completion(
                unit_id=unit.id,
                result=delivery.result,
                executor=delivery.executor_id,
                attempt=delivery.attempt,
                slot=delivery.slot,
                generation=delivery.generation,
            )
        )
    rows = [(c.unit_id, c.result, c.executor, c.attempt) for c in completions]
    columns = ["unit_id", "result", "executor", "attempt"]
    if result_type is not None or not rows:
        schema: Any = f"unit_id string, result {result_type or 'string'}, executor string, attempt int"
    else:
        schema = columns
    per_unit = Counter(d.unit for d in deliveries)
    return Distribution(
        dataframe=spark.createDataFrame(rows, schema),
        completions=tuple(completions),
        processed=len(deliveries),
        duplicates=len(deliveries) - len(units),
        reprocessed=tuple(units[i].id for i in sorted(i for i, n in per_unit.items() if n > 1)),
        deliveries=tuple(deliveries),
        placement={c.unit_id: c.slot for c in completions},
        seconds=seconds,
    )
