"""A group's committed offsets: OffsetCommit fenced by the member's generation, and OffsetFetch.

Only the requests and the reading of their answers live here, with no I/O:
:class:`~coordinator_api._membership._session.MembershipSession` sends them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import kafka.errors
from kafka.protocol.consumer.group import OffsetCommitRequest, OffsetFetchRequest

from coordinator_api._errors import CommitFailedError, ConfigurationError, GroupError
from coordinator_api._types import Generation

Offsets = Mapping[tuple[str, int], int | tuple[int, str]]
"""(topic, partition) -> offset, or -> (offset, metadata)."""


def offset_commit_request(group_id: str, generation: Generation, offsets: Offsets) -> Any:
    """OffsetCommit of ``offsets`` fenced by ``generation``.

    :raises CommitFailedError: ``generation`` is no generation: a commit without one would be
        unfenced (an Empty group accepts it), so Kafka's consumer refuses to send it too.
    :raises ConfigurationError: an offset is not a non-negative int with an optional metadata
        string.
    """
    if generation.generation_id < 0:
        raise CommitFailedError(
            f"offset commit refused for generation {generation.generation_id}: this member is in "
            "no generation (not joined, or its membership was lost), so nothing was sent; poll "
            "to rejoin",
            group_id=group_id,
            member_id=generation.member_id,
            errors=tuple(sorted((t, p, "UNKNOWN_MEMBER_ID") for t, p in offsets)),
        )
    entry = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), value in sorted(offsets.items()):
        offset, metadata = value if isinstance(value, tuple) else (value, "")
        if not isinstance(offset, int) or offset < 0 or not isinstance(metadata, str):
            raise ConfigurationError(
                f"group {group_id!r}: offset for {topic}-{partition} must be a non-negative "
                f"int (optionally with a metadata string), got {value!r}"
            )
        by_topic.setdefault(topic, []).append(
            entry(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=-1,
                committed_metadata=metadata,
            )
        )
    return OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation.generation_id,
        member_id=generation.member_id,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()
        ],
        # v10 (KIP-848) names topics by id only: a Kafka 4 broker would refuse these
        # name-keyed partitions with UNKNOWN_TOPIC_ID. v9 is the last by name, as for
        # Kafka's own consumer when it has no topic ids.
        max_version=9,
    )


def check_offset_commit(response: Any, group_id: str, generation: Generation) -> None:
    """Read an OffsetCommit answer.

    :raises CommitFailedError: the coordinator refused some partitions (names in ``errors``).
    """
    refused = tuple(
        sorted(
            (t.name, p.partition_index, kafka.errors.for_code(p.error_code).message)
            for t in response.topics
            for p in t.partitions
            if p.error_code
        )
    )
    if refused:
        raise CommitFailedError(
            f"offset commit refused for generation {generation.generation_id}: "
            + ", ".join(f"{t}-{p}: {e}" for t, p, e in refused)
            + "; stop acting on those partitions and poll to rejoin",
            group_id=group_id,
            member_id=generation.member_id,
            errors=refused,
        )


def offset_fetch_request(group_id: str, partitions: Iterable[tuple[str, int]] | None) -> Any:
    """OffsetFetch for ``partitions``, or (None) for every partition the group has committed."""
    topics: dict[str, list[int]] | None = None
    if partitions is not None:
        topics = {}
        for topic, partition in sorted(set(partitions)):
            topics.setdefault(topic, []).append(partition)
    group = OffsetFetchRequest.OffsetFetchRequestGroup
    return OffsetFetchRequest(
        group_id=group_id,
        topics=None
        if topics is None
        else [
            OffsetFetchRequest.OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in topics.items()
        ],
        groups=[
            group(
                group_id=group_id,
                topics=None
                if topics is None
                else [group.OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in topics.items()],
            )
        ],
        require_stable=False,
        min_version=0 if topics is not None else 2,
        max_version=8,
    )


def fetched_offsets(response: Any, group_id: str, member_id: str) -> dict[tuple[str, int], tuple[int, str]]:
    """Read an OffsetFetch answer: (topic, partition) -> (offset, metadata), leaving out
    partitions without a committed offset.

    :raises GroupError: the coordinator answered with an error for the group or a partition.
    """
    if response.API_VERSION >= 8:
        error_code, answered = response.groups[0].error_code, response.groups[0].topics
    else:
        error_code = response.error_code if response.API_VERSION >= 2 else 0
        answered = response.topics
    errors = [(error_code, "")] + [
        (p.error_code, f"{t.name}-{p.partition_index}") for t in answered for p in t.partitions
    ]
    for code, where in errors:
        if code:
            raise GroupError(
                f"offset fetch{' for ' + where if where else ''} failed: "
                f"{kafka.errors.for_code(code).message}; retry later",
                group_id=group_id,
                member_id=member_id,
            )
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata or "")
        for t in answered
        for p in t.partitions
        if p.committed_offset >= 0
    }
