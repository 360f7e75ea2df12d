"""Versioned, forward-compatible payloads: frozen dataclasses <-> the bytes group members exchange.

Group members exchange opaque bytes: each member's metadata (sent in JoinGroup and handed to the
leader) and each member's assignment (computed by the leader and returned by SyncGroup). This
module turns frozen dataclasses into those bytes and back, following ARCHITECTURE rule 6: a
payload carries a version, newer writers only append fields, older readers ignore what they do
not know, so members of mixed versions keep rebalancing during a rolling upgrade.

>>> from dataclasses import dataclass, field
>>> @payload(version=2)
... @dataclass(frozen=True)
... class Subscription:
...     topics: tuple[str, ...]
...     rack: str | None = field(default=None, metadata=since(2))
>>> data = encode(Subscription(("orders", "events"), rack="eu-1a"))
>>> data.hex(" ")
'ca 01 00 02 02 0f 02 06 6f 72 64 65 72 73 06 65 76 65 6e 74 73 07 01 05 65 75 2d 31 61'
>>> decode(Subscription, data)
Subscription(topics=('orders', 'events'), rack='eu-1a')

Wire format
-----------
A top-level payload is ``MAGIC`` (``ca 01``), the writer's schema version as a big-endian
uint16, then the *fields*: a varint field count followed by each field in declaration order as
a varint byte length and the value's bytes. The length is what lets an older reader skip the
trailing fields a newer writer appended; the count is what tells a newer reader that an older
writer stopped early (its missing trailing fields take their defaults) and what tells any reader
that bytes were cut off at a field boundary.

Values inside a field:

* ``int``: zigzag varint (signed 64-bit range), ``bool``: one byte 0 or 1,
  ``float``: 8 bytes IEEE 754 big-endian.
* ``str``: varint length + UTF-8, ``bytes``: varint length + the bytes.
* ``X | None``: one byte 0 (None) or 1 followed by X.
* ``list[X]``, ``tuple[X, ...]``: varint count + items; ``tuple[X, Y]``: the items in order.
* ``dict[K, V]``, ``frozenset[K]``: varint count + entries sorted by their encoded key bytes,
  so equal values give equal bytes whatever the insertion order.
* ``enum.Enum``: its value (all values of one enum are ints, or all are strs).
* a nested ``@payload`` class: its fields as above (count + length-delimited fields, no magic
  and no version), so nested payloads grow by appending fields just like top-level ones.

Decoding is strict (canonical varints, booleans and option tags 0 or 1, sorted unique keys, no
trailing bytes), so any bytes that decode are the one encoding of their value.

``docs/payloads.md`` is the guide for plugin authors, with a rolling-upgrade example.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
import sys
import types
import typing
from collections.abc import Callable, Iterable
from operator import attrgetter, itemgetter
from typing import Any, Final, NamedTuple, TypeVar, cast

from coordinator_api._errors import PayloadError
from coordinator_api._types import JoinedMember

__all__ = ["MAGIC", "decode", "decode_members", "encode", "payload", "peek_version", "since"]

MAGIC: Final = b"\xca\x01"
"""The first two bytes of every top-level payload. As a Kafka int16 version it reads negative,
so bytes of Kafka's own consumer protocol can never be mistaken for a payload (or the reverse)."""

MAX_VERSION: Final = 0xFFFF

_HEADER: Final = struct.Struct(">2sH")
_F64: Final = struct.Struct(">d")
_SINCE: Final = "since"
# Kept in the class's own __dict__ (never looked up through the MRO), so an undecorated
# subclass of a payload class is not silently encoded with its parent's schema.
_SCHEMA_ATTR: Final = "__coordinator_api_payload__"
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1

_C = TypeVar("_C")

_Encode = Callable[[Any, bytearray], None]
_Decode = Callable[[bytes, int, int], tuple[Any, int]]


