"""coordinator-api: a pluggable, typed group-coordination framework on Kafka's group protocol.

Subclass :class:`Coordinator` to build a distributed system on Kafka's group membership
protocol; run :class:`EmbeddedCoordinator` to coordinate groups on one machine without Kafka.
"""

from coordinator_api._aio import AsyncCoordinator
from coordinator_api._claims import trusted_claims
from coordinator_api._coordinator import Coordinator
from coordinator_api._errors import (
    CallbackError,
    CommitFailedError,
    ConfigurationError,
    CoordinatorApiError,
    CoordinatorClosedError,
    CoordinatorStartError,
    FencedInstanceError,
    GroupError,
    GroupJoinError,
    GroupTimeoutError,
    InvalidAssignmentError,
    InvalidMetadataError,
    PayloadError,
)
from coordinator_api._membership._group_heartbeat import GroupSubscription, KafkaStreamsGroup
from coordinator_api._membership._session import CONNECTION_OPTIONS
from coordinator_api._payload import decode, decode_members, encode, payload, peek_version, since
from coordinator_api._plugins import (
    AssignmentSpec,
    AssignorRegistry,
    ClassicPayloads,
    CommandRegistry,
    DuplicateRegistrationError,
    MemberEvent,
    NotRegisteredError,
    PayloadDecoderRegistry,
    PluginError,
    PluginLoadError,
    PluginRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    get_plugin_manager,
    hookimpl,
    installed_plugins,
)
from coordinator_api._signals import exit_on_sigterm
from coordinator_api._types import NO_GENERATION, Generation, JoinedMember
from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator, Listener, SaslSettings, TlsSettings

__all__ = [
    "CONNECTION_OPTIONS",
    "NO_GENERATION",
    "AssignmentSpec",
    "ClassicPayloads",
    "AssignorRegistry",
    "AsyncCoordinator",
    "CallbackError",
    "CommitFailedError",
    "ConfigurationError",
    "Coordinator",
    "CommandRegistry",
    "CoordinatorApiError",
    "CoordinatorClosedError",
    "CoordinatorConfig",
    "CoordinatorStartError",
    "DuplicateRegistrationError",
    "EmbeddedCoordinator",
    "exit_on_sigterm",
    "FencedInstanceError",
    "Generation",
    "GroupError",
    "GroupJoinError",
    "GroupSubscription",
    "KafkaStreamsGroup",
    "GroupTimeoutError",
    "InvalidAssignmentError",
    "InvalidMetadataError",
    "JoinedMember",
    "Listener",
    "MemberEvent",
    "NotRegisteredError",
    "PayloadDecoderRegistry",
    "PayloadError",
    "PluginError",
    "PluginLoadError",
    "PluginRegistry",
    "ProtocolRegistry",
    "SaslSettings",
    "ServerAssignorRegistry",
    "TlsSettings",
    "decode",
    "decode_members",
    "encode",
    "get_plugin_manager",
    "hookimpl",
    "installed_plugins",
    "trusted_claims",
    "payload",
    "peek_version",
    "since",
]
