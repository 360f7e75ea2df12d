"""Which owned-partition claims the leader trusts (KIP-792), and checking assignments."""

from __future__ import annotations

import doctest
import random
from dataclasses import replace

import pytest
from coordinator_consumer import _ownership
from coordinator_consumer._model import Cluster, Subscription, TopicPartition
from coordinator_consumer._ownership import (
    DEFAULT_GENERATION,
    AssignmentError,
    owned_partitions,
    trusted_owned,
    validate_assignment,
)
from coordinator_consumer._protocol import decode_subscription, encode_subscription
from coordinator_consumer._range import assign_range
from coordinator_consumer._roundrobin import assign_roundrobin
from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.protocol.consumer import ConsumerProtocolAssignment

from coordinator_api import _claims

T0P0 = TopicPartition("t0", 0)
T0P1 = TopicPartition("t0", 1)
T1P0 = TopicPartition("t1", 0)


def member(
    member_id: str, topics: set[str], owned: tuple[TopicPartition, ...] = (), generation: int = -1
) -> Subscription:
    return Subscription(member_id=member_id, topics=frozenset(topics), owned=owned, generation=generation)


def test_the_docstring_examples_hold() -> None:
    failures, tried = doctest.testmod(_ownership)
    assert tried >= 8 and failures == 0
    failures, tried = doctest.testmod(_claims)  # the rule itself, shared with the spark plugin
    assert tried >= 2 and failures == 0


# --- owned_partitions -------------------------------------------------------------------------


def test_a_stale_claim_from_an_older_generation_loses() -> None:
    members = [
        member("a", {"t0"}, (T0P0, T0P1), generation=3),  # missed a rebalance
        member("b", {"t0"}, (T0P0,), generation=4),
    ]
    assert owned_partitions(members) == {"a": frozenset({T0P1}), "b": frozenset({T0P0})}
    # whoever comes first in the input
    assert owned_partitions(members[::-1]) == owned_partitions(members)


def test_two_claims_in_the_same_generation_are_both_dropped() -> None:
    members = [member("a", {"t0"}, (T0P0, T0P1), generation=4), member("b", {"t0"}, (T0P0,), generation=4)]
    assert owned_partitions(members) == {"a": frozenset({T0P1}), "b": frozenset()}


def test_without_a_partition_claimed_twice_each_claim_is_the_members_own_set() -> None:
    """The engine's shortcut: then a member's claim is its ``owned_set`` itself, whose topics
    (``owned_topics``) are made once; a claim on a topic no longer subscribed is cut down."""
    T1P0 = TopicPartition("t1", 0)
    both = member("a", {"t0", "t1"}, (T0P0, T1P0), generation=5)
    unsubscribed = member("b", {"t0"}, (T0P1, TopicPartition("t2", 0)), generation=5)
    claims = trusted_owned([both, unsubscribed])
    assert claims[0] is both.owned_set and both.owned_topics == {"t0", "t1"}
    assert claims[1] == {T0P1}
    assert owned_partitions([both, unsubscribed]) == {"a": both.owned_set, "b": frozenset({T0P1})}


def test_a_tie_below_the_highest_generation_does_not_matter() -> None:
    members = [
        member("a", {"t0"}, (T0P0,), generation=2),
        member("b", {"t0"}, (T0P0,), generation=2),
        member("c", {"t0"}, (T0P0,), generation=5),
    ]
    assert owned_partitions(members) == {"a": frozenset(), "b": frozenset(), "c": frozenset({T0P0})}


def test_a_tie_at_the_highest_generation_drops_the_older_claims_too() -> None:
    members = [
        member("a", {"t0"}, (T0P0,), generation=5),
        member("b", {"t0"}, (T0P0,), generation=5),
        member("c", {"t0"}, (T0P0,), generation=2),
    ]
    assert owned_partitions(members) == {"a": frozenset(), "b": frozenset(), "c": frozenset()}


