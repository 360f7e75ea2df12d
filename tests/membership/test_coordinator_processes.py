"""A custom protocol on coordinator_api.Coordinator, in real processes you can kill and pause."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from member_processes import (
    SHARD_MEMBER,
    MemberProcess,
    check_no_crash,
    running_members,
    wait_for,
)

from coordinator_api import EmbeddedCoordinator
from coordinator_api.server import MembershipRecorder, recording_membership

SHARDS = 12
SETTLE_S = 60


@pytest.fixture
def membership() -> Iterator[MembershipRecorder]:
    with recording_membership() as recorder:
        yield recorder


def shard_member(bootstrap: str, name: str, **options: Any) -> MemberProcess:
    return MemberProcess("", bootstrap, name, script=SHARD_MEMBER, **options)


def latest(member: MemberProcess, event: str) -> dict[str, Any] | None:
    found = member.events(event)
    return found[-1] if found else None


def settled(members: list[MemberProcess], generation_of: dict[str, int] | None = None) -> bool:
    """Every live member's latest assignment comes from one generation and covers all shards
    once. A member that crashed fails the test instead of being left out."""
    check_no_crash(members)
    live = [m for m in members if m.alive]
    assigned = [latest(m, "assigned") for m in live]
    if any(a is None for a in assigned):
        return False
    generations = {a["generation"] for a in assigned if a is not None}
    if len(generations) != 1:
        return False
    for m in live:
        last = m.reports[-1:]
        if any(r.get("event") in ("revoked", "lost") for r in last):
            return False
    shards = sorted(s for a in assigned if a is not None for s in a["shards"])
    return shards == list(range(SHARDS))


def settle(members: list[MemberProcess], what: str) -> int:
    wait_for(lambda: settled(members), SETTLE_S, what)
    first = latest(members[0] if members[0].alive else next(m for m in members if m.alive), "assigned")
    assert first is not None
    return int(first["generation"])


def acting_overlaps(members: list[MemberProcess]) -> list[str]:
    """Shards two members worked on at the same time, from their own ``act`` records."""
    spans: dict[int, list[tuple[float, float, str, int]]] = {}
    for member in members:
        first_last: dict[tuple[int, int], list[float]] = {}
        for report in member.events("act"):
            for shard in report["shards"]:
                span = first_last.setdefault((shard, report["generation"]), [report["t"], report["t"]])
                span[1] = report["t"]
        for (shard, generation), (start, end) in first_last.items():
            spans.setdefault(shard, []).append((start, end, member.name, generation))
    problems = []
    for shard, intervals in spans.items():
        intervals.sort()
        for (_s1, e1, m1, g1), (s2, _e2, m2, g2) in itertools.pairwise(intervals):
            if m1 != m2 and s2 <= e1:
                problems.append(
                    f"shard {shard}: {m1} (gen {g1}) until {e1:.3f}, {m2} (gen {g2}) from {s2:.3f}"
                )
    return problems


def test_three_members_join_and_share_the_shards(coordinator: EmbeddedCoordinator) -> None:
    names = ["s-0", "s-1", "s-2"]
    with running_members([shard_member(coordinator.bootstrap_servers, n) for n in names]) as members:
        generation = settle(members, "three shard members to settle")
        for m in members:
            assigned = latest(m, "assigned")
            assert assigned is not None
            assert assigned["generation"] == generation
            assert len(assigned["shards"]) == SHARDS // 3
        assert not acting_overlaps(members)


def test_killed_member_shards_move_after_its_session(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    names = ["k-0", "k-1", "k-2"]
    with running_members([shard_member(coordinator.bootstrap_servers, n) for n in names]) as members:
        before = settle(members, "three shard members to settle")
        members[2].kill()
        after = settle(members, "the survivors to take the killed member's shards")
        assert after > before
        assert any(e.kind == "expired" for e in membership.of("expired", "shards"))
        for m in members[:2]:
            assigned = latest(m, "assigned")
            assert assigned is not None
            assert len(assigned["shards"]) == SHARDS // 2
        assert not acting_overlaps(members)


def test_paused_member_is_fenced_reports_lost_and_rejoins(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    names = ["p-0", "p-1", "p-2"]
    with running_members([shard_member(coordinator.bootstrap_servers, n) for n in names]) as members:
        first = settle(members, "three shard members to settle")
        zombie = members[2]
        old_assignment = latest(zombie, "assigned")
        assert old_assignment is not None
        zombie.pause()
        wait_for(
            lambda: any(
                e.member_id == old_assignment["member_id"] for e in membership.of("expired", "shards")
            ),
            SETTLE_S,
            "the paused member's session to expire",
        )
        wait_for(
            lambda: (
                sum(len((latest(m, "assigned") or {}).get("shards", [])) for m in members[:2]) == SHARDS
                and all((latest(m, "assigned") or {}).get("generation", 0) > first for m in members[:2])
            ),
            SETTLE_S,
            "the other two to take over all shards",
        )
        zombie.resume()
        wait_for(
            lambda: bool(zombie.events("lost")), SETTLE_S, "the resumed member to report its shards lost"
        )
        final = settle(members, "the resumed member to rejoin")
        rejoined = latest(zombie, "assigned")
        assert rejoined is not None
        assert rejoined["generation"] == final > first
        assert rejoined["member_id"] != old_assignment["member_id"]
        lost = zombie.events("lost")[0]
        assert lost["shards"] == old_assignment["shards"]
        assert not acting_overlaps(members)


def test_graceful_leave_hands_over_at_once(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    names = ["l-0", "l-1"]
    with running_members([shard_member(coordinator.bootstrap_servers, n) for n in names]) as members:
        settle(members, "two members")
        members[1].terminate()
        settle(members, "the remaining member to own every shard")
        assert any(e.kind == "left" for e in membership.of("left", "shards"))
        assert not membership.of("expired", "shards")
        assert not acting_overlaps(members)


@pytest.mark.parametrize("misbehave", ["assign-raises", "assign-unknown"])
def test_broken_leader_raises_to_its_caller_and_the_group_is_never_stuck(
    coordinator: EmbeddedCoordinator, misbehave: str
) -> None:
    # The broken member starts first, so it is the leader of the first generation.
    bad = shard_member(coordinator.bootstrap_servers, "bad", misbehave=misbehave)
    wait_for(lambda: bool(bad.events("started")), 30, "the broken member to start")
    wait_for(lambda: bool(bad.events("error")), 30, "the broken leader's error")
    good = [shard_member(coordinator.bootstrap_servers, f"good-{i}") for i in range(2)]
    with running_members([bad, *good]) as members:
        # Each time it leads, the broken member leaves, so a well-behaved member leads the next
        # generation; as a follower the broken member is fine, and gets a share like the others.
        settle(members, "the group to settle under a well-behaved leader")
        error = bad.events("error")[0]
        assert error["error"] in ("CallbackError", "InvalidAssignmentError")
        assert "group 'shards'" in error["message"]


def test_member_with_undecodable_metadata_gets_nothing_and_the_group_settles(
    coordinator: EmbeddedCoordinator,
) -> None:
    good = [shard_member(coordinator.bootstrap_servers, f"ok-{i}") for i in range(2)]
    wait_for(lambda: all(latest(m, "assigned") for m in good), SETTLE_S, "two good members")
    garbled = shard_member(coordinator.bootstrap_servers, "garbled", misbehave="garbage-metadata")
    with running_members([*good, garbled]):
        wait_for(
            lambda: latest(garbled, "assigned") is not None, SETTLE_S, "the garbled member to be assigned"
        )
        assert (latest(garbled, "assigned") or {}).get("shards") == []
        wait_for(
            lambda: (
                sorted(s for m in good for s in (latest(m, "assigned") or {}).get("shards", []))
                == list(range(SHARDS))
            ),
            SETTLE_S,
            "the good members to own every shard",
        )


def test_member_with_empty_metadata_gets_a_clear_error_and_others_are_unaffected(
    coordinator: EmbeddedCoordinator,
) -> None:
    with running_members([shard_member(coordinator.bootstrap_servers, "fine")]) as members:
        settle(members, "one member")
        empty = shard_member(coordinator.bootstrap_servers, "empty", misbehave="empty-metadata")
        members.append(empty)
        wait_for(lambda: bool(empty.events("error")), 30, "the empty-metadata member's error")
        error = empty.events("error")[0]
        assert error["error"] == "InvalidMetadataError"
        assert "metadata() must return a non-empty list" in error["message"]
        revoked = members[0].events("revoked")
        assert len(revoked) <= 1  # the first join's prepare only: no rebalance reached the others
        assert not empty.events("assigned")


def test_group_mixing_payload_releases_rebalances(coordinator: EmbeddedCoordinator) -> None:
    # Release 1 members lead first; then a release 2 member leads after they are gone.
    old = [shard_member(coordinator.bootstrap_servers, f"v1-{i}", release=1) for i in range(2)]
    wait_for(lambda: all(latest(m, "assigned") for m in old), SETTLE_S, "two release-1 members")
    new = [shard_member(coordinator.bootstrap_servers, f"v2-{i}", release=2) for i in range(2)]
    with running_members([*old, *new]) as members:
        settle(members, "a group of release-1 and release-2 members")
        assert all(len((latest(m, "assigned") or {})["shards"]) == SHARDS // 4 for m in members)
        for m in old:
            m.terminate()
        settle(members, "the release-2 members after the rolling upgrade")
        assert not acting_overlaps(members)


def test_static_member_restarted_within_its_session_keeps_its_shards_without_a_rebalance(
    coordinator: EmbeddedCoordinator, membership: MembershipRecorder
) -> None:
    def start(name: str) -> MemberProcess:
        return shard_member(
            coordinator.bootstrap_servers, name, instance_id=f"{name}-static", session_ms=15000
        )

    with running_members([start(f"st-{i}") for i in range(3)]) as members:
        generation = settle(members, "three static members")
        before = latest(members[1], "assigned")
        assert before is not None
        rebalances = len(membership.of("rebalance", "shards"))
        revocations = [len(m.events("revoked")) for m in (members[0], members[2])]
        members[1].kill()
        members[1] = start("st-1")
        wait_for(
            lambda: latest(members[1], "assigned") is not None, SETTLE_S, "the restarted member's assignment"
        )
        after = latest(members[1], "assigned")
        assert after is not None
        assert after["shards"] == before["shards"]
        assert after["generation"] == generation
        assert after["member_id"] != before["member_id"]
        assert len(membership.of("rebalance", "shards")) == rebalances
        assert [len(m.events("revoked")) for m in (members[0], members[2])] == revocations
        assert not acting_overlaps(members)
