"""The contrib plugin's own pieces: its pure assignor, its payloads and its member."""

from __future__ import annotations

import doctest
from collections.abc import Iterator
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator_api import EmbeddedCoordinator, PayloadError
from coordinator_api.testing._fixtures import TEST_COORDINATOR_CONFIG, MemberFactory

member_ids = st.text(alphabet="abcdefgh-0123456789", min_size=1, max_size=8)
capacities = st.none() | st.integers(min_value=0, max_value=5)
shard_names = st.lists(st.text(alphabet="stuvwxyz0123456789", min_size=1, max_size=4), max_size=30)
groups = st.dictionaries(member_ids, capacities, min_size=1, max_size=8)


def test_the_assignor_docstring_examples_hold(roundrobin: ModuleType) -> None:
    module = __import__("coordinator_roundrobin._assignor", fromlist=["_"])
    failures, tried = doctest.testmod(module)
    assert tried >= 3 and failures == 0


@given(group=groups, shards=shard_names)
def test_every_shard_is_owned_at_most_once_within_capacity(
    roundrobin: ModuleType, group: dict[str, int | None], shards: list[str]
) -> None:
    members = [roundrobin.ShardMember(member_id=m, capacity=c) for m, c in group.items()]
    plan = roundrobin.assign_round_robin(members, shards)
    assert set(plan) == set(group)
    owned = [shard for names in plan.values() for shard in names]
    assert len(owned) == len(set(owned)) and set(owned) <= set(shards)
    for member_id, names in plan.items():
        capacity = group[member_id]
        assert capacity is None or len(names) <= capacity
        assert list(names) == sorted(names)
    total = sum(len(set(shards)) if c is None else c for c in group.values())
    assert len(owned) == min(len(set(shards)), total)  # nothing left unassigned while there is room
    # Round robin: members with no limit differ by at most one shard.
    unlimited = [len(plan[m]) for m, c in group.items() if c is None]
    assert not unlimited or max(unlimited) - min(unlimited) <= 1


@given(group=groups, shards=shard_names, data=st.data())
def test_the_plan_does_not_depend_on_input_order(
    roundrobin: ModuleType, group: dict[str, int | None], shards: list[str], data: st.DataObject
) -> None:
    members = [roundrobin.ShardMember(member_id=m, capacity=c) for m, c in group.items()]
    shuffled_members = data.draw(st.permutations(members))
    shuffled_shards = data.draw(st.permutations(shards))
    assert roundrobin.assign_round_robin(members, shards) == roundrobin.assign_round_robin(
        shuffled_members, shuffled_shards
    )


def test_payloads_round_trip_and_ignore_fields_they_do_not_know(roundrobin: ModuleType) -> None:
    assert roundrobin.decode_metadata(roundrobin.encode_metadata(3)) == 3
    assert roundrobin.decode_metadata(roundrobin.encode_metadata(None)) is None
    assert roundrobin.decode_assignment(roundrobin.encode_assignment(["a", "b"])) == ("a", "b")
    assert roundrobin.decode_assignment(b"") == ()
    assert roundrobin.decode_metadata(b'{"version": 2, "capacity": 1, "zone": "eu-1"}') == 1


@pytest.mark.parametrize(
    "data",
    [b"\xff", b"[]", b'{"capacity": 1}', b'{"version": 0}', b'{"version": 1, "capacity": -1}'],
)
def test_bad_metadata_is_a_payload_error(roundrobin: ModuleType, data: bytes) -> None:
    with pytest.raises(PayloadError, match="roundrobin-shards metadata"):
        roundrobin.decode_metadata(data)


@pytest.fixture
def members() -> Iterator[MemberFactory]:
    with EmbeddedCoordinator(config=TEST_COORDINATOR_CONFIG) as coordinator:
        factory = MemberFactory(coordinator.bootstrap_servers)
        try:
            yield factory
        finally:
            factory.close_all()


def test_a_group_rebalances_its_shards_as_members_come_and_go(
    roundrobin: ModuleType, members: MemberFactory
) -> None:
    shards = [f"s{i}" for i in range(4)]
    revoked: list[tuple[str, ...]] = []
    first = members(
        roundrobin.RoundRobinShardsCoordinator, "indexers", shards=shards, on_revoked=revoked.append
    )
    members.settle(first)
    assert first.owned_shards == tuple(shards)

    second = members(roundrobin.RoundRobinShardsCoordinator, "indexers", shards=shards, capacity=1)
    generation = members.settle(first, second)
    assert len(second.owned_shards) == 1
    assert sorted(first.owned_shards + second.owned_shards) == shards
    assert revoked == [tuple(shards)]  # the first member gave everything up before the rebalance

    second.close()
    assert members.settle(first, newer_than=generation) > generation
    assert first.owned_shards == tuple(shards)


def test_the_member_checks_its_settings(roundrobin: ModuleType) -> None:
    with pytest.raises(ValueError, match="shards must be non-empty names"):
        roundrobin.RoundRobinShardsCoordinator("g", "127.0.0.1:9", shards=[])
    with pytest.raises(ValueError, match="capacity must be a non-negative integer"):
        roundrobin.RoundRobinShardsCoordinator("g", "127.0.0.1:9", shards=["a"], capacity=-1)
