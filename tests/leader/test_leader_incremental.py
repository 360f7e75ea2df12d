"""Leader election over the incremental protocol: the embedded coordinator hands out the one
resource ``leadership`` (GroupHeartbeat), so members joining and leaving never interrupt the
leader, and a new leader starts only once the old one has stepped down. On Apache Kafka, which
does not serve GroupHeartbeat, the election falls back to the classic protocol."""

from __future__ import annotations

import doctest
import logging
import threading
import time
from collections.abc import Callable, Iterator

import coordinator_leader._election_rule as election_rule
import pytest
from coordinator_leader import LEADERSHIP, Candidate, LeaderElection, elect_on_coordinator

from coordinator_api import AssignmentSpec, CoordinatorConfig, EmbeddedCoordinator, encode
from coordinator_api.testing import KafkaCluster

SESSION_MS = 6000
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    consumer_group_session_timeout_ms=SESSION_MS,
    consumer_group_heartbeat_interval_ms=500,
)
WAIT_S = 15.0


class Terms:
    """Every member's terms of leadership as its own callbacks report them, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, str, int]] = []  # (time, member, elected|revoked, epoch)

    def election(self, coordinator: str, name: str, **options: object) -> LeaderElection:
        epochs: dict[str, int] = {}

        def elected(epoch: int) -> None:
            epochs["now"] = epoch
            with self.lock:
                self.events.append((time.monotonic(), name, "elected", epoch))

        def revoked() -> None:
            with self.lock:
                self.events.append((time.monotonic(), name, "revoked", epochs.get("now", -1)))

        return LeaderElection(
            "svc",
            coordinator,
            name=name,
            group_protocol="incremental",
            session_timeout_ms=SESSION_MS,
            on_elected=elected,
            on_revoked=revoked,
            **options,  # type: ignore[arg-type]
        )

    def of(self, name: str) -> list[str]:
        with self.lock:
            return [kind for _, who, kind, _ in self.events if who == name]

    def check_one_leader_at_a_time(self) -> list[int]:
        """No two members' terms overlap; returns the epochs of the terms, in order."""
        leading: str | None = None
        epochs = []
        with self.lock:
            for _, name, kind, epoch in self.events:
                if kind == "elected":
                    assert leading is None, f"{name} elected while {leading} still led: {self.events}"
                    leading = name
                    epochs.append(epoch)
                else:
                    assert leading == name, f"{name} stepped down but {leading} led: {self.events}"
                    leading = None
        return epochs


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture
def coordinator() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(config=CONFIG) as running:
        yield running


@pytest.fixture
def terms() -> Terms:
    return Terms()


def leaders(elections: list[LeaderElection]) -> list[str]:
    return [e.name for e in elections if e.is_leader()]


def test_the_coordinator_elects_one_leader_and_every_member_learns_it(
    coordinator: EmbeddedCoordinator, terms: Terms
) -> None:
    elections = [
        terms.election(coordinator.bootstrap_servers, f"node-{i}", priority=i, address=f"10.0.0.{i}:80")
        for i in range(3)
    ]
    try:
        for election in elections:
            election.start()
        wait_for(lambda: len(leaders(elections)) == 1, "a leader")
        (leader,) = [e for e in elections if e.is_leader()]
        assert all(e._member.group_protocol == "incremental" for e in elections)
        wait_for(lambda: all(e.leader() == leader.name for e in elections), "every member to know the leader")
        info = elections[0].leader_info()
        assert info is not None and info.address == leader.address and info.member_id == leader.member_id
        wait_for(lambda: all(e.epoch() == leader.epoch() >= 1 for e in elections), "the leader's epoch")
    finally:
        for election in elections:
            election.close()
    terms.check_one_leader_at_a_time()


def test_members_joining_and_leaving_never_interrupt_the_leader(
    coordinator: EmbeddedCoordinator, terms: Terms
) -> None:
    first = terms.election(coordinator.bootstrap_servers, "first").start()
    try:
        assert first.wait_until_leader(WAIT_S)
        epoch = first.epoch()
        followers = [terms.election(coordinator.bootstrap_servers, f"follower-{i}").start() for i in range(2)]
        wait_for(lambda: all(f.leader() == "first" for f in followers), "the followers to know the leader")
        followers[0].close()
        wait_for(lambda: coordinator_members(coordinator) == 2, "the coordinator to see the follower leave")
        # With the classic protocol each of these changes is a rebalance of the whole group,
        # and the leader steps down for it; here it leads on, in the same term.
        assert terms.of("first") == ["elected"]
        assert first.is_leader() and first.epoch() == epoch
        followers[1].close()
    finally:
        first.close()


def coordinator_members(coordinator: EmbeddedCoordinator) -> int:
    groups = coordinator._server.state._consumer_groups
    return len(groups.describe("svc").members) if "svc" in groups else 0


