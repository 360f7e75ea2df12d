"""The embedded coordinator in a background thread, for programs and tests."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import final

from coordinator_api._errors import CoordinatorStartError
from coordinator_api._plugins._manager import PluginRegistry
from coordinator_api.server._config import CoordinatorConfig
from coordinator_api.server._listeners import Listener
from coordinator_api.server._sasl import SaslSettings
from coordinator_api.server._server import CoordinatorServer
from coordinator_api.server._tls import TlsSettings


@final
class EmbeddedCoordinator:
    """A Kafka-protocol group coordinator running in a background thread of this process.

    Use it as a context manager; point any Kafka client at :attr:`bootstrap_servers`::

        with EmbeddedCoordinator(topics={"events": 12}) as coordinator:
            consumer = KafkaConsumer("events", group_id="g",
                                     bootstrap_servers=coordinator.bootstrap_servers)

    :param host: address to listen on (127.0.0.1 unless told otherwise).
    :param port: 0 picks a free port.
    :param config: coordinator settings (:class:`CoordinatorConfig`).
    :param data_dir: directory for durable state; ``None`` keeps state in memory.
    :param topics: topics to declare (name -> partition count).
    :param fresh_start: start empty even though ``data_dir`` held state whose database is
        missing, empty or damaged (the old database is kept aside, never deleted).
    :param tls: speak TLS (:class:`~coordinator_api.server.TlsSettings`); None: plaintext.
    :param sasl: clients authenticate first (:class:`~coordinator_api.server.SaslSettings`).
    :param listeners: several listeners (:class:`~coordinator_api.server.Listener`), each with its
        address and security protocol, instead of the one ``host``, ``port``, ``tls`` and
        ``sasl`` describe; :attr:`bootstrap_servers` is then the first one's, and
        :meth:`bootstrap_servers_of` gives each.
    :param plugins: where the server-side assignors come from (default: the installed plugins);
        a registry of one's own (``PluginRegistry.load(plugin_manager)``) tests a plugin's
        server-side assignor without installing it.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: CoordinatorConfig | None = None,
        data_dir: str | Path | None = None,
        topics: Mapping[str, int] | None = None,
        fresh_start: bool = False,
        tls: TlsSettings | None = None,
        sasl: SaslSettings | None = None,
        listeners: Sequence[Listener] | None = None,
        plugins: PluginRegistry | None = None,
    ) -> None:
        self._server = CoordinatorServer(
            host=host,
            port=port,
            config=config,
            data_dir=data_dir,
            topics=topics,
            fresh_start=fresh_start,
            tls=tls,
            sasl=sasl,
            listeners=listeners,
            plugins=plugins,
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for Kafka clients' ``bootstrap_servers``."""
        if self._thread is None:
            raise CoordinatorStartError("the embedded coordinator is not started; call start()")
        return self._server.bootstrap_servers

    def bootstrap_servers_of(self, listener: str) -> str:
        """``host:port`` of the listener of that name, for clients that connect there."""
        if self._thread is None:
            raise CoordinatorStartError("the embedded coordinator is not started; call start()")
        return self._server.bootstrap_servers_of(listener)

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def network_thread_answers(self) -> int:
        """How many heartbeats the network threads answered themselves (``network_thread``)."""
        return self._server.network_thread_answers

    def start(self) -> EmbeddedCoordinator:
        """Start the server thread and wait until it listens."""
        if self._thread is not None:
            return self
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="embedded-coordinator", daemon=True
        )
        self._thread.start()
        try:
            started.result()
        except BaseException:
            self._thread.join()
            self._thread = None
            raise
        return self

    def _run(self, started: concurrent.futures.Future[None]) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stopped = asyncio.Event()
            try:
                await self._server.start()
            except BaseException as exc:
                started.set_exception(exc)
                return
            started.set_result(None)
            await self._stopped.wait()
            await self._server.close()

        asyncio.run(main())

    def close(self) -> None:
        """Stop the server and wait for its thread. Idempotent."""
        thread, loop, stopped = self._thread, self._loop, self._stopped
        if thread is None or loop is None or stopped is None:
            return
        loop.call_soon_threadsafe(stopped.set)
        thread.join()
        self._thread = None

    def create_topic(self, name: str, partitions: int) -> None:
        """Declare a topic while running (as CreateTopics would). Raises ConfigurationError
        for an invalid name or partition count, or a topic that exists."""
        loop = self._loop
        if self._thread is None or loop is None:
            raise CoordinatorStartError("the embedded coordinator is not started; call start()")

        async def create() -> None:
            self._server.create_topic(name, partitions)

        asyncio.run_coroutine_threadsafe(create(), loop).result()

    def create_partitions(self, name: str, count: int) -> None:
        """Give a topic more partitions while running, ``count`` in all (as CreatePartitions,
        ``kafka-topics --alter --partitions``, would). Consumer groups subscribed to it move to
        a new group epoch at their next heartbeat, and their members get the new partitions.
        Raises ConfigurationError for a topic that does not exist or a count that is not more
        than it has."""
        loop = self._loop
        if self._thread is None or loop is None:
            raise CoordinatorStartError("the embedded coordinator is not started; call start()")

        async def create() -> None:
            self._server.create_partitions(name, count)

        asyncio.run_coroutine_threadsafe(create(), loop).result()

    def __enter__(self) -> EmbeddedCoordinator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
