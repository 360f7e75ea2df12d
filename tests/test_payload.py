"""The payload codec: round trips, deterministic bytes, forward compatibility both ways, strict
rejection of bad classes and bad bytes (PayloadError only), and decode_members."""

from __future__ import annotations

import dataclasses
import doctest
import enum
import re
import subprocess
import sys
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from coordinator_api import JoinedMember, PayloadError
from coordinator_api import _payload as payload_module
from coordinator_api._payload import MAGIC, decode, decode_members, encode, payload, peek_version, since

ROOT = Path(__file__).resolve().parent.parent

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.text(max_size=20)
BYTES = st.binary(max_size=20)
FLOATS = st.floats(allow_nan=False)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class Priority(enum.IntEnum):
    LOW = -3
    NORMAL = 0
    HIGH = 1000


class Perm(enum.IntFlag):
    READ = 1
    WRITE = 2


@payload(version=1)
@dataclass(frozen=True)
class Point:
    x: int
    y: int


@payload(version=1)
@dataclass(frozen=True)
class Everything:
    i: int
    f: float
    b: bool
    s: str
    raw: bytes
    maybe: int | None
    maybe_text: Optional[str]  # noqa: UP045 - the typing spelling must work too
    ints: list[int]
    names: tuple[str, ...]
    pair: tuple[int, str]
    weights: dict[str, float]
    by_id: dict[int, list[str]]
    tags: frozenset[str]
    color: Color
    priority: Priority
    point: Point
    points: list[Point]
    maybe_point: Point | None
    nested_lists: list[list[bytes]]
    color_by_name: dict[str, Color]
    perm: Perm


POINTS = st.builds(Point, INT64, INT64)

EVERYTHING = st.builds(
    Everything,
    i=INT64,
    f=FLOATS,
    b=st.booleans(),
    s=TEXT,
    raw=BYTES,
    maybe=st.none() | INT64,
    maybe_text=st.none() | TEXT,
    ints=st.lists(INT64, max_size=5),
    names=st.lists(TEXT, max_size=5).map(tuple),
    pair=st.tuples(INT64, TEXT),
    weights=st.dictionaries(TEXT, FLOATS, max_size=5),
    by_id=st.dictionaries(INT64, st.lists(TEXT, max_size=3), max_size=5),
    tags=st.frozensets(TEXT, max_size=5),
    color=st.sampled_from(Color),
    priority=st.sampled_from(Priority),
    point=POINTS,
    points=st.lists(POINTS, max_size=4),
    maybe_point=st.none() | POINTS,
    nested_lists=st.lists(st.lists(BYTES, max_size=3), max_size=3),
    color_by_name=st.dictionaries(TEXT, st.sampled_from(Color), max_size=4),
    perm=st.sampled_from([Perm(0), Perm.READ, Perm.WRITE, Perm.READ | Perm.WRITE]),
)


def _single_field_class(annotation: Any) -> type[Any]:
    cls = dataclasses.make_dataclass("Single", [("value", annotation)], frozen=True)
    return payload(version=1)(cls)


# Each supported type on its own, so a broken codec fails its own test case.
TYPE_CASES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (int, INT64),
    (float, FLOATS),
    (bool, st.booleans()),
    (str, st.text()),
    (bytes, st.binary()),
    (int | None, st.none() | INT64),
    (typing.Optional[str], st.none() | TEXT),  # noqa: UP045
    (list[int], st.lists(INT64)),
    (tuple[str, ...], st.lists(TEXT).map(tuple)),
    (tuple[int, str, bool], st.tuples(INT64, TEXT, st.booleans())),
    (dict[str, int], st.dictionaries(TEXT, INT64)),
    (dict[int, bytes], st.dictionaries(INT64, BYTES)),
    (dict[Color, float], st.dictionaries(st.sampled_from(Color), FLOATS)),
    (frozenset[int], st.frozensets(INT64)),
    (frozenset[tuple[str, int]], st.frozensets(st.tuples(TEXT, INT64))),
    (Color, st.sampled_from(Color)),
    (Priority, st.sampled_from(Priority)),
    (Point, POINTS),
    (list[Point | None], st.lists(st.none() | POINTS)),
    (dict[str, list[Point]], st.dictionaries(TEXT, st.lists(POINTS, max_size=3), max_size=4)),
]


