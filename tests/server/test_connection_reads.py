"""Every connection of the embedded coordinator reads into the server's one buffer: what one
connection read must be its own, whole, however the reads of several connections interleave."""

from __future__ import annotations

import asyncio
import uuid

from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._server import CoordinatorServer
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse


def join(member_id: str, correlation_id: int) -> bytes:
    request = ConsumerGroupHeartbeatRequest(
        version=1,
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=[],
    )
    request.with_header(correlation_id=correlation_id, client_id="c")
    return bytes(request.encode(header=True, framed=True))


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
            first = join(a, 7)
            wa.write(first[:30])  # A's request, the first part
            await wa.drain()
            await asyncio.sleep(0.05)  # read by the server before B's
            wb.write(join(b, 9))
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
