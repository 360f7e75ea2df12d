"""The result collector: a small authenticated server on the driver that keeps every result.

A member hands each result here *before* it commits the unit's completion, so a result whose
completion the coordinator accepted is on the driver even if its executor dies a moment
later; the commit's metadata names the delivery (its token). Deliveries whose commit never
landed (the executor died first, or the coordinator fenced a zombie) stay here too: they are
the duplicates :class:`~coordinator_spark.Distribution` counts.

The transport is :mod:`multiprocessing.connection` over TCP: an HMAC challenge with a random
per-job key authenticates each connection before anything is unpickled, so only the job's own
tasks can deliver.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from typing import Any, final

log = logging.getLogger("coordinator_spark.collector")

__all__ = ["CollectorClient", "Delivery", "ResultCollector"]


@dataclass(frozen=True, slots=True)
class Delivery:
    """One result a member delivered.

    :ivar token: its number, unique within the job (the commit metadata names it).
    :ivar unit: the unit's index in the job's unit list.
    :ivar result: what ``process`` returned.
    :ivar executor_id: the Spark executor that produced it.
    :ivar slot: the member's slot name.
    :ivar member_id: the member's id in the group.
    :ivar generation: the generation the member held the unit in.
    :ivar attempt: the how-manieth delivery of this unit it is (1 for the first).
    :ivar received: ``time.monotonic()`` on the driver when it arrived.
    """

    token: int
    unit: int
    result: Any
    executor_id: str
    slot: str
    member_id: str
    generation: int
    attempt: int
    received: float


@final
class ResultCollector:
    """The driver's side: listens on ``host``, keeps deliveries, says when the job is finished.

    :param host: the address executors reach the driver at (``spark.driver.host``).
    """

    def __init__(self, host: str) -> None:
        self.authkey = secrets.token_bytes(32)
        self._listener = Listener((host, 0), authkey=self.authkey)
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._per_unit: dict[int, int] = {}
        self._finished = threading.Event()
        self._closed = False
        self._connections: list[Connection] = []
        self._thread = threading.Thread(target=self._accept, name="spark-result-collector", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """(host, port) the tasks connect to."""
        host, port = self._listener.address
        return str(host), int(port)

    def finish(self) -> None:
        """Tell the members, when they next ask, that every unit is done."""
        self._finished.set()

    def deliveries(self) -> list[Delivery]:
        """Every delivery so far, in arrival order."""
        with self._lock:
            return list(self._deliveries)

    def delivered(self) -> int:
        """How many results have arrived (duplicates included)."""
        with self._lock:
            return len(self._deliveries)

    def close(self) -> None:
        """Stop listening and end the connections. Idempotent.

        Each connection is closed by the thread that serves it: its socket is shut down here,
        which wakes that thread's read with EOF. (Closing it from here under that read made the
        read fail inside multiprocessing with a TypeError, in the thread.)"""
        if self._closed:
            return
        self._closed = True
        self._listener.close()
        with self._lock:  # held, so that no thread closes one (and its descriptor is reused) meanwhile
            for connection in self._connections:
                with (
                    socket.fromfd(connection.fileno(), socket.AF_INET, socket.SOCK_STREAM) as duplicate,
                    contextlib.suppress(OSError),  # its peer has gone already
                ):
                    duplicate.shutdown(socket.SHUT_RDWR)

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection = self._listener.accept()
            except OSError:
                return  # closed
            except Exception:  # a peer without the key, or one that hung up mid-handshake
                log.warning("refused a result connection", exc_info=True)
                continue
            with self._lock:
                if self._closed:  # closed while this one was accepted: close() has not seen it
                    connection.close()
                    return
                self._connections.append(connection)
            threading.Thread(
                target=self._serve, args=(connection,), name="spark-result-connection", daemon=True
            ).start()

    def _serve(self, connection: Connection) -> None:
        try:
            while True:
                message = connection.recv()
                if message[0] == "deliver":
                    connection.send(self._deliver(*message[1:]))
                elif message[0] == "finished":
                    connection.send(self._finished.is_set())
                else:
                    connection.send(None)
        except (EOFError, OSError):
            pass  # the task ended, its executor died, or the collector was closed
        finally:
            with self._lock:
                self._connections.remove(connection)
                connection.close()

    def _deliver(
        self, unit: int, result: Any, executor_id: str, slot: str, member_id: str, generation: int
    ) -> int:
        with self._lock:
            token = len(self._deliveries)
            attempt = self._per_unit.get(unit, 0) + 1
            self._per_unit[unit] = attempt
            self._deliveries.append(
                Delivery(
                    token=token,
                    unit=unit,
                    result=result,
                    executor_id=executor_id,
                    slot=slot,
                    member_id=member_id,
                    generation=generation,
                    attempt=attempt,
                    received=time.monotonic(),
                )
            )
        return token


@final
class CollectorClient:
    """A task's side: one connection to the driver's collector."""

    def __init__(self, address: tuple[str, int], authkey: bytes) -> None:
        self._connection = Client(address, authkey=authkey)

    def deliver(
        self, unit: int, result: Any, *, executor_id: str, slot: str, member_id: str, generation: int
    ) -> int:
        """Hand a result to the driver; returns its token once the driver holds it."""
        self._connection.send(("deliver", unit, result, executor_id, slot, member_id, generation))
        token: int = self._connection.recv()
        return token

    def finished(self) -> bool:
        """Whether the driver has seen every unit done."""
        self._connection.send(("finished",))
        return bool(self._connection.recv())

    def close(self) -> None:
        self._connection.close()
