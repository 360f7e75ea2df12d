"""A scale-out of a KIP-848 consumer group, as a timeline from a real run (docs/incremental.md).

Three Apache Kafka Java consumers (``group.protocol=consumer``) in real processes against the
embedded coordinator: two share six partitions, then a third joins. The timeline merges what
each member reported from inside its rebalance listener with what the coordinator logged, and
the test checks what the incremental protocol promises: only the partitions that move are
revoked, nobody else is interrupted, the newcomer gets each partition as soon as its previous
owner has let it go, and no partition ever has two owners. ``pytest -s`` prints the timeline.
"""

from __future__ import annotations

import time
from typing import Any

from member_processes import MemberProcess, overlapping_ownership, running_members, wait_for

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api.server import MembershipRecorder, recording_membership

PARTITIONS = 6
CONFIG = CoordinatorConfig(
    initial_rebalance_delay_ms=0,
    min_session_timeout_ms=500,
    consumer_group_session_timeout_ms=6000,
    consumer_group_heartbeat_interval_ms=500,
)


def coordinator_lines(recorded: MembershipRecorder) -> list[tuple[float, str]]:
    """The coordinator's membership events of the timeline, stamped with the wall clock members
    report on."""
    return [
        (
            wall,
            f"coordinator  {e.kind:<9} epoch {e.generation_id:<3} {(e.member_id or '')[:8]:<8} {e.detail}",
        )
        for _, wall, e in recorded.logged()
        if e.kind in ("rebalance", "assigned", "left", "expired", "fenced")
    ]


def settled(members: list[MemberProcess]) -> bool:
    owned = sorted(p for m in members for p in m.owned)
    return owned == list(range(PARTITIONS)) and all(m.owned for m in members)


def test_a_newcomer_takes_over_partitions_one_owner_at_a_time() -> None:
    with (
        recording_membership() as recorded,
        EmbeddedCoordinator(topics={"events": PARTITIONS}, config=CONFIG) as coordinator,
    ):
        bootstrap = coordinator.bootstrap_servers

        def member(name: str) -> MemberProcess:
            return MemberProcess("java", bootstrap, name, group="timeline", group_protocol="consumer")

        first = [member("c1"), member("c2")]
        with running_members(first):
            wait_for(lambda: settled(first), 90, "two members to share the partitions")
            before = {m.name: set(m.owned) for m in first}
            start = time.time()
            newcomer = member("c3")
            everyone = [*first, newcomer]
            with running_members([newcomer]):
                wait_for(lambda: settled(everyone), 90, "the newcomer to get its share")
                end = time.time()
                time.sleep(1.0)  # nothing more happens once settled
                problems = overlapping_ownership(everyone)
                after = {m.name: set(m.owned) for m in everyone}
                window = end + 1.0
                events = {m.name: [r for r in m.reports if start <= r["t"] <= window] for m in everyone}
    assert not problems, problems

    def of(name: str, kind: str) -> list[dict[str, Any]]:
        return [r for r in events[name] if r["event"] == kind]

    # Only what moves to c3 is revoked; c1 and c2 keep the rest without interruption.
    moved = after["c3"]
    assert len(moved) == PARTITIONS // 3
    for name in ("c1", "c2"):
        revoked = {p for r in of(name, "revoked") for p in r["partitions"]}
        assert revoked == before[name] & moved, (name, revoked)
        assert after[name] == before[name] - moved
    # Each moved partition reaches c3 after its previous owner reported revoking it.
    for partition in moved:
        released = max(
            r["t"] for name in ("c1", "c2") for r in of(name, "revoked") if partition in r["partitions"]
        )
        taken = min(r["t"] for r in of("c3", "assigned") if partition in r["partitions"])
        assert taken >= released
    reports = [(r["t"], name, r) for name, rs in events.items() for r in rs]

    # Time 0 is when c3's process was ready (its JVM start is not the protocol's doing).
    origin = of("c3", "started")[0]["t"]
    lines = [(t, f"{name:<12} {r['event']:<9} {r.get('partitions', '')}") for t, name, r in reports]
    lines += [(t, text) for t, text in coordinator_lines(recorded) if origin <= t <= window]
    print(f"\nscale-out from 2 to 3 members: settled {(end - origin) * 1000:.0f} ms after c3 started")
    for t, text in sorted(lines):
        if t >= origin:
            print(f"{(t - origin) * 1000:6.0f} ms  {text}")
