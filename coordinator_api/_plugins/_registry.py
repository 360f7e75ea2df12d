"""The registries plugins fill from their registry hooks.

Each registry hook receives one of these objects and calls its ``register`` method (tox 4's
``tox_register_tox_env(register)`` style) instead of returning values for the framework to
collect: a registration says what it registers, the registry checks it on the spot, and it
remembers which plugin registered what, so a duplicate names both plugins and
``coordinator-api plugins`` can say what each plugin provides.
"""

from __future__ import annotations

import abc
import argparse
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeAlias, TypeVar, final

from coordinator_api._errors import ConfigurationError
from coordinator_api._plugins._errors import DuplicateRegistrationError, NotRegisteredError, PluginError

if TYPE_CHECKING:
    from coordinator_api._coordinator import Coordinator

CoordinatorFactory: TypeAlias = Callable[..., "Coordinator"]
"""Makes a group member: called as ``factory(group_id, bootstrap_servers, **options)`` with the
options of :class:`~coordinator_api.Coordinator` plus the protocol's own. A ``Coordinator``
subclass is a factory."""

Assignor: TypeAlias = Callable[..., Any]
"""An assignor: a pure function whose signature is the contract of its protocol type, documented
by the plugin that provides the protocol type (ARCHITECTURE rule 1: ``assign(members, resources,
...) -> assignment`` over frozen dataclasses). The registry only files it by name."""

Resource: TypeAlias = tuple[str, int]
"""What a server-side assignor hands out: a partition as (topic, partition), or any named,
numbered resource of a protocol (a task, a work unit)."""


@final
@dataclass(frozen=True, kw_only=True)
class AssignmentSpec:
    """One member as the coordinator shows it to a server-side assignor.

    :ivar member_id: the member.
    :ivar instance_id: its static instance id, if any.
    :ivar rack: its rack, if it gave one.
    :ivar topics: the topics (resource groups) it subscribes to, each known to the coordinator.
    :ivar current: its current target: what the previous assignment gave it (for stickiness).
    :ivar metadata: what it tells its protocol type's assignor (a group of a protocol type other
        than ``consumer``: ``GroupSubscription.metadata``, in the plugin's own payload format;
        empty for consumer groups).
    """

    member_id: str
    instance_id: str | None
    rack: str | None
    topics: frozenset[str]
    current: frozenset[Resource]
    metadata: bytes = b""


ServerAssignor: TypeAlias = Callable[
    [Sequence[AssignmentSpec], Mapping[str, int]], Mapping[str, Iterable[Resource]]
]
"""A server-side assignor: ``assign(members, partition_counts) -> {member_id: resources}``.

Pure (ARCHITECTURE rule 1): the coordinator of the incremental protocol (KIP-848) calls it with
the members sorted by id and the partition count of every subscribed topic, and reconciles each
member towards its result on its own. It must give each resource to at most one member, and
only to members subscribed to its topic. To a member it gives exactly its current target it may
give that ``current`` object itself: the coordinator then knows without a comparison that the
member's target stayed the same."""


@final
@dataclass(frozen=True, kw_only=True)
class ClassicPayloads:
    """How a protocol type's classic payloads read as what its server-side assignors hand out,
    so the embedded coordinator can move a group between the classic protocol and the
    incremental one (KIP-848's online migration) with every member's assignment intact.

    :ivar subscription: a member's JoinGroup metadata -> (the topics it subscribes to, the
        resources it owns now, its rack or None).
    :ivar assignment: a SyncGroup assignment -> the resources it gives.
    :ivar encode_assignment: resources -> the SyncGroup assignment that gives them.

    ``subscription`` and ``assignment`` raise ValueError for bytes they cannot read.
    """

    subscription: Callable[[bytes], tuple[frozenset[str], frozenset[Resource], str | None]]
    assignment: Callable[[bytes], frozenset[Resource]]
    encode_assignment: Callable[[Iterable[Resource]], bytes]


DescribePayload: TypeAlias = Callable[[str, bytes], str]
"""Turns one payload of a protocol type into words: ``describe(protocol_name, payload) -> str``.
Raises :class:`~coordinator_api.PayloadError` for bytes it cannot decode."""

DIRECT = "(registered directly)"
"""The plugin name recorded for registrations made outside a plugin hook (tests, scripts)."""

_COMMAND_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@final
@dataclass(frozen=True)
class Registration(Generic[K, V]):
    """One thing a plugin registered.

    :ivar key: what it is registered under (a protocol type, or (protocol type, name), ...).
    :ivar value: the registered object.
    :ivar plugin: the name of the plugin that registered it.
    """

    key: K
    value: V
    plugin: str