def test_claims_on_topics_the_member_no_longer_subscribes_to_are_dropped() -> None:
    members = [member("a", {"t1"}, (T0P0, T1P0), generation=4), member("b", {"t0"})]
    assert owned_partitions(members) == {"a": frozenset({T1P0}), "b": frozenset()}


def test_a_newer_claim_dropped_for_its_topic_still_overrules_an_older_one() -> None:
    # As in Kafka: conflicts are settled first; "a" is stale whatever "b" does with t0 now.
    members = [member("a", {"t0"}, (T0P0,), generation=3), member("b", {"t1"}, (T0P0,), generation=4)]
    assert owned_partitions(members) == {"a": frozenset(), "b": frozenset()}


def test_v0_and_v1_members_report_generation_minus_one() -> None:
    # a v1 member (owned partitions, no generation) against a v2 member
    v1 = decode_subscription("a", None, encode_subscription(["t0"], owned=[T0P0, T0P1], version=1))
    v2 = decode_subscription("b", None, encode_subscription(["t0"], owned=[T0P0], generation=1, version=2))
    v0 = decode_subscription("c", None, encode_subscription(["t0"], owned=[T0P1], version=0))
    assert (v1.generation, v2.generation, v0.generation) == (DEFAULT_GENERATION, 1, DEFAULT_GENERATION)
    assert v0.owned == ()
    assert owned_partitions([v1, v2, v0]) == {
        "a": frozenset({T0P1}),
        "b": frozenset({T0P0}),
        "c": frozenset(),
    }


def test_two_generationless_claims_cancel_out_and_a_lone_one_is_trusted() -> None:
    members = [member("a", {"t0"}, (T0P0, T0P1)), member("b", {"t0"}, (T0P0,))]
    assert owned_partitions(members) == {"a": frozenset({T0P1}), "b": frozenset()}


def test_what_kafka_pythons_cooperative_sticky_member_sends_is_understood() -> None:
    assignor = CooperativeStickyAssignor()
    wire = ConsumerProtocolAssignment.TopicPartition
    assignor.on_assignment(
        ConsumerProtocolAssignment(
            version=1, assigned_partitions=[wire(topic="t0", partitions=[0], version=1)], user_data=b""
        ),
        7,
    )
    sent = assignor.metadata({"t0"}).encode()  # v1: owned partitions, no generation on the wire
    subscription = decode_subscription("a", None, sent)
    assert subscription.owned == (T0P0,) and subscription.generation == DEFAULT_GENERATION
    newer = member("b", {"t0"}, (T0P0,), generation=7)
    assert owned_partitions([subscription, newer]) == {"a": frozenset(), "b": frozenset({T0P0})}


def test_a_member_listing_a_partition_twice_makes_one_claim() -> None:
    assert owned_partitions([member("a", {"t0"}, (T0P0, T0P0), generation=2)]) == {"a": frozenset({T0P0})}


def test_every_member_is_a_key_and_an_empty_group_gives_an_empty_map() -> None:
    assert owned_partitions([]) == {}
    assert owned_partitions([member("a", set()), member("b", {"t0"})]) == {"a": frozenset(), "b": frozenset()}


def test_two_subscriptions_of_one_member_are_refused() -> None:
    with pytest.raises(ValueError, match="'a' has two subscriptions"):
        owned_partitions([member("a", {"t0"}), member("a", {"t1"})])


