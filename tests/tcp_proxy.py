"""A TCP forwarder between Kafka clients and a server, for tests, on 127.0.0.1.

A Kafka client bootstraps through ``bootstrap_servers`` only: it then connects to the address
the server *advertises* in Metadata and FindCoordinator. So a forwarder that a client must cross
is the address the server advertises (``Listener(advertised_port=...)``, as Kafka's
``advertised.listeners``), not merely a bootstrap address. :class:`ProxyThread` listens on a
port of its own, known before the server starts, so that the server can advertise it.

The proxy reads the header of the first request of each connection, which names the client
(``client_id``), and :meth:`ProxyThread.drop` blackholes the connections of one client: it stops
forwarding in both directions without closing anything (bytes and closes wait in the proxy, new
connections are accepted and held), as a network partition would; :meth:`ProxyThread.heal` lets
everything through again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import struct
import threading
import time


def _client_id(frame: bytes) -> str | None:
    """The client id in a request header (api key, api version, correlation id, client id)."""
    if len(frame) < 10:
        return None
    (length,) = struct.unpack_from(">h", frame, 8)
    if length < 0 or len(frame) < 10 + length:
        return None
    return frame[10 : 10 + length].decode("utf-8", "replace")


class PartitionProxy:
    """Forwards connections on 127.0.0.1 to ``target``; can blackhole one client's connections.
    Runs on one event loop (:class:`ProxyThread` gives it one)."""

    def __init__(self) -> None:
        self.target: tuple[str, int] | None = None  # set before the first client connects
        self.port = 0
        self._open: dict[str, asyncio.Event] = {}
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.clients: set[str] = set()  # client ids seen

    def _gate(self, client_id: str) -> asyncio.Event:
        gate = self._open.get(client_id)
        if gate is None:
            gate = self._open[client_id] = asyncio.Event()
            gate.set()
        return gate

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for gate in self._open.values():
            gate.set()
        for w in list(self._writers):
            w.close()

    def set_dropped(self, client_id: str, dropped: bool) -> None:
        gate = self._gate(client_id)
        if dropped:
            gate.clear()
        else:
            gate.set()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            head = await reader.readexactly(4)
            (size,) = struct.unpack(">i", head)
            frame = await reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        client_id = _client_id(frame) or "?"
        self.clients.add(client_id)
        gate = self._gate(client_id)
        await gate.wait()
        try:
            assert self.target is not None, "the proxy's target is set once the server has started"
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers.add(up_writer)
        up_writer.write(head + frame)
        await asyncio.gather(
            self._pump(reader, up_writer, gate), self._pump(up_reader, writer, gate), return_exceptions=True
        )
        self._writers.discard(writer)
        self._writers.discard(up_writer)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, gate: asyncio.Event
    ) -> None:
        try:
            while True:
                data = await source.read(65536)
                await gate.wait()  # a partition holds the bytes (and the close) until it heals
                if not data:
                    break
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()


class ProxyThread:
    """A :class:`PartitionProxy` on an event loop of its own thread, listening from
    ``__enter__`` on; set ``target`` once the server behind it has its port."""

    def __init__(self) -> None:
        self.proxy = PartitionProxy()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.proxy.port

    @property
    def target(self) -> tuple[str, int] | None:
        return self.proxy.target

    @target.setter
    def target(self, target: tuple[str, int]) -> None:
        self.proxy.target = target

    @property
    def clients(self) -> set[str]:
        """The client ids of every connection seen so far."""
        return self.proxy.clients

    def __enter__(self) -> ProxyThread:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(started),), daemon=True)
        self._thread.start()
        started.result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._stopped is not None and self._thread is not None
        self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(10)

    async def _main(self, started: concurrent.futures.Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        try:
            await self.proxy.start()
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(None)
        await self._stopped.wait()
        await self.proxy.close()

    def _set(self, client_id: str, dropped: bool) -> None:
        assert self._loop is not None
        proxy = self.proxy

        async def apply() -> None:
            proxy.set_dropped(client_id, dropped)

        asyncio.run_coroutine_threadsafe(apply(), self._loop).result(5)

    def drop(self, client_id: str) -> float:
        """Partition ``client_id`` from the server; returns the moment it took effect."""
        self._set(client_id, True)
        return time.monotonic()

    def heal(self, client_id: str) -> float:
        self._set(client_id, False)
        return time.monotonic()