class _Failure(Exception):
    """Internal: why a value could not be encoded or decoded, and where.

    Inner codecs raise it with a reason; each enclosing field, item or entry adds its name on the
    way out (only on the error path, so successful calls pay nothing for the path). The public
    functions turn it into a ``PayloadError``.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []

    def describe(self) -> str:
        if not self.path:
            return self.reason
        where = "".join(p if p.startswith("[") else f".{p}" for p in reversed(self.path))
        return f"at {where.lstrip('.')}: {self.reason}"


class _Codec(NamedTuple):
    encode: _Encode
    decode: _Decode
    name: str
    # Whether values are hashable and so can be dict keys or frozenset elements.
    hashable: bool


def _expected(name: str, value: object) -> _Failure:
    return _Failure(f"expected {name}, got {type(value).__name__} {value!r:.80}")


def _truncated(what: str, needed: int, available: int) -> _Failure:
    unit = "byte" if needed == 1 else "bytes"
    return _Failure(f"truncated: {what} needs {needed} {unit}, only {available} remain")


# --- varints ---------------------------------------------------------------------------------------


def _write_uvarint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _uvarint_bytes(n: int) -> bytes:
    out = bytearray()
    _write_uvarint(n, out)
    return bytes(out)


def _read_uvarint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise _Failure("truncated: expected a varint, found the end of the data")
    byte = data[pos]
    if byte < 0x80:  # most lengths, counts and small ints: one byte
        return byte, pos + 1
    result = byte & 0x7F
    shift = 7
    pos += 1
    while True:
        if pos >= end:
            raise _Failure("truncated in the middle of a varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:
            raise _Failure("varint longer than 10 bytes")
    # A zero last byte would mean the same number has two encodings; refusing it keeps
    # "bytes that decode" and "bytes encode() writes" the same set.
    if byte == 0:
        raise _Failure("non-canonical varint (redundant trailing zero byte)")
    if result > _UINT64_MAX:
        raise _Failure("varint exceeds 64 bits")
    return result, pos


def _read_count(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    count, pos = _read_uvarint(data, pos, end)
    # Every encoded item takes at least one byte, so a count above the remaining bytes is a lie;
    # checking it here keeps garbage from asking for a huge allocation or a long loop.
    if count > end - pos:
        raise _Failure(f"{what} count {count} exceeds the {end - pos} bytes that remain")
    return count, pos


# --- scalars ---------------------------------------------------------------------------------------


def _enc_int(value: Any, out: bytearray) -> None:
    if type(value) is not int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _expected("int", value)
        value = int(value)
    if value < _INT64_MIN or value > _INT64_MAX:
        raise _Failure(f"int {value} is outside the signed 64-bit range")
    # Zigzag keeps small negative numbers short.
    _write_uvarint(value << 1 if value >= 0 else ((-value) << 1) - 1, out)


def _dec_int(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    zigzag, pos = _read_uvarint(data, pos, end)
    return (zigzag >> 1) ^ -(zigzag & 1), pos


def _enc_float(value: Any, out: bytearray) -> None:
    # PEP 484's numeric tower: an int is acceptable where a float is declared.
    if type(value) is not float and (not isinstance(value, (int, float)) or isinstance(value, bool)):
        raise _expected("float", value)
    try:
        out += _F64.pack(value)
    except OverflowError:
        raise _Failure(f"int {value} is too large for a float") from None


def _dec_float(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    if end - pos < 8:
        raise _truncated("a float", 8, end - pos)
    return _F64.unpack_from(data, pos)[0], pos + 8


def _enc_bool(value: Any, out: bytearray) -> None:
    if value is True:
        out.append(1)
    elif value is False:
        out.append(0)
    else:
        raise _expected("bool", value)


def _dec_bool(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    if pos >= end:
        raise _truncated("a bool", 1, 0)
    byte = data[pos]
    if byte > 1:
        raise _Failure(f"a bool must be 0 or 1, found {byte}")
    return byte == 1, pos + 1


def _enc_str(value: Any, out: bytearray) -> None:
    if not isinstance(value, str):
        raise _expected("str", value)
    try:
        raw = value.encode()
    except UnicodeEncodeError as exc:
        raise _Failure(f"str is not encodable as UTF-8 ({exc.reason})") from None
    _write_uvarint(len(raw), out)
    out += raw


def _dec_str(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    length, pos = _read_uvarint(data, pos, end)
    if length > end - pos:
        raise _truncated("a str", length, end - pos)
    try:
        return str(data[pos : pos + length], "utf-8"), pos + length
    except UnicodeDecodeError as exc:
        raise _Failure(f"invalid UTF-8 in a str ({exc.reason})") from None


def _enc_bytes(value: Any, out: bytearray) -> None:
    if not isinstance(value, bytes):
        raise _expected("bytes", value)
    _write_uvarint(len(value), out)
    out += value


def _dec_bytes(data: bytes, pos: int, end: int) -> tuple[Any, int]:
    length, pos = _read_uvarint(data, pos, end)
    if length > end - pos:
        raise _truncated("a bytes value", length, end - pos)
    return data[pos : pos + length], pos + length


_SCALARS: Final[dict[object, _Codec]] = {
    int: _Codec(_enc_int, _dec_int, "int", True),
    float: _Codec(_enc_float, _dec_float, "float", False),
    bool: _Codec(_enc_bool, _dec_bool, "bool", True),
    str: _Codec(_enc_str, _dec_str, "str", True),
    bytes: _Codec(_enc_bytes, _dec_bytes, "bytes", True),
}


# --- composite types -------------------------------------------------------------------------------


def _optional_codec(inner: _Codec) -> _Codec:
    inner_encode, inner_decode = inner.encode, inner.decode

    def enc(value: Any, out: bytearray) -> None:
        if value is None:
            out.append(0)
        else:
            out.append(1)
            inner_encode(value, out)

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        if pos >= end:
            raise _truncated("an optional value", 1, 0)
        tag = data[pos]
        if tag == 0:
            return None, pos + 1
        if tag == 1:
            return inner_decode(data, pos + 1, end)
        raise _Failure(f"an optional value's tag must be 0 or 1, found {tag}")

    return _Codec(enc, dec, f"{inner.name} | None", inner.hashable)


def _sequence_codec(item: _Codec, container: type[list[Any]] | type[tuple[Any, ...]]) -> _Codec:
    item_encode, item_decode = item.encode, item.decode
    is_list = container is list
    name = f"list[{item.name}]" if is_list else f"tuple[{item.name}, ...]"

    def enc(value: Any, out: bytearray) -> None:
        # Strict about the container: a str passed where a tuple[str, ...] is declared would
        # otherwise encode as a tuple of characters.
        if not isinstance(value, container):
            raise _expected(name, value)
        _write_uvarint(len(value), out)
        for index, element in enumerate(value):
            try:
                item_encode(element, out)
            except _Failure as failure:
                failure.path.append(f"[{index}]")
                raise

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        count, pos = _read_count(data, pos, end, "item")
        items: list[Any] = []
        append = items.append
        try:
            for _ in range(count):
                element, pos = item_decode(data, pos, end)
                append(element)
        except _Failure as failure:
            failure.path.append(f"[{len(items)}]")
            raise
        return (items if is_list else tuple(items)), pos

    return _Codec(enc, dec, name, not is_list and item.hashable)


def _fixed_tuple_codec(items: tuple[_Codec, ...]) -> _Codec:
    encoders = tuple(codec.encode for codec in items)
    decoders = tuple(codec.decode for codec in items)
    size = len(items)
    name = f"tuple[{', '.join(codec.name for codec in items)}]"

    def enc(value: Any, out: bytearray) -> None:
        if not isinstance(value, tuple) or len(value) != size:
            raise _expected(name, value)
        for index, (element_encode, element) in enumerate(zip(encoders, value, strict=True)):
            try:
                element_encode(element, out)
            except _Failure as failure:
                failure.path.append(f"[{index}]")
                raise

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        values: list[Any] = []
        try:
            for element_decode in decoders:
                element, pos = element_decode(data, pos, end)
                values.append(element)
        except _Failure as failure:
            failure.path.append(f"[{len(values)}]")
            raise
        return tuple(values), pos

    return _Codec(enc, dec, name, all(codec.hashable for codec in items))


_first = itemgetter(0)


def _encode_keys(keys: Iterable[Any], key_encode: _Encode) -> list[tuple[bytes, Any]]:
    """Each key with its encoding, sorted by the encoding: the order that makes bytes deterministic."""
    encoded: list[tuple[bytes, Any]] = []
    for key in keys:
        raw = bytearray()
        try:
            key_encode(key, raw)
        except _Failure as failure:
            failure.path.append(f"[{key!r:.40}]")
            raise
        encoded.append((bytes(raw), key))
    encoded.sort(key=_first)
    return encoded


def _dict_codec(key: _Codec, value: _Codec) -> _Codec:
    key_encode, key_decode = key.encode, key.decode
    value_encode, value_decode = value.encode, value.decode
    name = f"dict[{key.name}, {value.name}]"

    def enc(mapping: Any, out: bytearray) -> None:
        if not isinstance(mapping, dict):
            raise _expected(name, mapping)
        _write_uvarint(len(mapping), out)
        for raw, k in _encode_keys(mapping, key_encode):
            out += raw
            try:
                value_encode(mapping[k], out)
            except _Failure as failure:
                failure.path.append(f"[{k!r:.40}]")
                raise

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        count, pos = _read_count(data, pos, end, "entry")
        result: dict[Any, Any] = {}
        previous = b""
        for index in range(count):
            start = pos
            try:
                k, pos = key_decode(data, pos, end)
            except _Failure as failure:
                failure.path.append(f"[key {index}]")
                raise
            raw = data[start:pos]
            # Sorted and unique, as encode() writes them: a repeated key would otherwise be
            # silently dropped, and an unsorted one would make two encodings of one value.
            if index and raw <= previous:
                raise _Failure(f"dict keys out of order or repeated at entry {index} ({k!r:.40})")
            previous = raw
            try:
                result[k], pos = value_decode(data, pos, end)
            except _Failure as failure:
                failure.path.append(f"[{k!r:.40}]")
                raise
        return result, pos

    return _Codec(enc, dec, name, False)


def _frozenset_codec(element: _Codec) -> _Codec:
    element_encode, element_decode = element.encode, element.decode
    name = f"frozenset[{element.name}]"

    def enc(value: Any, out: bytearray) -> None:
        if not isinstance(value, frozenset):
            raise _expected(name, value)
        _write_uvarint(len(value), out)
        for raw, _ in _encode_keys(value, element_encode):
            out += raw

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        count, pos = _read_count(data, pos, end, "element")
        elements: list[Any] = []
        previous = b""
        for index in range(count):
            start = pos
            try:
                item, pos = element_decode(data, pos, end)
            except _Failure as failure:
                failure.path.append(f"[{index}]")
                raise
            raw = data[start:pos]
            if index and raw <= previous:
                raise _Failure(f"frozenset elements out of order or repeated at element {index}")
            previous = raw
            elements.append(item)
        return frozenset(elements), pos

    return _Codec(enc, dec, name, True)


def _enum_codec(enum_cls: type[enum.Enum], where: str) -> _Codec:
    values = [member.value for member in enum_cls]
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        inner = _SCALARS[int]
    elif values and all(isinstance(v, str) for v in values):
        inner = _SCALARS[str]
    else:
        raise TypeError(
            f"{where}: enum {enum_cls.__qualname__} cannot be a payload field: its members' values "
            "must be all ints or all strs (payloads carry an enum by value)"
        )
    inner_encode, inner_decode = inner.encode, inner.decode
    by_value = {member.value: member for member in enum_cls}
    name = enum_cls.__qualname__

    def enc(value: Any, out: bytearray) -> None:
        if not isinstance(value, enum_cls):
            raise _expected(name, value)
        inner_encode(value.value, out)

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        raw, pos = inner_decode(data, pos, end)
        member = by_value.get(raw)
        if member is None:
            # Flag enums have composite values that are no single member's. Python normalises
            # some values (IntFlag(-1) is every flag); only an exact value keeps decoding
            # canonical.
            try:
                member = enum_cls(raw)
            except ValueError:
                member = None
            if member is None or member.value != raw:
                raise _Failure(
                    f"{raw!r:.40} is not a value of {name} (a newer writer's new member? "
                    "add enum members only once every reader knows them)"
                )
        return member, pos

    return _Codec(enc, dec, name, True)


def _nested_codec(schema: _Schema) -> _Codec:
    name = schema.cls.__qualname__
    cls = schema.cls
    encode_fields = schema.encode_fields
    decode_fields = schema.decode_fields

    def enc(value: Any, out: bytearray) -> None:
        if not isinstance(value, cls):
            raise _expected(name, value)
        encode_fields(value, out)

    def dec(data: bytes, pos: int, end: int) -> tuple[Any, int]:
        return decode_fields(data, pos, end, None)

    # Nested payloads are never used as keys: whether one is hashable depends on its own fields
    # and dataclass options, and a key type that grows fields would change the keys' order.
    return _Codec(enc, dec, name, False)


def _codec_for(tp: Any, where: str) -> _Codec:
    """The codec of one annotation, or a TypeError that says what is wrong with it."""
    try:
        scalar = _SCALARS.get(tp)
    except TypeError:  # an unhashable annotation object
        scalar = None
    if scalar is not None:
        return scalar
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union or origin is types.UnionType:
        others = [arg for arg in args if arg is not type(None)]
        if len(args) == 2 and len(others) == 1:
            return _optional_codec(_codec_for(others[0], where))
        raise TypeError(
            f"{where}: unsupported union {tp}: the only union a payload field can have is "
            "`X | None`; use separate fields, or a nested payload, for alternatives"
        )
    if origin is list and len(args) == 1:
        return _sequence_codec(_codec_for(args[0], where), list)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence_codec(_codec_for(args[0], where), tuple)
        if args and Ellipsis not in args:
            return _fixed_tuple_codec(tuple(_codec_for(arg, where) for arg in args))
    if origin is dict and len(args) == 2:
        key = _codec_for(args[0], where)
        if not key.hashable:
            raise TypeError(f"{where}: dict key type {key.name} cannot be a payload dict key")
        return _dict_codec(key, _codec_for(args[1], where))
    if origin is frozenset and len(args) == 1:
        element = _codec_for(args[0], where)
        if not element.hashable:
            raise TypeError(f"{where}: {element.name} cannot be a payload frozenset element")
        return _frozenset_codec(element)
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return _enum_codec(tp, where)
        schema = tp.__dict__.get(_SCHEMA_ATTR)
        if isinstance(schema, _Schema):
            return _nested_codec(schema)
        if dataclasses.is_dataclass(tp):
            raise TypeError(
                f"{where}: {tp.__qualname__} is a dataclass but not a payload; decorate it with "
                "@payload(version=...) (before the class that uses it)"
            )
    raise TypeError(
        f"{where}: unsupported payload field type {tp!r}; supported: int, float, bool, str, bytes, "
        "X | None, list[X], tuple[X, ...], tuple[X, Y, ...], dict[K, V], frozenset[K], "
        "enum.Enum and nested @payload dataclasses"
    )


# --- schemas ---------------------------------------------------------------------------------------


class _Field(NamedTuple):
    name: str
    since: int
    has_default: bool
    encode: _Encode
    decode: _Decode


class _Schema:
    """Everything encode and decode need about one payload class, computed once at decoration."""

    __slots__ = (
        "cls",
        "fields",
        "getter",
        "header",
        "known_at",
        "name",
        "nfields",
        "required",
        "version",
    )

    def __init__(self, cls: type[Any], version: int, fields: tuple[_Field, ...]) -> None:
        self.cls = cls
        self.name = cls.__qualname__
        self.version = version
        self.fields = fields
        self.nfields = len(fields)
        self.header = _HEADER.pack(MAGIC, version)
        # known_at[v]: how many fields a writer of version v has (since values never decrease,
        # so they are exactly the first known_at[v] fields).
        self.known_at = tuple(sum(1 for f in fields if f.since <= v) for v in range(version + 1))
        # A nested payload has no version on the wire; the fewest fields its bytes may carry is
        # up to the last one without a default.
        self.required = max((i + 1 for i, f in enumerate(fields) if not f.has_default), default=0)
        names = [f.name for f in fields]
        if len(names) >= 2:
            self.getter: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
        elif names:
            single = names[0]
            self.getter = lambda obj: (getattr(obj, single),)
        else:
            self.getter = lambda obj: ()

    def encode_fields(self, obj: Any, out: bytearray) -> None:
        _write_uvarint(self.nfields, out)
        for field, value in zip(self.fields, self.getter(obj), strict=True):
            # Reserve one length byte and patch it afterwards: nearly every field is shorter than
            # 128 bytes, so this avoids a temporary buffer per field; longer ones shift once.
            start = len(out)
            out.append(0)
            try:
                field.encode(value, out)
            except _Failure as failure:
                failure.path.append(field.name)
                raise
            length = len(out) - start - 1
            if length < 0x80:
                out[start] = length
            else:
                out[start : start + 1] = _uvarint_bytes(length)

    def decode_fields(self, data: bytes, pos: int, end: int, writer_version: int | None) -> tuple[Any, int]:
        count, pos = _read_count(data, pos, end, "field")
        self._check_count(count, writer_version)
        fields = self.fields
        nfields = self.nfields
        kwargs: dict[str, Any] = {}
        for index in range(count):
            length, pos = _read_uvarint(data, pos, end)
            if length > end - pos:
                if index >= nfields:
                    raise _truncated(f"field {index} (unknown to this reader)", length, end - pos)
                cut = _truncated("the field", length, end - pos)
                cut.path.append(fields[index].name)
                raise cut
            field_end = pos + length
            if index < nfields:
                field = fields[index]
                try:
                    value, stop = field.decode(data, pos, field_end)
                except _Failure as failure:
                    failure.path.append(field.name)
                    raise
                if stop != field_end:
                    leftover = _Failure(f"{field_end - stop} unexpected bytes after the value")
                    leftover.path.append(field.name)
                    raise leftover
                kwargs[field.name] = value
            # else: a field a newer writer appended; its length is all this reader needs.
            pos = field_end
        try:
            return self.cls(**kwargs), pos
        except Exception as exc:
            # The class's own checks (__post_init__) refused the decoded values: for the caller
            # these are bad bytes like any other.
            raise _Failure(f"{self.name}(...) rejected the decoded values: {exc!r}") from exc

    def _check_count(self, count: int, writer_version: int | None) -> None:
        if writer_version is None:
            if count < self.required:
                missing = next(f.name for f in self.fields[count:] if not f.has_default)
                raise _Failure(
                    f"{self.name} has only {count} fields; field {missing!r} has no default "
                    "and must be present"
                )
        elif writer_version <= self.version:
            # Fields are only ever appended, so a writer of version v wrote exactly the fields
            # that existed at v. Anything else means the two sides disagree about the schema: a
            # field was added without bumping the version, or dated with the wrong since().
            expected = self.known_at[writer_version]
            if count != expected:
                raise _Failure(
                    f"version {writer_version} of {self.name} has {expected} fields but the bytes "
                    f"carry {count}: the writer's and reader's schemas disagree (was a field added "
                    "without bumping the version and marking it metadata=since(...)?)"
                )
        elif count < self.nfields:
            raise _Failure(
                f"the bytes are version {writer_version}, newer than this reader's {self.version}, "
                f"yet carry only {count} of this reader's {self.nfields} fields"
            )


def _check_version(version: object, what: str) -> int:
    if type(version) is not int or not 1 <= version <= MAX_VERSION:
        raise TypeError(f"{what} must be an int from 1 to {MAX_VERSION}, got {version!r}")
    return version


def _type_hints(cls: type[Any], frame_locals: dict[str, Any] | None) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except NameError:
        if frame_locals is None:
            raise
    # A class defined inside a function (a test, a plugin factory) names its sibling classes
    # from that function's locals, which get_type_hints cannot see on its own.
    return typing.get_type_hints(cls, localns=frame_locals)


def _build_schema(cls: object, version: int, frame_locals: dict[str, Any] | None) -> _Schema:
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls):
        raise TypeError(
            f"@payload decorates a dataclass; put @dataclass(frozen=True) below @payload on {cls!r}"
        )
    name = cls.__qualname__
    if _SCHEMA_ATTR in cls.__dict__:
        raise TypeError(f"{name} is already a payload class")
    params = getattr(cls, "__dataclass_params__", None)
    if not getattr(params, "frozen", False):
        raise TypeError(
            f"{name} must be a frozen dataclass (@dataclass(frozen=True)): payloads are values, "
            "and assignors are pure functions over them"
        )
    try:
        hints = _type_hints(cls, frame_locals)
    except NameError as exc:
        raise TypeError(
            f"{name}: cannot resolve a field's type ({exc}); define the types a payload uses "
            "before it, at module level"
        ) from exc
    for attr, hint in hints.items():
        if isinstance(hint, dataclasses.InitVar) or hint is dataclasses.InitVar:
            raise TypeError(f"{name}.{attr}: InitVar fields cannot be carried by a payload")
    fields: list[_Field] = []
    previous: dataclasses.Field[Any] | None = None
    previous_since = 1
    for f in dataclasses.fields(cls):
        where = f"{name}.{f.name}"
        if not f.init:
            raise TypeError(f"{where}: init=False fields cannot be decoded; drop init=False")
        field_since = _check_version(f.metadata.get(_SINCE, 1), f"{where}: since")
        if field_since > version:
            raise TypeError(
                f"{where} is marked since={field_since} but {name} is version {version}; "
                f"bump @payload(version={field_since})"
            )
        if field_since < previous_since and previous is not None:
            raise TypeError(
                f"{where} (since {field_since}) comes after {previous.name} (since {previous_since}): "
                "newer versions only append fields, so declare fields in the order of their since"
            )
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if field_since > 1 and not has_default:
            raise TypeError(
                f"{where} was added in version {field_since} and has no default, so bytes from an "
                "older writer could not be decoded; give it one: "
                f"field(default=..., metadata=since({field_since}))"
            )
        codec = _codec_for(hints[f.name], where)
        fields.append(_Field(f.name, field_since, has_default, codec.encode, codec.decode))
        previous, previous_since = f, field_since
    return _Schema(cls, version, tuple(fields))


def _schema_of(cls: object) -> _Schema:
    schema = cls.__dict__.get(_SCHEMA_ATTR) if isinstance(cls, type) else None
    if isinstance(schema, _Schema):
        return schema
    shown = cls.__qualname__ if isinstance(cls, type) else repr(cls)
    raise TypeError(f"{shown} is not a payload class; decorate it with @payload(version=...)")


# --- public API ------------------------------------------------------------------------------------


def payload(*, version: int) -> Callable[[type[_C]], type[_C]]:
    """Make a frozen dataclass a payload of the given schema version.

    Checks the class once, at definition, and precomputes its codec, so ``encode`` and ``decode``
    do no reflection per call. Raises ``TypeError`` at definition time if the class is not a
    frozen dataclass, a field's type is not supported, a field's ``since`` exceeds ``version``,
    fields are not declared in the order of their ``since``, or a field added after version 1
    has no default.

    :param version: the schema version this class writes, 1 to 65535. Bump it whenever you
        append fields; mark each appended field ``field(default=..., metadata=since(version))``.

    >>> from dataclasses import dataclass, field
    >>> @payload(version=1)
    ... @dataclass(frozen=True)
    ... class Lease:
    ...     resource: str
    ...     epoch: int
    >>> decode(Lease, encode(Lease("db-primary", 7)))
    Lease(resource='db-primary', epoch=7)
    >>> @payload(version=2)  # doctest: +ELLIPSIS
    ... @dataclass(frozen=True)
    ... class Broken:
    ...     resource: str
    ...     epoch: int = field(metadata=since(2))
    Traceback (most recent call last):
    ...
    TypeError: Broken.epoch was added in version 2 and has no default, so bytes from an older ...
    """
    _check_version(version, "payload(version=...)")

    def decorate(cls: type[_C]) -> type[_C]:
        # The defining scope: lets classes defined in a function refer to their siblings.
        frame = sys._getframe(1)
        frame_locals = dict(frame.f_locals)
        del frame
        setattr(cls, _SCHEMA_ATTR, _build_schema(cls, version, frame_locals))
        return cls

    return decorate


def since(version: int) -> dict[str, int]:
    """Field metadata saying the field was added in schema ``version``.

    Use it as ``dataclasses.field(default=..., metadata=since(2))`` (or ``default_factory=``):
    bytes written before ``version`` do not carry the field, so a newer reader fills in the
    default, and ``@payload`` rejects a field added after version 1 that has none. A plain
    ``field()`` call keeps mypy's and ruff's dataclass support exact (ruff's RUF009 flags any
    other call as a default); ``since()`` rather than a literal ``{"since": 2}`` makes a typo
    in the key an error rather than a field silently dated version 1. Combine with other
    metadata as ``metadata={**since(2), "doc": ...}``.

    >>> from dataclasses import dataclass, field
    >>> @payload(version=2)
    ... @dataclass(frozen=True)
    ... class Worker:
    ...     slots: int
    ...     labels: dict[str, str] = field(default_factory=dict, metadata=since(2))
    >>> Worker(4)
    Worker(slots=4, labels={})
    >>> since(2)
    {'since': 2}
    """
    return {_SINCE: _check_version(version, "since(version)")}


def encode(obj: object) -> bytes:
    """The bytes of a payload instance: deterministic, so equal values give equal bytes.

    :raises TypeError: ``obj``'s class is not decorated with :func:`payload`.
    :raises PayloadError: a field holds a value of the wrong type, an int outside the signed
        64-bit range, or a str that is not encodable as UTF-8. The message names the field.

    >>> from dataclasses import dataclass
    >>> @payload(version=1)
    ... @dataclass(frozen=True)
    ... class Shares:
    ...     weights: dict[str, int]
    >>> encode(Shares({"b": 2, "a": 1})) == encode(Shares({"a": 1, "b": 2}))
    True
    >>> encode(Shares({"a": "1"}))
    Traceback (most recent call last):
    ...
    coordinator_api._errors.PayloadError: cannot encode Shares: at weights['a']: expected int, got str '1'
    """
    schema = _schema_of(type(obj))
    out = bytearray(schema.header)
    try:
        schema.encode_fields(obj, out)
    except _Failure as failure:
        raise PayloadError(f"cannot encode {schema.name}: {failure.describe()}") from None
    return bytes(out)


def _read_header(data: bytes) -> tuple[int, int]:
    if len(data) >= 2 and data[:2] != MAGIC:
        raise _Failure(
            f"not a coordinator_api payload: starts with {data[:2].hex()}, expected {MAGIC.hex()} "
            "(bytes from another codec, or not a payload at all)"
        )
    if len(data) < _HEADER.size:
        raise _truncated("the header", _HEADER.size, len(data))
    _, version = _HEADER.unpack_from(data)
    if version == 0:
        raise _Failure("schema version 0 is invalid (versions start at 1)")
    return int(version), _HEADER.size


def _as_bytes(data: object) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f"payload data must be bytes, got {type(data).__name__}")


def decode(cls: type[_C], data: bytes | bytearray | memoryview) -> _C:
    """The payload instance of class ``cls`` that ``data`` encodes.

    Reads bytes of any version of ``cls``: fields a newer writer appended are skipped, fields an
    older writer did not have take their defaults.

    :raises TypeError: ``cls`` is not decorated with :func:`payload`, or ``data`` is not bytes.
    :raises PayloadError: ``data`` is not a payload (wrong magic), is truncated or has trailing
        bytes, holds a value that is not valid for its field, or disagrees with ``cls``'s schema.
        Never another exception type, whatever the bytes.

    >>> from dataclasses import dataclass
    >>> @payload(version=1)
    ... @dataclass(frozen=True)
    ... class Slots:
    ...     count: int
    >>> decode(Slots, encode(Slots(3)))
    Slots(count=3)
    >>> decode(Slots, encode(Slots(3))[:-1])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    coordinator_api._errors.PayloadError: cannot decode Slots from 6 bytes: at count: truncated: ...
    """
    schema = _schema_of(cls)
    raw = _as_bytes(data)
    try:
        version, pos = _read_header(raw)
        obj, pos = schema.decode_fields(raw, pos, len(raw), version)
        if pos != len(raw):
            raise _Failure(f"{len(raw) - pos} trailing bytes after the last field")
    except _Failure as failure:
        # Chained to the class's own exception when its checks refused the values; else bare.
        raise PayloadError(
            f"cannot decode {schema.name} from {len(raw)} bytes: {failure.describe()}"
        ) from failure.__cause__
    except (IndexError, ValueError, TypeError, OverflowError, struct.error) as exc:  # pragma: no cover
        # Every bad input above has an explicit check; this is the net that keeps one member's
        # bytes from failing a whole group's rebalance should one be missing.
        raise PayloadError(
            f"cannot decode {schema.name} from {len(raw)} bytes: unexpected {exc!r} "
            "(a bug in coordinator_api's payload decoder; please report it)"
        ) from exc
    return cast(_C, obj)


def peek_version(data: bytes | bytearray | memoryview) -> int:
    """The schema version the writer of ``data`` used, read from the header alone.

    A leader can use it to hold back a feature until every member is new enough to read
    assignments that rely on it.

    :raises PayloadError: ``data`` does not start with a payload header.

    >>> peek_version(bytes.fromhex("ca01000300"))
    3
    """
    raw = _as_bytes(data)
    try:
        return _read_header(raw)[0]
    except _Failure as failure:
        raise PayloadError(f"cannot read a payload version: {failure.describe()}") from None


def decode_members(
    cls: type[_C], members: Iterable[JoinedMember]
) -> tuple[dict[str, _C], dict[str, PayloadError]]:
    """Decode every member's metadata, separating the members whose metadata does not decode.

    For a leader's ``perform_assignment``: an assignor can give the members in the second dict
    nothing (they still get an empty assignment and stay in the group) instead of failing the
    whole group over one member's bytes.

    :returns: ``(decoded, failed)``: member id -> metadata for members whose metadata decodes,
        and member id -> the error for the others. Both keep the order of ``members``.

    >>> from dataclasses import dataclass
    >>> from coordinator_api._types import JoinedMember
    >>> @payload(version=1)
    ... @dataclass(frozen=True)
    ... class Capacity:
    ...     slots: int
    >>> good, bad = decode_members(
    ...     Capacity, [JoinedMember("m-1", None, encode(Capacity(2))), JoinedMember("m-2", None, b"x")]
    ... )
    >>> good
    {'m-1': Capacity(slots=2)}
    >>> print(bad["m-2"])
    member m-2: cannot decode Capacity from 1 bytes: truncated: the header needs 4 bytes, only 1 remain
    """
    _schema_of(cls)  # a programming error should raise here, not be reported per member
    decoded: dict[str, _C] = {}
    failed: dict[str, PayloadError] = {}
    for member in members:
        try:
            decoded[member.member_id] = decode(cls, member.metadata)
        except PayloadError as exc:
            who = member.member_id
            if member.group_instance_id is not None:
                who += f" (instance {member.group_instance_id})"
            error = PayloadError(f"member {who}: {exc}")
            error.__cause__ = exc
            failed[member.member_id] = error
    return decoded, failed
