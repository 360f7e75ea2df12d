"""ACLs and the authorizer of the embedded coordinator, as Apache Kafka's ``StandardAuthorizer``
has them (pure: no I/O, no clock).

An ACL binding says: *principal* from *host* is ALLOWed or DENYed *operation* on the resources a
*pattern* names. The model and the numbers are Kafka's (``ResourceType``, ``PatternType``,
``AclOperation``, ``AclPermissionType``), so Kafka's own tools and clients manage them over
CreateAcls, DescribeAcls and DeleteAcls.

Rules of :meth:`Authorizer.authorize`, as Kafka's:

* A super user (``super.users``) may do anything.
* The ACLs that concern a resource are those whose pattern names it: a LITERAL pattern of the
  same name or of the wildcard ``*``, or a PREFIXED pattern its name starts with.
* If no ACL concerns the resource at all, the answer is ``allow_everyone_if_no_acl_found``
  (``allow.everyone.if.no.acl.found``, default false: denied).
* Among those, an ACL applies to a request when its principal is the requester's (or the
  wildcard ``User:*``) and its host is the requester's address (or ``*``).
* A DENY for the operation (or ALL) wins over any ALLOW.
* An ALLOW for the operation or ALL allows; so does one for an operation that implies it:
  DESCRIBE is implied by READ, WRITE, DELETE and ALTER, DESCRIBE_CONFIGS by ALTER_CONFIGS.
  (A DENY of READ does not deny DESCRIBE.)
* Anything else is denied.

The cluster is one resource, named ``kafka-cluster``.

Filters (:class:`AclBindingFilter`, for DescribeAcls and DeleteAcls) match bindings as Kafka's
``AclBindingFilter`` does: a ``None`` name, principal or host, and ANY for a type, pattern
type, operation or permission, match anything; the MATCH pattern type matches every pattern
that would name the given resource (the literal name, the literal wildcard, any prefix of it).

How the coordinator enforces them per request is in ``_authorization.py``.
"""

from __future__ import annotations

import enum
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import final

from coordinator_api._errors import ConfigurationError

#: The one name of the cluster resource.
CLUSTER_NAME = "kafka-cluster"
#: The wildcard resource name, host and principal name.
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


class InvalidAclError(ConfigurationError):
    """An ACL binding or filter has a value Kafka does not accept; the message names it."""