# --- round trips and determinism ----------------------------------------------------------------


@pytest.mark.parametrize(("annotation", "values"), TYPE_CASES, ids=str)
def test_every_supported_type_round_trips(annotation: Any, values: st.SearchStrategy[Any]) -> None:
    cls = _single_field_class(annotation)

    @given(values)
    @settings(max_examples=60)
    def check(value: Any) -> None:
        obj = cls(value)
        data = encode(obj)
        back = decode(cls, data)
        assert back == obj
        assert type(back.value) is type(value)
        assert encode(back) == data

    check()


@given(EVERYTHING)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_everything_round_trips_and_reencodes_to_the_same_bytes(obj: Everything) -> None:
    data = encode(obj)
    back = decode(Everything, data)
    assert back == obj
    assert encode(back) == data
    assert data[:2] == MAGIC
    assert peek_version(data) == 1


@given(st.floats(allow_nan=True, allow_infinity=True))
@example(float("nan"))
@example(-0.0)
def test_floats_keep_their_exact_bits(value: float) -> None:
    cls = _single_field_class(float)
    data = encode(cls(value))
    back = decode(cls, data).value
    assert repr(back) == repr(value)  # -0.0 stays -0.0, nan stays nan
    assert encode(cls(back)) == data


def test_int_edges_and_bounds() -> None:
    cls = _single_field_class(int)
    for value in (0, -1, 1, 63, -64, 64, 2**63 - 1, -(2**63)):
        assert decode(cls, encode(cls(value))).value == value
    # Zigzag keeps small numbers, negative ones too, in one byte.
    assert encode(cls(-64)) == encode(cls(63))[:-1] + b"\x7f"
    for value in (2**63, -(2**63) - 1):
        with pytest.raises(PayloadError, match="64-bit"):
            encode(cls(value))


@given(st.dictionaries(TEXT, INT64, min_size=2), st.randoms(use_true_random=False))
def test_equal_dicts_and_sets_give_equal_bytes_whatever_the_order(mapping: dict[str, int], rng: Any) -> None:
    items = list(mapping.items())
    rng.shuffle(items)
    shuffled = dict(items)
    cls = _single_field_class(dict[str, int])
    assert encode(cls(mapping)) == encode(cls(shuffled))
    set_cls = _single_field_class(frozenset[str])
    keys = [k for k, _ in items]
    assert encode(set_cls(frozenset(mapping))) == encode(set_cls(frozenset(reversed(keys))))


def test_encode_is_deterministic_across_calls_and_equal_instances() -> None:
    a = Point(3, -4)
    b = Point(3, -4)
    assert encode(a) == encode(a) == encode(b)


def test_golden_bytes_pin_the_wire_format() -> None:
    # Members of different releases must agree byte for byte; a change here breaks upgrades.
    assert encode(Point(3, -4)).hex(" ") == "ca 01 00 01 02 01 06 01 07"
    assert encode(SubscriptionV2(("a",), 2, "r1", {"t": [0]})).hex(" ") == (
        # magic, version 2, 4 fields: topics, weight, rack, owned
        "ca 01 00 02 04 03 01 01 61 01 04 04 01 02 72 31 05 01 01 74 01 00"
    )


# --- forward compatibility ----------------------------------------------------------------------


@payload(version=1)
@dataclass(frozen=True)
class SubscriptionV1:
    topics: tuple[str, ...]
    weight: int = 1


@payload(version=2)
@dataclass(frozen=True)
class SubscriptionV2:
    topics: tuple[str, ...]
    weight: int = 1
    rack: str | None = field(default=None, metadata=since(2))
    owned: dict[str, list[int]] = field(default_factory=dict, metadata=since(2))


