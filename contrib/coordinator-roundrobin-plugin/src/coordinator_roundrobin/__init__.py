"""coordinator-roundrobin-plugin: a complete coordinator-api plugin, to read and to copy.

It provides the ``roundrobin-shards`` group protocol: each member of a group is configured with
the same shard names, and the group's leader deals them out round robin, each member taking at
most its capacity. Applications use it by protocol type, without importing this package::

    from coordinator_api import PluginRegistry

    protocols = PluginRegistry.load().protocols
    member = protocols.create("roundrobin-shards", "indexers", bootstrap, shards=["s0", "s1"])

How it is put together, which is all a plugin needs:

1. **The entry point.** ``pyproject.toml`` names this module in the ``coordinator_api``
   entry-point group; coordinator-api loads it and calls the hooks it implements::

       [project.entry-points.coordinator_api]
       roundrobin = "coordinator_roundrobin"

2. **The hooks.** The functions below, marked with ``hookimpl``, fill coordinator-api's
   registries: the protocol (a ``Coordinator`` subclass), its assignor, a decoder that prints
   its payloads in words, and a ``coordinator-api roundrobin-plan`` command.

3. **The pieces.** The assignor is a pure function over frozen dataclasses
   (:mod:`coordinator_roundrobin._assignor`, with worked examples); the payloads are versioned
   JSON that newer versions only append to (:mod:`coordinator_roundrobin._payloads`); the
   member (:mod:`coordinator_roundrobin._coordinator`) glues them to the group protocol.

4. **The tests.** coordinator-api's pytest plugin provides ``embedded_coordinator`` and
   ``member_factory``; a group test needs no Kafka.
"""

from __future__ import annotations

from coordinator_api import (
    AssignorRegistry,
    CommandRegistry,
    PayloadDecoderRegistry,
    ProtocolRegistry,
    hookimpl,
)
from coordinator_roundrobin import _command
from coordinator_roundrobin._assignor import ShardMember, assign_round_robin
from coordinator_roundrobin._coordinator import ASSIGNOR_NAME, PROTOCOL_TYPE, RoundRobinShardsCoordinator
from coordinator_roundrobin._payloads import (
    decode_assignment,
    decode_metadata,
    describe_assignment,
    describe_metadata,
    encode_assignment,
    encode_metadata,
)

__all__ = [
    "ASSIGNOR_NAME",
    "PROTOCOL_TYPE",
    "RoundRobinShardsCoordinator",
    "ShardMember",
    "assign_round_robin",
    "decode_assignment",
    "decode_metadata",
    "encode_assignment",
    "encode_metadata",
]


@hookimpl
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    registry.register(PROTOCOL_TYPE, RoundRobinShardsCoordinator)


@hookimpl
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    registry.register(PROTOCOL_TYPE, ASSIGNOR_NAME, assign_round_robin)


@hookimpl
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    registry.register(PROTOCOL_TYPE, metadata=describe_metadata, assignment=describe_assignment)


@hookimpl
def coordinator_api_register_cli_commands(registry: CommandRegistry) -> None:
    registry.register(
        "roundrobin-plan",
        help="show how roundrobin-shards would spread shards over members",
        configure=_command.configure,
        run=_command.run,
    )
