"""Bootstrap -> FindCoordinator, the one lookup that members and ``coordinator-api groups`` share."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from coordinator_api import EmbeddedCoordinator, GroupError
from coordinator_api._inspect import describe_group, find_coordinator
from coordinator_api._membership._driver import CoordinatorNotFoundError, FoundCoordinator
from coordinator_api._membership._driver import find_coordinator as find_coordinator_async
from coordinator_api._protocol import ErrorCode


class Manager:
    """Just enough of kafka-python's KafkaConnectionManager, answering FindCoordinator with ``answer``."""

    def __init__(self, answer: Any, node: str | None = "bootstrap-0") -> None:
        self.answer = answer
        self.node = node
        self.bootstrapped = False
        self.sent: list[tuple[Any, Any]] = []
        self.registered: list[tuple[Any, int, str]] = []
        self.cluster = SimpleNamespace(add_coordinator=self.add_coordinator)

    async def bootstrap_async(self, timeout_ms: int) -> None:
        self.bootstrapped = True

    def least_loaded_node(self) -> str | None:
        return self.node

    async def send(self, request: Any, node_id: Any, request_timeout_ms: int) -> Any:
        self.sent.append((request, node_id))
        return self.answer

    def add_coordinator(self, result: Any, key_type: int, key: str) -> str:
        self.registered.append((result, key_type, key))
        return f"coordinator-{result.node_id}"


def coordinators(error_code: int, node_id: int = 2) -> Any:
    """A v4+ answer: one entry per key."""
    return SimpleNamespace(coordinators=[SimpleNamespace(error_code=error_code, node_id=node_id)])


def test_bootstraps_asks_and_registers_the_coordinator() -> None:
    manager = Manager(coordinators(ErrorCode.NONE, node_id=2))
    found = asyncio.run(find_coordinator_async(manager, "g", timeout_ms=1000))  # type: ignore[arg-type]
    assert found == FoundCoordinator(broker_id=2, node="coordinator-2")
    assert manager.bootstrapped
    ((request, node),) = manager.sent
    assert node == "bootstrap-0" and request.key == "g" and request.coordinator_keys == ["g"]
    assert [(key_type, key) for _, key_type, key in manager.registered] == [(0, "g")]


def test_an_error_answer_is_a_connection_error_to_retry() -> None:
    manager = Manager(coordinators(ErrorCode.COORDINATOR_NOT_AVAILABLE))
    with pytest.raises(CoordinatorNotFoundError, match="error code 15") as raised:
        asyncio.run(find_coordinator_async(manager, "g", timeout_ms=1000))  # type: ignore[arg-type]
    assert isinstance(raised.value, ConnectionError) and raised.value.group_id == "g"
    assert manager.registered == []


def test_no_reachable_broker() -> None:
    manager = Manager(coordinators(ErrorCode.NONE), node=None)
    with pytest.raises(ConnectionError, match="no broker is reachable"):
        asyncio.run(find_coordinator_async(manager, "g", timeout_ms=1000))  # type: ignore[arg-type]


def test_inspection_uses_the_same_lookup(
    coordinator: EmbeddedCoordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert find_coordinator(coordinator.bootstrap_servers, "g") == 0
    assert describe_group(coordinator.bootstrap_servers, "g").state == "Dead"

    async def unavailable(*_args: Any, **_kwargs: Any) -> FoundCoordinator:
        raise CoordinatorNotFoundError("g", ErrorCode.COORDINATOR_NOT_AVAILABLE)

    monkeypatch.setattr("coordinator_api._membership._driver.find_coordinator", unavailable)
    with pytest.raises(GroupError, match="FindCoordinator answered error code 15"):
        find_coordinator(coordinator.bootstrap_servers, "g")
