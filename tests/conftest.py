"""Fixtures shared by the test suite: a real embedded coordinator and a real 3-broker Apache Kafka
cluster on 127.0.0.1."""

from __future__ import annotations

import compileall
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from member_processes import crash_watch

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

# Reruns only for kafka-python 3.0.12's join stall, in tests marked kafka_python; pytester
# runs that rule on a test file of its own (tests/test_kafka_python_reruns.py).
pytest_plugins = ("kafka_python_reruns", "pytester")

# Spark JVMs started by the suite, in its processes and in those they start, run with the options
# of tests/spark_conf/spark-defaults.conf.
os.environ["SPARK_CONF_DIR"] = str(Path(__file__).resolve().parent / "spark_conf")

# Short sessions keep failure tests quick; the bounds still reject nonsense.
FAST_CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    min_session_timeout_ms=500,
    connections_max_idle_ms=600_000,
)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Compile the project's modules to bytecode once, before any test starts a process.

    The suite starts many Python processes (members, the CLI, benchmarks and their load
    generators) that import this project from its source tree. Where Python writes no bytecode
    (PYTHONDONTWRITEBYTECODE, set on the machines this suite is developed on), each of them
    would compile every module it imports again: 0.6 s of the CLI's 1.1 s start. Compiled here
    once, they all read it.

    pytest too keeps the test modules it rewrites (for its assertions) only where Python writes
    bytecode: it may here, in every pytest process of the suite, so that the suite's own pytest
    runs (tests/test_docs.py, the plugin guide's) read what the workers rewrote while
    collecting instead of rewriting every test module again."""
    sys.dont_write_bytecode = False
    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the controller compiled them before starting it
    root = Path(__file__).resolve().parent.parent
    for package in ("coordinator_api", "plugins", "bench", "tests", "contrib"):
        compileall.compile_dir(root / package, quiet=1)


def uses_kafka_cluster(item: pytest.Item) -> bool:
    return "kafka_cluster" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The suite runs on three workers (pytest-xdist, ``--dist loadgroup``): the tests on the
    session's Apache Kafka cluster all go to one of them, so one cluster is started."""
    for item in items:
        if uses_kafka_cluster(item):
            item.add_marker(pytest.mark.xdist_group("kafka"))


KAFKA_TEST_FAILED = pytest.StashKey[bool]()
KAFKA_TESTS_LEFT = pytest.StashKey[set[pytest.Item]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if report.failed and uses_kafka_cluster(item):
        item.stash[KAFKA_TEST_FAILED] = True
    return report


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    """The session's Kafka cluster (three JVMs, a tenth of a core or more even when idle) stops once
    every test of this process that uses it has passed, rather than at the end of the session.
    After a failure it stays until the end, for a rerun (tests/kafka_python_reruns.py)."""
    yield
    if not uses_kafka_cluster(item) or item.stash.get(KAFKA_TEST_FAILED, False):
        return
    session = item.session
    if KAFKA_TESTS_LEFT not in session.stash:  # the tests selected to run, known by now
        session.stash[KAFKA_TESTS_LEFT] = {i for i in session.items if uses_kafka_cluster(i)}
    left = session.stash[KAFKA_TESTS_LEFT]
    left.discard(item)
    if not left:
        cluster = getattr(item, "funcargs", {}).get("kafka_cluster")
        if isinstance(cluster, KafkaCluster):
            cluster.close()  # the session's own teardown closes it again, which does nothing


@pytest.fixture(autouse=True)
def member_processes_must_not_crash() -> Iterator[None]:
    """A member process (tests/member_processes.py) that the test did not end, yet ended with an
    error, fails the test: at its next wait, or else when the test is over."""
    with crash_watch():
        yield


@pytest.fixture
def fast_config() -> CoordinatorConfig:
    """The coordinator settings of the ``coordinator`` fixture."""
    return FAST_CONFIG


@pytest.fixture
def coordinator() -> Iterator[EmbeddedCoordinator]:
    """A running embedded coordinator with a 12-partition topic ``events``."""
    with EmbeddedCoordinator(topics={"events": 12}, config=FAST_CONFIG) as running:
        yield running


@pytest.fixture(scope="session")
def kafka_cluster_brokers() -> int:
    """The suite's Apache Kafka cluster has three brokers, so a group survives losing one."""
    return 3


@pytest.fixture
def kafka(kafka_cluster: KafkaCluster) -> Iterator[KafkaCluster]:
    """The session's 3-broker Apache Kafka cluster, made whole again after the test."""
    yield kafka_cluster
    for broker in kafka_cluster.brokers:
        if broker.paused:
            kafka_cluster.resume_broker(broker.node_id)
        if not broker.running:
            kafka_cluster.start_broker(broker.node_id)
