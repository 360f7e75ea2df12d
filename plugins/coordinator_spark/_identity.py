"""Which Spark executor a Python task runs on, found from inside the task.

pyspark's ``TaskContext`` gives the partition, the attempt, ``cpus()`` and ``resources()`` (GPU
addresses and the like) but not the executor id, and ``getLocalProperty`` only carries what the
driver set for the job. What works, in order:

1. ``SPARK_EXECUTOR_ID``, when a deployment exports it;
2. ``SPARK_LOG_URL_STDERR`` (``...&executorId=3&...``), which standalone and local-cluster
   workers set for their executors and the Python workers inherit;
3. the executor JVM's command line (``--executor-id 3 --hostname h -Xmx4g``), an ancestor of the
   Python worker: read through ``/proc`` on Linux, so it also works on YARN and Kubernetes;
4. otherwise the task runs inside the driver (``local[N]``): ``"driver"``.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlparse

__all__ = ["ExecutorIdentity", "executor_identity"]

_MEMORY = re.compile(r"-Xmx(\d+)([kKmMgGtT]?)\Z")
_UNIT_MB = {"": 1 / (1024 * 1024), "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


@dataclass(frozen=True, slots=True)
class ExecutorIdentity:
    """Where a task runs.

    :ivar executor_id: Spark's executor id (``"driver"`` in local mode).
    :ivar host: the executor's host name or address as Spark knows it.
    :ivar memory_mb: the executor JVM's heap limit, 0 when unknown.
    :ivar source: how it was found (``env``, ``log-url``, ``jvm-cmdline`` or ``local``).
    """

    executor_id: str
    host: str
    memory_mb: int
    source: str


def _jvm_command_line(limit: int = 6) -> list[str]:
    """The command line of the nearest ancestor JVM (Linux only; [] elsewhere)."""
    pid = os.getppid()
    for _ in range(limit):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return []
        args = [a.decode(errors="replace") for a in cmdline if a]
        if args and os.path.basename(args[0]) == "java":
            return args
        # The fields after the command name, which is in parentheses and may hold spaces.
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return []
    return []


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args[:-1]):
        if arg == name:
            return args[i + 1]
    return None


def _memory_mb(args: list[str]) -> int:
    for arg in args:
        match = _MEMORY.match(arg)
        if match:
            return int(int(match.group(1)) * _UNIT_MB[match.group(2).lower()])
    return 0


def executor_identity() -> ExecutorIdentity:
    """The executor this process (a pyspark worker) runs on; see the module docstring."""
    jvm = _jvm_command_line()
    host = (
        _option(jvm, "--hostname")
        or os.environ.get("SPARK_LOCAL_HOSTNAME")
        or os.environ.get("SPARK_LOCAL_IP")
        or socket.gethostname()
    )
    memory = _memory_mb(jvm)
    from_env = os.environ.get("SPARK_EXECUTOR_ID")
    if from_env:
        return ExecutorIdentity(from_env, host, memory, "env")
    log_url = os.environ.get("SPARK_LOG_URL_STDERR")
    if log_url:
        found = parse_qs(urlparse(log_url).query).get("executorId")
        if found and found[0]:
            return ExecutorIdentity(found[0], host, memory, "log-url")
    from_jvm = _option(jvm, "--executor-id")
    if from_jvm:
        return ExecutorIdentity(from_jvm, host, memory, "jvm-cmdline")
    return ExecutorIdentity("driver", host, memory, "local")
