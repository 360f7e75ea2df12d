"""The leader plugin in one process: the election rule, the fence, and LeaderElection on a real
embedded coordinator over TCP (processes and faults are in test_leader_processes.py)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator, Mapping

import pytest
from coordinator_leader import (
    AsyncLeaderElection,
    Candidate,
    EpochFence,
    LeaderAssignment,
    LeaderElection,
    NotLeaderError,
    StaleEpochError,
    describe_candidate,
    describe_leader,
    elect,
    election_member,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator_api import (
    ConfigurationError,
    CoordinatorClosedError,
    EmbeddedCoordinator,
    decode,
    encode,
    get_plugin_manager,
)
from coordinator_api._plugins import AssignorRegistry, PluginRegistry, hookimpl
from coordinator_api.server import recording_membership

SESSION_MS = 1200

# --- the election rule --------------------------------------------------------------------------

candidates = st.dictionaries(
    st.text("abcdef", min_size=1, max_size=4).map(lambda s: f"member-{s}"),
    st.builds(
        Candidate,
        name=st.sampled_from(["a", "b", "c", "d"]),
        priority=st.integers(-2, 2),
        eligible=st.booleans(),
        epoch_seen=st.integers(-1, 20),
        led_epoch=st.integers(-1, 20),
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(candidates, st.integers(1, 30), st.booleans())
def test_the_rule_elects_an_eligible_member_with_an_epoch_above_all_seen(
    members: dict[str, Candidate], generation: int, preferred: bool
) -> None:
    outcome = elect(members, generation, preferred_leader=preferred)
    assert outcome.epoch >= generation
    assert all(outcome.epoch > c.epoch_seen for c in members.values())
    eligible = {m for m, c in members.items() if c.eligible}
    if not eligible:
        assert outcome.leader_id == ""
    else:
        assert outcome.leader_id in eligible
        assert outcome.leader_name == members[outcome.leader_id].name
    # Deterministic, whatever order the members come in.
    assert elect(dict(reversed(list(members.items()))), generation, preferred_leader=preferred) == outcome


def test_the_rule_ranks_eligible_then_priority_then_name() -> None:
    members = {
        "m1": Candidate("zed", priority=9, eligible=False),
        "m2": Candidate("bob", priority=3),
        "m3": Candidate("amy", priority=3),
        "m4": Candidate("cat", priority=1),
    }
    assert elect(members, 1).leader_id == "m3"


def test_the_previous_leader_keeps_leading_unless_a_preferred_leader_is_asked_for() -> None:
    members = {
        "old": Candidate("old", priority=0, epoch_seen=7, led_epoch=7),
        "new": Candidate("new", priority=5, epoch_seen=-1),
    }
    assert elect(members, 8).leader_id == "old"
    assert elect(members, 8, preferred_leader=True).leader_id == "new"
    # A leader of an older epoch (a zombie that came back) has no claim.
    members["old"] = Candidate("old", priority=0, epoch_seen=5, led_epoch=5)
    members["third"] = Candidate("third", priority=1, epoch_seen=7)
    assert elect(members, 8).leader_id == "new"


def test_the_epoch_survives_a_group_the_coordinator_forgot() -> None:
    # Generations restart at 1 in a re-created group; members still know epoch 41.
    outcome = elect({"m": Candidate("a", epoch_seen=41, led_epoch=41)}, generation=1)
    assert outcome.epoch == 42


def test_payloads_round_trip_and_describe() -> None:
    candidate = Candidate("node-1", address="10.0.0.5:8080", priority=2, version="1.4", epoch_seen=7)
    assert decode(Candidate, encode(candidate)) == candidate
    assert describe_candidate("leader-election", encode(candidate)) == (
        "node-1 at 10.0.0.5:8080, priority 2, eligible, version 1.4, seen epoch 7"
    )
    leader = LeaderAssignment(leader_id="m-1", leader_name="node-1", epoch=8)
    assert describe_leader("leader-election", encode(leader)) == "leader node-1 (epoch 8)"
    assert describe_leader("leader-election", encode(LeaderAssignment(leader_id="", epoch=9))) == (
        "no leader (epoch 9)"
    )


def test_the_plugin_registers_through_the_entry_points() -> None:
    registry = PluginRegistry.load(get_plugin_manager())
    assert registry.protocols.get("leader") is election_member
    assert registry.assignors.get("leader", "leader-election") is elect
    assert registry.payload_decoders.get("leader").assignment is describe_leader


class LowestNameRule:
    """A third party's election rule: the eligible candidate with the smallest name leads."""

    @staticmethod
    @hookimpl
    def coordinator_api_register_assignors(registry: AssignorRegistry) -> None:
        registry.register("leader", "lowest-name", LowestNameRule.elect)

    @staticmethod
    def elect(
        candidates: Mapping[str, Candidate], generation: int, *, preferred_leader: bool = False
    ) -> LeaderAssignment:
        member_id, winner = min(
            ((m, c) for m, c in candidates.items() if c.eligible), key=lambda mc: (mc[1].name, mc[0])
        )
        epoch = max([generation, *(c.epoch_seen + 1 for c in candidates.values())])
        return LeaderAssignment(
            leader_id=member_id,
            leader_name=winner.name,
            leader_address=winner.address,
            leader_priority=winner.priority,
            leader_version=winner.version,
            epoch=epoch,
        )


