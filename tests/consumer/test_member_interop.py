"""ConsumerGroupMember in groups with kafka-python and librdkafka consumers, on the embedded coordinator."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from coordinator_consumer import CommitFailedError, ConsumerGroupMember
from member_processes import MemberProcess, running_members, wait_for

from coordinator_api import EmbeddedCoordinator

PARTITIONS = 12
SETTLE_S = 60

# The other clients run in real processes; see tests/server/test_kafka_clients.py for why a
# kafka-python member's rare stall earns a second run.
pytestmark = pytest.mark.flaky(reruns=2, only_rerun=["AssertionError"])


class Polled:
    """Our members poll on their own threads, as an application would."""

    def __init__(self, members: list[ConsumerGroupMember]) -> None:
        self.members = members
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._run, args=(m,), daemon=True) for m in members]

    def _run(self, member: ConsumerGroupMember) -> None:
        while not self.stop.is_set():
            try:
                member.poll(0.05)
            except Exception as exc:
                self.errors.append(exc)
                time.sleep(0.1)

    def __enter__(self) -> Polled:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()
        for m in self.members:
            m.close(timeout=5)


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


@pytest.fixture
def kafka_python() -> Iterator[list[MemberProcess]]:
    started: list[MemberProcess] = []
    with running_members(started):
        yield started


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_ours_leads_a_group_with_other_clients(coordinator: EmbeddedCoordinator, client: str) -> None:
    ours = member(coordinator, assignor="range")
    with Polled([ours]):
        wait_for(lambda: len(ours.assignment()) == PARTITIONS, SETTLE_S, "our member alone")
        others = [
            MemberProcess(client, coordinator.bootstrap_servers, f"{client}-{i}", session_ms=3000)
            for i in range(2)
        ]
        with running_members(others):
            wait_for(lambda: owned_once([ours], others), SETTLE_S, "a mixed group led by our member")
            assert len(ours.assignment()) == PARTITIONS // 3


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
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
        with Polled([ours]):
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
    with Polled(group) as polled:
        wait_for(lambda: owned_once(group, []), SETTLE_S, "three cooperative members")
        before = {p: i for i, m in enumerate(group) for _, p in m.assignment()}
        seen = len(history)
        newcomer = member(coordinator, assignor="cooperative-sticky", **recorder("c3"))
        with Polled([newcomer]):
            wait_for(
                lambda: owned_once([*group, newcomer], []) and len(newcomer.assignment()) == 3,
                SETTLE_S,
                "four",
            )
            moved = {p for p, i in before.items() if (("events", p) not in group[i].assignment())}
            assert len(moved) == PARTITIONS // 4
            revoked = {tp.partition for _, _, kind, ps in history[seen:] if kind == "revoked" for tp in ps}  # type: ignore[attr-defined]
            assert revoked == moved  # nothing revoked that did not move
        assert not polled.errors
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
    with Polled([first]):
        wait_for(lambda: len(first.assignment()) == PARTITIONS, SETTLE_S, "the first member")
        first.commit({("events", 0): 42, ("events", 1): 7})  # its current generation: accepted
        old = first.generation()
        with Polled([second]):
            wait_for(lambda: owned_once([first, second], []), SETTLE_S, "two members")
            assert first.generation().generation_id > old.generation_id
            # A commit made with the generation the group has left behind is refused.
            monkeypatch.setattr(first, "generation", lambda: old)
            with pytest.raises(CommitFailedError, match="offset commit refused for generation"):
                first.commit({("events", 0): 99})
