"""``coordinator_leader.LeaderElection`` on a real 3-broker Apache Kafka cluster: the leader's
process is SIGKILLed, then the group's coordinator broker.

The candidates are tests/leader/leader_process.py processes, checked as
tests/leader/test_leader_processes.py checks them on the embedded coordinator: each prints when
it was elected and revoked and the first and last moments each term saw itself lead
(``is_leader()`` every 5 ms, on CLOCK_MONOTONIC, one clock for all processes), and the terms
of two processes must never intersect (``overlaps``) while epochs grow from one process's term
to the next (``epochs_grow``). On Kafka the coordinator is one broker among three: killing it
leaves every member without answers until another broker has taken over
``__consumer_offsets`` and loaded the group, longer than the members' session here, so every
candidate (the leader included) must step down on its own lease before a new election.
"""

from __future__ import annotations

import time

from leader.leader_faults import (
    agreed_leader,
    elected_after,
    epochs_grow,
    finish,
    leadership_terms,
    overlaps,
    start_candidates,
    stderr_of,
)
from member_processes import wait_for

from coordinator_api.testing import KafkaCluster

SESSION_MS = 2000
LIVENESS_S = 90  # a loaded 2-core machine that also runs three broker JVMs


def test_leader_survives_its_process_and_the_coordinator_broker_being_killed(kafka: KafkaCluster) -> None:
    group = "kafka-leader-faults"
    candidates = start_candidates(
        kafka.bootstrap_servers, ("kc1", "kc2", "kc3"), session_ms=SESSION_MS, group=group
    )
    try:
        first = wait_for(lambda: agreed_leader(candidates), LIVENESS_S, "an agreed leader on Kafka")
        first_epoch = first.last_epoch()
        assert first_epoch is not None

        # The leader's process dies: the others elect a successor once Kafka expired its session.
        t_kill = time.monotonic()
        first.kill()
        second, elected = wait_for(
            lambda: elected_after(candidates, t_kill), LIVENESS_S, "a successor to the killed leader"
        )
        crash_failover = elected["t"] - t_kill
        assert second is not first
        assert elected["epoch"] > first_epoch
        # Not before Kafka could have expired the dead leader (as on the embedded coordinator:
        # its last heartbeat is normally at most a third of the session older than the kill).
        assert crash_failover >= SESSION_MS / 2000
        assert wait_for(lambda: agreed_leader(candidates), LIVENESS_S, "the survivors to agree") is second
        second_epoch = second.last_epoch()
        assert second_epoch is not None

        # The group's coordinator broker dies: nothing answers the members until another broker
        # leads the group's __consumer_offsets partition (about 3 s here, more than a session).
        node = kafka.coordinator_of(group)
        t_broker = time.monotonic()
        kafka.kill_broker(node)
        assert kafka.coordinator_of(group, timeout=LIVENESS_S) != node
        third, reelected = wait_for(
            lambda: elected_after(candidates, t_broker), LIVENESS_S, "an election on the new coordinator"
        )
        assert reelected["epoch"] > second_epoch
        assert wait_for(lambda: agreed_leader(candidates), LIVENESS_S, "everyone to agree again") is third
        broker_failover = reelected["t"] - t_broker
        # The previous leader stepped down on its own lease, before the new election.
        revoked = second.events("revoked", t_broker)
        assert revoked and revoked[0]["t"] < reelected["t"]
        finish(candidates)
        terms = leadership_terms(candidates)
        assert overlaps(terms) == [], stderr_of(candidates)
        assert epochs_grow(terms) == []
        assert [t for t in terms if t.who == first.label][-1].end <= (first.killed_at or 0)
        print(
            f"\nleader on Kafka (session {SESSION_MS} ms): leader SIGKILL -> {second.name} elected "
            f"after {crash_failover * 1000:.0f} ms (epoch {first_epoch} -> {second_epoch}); "
            f"coordinator broker {node} SIGKILL -> {second.name} stepped down after "
            f"{(revoked[0]['t'] - t_broker) * 1000:.0f} ms, {third.name} elected after "
            f"{broker_failover * 1000:.0f} ms (epoch {reelected['epoch']}); {len(terms)} terms, no overlap"
        )
    finally:
        finish(candidates)
