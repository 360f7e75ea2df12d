"""Spark-executor work allocation as a coordinator-api plugin (protocol type ``spark-executor``).

Built in, and registered through the ``coordinator_api`` entry points exactly like a
third-party plugin. It provides:

* :func:`allocate`, a pure allocator over :class:`Executor` and :class:`WorkUnit`: balanced by
  weight per core, sticky when executors join or leave, locality aware;
* :func:`distribute`, the PySpark runner: one long-lived Spark task per executor slot, each a
  group member on a coordinator (embedded on the driver by default), completions recorded as
  generation-fenced offset commits, results returned as a DataFrame. pyspark is an optional
  extra (``pip install coordinator-api[spark]``) imported only when :func:`distribute` runs;
* payload decoders, so ``coordinator-api groups GROUP`` shows each member's executor, host,
  cores and slot and the units it was given.

See docs/spark.md for the guide.
"""

from __future__ import annotations

from coordinator_api import AssignorRegistry, PayloadDecoderRegistry, ProtocolRegistry, hookimpl
from coordinator_spark._allocator import allocate
from coordinator_spark._collector import Delivery
from coordinator_spark._identity import ExecutorIdentity, executor_identity
from coordinator_spark._member import SlotMember
from coordinator_spark._model import Allocation, AllocationError, DistributeError, Executor, WorkUnit
from coordinator_spark._payloads import (
    ALLOCATOR,
    PROTOCOL_TYPE,
    SlotAssignment,
    SlotMetadata,
    UnitDone,
    describe_assignment,
    describe_metadata,
)
from coordinator_spark._runner import Completion, Distribution, Progress, distribute


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, SlotMember)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, ALLOCATOR, allocate)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_metadata, assignment=describe_assignment)


__all__ = [
    "ALLOCATOR",
    "PROTOCOL_TYPE",
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
    "WorkUnit",
    "allocate",
    "describe_assignment",
    "describe_metadata",
    "distribute",
    "executor_identity",
]
