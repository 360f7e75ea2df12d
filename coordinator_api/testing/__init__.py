"""Test support for coordinator-api users and plugin authors.

* :class:`KafkaCluster`: a real Apache Kafka 4 cluster (1 or 3 KRaft brokers) on 127.0.0.1,
  fetched with Maven once, with broker faults (stop, SIGKILL, pause, restart).
* :class:`LibrdkafkaMockCluster`: librdkafka's built-in mock Kafka cluster (from the
  confluent-kafka wheel), an independent Kafka-protocol server to test members against.
* :class:`MemberFactory`: creates members of a Coordinator subclass against a coordinator with
  short timeouts, polls them until they settle, and closes them all.
* pytest fixtures (loaded automatically through the ``pytest11`` entry point):
  ``embedded_coordinator``, ``embedded_coordinator_config``, ``member_factory`` and
  ``kafka_cluster``.
"""

from coordinator_api.testing._fixtures import MemberFactory
from coordinator_api.testing._kafka_cluster import (
    KAFKA_VERSION,
    TEST_JVM_OPTIONS,
    KafkaBroker,
    KafkaCluster,
    KafkaClusterError,
    KafkaToolsMissing,
    free_port,
    kafka_classpath,
    run_kafka_tool,
)
from coordinator_api.testing._librdkafka_mock import (
    KAFKA_PYTHON_API_VERSION,
    LibrdkafkaMockCluster,
    LibrdkafkaMockError,
    LibrdkafkaMockUnavailable,
)

__all__ = [
    "KAFKA_PYTHON_API_VERSION",
    "KAFKA_VERSION",
    "KafkaBroker",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaToolsMissing",
    "LibrdkafkaMockCluster",
    "LibrdkafkaMockError",
    "LibrdkafkaMockUnavailable",
    "MemberFactory",
    "TEST_JVM_OPTIONS",
    "free_port",
    "kafka_classpath",
    "run_kafka_tool",
]
