"""Client quotas as Kafka's brokers keep them (KIP-124, KIP-219, KIP-546): sans-IO.

What is configured
    A quota is a value per key (``request_percentage``, ``producer_byte_rate``,
    ``consumer_byte_rate``, ``controller_mutation_rate``) on an entity: a user principal, a
    client id, or both, each part either named or the default (``<default>``). Kafka's
    ``kafka-configs --alter`` and ``Admin.alterClientQuotas`` set them over AlterClientQuotas;
    ``--describe`` reads them over DescribeClientQuotas. :meth:`ClientQuotas.alter` validates an
    alteration as Kafka's controller does (``ClientQuotaControlManager``) and says what to store;
    :meth:`ClientQuotas.apply` makes it so; :meth:`ClientQuotas.describe` filters as Kafka's
    ``ClientQuotasImage.describe`` does. Only ``request_percentage`` has an effect here: the
    coordinator serves no Produce or Fetch and creates no topics for clients, so the byte rates
    and the controller mutation rate are accepted and kept, as Kafka keeps them, and do nothing.

Which quota applies (``ClientQuotaManager``'s precedence)
    For a request of user ``U`` with client id ``C``, the first quota set on: ``(U, C)``,
    ``(U, <default>)``, ``U``, ``(<default>, C)``, ``(<default>, <default>)``, ``<default>``
    user, ``C``, ``<default>`` client id. All clients matched by one entity share its quota (a
    ``U`` quota is shared by all of ``U``'s client ids); a default is per user, client id or
    pair (``<default>`` client id gives each client id its own). No quota: no limit. Which
    clients share a measurement follows Kafka's metric tags exactly (:meth:`ClientQuotas.tags`).

How use is measured (``ClientRequestQuotaManager``, Kafka's ``Rate`` over ``SampledStat``)
    ``request_percentage`` is the time the server spends handling a client's requests, as a
    percentage of one request handler thread (the event loop, here). Each request adds its
    handling time, in percent-seconds (1 ms is 0.1), to the current of ``quota.window.num``
    (11) samples of ``quota.window.size.seconds`` (1 s) each; the rate is their sum over the
    time they span, counted as at least 10 whole windows, so a new client starts with credit.

Throttling (``QuotaUtils.throttleTime``, KIP-219)
    A request that takes the rate ``O`` over the quota ``T`` (over a window ``W``) is answered at
    once with ``throttle_time_ms = round((O - T) / T * W)``, at most one window (1,000 ms), and
    its connection is then not read for that long, whether the client honours the field or
    not. Requests not counted: SASL's (Kafka's authenticator answers them before any quota
    applies), anything before authentication, and Produce with acks=0 (no answer); the group
    APIs, heartbeats included, are counted and throttled, as on Kafka (KIP-124 considered
    exempting them and did not).

Kafka counts nothing until the first ``request_percentage`` quota is set, and counts from then
on until a restart even if every quota is removed (``quotasEnabled``); so does
:attr:`ClientQuotas.enabled`, which the server reads on every request.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, final

from coordinator_api._protocol import ErrorCode

#: ``quota.window.num``: samples kept (10 whole windows and the current one).
QUOTA_WINDOW_NUM: Final = 11
#: ``quota.window.size.seconds``: the span of each sample.
QUOTA_WINDOW_SIZE_SECONDS: Final = 1
#: Kafka forgets a client's measurements after an hour without a request from it.
INACTIVE_SENSOR_EXPIRATION_MS: Final = 3_600_000
#: How often forgotten measurements are looked for (Kafka's sensor expiry task: 30 s).
_EXPIRY_CHECK_INTERVAL_MS: Final = 30_000
#: The most (user, client id) pairs whose quota is remembered between quota changes.
_MAX_RESOLVED: Final = 10_000

#: Entity types, as Kafka's ``ClientQuotaEntity`` names them.
USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

REQUEST_PERCENTAGE: Final = "request_percentage"
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
#: The keys a user or client-id quota may set, and whether each is whole (Kafka's LONG) or not
#: (DOUBLE), as ``QuotaConfig.userAndClientQuotaConfigs`` defines them.
QUOTA_KEYS: Final[Mapping[str, bool]] = {
    PRODUCER_BYTE_RATE: True,
    CONSUMER_BYTE_RATE: True,
    REQUEST_PERCENTAGE: False,
    CONTROLLER_MUTATION_RATE: False,
}
_LONG_MAX: Final = 2**63 - 1

#: DescribeClientQuotas match types.
MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2

_NANOS_TO_PERCENT_SECONDS: Final = 100.0 / 1e9


def percent_seconds(nanos: int) -> float:
    """Handling time as ``request_percentage`` counts it: the percentage of one thread for one
    second (Kafka's ``nanosToPercentage``: 1 ms is 0.1)."""
    return nanos * _NANOS_TO_PERCENT_SECONDS


class Default(enum.Enum):
    """The ``<default>`` user or client id of a quota entity (null on the wire)."""

    DEFAULT = "<default>"


DEFAULT: Final = Default.DEFAULT


class InvalidQuotaError(ValueError):
    """An alteration or a filter Kafka refuses; ``error`` is the code to answer with."""

    def __init__(self, message: str, error: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.error = error


@final
@dataclass(frozen=True)
class QuotaEntity:
    """Who a quota applies to: a user principal's name (``alice`` for ``User:alice``), a client
    id, or both. Each part is a name, :data:`DEFAULT`, or None when not part of the entity."""

    user: str | Default | None = None
    client_id: str | Default | None = None

    @classmethod
    def of(cls, parts: Iterable[tuple[str, str | None]]) -> QuotaEntity:
        """The entity of AlterClientQuotas' ``(entity_type, entity_name)`` pairs, checked as
        Kafka's controller checks them.

        :raises InvalidQuotaError: no part, a type twice, a type other than ``user`` and
            ``client-id`` (``ip``, connection rate quotas, are not served here), an empty name.
        """
        found: dict[str, str | Default] = {}
        for entity_type, name in parts:
            if entity_type in found:
                raise InvalidQuotaError(f"Invalid client quota entity, duplicate entity entry {entity_type}")
            if entity_type == IP:
                raise InvalidQuotaError(
                    "ip quotas (connection_creation_rate) are not served by the embedded coordinator; "
                    "its connections are bounded by max_connections_per_ip"
                )
            if entity_type not in (USER, CLIENT_ID):
                raise InvalidQuotaError(f"Unhandled client quota entity type: {entity_type}")
            if name == "":
                raise InvalidQuotaError(f"Empty {entity_type} not supported")
            found[entity_type] = DEFAULT if name is None else name
        if not found:
            raise InvalidQuotaError("Invalid empty client quota entity")
        return cls(user=found.get(USER), client_id=found.get(CLIENT_ID))

    def parts(self) -> tuple[tuple[str, str | None], ...]:
        """``(entity_type, entity_name)`` pairs, user first; a default's name is None."""
        return tuple(
            (entity_type, None if name is DEFAULT else name)
            for entity_type, name in ((USER, self.user), (CLIENT_ID, self.client_id))
            if name is not None
        )

    def sort_key(self) -> tuple[tuple[int, str], tuple[int, str]]:
        def part(name: str | Default | None) -> tuple[int, str]:
            return (0, "") if name is None else (1, "") if name is DEFAULT else (2, name)

        return part(self.user), part(self.client_id)

    def __str__(self) -> str:
        words = [
            f"default {label}" if name is DEFAULT else f"{label} {name!r}"
            for label, name in (("user", self.user), ("client-id", self.client_id))
            if name is not None
        ]
        return ", ".join(words)


@final
@dataclass(frozen=True)
class QuotaAlteration:
    """One entry of AlterClientQuotas: an entity as the client named it, and its operations,
    each ``(key, value, remove)``."""

    entity: tuple[tuple[str, str | None], ...]
    ops: tuple[tuple[str, float, bool], ...]


@final
@dataclass(frozen=True)
class AlterOutcome:
    """The answer for one alteration: the entity as the client named it, and Kafka's error."""

    entity: tuple[tuple[str, str | None], ...]
    error: ErrorCode
    message: str | None


@final
@dataclass(frozen=True)
class QuotaChange:
    """One stored quota set (``value``) or removed (None), as Kafka's ``ClientQuotaRecord``."""

    entity: QuotaEntity
    key: str
    value: float | None


@final
@dataclass(frozen=True)
class FilterComponent:
    """One component of a DescribeClientQuotas filter: an entity type, and a name to match
    exactly (:data:`MATCH_EXACT`), the default (:data:`MATCH_DEFAULT`) or any
    (:data:`MATCH_SPECIFIED`)."""

    entity_type: str
    match_type: int
    match: str | None


class _Sample:
    __slots__ = ("events", "last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


@final
class SampledRate:
    """Kafka's ``Rate`` over a ``WindowedSum``: the sum of the values recorded in ``samples``
    windows of ``window_ms`` each, per second of the time they span.

    The span is from the start of the oldest sample to now, and at least ``samples - 1``
    whole windows (``Rate.windowSize``), so that a new or quiet client is not judged on one
    short burst; a sample with no value for ``samples`` windows is cleared. Samples start when
    a value arrives, so a quiet time makes no samples.
    """

    __slots__ = ("_current", "_samples", "_size", "_window_ms", "last_record_ms")

    def __init__(
        self, *, samples: int = QUOTA_WINDOW_NUM, window_ms: int = QUOTA_WINDOW_SIZE_SECONDS * 1000
    ) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(
                f"a rate needs at least one sample of at least 1 ms, not {samples} of {window_ms} ms"
            )
        self._size = samples
        self._window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0
        self.last_record_ms = 0

    def record(self, value: float, now_ms: int) -> None:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        sample = self._samples[self._current]
        if now_ms - sample.start_ms >= self._window_ms:
            # One slot more than the samples kept: the oldest may overlap the span measured.
            self._current = (self._current + 1) % (self._size + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire_ms = self._size * self._window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)

    def window_ms(self, now_ms: int) -> int:
        """The span the rate is measured over, in ms (``Rate.windowSize``)."""
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        elapsed = now_ms - min(s.start_ms for s in self._samples)
        whole = elapsed // self._window_ms
        if whole < self._size - 1:
            elapsed += (self._size - 1 - whole) * self._window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate: values recorded per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total / (self.window_ms(now_ms) / 1000)


def throttle_time_ms(observed: float, bound: float, window_ms: int) -> int:
    """How long the client must stay away for ``observed`` to come down to ``bound`` if it
    records nothing more: ``O * W / (W + X) = T``, so ``X = (O - T) / T * W`` (Kafka's
    ``QuotaUtils.throttleTime``, rounded half up as Java's ``Math.round``)."""
    return math.floor((observed - bound) / bound * window_ms + 0.5)


# Kafka's QuotaTypes: which shapes of request_percentage entity were ever set (since start).
_CLIENT_ID_LEVEL: Final = 1
_USER_LEVEL: Final = 2
_USER_CLIENT_ID_LEVEL: Final = 4

#: A measurement's key: Kafka's metric tags (sanitized user or "", client id or "").
Tags = tuple[str, str]


@final
class ClientQuotas:
    """The quotas configured and, for ``request_percentage``, each client's use of the server.

    One per server, used from its event loop only. Time is an argument (``now_ms``, any
    monotonic milliseconds), so tests drive it with a fake clock.

    :param window_num: ``quota.window.num``.
    :param window_size_s: ``quota.window.size.seconds``; also the most a client is throttled
        for at once (Kafka's ``ClientRequestQuotaManager``).
    """

    def __init__(
        self, *, window_num: int = QUOTA_WINDOW_NUM, window_size_s: int = QUOTA_WINDOW_SIZE_SECONDS
    ) -> None:
        if window_num < 1 or window_size_s < 1:
            raise ValueError(
                f"quota.window.num and quota.window.size.seconds must be at least 1, not {window_num} "
                f"and {window_size_s}"
            )
        self._window_num = window_num
        self._window_ms = window_size_s * 1000
        self.max_throttle_ms = window_size_s * 1000
        self._values: dict[QuotaEntity, dict[str, float]] = {}
        self._request: dict[QuotaEntity, float] = {}  # the request_percentage quotas
        self._levels = 0
        #: Whether requests are measured: since the first ``request_percentage`` was set.
        self.enabled = False
        self._sensors: dict[Tags, SampledRate] = {}
        self._resolved: dict[tuple[str, str], tuple[Tags, float | None]] = {}
        self._next_expiry_ms: int | None = None

    # --- configuration ---------------------------------------------------------------------

    def configured(self) -> dict[QuotaEntity, dict[str, float]]:
        """Every quota set, by entity."""
        return {entity: dict(values) for entity, values in self._values.items()}

    def alter(self, alterations: Sequence[QuotaAlteration]) -> tuple[list[AlterOutcome], list[QuotaChange]]:
        """Kafka's answer to AlterClientQuotas, and the changes to store and then
        :meth:`apply` (nothing changes here). Each alteration is judged on its own, in order;
        an entity named twice is refused the second time.

        The checks are Kafka's: a valid entity (:meth:`QuotaEntity.of`), each key once, a known
        key, a value above 0 (and, for the byte rates, whole and within a Java long). Beyond
        Kafka: a value must be finite. Removing a key that is not set is no change.
        """
        outcomes: list[AlterOutcome] = []
        changes: list[QuotaChange] = []
        seen: set[QuotaEntity] = set()
        for alteration in alterations:
            try:
                entity = QuotaEntity.of(alteration.entity)
                if entity in seen:
                    raise InvalidQuotaError(f"Ignoring duplicate entity {entity}")
                seen.add(entity)
                changes.extend(self._changes(entity, alteration.ops))
            except InvalidQuotaError as refused:
                outcomes.append(AlterOutcome(alteration.entity, refused.error, str(refused)))
            else:
                outcomes.append(AlterOutcome(alteration.entity, ErrorCode.NONE, None))
        return outcomes, changes

    def _changes(self, entity: QuotaEntity, ops: Sequence[tuple[str, float, bool]]) -> list[QuotaChange]:
        wanted: dict[str, float | None] = {}
        for key, given, remove in ops:
            if key in wanted:
                raise InvalidQuotaError(
                    f"Duplicate quota key {key} not updating quota for this entity {entity}"
                )
            wanted[key] = None if remove else given
        current = self._values.get(entity, {})
        changes = []
        for key, value in wanted.items():
            if value is None:
                if key in current:
                    changes.append(QuotaChange(entity, key, None))
                continue
            check_quota_value(key, value)
            if current.get(key) != value:
                changes.append(QuotaChange(entity, key, value))
        return changes

    def apply(self, changes: Iterable[QuotaChange]) -> None:
        """Set and remove quotas (an alteration :meth:`alter` allowed, or those stored)."""
        for change in changes:
            values = self._values.setdefault(change.entity, {})
            if change.value is None:
                values.pop(change.key, None)
                if not values:
                    del self._values[change.entity]
            else:
                values[change.key] = change.value
            if change.key != REQUEST_PERCENTAGE:
                continue
            # As Kafka's updateQuota: the level counts as used even when a quota is removed.
            if change.entity.user is not None:
                self._levels |= _USER_CLIENT_ID_LEVEL if change.entity.client_id is not None else _USER_LEVEL
            else:
                self._levels |= _CLIENT_ID_LEVEL
            if change.value is None:
                self._request.pop(change.entity, None)
            else:
                self._request[change.entity] = change.value
            self.enabled = True
            self._resolved.clear()

    def describe(
        self, components: Sequence[FilterComponent], *, strict: bool
    ) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """The quotas whose entity the filter matches (Kafka's ``ClientQuotasImage.describe``):
        each component's type must be part of the entity with the name asked for (exact, the
        default, or any); ``strict``: and the entity has no other part.

        :raises InvalidQuotaError: a component without a type, a type twice, a match string
            that does not fit its match type, an unknown match type, ``ip`` with another type
            (INVALID_REQUEST); a type other than ``user``, ``client-id`` and ``ip``
            (UNSUPPORTED_VERSION).
        """
        exact: dict[str, str | Default] = {}
        specified: set[str] = set()
        for c in components:
            if not c.entity_type:
                raise InvalidQuotaError("Invalid empty entity type.")
            if c.entity_type in exact or c.entity_type in specified:
                raise InvalidQuotaError(
                    f"Entity type {c.entity_type} cannot appear more than once in the filter."
                )
            if c.entity_type not in (USER, CLIENT_ID, IP):
                raise InvalidQuotaError(
                    f"Unsupported entity type {c.entity_type}", ErrorCode.UNSUPPORTED_VERSION
                )
            if c.match_type == MATCH_EXACT:
                if c.match is None:
                    raise InvalidQuotaError(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null."
                    )
                exact[c.entity_type] = c.match
            elif c.match_type == MATCH_DEFAULT:
                if c.match is not None:
                    raise InvalidQuotaError(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                    )
                exact[c.entity_type] = DEFAULT
            elif c.match_type == MATCH_SPECIFIED:
                if c.match is not None:
                    raise InvalidQuotaError(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                    )
                specified.add(c.entity_type)
            else:
                raise InvalidQuotaError(f"Unknown match type {c.match_type}")
        named = set(exact) | specified
        if IP in named and named & {USER, CLIENT_ID}:
            raise InvalidQuotaError(
                "Invalid entity filter component combination. IP filter component should not be used "
                "with user or clientId filter component."
            )
        found = []
        for entity in sorted(self._values, key=QuotaEntity.sort_key):
            parts: dict[str, str | Default] = {
                t: n for t, n in ((USER, entity.user), (CLIENT_ID, entity.client_id)) if n is not None
            }
            if strict and len(parts) != len(named):
                continue
            if all(parts.get(t) == n for t, n in exact.items()) and specified <= set(parts):
                found.append((entity, dict(sorted(self._values[entity].items()))))
        return found

    # --- which quota applies -----------------------------------------------------------------

    def tags(self, user: str, client_id: str) -> Tags:
        """Which measurement a request of ``user`` and ``client_id`` counts in: Kafka's metric
        tags (``DefaultQuotaCallback.quotaMetricTags``). Clients with the same tags share one."""
        levels = self._levels
        if levels in (0, _CLIENT_ID_LEVEL):
            return "", client_id
        if levels == _USER_LEVEL:
            return user, ""
        if levels == _USER_CLIENT_ID_LEVEL:
            return user, client_id
        quotas = self._request
        if QuotaEntity(user, client_id) in quotas or QuotaEntity(user, DEFAULT) in quotas:
            return user, client_id
        if QuotaEntity(user) in quotas:
            return user, ""
        if QuotaEntity(DEFAULT, client_id) in quotas or QuotaEntity(DEFAULT, DEFAULT) in quotas:
            return user, client_id
        if QuotaEntity(DEFAULT) in quotas:
            return user, ""
        return "", client_id

    def tag_limit(self, tags: Tags) -> float | None:
        """The ``request_percentage`` of the measurement ``tags`` (Kafka's ``quotaLimit``);
        None: no quota applies."""
        user, client_id = tags
        quotas = self._request
        candidates: tuple[QuotaEntity, ...]
        if user and client_id:
            candidates = (
                QuotaEntity(user, client_id),
                QuotaEntity(user, DEFAULT),
                QuotaEntity(DEFAULT, client_id),
                QuotaEntity(DEFAULT, DEFAULT),
            )
        elif user:
            candidates = (QuotaEntity(user), QuotaEntity(DEFAULT))
        elif client_id:
            candidates = (QuotaEntity(client_id=client_id), QuotaEntity(client_id=DEFAULT))
        else:
            return None
        for candidate in candidates:
            found = quotas.get(candidate)
            if found is not None:
                return found
        return None

    def limit(self, user: str, client_id: str) -> float | None:
        """The ``request_percentage`` a request of ``user`` and ``client_id`` is held to."""
        return self.tag_limit(self.tags(user, client_id))

    # --- measuring --------------------------------------------------------------------------

    def _sensor(self, user: str, client_id: str, now_ms: int) -> tuple[SampledRate, float | None]:
        resolved = self._resolved.get((user, client_id))
        if resolved is None:
            if len(self._resolved) >= _MAX_RESOLVED:
                self._resolved.clear()  # client ids are the clients' to choose: bounded
            tags = self.tags(user, client_id)
            resolved = self._resolved[(user, client_id)] = (tags, self.tag_limit(tags))
        sensor = self._sensors.get(resolved[0])
        if sensor is None:
            self._expire(now_ms)
            sensor = self._sensors[resolved[0]] = SampledRate(
                samples=self._window_num, window_ms=self._window_ms
            )
        return sensor, resolved[1]

    def _expire(self, now_ms: int) -> None:
        """Forget measurements no request added to for an hour, as Kafka does; at most every
        30 s, when a new one is made (what a client could make memory grow by)."""
        if self._next_expiry_ms is not None and now_ms < self._next_expiry_ms:
            return
        self._next_expiry_ms = now_ms + _EXPIRY_CHECK_INTERVAL_MS
        stale = [
            t for t, s in self._sensors.items() if now_ms - s.last_record_ms > INACTIVE_SENSOR_EXPIRATION_MS
        ]
        for tags in stale:
            del self._sensors[tags]
        self._resolved.clear()

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Count ``value`` (percent-seconds, :func:`percent_seconds`) of ``user``'s client
        ``client_id``'s handling time at ``now_ms``; the throttle time its answer carries (0
        within the quota), at most one window."""
        sensor, bound = self._sensor(user, client_id, now_ms)
        sensor.record(value, now_ms)
        if bound is None:
            return 0
        observed = sensor.measure(now_ms)
        if observed <= bound:
            return 0
        return min(throttle_time_ms(observed, bound, sensor.window_ms(now_ms)), self.max_throttle_ms)

    def record_unchecked(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Count ``value`` without judging it (Kafka's ``recordNoThrottle``: time spent after the
        answer was decided, which the client's next request is judged with)."""
        self._sensor(user, client_id, now_ms)[0].record(value, now_ms)


def check_quota_value(key: str, value: float) -> None:
    """Kafka's ``validateQuotaKeyValue`` for a user or client-id quota, and finite."""
    integral = QUOTA_KEYS.get(key)
    if integral is None:
        raise InvalidQuotaError(f"Invalid configuration key {key}")
    if not math.isfinite(value):
        raise InvalidQuotaError(f"Quota {key} must be a finite number")
    if value <= 0.0:
        raise InvalidQuotaError(f"Quota {key} must be greater than 0")
    if integral:
        if value > float(_LONG_MAX):  # compared as Java compares a double with a long
            raise InvalidQuotaError(f"Proposed value for {key} is too large for a LONG.")
        if abs(math.fmod(value, 1.0)) > 1e-6:
            raise InvalidQuotaError(f"{key} cannot be a fractional value.")


def principal_name(principal: str) -> str:
    """The user a quota names for a principal: ``alice`` for ``User:alice`` (Kafka's
    ``KafkaPrincipal.getName``)."""
    return principal.partition(":")[2] or principal