@payload(version=3)
@dataclass(frozen=True)
class SubscriptionV3:
    topics: tuple[str, ...]
    weight: int = 1
    rack: str | None = field(default=None, metadata=since(2))
    owned: dict[str, list[int]] = field(default_factory=dict, metadata=since(2))
    score: float = field(default=0.5, metadata=since(3))


V1_VALUES = st.builds(SubscriptionV1, st.lists(TEXT, max_size=4).map(tuple), INT64)
V2_VALUES = st.builds(
    SubscriptionV2,
    st.lists(TEXT, max_size=4).map(tuple),
    INT64,
    st.none() | TEXT,
    st.dictionaries(TEXT, st.lists(INT64, max_size=3), max_size=3),
)


@given(V2_VALUES)
def test_older_reader_reads_newer_bytes_ignoring_appended_fields(v2: SubscriptionV2) -> None:
    assert decode(SubscriptionV1, encode(v2)) == SubscriptionV1(v2.topics, v2.weight)


@given(V1_VALUES)
def test_newer_reader_reads_older_bytes_with_defaults(v1: SubscriptionV1) -> None:
    assert decode(SubscriptionV2, encode(v1)) == SubscriptionV2(v1.topics, v1.weight)
    assert decode(SubscriptionV3, encode(v1)) == SubscriptionV3(v1.topics, v1.weight)


def test_versions_skip_both_ways_across_more_than_one_step() -> None:
    v3 = SubscriptionV3(("a", "b"), 5, "eu", {"a": [1, 2]}, 0.25)
    assert decode(SubscriptionV1, encode(v3)) == SubscriptionV1(("a", "b"), 5)
    assert decode(SubscriptionV2, encode(v3)) == SubscriptionV2(("a", "b"), 5, "eu", {"a": [1, 2]})
    v2 = SubscriptionV2(("a",), 1, "eu")
    assert decode(SubscriptionV3, encode(v2)) == SubscriptionV3(("a",), 1, "eu", {}, 0.5)
    assert peek_version(encode(v3)) == 3


@payload(version=1)
@dataclass(frozen=True)
class TaskV1:
    name: str


@payload(version=2)
@dataclass(frozen=True)
class TaskV2:
    name: str
    warmup: bool = field(default=False, metadata=since(2))


@payload(version=1)
@dataclass(frozen=True)
class PlanV1:
    tasks: list[TaskV1]
    owner: TaskV1 | None = None


@payload(version=1)
@dataclass(frozen=True)
class PlanV2:
    tasks: list[TaskV2]
    owner: TaskV2 | None = None


def test_nested_payloads_grow_by_appending_fields_too() -> None:
    new = PlanV2([TaskV2("a", warmup=True), TaskV2("b")], TaskV2("c", True))
    assert decode(PlanV1, encode(new)) == PlanV1([TaskV1("a"), TaskV1("b")], TaskV1("c"))
    old = PlanV1([TaskV1("a")], None)
    assert decode(PlanV2, encode(old)) == PlanV2([TaskV2("a", warmup=False)], None)


def test_bytes_that_disagree_with_the_schema_are_rejected() -> None:
    # Version 1 bytes with three fields: the writer appended a field without bumping the version.
    drift = MAGIC + b"\x00\x01" + b"\x03" + b"\x02\x01\x61" + b"\x01\x02" + b"\x01\x00"
    with pytest.raises(PayloadError, match="version 1 of SubscriptionV2 has 2 fields but the bytes carry 3"):
        decode(SubscriptionV2, drift)
    # Version 3 bytes that lack fields this version 2 reader knows.
    short = MAGIC + b"\x00\x03" + b"\x01" + b"\x02\x01\x61"
    with pytest.raises(PayloadError, match="newer than this reader's 2"):
        decode(SubscriptionV2, short)
    # A nested payload missing a field without a default.
    missing = MAGIC + b"\x00\x01" + b"\x02" + b"\x02\x01\x00" + b"\x01\x00"
    with pytest.raises(
        PayloadError, match="at tasks\\[0\\]: TaskV1 has only 0 fields; field 'name' has no default"
    ):
        decode(PlanV1, missing)


# --- mixed versions during a rolling upgrade ----------------------------------------------------


