"""The documentation's code runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.structs import OffsetAndMetadata

from coordinator_api import EmbeddedCoordinator
from coordinator_api.testing import KafkaCluster

DOCS = Path(__file__).resolve().parent.parent / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.DOTALL)


def test_quickstart_is_a_working_coordinator_in_under_40_lines(tmp_path: Path) -> None:
    (code,) = python_blocks("quickstart.md")
    assert len(code.strip().splitlines()) < 40
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2
    owned = sorted(int(s) for line in lines for s in re.findall(r"\d+", line.split("owns shards", 1)[1]))
    assert owned == list(range(8))
    assert all(" generation 1 " in line for line in lines)


def run_block(path: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    path.write_text(code)
    return subprocess.run(
        [sys.executable, str(path), *args], capture_output=True, text=True, timeout=180, check=False
    )


def committed(bootstrap_servers: str, group_id: str) -> dict[tuple[str, int], int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap_servers)
    try:
        offsets = admin.list_group_offsets({group_id: None})[group_id]
    finally:
        admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}


def test_operations_guide_moves_offsets_to_a_kafka_cluster_and_back(
    tmp_path: Path, kafka: KafkaCluster
) -> None:
    move, _cluster_example = python_blocks("operations.md")
    script = tmp_path / "move_offsets.py"
    kafka.create_topic("moving-events", partitions=4)
    with EmbeddedCoordinator(topics={"moving-events": 4}) as embedded:
        source = embedded.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=source)
        try:
            offsets = {
                TopicPartition("moving-events", p): OffsetAndMetadata(10 * p + 1, "", -1) for p in range(4)
            }
            assert all(e.__name__ == "NoError" for e in admin.alter_group_offsets("moving", offsets).values())
        finally:
            admin.close()
        expected = {("moving-events", p): 10 * p + 1 for p in range(4)}

        result = run_block(script, move, "moving", source, kafka.bootstrap_servers)
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == "copied 4 offsets of moving"
        assert committed(kafka.bootstrap_servers, "moving") == expected

    with EmbeddedCoordinator(topics={"moving-events": 4}) as back:  # a fresh one: and back again
        result = run_block(script, move, "moving", kafka.bootstrap_servers, back.bootstrap_servers)
        assert result.returncode == 0, result.stderr
        assert committed(back.bootstrap_servers, "moving") == expected


def test_operations_guide_refuses_to_move_a_group_with_members(tmp_path: Path) -> None:
    move, _cluster_example = python_blocks("operations.md")
    with EmbeddedCoordinator(topics={"busy-events": 2}) as source, EmbeddedCoordinator() as target:
        consumer = KafkaConsumer(
            "busy-events",
            bootstrap_servers=source.bootstrap_servers,
            group_id="busy",
            session_timeout_ms=10_000,
        )
        try:
            deadline = time.monotonic() + 60
            while not consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(200)
            assert consumer.assignment()
            result = run_block(
                tmp_path / "move.py", move, "busy", source.bootstrap_servers, target.bootstrap_servers
            )
        finally:
            consumer.close()
    assert result.returncode != 0
    assert "group busy still has 1 member(s)" in result.stderr


def test_operations_guide_kafka_cluster_example_runs(tmp_path: Path) -> None:
    _move, example = python_blocks("operations.md")
    result = run_block(tmp_path / "cluster_example.py", example)
    assert result.returncode == 0, result.stderr


def test_incremental_guide_joins_a_kip848_consumer(tmp_path: Path) -> None:
    example, _migration = python_blocks("incremental.md")
    result = run_block(tmp_path / "incremental.py", example)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "assigned [0, 1, 2, 3]"


def test_incremental_guide_moves_a_group_between_the_protocols_and_back(tmp_path: Path) -> None:
    _example, migration = python_blocks("incremental.md")
    printed = re.search(
        r"which prints\n\n```text\n(.*?)```", (DOCS / "incremental.md").read_text(), re.DOTALL
    )
    assert printed is not None
    result = run_block(tmp_path / "migration.py", migration)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == printed[1].splitlines()
    assert not result.stderr, result.stderr  # no partition was lost on the way


def test_consumer_guide_runs_a_kip848_group_without_a_barrier(tmp_path: Path) -> None:
    example = next(code for code in python_blocks("consumer.md") if 'group_protocol="consumer"' in code)
    result = run_block(tmp_path / "kip848_members.py", example)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "first assigned [0, 1, 2, 3]",
        "first revoked [2, 3]",
        "second assigned [2, 3]",
        "second revoked [2, 3]",
        "first assigned [2, 3]",
        "first revoked [0, 1, 2, 3]",
    ]


def test_testing_guide_commands_select_tests() -> None:
    """Each command of docs/testing.md, run as written from the repository's root but only
    collecting, selects some tests and no collection error."""
    commands = re.findall(r"```sh\n(.*?)```", (DOCS / "testing.md").read_text(), re.DOTALL)
    assert len(commands) == 3
    root = DOCS.parent
    for command in commands:
        argv = command.split()
        assert argv[0] == ".venv/bin/pytest", command
        result = subprocess.run(
            [sys.executable, "-m", "pytest", *argv[1:], "--collect-only", "-p", "no:cacheprovider"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, (command, result.stdout[-2000:], result.stderr[-2000:])
        selected = re.search(r"(\d+)(?:/\d+)? tests? (?:collected|selected)", result.stdout)
        assert selected is not None and int(selected[1]) > 0, (command, result.stdout[-2000:])


def test_coordinator_guide_embedded_example_runs(tmp_path: Path) -> None:
    example = python_blocks("coordinator.md")[0]
    result = run_block(tmp_path / "embedded.py", example + "    print(bootstrap)\n")
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"127\.0\.0\.1:\d+\n", result.stdout)


def test_coordinator_guide_own_event_loop_example_runs_on_asyncio_and_on_uvloop(tmp_path: Path) -> None:
    example = python_blocks("coordinator.md")[1]
    on_uvloop = example.replace("asyncio.run(main())  # or uvloop.run(main())", "uvloop.run(main())")
    assert on_uvloop != example
    for name, code in (("asyncio", example), ("uvloop", "import uvloop\n" + on_uvloop)):
        result = run_block(tmp_path / f"own_loop_{name}.py", code)
        assert result.returncode == 0, (name, result.stderr)
        assert re.fullmatch(r"coordinator on 127\.0\.0\.1:\d+\n", result.stdout), (name, result.stdout)


def test_coordinator_guide_network_thread_example_prints_what_it_says(tmp_path: Path) -> None:
    example = python_blocks("coordinator.md")[2]
    result = run_block(tmp_path / "network_thread.py", example)
    assert result.returncode == 0, result.stderr
    said = re.search(
        r"prints `(\[\('orders'.*?\])` once the thread", (DOCS / "coordinator.md").read_text(), re.DOTALL
    )
    assert said is not None
    assert result.stdout == " ".join(said.group(1).split()) + "\n"


def test_coordinator_guide_membership_events_example_prints_what_it_says(tmp_path: Path) -> None:
    example = python_blocks("coordinator.md")[3]
    result = run_block(tmp_path / "membership_events.py", example)
    assert result.returncode == 0, result.stderr
    page = (DOCS / "coordinator.md").read_text()
    said = re.search(r"prints `(True .*?)` and `(\['joined'.*?)`\.", page, re.DOTALL)
    assert said is not None
    assert result.stdout.splitlines() == [" ".join(line.split()) for line in said.groups()]


def test_coordinator_guide_listeners_example_runs(tmp_path: Path) -> None:
    example = python_blocks("coordinator.md")[4]
    result = run_block(tmp_path / "listeners.py", example)
    assert result.returncode == 0, result.stderr
    internal, replicas = result.stdout.split()
    assert internal != replicas
    assert re.fullmatch(r"127\.0\.0\.1:\d+", internal) and re.fullmatch(r"127\.0\.0\.1:\d+", replicas)


def test_leader_guide_runs_as_written(tmp_path: Path) -> None:
    election, fence, incremental = python_blocks("leader.md")
    result = run_block(tmp_path / "election.py", election)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "elected, epoch 1",
        "stepped down",
        "[(1, 'record 0'), (1, 'record 1'), (1, 'record 2')]",
    ]
    result = run_block(tmp_path / "fence.py", fence)
    assert result.returncode == 0, result.stderr
    refused, rows = result.stdout.splitlines()
    assert refused.startswith("refused: write with leadership epoch 1 refused: epoch 2 has already written")
    assert rows == "{'owner': 'node-2'}"
    result = run_block(tmp_path / "incremental.py", incremental)
    assert result.returncode == 0, result.stderr
    printed = re.search(r"which prints\n\n```text\n(.*?)```", (DOCS / "leader.md").read_text(), re.DOTALL)
    assert printed is not None and result.stdout == printed.group(1)


def test_asyncio_guide_runs_as_written(tmp_path: Path) -> None:
    (code,) = python_blocks("asyncio.md")
    result = run_block(tmp_path / "service.py", code)
    assert result.returncode == 0, result.stderr
    printed = re.search(r"which prints\n\n```text\n(.*?)```", (DOCS / "asyncio.md").read_text(), re.DOTALL)
    assert printed is not None and result.stdout == printed.group(1)


def test_streams_guide_runs_as_written(tmp_path: Path) -> None:
    (code,) = python_blocks("streams.md")
    result = run_block(tmp_path / "streams.py", code)
    assert result.returncode == 0, result.stderr
    printed = re.search(r"It prints\n\n```\n(.*?)```", (DOCS / "streams.md").read_text(), re.DOTALL)
    assert printed is not None and result.stdout == printed.group(1)


def test_the_runnable_examples_pass_mypy_strict_as_user_code(tmp_path: Path) -> None:
    # As a user's project would check them, with --strict: the packages' sources and their
    # py.typed, found as an installed (not editable) coordinator-api puts them on the path.
    root = DOCS.parent
    files = []
    for page, count in (
        ("quickstart.md", 1),
        ("leader.md", 3),
        ("asyncio.md", 1),
        ("streams.md", 1),
        ("spark.md", 1),
    ):
        blocks = python_blocks(page)
        assert len(blocks) == count, page
        for index, code in enumerate(blocks):
            path = tmp_path / f"{page.removesuffix('.md')}_{index}.py"
            path.write_text(code)
            files.append(str(path))
    # Errors inside the packages are theirs (mypy --strict of the project checks them); from
    # site-packages mypy would not report them either.
    ours = ("coordinator_api", "coordinator_leader", "coordinator_streams", "coordinator_spark", "pyspark")
    silent = ",".join(f"{name}.*" for name in ours)
    (tmp_path / "mypy.ini").write_text(f"[mypy]\nstrict = True\n\n[mypy-{silent}]\nfollow_imports = silent\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--no-incremental", *files],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": f"{root}{os.pathsep}{root / 'plugins'}"},
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_spark_guide_runs_as_written(tmp_path: Path) -> None:
    (code,) = python_blocks("spark.md")
    result = run_block(tmp_path / "spark_example.py", code)
    assert result.returncode == 0, result.stderr
    printed = re.search(r"and prints\n\n```\n(.*?)```", (DOCS / "spark.md").read_text(), re.DOTALL)
    assert printed is not None
    # Progress lines come as units finish (how many depends on timing); the rest is exact.
    lines = result.stdout.splitlines()
    assert lines[-4:] == printed.group(1).splitlines()
    assert all(re.fullmatch(r"[0-3]/3 done", line) for line in lines[:-3])


def test_readme_embedded_example_runs(tmp_path: Path) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", (DOCS.parent / "README.md").read_text(), re.DOTALL)
    result = run_block(tmp_path / "readme.py", example)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(r"127\.0\.0\.1:\d+\n", result.stdout)


# Every Python block of the documentation, by page: how many it has, and the tests that run them.
# A block added to a page fails the inventory below until a test runs it and this table says so.
PYTHON_BLOCKS_RUN_BY = {
    "README.md": (1, "tests/test_docs.py::test_readme_embedded_example_runs"),
    "docs/asyncio.md": (1, "tests/test_docs.py::test_asyncio_guide_runs_as_written"),
    "docs/consumer.md": (
        2,
        "tests/test_docs.py::test_consumer_guide_runs_a_kip848_group_without_a_barrier, "
        "tests/kafka/test_consumer_on_kafka.py (the Kafka-cluster example)",
    ),
    "docs/coordinator.md": (
        5,
        "tests/test_docs.py::test_coordinator_guide_embedded_example_runs, "
        "tests/test_docs.py::test_coordinator_guide_own_event_loop_example_runs_on_asyncio_and_on_uvloop, "
        "tests/test_docs.py::test_coordinator_guide_network_thread_example_prints_what_it_says, "
        "tests/test_docs.py::test_coordinator_guide_membership_events_example_prints_what_it_says, "
        "tests/test_docs.py::test_coordinator_guide_listeners_example_runs",
    ),
    "docs/incremental.md": (
        2,
        "tests/test_docs.py::test_incremental_guide_joins_a_kip848_consumer, "
        "tests/test_docs.py::test_incremental_guide_moves_a_group_between_the_protocols_and_back",
    ),
    "docs/leader.md": (3, "tests/test_docs.py::test_leader_guide_runs_as_written"),
    "docs/operations.md": (
        2,
        "tests/test_docs.py::test_operations_guide_moves_offsets_to_a_kafka_cluster_and_back, "
        "tests/test_docs.py::test_operations_guide_kafka_cluster_example_runs",
    ),
    "docs/payloads.md": (5, "tests/test_payload.py::test_the_guide_examples_run"),
    "docs/plugins.md": (11, "tests/plugins/test_plugin_guide.py (test_every_example_is_checked_here)"),
    "docs/quickstart.md": (
        1,
        "tests/test_docs.py::test_quickstart_is_a_working_coordinator_in_under_40_lines",
    ),
    "docs/spark.md": (1, "tests/test_docs.py::test_spark_guide_runs_as_written"),
    "docs/streams.md": (1, "tests/test_docs.py::test_streams_guide_runs_as_written"),
}


def test_every_python_block_is_run_by_a_test() -> None:
    root = DOCS.parent
    found = {}
    for path in (*sorted(DOCS.glob("*.md")), root / "README.md"):
        count = len(re.findall(r"^ *```python\s*$", path.read_text(), re.MULTILINE))
        if count:
            found[str(path.relative_to(root))] = count
    assert found == {page: count for page, (count, _) in PYTHON_BLOCKS_RUN_BY.items()}, (
        "a page's Python blocks changed: run the new ones in a test and update PYTHON_BLOCKS_RUN_BY"
    )
    for runners in (tests for _, tests in PYTHON_BLOCKS_RUN_BY.values()):
        for runner in runners.split(", "):
            path, _, name = runner.split(" ")[0].partition("::")
            source = (root / path).read_text()
            assert not name or f"def {name}(" in source, runner
