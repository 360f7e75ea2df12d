"""The poll-thread helper itself (tests/poll_threads.py): an exception a poll raises fails the test."""

from __future__ import annotations

import threading
import time

import pytest
from poll_threads import PollThreads


class Member:
    """Polls quietly until its ``fail_from``-th poll; from then on each poll raises ``error``."""

    def __init__(self, name: str, error: BaseException | None = None, fail_from: int = 3) -> None:
        self.name = name
        self.error = error
        self.fail_from = fail_from
        self.polls = 0
        self.closed = False
        self.polled_after_close = False
        self.polled_twice = threading.Event()

    def poll(self, timeout: float) -> None:
        self.polled_after_close |= self.closed
        self.polls += 1
        if self.polls >= 2:
            self.polled_twice.set()
        time.sleep(timeout / 10)
        if self.error is not None and self.polls >= self.fail_from:
            raise self.error

    def close(self) -> None:
        self.closed = True

    def __repr__(self) -> str:
        return f"Member({self.name!r})"


def wait_until(condition: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_an_exception_raised_by_a_poll_fails_the_block_with_its_traceback() -> None:
    broken = Member("broken", RuntimeError("poll() broke"))
    fine = Member("fine")

    def polls_a_while() -> None:
        with PollThreads([fine, broken]):
            wait_until(lambda: broken.polls >= 5 and fine.polls >= 5)

    with pytest.raises(AssertionError) as failed:
        polls_a_while()
    message = str(failed.value)
    assert "raised by poll threads, which the test did not expect" in message
    assert "member 1 (Member('broken'))" in message
    assert "RuntimeError: poll() broke" in message
    assert "raise self.error" in message  # the traceback, down to the poll
    assert "Member('fine')" not in message


def test_expected_exceptions_are_kept_for_the_test_and_do_not_fail_it() -> None:
    fenced = Member("fenced", PermissionError("fenced"))
    with PollThreads([fenced], expect=(PermissionError,)) as polling:
        wait_until(lambda: len(polling.errors()) >= 2)
    assert all(isinstance(e, PermissionError) for e in polling.errors(fenced))


def test_an_unexpected_exception_fails_even_beside_expected_ones() -> None:
    odd = Member("odd", KeyError("odd"))
    fenced = Member("fenced", PermissionError("fenced"))

    def polls_a_while() -> None:
        with PollThreads([fenced, odd], expect=(PermissionError,)):
            wait_until(lambda: odd.polls >= 4)

    with pytest.raises(AssertionError, match=r"member 1 \(Member\('odd'\)\)"):
        polls_a_while()


def test_when_the_block_fails_its_own_error_stays_and_the_polls_are_noted() -> None:
    broken = Member("broken", RuntimeError("poll() broke"), fail_from=1)

    def times_out() -> None:
        with PollThreads([broken]):
            wait_until(lambda: broken.polls >= 3)
            raise TimeoutError("the group did not settle")

    with pytest.raises(TimeoutError, match="did not settle") as failed:
        times_out()
    assert any("RuntimeError('poll() broke')" in note for note in getattr(failed.value, "__notes__", []))


def test_members_close_after_their_thread_stopped_polling() -> None:
    members = [Member(f"m{i}") for i in range(3)]
    with PollThreads(members, close=Member.close):
        wait_until(lambda: all(m.polled_twice.is_set() for m in members))
    assert all(m.closed and not m.polled_after_close for m in members)