def test_a_plugins_election_rule_runs_in_place_of_the_built_in_one(server: EmbeddedCoordinator) -> None:
    """A rule another plugin registers for protocol type ``leader`` is chosen by name and runs
    exactly as the built-in one does: here the lowest name leads, whatever the priorities."""
    pm = get_plugin_manager()
    pm.register(LowestNameRule(), name="lowest-name-plugin")
    plugins = PluginRegistry.load(pm)
    with pytest.raises(ConfigurationError, match=r"unknown election rule 'highest-name'.*leader-election"):
        LeaderElection("svc", server.bootstrap_servers, "x", rule="highest-name", plugins=plugins)
    elections = [
        LeaderElection(
            "third-party-rule",
            server.bootstrap_servers,
            name,
            priority=priority,
            session_timeout_ms=SESSION_MS,
            rule="lowest-name",
            plugins=plugins,
        ).start()
        for name, priority in (("node-b", 9), ("node-a", 0), ("node-c", 5))
    ]
    try:
        wait(lambda: len({e.leader() for e in elections}) == 1 and any(e.is_leader() for e in elections))
        assert [e.name for e in elections if e.is_leader()] == ["node-a"]  # not node-b, priority 9
    finally:
        for e in elections:
            e.close()


# --- the fence ----------------------------------------------------------------------------------


def test_the_fence_refuses_stale_epochs_and_accepts_equal_or_newer() -> None:
    fence = EpochFence()
    fence.admit(3)
    fence.admit(3)
    fence.admit(5)
    with pytest.raises(StaleEpochError, match="epoch 4 refused: epoch 5 has already written") as caught:
        fence.admit(4)
    assert (caught.value.epoch, caught.value.highest) == (4, 5)
    assert fence.highest == 5
    with pytest.raises(TypeError):
        fence.admit("6")  # type: ignore[arg-type]
    with pytest.raises(StaleEpochError), fence.admitting(1):
        pass
    with fence.admitting(6):
        assert fence.highest == 6


# --- LeaderElection on the embedded coordinator --------------------------------------------------


@pytest.fixture
def server(fast_config: object) -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(config=fast_config) as running:  # type: ignore[arg-type]
        yield running


def wait(condition: object, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="name must be a non-empty string"):
        LeaderElection("g", "127.0.0.1:1", "")
    with pytest.raises(ConfigurationError, match="priority must be an int"):
        LeaderElection("g", "127.0.0.1:1", "a", priority="high")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="on_elected must be callable"):
        LeaderElection("g", "127.0.0.1:1", "a", on_elected=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="session_timeout_ms"):
        LeaderElection("g", "127.0.0.1:1", "a", session_timeout_ms=0)


def test_three_members_agree_on_one_leader_and_hand_over_on_close(server: EmbeddedCoordinator) -> None:
    events: list[tuple[str, str, int]] = []
    lock = threading.Lock()

    def record(name: str, kind: str, epoch: int = -1) -> None:
        with lock:
            events.append((name, kind, epoch))

    elections = [
        LeaderElection(
            "svc",
            server.bootstrap_servers,
            f"node-{i}",
            priority=i,
            address=f"127.0.0.1:{8000 + i}",
            session_timeout_ms=SESSION_MS,
            on_elected=lambda epoch, i=i: record(f"node-{i}", "elected", epoch),
            on_revoked=lambda i=i: record(f"node-{i}", "revoked"),
        ).start()
        for i in range(3)
    ]
    try:
        wait(lambda: sum(e.is_leader() for e in elections) == 1 and len({e.leader() for e in elections}) == 1)
        leader = next(e for e in elections if e.is_leader())
        info = elections[0].leader_info()
        assert info is not None and info.name == leader.name
        assert info.address == leader.address and info.epoch == leader.epoch() >= 1
        first_epoch = leader.epoch()

        with recording_membership() as membership:
            closed_at = time.monotonic()
            leader.close()
            rest = [e for e in elections if e is not leader]
            wait(lambda: sum(e.is_leader() for e in rest) == 1)
            # On close the leader leaves the group (LeaveGroup): the others do not wait for its
            # session to run out, which an expiry would show (the time it takes is bench/'s).
            assert membership.first("left", f"leader-{leader.name}", closed_at) is not None
            assert membership.first("expired", f"leader-{leader.name}", closed_at) is None
        wait(lambda: len({e.leader() for e in rest}) == 1 and rest[0].epoch() > first_epoch)
        assert not leader.is_leader()
    finally:
        for e in elections:
            e.close()
    elected = [epoch for _, kind, epoch in events if kind == "elected"]
    assert elected == sorted(elected) and len(set(elected)) == len(elected)


