"""The roundrobin-shards payloads: versioned JSON that newer writers only append to.

Metadata (JoinGroup, one per member)::

    {"version": 1, "capacity": 2}        # capacity: most shards the member takes; null: no limit

Assignment (SyncGroup, one per member; empty bytes mean no shards)::

    {"version": 1, "shards": ["s0", "s2"]}

Readers ignore fields they do not know, so a member of a newer version that adds fields still
joins a group led by an older one during a rolling upgrade.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from coordinator_api import PayloadError

VERSION: Final = 1


def encode_metadata(capacity: int | None) -> bytes:
    """A member's metadata: how many shards it takes at most (None: no limit)."""
    return _dump({"version": VERSION, "capacity": capacity})


def decode_metadata(data: bytes) -> int | None:
    """The capacity in a member's metadata.

    :raises PayloadError: not roundrobin-shards metadata.
    """
    doc = _load(data, "metadata")
    capacity = doc.get("capacity")
    if capacity is not None and (not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 0):
        raise PayloadError(
            f"roundrobin-shards metadata: capacity must be a non-negative integer or null, got {capacity!r}"
        )
    return capacity


def encode_assignment(shards: Sequence[str]) -> bytes:
    """A member's assignment: the shards it owns in the generation."""
    return _dump({"version": VERSION, "shards": list(shards)})


def decode_assignment(data: bytes) -> tuple[str, ...]:
    """The shards in a member's assignment (none for empty bytes: a member the leader left out).

    :raises PayloadError: not a roundrobin-shards assignment.
    """
    if not data:
        return ()
    shards = _load(data, "assignment").get("shards")
    if not isinstance(shards, list) or not all(isinstance(shard, str) for shard in shards):
        raise PayloadError(f"roundrobin-shards assignment: shards must be a list of names, got {shards!r}")
    return tuple(shards)


def describe_metadata(protocol: str, data: bytes) -> str:
    """Metadata in words, for ``coordinator_api_register_payload_decoders``."""
    capacity = decode_metadata(data)
    return "takes any number of shards" if capacity is None else f"takes up to {capacity} shard(s)"


def describe_assignment(protocol: str, data: bytes) -> str:
    """An assignment in words, for ``coordinator_api_register_payload_decoders``."""
    shards = decode_assignment(data)
    return f"shards {', '.join(shards)}" if shards else "no shards"


def _dump(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def _load(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PayloadError(f"roundrobin-shards {what} is not JSON: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("version"), int) or doc["version"] < 1:
        raise PayloadError(f"roundrobin-shards {what} needs a JSON object with a version >= 1, got {doc!r}")
    return doc
