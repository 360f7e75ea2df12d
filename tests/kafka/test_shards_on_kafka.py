"""A custom protocol (tests/membership/shard_member.py, a ``Coordinator`` shard allocator) on a
real 3-broker Apache Kafka cluster, with a member and then the group's coordinator broker
SIGKILLed under it, and with the coordinator broker shut down in a controlled way (SIGTERM).

The same member processes and checks as tests/membership/test_coordinator_processes.py, which
runs them on the embedded coordinator: ``settled`` (every live member's latest assignment is of
one generation and they cover every shard once) and ``acting_overlaps`` (from the ``act``
records each member prints while ``generation_if_stable()`` lets it work on its shards: no shard
worked on by two members at once). Kafka adds what the embedded coordinator cannot show: the
coordinator is one broker among three, and when it dies the group's state must be reloaded by
another broker from the replicated ``__consumer_offsets`` while the members find it. A SIGKILLed
coordinator is only noticed by the cluster after ``broker.session.timeout.ms`` (3 s here), so
members lose their lease and rejoin; a controlled shutdown hands the group over at once, and
members told NOT_COORDINATOR by the old broker carry on in the same generation.
"""

from __future__ import annotations

import itertools
import time

from member_processes import MemberProcess, running_members, wait_for
from membership.test_coordinator_processes import SHARDS, acting_overlaps, latest, settled, shard_member

from coordinator_api.testing import KafkaCluster

SESSION_MS = 3000  # shard_member.py's default; Kafka accepts 500 ms up to 30 min here
LIVENESS_S = 90  # a loaded 2-core machine that also runs three broker JVMs


def settle(members: list[MemberProcess], what: str) -> int:
    """Wait until the group has settled; the generation it settled in."""
    wait_for(lambda: settled(members), LIVENESS_S, what, step=0.1)
    first = latest(next(m for m in members if m.alive), "assigned")
    assert first is not None
    return int(first["generation"])


def acted_since(member: MemberProcess, since: float) -> bool:
    """Whether the member worked on its shards after ``since`` (wall clock, as it reports)."""
    return any(r["t"] > since for r in member.events("act"))


def diagnostics(members: list[MemberProcess]) -> str:
    return "\n".join(f"--- {m.name}\n{m.stderr_text()[-3000:]}" for m in members)


def test_shards_survive_a_killed_member_and_a_killed_coordinator_broker(kafka: KafkaCluster) -> None:
    group = "kafka-shards-faults"
    names = ["ks-0", "ks-1", "ks-2"]
    started = [
        shard_member(kafka.bootstrap_servers, name, group=group, session_ms=SESSION_MS) for name in names
    ]
    with running_members(started) as members:
        first = settle(members, "three shard members to settle on Kafka")
        for m in members:
            assert len((latest(m, "assigned") or {})["shards"]) == SHARDS // 3

        # (a) A member dies without leaving: its shards move once the broker expires its session.
        t_kill = time.time()
        members[2].kill()
        second = settle(members, "the survivors to take the killed member's shards")
        t_moved = time.time()
        assert second > first
        for m in members[:2]:
            assert len((latest(m, "assigned") or {})["shards"]) == SHARDS // 2
        # Kafka expires a silent member one session after its last heartbeat, not before.
        moved_at = min(r["t"] for m in members[:2] for r in m.events("assigned") if r["generation"] == second)
        assert moved_at - t_kill >= SESSION_MS / 1000 / 2

        # (b) The group's coordinator broker dies (SIGKILL: no controlled shutdown, no handover).
        node = kafka.coordinator_of(group)
        t_broker = time.time()
        kafka.kill_broker(node)
        new_node = kafka.coordinator_of(group, timeout=LIVENESS_S)
        assert new_node != node
        # Every survivor works on its shards again more than a session after the kill: the
        # dead broker acknowledged nothing since, so each must have reached the new coordinator
        # (its lease, counted from acknowledged requests, lasts at most one session).
        wait_for(
            lambda: all(acted_since(m, t_broker + SESSION_MS / 1000 + 1.0) for m in members[:2]),
            LIVENESS_S,
            "the survivors to act again through the new coordinator",
            step=0.1,
        )
        third = settle(members, "the group to settle on the new coordinator")
        t_end = time.time()
        assert third >= second
        assert sorted(s for m in members[:2] for s in (latest(m, "assigned") or {})["shards"]) == list(
            range(SHARDS)
        )
        overlaps = acting_overlaps(members)
        assert overlaps == [], diagnostics(members)
        lost = [r for m in members[:2] for r in m.events("lost") if r["t"] > t_broker]
        print(
            f"\nshards on Kafka: member SIGKILL -> shards moved in {t_moved - t_kill:.1f} s "
            f"(generation {first} -> {second}); coordinator broker {node} SIGKILL -> broker {new_node} "
            f"took over, group settled in generation {third} after {t_end - t_broker:.1f} s; "
            f"{len(lost)} survivors reported their shards lost meanwhile"
        )


