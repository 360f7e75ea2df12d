"""Fencing on the side of a downstream store: refuse writes that carry a stale epoch."""

from __future__ import annotations

import threading

from coordinator_api import CoordinatorApiError


class StaleEpochError(CoordinatorApiError):
    """A write carried an epoch older than one the store has already accepted: it comes from a
    member that no longer leads. Drop the write; the writer must stop acting as leader.

    :ivar epoch: the epoch the write carried.
    :ivar highest: the newest epoch the fence has accepted.
    """

    def __init__(self, epoch: int, highest: int) -> None:
        super().__init__(
            f"write with leadership epoch {epoch} refused: epoch {highest} has already written; "
            "the writer no longer leads"
        )
        self.epoch = epoch
        self.highest = highest


class EpochFence:
    """Admit writes whose epoch is at least the newest one seen, as ZooKeeper's fencing tokens.

    Keep one per resource the leader writes, next to it (in the same process as the store, or
    persist :attr:`highest` with the data so the fence survives restarts)::

        fence = EpochFence()

        def write(key, value, epoch):
            with fence.admitting(epoch):   # raises StaleEpochError for a deposed leader
                store[key] = value

    :param highest: the newest epoch already accepted (e.g. read back from the store).
    """

    def __init__(self, highest: int = -1) -> None:
        self._highest = highest
        self._lock = threading.RLock()  # reading `highest` inside `admitting` is fine

    @property
    def highest(self) -> int:
        """The newest epoch accepted so far."""
        with self._lock:
            return self._highest

    def admit(self, epoch: int) -> None:
        """Accept ``epoch`` (and remember it if it is new) or raise.

        :raises StaleEpochError: ``epoch`` is older than one already accepted.
        :raises TypeError: ``epoch`` is not an int.
        """
        with self.admitting(epoch):
            pass

    def admitting(self, epoch: int) -> _Admitted:
        """Context manager form of :meth:`admit` that holds the fence while the write runs, so
        a newer leader's write cannot be overtaken by an older one in between."""
        return _Admitted(self, epoch)


class _Admitted:
    def __init__(self, fence: EpochFence, epoch: int) -> None:
        self._fence = fence
        self._epoch = epoch

    def __enter__(self) -> None:
        self._fence._lock.acquire()
        try:
            if not isinstance(self._epoch, int) or isinstance(self._epoch, bool):
                raise TypeError(f"a leadership epoch is an int, got {self._epoch!r}")
            if self._epoch < self._fence._highest:
                raise StaleEpochError(self._epoch, self._fence._highest)
            self._fence._highest = self._epoch
        except BaseException:
            self._fence._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        self._fence._lock.release()