def test_mixed_version_group_rebalances_with_a_leader_of_either_version() -> None:
    members = [
        JoinedMember("old-1", None, encode(SubscriptionV1(("t",), 1))),
        JoinedMember("new-1", "host-b", encode(SubscriptionV2(("t",), 2, rack="b"))),
    ]
    old_view, old_bad = decode_members(SubscriptionV1, members)
    new_view, new_bad = decode_members(SubscriptionV2, members)
    assert old_bad == {} and new_bad == {}
    assert old_view == {"old-1": SubscriptionV1(("t",), 1), "new-1": SubscriptionV1(("t",), 2)}
    assert new_view["old-1"] == SubscriptionV2(("t",), 1, rack=None)
    assert new_view["new-1"].rack == "b"
    assert [peek_version(m.metadata) for m in members] == [1, 2]


# --- decode_members -----------------------------------------------------------------------------


def test_decode_members_separates_good_and_bad_metadata() -> None:
    good = encode(SubscriptionV1(("a",), 3))
    members = [
        JoinedMember("m1", None, good),
        JoinedMember("m2", None, b""),
        JoinedMember("m3", "static-3", b"\x00\x01\x00\x00\x00\x01\x00\x01a"),  # Kafka consumer v1
        JoinedMember("m4", None, good[:-1]),
        JoinedMember("m5", None, encode(Point(1, 2))),  # another class: its fields are not a str
        JoinedMember("m6", None, good),
    ]
    decoded, failed = decode_members(SubscriptionV1, members)
    assert list(decoded) == ["m1", "m6"]
    assert decoded["m1"] == SubscriptionV1(("a",), 3)
    assert list(failed) == ["m2", "m3", "m4", "m5"]
    assert all(type(error) is PayloadError for error in failed.values())
    assert str(failed["m3"]).startswith("member m3 (instance static-3): cannot decode SubscriptionV1")
    assert "not a coordinator_api payload" in str(failed["m3"])
    assert isinstance(failed["m4"].__cause__, PayloadError)


def test_decode_members_of_a_non_payload_class_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="not a payload class"):
        decode_members(JoinedMember, [])


# --- bad bytes: PayloadError and nothing else ---------------------------------------------------

SAMPLE = Everything(
    i=-5,
    f=1.5,
    b=True,
    s="héllo",
    raw=b"\x00\xff",
    maybe=None,
    maybe_text="x",
    ints=[1, -2, 300],
    names=("a", "bb"),
    pair=(7, "seven"),
    weights={"w": 0.5, "v": -1.0},
    by_id={2: ["x"], -1: []},
    tags=frozenset({"p", "q"}),
    color=Color.GREEN,
    priority=Priority.HIGH,
    point=Point(1, 2),
    points=[Point(3, 4), Point(-5, 6)],
    maybe_point=Point(0, 0),
    nested_lists=[[b"a"], []],
    color_by_name={"c": Color.BLUE},
    perm=Perm.READ | Perm.WRITE,
)
SAMPLE_BYTES = encode(SAMPLE)


def _decode_or_payload_error(cls: type[Any], data: bytes) -> object | None:
    """Decode; a PayloadError is fine, but it must come from an explicit check, not the net."""
    try:
        decoded: object = decode(cls, data)
    except PayloadError as error:
        message = str(error)
    else:
        return decoded
    assert "bug in coordinator_api" not in message
    return None


def test_every_truncation_is_rejected() -> None:
    for cut in range(len(SAMPLE_BYTES)):
        with pytest.raises(PayloadError, match="Everything"):
            decode(Everything, SAMPLE_BYTES[:cut])


