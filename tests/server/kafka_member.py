"""A group member process driven by a real Kafka client (kafka-python, librdkafka or Java).

Run as ``python kafka_member.py --client kafka-python --bootstrap HOST:PORT --name m1 ...``.
It subscribes to a topic in a consumer group and prints one JSON line per ownership change,
written from inside the client's rebalance callbacks (so a revocation is reported before the
member rejoins), plus commit failures when ``--commit-every-ms`` is set. SIGTERM closes the
client gracefully (LeaveGroup); SIGKILL and SIGSTOP are left to the test. With ``--client java``
the process replaces itself with Apache Kafka's Java consumer (JavaMember.java beside this file),
which takes the same options and prints the same lines. ``--group-protocol consumer`` makes the
librdkafka (and Java) member use KIP-848's protocol (the coordinator assigns; ``--remote-assignor``
names its assignor; the topic may then be a regex, "^ev.*"). librdkafka's and Java's ownership
lines also carry ``topic_partitions`` ([topic, partition] pairs), for members of several topics.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import os
import signal
import sys
import threading
import time
from typing import Any

owned: set[int] = set()
lock = threading.Lock()


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
    )
    # Learn the topic's partitions before joining. A kafka-python 3.0.12 leader that joins
    # before its metadata arrives assigns nothing, and under cooperative-sticky it then sometimes
    # stops heartbeating after the next SyncGroup (seen against this coordinator, whose replies
    # were correct); waiting for metadata avoids that client bug.
    while not consumer.partitions_for_topic(args.topic):
        time.sleep(0.05)
    consumer.subscribe([args.topic], listener=Listener())
    last_commit = 0.0
    commit_error: str | None = None
    counter = 0
    parent = os.getppid()
    while not stop.is_set() and os.getppid() == parent:  # an orphan stops by itself
        # The embedded coordinator keeps no log: fetches fail while membership goes on. A short
        # poll timeout (50 ms) makes kafka-python 3.0.12 now and then drop its own SyncGroup answer.
        with contextlib.suppress(KafkaError):
            consumer.poll(timeout_ms=500)
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
        "log_level": 0,
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


def exec_java(argv: list[str]) -> None:
    """Become Apache Kafka's Java consumer (same pid, so the test's signals reach it)."""
    from coordinator_api.testing import kafka_classpath

    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "JavaMember.java")
    java = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData"]
    os.execvp("java", [*java, "-cp", kafka_classpath(), source, *argv])


def main() -> None:
    if "java" in sys.argv[1:] and sys.argv[sys.argv.index("java") - 1] == "--client":
        at = sys.argv.index("java") - 1
        exec_java(sys.argv[1:at] + sys.argv[at + 2 :])
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", choices=("kafka-python", "confluent"), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--group", default="g")
    parser.add_argument("--topic", default="events")
    parser.add_argument("--instance-id")
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--session-ms", type=int, default=6000)
    parser.add_argument("--commit-every-ms", type=int, default=0)
    # librdkafka only: "consumer" is KIP-848's protocol (the topic may be a regex, "^ev.*").
    parser.add_argument("--group-protocol", choices=("classic", "consumer"), default="classic")
    parser.add_argument("--remote-assignor")
    args = parser.parse_args()
    if os.environ.get("KAFKA_MEMBER_DEBUG"):
        import logging

        logging.basicConfig(level=logging.DEBUG, format="%(asctime)s %(threadName)s %(name)s %(message)s")
        logging.getLogger("kafka.protocol").setLevel(logging.INFO)
        logging.getLogger("kafka.net").setLevel(logging.INFO)
    faulthandler.register(signal.SIGUSR1)  # `kill -USR1` dumps every thread's stack to stderr
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    report(args.name, event="started")
    if args.client == "kafka-python":
        run_kafka_python(args, stop)
    else:
        run_confluent(args, stop)
    report(args.name, event="closed")
    sys.exit(0)


if __name__ == "__main__":
    main()
