"""Kafka's consumer protocol payloads: the subscription a member joins with, the assignment it gets.

A consumer sends a ``ConsumerProtocolSubscription`` as its JoinGroup protocol metadata, and the
leader sends each member a ``ConsumerProtocolAssignment`` through SyncGroup. Both start with an
int16 version, followed by the fields of that version (ARCHITECTURE rule 6):

=======  ===================================================  ==================================
version  subscription                                         assignment
=======  ===================================================  ==================================
0        topics, user_data                                    assigned partitions, user_data
1        + owned partitions (KIP-429, cooperative rebalance)  same as 0
2        + generation of the owned partitions (KIP-792)       same as 0
3        + rack of the member (KIP-881, rack-aware assignors) same as 0
=======  ===================================================  ==================================

Encoding and decoding use kafka-python's message classes, generated from Kafka's own JSON
schemas, never hand-written code (ARCHITECTURE rule 3), so payloads interoperate with Java,
librdkafka and kafka-python consumers both ways. The compatibility rules are Kafka's: a payload
of a newer version than we know is read as the newest version we know (newer versions only
append fields, so the fields we know come first and the rest is ignored); writing an older
version silently leaves out the fields it cannot carry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, final

from kafka.protocol.consumer import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from coordinator_api import ClassicPayloads
from coordinator_consumer._model import Subscription, TopicPartition

#: The newest version of each payload this module knows, and the one it writes by default
#: (as Kafka's ``ConsumerProtocol.CONSUMER_PROTOCOL_VERSION``).
PROTOCOL_TYPE: Final = "consumer"
"""Kafka's protocol type of consumer groups."""

SUBSCRIPTION_VERSION: Final[int] = ConsumerProtocolSubscription.max_version
ASSIGNMENT_VERSION: Final[int] = ConsumerProtocolAssignment.max_version

__all__ = [
    "ASSIGNMENT_VERSION",
    "CLASSIC_PAYLOADS",
    "SUBSCRIPTION_VERSION",
    "ConsumerProtocolError",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]


@final
class ConsumerProtocolError(ValueError):
    """A payload is not (or cannot be written as) Kafka's consumer protocol.

    When decoding, the peer sent metadata of another protocol type under the ``consumer`` type,
    or corrupted bytes: the leader should leave that member out, or the group should be checked
    for a client that is not a Kafka consumer. When encoding, a value does not fit the wire
    format (a partition number beyond int32, a name longer than 32767 bytes, an unknown version).
    """


def encode_subscription(
    topics: Iterable[str],
    *,
    owned: Iterable[TopicPartition] = (),
    generation: int = -1,
    rack: str | None = None,
    user_data: bytes = b"",
    version: int = SUBSCRIPTION_VERSION,
) -> bytes:
    """Encode a member's subscription as JoinGroup protocol metadata.

    Topics and owned partitions are sets to Kafka; they are written sorted and without
    duplicates, so equal subscriptions give equal bytes. Fields the chosen version cannot carry
    (owned partitions before v1, generation before v2, rack before v3) are left out, as Kafka does.

    :param topics: the topics the member subscribes to.
    :param owned: the partitions it owns now (v1+).
    :param generation: the generation in which it owned them (v2+); -1 if it has none.
    :param rack: the member's rack (v3+), ``client.rack`` in Kafka's consumer configuration.
    :param user_data: the assignor-specific bytes.
    :param version: 0 to :data:`SUBSCRIPTION_VERSION`.
    :returns: the payload, starting with the version as an int16.
    :raises ConsumerProtocolError: when the version is unknown or a value does not fit.

    >>> encode_subscription(["t0"], version=0).hex(" ")
    '00 00 00 00 00 01 00 02 74 30 00 00 00 00'
    >>> payload = encode_subscription(["t0"], owned=[TopicPartition("t0", 1)], generation=7, rack="a")
    >>> decode_subscription("m1", None, payload)  # doctest: +NORMALIZE_WHITESPACE
    Subscription(member_id='m1', topics=frozenset({'t0'}),
                 owned=(TopicPartition(topic='t0', partition=1),), generation=7, rack='a',
                 group_instance_id=None, user_data=b'')
    """
    _check_version(version, SUBSCRIPTION_VERSION, "subscription")
    wire_partition = ConsumerProtocolSubscription.TopicPartition
    message = ConsumerProtocolSubscription(
        version=version,
        topics=sorted(set(topics)),
        user_data=bytes(user_data),
        owned_partitions=[
            wire_partition(topic=topic, partitions=numbers) for topic, numbers in _by_topic(owned)
        ],
        generation_id=generation,
        rack_id=rack,
    )
    return _encode(message, "subscription")


