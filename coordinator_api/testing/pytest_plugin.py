"""pytest fixtures for testing coordinator-api plugins and applications.

Installed with coordinator-api and loaded by pytest through the ``pytest11`` entry point
``coordinator_api``, so a plugin's tests can use them without a conftest:

* ``embedded_coordinator``: a running :class:`~coordinator_api.EmbeddedCoordinator` on
  127.0.0.1, configured for tests (``embedded_coordinator_config``).
* ``embedded_coordinator_config``: its :class:`~coordinator_api.CoordinatorConfig`; override
  this fixture to change the settings.
* ``member_factory``: a :class:`~coordinator_api.testing._fixtures.MemberFactory` that makes
  members against ``embedded_coordinator`` with short session and heartbeat settings, settles
  a group, and closes every member it made at teardown.
* ``kafka_cluster``: a real Apache Kafka 4 cluster (:class:`~coordinator_api.testing.KafkaCluster`)
  on 127.0.0.1, started once per test session and shared; ``kafka_cluster_brokers`` (1 unless
  overridden, e.g. 3 for broker-failure tests) sets its size. Needs ``java`` and ``mvn``; the
  first run fetches Kafka with Maven into ``~/.cache/coordinator-api``.

::

    def test_two_members_split_the_shards(member_factory):
        first = member_factory(RoundRobinShardsCoordinator, "orders", shards=["a", "b"])
        second = member_factory(RoundRobinShardsCoordinator, "orders", shards=["a", "b"])
        member_factory.settle(first, second)
        assert sorted(first.owned_shards + second.owned_shards) == ["a", "b"]
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.testing._fixtures import TEST_COORDINATOR_CONFIG, MemberFactory
from coordinator_api.testing._kafka_cluster import KafkaCluster

__all__ = [
    "embedded_coordinator",
    "embedded_coordinator_config",
    "kafka_cluster",
    "kafka_cluster_brokers",
    "member_factory",
]


@pytest.fixture
def embedded_coordinator_config() -> CoordinatorConfig:
    """Settings of ``embedded_coordinator``: no initial rebalance delay, sessions from 500 ms."""
    return TEST_COORDINATOR_CONFIG


@pytest.fixture
def embedded_coordinator(embedded_coordinator_config: CoordinatorConfig) -> Iterator[EmbeddedCoordinator]:
    """A running embedded coordinator on 127.0.0.1 with state in memory, stopped at teardown."""
    with EmbeddedCoordinator(config=embedded_coordinator_config) as coordinator:
        yield coordinator


@pytest.fixture
def member_factory(embedded_coordinator: EmbeddedCoordinator) -> Iterator[MemberFactory]:
    """Makes members against ``embedded_coordinator``; closes them all at teardown."""
    factory = MemberFactory(embedded_coordinator.bootstrap_servers)
    try:
        yield factory
    finally:
        factory.close_all()


@pytest.fixture(scope="session")
def kafka_cluster_brokers() -> int:
    """How many brokers ``kafka_cluster`` runs: 1; override it (session scope) for 3."""
    return 1


@pytest.fixture(scope="session")
def kafka_cluster(kafka_cluster_brokers: int) -> Iterator[KafkaCluster]:
    """A running Apache Kafka cluster on 127.0.0.1, shared by the test session.

    Tests that stop, kill or pause a broker should start it again before they end
    (``kafka_cluster.start_broker(node_id)``), so later tests find the whole cluster.
    """
    with KafkaCluster(brokers=kafka_cluster_brokers) as cluster:
        yield cluster
