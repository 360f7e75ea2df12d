"""One embedded coordinator serving classic and incremental groups of several protocol types at
once: consumer groups on the classic protocol and on KIP-848's, leader elections on the classic
protocol and on GroupHeartbeat, side by side, each member a real client over TCP."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from coordinator_consumer import ConsumerGroupMember
from coordinator_leader import LeaderElection
from kafka.admin import KafkaAdminClient

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator

PARTITIONS = 6
SESSION_MS = 6000
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=SESSION_MS,
    consumer_group_heartbeat_interval_ms=300,
)


@pytest.fixture
def coordinator() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(topics={"t": PARTITIONS}, config=CONFIG) as running:
        yield running


def split(members: list[ConsumerGroupMember]) -> bool:
    owned = [p for m in members for p in m.assignment()]
    return len(owned) == len(set(owned)) == PARTITIONS and all(m.assignment() for m in members)


def one_leader(elections: list[LeaderElection]) -> bool:
    leaders = [e.name for e in elections if e.is_leader()]
    return len(leaders) == 1 and all(e.leader() == leaders[0] for e in elections)


def test_classic_and_incremental_groups_of_several_protocol_types_at_once(
    coordinator: EmbeddedCoordinator,
) -> None:
    bootstrap = coordinator.bootstrap_servers

    def consumer(group: str, name: str, protocol: str) -> ConsumerGroupMember:
        return ConsumerGroupMember(
            group,
            bootstrap,
            topics=["t"],
            group_protocol=protocol,
            client_id=name,
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=300,
        )

    def election(group: str, name: str, protocol: str) -> LeaderElection:
        return LeaderElection(
            group, bootstrap, name=name, group_protocol=protocol, session_timeout_ms=SESSION_MS
        )

    classic = [consumer("orders-classic", f"c{i}", "classic") for i in range(2)]
    incremental = [consumer("orders-incremental", f"i{i}", "consumer") for i in range(2)]
    elections = {
        protocol: [election(f"svc-{protocol}", f"{protocol}-{i}", protocol).start() for i in range(2)]
        for protocol in ("classic", "incremental")
    }
    consumers = [*classic, *incremental]

    def settle(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 20
        while not done():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            for member in consumers:
                member.poll(0.01)

    try:
        settle(
            lambda: split(classic) and split(incremental) and all(map(one_leader, elections.values())),
            "every group to settle",
        )
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            listed = {g["group_id"]: (g["protocol_type"], g["group_type"]) for g in admin.list_groups()}
        finally:
            admin.close()
        assert listed == {
            "orders-classic": ("consumer", "classic"),
            "orders-incremental": ("consumer", "consumer"),
            "svc-classic": ("leader", "classic"),
            "svc-incremental": ("leader", "incremental"),
        }
        # One member of each group leaves; every group settles again, on its own protocol.
        for group in (classic, incremental):
            group.pop().close()
        consumers = [*classic, *incremental]
        for group_elections in elections.values():
            group_elections.pop().close()
        settle(
            lambda: (
                all(len(m.assignment()) == PARTITIONS for m in consumers)
                and all(map(one_leader, elections.values()))
            ),
            "every group to settle without the leavers",
        )
        assert [e._member.group_protocol for e in elections["incremental"]] == ["incremental"]
    finally:
        for member in consumers:
            member.close()
        for group_elections in elections.values():
            for e in group_elections:
                e.close()
