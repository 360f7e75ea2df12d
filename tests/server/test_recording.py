"""recording_membership: the coordinator's membership events read back in its process.

An end-to-end example with a real member is docs/coordinator.md's (tests/test_docs.py runs it);
these check the recorder's own promises: it waits for what is not logged yet, says so when it
never is, ignores other records, and leaves the logger as it found it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict

import pytest

from coordinator_api.server import MembershipEvent, recording_membership
from coordinator_api.server._recording import MEMBERSHIP_LOGGER

LOGGER = logging.getLogger(MEMBERSHIP_LOGGER)


def log(event: MembershipEvent) -> None:
    LOGGER.info("%s", event.kind, extra={"membership_event": asdict(event)})


def test_wait_for_returns_an_event_logged_later_from_another_thread() -> None:
    joined = MembershipEvent(kind="joined", group_id="g", generation_id=0, member_id="m-1")
    seen: list[MembershipEvent] = []
    with recording_membership(on_event=seen.append) as recorded:
        LOGGER.info("not a membership event")  # no membership_event attribute: ignored
        log(MembershipEvent(kind="joined", group_id="other", generation_id=0))
        timer = threading.Timer(0.2, log, args=(joined,))
        timer.start()
        try:
            assert recorded.wait_for("joined", group="g", timeout=10) == joined
        finally:
            timer.join()
        assert [e.group_id for e in recorded.of("joined")] == ["other", "g"]
        assert recorded.of(group="g") == seen[1:] == [joined]
        (_, (t, wall, event)) = recorded.logged()
        assert event == joined and t <= time.monotonic() and wall <= time.time()
        assert recorded.first("joined", "m-", after=0.0) == t


def test_wait_for_says_what_never_came() -> None:
    with recording_membership() as recorded:
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"no 'left' membership event of group 'g' within 0\.2 s"):
            recorded.wait_for("left", group="g", timeout=0.2)
        assert 0.2 <= time.monotonic() - started < 5


def test_the_logger_is_left_as_it_was() -> None:
    saved = LOGGER.level
    LOGGER.setLevel(logging.WARNING)
    try:
        with recording_membership() as recorded:
            assert LOGGER.level == logging.INFO and recorded in LOGGER.handlers
        assert LOGGER.level == logging.WARNING and recorded not in LOGGER.handlers
    finally:
        LOGGER.setLevel(saved)
