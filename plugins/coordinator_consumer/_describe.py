"""Consumer-protocol payloads in words, for ``coordinator-api groups``."""

from __future__ import annotations

from collections.abc import Iterable

from coordinator_consumer._model import TopicPartition
from coordinator_consumer._protocol import decode_assignment, decode_subscription


def _partitions(partitions: Iterable[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return (
        "; ".join(f"{topic} {', '.join(map(str, numbers))}" for topic, numbers in by_topic.items())
        or "nothing"
    )


def describe_subscription(protocol: str, data: bytes) -> str:
    """``topics events, orders; owns events 0, 1 (generation 4); rack r1``"""
    subscription = decode_subscription("", None, data)
    words = [f"topics {', '.join(sorted(subscription.topics)) or '(none)'}"]
    if subscription.owned:
        generation = f" (generation {subscription.generation})" if subscription.generation >= 0 else ""
        words.append(f"owns {_partitions(subscription.owned)}{generation}")
    if subscription.rack:
        words.append(f"rack {subscription.rack}")
    return "; ".join(words)


def describe_assignment(protocol: str, data: bytes) -> str:
    """``events 0, 1, 2``"""
    partitions, _user_data = decode_assignment(data)
    return _partitions(partitions)