class _RegistryBase(abc.ABC):
    """Remembers which plugin is registering, so every registration can be attributed."""

    what: ClassVar[str]

    def __init__(self) -> None:
        self._plugin = DIRECT

    @contextmanager
    def _registering_for(self, plugin: str) -> Iterator[None]:
        """Attribute the registrations made inside the block to ``plugin`` (the manager calls
        each plugin's hook inside one such block)."""
        previous, self._plugin = self._plugin, plugin
        try:
            yield
        finally:
            self._plugin = previous

    @abc.abstractmethod
    def summary(self) -> list[tuple[str, str]]:
        """(plugin, what it registered in words) pairs, in registration order."""


class _Registry(_RegistryBase, Generic[K, V]):
    """Entries by key, each with the plugin that registered it; duplicates are refused."""

    def __init__(self) -> None:
        super().__init__()
        self._entries: dict[K, Registration[K, V]] = {}

    def _add(self, key: K, value: V) -> None:
        existing = self._entries.get(key)
        if existing is not None:
            raise DuplicateRegistrationError(
                what=self.what,
                key=self._describe(key),
                first_plugin=existing.plugin,
                second_plugin=self._plugin,
            )
        self._entries[key] = Registration(key, value, self._plugin)

    def _lookup(self, key: K) -> Registration[K, V]:
        try:
            return self._entries[key]
        except KeyError:
            known = [self._describe(k) for k in self._entries]
            raise NotRegisteredError(what=self.what, key=self._describe(key), known=known) from None

    @staticmethod
    def _describe(key: K) -> str:
        return "/".join(key) if isinstance(key, tuple) else str(key)

    def registrations(self) -> list[Registration[K, V]]:
        """Everything registered, in registration order."""
        return list(self._entries.values())

    def summary(self) -> list[tuple[str, str]]:
        return [(r.plugin, f"{self.what} {self._describe(r.key)}") for r in self._entries.values()]

    def __len__(self) -> int:
        return len(self._entries)


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value or value != value.strip():
        raise ConfigurationError(
            f"a {what} must be a non-empty string without surrounding spaces, got {value!r}"
        )
    return value


@final
class ProtocolRegistry(_Registry[str, CoordinatorFactory]):
    """Group protocols by protocol type: what ``coordinator_api_register_protocols`` fills.

    A protocol is a :class:`~coordinator_api.Coordinator` subclass, or a factory that makes
    one; applications and tools find it by protocol type alone::

        member = registry.create("roundrobin-shards", "orders", bootstrap, shards=["a", "b"])
    """

    what = "protocol type"

    def register(self, protocol_type: str, factory: CoordinatorFactory) -> None:
        """Register the protocol for ``protocol_type``.

        :param protocol_type: the group's protocol type, as the members' ``protocol_type()``
            returns it (Kafka's JoinGroup ``protocol_type``), e.g. ``"roundrobin-shards"``.
        :param factory: a ``Coordinator`` subclass or a callable that returns one; it is called
            as ``factory(group_id, bootstrap_servers, **options)``.
        :raises DuplicateRegistrationError: another plugin registered this protocol type.
        """
        _check_name("protocol type", protocol_type)
        if not callable(factory):
            raise ConfigurationError(
                f"protocol type {protocol_type!r}: the factory must be a Coordinator subclass or a "
                f"callable returning a Coordinator, got {factory!r}"
            )
        self._add(protocol_type, factory)

    def get(self, protocol_type: str) -> CoordinatorFactory:
        """The factory registered for ``protocol_type``.

        :raises NotRegisteredError: no plugin registered it.
        """
        return self._lookup(protocol_type).value

    def create(
        self, protocol_type: str, group_id: str, bootstrap_servers: str | list[str], **options: Any
    ) -> Coordinator:
        """Make a member of ``group_id`` with the protocol registered for ``protocol_type``.

        :param options: settings of :class:`~coordinator_api.Coordinator` and of the protocol.
        :raises NotRegisteredError: no plugin registered the protocol type.
        :raises PluginError: the factory made a member of another protocol type.
        """
        registration = self._lookup(protocol_type)
        member = registration.value(group_id, bootstrap_servers, **options)
        actual = member.protocol_type()
        if actual != protocol_type:
            member.close()
            raise PluginError(
                f"plugin {registration.plugin!r} registered protocol type {protocol_type!r}, but its "
                f"factory made a member of protocol type {actual!r}; the plugin must register each "
                "Coordinator under the protocol type it reports"
            )
        return member

    def protocol_types(self) -> list[str]:
        """The registered protocol types, sorted."""
        return sorted(self._entries)

    def __contains__(self, protocol_type: object) -> bool:
        return protocol_type in self._entries


