"""Spark-executor work allocation as a coordinator-api plugin (protocol type ``spark-executor``).

Built in, and registered through the ``coordinator_api`` entry points exactly like a
third-party plugin. It provides:

* :func:`allocate`, a pure allocator over :class:`Executor` and :class:`WorkUnit`: balanced by
  weight per core, sticky when executors join or leave, locality aware;
* :func:`distribute`, the PySpark runner: one long-lived Spark task per executor slot, each a
  group member on a coordinator (embedded on the driver by default), completions recorded as
  generation-fenced offset commits, results returned as a DataFrame. pyspark is an optional
  extra (``pip install coordinator-api[spark]``) imported only when :func:`distribute` runs;
* :func:`assign_units`, the server-side assignor ``weighted-sticky`` that the embedded
  coordinator runs for members asking for ``group_protocol="incremental"``: :func:`allocate`
  over the members' cores, each member reconciling on its own (no group-wide rebalance);
* payload decoders, so ``coordinator-api groups GROUP`` shows each member's executor, host,
  cores and slot and the units it was given.

See docs/spark.md for the guide.
"""

from __future__ import annotations

from coordinator_api import (
    AssignorRegistry,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    ServerAssignorRegistry,
    hookimpl,
)
from coordinator_spark._allocator import allocate
from coordinator_spark._collector import Delivery
from coordinator_spark._identity import ExecutorIdentity, executor_identity
from coordinator_spark._member import SlotMember
from coordinator_spark._model import Allocation, AllocationError, DistributeError, Executor, WorkUnit
from coordinator_spark._payloads import (
    ALLOCATOR,
    PROTOCOL_TYPE,
    SERVER_ASSIGNOR,
    SlotAssignment,
    SlotMetadata,
    SlotProfile,
    UnitDone,
    describe_assignment,
    describe_metadata,
)
from coordinator_spark._runner import Completion, Distribution, Progress, distribute
from coordinator_spark._server_assignor import assign_units


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, SlotMember)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, ALLOCATOR, allocate)


@hookimpl
def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, SERVER_ASSIGNOR, assign_units)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_metadata, assignment=describe_assignment)


__all__ = [
    "ALLOCATOR",
    "PROTOCOL_TYPE",
    "SERVER_ASSIGNOR",
    "Allocation",
    "AllocationError",
    "Completion",
    "Delivery",
    "DistributeError",
    "Distribution",
    "Executor",
    "ExecutorIdentity",
    "Progress",
    "SlotAssignment",
    "UnitDone",
    "SlotMember",
    "SlotMetadata",
    "SlotProfile",
    "WorkUnit",
    "allocate",
    "assign_units",
    "describe_assignment",
    "describe_metadata",
    "distribute",
    "executor_identity",
]
