"""Durable coordinator state in SQLite: topics, group metadata, committed offsets, ACLs and
client quotas.

The shell applies a step's writes in one transaction before it sends that step's replies, so
an acknowledged offset commit or assignment survives a crash of the process or the machine
(``synchronous=FULL`` in WAL mode fsyncs every commit).

Nothing is lost silently. A data directory that has held state says so (``coordinator.state``,
written when its database is created), so a database that is then missing, empty or without
its tables is an error, not a fresh start; a damaged file (``PRAGMA quick_check``) is an error
naming it; either way the operator may ask for a fresh start, which keeps the old file aside.
A stored row that cannot be read (invalid JSON, a missing key, a value of the wrong type) is
skipped with a warning naming it, never an internal error later.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import fcntl
import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from coordinator_api._errors import CoordinatorStartError
from coordinator_api.server._acls import AclBinding
from coordinator_api.server._group_configs import GROUP_CONFIG_KEYS
from coordinator_api.server._messages import (
    CommittedOffset,
    ConsumerGroupDowngraded,
    ConsumerGroupSnapshot,
    ConsumerMemberSnapshot,
    GroupDeleted,
    GroupSnapshot,
    MemberSnapshot,
    OffsetsCommitted,
    OffsetsDeleted,
    OffsetsExpired,
    StoreWrite,
    Topic,
    TopicRemoved,
)
from coordinator_api.server._quotas import QuotaChange, QuotaEntity, check_quota_value

DATABASE_NAME = "coordinator.sqlite3"
LOCK_NAME = "coordinator.lock"
MARKER_NAME = "coordinator.state"
# 2: a consumer group's members in rows of their own (1 kept them in the group's document).
_SCHEMA_VERSION = 2

log = logging.getLogger("coordinator_api.server")

#: What a stored row that cannot be read raises while it is decoded.
_UNREADABLE = (ValueError, KeyError, TypeError, AttributeError, binascii.Error)

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
CREATE TABLE IF NOT EXISTS consumer_group_members (
    group_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    document TEXT NOT NULL,
    PRIMARY KEY (group_id, member_id)
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
CREATE TABLE IF NOT EXISTS acls (
    resource_type INTEGER NOT NULL,
    name TEXT NOT NULL,
    pattern_type INTEGER NOT NULL,
    principal TEXT NOT NULL,
    host TEXT NOT NULL,
    operation INTEGER NOT NULL,
    permission INTEGER NOT NULL,
    PRIMARY KEY (resource_type, name, pattern_type, principal, host, operation, permission)
);
CREATE TABLE IF NOT EXISTS client_quotas (
    entity TEXT NOT NULL,
    key TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (entity, key)
);
CREATE TABLE IF NOT EXISTS group_configs (
    group_id TEXT NOT NULL,
    key TEXT NOT NULL,
    value INTEGER NOT NULL,
    PRIMARY KEY (group_id, key)
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
    """The group's own document; its members are rows of their own."""
    return json.dumps(
        {
            "group_epoch": snap.group_epoch,
            "assignment_epoch": snap.assignment_epoch,
            "protocol_type": snap.protocol_type,
        }
    )


def _consumer_member_to_json(m: ConsumerMemberSnapshot) -> str:
    return json.dumps(
        {
            **dataclasses.asdict(m),
            "classic_protocols": [[name, _b64(meta)] for name, meta in m.classic_protocols],
            "metadata": _b64(m.metadata),
        }
    )


def _consumer_member_row(_label: str, group_id: str, text: str) -> tuple[str, ConsumerMemberSnapshot]:
    return group_id, _consumer_member_from_doc(json.loads(text))


def _consumer_member_from_doc(m: dict[str, Any]) -> ConsumerMemberSnapshot:
    def partitions(pairs: list[list[Any]]) -> tuple[tuple[str, int], ...]:
        return tuple((str(topic), int(partition)) for topic, partition in pairs)

    return ConsumerMemberSnapshot(
        **{
            **m,
            "topics": tuple(m["topics"]),
            "assigned": partitions(m["assigned"]),
            "pending_revocation": partitions(m["pending_revocation"]),
            "target": partitions(m["target"]),
            "assignment_epochs": tuple(
                (str(topic), int(partition), int(epoch))
                for topic, partition, epoch in m.get("assignment_epochs", ())
            ),
            "classic_protocols": tuple((name, _unb64(meta)) for name, meta in m.get("classic_protocols", ())),
            "resources": tuple((str(name), int(count)) for name, count in m.get("resources", ())),
            "metadata": _unb64(m.get("metadata", "")),
        }
    )