def decode_subscription(member_id: str, group_instance_id: str | None, data: bytes) -> Subscription:
    """Decode the JoinGroup protocol metadata of one member.

    Any version decodes: fields a version lacks take their defaults (no owned partitions,
    generation -1, no rack), and a version newer than :data:`SUBSCRIPTION_VERSION` is read as
    that version, ignoring what follows. Trailing bytes are ignored, as Kafka ignores them.

    :param member_id: the member the metadata came from (JoinGroup response).
    :param group_instance_id: its static id, if any (JoinGroup response, v5+).
    :param data: the metadata bytes.
    :returns: the subscription; owned partitions sorted, without duplicates.
    :raises ConsumerProtocolError: when ``data`` is not a consumer-protocol subscription; never
        another exception type, whatever the bytes.

    >>> decode_subscription("m1", "i1", bytes.fromhex("0000 00000001 0002 7430 ffffffff"))
    ... # doctest: +NORMALIZE_WHITESPACE
    Subscription(member_id='m1', topics=frozenset({'t0'}), owned=(), generation=-1, rack=None,
                 group_instance_id='i1', user_data=b'')
    >>> try:
    ...     decode_subscription("m1", None, b"GET / HTTP/1.1")
    ... except ConsumerProtocolError as error:
    ...     print(str(error).split(" (")[0])
    member 'm1' sent a JoinGroup metadata that is not a consumer-protocol subscription
    """
    what = f"member {member_id!r} sent a JoinGroup metadata"
    message = _decode(ConsumerProtocolSubscription, data, what, "subscription")
    try:
        topics = frozenset(_strings(message.topics))
        owned: list[TopicPartition] = []
        for entry in _items(getattr(message, "owned_partitions", None) or []):
            topic = _string(entry.topic)
            owned.extend(TopicPartition(topic, number) for number in _ints(entry.partitions))
        generation = _int(getattr(message, "generation_id", -1))
        rack = getattr(message, "rack_id", None)
        if rack is not None:
            rack = _string(rack)
        user_data = _user_data(message.user_data)
    except (TypeError, AttributeError) as exc:
        raise _error(what, "subscription", data, exc) from exc
    return Subscription(
        member_id=member_id,
        topics=topics,
        owned=tuple(sorted(set(owned))),
        generation=generation,
        rack=rack,
        group_instance_id=group_instance_id,
        user_data=user_data,
    )


def encode_assignment(
    partitions: Iterable[TopicPartition], user_data: bytes | None = None, version: int = ASSIGNMENT_VERSION
) -> bytes:
    """Encode one member's assignment for SyncGroup.

    Partitions are written grouped by topic, sorted, without duplicates. All versions carry the
    same fields; Kafka bumped the assignment's version with the subscription's.

    :param partitions: what the member is assigned.
    :param user_data: the assignor-specific bytes; None (the default) writes them as null, as
        Kafka's consumer and group coordinator do when there are none.
    :param version: 0 to :data:`ASSIGNMENT_VERSION`.
    :raises ConsumerProtocolError: when the version is unknown or a value does not fit.

    >>> payload = encode_assignment([TopicPartition("t0", 1), TopicPartition("t0", 0)], b"x")
    >>> payload.hex(" ")
    '00 03 00 00 00 01 00 02 74 30 00 00 00 02 00 00 00 00 00 00 00 01 00 00 00 01 78'
    >>> decode_assignment(payload)
    ((TopicPartition(topic='t0', partition=0), TopicPartition(topic='t0', partition=1)), b'x')
    """
    _check_version(version, ASSIGNMENT_VERSION, "assignment")
    wire_partition = ConsumerProtocolAssignment.TopicPartition
    message = ConsumerProtocolAssignment(
        version=version,
        assigned_partitions=[
            wire_partition(topic=topic, partitions=numbers) for topic, numbers in _by_topic(partitions)
        ],
        user_data=None if user_data is None else bytes(user_data),
    )
    return _encode(message, "assignment")


