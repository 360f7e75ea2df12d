"""Kafka's error codes, api keys and streams groups' status codes: the one table of each that
the member runtime, the embedded coordinator, the benchmarks and the tests all import (values and
names as Kafka's ``Errors``, ``ApiKeys`` and ``StreamsGroupHeartbeatResponse.Status`` enums have
them; tests/test_protocol_tables.py checks them against Apache Kafka's own jar).

Only codes this project sends or reacts to are listed; :func:`error_name` names any other
code by its number.
"""

from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Kafka protocol error codes, named as Kafka names them."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    INVALID_REQUEST = 42
    POLICY_VIOLATION = 44
    SECURITY_DISABLED = 54
    SASL_AUTHENTICATION_FAILED = 58
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNKNOWN_TOPIC_ID = 100
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    INVALID_REGULAR_EXPRESSION = 128
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132


class StreamsGroupStatus(enum.IntEnum):
    """What a StreamsGroupHeartbeat answer says holds for the group (KIP-1071), as Kafka's
    ``StreamsGroupHeartbeatResponse.Status`` names them."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5


class ApiKey(enum.IntEnum):
    """The Kafka APIs this project sends or serves, named as Kafka's ``ApiKeys`` names them."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DESCRIBE_CONFIGS = 32
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    LIST_CONFIG_RESOURCES = 74
    STREAMS_GROUP_HEARTBEAT = 88
    # This project's own APIs, in Kafka's framing (from 10000 up, far from Kafka's own keys).
    GROUP_HEARTBEAT = 10068
    GROUP_DESCRIBE = 10069


#: The most resources a group of the incremental protocol that is not a consumer group may have
#: (GroupHeartbeat; every resource group its members declare, together): each is assigned and
#: tracked one by one, by the coordinator and by the member.
MAX_GROUP_RESOURCES = 100_000


def error_name(code: int) -> str:
    """Kafka's name for ``code`` (``REBALANCE_IN_PROGRESS``), or ``error code N`` if unlisted."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error code {code}"
