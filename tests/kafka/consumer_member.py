"""A consumer-group member process that READS records and commits after processing them.

Run as ``python consumer_member.py --client ours --bootstrap HOST:PORT --name m1 --group g ...``.
``--client ours`` is this project's ``ConsumerGroupMember`` driving a kafka-python
``KafkaConsumer`` through ``AssignedConsumer``; ``kafka-python`` and ``confluent`` (librdkafka)
are those clients' own group consumers. Apache Kafka's Java consumer does the same in
tests/server/JavaMember.java (``kafka_member.py --client java --read true``).

Every client runs the same at-least-once loop: poll, report the records it got, then commit
synchronously what it has consumed. So a record reported in a ``records`` line followed by a
successful ``commit`` line is committed; one whose commit failed or never came (SIGKILL) is in
the uncommitted window (``--process-ms`` widens it: the time each batch takes to process;
``--hold-file`` holds one batch in it for good), and only such records may be read again by the
next owner.

The JSON lines are those of tests/server/kafka_member.py (which the test harness
``member_processes.MemberProcess`` reads): ``assigned``/``revoked``/``lost`` with the member's
``owned`` partitions, written from inside the rebalance callbacks; ``records`` with
``[[partition, offset], ...]``; ``commit`` with ``ok`` and ``error`` (an error name). SIGTERM
closes the client gracefully; the process ends by itself when its parent is gone.

``--group-protocol consumer`` makes this project's member and librdkafka speak KIP-848's
protocol (the coordinator assigns with ``--remote-assignor``; kafka-python has no such client).

With ``CONSUMER_MEMBER_DEBUG`` set in its environment, the member logs to its stderr: our member
and kafka-python through ``logging``, librdkafka its own log of the group (``debug=cgrp``).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from coordinator_api._signals import stop_event

owned: set[int] = set()
lock = threading.Lock()


def report(name: str, **fields: Any) -> None:
    print(json.dumps({"t": time.time(), "name": name, **fields}), flush=True)


def change(name: str, kind: str, partitions: list[int]) -> None:
    with lock:
        if kind == "assigned":
            owned.update(partitions)
        else:
            owned.difference_update(partitions)
        report(name, event=kind, partitions=sorted(partitions), owned=sorted(owned))


def read_loop(
    args: argparse.Namespace,
    stop: threading.Event,
    poll: Callable[[], list[tuple[int, int]]],
    commit: Callable[[], str | None],
) -> None:
    """Poll, report what came, process it (``--process-ms``), commit it; ``commit`` returns an
    error name or None. The processing time is the uncommitted window a SIGKILL can land in.
    Once ``--hold-file`` exists, the next batch is reported, then ``holding``, and never
    committed: a SIGKILL after ``holding`` surely lands in that window, however late it comes."""
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        records = poll()
        if not records:
            continue
        report(args.name, event="records", records=records)
        if args.hold_file and os.path.exists(args.hold_file):
            report(args.name, event="holding")
            while not stop.wait(0.2) and os.getppid() == parent:
                pass
            return
        time.sleep(args.process_ms / 1000)
        error = commit()
        report(args.name, event="commit", ok=error is None, error=error)


def run_ours(args: argparse.Namespace, stop: threading.Event) -> None:
    from coordinator_consumer import AssignedConsumer, ConsumerGroupMember
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError

    from coordinator_api import CommitFailedError, GroupError

    def callback(kind: str) -> Callable[[frozenset[Any]], None]:
        return lambda partitions: change(args.name, kind, [tp.partition for tp in partitions])

    incremental = args.group_protocol == "consumer"
    member = ConsumerGroupMember(
        args.group,
        args.bootstrap,
        topics=[args.topic],
        assignor=args.assignor if not incremental else "range",
        group_protocol=args.group_protocol,
        remote_assignor=args.remote_assignor if incremental else None,
        client_id=args.name,
        group_instance_id=args.instance_id,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        on_partitions_assigned=callback("assigned"),
        on_partitions_revoked=callback("revoked"),
        on_partitions_lost=callback("lost"),
    )
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        client_id=args.name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    reader = AssignedConsumer(member, consumer)

    def poll() -> list[tuple[int, int]]:
        try:
            return [(r.partition, r.offset) for r in reader.poll(0.2)]
        except (GroupError, KafkaError) as exc:  # e.g. the coordinator moved: retried next poll
            print(f"poll: {exc!r}", file=sys.stderr, flush=True)
            return []

    def commit() -> str | None:
        try:
            reader.commit()
        except CommitFailedError as exc:
            return ",".join(sorted({name for _t, _p, name in exc.errors})) or type(exc).__name__
        except (GroupError, KafkaError, ConnectionError) as exc:
            return type(exc).__name__
        return None

    try:
        read_loop(args, stop, poll, commit)
    finally:
        member.close(timeout=10)
        consumer.close()


def run_kafka_python(args: argparse.Namespace, stop: threading.Event) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.errors import KafkaError

    class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
        def on_partitions_revoked(self, revoked: Any) -> None:
            change(args.name, "revoked", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned: Any) -> None:
            change(args.name, "assigned", [tp.partition for tp in assigned])

        def on_partitions_lost(self, lost: Any) -> None:
            change(args.name, "lost", [tp.partition for tp in lost])

    assignors = {"range": RangePartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        client_id=args.name,
        group_instance_id=args.instance_id,
        session_timeout_ms=args.session_ms,
        heartbeat_interval_ms=max(args.session_ms // 6, 100),
        partition_assignment_strategy=[assignors[args.assignor]],
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    # As in tests/server/kafka_member.py: learn the topic's partitions before joining (a
    # kafka-python 3.0.12 leader that joins without metadata assigns nothing).
    while not consumer.partitions_for_topic(args.topic):
        time.sleep(0.05)
    consumer.subscribe([args.topic], listener=Listener())

    def poll() -> list[tuple[int, int]]:
        try:
            # 500 ms, not less: see kafka_member.py on kafka-python's SyncGroup handling.
            batches = consumer.poll(timeout_ms=500)
        except KafkaError as exc:
            print(f"poll: {exc!r}", file=sys.stderr, flush=True)
            return []
        return [(tp.partition, r.offset) for tp, records in sorted(batches.items()) for r in records]

    def commit() -> str | None:
        try:
            consumer.commit()
        except KafkaError as exc:
            return type(exc).__name__
        return None

    try:
        read_loop(args, stop, poll, commit)
    finally:
        consumer.close()


def run_confluent(args: argparse.Namespace, stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.name,
        "group.protocol": args.group_protocol,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "log_level": 0,
    }
    if args.group_protocol == "classic":
        conf["session.timeout.ms"] = args.session_ms
        conf["heartbeat.interval.ms"] = max(args.session_ms // 6, 100)
        conf["partition.assignment.strategy"] = args.assignor
    elif args.remote_assignor:  # the coordinator sets the session and the interval
        conf["group.remote.assignor"] = args.remote_assignor
    if args.instance_id:
        conf["group.instance.id"] = args.instance_id
    if os.environ.get("CONSUMER_MEMBER_DEBUG"):  # librdkafka's own log of the group, to stderr
        conf.update({"log_level": 7, "debug": "cgrp"})
    consumer = Consumer(conf)
    cooperative = args.assignor == "cooperative-sticky" or args.group_protocol == "consumer"

    def on_assign(c: Any, partitions: Any) -> None:
        change(args.name, "assigned", [p.partition for p in partitions])
        if cooperative:
            c.incremental_assign(partitions)
        else:
            c.assign(partitions)

    def on_revoke(c: Any, partitions: Any) -> None:
        change(args.name, "revoked", [p.partition for p in partitions])
        if cooperative:
            c.incremental_unassign(partitions)
        else:
            c.unassign()

    def on_lost(c: Any, partitions: Any) -> None:
        change(args.name, "lost", [p.partition for p in partitions])
        if cooperative:
            c.incremental_unassign(partitions)
        else:
            c.unassign()

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)

    def poll() -> list[tuple[int, int]]:
        messages = consumer.consume(num_messages=500, timeout=0.2)
        return [(m.partition(), m.offset()) for m in messages if m.error() is None]

    def commit() -> str | None:
        try:
            consumer.commit(asynchronous=False)
        except KafkaException as exc:
            return str(exc.args[0].name()) if exc.args else type(exc).__name__
        return None

    try:
        read_loop(args, stop, poll, commit)
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=("ours", "kafka-python", "confluent"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--assignor", choices=("range", "cooperative-sticky"), default="range")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--remote-assignor")
    parser.add_argument(
        "--process-ms", type=int, default=0, help="time spent on each batch before its commit"
    )
    parser.add_argument("--hold-file", help="once this file exists, hold the next batch uncommitted")
    args = parser.parse_args()
    if os.environ.get("CONSUMER_MEMBER_DEBUG"):
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(threadName)s %(name)s %(message)s")
        logging.getLogger("kafka").setLevel(logging.INFO)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` dumps every thread's stack to stderr
    stop = stop_event(signal.SIGTERM)
    report(args.name, event="started", stack_dump_signal=int(signal.SIGUSR1))
    runners = {"ours": run_ours, "kafka-python": run_kafka_python, "confluent": run_confluent}
    runners[args.client](args, stop)
    report(args.name, event="closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