def decode_assignment(data: bytes) -> tuple[tuple[TopicPartition, ...], bytes]:
    """Decode the assignment a member received from SyncGroup.

    Any version decodes, newer ones included (read as :data:`ASSIGNMENT_VERSION`).

    :returns: the assigned partitions, sorted, without duplicates; and the assignor's user data
        (``b""`` when absent or null).
    :raises ConsumerProtocolError: when ``data`` is not a consumer-protocol assignment; never
        another exception type, whatever the bytes.
    """
    what = "the SyncGroup assignment"
    message = _decode(ConsumerProtocolAssignment, data, what, "assignment")
    try:
        partitions: set[TopicPartition] = set()
        for entry in _items(message.assigned_partitions):
            topic = _string(entry.topic)
            partitions.update(TopicPartition(topic, number) for number in _ints(entry.partitions))
        user_data = _user_data(message.user_data)
    except (TypeError, AttributeError) as exc:
        raise _error(what, "assignment", data, exc) from exc
    return tuple(sorted(partitions)), user_data


def _check_version(version: int, newest: int, what: str) -> None:
    if not 0 <= version <= newest:
        raise ConsumerProtocolError(
            f"cannot write consumer-protocol {what} version {version}: this kafka-python knows "
            f"versions 0 to {newest}"
        )


def _by_topic(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    numbers: dict[str, set[int]] = {}
    for partition in partitions:
        numbers.setdefault(partition.topic, set()).add(partition.partition)
    return [(topic, sorted(numbers[topic])) for topic in sorted(numbers)]


def _encode(message: Any, what: str) -> bytes:
    try:
        encoded = message.encode()
    except Exception as exc:  # kafka-python raises struct.error, ValueError, TypeError, ...
        raise ConsumerProtocolError(
            f"cannot write this consumer-protocol {what}: a value does not fit Kafka's wire format "
            f"(partition numbers and the generation are int32, names at most 32767 bytes of "
            f"UTF-8): {type(exc).__name__}: {exc}"
        ) from exc
    return bytes(encoded)


def _decode(message_class: Any, data: bytes, what: str, kind: str) -> Any:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ConsumerProtocolError(f"{what} that is not bytes but {type(data).__name__}")
    data = bytes(data)
    try:
        return message_class.decode(data)
    except Exception as exc:  # whatever the bytes: struct.error, UnicodeDecodeError, ValueError, ...
        raise _error(what, kind, data, exc) from exc


def _error(what: str, kind: str, data: bytes, cause: BaseException) -> ConsumerProtocolError:
    shown = data[:64].hex() + ("..." if len(data) > 64 else "")
    return ConsumerProtocolError(
        f"{what} that is not a consumer-protocol {kind} ({type(cause).__name__}: {cause}); "
        f"is it a Kafka consumer of the same group? payload: {shown}"
    )


# kafka-python decodes a null array or string (length -1) as None even where Kafka's schema says
# the field is not nullable; Kafka rejects those, so do we (the helpers raise TypeError).


def _items(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"expected an array, got {value!r}")
    return value


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _strings(value: Any) -> list[str]:
    return [_string(item) for item in _items(value)]


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _ints(value: Any) -> list[int]:
    return [_int(item) for item in _items(value)]


def _user_data(value: Any) -> bytes:
    if value is None:
        return b""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"expected bytes, got {type(value).__name__}")
    return bytes(value)


def _classic_subscription(metadata: bytes) -> tuple[frozenset[str], frozenset[tuple[str, int]], str | None]:
    subscription = decode_subscription("", None, metadata)
    return (
        subscription.topics,
        frozenset((p.topic, p.partition) for p in subscription.owned),
        subscription.rack or None,  # librdkafka sends "" without client.rack: no rack, as in Java
    )


def _classic_assignment(payload: bytes) -> frozenset[tuple[str, int]]:
    partitions, _user_data = decode_assignment(payload)
    return frozenset((p.topic, p.partition) for p in partitions)


def _encode_classic_assignment(partitions: Iterable[tuple[str, int]]) -> bytes:
    return encode_assignment(TopicPartition(topic, number) for topic, number in partitions)


CLASSIC_PAYLOADS: Final = ClassicPayloads(
    subscription=_classic_subscription,
    assignment=_classic_assignment,
    encode_assignment=_encode_classic_assignment,
)
"""The consumer protocol's payloads as the embedded coordinator reads them when a group moves
between the classic protocol and the incremental one (KIP-848's online migration)."""
