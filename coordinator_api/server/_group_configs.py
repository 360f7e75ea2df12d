"""A group's own configs (KIP-848): the session and heartbeat interval the coordinator gives the
members of one group, and how often it computes the group's target assignment, set with Kafka's
``kafka-configs --entity-type groups`` (IncrementalAlterConfigs) and read back with
DescribeConfigs, checked and answered as Apache Kafka 4's brokers check and answer them (pure:
the shell stores and applies what this decides).

Under the incremental protocol the coordinator, not the client, sets a member's session and its
heartbeat interval: ``consumer_group_session_timeout_ms`` and
``consumer_group_heartbeat_interval_ms`` for every group, and a group's own
``consumer.session.timeout.ms`` and ``consumer.heartbeat.interval.ms`` where it has them; the
same for ``consumer.assignment.interval.ms`` (KIP-1263). Kafka's other group configs
(``share.*``, ``streams.*``, ``consumer.assignor.offload.enable``) concern what this coordinator
does not have (share groups, Kafka Streams groups, assignors run off the coordinator's thread)
and are refused with words saying so, never stored without an effect.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from coordinator_api._protocol import ErrorCode
from coordinator_api.server._config import CoordinatorConfig

#: ConfigResource's type for a group (KIP-848), in DescribeConfigs, IncrementalAlterConfigs and
#: ListConfigResources.
GROUP_RESOURCE = 32

#: Group configs Apache Kafka 4.3 knows and this coordinator does not serve.
NOT_SERVED = frozenset(
    {
        "consumer.assignor.offload.enable",
        "share.session.timeout.ms",
        "share.heartbeat.interval.ms",
        "share.record.lock.duration.ms",
        "share.delivery.count.limit",
        "share.partition.max.record.locks",
        "share.auto.offset.reset",
        "share.isolation.level",
        "share.renew.acknowledge.enable",
        "share.assignment.interval.ms",
        "share.assignor.offload.enable",
        "streams.session.timeout.ms",
        "streams.heartbeat.interval.ms",
        "streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms",
        "streams.assignment.interval.ms",
        "streams.assignor.offload.enable",
    }
)


class ConfigSource(enum.IntEnum):
    """Where a described value comes from, numbered as DescribeConfigs numbers it."""

    STATIC_BROKER_CONFIG = 4  # the server's config sets it
    DEFAULT_CONFIG = 5  # nobody sets it
    GROUP_CONFIG = 8  # the group's own config sets it


class ConfigOperation(enum.IntEnum):
    """IncrementalAlterConfigs' operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


#: DescribeConfigs' ConfigType of an integer config (v3+).
INT_TYPE = 3


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str
    source: ConfigSource


@dataclass(frozen=True)
class ConfigEntry:
    """One config of a group as DescribeConfigs lists it: its effective value, where that comes
    from, and the values it would otherwise have (the synonyms, the group's own first)."""

    name: str
    value: str
    source: ConfigSource
    synonyms: tuple[Synonym, ...]
    documentation: str


@dataclass(frozen=True)
class Alteration:
    """One config change of an IncrementalAlterConfigs resource, as the client sent it
    (``operation`` unchecked: any int8)."""

    name: str
    operation: int
    value: str | None


