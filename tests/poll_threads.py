"""In-process members polling on threads of their own, as applications poll, with every exception
a poll raises kept and then asserted.

    with PollThreads([a, b]) as polling:
        wait_for(lambda: settled(a, b), 30, "the group to settle")
    # leaving the block failed the test if a poll raised

An application's poll loop goes on after an exception, so a thread keeps polling after one too;
but an exception nobody looks at is a failure nobody sees, so leaving the block fails the test
with all of them. A test that provokes an error on purpose names its type in ``expect``: those
are kept in ``errors`` for the test to check, and only the others fail it. ``close`` is called
for each member once its thread has stopped, however the block ended.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Iterable
from types import TracebackType
from typing import Any, Generic, TypeVar

M = TypeVar("M")


def poll_briefly(member: Any) -> None:
    member.poll(0.05)


class PollThreads(Generic[M]):
    """Calls ``poll(member)`` in a loop on one thread per member until the block ends."""

    def __init__(
        self,
        members: Iterable[M],
        poll: Callable[[M], object] = poll_briefly,
        *,
        expect: tuple[type[BaseException], ...] = (),
        close: Callable[[M], object] | None = None,
        pause_after_error_s: float = 0.05,
    ) -> None:
        self.members = list(members)
        self.expect = expect
        self._poll = poll
        self._close = close
        self._pause_s = pause_after_error_s
        self._stop = threading.Event()
        self._errors: list[tuple[int, BaseException]] = []  # (member index, exception)
        self._threads = [
            threading.Thread(target=self._run, args=(i, m), name=f"poll-{i}", daemon=True)
            for i, m in enumerate(self.members)
        ]

    def _run(self, index: int, member: M) -> None:
        while not self._stop.is_set():
            try:
                self._poll(member)
            except Exception as exc:
                self._errors.append((index, exc))
                time.sleep(self._pause_s)

    def errors(self, member: M | None = None) -> list[BaseException]:
        """The exceptions the polls raised so far (of ``member`` only, if given), oldest first."""
        return [e for i, e in list(self._errors) if member is None or self.members[i] is member]

    def unexpected(self) -> list[tuple[int, BaseException]]:
        return [(i, e) for i, e in list(self._errors) if not isinstance(e, self.expect)]

    def check(self) -> None:
        """Fail, naming each member's first unexpected exception with its traceback, if a poll
        raised one."""
        unexpected = self.unexpected()
        if not unexpected:
            return
        lines = [f"{len(unexpected)} exception(s) raised by poll threads, which the test did not expect:"]
        first_of: dict[int, BaseException] = {}
        for i, e in unexpected:
            first_of.setdefault(i, e)
        for i, e in sorted(first_of.items()):
            count = sum(1 for j, _ in unexpected if j == i)
            lines.append(f"--- member {i} ({self.members[i]!r}): {count} time(s), first:")
            lines.append("".join(traceback.format_exception(type(e), e, e.__traceback__)).rstrip())
        raise AssertionError("\n".join(lines))

    def __enter__(self) -> PollThreads[M]:
        for t in self._threads:
            t.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()
        if self._close is not None:
            for m in self.members:
                self._close(m)
        if exc is None:
            self.check()
            return
        # The block failed already: keep its exception, and say what the polls raised too.
        unexpected = self.unexpected()
        add_note = getattr(exc, "add_note", None)  # Python 3.11+
        if unexpected and add_note is not None:
            add_note(f"poll threads raised meanwhile: {[f'{i}: {e!r}' for i, e in unexpected[:5]]}")
