"""The driver's result collector (coordinator_spark/_collector.py), over real connections:
closing it while tasks are connected ends each connection's thread without an error."""

from __future__ import annotations

import threading
import time

import pytest
from coordinator_spark._collector import CollectorClient, ResultCollector


def test_closing_the_collector_ends_every_connection_cleanly() -> None:
    errors: list[BaseException | None] = []
    previous = threading.excepthook
    threading.excepthook = lambda hook: errors.append(hook.exc_value)
    try:
        for _ in range(10):
            collector = ResultCollector("127.0.0.1")
            clients = [CollectorClient(collector.address, collector.authkey) for _ in range(3)]
            token = clients[0].deliver(7, "result", executor_id="e1", slot="0", member_id="m", generation=1)
            assert (token, [c.finished() for c in clients]) == (0, [False] * 3)
            # Each connection's thread now waits for its client's next request; closing must
            # wake it, not close the connection under its read (which failed with a TypeError
            # inside multiprocessing, in the thread).
            collector.close()
            for client in clients:
                with pytest.raises((EOFError, OSError)):
                    client.finished()
            deadline = time.monotonic() + 10
            while any(t.name == "spark-result-connection" for t in threading.enumerate()):
                assert time.monotonic() < deadline, "a connection's thread outlived the collector"
                time.sleep(0.01)
            assert [d.unit for d in collector.deliveries()] == [7]
    finally:
        threading.excepthook = previous
    assert errors == []
