"""The consumer plugin's server-side assignors keep each member's Subscription between targets.

A coordinator runs ``uniform`` or ``range`` over its members at every change; the adapter
keeps the Subscription of a member whose spec did not change. Kept or built again, the target
must be the same, and what is kept must stay within its limit. A member given exactly its
current target gets that object back, which spares the coordinator comparing it.
"""

from __future__ import annotations

import random
import sys
import threading

import pytest
from coordinator_consumer._range import assign_range
from coordinator_consumer._server_assignors import SERVER_ASSIGNORS, ServerSideAssignor
from coordinator_consumer._uniform import assign_uniform

from coordinator_api import AssignmentSpec

TOPICS = {"t0": 12, "t1": 7, "t2": 3}


@pytest.mark.parametrize("name", sorted(SERVER_ASSIGNORS))
def test_a_kept_subscription_gives_the_target_a_fresh_one_gives(name: str) -> None:
    assign = {"uniform": assign_uniform, "range": assign_range}[name]
    keeping = ServerSideAssignor(assign, limit=60)  # small: dropped and built again on the way
    rng = random.Random(name)
    members: dict[str, AssignmentSpec] = {}
    serial = 0
    for _ in range(400):
        change = rng.random()
        if change < 0.35 or len(members) < 2:
            serial += 1
            member_id = f"m{serial:04d}"
            topics = frozenset(rng.sample(sorted(TOPICS), rng.randint(1, len(TOPICS))))
            members[member_id] = AssignmentSpec(
                member_id=member_id, instance_id=None, rack=None, topics=topics, current=frozenset()
            )
        elif change < 0.65:
            del members[rng.choice(sorted(members))]
        elif change < 0.8:
            member_id = rng.choice(sorted(members))
            topics = frozenset(rng.sample(sorted(TOPICS), rng.randint(1, len(TOPICS))))
            members[member_id] = AssignmentSpec(
                member_id=member_id,
                instance_id=None,
                rack=rng.choice([None, "r1"]),
                topics=topics,
                current=members[member_id].current,
            )
        specs = [members[m] for m in sorted(members)]
        target = keeping(specs, TOPICS)
        assert target == ServerSideAssignor(assign)(specs, TOPICS)
        for spec in specs:
            # A member's current target comes back as itself exactly when it is all it gets.
            given = target[spec.member_id]
            assert (given is spec.current) == (frozenset(given) == spec.current), spec
        assert 0 < keeping.kept_size == kept_size_counted(keeping) <= keeping.limit
        for member_id, spec in members.items():
            # The next target starts from this one, as the coordinator's does.
            members[member_id] = AssignmentSpec(
                member_id=member_id,
                instance_id=None,
                rack=spec.rack,
                topics=spec.topics,
                current=frozenset(target.get(member_id, ())),
            )


def kept_size_counted(assignor: ServerSideAssignor) -> int:
    return sum(1 + len(subscription.owned) for _, subscription in assignor._kept.values())


def test_coordinators_on_several_threads_share_one_assignor() -> None:
    """Every coordinator of a process uses the plugin's one instance, each from its own thread:
    the targets stay right and what is kept stays counted."""
    keeping = ServerSideAssignor(assign_uniform, limit=500)

    def coordinator(seed: int, failures: list[BaseException]) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(300):
                ids = sorted(rng.sample(range(40), rng.randint(1, 12)))  # ids shared across threads
                specs = [
                    AssignmentSpec(
                        member_id=f"m{i:02d}",
                        instance_id=None,
                        rack=None,
                        topics=frozenset({"t0"}),
                        current=frozenset({("t0", i % 12)}),  # some claims clash: both dropped
                    )
                    for i in ids
                ]
                assert keeping(specs, TOPICS) == ServerSideAssignor(assign_uniform)(specs, TOPICS)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)

    failures: list[BaseException] = []
    threads = [threading.Thread(target=coordinator, args=(seed, failures)) for seed in range(4)]
    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns as often as they can
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
    assert not failures, failures
    assert keeping.kept_size == kept_size_counted(keeping) <= keeping.limit