def _consumer_group_from_json(
    group_id: str, text: str, members: Iterable[ConsumerMemberSnapshot]
) -> ConsumerGroupSnapshot:
    doc: dict[str, Any] = json.loads(text)
    if "members" in doc:
        raise ValueError("its members are still in its document: they could not be moved to rows")
    return ConsumerGroupSnapshot(
        group_id=group_id,
        group_epoch=doc["group_epoch"],
        assignment_epoch=doc["assignment_epoch"],
        protocol_type=str(doc.get("protocol_type", "consumer")),
        members=tuple(members),
    )


def _members_in_rows(db: sqlite3.Connection) -> None:
    """Schema 1 to 2: each consumer group's members, kept in its document, into rows."""
    for group_id, text in db.execute("SELECT group_id, document FROM consumer_groups").fetchall():
        try:
            doc = json.loads(text)
            members = [(group_id, str(m["member_id"]), json.dumps(m)) for m in doc.pop("members", ())]
        except _UNREADABLE:
            continue  # left as it is: loading it names it
        db.executemany(
            "INSERT OR REPLACE INTO consumer_group_members (group_id, member_id, document) VALUES (?, ?, ?)",
            members,
        )
        db.execute("UPDATE consumer_groups SET document = ? WHERE group_id = ?", (json.dumps(doc), group_id))


def _topic(name: Any, partitions: Any, topic_id: Any) -> Topic:
    valid_id = isinstance(topic_id, bytes) and len(topic_id) == 16
    if not (isinstance(name, str) and type(partitions) is int and partitions >= 1 and valid_id):
        raise ValueError(f"row {(name, partitions, topic_id)!r}")
    return Topic(name=name, partitions=partitions, topic_id=topic_id)


def _offset(
    group_id: Any, topic: Any, partition: Any, offset: Any, leader_epoch: Any, metadata: Any
) -> tuple[str, CommittedOffset]:
    values = (group_id, topic, partition, offset, leader_epoch, metadata)
    if not (
        isinstance(group_id, str)
        and isinstance(topic, str)
        and (metadata is None or isinstance(metadata, str))
    ):
        raise TypeError(f"row {values!r}")
    if not all(type(v) is int for v in (partition, offset, leader_epoch)):
        raise TypeError(f"row {values!r}")
    return group_id, CommittedOffset(
        topic=topic, partition=partition, offset=offset, leader_epoch=leader_epoch, metadata=metadata
    )


def _acl(
    name: Any,
    resource_type: Any,
    pattern_type: Any,
    principal: Any,
    host: Any,
    operation: Any,
    permission: Any,
) -> AclBinding:
    if not all(isinstance(v, str) for v in (name, principal, host)):
        raise TypeError(
            f"row {(name, resource_type, pattern_type, principal, host, operation, permission)!r}"
        )
    return AclBinding.of(
        resource_type=int(resource_type),
        name=name,
        pattern_type=int(pattern_type),
        principal=principal,
        host=host,
        operation=int(operation),
        permission=int(permission),
    )


def _acl_row(b: AclBinding) -> tuple[int, str, int, str, str, int, int]:
    return (
        int(b.resource_type),
        b.name,
        int(b.pattern_type),
        b.principal,
        b.host,
        int(b.operation),
        int(b.permission),
    )


def _quota_entity_json(entity: QuotaEntity) -> str:
    """A client quota entity as stored: ``{"client-id": null, "user": "alice"}`` (null: the
    default), keys sorted, so that one entity is always one text."""
    return json.dumps(dict(entity.parts()), sort_keys=True)


def _client_quota(entity: Any, key: Any, value: Any) -> QuotaChange:
    parts = json.loads(entity)
    if not (isinstance(parts, dict) and isinstance(key, str) and isinstance(value, float)):
        raise TypeError(f"row {(entity, key, value)!r}")
    if not all(isinstance(n, str | None) for n in parts.values()):
        raise TypeError(f"row {(entity, key, value)!r}")
    check_quota_value(key, value)
    return QuotaChange(QuotaEntity.of(parts.items()), key, value)


def _group_config(group_id: Any, key: Any, value: Any) -> tuple[str, str, int]:
    if not (isinstance(group_id, str) and key in GROUP_CONFIG_KEYS and type(value) is int and value > 0):
        raise TypeError(f"row {(group_id, key, value)!r}")
    return group_id, key, value


def _read(marker: Path) -> str:
    try:
        return marker.read_text(encoding="utf-8").strip() or "empty"
    except OSError as exc:
        return f"unreadable: {exc}"