@final
class AssignorRegistry(_Registry[tuple[str, str], Assignor]):
    """Assignors by protocol type and name: what ``coordinator_api_register_assignors`` fills.

    In Kafka's classic protocol the names a member offers in JoinGroup are usually its
    assignors' names (``range``, ``roundrobin``, ...), so one protocol type can have several,
    and a plugin can add an assignor to a protocol type another plugin provides.
    """

    what = "assignor"

    def register(self, protocol_type: str, name: str, assignor: Assignor) -> None:
        """Register ``assignor`` as ``name`` for ``protocol_type``.

        :param protocol_type: the protocol type it assigns for.
        :param name: its name, unique within the protocol type.
        :param assignor: a pure function with the signature the protocol type documents.
        :raises DuplicateRegistrationError: another plugin registered this name for the type.
        """
        _check_name("protocol type", protocol_type)
        _check_name("assignor name", name)
        if not callable(assignor):
            raise ConfigurationError(
                f"assignor {protocol_type}/{name}: expected a function, got {assignor!r}"
            )
        self._add((protocol_type, name), assignor)

    def get(self, protocol_type: str, name: str) -> Assignor:
        """The assignor ``name`` of ``protocol_type``.

        :raises NotRegisteredError: no plugin registered it.
        """
        return self._lookup((protocol_type, name)).value

    def names(self, protocol_type: str) -> list[str]:
        """The names of the assignors registered for ``protocol_type``, sorted."""
        return sorted(name for kind, name in self._entries if kind == protocol_type)

    def choose(self, protocol_type: str, name: str, *, group_id: str, what: str = "assignor") -> Assignor:
        """The assignor a member of ``group_id`` was configured with, checked when it is made.

        :param what: what the protocol type calls its assignor, for the message.
        :raises ConfigurationError: no plugin registered ``name`` for ``protocol_type``; the
            message lists the names that are registered.
        """
        known = self.names(protocol_type)
        if name not in known:
            raise ConfigurationError(
                f"group {group_id!r}: unknown {what} {name!r}; choose one of {', '.join(known)} "
                f"(or install a plugin that registers it for protocol type {protocol_type!r})"
            )
        return self.get(protocol_type, name)


@final
class ServerAssignorRegistry(_Registry[tuple[str, str], ServerAssignor]):
    """Server-side assignors by protocol type and name: what
    ``coordinator_api_register_server_assignors`` fills.

    The embedded coordinator runs them for groups of the incremental protocol (KIP-848): a
    ``consumer`` group's members ask for one by name (``group.remote.assignor``), as Apache
    Kafka's brokers offer ``uniform`` and ``range``.
    """

    what = "server-side assignor"

    def __init__(self) -> None:
        super().__init__()
        self._classic: dict[str, Registration[str, ClassicPayloads]] = {}

    def register(self, protocol_type: str, name: str, assignor: ServerAssignor) -> None:
        """Register ``assignor`` as the server-side assignor ``name`` of ``protocol_type``.

        :raises DuplicateRegistrationError: another plugin registered this name for the type.
        """
        _check_name("protocol type", protocol_type)
        _check_name("server-side assignor name", name)
        if not callable(assignor):
            raise ConfigurationError(
                f"server-side assignor {protocol_type}/{name}: expected a function, got {assignor!r}"
            )
        self._add((protocol_type, name), assignor)

    def get(self, protocol_type: str, name: str) -> ServerAssignor:
        """The server-side assignor ``name`` of ``protocol_type``.

        :raises NotRegisteredError: no plugin registered it.
        """
        return self._lookup((protocol_type, name)).value

    def of(self, protocol_type: str) -> dict[str, ServerAssignor]:
        """Every server-side assignor of ``protocol_type``, by name (sorted)."""
        return {name: self.get(kind, name) for kind, name in sorted(self._entries) if kind == protocol_type}

    def protocol_types(self) -> list[str]:
        """The protocol types that have server-side assignors (sorted)."""
        return sorted({kind for kind, _ in self._entries})

    def register_classic_payloads(self, protocol_type: str, payloads: ClassicPayloads) -> None:
        """Say how ``protocol_type``'s classic payloads read, so its groups can move between
        the classic protocol and the incremental one while members of both are in them.

        :raises DuplicateRegistrationError: another plugin registered them for the type.
        """
        _check_name("protocol type", protocol_type)
        if not isinstance(payloads, ClassicPayloads):
            raise ConfigurationError(
                f"classic payloads of {protocol_type}: expected ClassicPayloads, got {payloads!r}"
            )
        existing = self._classic.get(protocol_type)
        if existing is not None:
            raise DuplicateRegistrationError(
                what="classic payloads",
                key=protocol_type,
                first_plugin=existing.plugin,
                second_plugin=self._plugin,
            )
        self._classic[protocol_type] = Registration(protocol_type, payloads, self._plugin)

    def classic_payloads(self, protocol_type: str) -> ClassicPayloads | None:
        """The classic payloads of ``protocol_type``, if a plugin registered them."""
        registration = self._classic.get(protocol_type)
        return registration.value if registration is not None else None

    def summary(self) -> list[tuple[str, str]]:
        return [
            *super().summary(),
            *((r.plugin, f"classic payloads {r.key}") for r in self._classic.values()),
        ]


