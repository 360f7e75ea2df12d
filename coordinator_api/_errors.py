"""Typed errors of the framework. Messages name the group, the member and what to do next."""

from __future__ import annotations


class CoordinatorApiError(Exception):
    """Base class of every error this package raises on purpose."""


class ConfigurationError(CoordinatorApiError, ValueError):
    """A setting, a config file or an argument has a value the framework cannot use."""


class CoordinatorStartError(CoordinatorApiError, RuntimeError):
    """The embedded coordinator could not start (port taken, data directory unusable, ...)."""


class GroupError(CoordinatorApiError):
    """Something went wrong for one member of one group.

    :ivar group_id: the group.
    :ivar member_id: the member's id at the time ("" if it had none yet).
    """

    def __init__(self, message: str, *, group_id: str, member_id: str) -> None:
        who = f"group {group_id!r}, member {member_id or '(no member id yet)'}"
        super().__init__(f"{who}: {message}")
        self.group_id = group_id
        self.member_id = member_id


class CallbackError(GroupError):
    """A callback of the application raised; the exception is chained as ``__cause__``.

    The member has already recovered as far as it can: a failed ``perform_assignment`` makes the
    leader leave so the rest of the group can settle without it, a failed ``on_join_complete``
    makes the member rejoin. The next ``poll``/``ensure_active_group`` carries on.
    """

    def __init__(self, callback: str, *, group_id: str, member_id: str) -> None:
        super().__init__(
            f"{callback}() raised; the member recovers on the next poll() or "
            "ensure_active_group() call (see the chained exception for the cause)",
            group_id=group_id,
            member_id=member_id,
        )
        self.callback = callback


class InvalidAssignmentError(GroupError):
    """``perform_assignment`` returned something the framework cannot send."""


class InvalidMetadataError(GroupError):
    """``metadata()`` returned nothing, or something that is not (protocol name, bytes) pairs."""


class FencedInstanceError(GroupError):
    """Another process joined with this member's ``group_instance_id`` (KIP-345).

    Fatal for this member: two processes share one static identity. Give each process its own
    ``group_instance_id``, then close this member.
    """


class GroupJoinError(GroupError):
    """The coordinator refused to let this member join, for a reason a retry will not fix
    (inconsistent protocols, an invalid session timeout, a full group, an invalid group id).

    :ivar error_name: Kafka's name for the error, e.g. ``INCONSISTENT_GROUP_PROTOCOL``.
    """

    def __init__(self, message: str, *, group_id: str, member_id: str, error_name: str) -> None:
        super().__init__(message, group_id=group_id, member_id=member_id)
        self.error_name = error_name


class GroupTimeoutError(GroupError, TimeoutError):
    """``ensure_active_group`` did not reach a stable generation in time."""


class CommitFailedError(GroupError):
    """The coordinator refused an offset commit: the member's generation is stale, the member is
    unknown, or a rebalance is in progress. Stop acting on what the commit covered and poll to
    rejoin.

    :ivar errors: (topic, partition, Kafka error name) for each refused partition.
    """

    def __init__(
        self, message: str, *, group_id: str, member_id: str, errors: tuple[tuple[str, int, str], ...] = ()
    ) -> None:
        super().__init__(message, group_id=group_id, member_id=member_id)
        self.errors = errors


class CoordinatorClosedError(GroupError):
    """The coordinator object was used after ``close()``."""


class PayloadError(CoordinatorApiError, ValueError):
    """A member's metadata or assignment bytes could not be decoded or encoded."""
