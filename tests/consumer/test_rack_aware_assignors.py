"""Rack awareness across all five assignors: Kafka's rule for when it applies, the invariants it
keeps, and locality whenever the racks allow it."""

from __future__ import annotations

import doctest
from collections import Counter
from dataclasses import replace

import pytest
from coordinator_consumer import ASSIGNORS, _racks
from coordinator_consumer._model import Assignment, Cluster, Subscription, TopicPartition
from coordinator_consumer._roundrobin import assign_roundrobin
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOPICS = ["t0", "t1", "t2"]
RACKS = ["r0", "r1", "r2"]


def test_the_docstring_examples_hold() -> None:
    failures, tried = doctest.testmod(_racks)
    assert tried >= 4 and failures == 0


def per_member_and_topic(assignment: Assignment) -> Counter[tuple[str, str]]:
    return Counter((member, tp.topic) for member, tps in assignment.items() for tp in tps)


def check_sound_and_complete(members: list[Subscription], cluster: Cluster, result: Assignment) -> None:
    assert set(result) == {s.member_id for s in members}
    topics = {s.member_id: s.topics for s in members}
    given_out = Counter(tp for tps in result.values() for tp in tps)
    subscribed = {t for s in members for t in s.topics}
    expected = {TopicPartition(t, p) for t in subscribed for p in range(cluster.partitions.get(t, 0))}
    assert set(given_out) == expected and all(n == 1 for n in given_out.values())
    for member_id, tps in result.items():
        assert list(tps) == sorted(tps)
        assert all(tp.topic in topics[member_id] for tp in tps)


# --- any racks: the base invariants hold, and the balance is what it is without racks ----------

members_st = st.lists(
    st.builds(
        Subscription,
        member_id=st.text("abcdefgh", min_size=1, max_size=3),
        topics=st.frozensets(st.sampled_from([*TOPICS, "ghost"])),
        group_instance_id=st.none() | st.text("ijk", min_size=1, max_size=2),
        rack=st.none() | st.sampled_from(["", *RACKS]),
    ),
    min_size=1,
    max_size=8,
    unique_by=(lambda s: s.member_id, lambda s: s.group_instance_id or f"dynamic {s.member_id}"),
)


@st.composite
def racked_clusters(draw: st.DrawFn) -> Cluster:
    partitions = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9)))
    replica_racks = {
        TopicPartition(topic, p): draw(st.frozensets(st.sampled_from([*RACKS, "r9"]), max_size=3))
        for topic, count in partitions.items()
        for p in range(count)
    }
    return Cluster(partitions=partitions, replica_racks=replica_racks)


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@PROPERTY
@given(members=members_st, cluster=racked_clusters(), rack_aware=st.sampled_from([None, True]))
def test_rack_awareness_keeps_the_invariants_and_the_balance(
    name: str, members: list[Subscription], cluster: Cluster, rack_aware: bool | None
) -> None:
    assign = ASSIGNORS[name]
    aware = assign(members, cluster, rack_aware=rack_aware)  # type: ignore[call-arg]
    plain = assign(members, cluster, rack_aware=False)  # type: ignore[call-arg]
    check_sound_and_complete(members, cluster, aware)
    if name == "range":  # per topic: n // m or n // m + 1 each, and n % m members get the extra one
        for topic, count in cluster.partitions.items():
            subscribers = [s.member_id for s in members if topic in s.topics]
            if subscribers:
                quota, extra = divmod(count, len(subscribers))
                counts = [sum(tp.topic == topic for tp in aware[m]) for m in subscribers]
                assert all(c in (quota, quota + 1) for c in counts)
                assert counts.count(quota + 1) == extra
    elif name == "roundrobin":  # as many partitions of each topic per member as Kafka's deal
        assert per_member_and_topic(aware) == per_member_and_topic(plain)
    else:
        assert sorted(map(len, aware.values())) == sorted(map(len, plain.values()))


# --- racks that allow it: every partition is read in one of its replicas' racks ------------------