def test_trailing_bytes_are_rejected() -> None:
    with pytest.raises(PayloadError, match="trailing bytes"):
        decode(Everything, SAMPLE_BYTES + b"\x00")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "truncated: the header"),
        (b"\xca", "truncated: the header"),
        (b"\x00\x00\x00\x01", "not a coordinator_api payload: starts with 0000"),
        (b"{}", "not a coordinator_api payload"),
        (MAGIC + b"\x00\x00\x00", "version 0 is invalid"),
        (MAGIC + b"\x00\x01", "expected a varint"),
        (MAGIC + b"\x00\x01\x02\x01\x80\x01\x00", "at x: truncated in the middle of a varint"),
        (MAGIC + b"\x00\x01\x02\x02\x80\x00\x01\x00", "at x: non-canonical varint"),
        (MAGIC + b"\x00\x01\x02\x0b" + b"\xff" * 10 + b"\x01\x00", "at x: varint longer than 10 bytes"),
        (MAGIC + b"\x00\x01\x02\x02\x01\x01\x00", "at x: 1 unexpected bytes after the value"),
        (MAGIC + b"\x00\x01\x02\x05\x01", "at x: truncated: the field needs 5 bytes"),
        (MAGIC + b"\x00\x01\x7f", "field count 127 exceeds"),
    ],
)
def test_malformed_bytes_raise_a_clear_payload_error(data: bytes, message: str) -> None:
    with pytest.raises(PayloadError, match=re.escape(message)):
        decode(Point, data)


@pytest.mark.parametrize(
    ("annotation", "body", "message"),
    [
        (bool, b"\x02", "a bool must be 0 or 1, found 2"),
        (str, b"\x02\xff\xfe", "invalid UTF-8"),
        (int | None, b"\x05\x00", "tag must be 0 or 1, found 5"),
        (Color, b"\x06purple", "'purple' is not a value of Color"),
        (Priority, b"\x04", "2 is not a value of Priority"),
        (dict[str, int], b"\x02\x01b\x00\x01a\x00", "dict keys out of order or repeated"),
        (dict[str, int], b"\x02\x01a\x00\x01a\x00", "dict keys out of order or repeated"),
        (frozenset[int], b"\x02\x02\x02", "frozenset elements out of order or repeated"),
        (list[int], b"\x09\x00", "item count 9 exceeds"),
        (float, b"\x00\x00\x00", "a float needs 8 bytes"),
        (tuple[int, int], b"\x00", "at value[1]: truncated"),
        (list[list[str]], b"\x01\x01\x05", "at value[0][0]: truncated: a str needs 5 bytes"),
    ],
)
def test_invalid_values_raise_a_payload_error_naming_the_field(
    annotation: Any, body: bytes, message: str
) -> None:
    cls = _single_field_class(annotation)
    data = MAGIC + b"\x00\x01\x01" + bytes([len(body)]) + body
    with pytest.raises(PayloadError, match=re.escape(message)):
        decode(cls, data)


@given(st.binary(max_size=200))
@settings(max_examples=500)
def test_random_bytes_raise_payload_error_only(data: bytes) -> None:
    _decode_or_payload_error(Everything, data)
    _decode_or_payload_error(SubscriptionV2, data)


@given(st.binary(max_size=200))
@settings(max_examples=500)
def test_random_bytes_behind_a_valid_header_raise_payload_error_only(tail: bytes) -> None:
    for version in (b"\x00\x01", b"\x00\x02", b"\x00\x09"):
        _decode_or_payload_error(Everything, MAGIC + version + tail)
        _decode_or_payload_error(SubscriptionV2, MAGIC + version + tail)
        _decode_or_payload_error(PlanV2, MAGIC + version + tail)


@given(st.data())
@settings(max_examples=500)
def test_corrupted_valid_bytes_decode_canonically_or_raise_payload_error(data: st.DataObject) -> None:
    corrupted = bytearray(SAMPLE_BYTES)
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(corrupted) - 1))
        corrupted[index] = data.draw(st.integers(0, 255))
    decoded = _decode_or_payload_error(Everything, bytes(corrupted))
    if decoded is not None:
        reencoded = encode(decoded)
        if peek_version(bytes(corrupted)) == 1:
            # Strict decoding: whatever decodes is exactly the encoding of what it decoded to.
            assert reencoded == bytes(corrupted)
        else:
            # A "newer writer" after corrupting the version: decodes as the reader's version.
            assert encode(decode(Everything, reencoded)) == reencoded


