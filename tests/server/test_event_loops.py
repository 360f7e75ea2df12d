"""The coordinator on another event loop than asyncio's own: uvloop's, which an application
embedding :class:`CoordinatorServer` may well run (uvicorn does when it is installed). Its
transports have asyncio.Transport's methods without subclassing it. Real clients join groups
over plain TCP and over TLS, classic and incremental (KIP-848)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import trustme
import uvloop
from certificates import certified_member, issue_pki
from confluent_kafka import Consumer
from coordinator_consumer import ConsumerGroupMember
from kafka.admin import KafkaAdminClient
from member_processes import wait_for

from coordinator_api.server import CoordinatorConfig, CoordinatorServer, TlsSettings

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)


class OnUvloop:
    """A :class:`CoordinatorServer` started and served in a thread of its own, on uvloop."""

    def __init__(self, **server: Any) -> None:
        self.server = CoordinatorServer(topics={"t": 4}, config=CONFIG, **server)
        self.loop_type: type | None = None
        self._started = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=uvloop.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.loop_type = type(self._loop)
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:
            self._failure = exc
            raise
        finally:
            self._started.set()
        await self._stop.wait()
        await self.server.close()

    def __enter__(self) -> CoordinatorServer:
        self._thread.start()
        assert self._started.wait(30), "the server did not start"
        if self._failure is not None:
            raise self._failure
        return self.server

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "the server did not stop"


def consumer(bootstrap: str, group: str, **settings: str) -> Consumer:
    client = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0, **settings})
    client.subscribe(["t"])
    return client


def test_classic_and_incremental_groups_form_on_uvloop() -> None:
    running = OnUvloop()
    with running as server:
        # uvloop's loop, not asyncio's: otherwise this would prove nothing.
        assert running.loop_type is uvloop.Loop and not issubclass(running.loop_type, asyncio.BaseEventLoop)
        bootstrap = server.bootstrap_servers
        # Two librdkafka consumers of the classic protocol share the topic; one of KIP-848's
        # protocol has it alone in its own group.
        first = consumer(bootstrap, "classic", **{"partition.assignment.strategy": "range"})
        second = consumer(bootstrap, "classic", **{"partition.assignment.strategy": "range"})
        incremental = consumer(bootstrap, "incremental", **{"group.protocol": "consumer"})
        try:

            def settled() -> bool:
                for client in (first, second, incremental):
                    client.poll(0.05)
                return (
                    len(first.assignment()) == len(second.assignment()) == 2
                    and len(incremental.assignment()) == 4
                )

            wait_for(settled, 30, "both groups to settle")
            owned = {p.partition for p in first.assignment()} | {p.partition for p in second.assignment()}
            assert owned == {0, 1, 2, 3}
        finally:
            for client in (first, second, incremental):
                client.close()
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            # Both left when closed, and the server answered their LeaveGroups.
            assert admin.describe_groups(["classic"])["classic"]["group_state"] == "Empty"
        finally:
            admin.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return issue_pki(trustme.CA(), tmp_path_factory.mktemp("pki"))


def owns(member: ConsumerGroupMember, partitions: int) -> bool:
    member.poll(0.05)
    return len(member.assignment()) == partitions


def test_a_member_with_a_client_certificate_joins_over_tls_on_uvloop(pki: dict[str, Path]) -> None:
    # uvloop's TLS transport hands the handshake's client certificate to the server, which
    # names the connection's principal after it (as Kafka's default mapping does).
    tls = TlsSettings(certfile=pki["server"], cafile=pki["ca"], client_auth="required")
    with OnUvloop(tls=tls) as server:
        member = certified_member(server.bootstrap_servers, pki)
        try:
            wait_for(lambda: owns(member, 4), 30, "a member with a client certificate")
            principals = {conn.principal for conn in list(server._connections)}
            assert any(p is not None and p.startswith("User:CN=client,") for p in principals), principals
        finally:
            member.close()


def test_a_server_on_uvloop_stops_with_its_connections_open() -> None:
    with OnUvloop() as server:
        member = ConsumerGroupMember("open", server.bootstrap_servers, topics=["t"])
        wait_for(lambda: owns(member, 4), 30, "a member")
    # Stopped (the context manager checked its thread ended) while the member was connected.
    member.close()
