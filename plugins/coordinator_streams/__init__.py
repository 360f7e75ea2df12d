"""Streams-style task assignment with warmup ("learner") tasks (protocol type ``streams``).

Built in, and registered through the ``coordinator_api`` entry points exactly like a
third-party plugin. It provides:

* the model (:mod:`coordinator_streams._model`): tasks ``(subtopology, partition)``, stateful
  or stateless, and members with a capacity, a rack or client tags, per-task lags and the tasks
  they ran;
* two pure assignors: ``high-availability`` (:func:`assign_tasks`, KIP-441 as shipped in Kafka
  Streams: an active task goes only to a caught-up member, warmup replicas restore state on the
  balanced target first, standbys spread over racks, probing rebalances until balanced) and
  ``eager-sticky`` (:func:`assign_tasks_eager_sticky`, what Streams did before, the baseline);
* versioned payloads and decoders, so ``coordinator-api groups GROUP`` describes streams groups;
* :class:`StreamsGroupMember`, a group member on the Coordinator API: the application declares
  its tasks, reports lags when asked and receives active, standby and warmup tasks through
  callbacks; it schedules probing rebalances. With ``group_protocol="incremental"`` the
  coordinator assigns the active and standby tasks instead, and each member reconciles on its
  own;
* a server-side assignor for that (``sticky``, :func:`assign_tasks_sticky`: balanced by
  capacity, then sticky; standbys on other processes than their tasks' actives), registered
  for the embedded coordinator;
* :class:`SimulatedApplication` and :class:`GroupSimulation`: state stores that restore at a
  fixed rate on a clock, for tests, demos and the benchmark.

``docs/streams.md`` is the guide.
"""

from __future__ import annotations

from coordinator_api import (
    AssignorRegistry,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    hookimpl,
)
from coordinator_api._plugins import ServerAssignor
from coordinator_streams._high_availability import assign_tasks
from coordinator_streams._incremental import (
    SERVER_ASSIGNOR,
    StreamsMemberMetadata,
    assign_tasks_sticky,
    decode_member_metadata,
    encode_member_metadata,
    standby_group,
)
from coordinator_streams._member import StreamsGroupMember
from coordinator_streams._model import (
    DEFAULT_ACCEPTABLE_RECOVERY_LAG,
    DEFAULT_MAX_WARMUP_REPLICAS,
    DEFAULT_PROBING_REBALANCE_INTERVAL_MS,
    AssignmentConfig,
    ClientState,
    MemberTasks,
    StreamsAssignor,
    Task,
    TaskAssignment,
    TaskAssignmentError,
    TaskId,
)
from coordinator_streams._protocol import (
    PROTOCOL_TYPE,
    decode_assignment,
    decode_subscriptions,
    describe_assignment,
    describe_subscription,
    encode_assignment,
    encode_subscription,
)
from coordinator_streams._simulation import (
    ColdHandoff,
    GroupSimulation,
    SimulatedApplication,
    TimelineEvent,
    timeline_text,
)
from coordinator_streams._sticky import assign_tasks_eager_sticky

ASSIGNORS: dict[str, StreamsAssignor] = {
    "high-availability": assign_tasks,
    "eager-sticky": assign_tasks_eager_sticky,
}

SERVER_ASSIGNORS: dict[str, ServerAssignor] = {SERVER_ASSIGNOR: assign_tasks_sticky}
"""The server-side assignors of protocol type ``streams`` (the incremental protocol)."""


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, StreamsGroupMember)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    for name, assignor in ASSIGNORS.items():
        registry.register(PROTOCOL_TYPE, name, assignor)


@hookimpl
def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
    for name, assignor in SERVER_ASSIGNORS.items():
        registry.register(PROTOCOL_TYPE, name, assignor)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_subscription, assignment=describe_assignment)


__all__ = [
    "ASSIGNORS",
    "DEFAULT_ACCEPTABLE_RECOVERY_LAG",
    "DEFAULT_MAX_WARMUP_REPLICAS",
    "DEFAULT_PROBING_REBALANCE_INTERVAL_MS",
    "PROTOCOL_TYPE",
    "SERVER_ASSIGNORS",
    "AssignmentConfig",
    "ClientState",
    "ColdHandoff",
    "GroupSimulation",
    "MemberTasks",
    "SimulatedApplication",
    "StreamsAssignor",
    "StreamsGroupMember",
    "StreamsMemberMetadata",
    "Task",
    "TaskAssignment",
    "TaskAssignmentError",
    "TaskId",
    "TimelineEvent",
    "assign_tasks",
    "assign_tasks_eager_sticky",
    "assign_tasks_sticky",
    "decode_assignment",
    "decode_member_metadata",
    "decode_subscriptions",
    "describe_assignment",
    "describe_subscription",
    "encode_assignment",
    "encode_member_metadata",
    "encode_subscription",
    "standby_group",
    "timeline_text",
]