def test_a_controlled_shutdown_of_the_coordinator_broker_moves_the_group_without_a_rebalance(
    kafka: KafkaCluster,
) -> None:
    """SIGTERM: the broker hands its partitions over before it exits, so the new coordinator
    loads the group while the members' leases still run. The old broker answers their
    heartbeats NOT_COORDINATOR (or closes), they find the new one and go on heartbeating in the
    same generation: nobody loses or gives up a shard, and nobody stops working on them."""
    group = "kafka-shards-controlled-shutdown"
    session_ms = 10_000  # a lease that outlasts the handover, even on a heavily loaded machine
    debug = {"SHARD_MEMBER_DEBUG": "1"}  # the driver logs each answer: NOT_COORDINATOR shows
    started = [
        shard_member(kafka.bootstrap_servers, name, group=group, session_ms=session_ms, env=debug)
        for name in ("kc-0", "kc-1")
    ]
    with running_members(started) as members:
        generation = settle(members, "two shard members to settle on Kafka")
        node = kafka.coordinator_of(group)
        t_stop = time.time()
        kafka.stop_broker(node)  # returns once the broker process has exited
        new_node = kafka.coordinator_of(group, timeout=LIVENESS_S)
        assert new_node != node
        # Acting more than a session after the broker went means a heartbeat was acknowledged
        # since, by the new coordinator (the lease lasts at most a session from the last one).
        wait_for(
            lambda: all(acted_since(m, t_stop + session_ms / 1000 + 0.5) for m in members),
            LIVENESS_S,
            "the members to act a session after the coordinator broker stopped",
            step=0.1,
        )
        for m in members:
            since_stop = [r for r in m.reports if r["t"] > t_stop and r.get("event") != "act"]
            assert since_stop == [], (m.name, since_stop, diagnostics(members))
            assert (latest(m, "assigned") or {})["generation"] == generation
            # It kept working through the move: never a session without an act.
            acts = [r["t"] for r in m.events("act") if r["t"] > t_stop - 1.0]
            longest = max(b - a for a, b in itertools.pairwise(acts))
            assert longest < session_ms / 1000, (m.name, longest)
        # The new coordinator runs the group: a third member joins and the shards are re-spread.
        members.append(shard_member(kafka.bootstrap_servers, "kc-2", group=group, session_ms=session_ms))
        after = settle(members, "a third member to join through the new coordinator")
        assert after > generation
        assert all(len((latest(m, "assigned") or {})["shards"]) == SHARDS // 3 for m in members)
        assert acting_overlaps(members) == [], diagnostics(members)
        not_coordinator = sum(m.stderr_text().count("error=16)") for m in members[:2])
        print(
            f"\nshards on Kafka: coordinator broker {node} stopped (SIGTERM) -> broker {new_node}; "
            f"the members kept generation {generation} ({not_coordinator} NOT_COORDINATOR answers "
            f"seen), a third member then joined in generation {after}"
        )