@final
@dataclass(frozen=True)
class PayloadDecoder:
    """Turns a protocol type's payloads into words.

    :ivar metadata: describes a member's metadata (what it sent in JoinGroup).
    :ivar assignment: describes a member's assignment (what it received in SyncGroup).
    """

    metadata: DescribePayload
    assignment: DescribePayload


@final
class PayloadDecoderRegistry(_Registry[str, PayloadDecoder]):
    """Payload decoders by protocol type: what ``coordinator_api_register_payload_decoders``
    fills, so tools can print a group's metadata and assignments in words."""

    what = "payload decoder"

    def register(self, protocol_type: str, *, metadata: DescribePayload, assignment: DescribePayload) -> None:
        """Register how to describe the payloads of ``protocol_type``.

        :param protocol_type: the protocol type whose payloads these functions read.
        :param metadata: ``(protocol_name, metadata_bytes) -> str``.
        :param assignment: ``(protocol_name, assignment_bytes) -> str``.
        :raises DuplicateRegistrationError: another plugin registered a decoder for the type.
        """
        _check_name("protocol type", protocol_type)
        if not callable(metadata) or not callable(assignment):
            raise ConfigurationError(
                f"payload decoder {protocol_type}: metadata and assignment must be functions"
            )
        self._add(protocol_type, PayloadDecoder(metadata=metadata, assignment=assignment))

    def get(self, protocol_type: str) -> PayloadDecoder:
        """The decoder registered for ``protocol_type``.

        :raises NotRegisteredError: no plugin registered one.
        """
        return self._lookup(protocol_type).value

    def describe_metadata(self, protocol_type: str, protocol: str, metadata: bytes) -> str:
        """``metadata`` in words, or its size and leading bytes when no plugin can read it."""
        entry = self._entries.get(protocol_type)
        return _undecoded(metadata) if entry is None else entry.value.metadata(protocol, metadata)

    def describe_assignment(self, protocol_type: str, protocol: str, assignment: bytes) -> str:
        """``assignment`` in words, or its size and leading bytes when no plugin can read it."""
        entry = self._entries.get(protocol_type)
        return _undecoded(assignment) if entry is None else entry.value.assignment(protocol, assignment)


def _undecoded(payload: bytes) -> str:
    preview = payload[:16].hex()
    return f"{len(payload)} bytes ({preview}{'...' if len(payload) > 16 else ''}; no decoder installed)"


@final
@dataclass(frozen=True)
class Command:
    """A ``coordinator-api`` subcommand a plugin provides.

    :ivar name: the subcommand, e.g. ``roundrobin-plan``.
    :ivar help: one line for ``coordinator-api --help``.
    :ivar run: runs the command with the parsed arguments; returns the exit status.
    :ivar configure: adds the command's arguments to its parser, if it has any.
    """

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    configure: Callable[[argparse.ArgumentParser], None] | None = None


@final
class CommandRegistry(_Registry[str, Command]):
    """``coordinator-api`` subcommands: what ``coordinator_api_register_cli_commands`` fills."""

    what = "command"

    def register(
        self,
        name: str,
        *,
        help: str,
        run: Callable[[argparse.Namespace], int],
        configure: Callable[[argparse.ArgumentParser], None] | None = None,
    ) -> None:
        """Register the subcommand ``coordinator-api NAME``.

        :param name: lower-case letters, digits and dashes, e.g. ``roundrobin-plan``.
        :param help: one line for ``coordinator-api --help``.
        :param run: ``run(args) -> exit status``, called with the parsed arguments.
        :param configure: ``configure(parser)`` adds the command's arguments.
        :raises DuplicateRegistrationError: another plugin registered a command of this name.
        """
        if not isinstance(name, str) or not _COMMAND_NAME.match(name):
            raise ConfigurationError(
                f"a command name must be lower-case letters, digits and dashes, got {name!r}"
            )
        if not callable(run) or (configure is not None and not callable(configure)):
            raise ConfigurationError(f"command {name!r}: run and configure must be functions")
        self._add(name, Command(name=name, help=help, run=run, configure=configure))

    def get(self, name: str) -> Command:
        """The command called ``name``.

        :raises NotRegisteredError: no plugin registered it.
        """
        return self._lookup(name).value

    def commands(self) -> list[Command]:
        """The registered commands, sorted by name."""
        return [self._entries[name].value for name in sorted(self._entries)]
