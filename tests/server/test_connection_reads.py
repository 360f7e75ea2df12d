"""Every connection of the embedded coordinator reads into the server's one buffer: what one
connection read must be its own, whole, however the reads of several connections interleave."""

from __future__ import annotations

import asyncio
import ssl
import uuid
from pathlib import Path

import pytest
import trustme
from certificates import issue_pki
from wire_requests import consumer_group_join

from coordinator_api import TlsSettings
from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._config import READ_BYTES
from coordinator_api.server._server import CoordinatorServer
from coordinator_api.server.schemas import ConsumerGroupHeartbeatResponse


async def answer(reader: asyncio.StreamReader) -> tuple[int, str]:
    size = int.from_bytes(await reader.readexactly(4), "big")
    response = ConsumerGroupHeartbeatResponse.decode(await reader.readexactly(size), version=1, header=True)
    assert response.error_code == 0, response
    return response.header.correlation_id, response.member_id


def test_requests_split_across_reads_on_several_connections_each_arrive_whole() -> None:
    async def run() -> None:
        server = CoordinatorServer(config=CoordinatorConfig(initial_rebalance_delay_ms=0), topics={"t": 4})
        await server.start()
        try:
            port = server.ports[server.listeners[0].name]
            (ra, wa), (rb, wb) = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
            a, b = uuid.uuid4().hex, uuid.uuid4().hex
            first = consumer_group_join(a, 7)
            wa.write(first[:30])  # A's request, the first part
            await wa.drain()
            await asyncio.sleep(0.05)  # read by the server before B's
            wb.write(consumer_group_join(b, 9))
            await wb.drain()
            assert await asyncio.wait_for(answer(rb), 10) == (9, b)
            wa.write(first[30:])  # the rest, read after B's whole request
            await wa.drain()
            assert await asyncio.wait_for(answer(ra), 10) == (7, a)
            for w in (wa, wb):
                w.close()
        finally:
            await server.close()

    asyncio.run(run())


@pytest.mark.parametrize("over_tls", [False, True], ids=["plain", "tls"])
def test_a_request_larger_than_one_read_arrives_whole(over_tls: bool, tmp_path: Path) -> None:
    """A subscription to thousands of topics, three reads' worth: asyncio fills the buffer, hands
    it over, and reads the rest into it again (over TLS too, where the TLS layer does the reads)."""
    pki = issue_pki(trustme.CA(), tmp_path)
    tls = TlsSettings(certfile=pki["server"]) if over_tls else None
    client_tls = ssl.create_default_context(cafile=str(pki["ca"])) if over_tls else None
    topics = ["t"] + [f"topic-{i:06d}-{'x' * 20}" for i in range(3 * READ_BYTES // 30)]
    member = uuid.uuid4().hex
    request = consumer_group_join(member, 5, topics)
    assert len(request) > 2 * READ_BYTES

    async def run() -> None:
        config = CoordinatorConfig(initial_rebalance_delay_ms=0)
        server = CoordinatorServer(config=config, topics={"t": 4}, tls=tls)
        await server.start()
        try:
            port = server.ports[server.listeners[0].name]
            reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_tls)
            writer.write(request)
            await writer.drain()
            assert await asyncio.wait_for(answer(reader), 30) == (5, member)
            writer.close()
        finally:
            await server.close()

    asyncio.run(run())
