"""A request that changes a group has its answers written before its membership log lines.

The coordinator logs every membership event (one line per member a change moves); logging
first would make the members the change concerns wait for it. The server here runs on an event
loop with its connection's transport recording what is written, so the order is seen exactly.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from wire_requests import consumer_group_join

from coordinator_api.server import CoordinatorConfig
from coordinator_api.server._server import CoordinatorServer, _Connection


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written: list[bytes] = []

    def write(self, data: Any) -> None:
        self.written.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def test_a_join_is_answered_before_its_membership_events_are_logged() -> None:
    async def run() -> list[tuple[str, int]]:
        server = CoordinatorServer(config=CoordinatorConfig(initial_rebalance_delay_ms=0), topics={"t": 4})
        await server.start()
        transport = RecordingTransport()
        logged: list[tuple[str, int]] = []  # (event, answers written when it was logged)

        class Recorder(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                event = getattr(record, "membership_event", None)
                if event is not None:
                    logged.append((event["kind"], len(transport.written)))

        logger = logging.getLogger("coordinator_api.server.membership")
        recorder, level = Recorder(), logger.level
        logger.addHandler(recorder)
        logger.setLevel(logging.INFO)
        try:
            conn = _Connection(server, server.listeners[0])
            conn.connection_made(transport)
            request = consumer_group_join(uuid.uuid4().hex, 1)
            conn.get_buffer(len(request))[: len(request)] = request  # as asyncio reads it
            conn.buffer_updated(len(request))
            await asyncio.sleep(0)  # whatever the server left for the loop's next turn
            assert len(transport.written) == 1, "the join was not answered"
            return logged
        finally:
            logger.removeHandler(recorder)
            logger.setLevel(level)
            await server.close()

    logged = asyncio.run(run())
    assert logged, "the join logged no membership event"
    assert all(written == 1 for _, written in logged), logged
