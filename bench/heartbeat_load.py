"""Heartbeat load for the benchmarks: members that heartbeat back to back on their own
connections, cheaply enough that the server, not the load generator, sets the rate.

``bench_coordinator.py`` drives classic Heartbeats with it, ``bench_incremental.py``
ConsumerGroupHeartbeats. Before, each generator built and decoded every heartbeat with
kafka-python's classes and read into a new bytes object per read; it needed several times the
CPU per heartbeat that a server did, so two of them held most of a 2-core machine and the rate
measured them more than the servers (docs/benchmarks.md, "The heartbeat generators measured
themselves").
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections import Counter
from typing import Any


def take_frames(buffer: bytearray) -> list[bytes]:
    """The whole size-prefixed frames at the start of ``buffer`` (Kafka's framing), each
    without its size, taken out of it; what is left is the start of the next one."""
    frames = []
    while len(buffer) >= 4:
        (size,) = struct.unpack_from(">i", buffer)
        if len(buffer) < 4 + size:
            break
        frames.append(bytes(buffer[4 : 4 + size]))
        del buffer[: 4 + size]
    return frames


class HeartbeatLoop(asyncio.BufferedProtocol):
    """One member's heartbeats back to back on a connection already open (it takes over the
    connection's transport): the next request is sent from the callback that read the previous
    answer, until ``end`` (seconds since the epoch); then ``done`` is resolved. Made inside the
    event loop it runs on.

    The request is encoded once, with kafka-python's classes, and sent again with the next
    correlation id. An answer whose bytes after its correlation id are those of the last answer
    decoded without an error is that same answer; any other is decoded in full. Answers that
    arrive after ``end`` are not counted."""

    def __init__(
        self,
        transport: asyncio.Transport,
        request: Any,
        response_cls: Any,
        client_id: str,
        end: float,
    ) -> None:
        request.with_header(correlation_id=0, client_id=client_id)
        self._request = bytearray(request.encode(header=True, framed=True))
        self._version = request.version
        self._response_cls = response_cls
        self._transport = transport
        self.end = end
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._view = memoryview(bytearray(65536))
        self._pending = bytearray()
        self._correlation_id = 0
        self._steady: bytes | None = None  # the last good answer after its correlation id
        self.answered = 0
        self.errors: Counter[int] = Counter()  # answers by error code
        transport.set_protocol(self)

    def send(self) -> None:
        self._correlation_id += 1
        struct.pack_into(">i", self._request, 8, self._correlation_id)  # after size, key, version
        self._transport.write(bytes(self._request))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        self._pending += self._view[:nbytes]
        for payload in take_frames(self._pending):
            self._answer(payload)

    def _answer(self, payload: bytes) -> None:
        (correlation_id,) = struct.unpack_from(">i", payload)
        if correlation_id != self._correlation_id:
            self._fail(ConnectionError(f"answer {correlation_id} to request {self._correlation_id}"))
            return
        if time.time() > self.end:
            if not self.done.done():
                self.done.set_result(None)
            return
        body = payload[4:]
        if body == self._steady:
            self.answered += 1
        else:
            reply = self._response_cls.decode(payload, version=self._version, header=True)
            if reply.error_code == 0:
                self.answered += 1
                self._steady = body
            else:
                self.errors[reply.error_code] += 1
        self.send()

    def _fail(self, exc: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(exc or ConnectionResetError("connection closed by the server"))


LATE_ANSWER_S = 30.0  # an answer this long after the end: the server stopped answering


async def heartbeat_back_to_back(loops: list[HeartbeatLoop], start: float) -> tuple[float, float]:
    """Start every loop at ``start`` (seconds since the epoch) and wait until each has ended.
    Returns when sending started and the CPU seconds this process spent from then on. Raises if
    a loop failed, or TimeoutError if an answer did not come within :data:`LATE_ANSWER_S` of the
    last loop's end."""
    end = max(loop.end for loop in loops)
    await asyncio.sleep(max(0.0, start - time.time()))
    cpu0, started = time.process_time(), time.time()
    for loop in loops:
        loop.send()
    await asyncio.wait_for(
        asyncio.gather(*(loop.done for loop in loops)), max(0.0, end - time.time()) + LATE_ANSWER_S
    )
    return started, time.process_time() - cpu0