def test_wait_until_leader_leadership_and_resign(server: EmbeddedCoordinator) -> None:
    # a starts first: with no initial rebalance delay whoever joins first leads, and keeps
    # leading when b (of higher priority) joins, since preferred_leader is off.
    options = {"session_timeout_ms": SESSION_MS}
    with LeaderElection("jobs", server.bootstrap_servers, "a", **options) as a:
        assert a.wait_until_leader(15)
        with LeaderElection("jobs", server.bootstrap_servers, "b", priority=1, **options) as b:
            wait(lambda: b.leader() == "a")
            assert not b.wait_until_leader(0.2)
            with pytest.raises(NotLeaderError, match=r"not elected within 0\.2 s"), b.leadership(timeout=0.2):
                pass
            with a.leadership(timeout=5) as term:
                assert term.active and term.epoch == a.epoch()
                term.check()
            # Leaving the body resigned: b leads with a greater epoch, a's term has ended.
            assert term.ended.is_set() and not term.active
            with pytest.raises(NotLeaderError):
                term.check()
            assert b.wait_until_leader(15)
            assert b.epoch() > term.epoch
            wait(lambda: a.leader() == "b")
            b.resign()
            # a sat out one election only; it can lead again.
            assert a.wait_until_leader(15)


def test_a_single_member_that_resigns_leads_again(server: EmbeddedCoordinator) -> None:
    with LeaderElection("solo", server.bootstrap_servers, "only", session_timeout_ms=SESSION_MS) as only:
        assert only.wait_until_leader(15)
        epoch = only.epoch()
        only.resign()
        assert only.wait_until_leader(15)
        assert only.epoch() > epoch
    assert not only.is_leader()
    with pytest.raises(CoordinatorClosedError, match="closed; create a new one"):
        only.start()


def test_an_ineligible_member_follows_but_never_leads(server: EmbeddedCoordinator) -> None:
    with LeaderElection(
        "watch", server.bootstrap_servers, "observer", eligible=False, session_timeout_ms=SESSION_MS
    ) as observer:
        assert not observer.wait_until_leader(1.0)
        with LeaderElection("watch", server.bootstrap_servers, "worker", session_timeout_ms=SESSION_MS) as w:
            assert w.wait_until_leader(15)
            wait(lambda: observer.leader() == "worker")
        wait(lambda: observer.leader() is None)
        assert not observer.is_leader()


def test_preferred_leader_moves_leadership_to_a_higher_priority_member(server: EmbeddedCoordinator) -> None:
    options = {"session_timeout_ms": SESSION_MS, "preferred_leader": True}
    with LeaderElection("pref", server.bootstrap_servers, "low", priority=0, **options) as low:
        assert low.wait_until_leader(15)
        with LeaderElection("pref", server.bootstrap_servers, "high", priority=5, **options) as high:
            assert high.wait_until_leader(15)
            assert not low.is_leader()
            wait(lambda: low.leader() == "high")


def test_without_preferred_leader_the_incumbent_stays(server: EmbeddedCoordinator) -> None:
    with LeaderElection("sticky", server.bootstrap_servers, "low", session_timeout_ms=SESSION_MS) as low:
        assert low.wait_until_leader(15)
        with LeaderElection(
            "sticky", server.bootstrap_servers, "high", priority=5, session_timeout_ms=SESSION_MS
        ) as high:
            wait(lambda: high.leader() == "low")
            assert low.wait_until_leader(15) and not high.is_leader()


def test_a_callback_that_raises_does_not_break_the_election(server: EmbeddedCoordinator) -> None:
    def explode(epoch: int) -> None:
        raise RuntimeError("boom")

    with LeaderElection(
        "boom", server.bootstrap_servers, "a", session_timeout_ms=SESSION_MS, on_elected=explode
    ) as a:
        assert a.wait_until_leader(15)
        time.sleep(0.3)
        assert a.is_leader()


def test_asyncio_election(server: EmbeddedCoordinator) -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        async def elected(epoch: int) -> None:
            seen.append(f"elected {epoch}")

        async with AsyncLeaderElection(
            "aio", server.bootstrap_servers, "a", session_timeout_ms=SESSION_MS, on_elected=elected
        ) as election:
            async with election.leadership(timeout=15) as term:
                assert election.is_leader() and election.leader() == "a"
                assert term.epoch == election.epoch()
            for _ in range(100):
                if seen:
                    break
                await asyncio.sleep(0.01)
        return seen

    assert asyncio.run(main())[0].startswith("elected ")


def test_a_member_made_by_protocol_type_runs_an_election(server: EmbeddedCoordinator) -> None:
    """Code that makes members by protocol type gets the election's group member: polling it
    runs the election."""
    plugins = PluginRegistry.load(get_plugin_manager())
    member = plugins.protocols.create("leader", "by-type", server.bootstrap_servers, name="solo")
    try:
        assert member.protocol_type() == "leader"
        member.ensure_active_group(30)
        election = member.election  # type: ignore[attr-defined]
        wait(lambda: member.poll(0.05) is None and election.is_leader())
        assert election.leader() == "solo" and election.epoch() >= 1
    finally:
        member.close(timeout=5)
