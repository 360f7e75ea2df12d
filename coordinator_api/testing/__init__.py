"""Test support for coordinator-api users and plugin authors.

* :class:`LibrdkafkaMockCluster`: librdkafka's built-in mock Kafka cluster (from the
  confluent-kafka wheel), an independent Kafka-protocol server to test members against.
"""

from coordinator_api.testing._librdkafka_mock import (
    KAFKA_PYTHON_API_VERSION,
    LibrdkafkaMockCluster,
    LibrdkafkaMockError,
    LibrdkafkaMockUnavailable,
)

__all__ = [
    "KAFKA_PYTHON_API_VERSION",
    "LibrdkafkaMockCluster",
    "LibrdkafkaMockError",
    "LibrdkafkaMockUnavailable",
]
