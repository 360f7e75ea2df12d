"""A member process of a custom protocol built on coordinator_api.Coordinator: a shard allocator.

Run as ``python shard_member.py --bootstrap HOST:PORT --name m1 [--misbehave KIND]``. It joins
group ``shards``; the leader spreads ``--shards`` shards round robin over the members sorted by
member id. It prints one JSON line per callback (assigned, revoked, lost, error) and, for every
shard it owns, an ``act`` record each time it works on it, only while
``generation_if_stable()`` says it may. SIGTERM closes it gracefully.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from coordinator_api import (
    Coordinator,
    CoordinatorApiError,
    JoinedMember,
    decode,
    decode_members,
    encode,
    payload,
    since,
)
from coordinator_api._signals import stop_event

lock = threading.Lock()


# Two releases of the protocol's payloads: v2 appends fields with defaults, so v1 and v2 members
# can share a group during a rolling upgrade.
@payload(version=1)
@dataclass(frozen=True)
class MetadataV1:
    name: str


@payload(version=2)
@dataclass(frozen=True)
class MetadataV2:
    name: str
    weight: int = field(default=1, metadata=since(2))


@payload(version=1)
@dataclass(frozen=True)
class AssignmentV1:
    shards: tuple[int, ...]


@payload(version=2)
@dataclass(frozen=True)
class AssignmentV2:
    shards: tuple[int, ...]
    generation_note: str = field(default="", metadata=since(2))


RELEASES = {1: (MetadataV1, AssignmentV1), 2: (MetadataV2, AssignmentV2)}


def report(name: str, **fields: Any) -> None:
    with lock:
        print(json.dumps({"t": time.time(), "name": name, **fields}), flush=True)


class ShardAllocator(Coordinator):
    def __init__(self, name: str, shards: int, misbehave: str | None, release: int, **kwargs: Any) -> None:
        super().__init__(client_id=name, **kwargs)
        self.name = name
        self.metadata_cls, self.assignment_cls = RELEASES[release]
        self.shards = shards
        self.misbehave = misbehave
        self.owned: list[int] = []

    def protocol_type(self) -> str:
        return "shards"

    def metadata(self) -> list[tuple[str, bytes]]:
        if self.misbehave == "empty-metadata":
            return []
        if self.misbehave == "garbage-metadata":
            return [("round-robin", b"\xff\x00not a payload")]
        return [("round-robin", encode(self.metadata_cls(name=self.name)))]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        if self.misbehave == "assign-raises":
            raise RuntimeError("this leader cannot assign")
        if self.misbehave == "assign-unknown":
            return {"no-such-member": b"[]"}
        # Members whose metadata can't be decoded get nothing; the rest share the shards.
        decoded, _undecodable = decode_members(self.metadata_cls, members)
        good = sorted(decoded)
        result = {m.member_id: encode(self.assignment_cls(shards=())) for m in members}
        for i, member_id in enumerate(good):
            result[member_id] = encode(self.assignment_cls(shards=tuple(range(i, self.shards, len(good)))))
        return result

    def on_join_prepare(self, generation: int, member_id: str) -> None:
        report(self.name, event="revoked", generation=generation, member_id=member_id, shards=self.owned)
        self.owned = []

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        self.owned = list(decode(self.assignment_cls, assignment).shards)
        report(self.name, event="assigned", generation=generation, member_id=member_id, shards=self.owned)

    def on_lost(self, reason: str) -> None:
        report(self.name, event="lost", shards=self.owned, reason=reason, member_id=self.member_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="shards")
    parser.add_argument("--shards", type=int, default=12)
    parser.add_argument("--session-ms", type=int, default=3000)
    parser.add_argument("--heartbeat-ms", type=int, default=500)
    parser.add_argument("--instance-id")
    parser.add_argument("--misbehave")
    parser.add_argument("--api-version")
    parser.add_argument("--release", type=int, default=2, help="payload release (1 or 2)")
    args = parser.parse_args()
    if os.environ.get("SHARD_MEMBER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG)
        logging.getLogger("kafka").setLevel(logging.WARNING)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` dumps every thread's stack to stderr
    stop = stop_event(signal.SIGTERM)
    options: dict[str, Any] = {}
    if args.api_version:
        options["api_version"] = tuple(int(x) for x in args.api_version.split("."))
    member = ShardAllocator(
        args.name,
        args.shards,
        args.misbehave,
        args.release,
        group_id=args.group,
        bootstrap_servers=args.bootstrap,
        group_instance_id=args.instance_id,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=args.heartbeat_ms,
        rebalance_timeout_ms=10_000,
        **options,
    )
    report(args.name, event="started", stack_dump_signal=int(signal.SIGUSR1))
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        try:
            member.poll(0.05)
        except CoordinatorApiError as exc:
            report(args.name, event="error", error=type(exc).__name__, message=str(exc))
            time.sleep(0.2)
            continue
        generation = member.generation_if_stable()
        if generation is not None and member.owned:
            report(args.name, event="act", generation=generation.generation_id, shards=member.owned)
    member.close()
    report(args.name, event="closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
