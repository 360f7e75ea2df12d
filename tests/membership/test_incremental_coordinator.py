"""The Coordinator base class with ``group_protocol="consumer"`` (KIP-848), on a real embedded
coordinator: what it promises any subclass, whatever its callbacks do."""

from __future__ import annotations

import threading

from coordinator_api import (
    Coordinator,
    CoordinatorConfig,
    EmbeddedCoordinator,
    GroupSubscription,
    JoinedMember,
)

CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=6000,
    consumer_group_heartbeat_interval_ms=300,
)


class Worker(Coordinator):
    """Works on the partitions it is given; its on_reconcile is slow to record them."""

    def __init__(self, bootstrap: str, blocked_until: threading.Event) -> None:
        super().__init__(
            "g", bootstrap, group_protocol="consumer", session_timeout_ms=2000, heartbeat_interval_ms=300
        )
        self.working: set[tuple[bytes, int]] = set()
        self.lost_calls = 0
        self._blocked_until = blocked_until
        self.reconciled = threading.Event()

    def protocol_type(self) -> str:
        return "consumer"

    def metadata(self) -> list[tuple[str, bytes]]:
        raise AssertionError("the classic protocol's callbacks are not used")

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        raise AssertionError("the classic protocol's callbacks are not used")

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        raise AssertionError("the classic protocol's callbacks are not used")

    def group_subscription(self) -> GroupSubscription:
        return GroupSubscription(topics=("t",))

    def on_reconcile(
        self,
        member_epoch: int,
        member_id: str,
        revoked: frozenset[tuple[bytes, int]],
        assigned: frozenset[tuple[bytes, int]],
    ) -> None:
        self.reconciled.set()
        assert self._blocked_until.wait(10)
        self.working -= revoked
        self.working |= assigned

    def on_lost(self, reason: str) -> None:
        self.lost_calls += 1
        self.working.clear()


def test_an_assignment_lost_while_on_reconcile_runs_is_lost_again_when_it_returns() -> None:
    # The heartbeat thread declares the assignment lost (on_lost) while the poll thread is still
    # inside on_reconcile starting it: when on_reconcile returns, on_lost runs again, so the
    # application never keeps partitions whose lease has run out.
    with EmbeddedCoordinator(topics={"t": 4}, config=CONFIG) as coordinator:
        lease_ran_out = threading.Event()
        worker = Worker(coordinator.bootstrap_servers, lease_ran_out)
        original_on_lost = worker.on_lost

        def on_lost(reason: str) -> None:
            original_on_lost(reason)
            lease_ran_out.set()

        worker.on_lost = on_lost  # type: ignore[method-assign]
        poller = threading.Thread(target=worker.poll, args=(8,))
        poller.start()
        assert worker.reconciled.wait(10)
        coordinator.close()  # no heartbeat is answered from now on: the lease runs out
        poller.join(15)
        assert worker.lost_calls == 2 and worker.working == set()
        assert worker.generation_if_stable() is None
        worker.close(timeout=1)
