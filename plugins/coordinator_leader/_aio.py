"""``AsyncLeaderElection``: the election for asyncio services."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any

from coordinator_leader._election import LeaderElection, LeaderInfo, Leadership, NotLeaderError

AsyncElectedCallback = Callable[[int], Awaitable[None] | None]
AsyncRevokedCallback = Callable[[], Awaitable[None] | None]


class AsyncLeaderElection:
    """:class:`LeaderElection` for asyncio: the same arguments; the blocking calls are
    coroutines, and ``on_elected``/``on_revoked`` may be coroutine functions, run on the event
    loop that called :meth:`start`::

        async with AsyncLeaderElection("scheduler", bootstrap, name="node-1") as election:
            async with election.leadership() as term:
                while term.active:
                    await write(..., epoch=term.epoch)
                    await asyncio.sleep(1)
    """

    def __init__(
        self,
        group_id: str,
        bootstrap_servers: str | list[str],
        name: str,
        *,
        on_elected: AsyncElectedCallback | None = None,
        on_revoked: AsyncRevokedCallback | None = None,
        **options: Any,
    ) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_elected = on_elected
        self._on_revoked = on_revoked
        self._election = LeaderElection(
            group_id,
            bootstrap_servers,
            name,
            on_elected=self._elected if on_elected else None,
            on_revoked=self._revoked if on_revoked else None,
            **options,
        )

    @property
    def election(self) -> LeaderElection:
        """The underlying blocking election."""
        return self._election

    async def start(self) -> AsyncLeaderElection:
        self._loop = asyncio.get_running_loop()
        self._election.start()
        return self

    async def close(self, timeout: float = 30.0) -> None:
        await asyncio.to_thread(self._election.close, timeout)

    async def __aenter__(self) -> AsyncLeaderElection:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def is_leader(self) -> bool:
        return self._election.is_leader()

    def leader(self) -> str | None:
        return self._election.leader()

    def leader_info(self) -> LeaderInfo | None:
        return self._election.leader_info()

    def epoch(self) -> int:
        return self._election.epoch()

    async def wait_until_leader(self, timeout: float | None = None) -> bool:
        return await asyncio.to_thread(self._election.wait_until_leader, timeout)

    async def resign(self) -> None:
        await asyncio.to_thread(self._election.resign)

    @contextlib.asynccontextmanager
    async def leadership(
        self, timeout: float | None = None, *, resign_on_exit: bool = True
    ) -> AsyncIterator[Leadership]:
        """As :meth:`LeaderElection.leadership`; ``await asyncio.to_thread(term.wait, t)`` or poll
        ``term.active`` to learn when leadership ends."""
        if not await self.wait_until_leader(timeout):
            raise NotLeaderError(
                f"not elected within {timeout} s",
                group_id=self._election.group_id,
                member_id=self._election.member_id,
            )
        manager = self._election.leadership(0, resign_on_exit=resign_on_exit)
        term = manager.__enter__()
        try:
            yield term
        finally:
            await asyncio.to_thread(manager.__exit__, None, None, None)

    def _elected(self, epoch: int) -> None:
        self._dispatch(self._on_elected, epoch)

    def _revoked(self) -> None:
        self._dispatch(self._on_revoked)

    def _dispatch(self, callback: Callable[..., Awaitable[None] | None] | None, *args: Any) -> None:
        loop = self._loop
        if callback is None or loop is None or loop.is_closed():
            return

        def run() -> None:
            result = callback(*args)
            if asyncio.iscoroutine(result):
                loop.create_task(result)

        loop.call_soon_threadsafe(run)
