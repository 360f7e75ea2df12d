"""A data directory never loses state silently: a database that is missing, empty, without its
tables or damaged where state existed stops the coordinator with one line naming the file (a
fresh start must be asked for, and keeps the old file aside); a stored row that cannot be read
is skipped with a warning, and the rest is served; ``coordinator-api data check`` reports it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

from coordinator_api import CoordinatorConfig, EmbeddedCoordinator
from coordinator_api._errors import CoordinatorStartError
from coordinator_api.server._store import DATABASE_NAME, MARKER_NAME

CONFIG = CoordinatorConfig(initial_rebalance_delay_ms=0)


def with_offsets(data_dir: Path, groups: dict[str, int]) -> None:
    """Run a coordinator on ``data_dir`` and commit, for each group, offset N of t/0."""
    with EmbeddedCoordinator(config=CONFIG, data_dir=data_dir, topics={"t": 4}) as coordinator:
        for group, offset in groups.items():
            consumer = KafkaConsumer(bootstrap_servers=coordinator.bootstrap_servers, group_id=group)
            try:
                consumer.assign([TopicPartition("t", 0)])
                consumer.commit({TopicPartition("t", 0): OffsetAndMetadata(offset, "", -1)})
            finally:
                consumer.close()


def committed(bootstrap: str, group: str) -> dict[TopicPartition, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {tp: om.offset for tp, om in admin.list_group_offsets({group: None})[group].items()}
    finally:
        admin.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coordinator_api", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("damage", ["emptied", "deleted", "replaced"])
def test_a_lost_database_where_state_existed_is_an_error_until_a_fresh_start_is_asked_for(
    tmp_path: Path, damage: str
) -> None:
    with_offsets(tmp_path, {"readers": 42})
    database = tmp_path / DATABASE_NAME
    assert (tmp_path / MARKER_NAME).read_text().startswith("created ")
    if damage == "emptied":
        database.write_bytes(b"")
    elif damage == "deleted":
        database.unlink()
    else:  # another, valid SQLite file without the coordinator's tables
        database.unlink()
        with sqlite3.connect(database) as other:
            other.execute("CREATE TABLE notes (text TEXT)")
    with pytest.raises(CoordinatorStartError, match="held a coordinator's state") as caught:
        EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path).start()
    assert str(database) in str(caught.value) and "fresh_start" in str(caught.value)
    served = cli("serve", "--port", "0", "--data-dir", str(tmp_path))
    assert served.returncode == 2 and len(served.stderr.strip().splitlines()) == 1, served.stderr
    assert "--fresh-start" in served.stderr
    # Asked for: the old file is kept aside, and the coordinator starts empty.
    with EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path, fresh_start=True) as coordinator:
        assert committed(coordinator.bootstrap_servers, "readers") == {}
    kept = [p.name for p in tmp_path.iterdir() if ".set-aside-" in p.name]
    assert (damage == "deleted") == (not kept), kept
    with EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path):  # and from then on, as usual
        pass


def test_a_damaged_database_is_named_with_what_to_do(tmp_path: Path) -> None:
    with_offsets(tmp_path, {f"group-{i:03d}": i for i in range(300)})  # several pages of rows
    database = tmp_path / DATABASE_NAME
    data = bytearray(database.read_bytes())
    assert len(data) > 4 * 4096
    data[2 * 4096 : len(data) - 4096] = b"\xa5" * (len(data) - 3 * 4096)  # garble the middle
    database.write_bytes(bytes(data))
    with pytest.raises(CoordinatorStartError, match=rf"{database} is damaged .*restore it from a backup"):
        EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path).start()
    checked = cli("data", "check", str(tmp_path))
    assert checked.returncode == 2 and "is damaged" in checked.stderr
    assert len(checked.stderr.strip().splitlines()) == 1, checked.stderr


def test_unreadable_rows_are_skipped_with_a_warning_and_the_rest_is_served(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with_offsets(tmp_path, {"good": 7, "typed-wrong": 8})
    with sqlite3.connect(tmp_path / DATABASE_NAME) as db:
        db.execute("INSERT INTO groups (group_id, metadata) VALUES ('broken-json', '{not json')")
        db.execute("INSERT INTO groups (group_id, metadata) VALUES ('missing-keys', ?)", (json.dumps({}),))
        db.execute("UPDATE offsets SET partition = 'zero' WHERE group_id = 'typed-wrong'")
    assert cli("data", "check", str(tmp_path)).returncode == 1
    checked = cli("data", "check", str(tmp_path))
    assert "2 classic group(s)" not in checked.stdout  # broken ones are not counted
    skipped = [line for line in checked.stdout.splitlines() if line.startswith("  skipped: ")]
    assert len(skipped) == 3, checked.stdout
    assert any("group 'broken-json'" in s for s in skipped) and any("'typed-wrong'" in s for s in skipped)
    with EmbeddedCoordinator(config=CONFIG, data_dir=tmp_path) as coordinator:
        assert committed(coordinator.bootstrap_servers, "good") == {TopicPartition("t", 0): 7}
        assert committed(coordinator.bootstrap_servers, "typed-wrong") == {}  # skipped, no error
    warned = [r.getMessage() for r in caplog.records if "cannot be read and is skipped" in r.getMessage()]
    assert len(warned) == 3


def test_data_check_of_a_healthy_directory(tmp_path: Path) -> None:
    with_offsets(tmp_path, {"a": 1, "b": 2})
    checked = cli("data", "check", str(tmp_path))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip().endswith(
        "1 topic(s), 0 classic group(s), 0 consumer group(s), 2 committed offset(s), 0 ACL(s), "
        "0 client quota(s), 0 group(s) with configs"
    )


def test_data_check_reads_acls_quotas_and_group_configs_as_the_coordinator_does(tmp_path: Path) -> None:
    with_offsets(tmp_path, {"a": 1})
    with sqlite3.connect(tmp_path / DATABASE_NAME) as db:
        db.execute("INSERT INTO group_configs VALUES ('tuned', 'consumer.session.timeout.ms', 50000)")
        db.execute("INSERT INTO group_configs VALUES ('tuned', 'consumer.heartbeat.interval.ms', 'abc')")
        db.execute("INSERT INTO group_configs VALUES ('odd', 'share.session.timeout.ms', 50000)")
        db.execute("INSERT INTO client_quotas VALUES ('{\"user\": \"alice\"}', 'request_percentage', 50.0)")
    checked = cli("data", "check", str(tmp_path))
    assert checked.returncode == 1, checked.stderr
    assert "0 ACL(s), 1 client quota(s), 1 group(s) with configs" in checked.stdout, checked.stdout
    skipped = [line for line in checked.stdout.splitlines() if line.startswith("  skipped: ")]
    assert len(skipped) == 2 and all("config of group" in s for s in skipped), checked.stdout