class ResourceType(enum.IntEnum):
    """Kafka's ``ResourceType`` codes (ANY only in a filter)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """Kafka's ``PatternType`` codes (ANY and MATCH only in a filter)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    """Kafka's ``AclOperation`` codes (ANY only in a filter)."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermission(enum.IntEnum):
    """Kafka's ``AclPermissionType`` codes (ANY only in a filter)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The resource types this coordinator has (Kafka's others, transactional ids, delegation
#: tokens and users, name nothing here, so ACLs on them are refused).
RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER)

# An ALLOW of the key also allows these (Kafka's AclAuthorizer / StandardAuthorizerData).
_IMPLIED_BY: dict[AclOperation, frozenset[AclOperation]] = {
    AclOperation.DESCRIBE: frozenset(
        {AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER}
    ),
    AclOperation.DESCRIBE_CONFIGS: frozenset({AclOperation.ALTER_CONFIGS}),
}


def _enum(kind: type[enum.IntEnum], value: object, what: str) -> enum.IntEnum:
    if isinstance(value, str) and not isinstance(value, enum.Enum):
        try:
            return kind[value.upper().replace("-", "_")]
        except KeyError:
            pass
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            return kind(value)
        except ValueError:
            pass
    names = ", ".join(m.name for m in kind)
    raise InvalidAclError(f"{what} {value!r} is not one of Kafka's: {names}")


def check_principal(principal: str, *, what: str = "principal") -> str:
    """``principal`` if it is ``Type:name`` (``User:alice``, ``User:*``).

    :raises InvalidAclError: anything else.
    """
    kind, sep, name = principal.partition(":") if isinstance(principal, str) else ("", "", "")
    if not sep or not kind or not name:
        raise InvalidAclError(
            f"{what} {principal!r} is not TYPE:NAME: give User:NAME, or User:* for every user"
        )
    return principal


def _check_host(host: str) -> str:
    if host == WILDCARD:
        return host
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise InvalidAclError(f"host {host!r} is neither * nor an IP address") from None
    return host


@final
@dataclass(frozen=True, kw_only=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and who may or may not do what on it from where.

    Build it with :meth:`of`, which validates; the fields are Kafka's codes.
    """

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    @classmethod
    def of(
        cls,
        *,
        resource_type: ResourceType | int | str,
        name: str,
        principal: str,
        operation: AclOperation | int | str,
        permission: AclPermission | int | str = AclPermission.ALLOW,
        pattern_type: PatternType | int | str = PatternType.LITERAL,
        host: str = WILDCARD,
    ) -> AclBinding:
        """A validated binding; enums may be given by code or by name (``"read"``).

        :raises InvalidAclError: ANY, MATCH or UNKNOWN where a concrete value is needed, a
            resource type this coordinator does not have, an empty resource name, a cluster
            resource not named ``kafka-cluster``, a principal not ``Type:name``, a host neither
            ``*`` nor an IP address.
        """
        kind = ResourceType(_enum(ResourceType, resource_type, "resource type"))
        pattern = PatternType(_enum(PatternType, pattern_type, "pattern type"))
        op = AclOperation(_enum(AclOperation, operation, "operation"))
        perm = AclPermission(_enum(AclPermission, permission, "permission"))
        if kind not in RESOURCE_TYPES:
            raise InvalidAclError(
                f"resource type {kind.name} is not one this coordinator has: give TOPIC, GROUP or CLUSTER"
            )
        if pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            raise InvalidAclError(f"pattern type {pattern.name} is for filters: give LITERAL or PREFIXED")
        if op in (AclOperation.ANY, AclOperation.UNKNOWN):
            raise InvalidAclError(f"operation {op.name} is for filters: give an operation, or ALL")
        if perm not in (AclPermission.ALLOW, AclPermission.DENY):
            raise InvalidAclError(f"permission {perm.name} is for filters: give ALLOW or DENY")
        if not isinstance(name, str) or not name:
            raise InvalidAclError("Invalid empty resource name")
        if kind is ResourceType.CLUSTER and name != CLUSTER_NAME:
            raise InvalidAclError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
        return cls(
            resource_type=kind,
            name=name,
            pattern_type=pattern,
            principal=check_principal(principal),
            host=_check_host(host),
            operation=op,
            permission=perm,
        )

    def names(self, resource_type: ResourceType, name: str) -> bool:
        """Whether this binding's pattern names the resource ``name`` of ``resource_type``."""
        if resource_type is not self.resource_type:
            return False
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name in (name, WILDCARD)


@final
@dataclass(frozen=True, kw_only=True)
class AclBindingFilter:
    """Which bindings DescribeAcls or DeleteAcls means; ``None`` and ANY match anything.

    Build it with :meth:`of`, which validates.
    """

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: AclPermission = AclPermission.ANY

    @classmethod
    def of(
        cls,
        *,
        resource_type: ResourceType | int | str = ResourceType.ANY,
        name: str | None = None,
        pattern_type: PatternType | int | str = PatternType.ANY,
        principal: str | None = None,
        host: str | None = None,
        operation: AclOperation | int | str = AclOperation.ANY,
        permission: AclPermission | int | str = AclPermission.ANY,
    ) -> AclBindingFilter:
        """A validated filter.

        :raises InvalidAclError: an UNKNOWN value or a code Kafka does not have (Kafka refuses
            such a filter too: it could match nothing anyone meant).
        """
        chosen = cls(
            resource_type=ResourceType(_enum(ResourceType, resource_type, "resource type")),
            name=name,
            pattern_type=PatternType(_enum(PatternType, pattern_type, "pattern type")),
            principal=principal,
            host=host,
            operation=AclOperation(_enum(AclOperation, operation, "operation")),
            permission=AclPermission(_enum(AclPermission, permission, "permission")),
        )
        for value in (chosen.resource_type, chosen.pattern_type, chosen.operation, chosen.permission):
            if value.name == "UNKNOWN":
                raise InvalidAclError(f"a filter cannot match {type(value).__name__} UNKNOWN")
        if principal is not None:
            check_principal(principal)
        return chosen

    def matches(self, binding: AclBinding) -> bool:
        """Kafka's ``AclBindingFilter.matches``."""
        if self.resource_type is not ResourceType.ANY and self.resource_type is not binding.resource_type:
            return False
        exact_pattern = self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
        if exact_pattern and self.pattern_type is not binding.pattern_type:
            return False
        if self.name is not None:
            if self.pattern_type in (PatternType.ANY, binding.pattern_type):
                if self.name != binding.name:
                    return False
            elif binding.pattern_type is PatternType.PREFIXED:  # MATCH
                if not self.name.startswith(binding.name):
                    return False
            elif binding.name not in (self.name, WILDCARD):  # MATCH, a literal binding
                return False
        return (
            (self.principal is None or self.principal == binding.principal)
            and (self.host is None or self.host == binding.host)
            and self.operation in (AclOperation.ANY, binding.operation)
            and self.permission in (AclPermission.ANY, binding.permission)
        )


