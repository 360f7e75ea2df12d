"""A group member process driven by a real Kafka client (kafka-python, librdkafka or Java), or
by this project's ``ConsumerGroupMember`` (``--client ours``).

Run as ``python kafka_member.py --client kafka-python --bootstrap HOST:PORT --name m1 ...``.
It subscribes to a topic in a consumer group and prints one JSON line per ownership change,
written from inside the client's rebalance callbacks (so a revocation is reported before the
member rejoins), plus commit failures when ``--commit-every-ms`` is set. SIGTERM closes the
client gracefully (LeaveGroup); SIGKILL and SIGSTOP are left to the test. With ``--client java``
the process replaces itself with Apache Kafka's Java consumer (JavaMember.java beside this file),
which takes the same options and prints the same lines. ``--group-protocol consumer`` makes the
librdkafka, Java and our member use KIP-848's protocol (the coordinator assigns; ``--remote-assignor``
names its assignor; the topic may then be a regex, "^ev.*"). librdkafka's, Java's and our
ownership lines also carry ``topic_partitions`` ([topic, partition] pairs), for members of several topics.

A kafka-python member always writes the lines of kafka-python's log that show how each join
went to stderr (``JOIN_LOG``; everything with ``KAFKA_MEMBER_DEBUG=1``), so that the harness
can tell kafka-python 3.0.12's join stall (tests/member_processes.py) from a coordinator fault.
``--poll-ms 1 --join-before-metadata 1`` undoes the two workarounds that keep the suite's
members out of that stall, for the test that shows the harness recognises it.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from coordinator_api._signals import stop_event

owned: set[int] = set()
lock = threading.Lock()


# kafka-python's messages for the start of a join attempt, a poll that gave up waiting for it,
# the SyncGroup answer and the join's completion (kafka/coordinator/base.py and consumer.py):
# debug records, so they are let through by message; info and above pass as they are.
JOIN_LOG = frozenset(
    {
        "Disabling heartbeat during join-group",
        "coordinator.poll: timeout in ensure_active_group; returning early",
        "Received SyncGroup response: %s",
        "Enabling heartbeat",
    }
)
LOG_FORMAT = "%(created).3f %(threadName)s %(name)s %(levelname)s %(message)s"


def log_kafka_python_joins(debug: bool) -> None:
    """Write kafka-python's log to stderr: with ``debug`` all of it, else its warnings, infos
    and the debug lines of ``JOIN_LOG`` (the join stall's signature, a few lines per join)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    if debug:
        logging.basicConfig(level=logging.DEBUG, handlers=[handler])
        logging.getLogger("kafka.protocol").setLevel(logging.INFO)
        logging.getLogger("kafka.net").setLevel(logging.INFO)
        return
    handler.addFilter(lambda record: record.levelno >= logging.INFO or record.msg in JOIN_LOG)
    kafka = logging.getLogger("kafka")
    kafka.addHandler(handler)
    kafka.propagate = False
    kafka.setLevel(logging.INFO)
    for name in ("kafka.coordinator", "kafka.coordinator.consumer", "kafka.coordinator.heartbeat"):
        logging.getLogger(name).setLevel(logging.DEBUG)
    # The embedded coordinator keeps no log: every ListOffsets fails, tens of warnings a second.
    logging.getLogger("kafka.consumer.fetcher").setLevel(logging.ERROR)


class PartitionsByNumber(logging.Formatter):
    """Log lines with each (topic id, partition) pair as its partition number: the member's
    machine names partitions by topic id, 16 bytes that would fill the line."""

    PAIR = re.compile(r"""\(b(['"])(?:\\.|(?!\1).)*\1, (\d+)\)""")

    def format(self, record: logging.LogRecord) -> str:
        return self.PAIR.sub(r"\2", super().format(record))


def report(name: str, **fields: Any) -> None:
    print(json.dumps({"t": time.time(), "name": name, **fields}), flush=True)


def change(name: str, kind: str, partitions: list[int], topics: list[tuple[str, int]] | None = None) -> None:
    """Report an ownership change. ``partitions`` are partition numbers (of the one topic most
    tests use); ``topics`` adds the (topic, partition) pairs, for members of several topics."""
    with lock:
        if kind == "assigned":
            owned.update(partitions)
        else:
            owned.difference_update(partitions)
        extra = {"topic_partitions": sorted([t, p] for t, p in topics)} if topics is not None else {}
        report(name, event=kind, partitions=sorted(partitions), owned=sorted(owned), **extra)


def run_kafka_python(args: argparse.Namespace, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    class FollowerOnlyAssignor(RangePartitionAssignor):  # type: ignore[misc]
        """Offers a protocol name only this project's member can assign (a plugin's assignor);
        the test makes that member the leader, so this one never assigns."""

        name = args.assignor

        @classmethod
        def assign(cls, cluster: Any, members: Any) -> Any:
            raise RuntimeError(f"kafka-python was made leader of a {cls.name} group")

    assignors = {
        "range": RangePartitionAssignor,
        "roundrobin": RoundRobinPartitionAssignor,
        "cooperative-sticky": CooperativeStickyAssignor,
    }
    assignors.setdefault(args.assignor, FollowerOnlyAssignor)

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            change(args.name, "revoked", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned: Any) -> None:
            change(args.name, "assigned", [tp.partition for tp in assigned])

        def on_partitions_lost(self, lost: Any) -> None:
            change(args.name, "lost", [tp.partition for tp in lost])

    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        group_instance_id=args.instance_id,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        partition_assignment_strategy=[assignors[args.assignor]],
        enable_auto_commit=False,
        **({"max_poll_interval_ms": args.max_poll_ms} if args.max_poll_ms else {}),
    )
    # Learn the topic's partitions before joining. A kafka-python 3.0.12 leader that joins
    # before its metadata arrives assigns nothing and rejoins when the metadata comes; if a poll
    # times out during that rejoin, the client never completes it (the join stall described in
    # tests/member_processes.py). Waiting for metadata avoids that client bug.
    while not args.join_before_metadata and not consumer.partitions_for_topic(args.topic):
        time.sleep(0.05)
    consumer.subscribe([args.topic], listener=Listener())
    last_commit = 0.0
    commit_error: str | None = None
    counter = 0
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        # The embedded coordinator keeps no log: fetches fail while membership goes on. A short
        # poll timeout (50 ms) makes kafka-python 3.0.12 now and then drop its own SyncGroup
        # answer (its join stall): a longer one makes a poll outlast most joins.
        with contextlib.suppress(KafkaError):
            consumer.poll(timeout_ms=args.poll_ms)
        if args.commit_every_ms and time.monotonic() - last_commit > args.commit_every_ms / 1000:
            last_commit = time.monotonic()
            with lock:
                mine = sorted(owned)
            if mine:
                counter += 1
                offsets = {
                    TopicPartition(args.topic, p): OffsetAndMetadata(counter, args.name, -1) for p in mine
                }
                try:
                    consumer.commit(offsets)
                    error = None
                except KafkaError as exc:
                    error = type(exc).__name__
                if error != commit_error:
                    commit_error = error
                    report(args.name, event="commit", ok=error is None, error=error)
    consumer.close()


def run_confluent(args: argparse.Namespace, stop: threading.Event) -> None:
    from confluent_kafka import Consumer

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "group.protocol": args.group_protocol,
        "enable.auto.commit": False,
        "log_level": args.log_level,
    }
    if args.group_protocol == "classic":
        conf["session.timeout.ms"] = args.session_ms
        conf["heartbeat.interval.ms"] = max(args.session_ms // 6, 100)
        conf["partition.assignment.strategy"] = args.assignor
    elif args.remote_assignor:
        # KIP-848: the coordinator sets the session and heartbeat and assigns on the server;
        # librdkafka refuses the classic settings above with this protocol.
        conf["group.remote.assignor"] = args.remote_assignor
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    consumer = Consumer(conf)
    # KIP-848's consumer protocol is incremental by nature: librdkafka hands out only what changes.
    cooperative = args.assignor == "cooperative-sticky" or args.group_protocol == "consumer"

    def pairs(partitions: Any) -> list[tuple[str, int]]:
        return [(p.topic, p.partition) for p in partitions]

    def on_assign(c: Any, partitions: Any) -> None:
        change(args.name, "assigned", [p.partition for p in partitions], pairs(partitions))
        if cooperative:
            c.incremental_assign(partitions)
        else:
            c.assign(partitions)

    def on_revoke(c: Any, partitions: Any) -> None:
        change(args.name, "revoked", [p.partition for p in partitions], pairs(partitions))
        if cooperative:
            c.incremental_unassign(partitions)
        else:
            c.unassign()

    def on_lost(c: Any, partitions: Any) -> None:
        change(args.name, "lost", [p.partition for p in partitions], pairs(partitions))

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        consumer.poll(0.05)  # errors about the missing log arrive as messages; ignore them
    consumer.close()


def run_ours(args: argparse.Namespace, stop: threading.Event) -> None:
    """This project's ConsumerGroupMember (either protocol), reporting from its callbacks."""
    from coordinator_consumer import ConsumerGroupMember

    from coordinator_api import GroupError

    def record(kind: str) -> Any:
        return lambda ps: change(
            args.name, kind, [p.partition for p in ps], [(p.topic, p.partition) for p in ps]
        )

    # The member's machine, every event and what it led to: a failed wait shows its last lines.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PartitionsByNumber(LOG_FORMAT))
    membership_log = logging.getLogger("coordinator_api.membership")
    membership_log.addHandler(handler)
    membership_log.setLevel(logging.DEBUG)
    incremental = args.group_protocol == "consumer"
    member = ConsumerGroupMember(
        args.group,
        args.bootstrap,
        topics=None if args.topic.startswith("^") else [args.topic],
        pattern=args.topic if args.topic.startswith("^") else None,
        assignor="range" if incremental else args.assignor,
        group_protocol=args.group_protocol,
        remote_assignor=args.remote_assignor if incremental else None,
        group_instance_id=args.instance_id,
        client_id=args.name,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        on_partitions_assigned=record("assigned"),
        on_partitions_revoked=record("revoked"),
        on_partitions_lost=record("lost"),
    )
    parent = os.getppid()
    try:
        while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
            try:
                member.poll(0.05)
            except GroupError as exc:  # reported; the member recovers on a later poll
                print(f"poll: {exc!r}", file=sys.stderr, flush=True)
    finally:
        member.close(timeout=10)


def exec_java(argv: list[str]) -> None:
    """Become Apache Kafka's Java consumer (same pid, so the test's signals reach it)."""
    from coordinator_api.testing import kafka_classpath
    from coordinator_api.testing._jvm import compiled
    from coordinator_api.testing._kafka_cluster import TOOL_JVM_OPTIONS

    kafka = kafka_classpath()
    classes = compiled(Path(__file__).with_name("JavaMember.java"), kafka)
    os.execvp(
        "java", ["java", *TOOL_JVM_OPTIONS, "-cp", f"{kafka}{os.pathsep}{classes}", "JavaMember", *argv]
    )


def main() -> None:
    if "java" in sys.argv[1:] and sys.argv[sys.argv.index("java") - 1] == "--client":
        at = sys.argv.index("java") - 1
        exec_java(sys.argv[1:at] + sys.argv[at + 2 :])
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=("kafka-python", "confluent", "ours"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="g")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--instance-id")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--session-ms", type=int, default=6000)
    # kafka-python only: max_poll_interval_ms, its rebalance timeout (kafka-python's default if unset).
    parser.add_argument("--max-poll-ms", type=int)
    parser.add_argument("--commit-every-ms", type=int, default=0)
    # librdkafka and ours: "consumer" is KIP-848's protocol (the topic may be a regex, "^ev.*").
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--remote-assignor")
    # librdkafka only: its log's level (syslog's: 4 warnings, 5 notices, 7 debug) on stderr.
    parser.add_argument("--log-level", type=int, default=0)
    # kafka-python only: undo the workarounds for its join stall (the harness's own test).
    parser.add_argument("--poll-ms", type=int, default=500)
    parser.add_argument("--join-before-metadata", type=int, choices=(0, 1), default=0)
    args = parser.parse_args()
    if args.client == "kafka-python":
        log_kafka_python_joins(debug=bool(os.environ.get("KAFKA_MEMBER_DEBUG")))
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` dumps every thread's stack to stderr
    stop = stop_event(signal.SIGTERM)
    # The group and its bootstrap: a test that times out shows the coordinator's view of it.
    report(
        args.name,
        event="started",
        stack_dump_signal=int(signal.SIGUSR1),
        bootstrap=args.bootstrap,
        group=args.group,
    )
    runners = {"kafka-python": run_kafka_python, "confluent": run_confluent, "ours": run_ours}
    runners[args.client](args, stop)
    report(args.name, event="closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