def kafka_reference(subscriptions: list[Subscription]) -> dict[str, frozenset[TopicPartition]]:
    """A line-by-line port of AbstractStickyAssignor.allSubscriptionsEqual's ownership loop
    (Kafka 3.x), followed by GeneralAssignmentBuilder's "no longer subscribed" filter."""
    generation = {s.member_id: s.generation for s in subscriptions}
    owned: dict[str, list[TopicPartition]] = {}
    previous_owner: dict[TopicPartition, str] = {}
    for s in subscriptions:
        mine: list[TopicPartition] = []
        owned[s.member_id] = mine
        for tp in s.owned:
            other = previous_owner.get(tp)
            if other is None:
                mine.append(tp)
                previous_owner[tp] = s.member_id
            elif s.generation == generation[other]:
                if tp in owned[other]:
                    owned[other].remove(tp)
                previous_owner[tp] = s.member_id
            elif s.generation > generation[other]:
                mine.append(tp)
                if tp in owned[other]:
                    owned[other].remove(tp)
                previous_owner[tp] = s.member_id
    topics = {s.member_id: s.topics for s in subscriptions}
    return {m: frozenset(tp for tp in tps if tp.topic in topics[m]) for m, tps in owned.items()}


partitions_st = st.builds(TopicPartition, st.sampled_from(["t0", "t1", "t2"]), st.integers(0, 3))
subscriptions_st = st.lists(
    st.builds(
        Subscription,
        member_id=st.sampled_from("abcdefgh"),
        topics=st.frozensets(st.sampled_from(["t0", "t1", "t2"])),
        # Kafka members never list a partition twice; the reference port would drop it if they did.
        owned=st.lists(partitions_st, unique=True, max_size=6).map(tuple),
        generation=st.integers(-1, 3),
    ),
    unique_by=lambda s: s.member_id,
    max_size=6,
)


@given(subscriptions=subscriptions_st, seed=st.integers(0, 2**16))
def test_the_claims_trusted_match_kafkas_algorithm_in_any_input_order(
    subscriptions: list[Subscription], seed: int
) -> None:
    ours = owned_partitions(subscriptions)
    shuffled = list(subscriptions)
    random.Random(seed).shuffle(shuffled)
    assert owned_partitions(shuffled) == ours
    assert ours == kafka_reference(shuffled)


@given(subscriptions=subscriptions_st)
def test_trusted_claims_are_the_unique_newest_subscribed_ones(subscriptions: list[Subscription]) -> None:
    trusted = owned_partitions(subscriptions)
    assert set(trusted) == {s.member_id for s in subscriptions}
    owners: dict[TopicPartition, str] = {}
    for s in subscriptions:
        for tp in trusted[s.member_id]:
            assert tp in s.owned and tp.topic in s.topics
            assert tp not in owners, "a partition trusted to two members"
            owners[tp] = s.member_id
            rivals = [o.generation for o in subscriptions if o is not s and tp in o.owned]
            assert all(g < s.generation for g in rivals)


# --- validate_assignment ----------------------------------------------------------------------

GROUP = [member("a", {"t0"}), member("b", {"t0", "t1"})]
CLUSTER = Cluster(partitions={"t0": 2, "t1": 1})


def problems_of(assignment: dict[str, tuple[TopicPartition, ...]]) -> tuple[str, ...]:
    with pytest.raises(AssignmentError) as caught:
        validate_assignment(assignment, GROUP, CLUSTER)
    assert isinstance(caught.value, ValueError)
    for problem in caught.value.problems:
        assert problem in str(caught.value)
    return caught.value.problems


def test_a_sound_assignment_passes_even_when_it_leaves_partitions_and_members_out() -> None:
    validate_assignment({"a": (T0P0,), "b": (T0P1, T1P0)}, GROUP, CLUSTER)
    validate_assignment({"b": (T1P0,)}, GROUP, CLUSTER)
    validate_assignment({"a": (), "b": ()}, GROUP, CLUSTER)


def test_a_partition_given_to_two_members_is_caught() -> None:
    assert problems_of({"a": (T0P0,), "b": (T0P0, T1P0)}) == (
        "partition t0-0 is assigned 2 times, to members 'a', 'b'",
    )


def test_a_partition_given_twice_to_one_member_is_caught() -> None:
    assert problems_of({"a": (T0P0, T0P0)}) == ("partition t0-0 is assigned 2 times, to members 'a', 'a'",)