class GroupConfigError(Exception):
    """A request about a group's configs that Kafka refuses, with Kafka's error and words."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


@dataclass(frozen=True)
class _Key:
    """A group config, ``consumer.<setting>``, and the server settings behind it."""

    setting: str  # session.timeout.ms
    documentation: str
    least: int = 1  # what a value may be at the least (Kafka's ConfigDef: atLeast)

    @property
    def name(self) -> str:
        return f"consumer.{self.setting}"

    @property
    def broker_name(self) -> str:  # the server's own value, as Kafka names it
        return f"group.consumer.{self.setting}"

    def bound_name(self, bound: str) -> str:  # group.consumer.min.session.timeout.ms
        return f"group.consumer.{bound}.{self.setting}"

    def field(self, bound: str = "") -> str:  # consumer_group_min_session_timeout_ms
        return "consumer_group_" + (f"{bound}_" if bound else "") + self.setting.replace(".", "_")


_SESSION = _Key(
    "session.timeout.ms",
    "How long a member of this group may go without a heartbeat before the coordinator removes "
    "it, in milliseconds.",
)
_HEARTBEAT = _Key("heartbeat.interval.ms", "How often the members of this group heartbeat, in milliseconds.")
_ASSIGNMENT = _Key(
    "assignment.interval.ms",
    "How often, at most, the coordinator computes a new target assignment for this group, in "
    "milliseconds (0: at every change).",
    least=0,
)
#: In the order Kafka 4.3's DescribeConfigs lists them.
_KEYS = (_SESSION, _ASSIGNMENT, _HEARTBEAT)
#: In the order Kafka 4.3's ``GroupConfig.validate`` checks their bounds.
_CHECKED = (_HEARTBEAT, _SESSION, _ASSIGNMENT)
SESSION_TIMEOUT, HEARTBEAT_INTERVAL, ASSIGNMENT_INTERVAL = _SESSION.name, _HEARTBEAT.name, _ASSIGNMENT.name
_BY_NAME = {k.name: k for k in _KEYS}
#: The group configs this coordinator serves.
GROUP_CONFIG_KEYS = frozenset(_BY_NAME)
# Kafka's ConfigDef reads an INT as Java's Integer.parseInt of the text trimmed as Java trims it
# (every character up to the space): an optional sign and ASCII digits, within 32 bits.
_INT = re.compile(r"([+-]?)0*([0-9]{1,10})")
_TRIMMED = "".join(map(chr, range(33)))
_INT_RANGE = (-(2**31), 2**31 - 1)
_CONFIG_DEFAULTS = {f.name: f.default for f in fields(CoordinatorConfig)}


def _parse_int(key: _Key, text: str) -> int:
    number = _INT.fullmatch(text.strip(_TRIMMED))
    value = int(number[1] + number[2]) if number is not None else None
    if value is None or not _INT_RANGE[0] <= value <= _INT_RANGE[1]:
        raise GroupConfigError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {text} for configuration {key.name}: Not a number of type INT",
        )
    if value < key.least:
        raise GroupConfigError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid value {value} for configuration {key.name}: Value must be at least {key.least}",
        )
    return value


class GroupConfigs:
    """The groups' own configs, checked against the server's bounds.

    :param config: the server's settings: its own session and interval (each group's default)
        and the bounds of what a group may set.
    """

    def __init__(self, config: CoordinatorConfig) -> None:
        self._config = config
        self._values: dict[str, dict[str, int]] = {}

    def groups(self) -> list[str]:
        """The groups that have a config of their own (ListConfigResources), sorted."""
        return sorted(self._values)

    def values(self, group_id: str) -> dict[str, int]:
        """``group_id``'s own configs (none: an empty mapping)."""
        return dict(self._values.get(group_id, {}))

    def timeouts(self, group_id: str) -> tuple[int, int]:
        """The session and heartbeat interval, in ms, the members of ``group_id`` get."""
        own = self._values.get(group_id, {})
        return (
            own.get(SESSION_TIMEOUT, self._config.consumer_group_session_timeout_ms),
            own.get(HEARTBEAT_INTERVAL, self._config.consumer_group_heartbeat_interval_ms),
        )

    def assignment_interval(self, group_id: str) -> int:
        """How often, at most, in ms, the coordinator computes ``group_id``'s target (0: at once)."""
        return self._values.get(group_id, {}).get(
            ASSIGNMENT_INTERVAL, self._config.consumer_group_assignment_interval_ms
        )

    def describe(self, group_id: str, keys: Sequence[str] | None) -> list[ConfigEntry]:
        """DescribeConfigs of ``group_id`` (which need not exist): each config asked for (all when
        ``keys`` is None or empty, as Kafka answers; names this coordinator does not serve are
        left out, as Kafka leaves out names it does not know)."""
        if not group_id:
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        own = self._values.get(group_id, {})
        entries = []
        for key in _KEYS:
            if keys and key.name not in keys:
                continue
            server_value = getattr(self._config, key.field())
            server_source = (
                ConfigSource.DEFAULT_CONFIG
                if server_value == _CONFIG_DEFAULTS[key.field()]
                else ConfigSource.STATIC_BROKER_CONFIG
            )
            server = Synonym(key.broker_name, str(server_value), server_source)
            if key.name in own:
                value = str(own[key.name])
                synonyms: tuple[Synonym, ...] = (Synonym(key.name, value, ConfigSource.GROUP_CONFIG), server)
                entries.append(
                    ConfigEntry(key.name, value, ConfigSource.GROUP_CONFIG, synonyms, key.documentation)
                )
            else:
                entries.append(
                    ConfigEntry(key.name, server.value, server.source, (server,), key.documentation)
                )
        return entries

    def alter(self, group_id: str, alterations: Iterable[Alteration]) -> dict[str, int]:
        """The configs ``group_id`` would have after one IncrementalAlterConfigs resource's
        ``alterations`` (nothing changes here: :meth:`apply` does). A resource is all or
        nothing: :class:`GroupConfigError` for the first thing Kafka would refuse."""
        changes = list(alterations)
        names = [a.name for a in changes]
        if len(set(names)) != len(names):
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        for a in changes:
            if a.value is None and a.operation != ConfigOperation.DELETE:
                raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Null value not supported for : {a.name}")
        if not group_id:
            raise GroupConfigError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        texts = {name: str(value) for name, value in self._values.get(group_id, {}).items()}
        for a in changes:
            if a.operation == ConfigOperation.SET:
                assert a.value is not None
                texts[a.name] = a.value
            elif a.operation == ConfigOperation.DELETE:
                texts.pop(a.name, None)
            elif a.operation in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
                operation = ConfigOperation(a.operation).name
                raise GroupConfigError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {operation} to key {a.name} because its type is not LIST.",
                )
            else:
                raise GroupConfigError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {a.operation}")
        for name in texts:
            if name in NOT_SERVED:
                raise GroupConfigError(
                    ErrorCode.INVALID_CONFIG,
                    f"Group config {name} is not served by the embedded coordinator, which serves "
                    f"{SESSION_TIMEOUT}, {HEARTBEAT_INTERVAL} and {ASSIGNMENT_INTERVAL} only",
                )
            if name not in _BY_NAME:
                raise GroupConfigError(ErrorCode.INVALID_CONFIG, f"Unknown group config name: {name}")
        values = {name: _parse_int(_BY_NAME[name], text) for name, text in texts.items()}
        for key in _CHECKED:
            if key.name not in values:
                continue
            if values[key.name] < getattr(self._config, key.field("min")):
                raise GroupConfigError(
                    ErrorCode.INVALID_CONFIG,
                    f"{key.name} must be greater than or equal to {key.bound_name('min')}",
                )
            if values[key.name] > getattr(self._config, key.field("max")):
                raise GroupConfigError(
                    ErrorCode.INVALID_CONFIG,
                    f"{key.name} must be less than or equal to {key.bound_name('max')}",
                )
        session = values.get(SESSION_TIMEOUT, self._config.consumer_group_session_timeout_ms)
        interval = values.get(HEARTBEAT_INTERVAL, self._config.consumer_group_heartbeat_interval_ms)
        if session <= interval:
            raise GroupConfigError(
                ErrorCode.INVALID_CONFIG, f"{SESSION_TIMEOUT} must be greater than {HEARTBEAT_INTERVAL}"
            )
        return values

    def apply(self, group_id: str, values: Mapping[str, int]) -> None:
        """Make ``values`` (as :meth:`alter` gave them, or as stored) ``group_id``'s configs."""
        if values:
            self._values[group_id] = dict(values)
        else:
            self._values.pop(group_id, None)