def test_a_class_check_rejecting_decoded_values_is_a_payload_error() -> None:
    @payload(version=1)
    @dataclass(frozen=True)
    class Positive:
        n: int

        def __post_init__(self) -> None:
            if self.n <= 0:
                raise ValueError("n must be positive")

    data = encode(_single_field_class(int)(-1))
    with pytest.raises(PayloadError, match="rejected the decoded values") as info:
        decode(Positive, data)
    assert isinstance(info.value.__cause__, ValueError)


def test_decode_accepts_bytearray_and_memoryview_and_rejects_other_types() -> None:
    data = encode(Point(1, 2))
    assert decode(Point, bytearray(data)) == decode(Point, memoryview(data)) == Point(1, 2)
    with pytest.raises(TypeError, match="must be bytes"):
        decode(Point, "ca01")  # type: ignore[arg-type]


# --- encode errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (Point("3", 4), "cannot encode Point: at x: expected int, got str '3'"),  # type: ignore[arg-type]
        (Point(True, 4), "at x: expected int, got bool"),
        (PlanV1([TaskV1("a"), TaskV1(5)]), "at tasks[1].name: expected str, got int 5"),  # type: ignore[arg-type]
        (PlanV1([TaskV1("a"), Point(1, 2)]), "at tasks[1]: expected TaskV1, got Point"),  # type: ignore[list-item]
        (SubscriptionV1("abc"), "at topics: expected tuple[str, ...], got str"),  # type: ignore[arg-type]
        (SubscriptionV1(["a"]), "at topics: expected tuple[str, ...], got list"),  # type: ignore[arg-type]
        (SubscriptionV2(("a",), owned={"t": [1, "x"]}), "at owned['t'][1]: expected int"),  # type: ignore[list-item]
        (SubscriptionV2(("a",), owned={1: [1]}), "at owned[1]: expected str, got int 1"),  # type: ignore[dict-item]
        (SubscriptionV2(("\ud800",)), "at topics[0]: str is not encodable as UTF-8"),
    ],
)
def test_encoding_a_wrong_value_raises_a_payload_error_naming_the_field(obj: object, message: str) -> None:
    with pytest.raises(PayloadError, match=re.escape(message)):
        encode(obj)


def test_encode_and_decode_of_a_non_payload_class_raise_type_error() -> None:
    @dataclass(frozen=True)
    class Plain:
        x: int

    class Sub(Point):
        pass

    with pytest.raises(TypeError, match="Plain is not a payload class"):
        encode(Plain(1))
    with pytest.raises(TypeError, match="not a payload class"):
        encode(Sub(1, 2))  # an undecorated subclass does not borrow its parent's schema
    with pytest.raises(TypeError, match="not a payload class"):
        decode(Plain, b"")


# --- class definitions --------------------------------------------------------------------------


def test_a_field_added_later_without_a_default_is_rejected_at_definition() -> None:
    with pytest.raises(TypeError, match=r"B\.extra was added in version 2 and has no default"):

        @payload(version=2)
        @dataclass(frozen=True)
        class B:
            base: int
            extra: int = field(metadata=since(2))


def test_a_kw_only_field_added_later_without_a_default_is_rejected() -> None:
    with pytest.raises(TypeError, match="added in version 3 and has no default"):

        @payload(version=3)
        @dataclass(frozen=True, kw_only=True)
        class K:
            base: int
            extra: int = field(metadata={"since": 3})


def _define(version: int, annotation: Any, *, default: Any = dataclasses.MISSING, since_: int = 1) -> None:
    spec = field(default=default, metadata={"since": since_})
    cls = dataclasses.make_dataclass("Defined", [("value", annotation, spec)], frozen=True)
    payload(version=version)(cls)