#: A filter every binding matches.
EVERY_ACL = AclBindingFilter()


@final
class Authorizer:
    """The ACLs in force and the decision on each request (Kafka's ``StandardAuthorizer``).

    Pure and in memory: the server stores the bindings in its data directory before it changes
    them here. The rules are in the module docstring.

    :param bindings: the ACLs to start with.
    :param super_users: principals allowed everything (``super.users``), e.g. ``User:admin``.
    :param allow_everyone_if_no_acl_found: ``allow.everyone.if.no.acl.found``.
    """

    def __init__(
        self,
        bindings: Iterable[AclBinding] = (),
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(check_principal(p, what="super user") for p in super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self._bindings: dict[ResourceType, set[AclBinding]] = {kind: set() for kind in RESOURCE_TYPES}
        # Decisions repeat (every heartbeat of a member asks the same): remembered until the
        # ACLs change, at most _MAX_DECISIONS of them.
        self._decisions: dict[tuple[str, str, AclOperation, ResourceType, str], bool] = {}
        self.add(bindings)

    _MAX_DECISIONS = 65_536

    def __contains__(self, binding: object) -> bool:
        return isinstance(binding, AclBinding) and binding in self._bindings[binding.resource_type]

    def __len__(self) -> int:
        return sum(map(len, self._bindings.values()))

    def add(self, bindings: Iterable[AclBinding]) -> list[AclBinding]:
        """Add bindings; returns those that were not there yet."""
        added = []
        for binding in bindings:
            if binding not in self:
                self._bindings[binding.resource_type].add(binding)
                added.append(binding)
        if added:
            self._decisions.clear()
        return added

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        for binding in bindings:
            self._bindings[binding.resource_type].discard(binding)
        self._decisions.clear()

    def bindings(self, acl_filter: AclBindingFilter = EVERY_ACL) -> list[AclBinding]:
        """The bindings ``acl_filter`` matches, sorted."""
        return sorted(b for kind in self._bindings.values() for b in kind if acl_filter.matches(b))

    def authorize(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """Whether ``principal`` connected from ``host`` (an address, no leading ``/``) may do
        ``operation`` on the resource ``name`` of ``resource_type``."""
        key = (principal, host, operation, resource_type, name)
        decided = self._decisions.get(key)
        if decided is None:
            decided = self._decide(principal, host, operation, resource_type, name)
            if len(self._decisions) >= self._MAX_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decided
        return decided

    def _decide(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if principal in self.super_users:
            return True
        concerning = [b for b in self._bindings.get(resource_type, ()) if b.names(resource_type, name)]
        if not concerning:
            return self.allow_everyone_if_no_acl_found
        kind = principal.partition(":")[0]
        principals = (principal, f"{kind}:{WILDCARD}")
        applying = [b for b in concerning if b.principal in principals and b.host in (host, WILDCARD)]
        if any(
            b.permission is AclPermission.DENY and b.operation in (AclOperation.ALL, operation)
            for b in applying
        ):
            return False
        implied = _IMPLIED_BY.get(operation, frozenset())
        return any(
            b.permission is AclPermission.ALLOW
            and (b.operation in (AclOperation.ALL, operation) or b.operation in implied)
            for b in applying
        )