def test_a_new_leader_starts_only_after_the_old_one_stopped_with_a_greater_epoch(
    coordinator: EmbeddedCoordinator, terms: Terms
) -> None:
    elections = [terms.election(coordinator.bootstrap_servers, f"node-{i}") for i in range(3)]
    try:
        for election in elections:
            election.start()
        wait_for(lambda: len(leaders(elections)) == 1, "a leader")
        for _ in range(2):
            (leader,) = [e for e in elections if e.is_leader()]
            leader.close()
            elections.remove(leader)
            wait_for(lambda: len(leaders(elections)) == 1, "the next leader")
    finally:
        for election in elections:
            election.close()
    epochs = terms.check_one_leader_at_a_time()
    assert len(epochs) == 3 and epochs == sorted(set(epochs)), epochs


def test_a_leader_that_resigns_hands_over_and_stands_again(
    coordinator: EmbeddedCoordinator, terms: Terms
) -> None:
    alone = terms.election(coordinator.bootstrap_servers, "alone").start()
    try:
        assert alone.wait_until_leader(WAIT_S)
        first = alone.epoch()
        alone.resign()  # nobody else can lead: it is elected again, in a new term
        wait_for(lambda: terms.of("alone") == ["elected", "revoked", "elected"], "re-election")
        assert alone.epoch() > first
        other = terms.election(coordinator.bootstrap_servers, "other").start()
        wait_for(lambda: other.leader() == "alone", "the newcomer to know the leader")
        alone.resign()
        assert other.wait_until_leader(WAIT_S)
        wait_for(lambda: alone.leader() == "other", "the resigner to learn the new leader")
        assert not alone._sitting_out  # a candidate again
        other.close()
        assert alone.wait_until_leader(WAIT_S)
    finally:
        alone.close()
    terms.check_one_leader_at_a_time()


def test_a_preferred_leader_of_higher_priority_takes_over(
    coordinator: EmbeddedCoordinator, terms: Terms
) -> None:
    low = terms.election(coordinator.bootstrap_servers, "low", priority=1, preferred_leader=True).start()
    try:
        assert low.wait_until_leader(WAIT_S)
        high = terms.election(
            coordinator.bootstrap_servers, "high", priority=9, preferred_leader=True
        ).start()
        try:
            assert high.wait_until_leader(WAIT_S)
            assert terms.of("low") == ["elected", "revoked"]
        finally:
            high.close()
    finally:
        low.close()
    terms.check_one_leader_at_a_time()


def test_the_coordinators_rule_keeps_the_holder_and_skips_members_it_cannot_read() -> None:
    failures, attempted = doctest.testmod(election_rule, verbose=False)
    assert attempted > 0 and failures == 0

    def spec(member_id: str, metadata: bytes, holds: bool = False) -> AssignmentSpec:
        return AssignmentSpec(
            member_id=member_id,
            instance_id=None,
            rack=None,
            topics=frozenset({"leadership"}),
            current=frozenset({LEADERSHIP} if holds else ()),
            metadata=metadata,
        )

    best = encode(Candidate("best", priority=9))
    holder = encode(Candidate("holder", priority=1))
    counts = {"leadership": 1}
    assert elect_on_coordinator([spec("a", b"junk"), spec("b", holder)], counts) == {"b": [LEADERSHIP]}
    assert elect_on_coordinator([spec("a", best), spec("b", holder, holds=True)], counts) == {
        "b": [LEADERSHIP]
    }
    not_eligible = encode(Candidate("holder", priority=1, eligible=False))
    assert elect_on_coordinator([spec("a", best), spec("b", not_eligible, holds=True)], counts) == {
        "a": [LEADERSHIP]
    }
    assert elect_on_coordinator([spec("a", b"junk")], counts) == {}


def test_on_kafka_the_election_falls_back_to_the_classic_protocol(
    kafka: KafkaCluster, terms: Terms, caplog: pytest.LogCaptureFixture
) -> None:
    # With preferred_leader node-1 leads whichever member the broker lets in first (without it,
    # a node-0 that joins alone first keeps the leadership, as the election rule wants).
    elections = [
        terms.election(kafka.bootstrap_servers, f"node-{i}", priority=i, preferred_leader=True)
        for i in range(2)
    ]
    try:
        with caplog.at_level(logging.WARNING, logger="coordinator_api.membership"):
            for election in elections:
                election.start()
            # A member that is still reaching the cluster has not chosen its protocol yet.
            wait_for(
                lambda: all(e._member.group_protocol == "classic" for e in elections),
                "every member to fall back to the classic protocol",
            )
            wait_for(lambda: len(leaders(elections)) == 1, "a leader on Kafka")
        fallbacks = [r for r in caplog.records if "using the classic protocol" in r.getMessage()]
        assert len(fallbacks) == 2, [r.getMessage() for r in caplog.records]
        wait_for(lambda: all(e.leader() == "node-1" for e in elections), "every member to know the leader")
    finally:
        for election in elections:
            election.close()
    terms.check_one_leader_at_a_time()