def _set_aside(database: Path, marker: Path) -> None:
    """Rename the database (and its WAL files) out of the way, and forget that state existed."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm")):
        if path.exists():
            aside = path.with_name(f"{path.name}.set-aside-{stamp}")
            path.rename(aside)
            log.warning("fresh start: %s kept aside as %s", path, aside.name)
    marker.unlink(missing_ok=True)


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
    """The coordinator's state under a data directory (``<data_dir>/coordinator.sqlite3``).

    :param fresh_start: start with empty state even though the directory held state whose
        database is missing, empty or damaged; the old database is kept aside (renamed with a
        ``.set-aside-<time>`` suffix), never deleted.
    :raises CoordinatorStartError: the directory is in use, not writable, or holds state that
        cannot be read (each with one line naming the file and what to do).
    """

    def __init__(self, data_dir: Path, *, fresh_start: bool = False) -> None:
        self._lock = _lock_data_dir(data_dir)
        self.path = data_dir / DATABASE_NAME
        self.problems: list[str] = []  # rows skipped while loading, in words
        marker = data_dir / MARKER_NAME
        try:
            if fresh_start:
                _set_aside(self.path, marker)
            held_state = marker.exists()
            if held_state and (not self.path.exists() or self.path.stat().st_size == 0):
                raise CoordinatorStartError(
                    f"{self.path} is {'missing' if not self.path.exists() else 'empty'}, but data directory "
                    f"{data_dir} held a coordinator's state ({marker.name}: {_read(marker)}): restore the "
                    f"file from a backup, or start afresh with fresh_start (serve --fresh-start)"
                )
            # The event loop thread is the only writer; check_same_thread=False lets the
            # embedded coordinator open it on the caller's thread first.
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            damage = self._db.execute("PRAGMA quick_check").fetchone()[0]
            if damage != "ok":
                raise sqlite3.DatabaseError(damage)
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except CoordinatorStartError:
            self._lock.close()
            raise
        except sqlite3.DatabaseError as exc:
            self._lock.close()
            raise CoordinatorStartError(
                f"{self.path} is damaged ({exc}): restore it from a backup, or start afresh with "
                "fresh_start (serve --fresh-start), which keeps the damaged file aside"
            ) from exc
        except (OSError, sqlite3.Error) as exc:
            self._lock.close()
            raise CoordinatorStartError(
                f"cannot use data directory {data_dir}: {exc}; check that it is writable and "
                "not used by another coordinator"
            ) from exc
        if row is None:
            if held_state:
                self.close()
                raise CoordinatorStartError(
                    f"{self.path} has none of the coordinator's tables, but data directory {data_dir} "
                    f"held a coordinator's state ({marker.name}: {_read(marker)}): restore the file "
                    "from a backup, or start afresh with fresh_start (serve --fresh-start)"
                )
            self._db.execute(
                "INSERT INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(_SCHEMA_VERSION),),
            )
        elif int(row[0]) > _SCHEMA_VERSION:
            self.close()
            raise CoordinatorStartError(
                f"{self.path} was written by a newer coordinator-api (schema {row[0]}); "
                "upgrade coordinator-api to read it"
            )
        elif int(row[0]) < _SCHEMA_VERSION:
            self._db.execute("BEGIN IMMEDIATE")
            _members_in_rows(self._db)
            version = str(_SCHEMA_VERSION)
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
            self._db.execute("COMMIT")
        if not held_state:
            created = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
            marker.write_text(f"created {created}, schema {_SCHEMA_VERSION}\n", encoding="utf-8")

    def load_consumer_groups(self) -> list[ConsumerGroupSnapshot]:
        """The consumer groups of the incremental protocol a previous run stored."""
        members: dict[str, list[ConsumerMemberSnapshot]] = {}
        rows = self._db.execute(
            "SELECT member_id || ' of consumer group ' || group_id, group_id, document "
            "FROM consumer_group_members ORDER BY group_id, member_id"
        )
        for group_id, member in self._readable("member", rows, _consumer_member_row):
            members.setdefault(group_id, []).append(member)
        rows = self._db.execute("SELECT group_id, document FROM consumer_groups ORDER BY group_id")
        return list(
            self._readable(
                "consumer group", rows, lambda g, text: _consumer_group_from_json(g, text, members.get(g, ()))
            )
        )

    def _readable(
        self, what: str, rows: Iterable[tuple[Any, ...]], read: Callable[..., Any]
    ) -> Iterator[Any]:
        """``read(*row)`` for each row; a row that cannot be read is skipped, with a warning."""
        for row in rows:
            try:
                yield read(*row)
            except _UNREADABLE as exc:
                problem = f"{self.path}: {what} {row[0]!r} cannot be read and is skipped ({exc!r})"
                log.warning("%s", problem)
                self.problems.append(problem)

    def load(
        self,
    ) -> tuple[list[Topic], list[GroupSnapshot], list[tuple[str, CommittedOffset]]]:
        db = self._db
        topics = list(
            self._readable(
                "topic", db.execute("SELECT name, partitions, topic_id FROM topics ORDER BY name"), _topic
            )
        )
        groups = list(
            self._readable(
                "group",
                db.execute("SELECT group_id, metadata FROM groups ORDER BY group_id"),
                _group_from_json,
            )
        )
        offsets = list(
            self._readable(
                "committed offset of group",
                db.execute(
                    "SELECT group_id, topic, partition, committed_offset, leader_epoch, metadata "
                    "FROM offsets ORDER BY group_id, topic, partition"
                ),
                _offset,
            )
        )
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
                    db.executemany(
                        "INSERT OR REPLACE INTO consumer_group_members (group_id, member_id, document) "
                        "VALUES (?, ?, ?)",
                        [(write.group_id, m.member_id, _consumer_member_to_json(m)) for m in write.members],
                    )
                    db.executemany(
                        "DELETE FROM consumer_group_members WHERE group_id = ? AND member_id = ?",
                        [(write.group_id, member_id) for member_id in write.left],
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
                elif isinstance(write, OffsetsExpired | OffsetsDeleted):
                    db.executemany(
                        "DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                        [(write.group_id, topic, partition) for topic, partition in write.partitions],
                    )
                elif isinstance(write, ConsumerGroupDowngraded):
                    db.execute("DELETE FROM consumer_groups WHERE group_id = ?", (write.group_id,))
                    db.execute("DELETE FROM consumer_group_members WHERE group_id = ?", (write.group_id,))
                elif isinstance(write, TopicRemoved):
                    db.execute("DELETE FROM topics WHERE name = ?", (write.name,))
                elif isinstance(write, GroupDeleted):
                    db.execute("DELETE FROM groups WHERE group_id = ?", (write.group_id,))
                    db.execute("DELETE FROM consumer_groups WHERE group_id = ?", (write.group_id,))
                    db.execute("DELETE FROM consumer_group_members WHERE group_id = ?", (write.group_id,))
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

    def load_acls(self) -> list[AclBinding]:
        """The ACLs stored (a row that is not a valid binding is skipped, with a warning)."""
        rows = self._db.execute(
            "SELECT name, resource_type, pattern_type, principal, host, operation, permission FROM acls "
            "ORDER BY resource_type, name, pattern_type, principal, host, operation, permission"
        )
        return list(self._readable("ACL on resource", rows, _acl))

    def change_acls(self, added: Iterable[AclBinding], removed: Iterable[AclBinding]) -> None:
        """Store ACLs added and forget ACLs removed, in one transaction, synced to disk before
        it returns (the caller acknowledges the change after)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT OR IGNORE INTO acls (resource_type, name, pattern_type, principal, host, operation, "
                "permission) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [_acl_row(b) for b in added],
            )
            db.executemany(
                "DELETE FROM acls WHERE resource_type = ? AND name = ? AND pattern_type = ? "
                "AND principal = ? AND host = ? AND operation = ? AND permission = ?",
                [_acl_row(b) for b in removed],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def load_client_quotas(self) -> list[QuotaChange]:
        """The client quotas stored, each as the change that sets it (a row that cannot be read
        is skipped, with a warning)."""
        rows = self._db.execute("SELECT entity, key, value FROM client_quotas ORDER BY entity, key")
        return list(self._readable("client quota of entity", rows, _client_quota))

    def change_client_quotas(self, changes: Iterable[QuotaChange]) -> None:
        """Store quotas set (a value) and forget quotas removed (None), in one transaction,
        synced to disk before it returns (the caller acknowledges the change after)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            for change in changes:
                entity = _quota_entity_json(change.entity)
                if change.value is None:
                    db.execute("DELETE FROM client_quotas WHERE entity = ? AND key = ?", (entity, change.key))
                else:
                    db.execute(
                        "INSERT OR REPLACE INTO client_quotas (entity, key, value) VALUES (?, ?, ?)",
                        (entity, change.key, change.value),
                    )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def load_group_configs(self) -> dict[str, dict[str, int]]:
        """The groups' own configs stored, by group id (a row that cannot be read is skipped,
        with a warning)."""
        rows = self._db.execute("SELECT group_id, key, value FROM group_configs ORDER BY group_id, key")
        stored: dict[str, dict[str, int]] = {}
        for group_id, key, value in self._readable("config of group", rows, _group_config):
            stored.setdefault(group_id, {})[key] = value
        return stored

    def set_group_configs(self, group_id: str, values: Mapping[str, int]) -> None:
        """Make ``values`` the configs stored for ``group_id`` (none: forget them), in one
        transaction, synced to disk before it returns (the caller acknowledges the change after)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM group_configs WHERE group_id = ?", (group_id,))
            db.executemany(
                "INSERT INTO group_configs (group_id, key, value) VALUES (?, ?, ?)",
                [(group_id, key, value) for key, value in sorted(values.items())],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        self._db.close()
        self._lock.close()  # closing the file releases the lock