@pytest.mark.parametrize(
    ("define", "message"),
    [
        (lambda: _define(1, set[int]), "unsupported payload field type"),
        (lambda: _define(1, int | str), "unsupported union"),
        (lambda: _define(1, object), "unsupported payload field type"),
        (lambda: _define(1, list), "unsupported payload field type"),
        (lambda: _define(1, tuple[()]), "unsupported payload field type"),
        (lambda: _define(1, dict[list[int], int]), "cannot be a payload dict key"),
        (lambda: _define(1, frozenset[float]), "cannot be a payload frozenset element"),
        (lambda: _define(1, dict[Point, int]), "cannot be a payload dict key"),
        (lambda: _define(2, int, default=0, since_=3), "since=3 but Defined is version 2"),
        (lambda: _define(1, int, default=0, since_=0), "since must be an int from 1"),
        (lambda: _define(0, int), "version=...) must be an int from 1 to 65535"),
        (lambda: _define(65536, int), "must be an int from 1 to 65535"),
    ],
)
def test_unsupported_classes_are_rejected_at_definition(define: Any, message: str) -> None:
    with pytest.raises(TypeError, match=re.escape(message)):
        define()


def test_fields_must_be_declared_in_the_order_of_their_since() -> None:
    with pytest.raises(TypeError, match=r"b \(since 2\) comes after c \(since 3\)"):

        @payload(version=3)
        @dataclass(frozen=True)
        class Unordered:
            a: int
            c: int = field(default=0, metadata=since(3))
            b: int = field(default=0, metadata=since(2))


def test_mutable_or_non_dataclass_or_odd_fields_are_rejected() -> None:
    with pytest.raises(TypeError, match="must be a frozen dataclass"):

        @payload(version=1)
        @dataclass
        class Mutable:
            x: int

    with pytest.raises(TypeError, match="decorates a dataclass"):

        @payload(version=1)
        class NotADataclass:
            x: int

    with pytest.raises(TypeError, match="init=False"):

        @payload(version=1)
        @dataclass(frozen=True)
        class Computed:
            x: int = field(default=0, init=False)

    @dataclass(frozen=True)
    class PlainInner:
        x: int

    with pytest.raises(TypeError, match="PlainInner is a dataclass but not a payload"):

        @payload(version=1)
        @dataclass(frozen=True)
        class Outer:
            inner: PlainInner

    class Mixed(enum.Enum):
        A = 1
        B = "b"

    with pytest.raises(TypeError, match="must be all ints or all strs"):

        @payload(version=1)
        @dataclass(frozen=True)
        class UsesMixed:
            m: Mixed


def test_since_is_field_metadata_and_checks_its_version() -> None:
    assert since(3) == {"since": 3}
    assert [f.metadata.get("since", 1) for f in dataclasses.fields(SubscriptionV3)] == [1, 1, 2, 2, 3]
    for bad in (0, 65536, True, "2"):
        with pytest.raises(TypeError, match="since\\(version\\) must be an int from 1 to 65535"):
            since(bad)  # type: ignore[arg-type]


def test_classes_defined_in_a_function_can_nest_each_other() -> None:
    @payload(version=1)
    @dataclass(frozen=True)
    class Inner:
        n: int

    @payload(version=1)
    @dataclass(frozen=True)
    class Outer:
        inner: Inner
        many: list[Inner]

    obj = Outer(Inner(1), [Inner(2)])
    assert decode(Outer, encode(obj)) == obj


def test_the_schema_is_computed_once_not_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_reflection(*args: object, **kwargs: object) -> typing.NoReturn:
        raise AssertionError("reflection on the encode/decode path")

    monkeypatch.setattr(typing, "get_type_hints", no_reflection)
    monkeypatch.setattr(dataclasses, "fields", no_reflection)
    assert decode(Everything, encode(SAMPLE)) == SAMPLE


# --- docs ---------------------------------------------------------------------------------------


def test_the_module_docstring_examples_run() -> None:
    failures, attempted = doctest.testmod(payload_module, verbose=False)
    assert attempted > 10
    assert failures == 0


def test_the_guide_examples_run(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "payloads.md").read_text()
    blocks = re.findall(r"```python\n(.+?)\n```", text, flags=re.DOTALL)
    assert len(blocks) >= 3
    script = tmp_path / "payloads_guide.py"
    script.write_text("\n\n".join(blocks))
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
