"""An asyncio facade over the same member state machine, for asyncio services."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType
from typing import final

from coordinator_api._coordinator import Coordinator
from coordinator_api._types import Generation


@final
class AsyncCoordinator:
    """Drive a :class:`Coordinator` from asyncio code without blocking the event loop.

    ::

        async with AsyncCoordinator(MyCoordinator("g", bootstrap)) as member:
            await member.ensure_active_group(timeout=30)
            while running:
                await member.poll(1.0)

    The heartbeat thread works as for the blocking API. The callbacks (``metadata``,
    ``perform_assignment``, ``on_join_complete``, ...) run on a worker thread of the event
    loop's default executor, one call at a time, never on the event loop itself; hand results to
    the loop with ``loop.call_soon_threadsafe`` if the loop must see them.
    """

    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator
        # One blocking call at a time, so callbacks never run concurrently.
        self._lock = asyncio.Lock()

    async def _call(self, fn: Callable[..., object], *args: object) -> None:
        async with self._lock:
            await asyncio.to_thread(fn, *args)

    async def ensure_active_group(self, timeout: float | None = None) -> None:
        """Join if needed and wait for a settled assignment (see Coordinator.ensure_active_group)."""
        await self._call(self.coordinator.ensure_active_group, timeout)

    async def poll(self, timeout: float = 0.0) -> None:
        """Follow the group for up to ``timeout`` seconds (see Coordinator.poll)."""
        await self._call(self.coordinator.poll, timeout)

    async def request_rejoin(self, reason: str) -> None:
        await self._call(self.coordinator.request_rejoin, reason)

    async def leave_group(self, reason: str = "the application left") -> None:
        await self._call(self.coordinator.leave_group, reason)

    async def close(self) -> None:
        await self._call(self.coordinator.close)

    def generation(self) -> Generation:
        return self.coordinator.generation()

    def generation_if_stable(self) -> Generation | None:
        return self.coordinator.generation_if_stable()

    @property
    def member_id(self) -> str:
        return self.coordinator.member_id

    async def __aenter__(self) -> AsyncCoordinator:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
