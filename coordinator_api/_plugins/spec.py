"""The hooks a coordinator-api plugin can implement: every hookspec, in this one typed module.

A plugin is a module (or any object) with functions named after these hooks and marked with
``hookimpl``; it is found through the ``coordinator_api`` entry-point group. A hook
implementation may accept fewer arguments than the spec (pluggy passes only those it names).

The registry hooks receive a registry object and call its ``register`` method; each plugin's
hook is called once, in registration order (built-in plugins first), and what it registers is
attributed to it, so a duplicate names both plugins. ``docs/plugins.md`` documents every hook
here (a test checks that it does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from coordinator_api._plugins._markers import hookspec

if TYPE_CHECKING:
    from coordinator_api._plugins._events import MemberEvent
    from coordinator_api._plugins._registry import (
        AssignorRegistry,
        CommandRegistry,
        PayloadDecoderRegistry,
        ProtocolRegistry,
        ServerAssignorRegistry,
    )


@hookspec
def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
    """Register the group protocols this plugin provides, by protocol type.

    A protocol is a :class:`~coordinator_api.Coordinator` subclass (or a factory returning
    one) whose ``protocol_type()`` is the type it is registered under. Applications and tools
    then make members by protocol type alone, without importing the plugin::

        @hookimpl
        def coordinator_api_register_protocols(registry: ProtocolRegistry) -> None:
            registry.register("roundrobin-shards", RoundRobinShardsCoordinator)

    :param registry: call ``registry.register(protocol_type, factory)`` once per protocol;
        registering a protocol type another plugin registered raises
        :class:`~coordinator_api._plugins.DuplicateRegistrationError`.
    """


@hookspec
def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
    """Register assignors, by protocol type and name.

    An assignor is a pure function (no I/O, no clock, deterministic for sorted inputs) whose
    signature is the contract of its protocol type, documented by the plugin that provides the
    protocol type. A plugin may add assignors to a protocol type another plugin provides::

        @hookimpl
        def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
            registry.register("roundrobin-shards", "roundrobin", assign_round_robin)

    :param registry: call ``registry.register(protocol_type, name, assignor)`` once per
        assignor; a (protocol type, name) pair another plugin registered raises
        :class:`~coordinator_api._plugins.DuplicateRegistrationError`.
    """


@hookspec
def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
    """Register server-side assignors, by protocol type and name.

    The embedded coordinator runs them for groups of the incremental rebalance protocol
    (KIP-848), where the coordinator, not a member, computes the target assignment. A
    server-side assignor is a pure function ``assign(members, partition_counts) ->
    {member_id: [(topic, partition), ...]}`` over :class:`~coordinator_api.AssignmentSpec`
    members (the ``consumer`` plugin registers Kafka's ``uniform`` and ``range``)::

        @hookimpl
        def coordinator_api_register_server_assignors(registry: ServerAssignorRegistry) -> None:
            registry.register("consumer", "uniform", uniform_server_assignor)

    :param registry: call ``registry.register(protocol_type, name, assignor)`` once per
        assignor; a (protocol type, name) pair another plugin registered raises
        :class:`~coordinator_api._plugins.DuplicateRegistrationError`.
    """


@hookspec
def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
    """Register how to print the payloads of a protocol type in words.

    Members' metadata and assignments are bytes only their protocol understands; a decoder
    lets tools show a group's assignment as, say, ``shards s0, s2`` instead of hex::

        @hookimpl
        def coordinator_api_register_payload_decoders(registry: PayloadDecoderRegistry) -> None:
            registry.register(
                "roundrobin-shards", metadata=describe_metadata, assignment=describe_assignment
            )

    :param registry: call ``registry.register(protocol_type, metadata=fn, assignment=fn)``
        where each ``fn(protocol_name, payload) -> str`` raises
        :class:`~coordinator_api.PayloadError` for bytes it cannot read.
    """


@hookspec
def coordinator_api_register_cli_commands(registry: CommandRegistry) -> None:
    """Add subcommands to the ``coordinator-api`` command.

    ::

        @hookimpl
        def coordinator_api_register_cli_commands(registry: CommandRegistry) -> None:
            registry.register("roundrobin-plan", help="show how shards would be spread",
                              configure=add_arguments, run=run_plan)

    :param registry: call ``registry.register(name, help=..., run=..., configure=...)``;
        ``configure(parser)`` adds the command's arguments to its ``argparse`` parser and
        ``run(args) -> int`` runs it and returns the exit status. A name taken by a built-in
        command or another plugin raises
        :class:`~coordinator_api._plugins.DuplicateRegistrationError`.
    """


@hookspec
def coordinator_api_on_member_event(event: MemberEvent) -> None:
    """Observe a member's life: it joined, got its assignment, gave it up, lost it, or left.

    Called for every event of every member in this process, unless the member was given a
    plugin manager of its own (``plugin_manager=``; then that manager's plugins observe it),
    possibly on a member's heartbeat thread (``lost``): return quickly and do not block. An
    observer that raises is logged and skipped; it never breaks the member::

        @hookimpl
        def coordinator_api_on_member_event(event: MemberEvent) -> None:
            REBALANCE_SECONDS.labels(event.group_id, event.kind).observe((event.duration_ms or 0) / 1000)

    :param event: what happened: ``event.kind`` (``joined``, ``assigned``, ``revoked``,
        ``lost``, ``left``), the group, the member, the generation, the protocol, how long the
        step took (``duration_ms``) and a ``detail`` in words.
    """