def test_a_partition_given_to_a_member_not_subscribed_to_its_topic_is_caught() -> None:
    assert problems_of({"a": (T1P0,)}) == (
        "partition t1-0 is assigned to member 'a', which does not subscribe to topic 't1'",
    )


@pytest.mark.parametrize(
    ("partition", "why"),
    [
        (TopicPartition("t0", 2), "topic 't0' has 2 partition(s)"),
        (TopicPartition("t0", -1), "topic 't0' has 2 partition(s)"),
        (TopicPartition("gone", 0), "topic 'gone' is not in the cluster metadata"),
    ],
)
def test_a_partition_that_does_not_exist_is_caught(partition: TopicPartition, why: str) -> None:
    found = problems_of({"b": (partition,)})
    name = f"{partition.topic}-{partition.partition}"
    assert f"partition {name} does not exist ({why}), yet is assigned to 'b'" in found


def test_an_unknown_member_is_caught_even_with_nothing_assigned() -> None:
    assert problems_of({"ghost": ()}) == (
        "member 'ghost' is not in the group (known members: 'a', 'b'), yet is assigned []",
    )
    assert problems_of({"ghost": (T0P0,)})[0].startswith("member 'ghost' is not in the group")


def test_every_problem_is_reported_at_once_in_a_stable_order() -> None:
    assignment = {"b": (T0P0, TopicPartition("t0", 9)), "a": (T0P0, T1P0), "x": (T0P1,)}
    first = problems_of(assignment)
    assert problems_of(dict(reversed(assignment.items()))) == first
    assert len(first) == 4


members_st = st.lists(
    st.builds(
        Subscription,
        member_id=st.text("abcdefgh", min_size=1, max_size=3),
        topics=st.frozensets(st.sampled_from(["t0", "t1", "t2", "t3"])),
        group_instance_id=st.none() | st.text("ijk", min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=6,
    unique_by=(lambda s: s.member_id, lambda s: s.group_instance_id or s.member_id + "#"),
)
clusters_st = st.builds(
    Cluster, partitions=st.dictionaries(st.sampled_from(["t0", "t1", "t2"]), st.integers(0, 7))
)


@given(members=members_st, cluster=clusters_st)
def test_what_the_builtin_assignors_return_validates(members: list[Subscription], cluster: Cluster) -> None:
    validate_assignment(assign_range(members, cluster), members, cluster)
    validate_assignment(assign_roundrobin(members, cluster), members, cluster)


@st.composite
def groups_with_work(draw: st.DrawFn) -> tuple[list[Subscription], Cluster]:
    """A group and a cluster in which some member subscribes to a topic with partitions, so the
    assignors give something out (about 60 of 100 draws of the two strategies above do not)."""
    cluster = draw(
        st.builds(
            Cluster,
            partitions=st.dictionaries(st.sampled_from(["t0", "t1", "t2"]), st.integers(1, 7), min_size=1),
        )
    )
    members = draw(members_st)
    busy = draw(st.integers(0, len(members) - 1))
    topic = draw(st.sampled_from(sorted(cluster.partitions)))
    members[busy] = replace(members[busy], topics=members[busy].topics | {topic})
    return members, cluster


@given(group=groups_with_work(), data=st.data())
def test_handing_an_assigned_partition_to_a_second_member_is_always_caught(
    group: tuple[list[Subscription], Cluster], data: st.DataObject
) -> None:
    members, cluster = group
    assignment = assign_roundrobin(members, cluster)
    given_out = [(m, tp) for m, tps in assignment.items() for tp in tps]
    _owner, tp = data.draw(st.sampled_from(given_out))
    thief = data.draw(st.sampled_from([s.member_id for s in members]))
    broken = dict(assignment)
    broken[thief] = (*broken[thief], tp)
    with pytest.raises(AssignmentError, match=f"partition {tp.topic}-{tp.partition} is assigned 2 times"):
        validate_assignment(broken, members, cluster)
