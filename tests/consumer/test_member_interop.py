"""ConsumerGroupMember in groups with kafka-python and librdkafka consumers, on the embedded coordinator."""

from __future__ import annotations

import time

import pytest
from coordinator_consumer import CommitFailedError, ConsumerGroupMember
from member_processes import MemberProcess, running_members, wait_for
from poll_threads import PollThreads

from coordinator_api import EmbeddedCoordinator

PARTITIONS = 12
SETTLE_S = 60

# The kafka-python cases run again only after kafka-python 3.0.12's own join stall (see
# tests/kafka_python_reruns.py); nothing else here ever does.
KAFKA_PYTHON = pytest.param("kafka-python", marks=pytest.mark.kafka_python)


def polled(members: list[ConsumerGroupMember]) -> PollThreads[ConsumerGroupMember]:
    """Our members poll on their own threads, as an application would (an exception a poll
    raises fails the test), and close at the end."""
    return PollThreads(members, close=lambda m: m.close(timeout=5))


def member(coordinator: EmbeddedCoordinator, **options: object) -> ConsumerGroupMember:
    return ConsumerGroupMember(
        "g",
        coordinator.bootstrap_servers,
        topics=["events"],
        session_timeout_ms=3000,
        heartbeat_interval_ms=500,
        rebalance_timeout_ms=10_000,
        **options,  # type: ignore[arg-type]
    )


def owned_once(ours: list[ConsumerGroupMember], theirs: list[MemberProcess]) -> bool:
    owned = [p for m in ours for _, p in m.assignment()] + [p for m in theirs for p in m.owned]
    everyone_owns = all(m.assignment() for m in ours) and all(m.owned for m in theirs)
    return sorted(owned) == list(range(PARTITIONS)) and everyone_owns


@pytest.mark.parametrize("client", [KAFKA_PYTHON, "confluent"])
def test_ours_leads_a_group_with_other_clients(coordinator: EmbeddedCoordinator, client: str) -> None:
    ours = member(coordinator, assignor="range")
    with polled([ours]):
        wait_for(lambda: len(ours.assignment()) == PARTITIONS, SETTLE_S, "our member alone")
        others = [
            MemberProcess(client, coordinator.bootstrap_servers, f"{client}-{i}", session_ms=3000)
            for i in range(2)
        ]
        with running_members(others):
            wait_for(lambda: owned_once([ours], others), SETTLE_S, "a mixed group led by our member")
            assert len(ours.assignment()) == PARTITIONS // 3


@pytest.mark.parametrize("client", [KAFKA_PYTHON, "confluent"])
def test_ours_follows_in_a_group_led_by_another_client(coordinator: EmbeddedCoordinator, client: str) -> None:
    others = [
        MemberProcess(client, coordinator.bootstrap_servers, f"{client}-{i}", session_ms=3000)
        for i in range(2)
    ]
    with running_members(others):
        wait_for(
            lambda: sorted(p for m in others for p in m.owned) == list(range(PARTITIONS)), SETTLE_S, "two"
        )
        ours = member(coordinator, assignor="range")
        with polled([ours]):
            wait_for(lambda: owned_once([ours], others), SETTLE_S, "a mixed group led by the other client")
            assert len(ours.assignment()) == PARTITIONS // 3


def test_cooperative_members_move_only_what_must_and_never_share(coordinator: EmbeddedCoordinator) -> None:
    history: list[tuple[float, str, str, frozenset[object]]] = []

    def recorder(name: str) -> dict[str, object]:
        return {
            "on_partitions_assigned": lambda ps: history.append((time.time(), name, "assigned", ps)),
            "on_partitions_revoked": lambda ps: history.append((time.time(), name, "revoked", ps)),
            "client_id": name,
        }

    group = [member(coordinator, assignor="cooperative-sticky", **recorder(f"c{i}")) for i in range(3)]
    with polled(group):
        wait_for(lambda: owned_once(group, []), SETTLE_S, "three cooperative members")
        before = {p: i for i, m in enumerate(group) for _, p in m.assignment()}
        seen = len(history)
        newcomer = member(coordinator, assignor="cooperative-sticky", **recorder("c3"))
        with polled([newcomer]):
            wait_for(
                lambda: owned_once([*group, newcomer], []) and len(newcomer.assignment()) == 3,
                SETTLE_S,
                "four",
            )
            moved = {p for p, i in before.items() if (("events", p) not in group[i].assignment())}
            assert len(moved) == PARTITIONS // 4
            revoked = {tp.partition for _, _, kind, ps in history[seen:] if kind == "revoked" for tp in ps}  # type: ignore[attr-defined]
            assert revoked == moved  # nothing revoked that did not move
    # Each partition's owners, from the callbacks: a new owner only after the old one revoked it.
    owner: dict[object, str] = {}
    for _, name, kind, partitions in history:
        for tp in partitions:
            if kind == "assigned":
                assert tp not in owner, f"{tp} assigned to {name} while {owner.get(tp)} owned it"
                owner[tp] = name
            else:
                owner.pop(tp, None)


def test_commits_are_fenced_by_generation(
    coordinator: EmbeddedCoordinator, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = member(coordinator, assignor="range"), member(coordinator, assignor="range")
    with polled([first]):
        wait_for(lambda: len(first.assignment()) == PARTITIONS, SETTLE_S, "the first member")
        first.commit({("events", 0): 42, ("events", 1): 7})  # its current generation: accepted
        old = first.generation()
        with polled([second]):
            wait_for(lambda: owned_once([first, second], []), SETTLE_S, "two members")
            assert first.generation().generation_id > old.generation_id
            # A commit made with the generation the group has left behind is refused.
            monkeypatch.setattr(first, "generation", lambda: old)
            with pytest.raises(CommitFailedError, match="offset commit refused for generation"):
                first.commit({("events", 0): 99})
