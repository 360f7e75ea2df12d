"""ConsumerGroupMember on a real embedded coordinator: a lost lease, and pattern subscriptions."""

from __future__ import annotations

import time
from typing import Any

import pytest
from coordinator_consumer import ConsumerGroupMember, TopicPartition
from member_processes import wait_for
from poll_threads import PollThreads

from coordinator_api import ConfigurationError, EmbeddedCoordinator

# Short sessions keep the lost-lease test quick; the pattern test can afford sturdier ones.
FAST = {"session_timeout_ms": 2000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 5000}
STEADY = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300, "rebalance_timeout_ms": 5000}


def polling(*members: ConsumerGroupMember, **options: Any) -> PollThreads[ConsumerGroupMember]:
    """Each member polls on its own thread, as an application would (an exception a poll raises
    fails the test unless ``expect`` names it), and closes at the end."""
    return PollThreads(members, close=lambda m: m.close(timeout=2), **options)


@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_a_member_whose_lease_runs_out_loses_its_partitions_without_revoking_them(
    coordinator: EmbeddedCoordinator, assignor: str
) -> None:
    calls: list[tuple[str, frozenset[TopicPartition], float]] = []

    def record(kind: str) -> Any:
        return lambda partitions: calls.append((kind, partitions, time.monotonic()))

    member = ConsumerGroupMember(
        "lost",
        coordinator.bootstrap_servers,
        topics=["events"],
        assignor=assignor,
        on_partitions_assigned=record("assigned"),
        on_partitions_revoked=record("revoked"),
        on_partitions_lost=record("lost"),
        **FAST,  # type: ignore[arg-type]
    )
    everything = frozenset(TopicPartition("events", p) for p in range(12))
    with polling(member):
        wait_for(lambda: len(member.assignment()) == 12, 30, "the member to own every partition")
        assert [(kind, ps) for kind, ps, _ in calls] == [("assigned", everything)]
        stopped = time.monotonic()
        coordinator.close()  # heartbeats go unanswered from now on: the lease runs out
        wait_for(lambda: any(kind == "lost" for kind, _, _ in calls), 10, "on_partitions_lost")
        kind, lost, when = calls[1]
        assert (kind, lost) == ("lost", everything)
        # Declared before the coordinator could have expired the member and moved the partitions.
        assert when - stopped < FAST["session_timeout_ms"] / 1000
        assert member.assignment() == set()
        assert member.generation_if_stable() is None
        time.sleep(0.3)  # the member keeps trying to rejoin; nothing more is revoked or lost
    assert [kind for kind, _, _ in calls] == ["assigned", "lost"]


def test_a_pattern_subscription_gets_matching_topics_and_picks_up_new_ones(
    coordinator: EmbeddedCoordinator,
) -> None:
    coordinator.create_topic("orders-eu", 2)
    coordinator.create_topic("payments", 3)
    members = [
        ConsumerGroupMember(
            "by-pattern",
            coordinator.bootstrap_servers,
            pattern=r"orders-.*",
            assignor="range",
            metadata_max_age_ms=200,
            client_id=f"m{i}",
            **STEADY,  # type: ignore[arg-type]
        )
        for i in range(2)
    ]

    def owned() -> list[set[tuple[str, int]]]:
        return [m.assignment() for m in members]

    def settled_on(expected: set[tuple[str, int]]) -> bool:
        mine = owned()
        return all(mine) and not mine[0] & mine[1] and mine[0] | mine[1] == expected

    with polling(*members):
        wait_for(lambda: settled_on({("orders-eu", 0), ("orders-eu", 1)}), 30, "orders-eu only")
        generation = members[0].generation().generation_id
        coordinator.create_topic("orders-us", 4)  # matches: picked up at the next metadata check
        coordinator.create_topic("ordersx", 1)  # does not: the whole name must match
        expected = {("orders-eu", p) for p in range(2)} | {("orders-us", p) for p in range(4)}
        wait_for(lambda: settled_on(expected), 30, "orders-us to be assigned")
        assert members[0].generation().generation_id > generation
        assert sorted(len(mine) for mine in owned()) == [3, 3]  # range: 1 + 2 each


def test_metadata_max_age_must_be_positive(coordinator: EmbeddedCoordinator) -> None:
    with pytest.raises(ConfigurationError, match="metadata_max_age_ms"):
        ConsumerGroupMember("g", coordinator.bootstrap_servers, pattern="x", metadata_max_age_ms=0)
