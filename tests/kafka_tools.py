"""Apache Kafka's own command-line tools, run as real JVM processes against a coordinator.

``consumer_groups(bootstrap, "--list")`` runs ``kafka-consumer-groups`` (its main class,
``ConsumerGroupCommand``) from the jars of :func:`coordinator_api.testing.kafka_classpath`, the
Kafka release the suite tests against, and returns what it printed; :func:`table` reads the
fixed-width tables it prints. :func:`probe_commit` commits as a given member identity over a raw
connection, to show what the coordinator says to a zombie; :func:`raw_group` holds a group of
any protocol type open.
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka.protocol.consumer import (
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

from coordinator_api.testing import kafka_classpath
from coordinator_api.testing import run_kafka_tool as run_tool
from coordinator_api.testing._kafka_cluster import TOOL_JVM_OPTIONS as JVM_OPTIONS
from coordinator_api.testing._kafka_cluster import TOOL_TIMEOUT_S

CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"  # kafka-topics


@dataclass(frozen=True)
class ToolRun:
    """What one run of a tool printed: its tables go to stdout, its messages to either."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __str__(self) -> str:
        return f"$ {' '.join(self.argv)}\n(exit {self.returncode})\n{self.stdout}{self.stderr}"


def consumer_groups(bootstrap: str, *args: str, timeout: float = TOOL_TIMEOUT_S) -> ToolRun:
    """Run ``kafka-consumer-groups --bootstrap-server <bootstrap> <args>`` and wait for it."""
    argv = ("--bootstrap-server", bootstrap, *args)
    done = run_tool(CONSUMER_GROUP_COMMAND, *argv, timeout=timeout)
    return ToolRun(("kafka-consumer-groups", *argv), done.returncode, done.stdout, done.stderr)


def kafka_topics(bootstrap: str, *args: str, timeout: float = TOOL_TIMEOUT_S) -> ToolRun:
    """Run ``kafka-topics --bootstrap-server <bootstrap> <args>`` and wait for it."""
    argv = ("--bootstrap-server", bootstrap, *args)
    done = run_tool(TOPIC_COMMAND, *argv, timeout=timeout)
    return ToolRun(("kafka-topics", *argv), done.returncode, done.stdout, done.stderr)


def call(bootstrap: str, request: Any, response_cls: Any) -> Any:
    """Send one request on a connection of its own (to the first of the ``bootstrap`` servers)
    and return the answer."""
    with _connect(bootstrap.split(",", maxsplit=1)[0]) as sock:
        return _call(sock, request, response_cls)


def run_kafka_configs_lines(
    lines: list[str], bootstrap: str, folder: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run a page's ``kafka-configs.sh`` lines as written, one after the other, against
    ``bootstrap`` (for the page's ``127.0.0.1:9092``). Kafka's ``bin/kafka-configs.sh`` runs
    ConfigCommand; here a script of that name in ``folder`` does, from the Kafka release the
    suite tests against."""
    assert all(shlex.split(line)[0] == "kafka-configs.sh" for line in lines), lines
    script = folder / "kafka-configs.sh"
    java = ["java", *JVM_OPTIONS, "-cp", kafka_classpath(), CONFIG_COMMAND]
    script.write_text(f'#!/bin/sh\nexec {shlex.join(java)} "$@"\n')
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    return [
        subprocess.run(
            ["sh", "-e", "-c", line.replace("127.0.0.1:9092", bootstrap)],
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            env=env,
            check=False,
        )
        for line in lines
    ]


# A column title: upper-case words joined by '-', or '#MEMBERS'; 'COORDINATOR (ID)' is one title.
_TITLE = re.compile(r"#?[A-Z][A-Z-]*(?: \([A-Z]+\))?")


def table(output: str) -> list[dict[str, str]]:
    """The rows of every table in ``output`` whose header starts with GROUP, as dicts.

    The tool pads each column to its widest value, so a row's fields start where the header's
    titles do; a field may hold spaces (the coordinator column does).
    """
    rows: list[dict[str, str]] = []
    header: list[tuple[str, int]] | None = None
    for line in output.splitlines():
        if line.startswith("GROUP "):
            header = [(m.group(), m.start()) for m in _TITLE.finditer(line)]
        elif not line.strip():
            header = None  # a blank line ends a table
        elif header is not None:
            ends = [start for _, start in header[1:]] + [len(line)]
            rows.append({title: line[start:end].strip() for (title, start), end in zip(header, ends)})
    return rows


def probe_commit(bootstrap: str, group: str, member_id: str, generation: int, topic: str = "events") -> int:
    """Commit offset 999 of ``topic`` partition 0 as the given member of ``group``; return the
    partition's error code (0 if the coordinator accepted it)."""
    partition_cls = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition
    request = OffsetCommitRequest(
        version=7,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    partition_cls(
                        partition_index=0,
                        committed_offset=999,
                        committed_leader_epoch=-1,
                        committed_metadata="",
                    )
                ],
            )
        ],
    )
    with _connect(bootstrap) as sock:
        response = _call(sock, request, OffsetCommitResponse)
    return int(response.topics[0].partitions[0].error_code)


@contextmanager
def raw_group(bootstrap: str, group: str, protocol_type: str, session_ms: int = 300_000) -> Iterator[str]:
    """A one-member group of ``protocol_type`` (joined and synced: Stable) for as long as the
    block runs; yields the member id. The session is long, so no heartbeats are needed."""
    with _connect(bootstrap) as sock:
        joined = _call(
            sock,
            JoinGroupRequest(
                version=3,  # before KIP-394: the first JoinGroup returns the member id at once
                group_id=group,
                session_timeout_ms=session_ms,
                rebalance_timeout_ms=session_ms,
                member_id="",
                protocol_type=protocol_type,
                protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="spread", metadata=b"")],
            ),
            JoinGroupResponse,
        )
        assert joined.error_code == 0, joined
        synced = _call(
            sock,
            SyncGroupRequest(
                version=2,
                group_id=group,
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                assignments=[
                    SyncGroupRequest.SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"all")
                ],
            ),
            SyncGroupResponse,
        )
        assert synced.error_code == 0, synced
        yield str(joined.member_id)


def _connect(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=30)


def _call(sock: socket.socket, request: Any, response_cls: Any) -> Any:
    """Send one request and read its answer, both through kafka-python's message classes."""
    request.with_header(correlation_id=1, client_id="kafka-tools-probe")
    sock.sendall(bytes(request.encode(header=True, framed=True)))
    size = int.from_bytes(_recv(sock, 4), "big")
    return response_cls.decode(_recv(sock, size), version=request.API_VERSION, header=True)


def _recv(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the coordinator closed the connection")
        data += chunk
    return bytes(data)
