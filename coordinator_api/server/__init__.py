"""The embedded coordinator: a Kafka-protocol server for group coordination on one machine.

It speaks Kafka's wire protocol for ApiVersions, Metadata, FindCoordinator, the classic group
APIs (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), the incremental protocol of KIP-848
(ConsumerGroupHeartbeat, ConsumerGroupDescribe, and this project's GroupHeartbeat for other
protocol types), offsets (OffsetCommit, OffsetFetch, OffsetDelete), group and topic
administration (ListGroups, DescribeGroups, DeleteGroups, CreateTopics, CreatePartitions,
DeleteTopics), configs and client
quotas, SASL and TLS, and ACLs (DescribeAcls, CreateAcls, DeleteAcls, enforced with
``CoordinatorConfig(authorizer=True)``), so any Kafka client can use it for group membership.
docs/coordinator.md lists every API and version. It is a coordinator, not a log: Produce,
Fetch and ListOffsets are answered with an error.
"""

from coordinator_api._protocol import ErrorCode
from coordinator_api.server._config import CoordinatorConfig
from coordinator_api.server._embedded import EmbeddedCoordinator
from coordinator_api.server._listeners import Listener
from coordinator_api.server._messages import (
    GroupState,
    MembershipEvent,
)
from coordinator_api.server._recording import MembershipRecorder, recording_membership
from coordinator_api.server._sasl import SaslSettings
from coordinator_api.server._server import CoordinatorServer
from coordinator_api.server._state import GroupCoordinator
from coordinator_api.server._tls import TlsSettings

__all__ = [
    "CoordinatorConfig",
    "CoordinatorServer",
    "EmbeddedCoordinator",
    "ErrorCode",
    "GroupCoordinator",
    "GroupState",
    "Listener",
    "MembershipEvent",
    "MembershipRecorder",
    "SaslSettings",
    "TlsSettings",
    "recording_membership",
]
