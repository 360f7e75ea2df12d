"""Durable coordinator state in SQLite: topics, group metadata and committed offsets.

The shell applies a step's writes in one transaction before it sends that step's replies, so
an acknowledged offset commit or assignment survives a crash of the process or the machine
(``synchronous=FULL`` in WAL mode fsyncs every commit).
"""

from __future__ import annotations

import base64
import dataclasses
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from coordinator_api._errors import CoordinatorStartError
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDowngraded,
    ConsumerGroupSnapshot,
    ConsumerMemberSnapshot,
    GroupDeleted,
    GroupSnapshot,
    MemberSnapshot,
    OffsetsCommitted,
    OffsetsExpired,
    StoreWrite,
    Topic,
)

DATABASE_NAME = "coordinator.sqlite3"
LOCK_NAME = "coordinator.lock"
_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS topics (
    name TEXT PRIMARY KEY,
    partitions INTEGER NOT NULL,
    topic_id BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS groups (
    group_id TEXT PRIMARY KEY,
    metadata TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS consumer_groups (
    group_id TEXT PRIMARY KEY,
    document TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS offsets (
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch INTEGER NOT NULL,
    metadata TEXT,
    PRIMARY KEY (group_id, topic, partition)
);
"""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))


def _group_to_json(snap: GroupSnapshot) -> str:
    return json.dumps(
        {
            "generation_id": snap.generation_id,
            "protocol_type": snap.protocol_type,
            "protocol_name": snap.protocol_name,
            "leader_id": snap.leader_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "session_timeout_ms": m.session_timeout_ms,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    "protocols": [[name, _b64(meta)] for name, meta in m.protocols],
                    "assignment": _b64(m.assignment),
                }
                for m in snap.members
            ],
        }
    )


def _group_from_json(group_id: str, text: str) -> GroupSnapshot:
    doc: dict[str, Any] = json.loads(text)
    return GroupSnapshot(
        group_id=group_id,
        generation_id=doc["generation_id"],
        protocol_type=doc["protocol_type"],
        protocol_name=doc["protocol_name"],
        leader_id=doc["leader_id"],
        members=tuple(
            MemberSnapshot(
                member_id=m["member_id"],
                group_instance_id=m["group_instance_id"],
                client_id=m["client_id"],
                client_host=m["client_host"],
                session_timeout_ms=m["session_timeout_ms"],
                rebalance_timeout_ms=m["rebalance_timeout_ms"],
                protocols=tuple((name, _unb64(meta)) for name, meta in m["protocols"]),
                assignment=_unb64(m["assignment"]),
            )
            for m in doc["members"]
        ),
    )


def _consumer_group_to_json(snap: ConsumerGroupSnapshot) -> str:
    return json.dumps(
        {
            "group_epoch": snap.group_epoch,
            "assignment_epoch": snap.assignment_epoch,
            "assignor": snap.assignor,
            "members": [
                {
                    **dataclasses.asdict(m),
                    "classic_protocols": [[name, _b64(meta)] for name, meta in m.classic_protocols],
                }
                for m in snap.members
            ],
        }
    )


def _consumer_group_from_json(group_id: str, text: str) -> ConsumerGroupSnapshot:
    doc: dict[str, Any] = json.loads(text)

    def partitions(pairs: list[list[Any]]) -> tuple[tuple[str, int], ...]:
        return tuple((str(topic), int(partition)) for topic, partition in pairs)

    return ConsumerGroupSnapshot(
        group_id=group_id,
        group_epoch=doc["group_epoch"],
        assignment_epoch=doc["assignment_epoch"],
        assignor=doc["assignor"],
        members=tuple(
            ConsumerMemberSnapshot(
                **{
                    **m,
                    "topics": tuple(m["topics"]),
                    "assigned": partitions(m["assigned"]),
                    "pending_revocation": partitions(m["pending_revocation"]),
                    "target": partitions(m["target"]),
                    "classic_protocols": tuple(
                        (name, _unb64(meta)) for name, meta in m.get("classic_protocols", ())
                    ),
                }
            )
            for m in doc["members"]
        ),
    )


def _lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold ``<data_dir>/coordinator.lock`` exclusively (``flock``) for as long as the returned
    file is open, with this process's id in it: two coordinators on one data directory would
    overwrite each other's state, so the second refuses to start, naming the first."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = open(data_dir / LOCK_NAME, "a+", encoding="utf-8")  # noqa: SIM115 - held open
    except OSError as exc:
        raise CoordinatorStartError(
            f"cannot use data directory {data_dir}: {exc}; check that it is writable"
        ) from exc
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.seek(0)
        holder = lock.read().strip() or "unknown"
        lock.close()
        raise CoordinatorStartError(
            f"data directory {data_dir} is in use by another coordinator (process {holder}); "
            "stop it first, or give this one a data directory of its own"
        ) from None
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    return lock


class SqliteStore:
    """The coordinator's state under a data directory (``<data_dir>/coordinator.sqlite3``)."""

    def __init__(self, data_dir: Path) -> None:
        self._lock = _lock_data_dir(data_dir)
        try:
            self.path = data_dir / DATABASE_NAME
            # The event loop thread is the only writer; check_same_thread=False lets the
            # embedded coordinator open it on the caller's thread first.
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except (OSError, sqlite3.Error) as exc:
            self._lock.close()
            raise CoordinatorStartError(
                f"cannot use data directory {data_dir}: {exc}; check that it is writable and "
                "not used by another coordinator"
            ) from exc
        if row is None:
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(_SCHEMA_VERSION),),
            )
        elif int(row[0]) > _SCHEMA_VERSION:
            raise CoordinatorStartError(
                f"{self.path} was written by a newer coordinator-api (schema {row[0]}); "
                "upgrade coordinator-api to read it"
            )

    def load_consumer_groups(self) -> list[ConsumerGroupSnapshot]:
        """The consumer groups of the incremental protocol a previous run stored."""
        return [
            _consumer_group_from_json(group_id, document)
            for group_id, document in self._db.execute(
                "SELECT group_id, document FROM consumer_groups ORDER BY group_id"
            )
        ]

    def load(
        self,
    ) -> tuple[list[Topic], list[GroupSnapshot], list[tuple[str, CommittedOffset]]]:
        topics = [
            Topic(name=name, partitions=partitions, topic_id=bytes(topic_id))
            for name, partitions, topic_id in self._db.execute(
                "SELECT name, partitions, topic_id FROM topics ORDER BY name"
            )
        ]
        groups = [
            _group_from_json(group_id, metadata)
            for group_id, metadata in self._db.execute(
                "SELECT group_id, metadata FROM groups ORDER BY group_id"
            )
        ]
        offsets = [
            (
                group_id,
                CommittedOffset(
                    topic=topic,
                    partition=partition,
                    offset=offset,
                    leader_epoch=leader_epoch,
                    metadata=metadata,
                ),
            )
            for group_id, topic, partition, offset, leader_epoch, metadata in self._db.execute(
                "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata "
                "FROM offsets ORDER BY group_id, topic, partition"
            )
        ]
        return topics, groups, offsets

    def apply(self, writes: Iterable[StoreWrite]) -> None:
        """Write one step's changes atomically."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for write in writes:
                if isinstance(write, GroupSnapshot):
                    db.execute(
                        "INSERT OR REPLACE INTO groups (group_id, metadata) VALUES (?, ?)",
                        (write.group_id, _group_to_json(write)),
                    )
                elif isinstance(write, ConsumerGroupSnapshot):
                    db.execute(
                        "INSERT OR REPLACE INTO consumer_groups (group_id, document) VALUES (?, ?)",
                        (write.group_id, _consumer_group_to_json(write)),
                    )
                elif isinstance(write, OffsetsCommitted):
                    db.executemany(
                        "INSERT OR REPLACE INTO offsets (group_id, topic, partition, "
                        "committed_offset, leader_epoch, metadata) VALUES (?, ?, ?, ?, ?, ?)",
                        [
                            (
                                write.group_id,
                                o.topic,
                                o.partition,
                                o.offset,
                                o.leader_epoch,
                                o.metadata,
                            )
                            for o in write.offsets
                        ],
                    )
                elif isinstance(write, OffsetsExpired):
                    db.executemany(
                        "DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                        [(write.group_id, topic, partition) for topic, partition in write.partitions],
                    )
                elif isinstance(write, ConsumerGroupDowngraded):
                    db.execute("DELETE FROM consumer_groups WHERE group_id = ?", (write.group_id,))
                elif isinstance(write, GroupDeleted):
                    db.execute("DELETE FROM groups WHERE group_id = ?", (write.group_id,))
                    db.execute("DELETE FROM consumer_groups WHERE group_id = ?", (write.group_id,))
                    db.execute("DELETE FROM offsets WHERE group_id = ?", (write.group_id,))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO topics (name, partitions, topic_id) VALUES (?, ?, ?)",
                        (write.name, write.partitions, write.topic_id),
                    )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
        self._lock.close()  # closing the file releases the lock
