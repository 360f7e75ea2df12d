"""Kafka's consumer protocol payloads: interoperability with kafka-python both ways, every version,
forward compatibility, round trips, and garbage that must raise ConsumerProtocolError only."""

from __future__ import annotations

import contextlib
import doctest
import struct
from typing import Any

import pytest
from coordinator_consumer import _protocol
from coordinator_consumer._model import Subscription, TopicPartition
from coordinator_consumer._protocol import (
    ASSIGNMENT_VERSION,
    SUBSCRIPTION_VERSION,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from hypothesis import example, given
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from kafka.protocol.consumer.group import JoinGroupResponse

KpSub = ConsumerProtocolSubscription
KpAssign = ConsumerProtocolAssignment


def test_the_docstring_examples_hold() -> None:
    failures, tried = doctest.testmod(_protocol)
    assert tried >= 6 and failures == 0


def test_the_newest_versions_are_kafkas() -> None:
    assert SUBSCRIPTION_VERSION == 3 and ASSIGNMENT_VERSION == 3


def kp_subscription(version: int, **fields: Any) -> bytes:
    owned = [KpSub.TopicPartition(topic=t, partitions=ps) for t, ps in fields.pop("owned", [])]
    return bytes(KpSub(version=version, owned_partitions=owned, **fields).encode())


# --- what kafka-python's consumer sends, we read --------------------------------------------


@pytest.mark.parametrize("assignor", [RangePartitionAssignor, RoundRobinPartitionAssignor])
def test_kafka_python_eager_assignors_metadata_v0_decodes(assignor: Any) -> None:
    sent = assignor.metadata({"orders", "payments"}).encode()  # what group_protocols() sends
    assert sent[:2] == b"\x00\x00"
    assert decode_subscription("m1", "i1", sent) == Subscription(
        member_id="m1", topics=frozenset({"orders", "payments"}), group_instance_id="i1"
    )


def test_kafka_python_sticky_assignor_user_data_passes_through() -> None:
    assignor = StickyPartitionAssignor()
    wire = KpAssign.TopicPartition
    assignor.on_assignment(
        KpAssign(
            version=0, assigned_partitions=[wire(topic="t0", partitions=[1, 0], version=0)], user_data=b""
        ),
        4,
    )
    sent = assignor.metadata({"t0"}).encode()
    decoded = decode_subscription("m1", None, sent)
    assert decoded.user_data and decoded.user_data == bytes(KpSub.decode(sent).user_data)
    assert decoded.owned == () and decoded.generation == -1  # v0: owned only inside the user data


def test_kafka_python_cooperative_sticky_metadata_v1_decodes() -> None:
    assignor = CooperativeStickyAssignor()
    wire = KpAssign.TopicPartition
    assignor.on_assignment(
        KpAssign(
            version=1,
            assigned_partitions=[
                wire(topic="t1", partitions=[2], version=1),
                wire(topic="t0", partitions=[3, 1], version=1),
            ],
            user_data=b"",
        ),
        9,
    )
    sent = assignor.metadata({"t0", "t1"}).encode()
    assert sent[:2] == b"\x00\x01"
    decoded = decode_subscription("m1", None, sent)
    assert decoded.topics == {"t0", "t1"}
    assert decoded.owned == (TopicPartition("t0", 1), TopicPartition("t0", 3), TopicPartition("t1", 2))
    assert decoded.generation == -1  # v1 has no generation field


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_kafka_python_writes_decodes(version: int) -> None:
    sent = kp_subscription(
        version,
        topics=["t1", "t0"],
        user_data=b"\x00data",
        owned=[("t1", [0]), ("t0", [2, 1])],
        generation_id=12,
        rack_id="eu-west-1a",
    )
    decoded = decode_subscription("m1", None, sent)
    assert decoded.topics == {"t0", "t1"} and decoded.user_data == b"\x00data"
    owned = (TopicPartition("t0", 1), TopicPartition("t0", 2), TopicPartition("t1", 0))
    assert decoded.owned == (owned if version >= 1 else ())
    assert decoded.generation == (12 if version >= 2 else -1)
    assert decoded.rack == ("eu-west-1a" if version >= 3 else None)


def test_a_null_user_data_decodes_as_empty() -> None:
    sent = kp_subscription(3, topics=["t0"], user_data=None, owned=[], generation_id=-1, rack_id=None)
    assert decode_subscription("m1", None, sent).user_data == b""
    assert decode_assignment(KpAssign(version=0, assigned_partitions=[], user_data=None).encode()) == (
        (),
        b"",
    )


# --- what we write, kafka-python reads --------------------------------------------------------


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_version_we_write_is_what_kafka_python_writes(version: int) -> None:
    ours = encode_subscription(
        ["t1", "t0", "t1"],
        owned=[TopicPartition("t1", 0), TopicPartition("t0", 2), TopicPartition("t0", 1)],
        generation=12,
        rack="eu-west-1a",
        user_data=b"\x00data",
        version=version,
    )
    theirs = kp_subscription(
        version,
        topics=["t0", "t1"],
        user_data=b"\x00data",
        owned=[("t0", [1, 2]), ("t1", [0])],
        generation_id=12,
        rack_id="eu-west-1a",
    )
    assert ours == theirs
    read = KpSub.decode(ours)
    assert read.version == version and read.topics == ["t0", "t1"] and read.user_data == b"\x00data"
    if version >= 1:
        assert [(tp.topic, tp.partitions) for tp in read.owned_partitions] == [("t0", [1, 2]), ("t1", [0])]
    assert read.generation_id == (12 if version >= 2 else -1)
    assert read.rack_id == ("eu-west-1a" if version >= 3 else None)


def test_the_default_version_is_the_newest() -> None:
    assert encode_subscription(["t0"])[:2] == b"\x00\x03"
    assert encode_assignment([])[:2] == b"\x00\x03"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignments_interoperate_both_ways(version: int) -> None:
    partitions = [TopicPartition("t1", 0), TopicPartition("t0", 2), TopicPartition("t0", 1)]
    ours = encode_assignment(partitions, b"ud", version=version)
    read = KpAssign.decode(ours)
    assert read.version == version and read.user_data == b"ud"
    assert sorted(read.partitions()) == [("t0", 1), ("t0", 2), ("t1", 0)]

    wire = KpAssign.TopicPartition
    theirs = KpAssign(
        version=version,
        assigned_partitions=[
            wire(topic="t1", partitions=[0], version=version),
            wire(topic="t0", partitions=[2, 1], version=version),
        ],
        user_data=b"ud",
    ).encode()
    assert decode_assignment(theirs) == (tuple(sorted(partitions)), b"ud")


class PartitionCounts:
    """The one ClusterMetadata method kafka-python's assignors call."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.counts[topic])) if topic in self.counts else None


@pytest.mark.parametrize("assignor", [RangePartitionAssignor, RoundRobinPartitionAssignor])
def test_what_kafka_pythons_leader_sends_decodes(assignor: Any) -> None:
    members = [
        JoinGroupResponse.JoinGroupResponseMember(
            member_id=m, group_instance_id=None, metadata=assignor.metadata({"t0", "t1"})
        )
        for m in ("a", "b")
    ]
    # SyncGroup carries each ConsumerProtocolAssignment as its .encode() (kafka-python's bytes fields)
    sent = {m: a.encode() for m, a in assignor.assign(PartitionCounts({"t0": 3, "t1": 2}), members).items()}
    received = {m: decode_assignment(data) for m, data in sent.items()}
    everything = sorted(tp for partitions, _ in received.values() for tp in partitions)
    assert everything == [TopicPartition(t, p) for t, n in (("t0", 3), ("t1", 2)) for p in range(n)]
    assert all(user_data == b"" for _, user_data in received.values())
    assert received["a"][0] == tuple(
        sorted(TopicPartition(t, p) for t, p in KpAssign.decode(sent["a"]).partitions())
    )


# --- compatibility rules ----------------------------------------------------------------------


@pytest.mark.parametrize("newer", [4, 5, 100, 32767])
def test_a_newer_subscription_version_decodes_reading_the_fields_we_know(newer: int) -> None:
    v3 = encode_subscription(["t0"], owned=[TopicPartition("t0", 0)], generation=3, rack="r", user_data=b"u")
    future = struct.pack(">h", newer) + v3[2:] + b"\x00\x00\x00\x07a future field"
    decoded = decode_subscription("m1", None, future)
    assert decoded == decode_subscription("m1", None, v3)
    assert decoded.rack == "r" and decoded.generation == 3


@pytest.mark.parametrize("newer", [4, 32767])
def test_a_newer_assignment_version_decodes_reading_the_fields_we_know(newer: int) -> None:
    v3 = encode_assignment([TopicPartition("t0", 0)], b"u")
    assert decode_assignment(struct.pack(">h", newer) + v3[2:] + b"\xff\xff") == decode_assignment(v3)


def test_trailing_bytes_are_ignored_as_kafka_ignores_them() -> None:
    v1 = encode_subscription(["t0"], owned=[TopicPartition("t0", 0)], version=1)
    assert decode_subscription("m", None, v1 + b"\x00\x00\x00\x05") == decode_subscription("m", None, v1)


def test_an_older_version_leaves_out_what_it_cannot_carry() -> None:
    fields: dict[str, Any] = {"owned": [TopicPartition("t0", 0)], "generation": 5, "rack": "r"}
    got = [decode_subscription("m", None, encode_subscription(["t0"], **fields, version=v)) for v in range(4)]
    assert [(s.owned != (), s.generation, s.rack) for s in got] == [
        (False, -1, None),
        (True, -1, None),
        (True, 5, None),
        (True, 5, "r"),
    ]


@pytest.mark.parametrize("version", [-1, 4, 32768])
def test_writing_an_unknown_version_is_refused(version: int) -> None:
    with pytest.raises(ConsumerProtocolError, match=f"version {version}"):
        encode_subscription(["t0"], version=version)
    with pytest.raises(ConsumerProtocolError, match=f"version {version}"):
        encode_assignment([], version=version)


@pytest.mark.parametrize(
    "call",
    [
        lambda: encode_subscription(["t0"], generation=2**31),
        lambda: encode_subscription(["t0"], owned=[TopicPartition("t0", 2**31)]),
        lambda: encode_subscription(["x" * 40_000]),
        lambda: encode_assignment([TopicPartition("t0", -(2**31) - 1)]),
    ],
)
def test_values_that_do_not_fit_the_wire_are_refused(call: Any) -> None:
    with pytest.raises(ConsumerProtocolError, match="does not fit"):
        call()


# --- round trips ------------------------------------------------------------------------------

names = st.text(min_size=0, max_size=12)  # any Unicode; the wire carries UTF-8
int32 = st.integers(-(2**31), 2**31 - 1)
partitions_st = st.lists(st.builds(TopicPartition, names, int32), max_size=8)


@given(
    topics=st.lists(names, max_size=6),
    owned=partitions_st,
    generation=int32,
    rack=st.none() | names,
    user_data=st.binary(max_size=40),
    version=st.integers(0, 3),
    instance=st.none() | names,
)
def test_subscriptions_round_trip(
    topics: list[str],
    owned: list[TopicPartition],
    generation: int,
    rack: str | None,
    user_data: bytes,
    version: int,
    instance: str | None,
) -> None:
    payload = encode_subscription(
        topics, owned=owned, generation=generation, rack=rack, user_data=user_data, version=version
    )
    assert payload[:2] == struct.pack(">h", version)
    assert decode_subscription("member", instance, payload) == Subscription(
        member_id="member",
        topics=frozenset(topics),
        owned=tuple(sorted(set(owned))) if version >= 1 else (),
        generation=generation if version >= 2 else -1,
        rack=rack if version >= 3 else None,
        group_instance_id=instance,
        user_data=user_data,
    )
    # kafka-python reads the same thing
    read = KpSub.decode(payload)
    assert set(read.topics) == set(topics) and bytes(read.user_data) == user_data


@given(partitions=partitions_st, user_data=st.binary(max_size=40), version=st.integers(0, 3))
def test_assignments_round_trip(partitions: list[TopicPartition], user_data: bytes, version: int) -> None:
    payload = encode_assignment(partitions, user_data, version=version)
    assert decode_assignment(payload) == (tuple(sorted(set(partitions))), user_data)
    assert sorted(set(KpAssign.decode(payload).partitions())) == sorted(
        (p.topic, p.partition) for p in set(partitions)
    )


# --- garbage ----------------------------------------------------------------------------------


def decodes_or_refuses(data: bytes) -> None:
    for decode in (lambda: decode_subscription("m", None, data), lambda: decode_assignment(data)):
        with contextlib.suppress(ConsumerProtocolError):
            decode()


@given(data=st.binary(max_size=200))
@example(data=b"")
@example(data=b"\x00")
@example(data=b"\xff\xff\x00\x00\x00\x00")  # version -1
@example(data=b"\x00\x00\x7f\xff\xff\xff")  # 2**31 - 1 topics announced, none there
@example(data=b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe\x00\x00\x00\x00")  # a topic name that is not UTF-8
def test_garbage_raises_consumer_protocol_error_and_nothing_else(data: bytes) -> None:
    decodes_or_refuses(data)


@given(
    payload=st.sampled_from(
        [
            encode_subscription(
                ["t0", "t1"], owned=[TopicPartition("t0", 0)], generation=2, rack="r", user_data=b"ud"
            ),
            encode_subscription(["t0"], owned=[TopicPartition("t0", 1)], version=1),
            encode_assignment([TopicPartition("t0", 0), TopicPartition("t1", 5)], b"ud"),
        ]
    ),
    data=st.data(),
)
def test_corrupted_payloads_raise_consumer_protocol_error_and_nothing_else(
    payload: bytes, data: st.DataObject
) -> None:
    flips = data.draw(
        st.lists(st.tuples(st.integers(0, len(payload) - 1), st.integers(0, 255)), min_size=1, max_size=4)
    )
    corrupted = bytearray(payload)
    for index, value in flips:
        corrupted[index] = value
    decodes_or_refuses(bytes(corrupted))


def test_every_truncation_of_a_payload_is_refused() -> None:
    subscription = encode_subscription(
        ["t0"], owned=[TopicPartition("t0", 0)], generation=2, rack="r", user_data=b"u"
    )
    assignment = encode_assignment([TopicPartition("t0", 0)], b"u")
    for end in range(len(subscription)):
        with pytest.raises(ConsumerProtocolError, match="member 'm' sent a JoinGroup metadata that is not a"):
            decode_subscription("m", None, subscription[:end])
    for end in range(len(assignment)):
        with pytest.raises(
            ConsumerProtocolError, match="SyncGroup assignment that is not a consumer-protocol"
        ):
            decode_assignment(assignment[:end])


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x00" + b"\xff\xff\xff\xff" + b"\xff\xff\xff\xff",  # null topics array
        b"\x00\x00" + b"\x00\x00\x00\x01\xff\xff" + b"\xff\xff\xff\xff",  # a null topic name
        b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
        + b"\x00\x00\x00\x01\x00\x01a\xff\xff\xff\xff",  # null partitions
        b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
        + b"\x00\x00\x00\x01\xff\xff\x00\x00\x00\x00",  # null owned topic
    ],
)
def test_nulls_where_kafka_allows_none_are_refused(data: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription("m", None, data)


def test_a_null_assignment_array_is_refused() -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(b"\x00\x00\xff\xff\xff\xff\xff\xff\xff\xff")


def test_what_is_not_bytes_is_refused() -> None:
    with pytest.raises(ConsumerProtocolError, match="not bytes but str"):
        decode_subscription("m", None, "\x00\x00")  # type: ignore[arg-type]
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(None)  # type: ignore[arg-type]
    assert decode_assignment(bytearray(encode_assignment([], b"x"))) == ((), b"x")  # type: ignore[arg-type]
