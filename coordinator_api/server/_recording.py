"""Reading the embedded coordinator's membership events back, in the process it runs in.

The coordinator logs every membership change with the logger ``coordinator_api.server.membership``,
the event in the record's ``membership_event`` attribute; :class:`MembershipRecorder` is a logging
handler that turns those records back into :class:`MembershipEvent` objects, stamped with the
clock member processes report on, for tests and for tools that narrate what a group did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from coordinator_api.server._messages import MembershipEvent

MEMBERSHIP_LOGGER = "coordinator_api.server.membership"


class MembershipRecorder(logging.Handler):
    """Collects the membership events logged in this process as they happen.

    Each is kept with the ``time.monotonic()`` and the wall-clock time (the log record's) at
    which it was logged (:meth:`logged`). ``on_event``, if given, is called with each event as it
    is logged, on the coordinator's thread: it must be quick and must not raise.
    """

    def __init__(self, on_event: Callable[[MembershipEvent], None] | None = None) -> None:
        super().__init__(logging.INFO)
        self.on_event = on_event
        self._logged: list[tuple[float, float, MembershipEvent]] = []
        self._changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        doc = getattr(record, "membership_event", None)
        if doc is None:
            return
        event = MembershipEvent(**doc)
        with self._changed:
            self._logged.append((time.monotonic(), record.created, event))
            self._changed.notify_all()
        if self.on_event is not None:
            self.on_event(event)

    def logged(self) -> list[tuple[float, float, MembershipEvent]]:
        """Every event so far with its two times, ``(monotonic, wall, event)``, in the order
        logged: a copy, consistent while more events come."""
        with self._changed:
            return list(self._logged)

    @property
    def events(self) -> list[MembershipEvent]:
        """Every event so far, in the order logged (a copy)."""
        return [e for _, _, e in self.logged()]

    def of(self, kind: str | None = None, group: str | None = None) -> list[MembershipEvent]:
        """The events of ``kind`` (any if None) of ``group`` (any if None), in the order logged."""
        return [
            e
            for _, _, e in self.logged()
            if (kind is None or e.kind == kind) and (group is None or e.group_id == group)
        ]

    def wait_for(self, kind: str, group: str | None = None, timeout: float = 30.0) -> MembershipEvent:
        """The first event of ``kind`` (of ``group``, if given) logged since recording began,
        waiting up to ``timeout`` seconds for it; TimeoutError if none is logged by then. (The
        coordinator answers a request before it logs the events of it, so a client may know of
        a change a moment before its event is here.)"""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for _, _, e in self._logged:
                    if e.kind == kind and (group is None or e.group_id == group):
                        return e
                left = deadline - time.monotonic()
                if left <= 0:
                    where = f" of group {group!r}" if group is not None else ""
                    raise TimeoutError(f"no {kind!r} membership event{where} within {timeout} s")
                self._changed.wait(left)

    def first(self, kind: str, member_prefix: str, after: float) -> float | None:
        """When (``time.monotonic()``) ``kind`` was first logged after ``after`` for a member
        whose id starts with ``member_prefix``; None if it was not."""
        return min(
            (
                t
                for t, _, e in self.logged()
                if t > after and e.kind == kind and (e.member_id or "").startswith(member_prefix)
            ),
            default=None,
        )


@contextmanager
def recording_membership(
    on_event: Callable[[MembershipEvent], None] | None = None,
) -> Iterator[MembershipRecorder]:
    """Record the membership events logged in this process while the block runs (the logger
    is set to INFO meanwhile, and back after)."""
    logger = logging.getLogger(MEMBERSHIP_LOGGER)
    recorder = MembershipRecorder(on_event)
    saved = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(recorder)
    try:
        yield recorder
    finally:
        logger.removeHandler(recorder)
        logger.setLevel(saved)
