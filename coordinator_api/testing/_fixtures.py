"""What the pytest fixtures hand out: a coordinator configured for tests and a member factory.

Nothing here imports pytest, so the harness also works in scripts and other test runners; the
fixtures themselves are in :mod:`coordinator_api.testing.pytest_plugin`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar, final

from coordinator_api._coordinator import Coordinator
from coordinator_api._errors import GroupTimeoutError
from coordinator_api.server import CoordinatorConfig

C = TypeVar("C", bound=Coordinator)

TEST_COORDINATOR_CONFIG: Final = CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500)
"""The ``embedded_coordinator`` fixture's settings: the first rebalance of a group completes as
soon as everyone has joined, and sessions as short as half a second are accepted."""

TEST_MEMBER_SETTINGS: Final[dict[str, Any]] = {
    "session_timeout_ms": 3000,
    "heartbeat_interval_ms": 300,
    "rebalance_timeout_ms": 5000,
    "request_timeout_ms": 5000,
    "retry_backoff_ms": 50,
}
"""The settings :class:`MemberFactory` gives members unless told otherwise: a member that stops
heartbeating is expired within seconds, and a member that does not rejoin is dropped from a
rebalance within five."""


@final
class MemberFactory:
    """Makes group members against one coordinator and closes them all at the end.

    Members get :data:`TEST_MEMBER_SETTINGS` unless the call overrides them::

        first = member_factory(MyCoordinator, "orders")
        second = member_factory(MyCoordinator, "orders", capacity=2)
        generation = member_factory.settle(first, second)

    :param bootstrap_servers: the coordinator to join (``EmbeddedCoordinator.bootstrap_servers``).
    :param settings: settings for every member, over :data:`TEST_MEMBER_SETTINGS`.
    """

    def __init__(self, bootstrap_servers: str, **settings: Any) -> None:
        self.bootstrap_servers = bootstrap_servers
        self._settings = {**TEST_MEMBER_SETTINGS, **settings}
        self._members: list[Coordinator] = []

    def __call__(self, coordinator_class: Callable[..., C], group_id: str, /, **options: Any) -> C:
        """Make a member of ``group_id``.

        :param coordinator_class: a ``Coordinator`` subclass, or a factory such as one from
            ``PluginRegistry.protocols.get(protocol_type)``.
        :param group_id: the group to join.
        :param options: the class's own options and ``Coordinator`` settings (these win over
            the factory's).
        """
        member = coordinator_class(group_id, self.bootstrap_servers, **{**self._settings, **options})
        self._members.append(member)
        return member

    @property
    def members(self) -> list[Coordinator]:
        """Every member made so far, oldest first."""
        return list(self._members)

    def settle(self, *members: Coordinator, newer_than: int | None = None, timeout: float = 30.0) -> int:
        """Poll every member on a thread of its own until all of them hold a settled assignment
        of the same generation, then stop polling; returns that generation's id.

        Members only rejoin a rebalance when they poll, so a group driven from one thread
        cannot settle; this drives them the way separate processes would. The members' callbacks
        run on those threads. Heartbeats go on after it returns.

        :param members: the members to settle; all members made so far if none are given.
        :param newer_than: wait for a generation after this one, e.g. the one returned before a
            member left (the others only notice the rebalance at their next heartbeat).
        :raises GroupTimeoutError: the members did not settle within ``timeout`` seconds.
        :raises Exception: whatever a member's ``poll`` raised (a callback's ``CallbackError``).
        """
        group = list(members) or self.members
        stop = threading.Event()
        errors: list[BaseException] = []

        def drive(member: Coordinator) -> None:
            try:
                while not stop.is_set():
                    member.poll(0.05)
            except BaseException as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=drive, args=(member,), name=f"settle-{member.group_id}", daemon=True)
            for member in group
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        try:
            while True:
                if errors:
                    raise errors[0]
                generations = [member.generation_if_stable() for member in group]
                ids = {generation.generation_id for generation in generations if generation is not None}
                if (
                    None not in generations
                    and len(ids) == 1
                    and (newer_than is None or min(ids) > newer_than)
                ):
                    return ids.pop()
                if time.monotonic() > deadline:
                    states = ", ".join(
                        f"{member.member_id or '(no id)'}: {'settled' if g else 'rebalancing'}"
                        for member, g in zip(group, generations, strict=True)
                    )
                    raise GroupTimeoutError(
                        f"{len(group)} members did not settle on one generation within {timeout} s "
                        f"({states}); check that every member of the group is being polled",
                        group_id=group[0].group_id if group else "",
                        member_id="",
                    )
                time.sleep(0.02)
        finally:
            stop.set()
            for thread in threads:
                thread.join()

    def close_all(self, timeout: float = 10.0) -> None:
        """Close every member made so far (they leave their groups), newest first."""
        while self._members:
            self._members.pop().close(timeout)