@st.composite
def rack_fitting_groups(draw: st.DrawFn) -> tuple[list[Subscription], Cluster]:
    """Members in racks, and topics whose partitions' replicas sit in those racks in proportion
    to the members there (partition p lives with member perm[p % M]), so a balanced assignment
    exists in which every partition is read in one of its replicas' racks. Some partitions also
    have a replica in a rack without members."""
    n = draw(st.integers(1, 8))
    names = draw(st.lists(st.text("abcxyz", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    racks = draw(st.lists(st.sampled_from(RACKS), min_size=n, max_size=n))
    instances = draw(st.lists(st.none() | st.sampled_from("ijklmnop"), min_size=n, max_size=n))
    instances = [i if i not in instances[:k] else None for k, i in enumerate(instances)]  # unique
    topics = draw(st.lists(st.sampled_from(TOPICS), min_size=1, unique=True))
    partitions = {t: n * draw(st.integers(0, 3)) for t in topics}
    home = draw(st.permutations(range(n)))
    replica_racks = {
        TopicPartition(t, p): frozenset({racks[home[p % n]]} | ({"far"} if draw(st.booleans()) else set()))
        for t, count in partitions.items()
        for p in range(count)
    }
    members = [
        Subscription(member_id=m, topics=frozenset(topics), rack=r, group_instance_id=i)
        for m, r, i in zip(names, racks, instances)
    ]
    return members, Cluster(partitions=partitions, replica_racks=replica_racks)


def misplaced(members: list[Subscription], cluster: Cluster, result: Assignment) -> list[str]:
    rack = {s.member_id: s.rack for s in members}
    return [
        f"{tp.topic}-{tp.partition} (racks {sorted(cluster.replica_racks[tp])}) to {m} in {rack[m]}"
        for m, tps in result.items()
        for tp in tps
        if rack[m] not in cluster.replica_racks[tp]
    ]


@pytest.mark.parametrize("name", sorted(ASSIGNORS))
@PROPERTY
@given(group=rack_fitting_groups())
def test_when_racks_allow_every_partition_is_read_in_one_of_its_replicas_racks(
    name: str, group: tuple[list[Subscription], Cluster]
) -> None:
    members, cluster = group
    result = ASSIGNORS[name](members, cluster)  # by default: Kafka's rule
    check_sound_and_complete(members, cluster, result)
    assert not misplaced(members, cluster, result)


def test_the_locality_check_can_fail_without_racks() -> None:
    # Ignoring racks, every assignor gives "a" (in r0) partition 0, which lives in r1 only.
    members = [
        Subscription(member_id=m, topics=frozenset({"t0"}), rack=r) for m, r in (("a", "r0"), ("b", "r1"))
    ]
    cluster = Cluster(
        partitions={"t0": 4},
        replica_racks={
            TopicPartition("t0", p): frozenset({r}) for p, r in enumerate(["r1", "r0", "r0", "r1"])
        },
    )
    for name, assign in ASSIGNORS.items():
        assert not misplaced(members, cluster, assign(members, cluster)), name
        assert misplaced(members, cluster, assign(members, cluster, rack_aware=False)), name  # type: ignore[call-arg]


# --- round robin: Kafka's deal unless racks help -------------------------------------------------


@PROPERTY
@given(members=members_st, cluster=racked_clusters())
def test_roundrobin_is_kafkas_deal_without_racks(members: list[Subscription], cluster: Cluster) -> None:
    kafkas = assign_roundrobin(members, cluster, rack_aware=False)
    assert assign_roundrobin([replace(s, rack=None) for s in members], cluster) == kafkas
    no_replica_racks = replace(cluster, replica_racks={})
    assert assign_roundrobin(members, no_replica_racks) == kafkas
    # Every partition in the same racks: no member is nearer to one than to another.
    same_racks = replace(cluster, replica_racks=dict.fromkeys(cluster.replica_racks, frozenset(RACKS)))
    assert assign_roundrobin(members, same_racks) == kafkas
