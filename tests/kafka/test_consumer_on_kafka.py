"""The ``consumer`` plugin reading real topics on a real 3-broker Apache Kafka cluster.

tests/consumer/ runs ``ConsumerGroupMember`` and ``AssignedConsumer`` against the embedded
coordinator and librdkafka's mock; here the records, the offsets and the fencing are Kafka's own:

* ``AssignedConsumer`` readers consume records produced with ``acks=all`` to a topic replicated
  three times and commit them; Kafka refuses a commit made with a generation it has left behind
  (``ILLEGAL_GENERATION``) or by a member that has left (``UNKNOWN_MEMBER_ID``); a reader
  started after the others stopped resumes from the group's committed offsets.
* One group shares a topic among two ``ConsumerGroupMember`` processes, kafka-python, librdkafka
  and Apache Kafka's Java consumer, under an eager (``range``) and a cooperative
  (``cooperative-sticky``) assignor, while records keep arriving; and, with KIP-848's protocol
  (``group_protocol="consumer"``, the brokers assign with ``uniform``), two of ours, librdkafka
  and Java (kafka-python has no KIP-848 client). Every member reads, reports
  what it read, then commits (tests/kafka/consumer_member.py, JavaMember.java ``--read``). When
  settled every partition has one owner; by the members' own reports no partition ever had two
  at once and nobody read a partition it did not own; after one member is SIGKILLed while it
  holds a batch it read and did not commit, no record is lost, its partitions are resumed
  exactly at its last committed offsets (that batch is read again), and a record is read twice
  only if the commit after its first reading failed or never came.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from coordinator_consumer import AssignedConsumer, ConsumerGroupMember
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from member_processes import MemberProcess, overlapping_ownership, running_members, wait_for
from test_docs import python_blocks

from coordinator_api import CommitFailedError, GroupError
from coordinator_api.testing import KafkaCluster

CONSUMER_MEMBER = Path(__file__).parent / "consumer_member.py"
SESSION_MS = 6000
LIVENESS_S = 120  # a loaded 2-core machine that also runs three broker JVMs and five clients
PROCESS_MS = 300  # how long a member process works on a batch before committing it

Read = tuple[float, str, bool]  # (when, by whom, whether the commit after it succeeded)


# --- producing ------------------------------------------------------------------------------------


def producer_for(kafka: KafkaCluster) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=kafka.bootstrap_servers, acks="all", linger_ms=5)


def produce(kafka: KafkaCluster, topic: str, partitions: int, count: int) -> set[tuple[int, int]]:
    """Send ``count`` records round robin over the partitions; the (partition, offset) of each,
    as the leaders acknowledged them once all three replicas had them."""
    producer = producer_for(kafka)
    try:
        futures = [
            producer.send(topic, value=str(i).encode(), partition=i % partitions) for i in range(count)
        ]
        producer.flush(timeout=60)
        return {(md.partition, md.offset) for md in (f.get(timeout=60) for f in futures)}
    finally:
        producer.close(timeout=10)


class Stream:
    """Keeps producing a record to every partition every 100 ms until stopped."""

    def __init__(self, kafka: KafkaCluster, topic: str, partitions: int) -> None:
        self.producer = producer_for(kafka)
        self.topic, self.partitions = topic, partitions
        self.futures: list[Any] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self.stop.wait(0.1):
            for p in range(self.partitions):
                self.futures.append(self.producer.send(self.topic, value=str(i).encode(), partition=p))
                i += 1

    def __enter__(self) -> Stream:
        self.thread.start()
        return self

    def finish(self) -> set[tuple[int, int]]:
        """Stop producing; every record produced, as (partition, offset)."""
        self.stop.set()
        self.thread.join()
        self.producer.flush(timeout=60)
        produced = {(md.partition, md.offset) for md in (f.get(timeout=60) for f in self.futures)}
        self.producer.close(timeout=10)
        return produced

    def __exit__(self, *exc: object) -> None:
        if not self.stop.is_set():
            self.finish()


def committed(kafka: KafkaCluster, group: str) -> dict[int, int]:
    """The group's committed offsets, partition -> next offset to read, as Kafka stores them."""
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        offsets = admin.list_group_offsets(group)[group]
    finally:
        admin.close()
    return {tp.partition: om.offset for tp, om in offsets.items() if om.offset >= 0}


# --- what the members read ----------------------------------------------------------------------


def reads(reports_by_member: dict[str, list[dict[str, Any]]]) -> dict[tuple[int, int], list[Read]]:
    """Every reading of every record: (partition, offset) -> [(when, member, committed)], in
    time order. A reading is committed when the member's next report says its commit worked;
    a failed commit, or none (the member was killed first), leaves it uncommitted."""
    out: dict[tuple[int, int], list[Read]] = {}

    def settle(batch: dict[str, Any] | None, ok: bool) -> None:
        if batch is not None:
            for p, o in batch["records"]:
                out.setdefault((p, o), []).append((batch["t"], batch["name"], ok))

    for reports in reports_by_member.values():
        pending: dict[str, Any] | None = None
        for report in reports:
            if report.get("event") == "records":
                settle(pending, False)
                pending = report
            elif report.get("event") == "commit" and pending is not None:
                settle(pending, bool(report["ok"]))
                pending = None
        settle(pending, False)
    for readings in out.values():
        readings.sort()
    return out


def unexplained_duplicates(readings: dict[tuple[int, int], list[Read]]) -> list[str]:
    """Records read again after a reading whose commit succeeded: at-least-once delivery allows
    a second reading only of what was not committed."""
    return [
        f"{record} read by {[(who, ok) for _, who, ok in times]}"
        for record, times in sorted(readings.items())
        if any(ok for _, _, ok in times[:-1])
    ]


def owned_at(reports: list[dict[str, Any]], t: float) -> set[int]:
    """The partitions a member owned at ``t`` by its own reports (each carries ``owned``)."""
    now: set[int] = set()
    for report in reports:
        if report["t"] > t:
            break
        if "owned" in report:
            now = set(report["owned"])
    return now


def reads_outside_ownership(reports: list[dict[str, Any]]) -> list[str]:
    """Records a member reported reading from partitions it did not own at that moment."""
    problems = []
    for batch in (r for r in reports if r.get("event") == "records"):
        mine = owned_at(reports, batch["t"])
        strays = sorted({p for p, _ in batch["records"]} - mine)
        if strays:
            problems.append(
                f"{batch['name']} read partitions {strays} at {batch['t']:.3f} owning {sorted(mine)}"
            )
    return problems


# --- test 1: AssignedConsumer on Kafka, in this process ----------------------------------------


class Readers:
    """``AssignedConsumer`` readers on their own threads, each recording its readings and its
    commits in the JSON-line shape the member processes report."""

    def __init__(self, kafka: KafkaCluster, group: str, topic: str, names: Iterable[str]) -> None:
        self.readers = {
            name: AssignedConsumer(
                ConsumerGroupMember(
                    group,
                    kafka.bootstrap_servers,
                    topics=[topic],
                    assignor="range",
                    client_id=name,
                    session_timeout_ms=SESSION_MS,
                    heartbeat_interval_ms=SESSION_MS // 6,
                ),
                KafkaConsumer(
                    bootstrap_servers=kafka.bootstrap_servers,
                    client_id=name,
                    enable_auto_commit=False,
                    auto_offset_reset="earliest",
                ),
            )
            for name in names
        }
        self.reports: dict[str, list[dict[str, Any]]] = {name: [] for name in self.readers}
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.threads = [
            threading.Thread(target=self._run, args=(name,), daemon=True) for name in self.readers
        ]

    def _run(self, name: str) -> None:
        reader, reports = self.readers[name], self.reports[name]
        while not self.stop.is_set():
            try:
                records = reader.poll(0.2)
            except (GroupError, ConnectionError) as exc:
                self.errors.append(exc)
                time.sleep(0.1)
                continue
            if not records:
                continue
            reports.append({"t": time.time(), "name": name, "event": "records",
                            "records": [(r.partition, r.offset) for r in records]})  # fmt: skip
            try:
                reader.commit()
                reports.append({"t": time.time(), "name": name, "event": "commit", "ok": True})
            except CommitFailedError as exc:
                reports.append({"t": time.time(), "name": name, "event": "commit", "ok": False,
                                "error": [e for *_, e in exc.errors]})  # fmt: skip

    def member(self, name: str) -> ConsumerGroupMember:
        return self.readers[name].member

    def owned(self, name: str) -> set[tuple[str, int]]:
        return self.member(name).assignment()

    def read(self) -> set[tuple[int, int]]:
        return set(reads(self.reports))

    def __enter__(self) -> Readers:
        for t in self.threads:
            t.start()
        return self

    def halt(self) -> None:
        """Stop polling (the members stay in the group: their heartbeats go on)."""
        self.stop.set()
        for t in self.threads:
            t.join()

    def __exit__(self, *exc: object) -> None:
        self.halt()
        for reader in self.readers.values():
            reader.member.close(timeout=10)
            reader.consumer.close()


def test_assigned_consumers_read_commit_fenced_and_resume_from_committed_offsets(
    kafka: KafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = group = "consumer-kafka-read-resume"
    partitions = 6
    kafka.create_topic(topic, partitions, replication_factor=3)

    def ends(records: set[tuple[int, int]]) -> dict[int, int]:
        return {p: max(o for q, o in records if q == p) + 1 for p in range(partitions)}

    early = produce(kafka, topic, partitions, 300)
    with Readers(kafka, group, topic, ["r0"]) as first:
        # One reader reads every record and commits it.
        wait_for(
            lambda: first.read() == early and committed(kafka, group) == ends(early),
            LIVENESS_S,
            "a reader to read and commit every record",
            step=0.5,
        )
        # A second reader joins and takes half the partitions: it starts where r0 committed.
        with Readers(kafka, group, topic, ["r1"]) as second:
            wait_for(
                lambda: len(first.owned("r0")) == len(second.owned("r1")) == partitions // 2,
                LIVENESS_S,
                "two readers to share the topic",
            )
            middle = produce(kafka, topic, partitions, 60)
            wait_for(
                lambda: (
                    first.read() | second.read() == early | middle
                    and committed(kafka, group) == ends(early | middle)
                ),
                LIVENESS_S,
                "two readers to read and commit the new records",
                step=0.5,
            )
            assert second.read() <= middle, "r1 re-read records r0 had committed"
            twice = [r for r, times in reads({**first.reports, **second.reports}).items() if len(times) > 1]
            assert twice == []  # everything read was committed before it changed hands

            # A third member joins: the group moves to a new generation.
            old = first.member("r0").generation()
            with Readers(kafka, group, topic, ["r2"]) as third:
                wait_for(
                    lambda: (
                        [len(r.owned(n)) for r, n in ((first, "r0"), (second, "r1"), (third, "r2"))]
                        == [2, 2, 2]
                    ),
                    LIVENESS_S,
                    "three readers to share the topic",
                )
                for readers in (first, second, third):
                    readers.halt()
                assert first.member("r0").generation().generation_id > old.generation_id
                # A commit carrying the generation the group has left behind: Kafka refuses it.
                monkeypatch.setattr(first.member("r0"), "generation", lambda: old)
                with pytest.raises(CommitFailedError) as stale:
                    first.member("r0").commit({(topic, 0): 1})
                assert {e for *_, e in stale.value.errors} == {"ILLEGAL_GENERATION"}
                departed = third.member("r2").generation()
            # r2 has left the group: a commit in its name is refused too.
            monkeypatch.setattr(first.member("r0"), "generation", lambda: departed)
            with pytest.raises(CommitFailedError) as gone:
                first.member("r0").commit({(topic, 0): 1})
            assert {e for *_, e in gone.value.errors} == {"UNKNOWN_MEMBER_ID"}
            monkeypatch.undo()
    assert committed(kafka, group) == ends(early | middle)  # no refused commit moved an offset
    assert first.errors + second.errors + third.errors == []

    # Everyone has stopped; more records arrive; a new reader starts where the group left off.
    late = produce(kafka, topic, partitions, 60)
    with Readers(kafka, group, topic, ["r3"]) as restarted:
        wait_for(lambda: late <= restarted.read(), LIVENESS_S, "the restarted reader to read new records")
        again = restarted.read()
    assert again == late, f"re-read {len(again - late)} records committed before the restart"
    assert restarted.errors == []
    print(
        f"\nAssignedConsumer on Kafka: {len(early)} records read by one reader, {len(middle)} more by "
        f"two after a handover, none twice; stale commits refused (ILLEGAL_GENERATION, "
        f"UNKNOWN_MEMBER_ID); a restarted reader resumed at the committed offsets"
    )


# --- test 2: a mixed group of member processes ------------------------------------------------------


def start(
    kafka: KafkaCluster, client: str, name: str, topic: str, assignor: str, hold_file: Path | None = None
) -> MemberProcess:
    """A member process reading ``topic`` in the group of the same name; ``assignor`` "uniform"
    means KIP-848's protocol, with the brokers assigning. Once ``hold_file`` exists, it holds
    the next batch it reads, never committing it (consumer_member.py's ``--hold-file``)."""
    options: dict[str, Any] = {"group": topic, "topic": topic, "session_ms": SESSION_MS}
    if assignor == "uniform":
        options.update(group_protocol="consumer", remote_assignor="uniform")
    else:
        options["assignor"] = assignor
    if client == "java":  # JavaMember.java commits as soon as it has reported a batch
        return MemberProcess("java", kafka.bootstrap_servers, name, read="true", **options)
    return MemberProcess(
        client,
        kafka.bootstrap_servers,
        name,
        script=CONSUMER_MEMBER,
        process_ms=PROCESS_MS,
        hold_file=hold_file,
        **options,
    )


def broker_view(bootstrap: str, group: str) -> str:
    """The group as its coordinator describes it (ConsumerGroupDescribe): each member's epoch,
    partitions and target partitions, beside the group's and the target's epochs."""
    from coordinator_api._inspect import _Connection  # the test looks inside: no public API has targets
    from coordinator_api.server.schemas import ConsumerGroupDescribeRequest

    conn = _Connection(bootstrap, 10_000)
    try:
        node = conn.find_coordinator(group).node
        request = ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False)
        (described,) = conn.send(request, node).groups
    finally:
        conn.close()

    def partitions(assignment: Any) -> list[int]:
        return sorted(p for t in assignment.topic_partitions for p in t.partitions)

    lines = [
        f"--- the coordinator's view: error {described.error_code}, {described.group_state}, group epoch "
        f"{described.group_epoch}, target epoch {described.assignment_epoch}"
    ]
    lines += [
        f"{m.client_id} epoch {m.member_epoch}: owns {partitions(m.assignment)}, target "
        f"{partitions(m.target_assignment)}"
        for m in described.members
    ]
    return "\n".join(lines)


@contextmanager
def diagnosed(members: list[MemberProcess], view: Callable[[], str] | None = None) -> Iterator[None]:
    """On failure, add each member's ownership reports and last stderr lines, and ``view``'s
    text (the coordinator's view of the group)."""
    try:
        yield
    except AssertionError as exc:
        seen = ""
        if view is not None:
            try:
                seen = f"\n{view()}"
            except Exception as failed:  # a diagnosis must not hide the failure
                seen = f"\n--- the coordinator's view: not read ({failed!r})"
        tails = "\n".join(
            f"--- {m.name}\n"
            + "\n".join(
                f"{r['t']:.3f} {r['event']} {r.get('partitions')}"
                for r in list(m.reports)
                if r.get("event") in ("assigned", "revoked", "lost")
            )
            + f"\n{m.stderr_text()[-2000:]}"
            for m in members
        )
        raise AssertionError(f"{exc}{seen}\n{tails}") from exc


@pytest.mark.parametrize(
    ("assignor", "victim"),
    [("range", "ours-1"), ("cooperative-sticky", "librdkafka"), ("uniform", "ours-1")],
    ids=["range", "cooperative", "kip848"],
)
def test_a_mixed_group_reads_every_record_once_owned_through_a_kill(
    kafka: KafkaCluster, assignor: str, victim: str, tmp_path: Path
) -> None:
    partitions = 12
    topic = group = f"consumer-kafka-mixed-{assignor}"
    kafka.create_topic(topic, partitions, replication_factor=3)
    clients = {"ours-0": "ours", "ours-1": "ours", "kafka-python": "kafka-python", "librdkafka": "confluent",
               "java-0": "java"}  # fmt: skip
    if assignor == "uniform":
        del clients["kafka-python"]
        # With KIP-848 the brokers, not the clients, set the session and the interval.
        kafka.set_group_config(
            group, {"consumer.session.timeout.ms": SESSION_MS, "consumer.heartbeat.interval.ms": 500}
        )
    shares = [3, 3, 3, 3] if len(clients) == 4 else [2, 2, 2, 3, 3]
    after_kill = [4, 4, 4] if len(clients) == 4 else [3, 3, 3, 3]
    with Stream(kafka, topic, partitions) as stream:
        hold = tmp_path / "hold"
        started = [
            start(kafka, client, name, topic, assignor, hold if name == victim else None)
            for name, client in clients.items()
        ]
        view = (lambda: broker_view(kafka.bootstrap_servers, group)) if assignor == "uniform" else None
        with running_members(started) as members, diagnosed(members, view):
            by_name = {m.name: m for m in members}
            t0 = time.monotonic()
            # Settled: every partition has one owner, each of the five members owns some and reads.
            wait_for(
                lambda: owned_counts(members) == shares and all(m.events("records") for m in members),
                LIVENESS_S,
                "every member to share the partitions and read",
                step=0.1,
            )
            settled_s = time.monotonic() - t0
            time.sleep(2)  # records flow; everyone commits as it goes

            # Kill the victim while it processes a batch: read and reported, never committed (it
            # holds the next batch it reads, however late this process gets to the kill).
            dead = by_name[victim]
            hold.touch()
            wait_for(lambda: dead.reports[-1].get("event") == "holding", LIVENESS_S, "a held batch")
            orphaned = set(dead.owned)
            t_kill = time.time()
            dead.kill()
            in_flight = dead.events("records")[-1]["records"]
            at_kill = committed(kafka, group)  # its commits are synchronous: none is still on its way
            t_read = time.time()
            survivors = [m for m in members if m.alive]
            wait_for(
                lambda: owned_counts(survivors) == after_kill,
                LIVENESS_S,
                "the survivors to take the killed member's partitions",
                step=0.1,
            )
            moved_s = time.time() - t_kill
            produced = stream.finish()
            wait_for(
                lambda: produced <= set(reads({m.name: m.reports for m in members})),
                LIVENESS_S,
                "every produced record to be read",
                step=0.2,
            )

            reports = {m.name: list(m.reports) for m in members}
            readings = reads(reports)
            # Never two owners at once, and nobody read what it did not own.
            assert overlapping_ownership(members) == []
            assert [p for m in members for p in reads_outside_ownership(reports[m.name])] == []
            # No record lost; a record read twice only when its first reading was uncommitted.
            assert produced - set(readings) == set()
            assert unexplained_duplicates(readings) == []
            # The batch the victim was processing when it died was read again by the next owner.
            once = [r for r in map(tuple, in_flight) if len(readings[r]) < 2]
            assert once == [], (once, {p: at_kill.get(p) for p in orphaned}, dead.reports[-3:])
            # The killed member's partitions were taken over exactly at its committed offsets.
            for p in orphaned:
                takeover = [
                    (t, o, who)
                    for (q, o), times in readings.items()
                    if q == p
                    for t, who, _ in times
                    if who != victim and t > t_kill
                ]
                first = min(takeover)  # the first batch read after the kill, its lowest offset
                assert first[0] > t_read, f"partition {p} was read again before {t_read}"
                assert first[1] == at_kill.get(p, 0), (p, first, at_kill)  # none: from the start
            readers = Counter(who for times in readings.values() for _, who, _ in times)
            assert set(readers) == set(clients)
            duplicates = sum(len(times) - 1 for times in readings.values())
            uncommitted = Counter(who for times in readings.values() for _, who, ok in times if not ok)
            assert duplicates <= uncommitted.total()
            refused = Counter(
                (m.name, str(r["error"])) for m in members for r in m.events("commit") if not r["ok"]
            )
            print(
                f"\n{assignor} on Kafka, {len(clients)} clients: settled in {settled_s:.1f} s; "
                f"{victim} SIGKILLed, its "
                f"{len(orphaned)} partitions resumed at its commits after {moved_s:.1f} s; "
                f"{len(produced)} records, none lost, {duplicates} read twice; uncommitted readings "
                f"{dict(sorted(uncommitted.items()))}; reads {dict(sorted(readers.items()))}; "
                f"commits refused {dict(sorted(refused.items()))}"
            )


def owned_counts(members: list[MemberProcess]) -> list[int]:
    """How many partitions each live member owns, sorted, if every partition has exactly one
    owner; else an empty list."""
    live = [m for m in members if m.alive]
    owned = sorted(p for m in live for p in m.owned)
    if owned != list(range(12)):
        return []
    return sorted(len(m.owned) for m in live)


def test_the_consumer_guide_reads_a_kafka_topic_as_written(kafka: KafkaCluster, tmp_path: Path) -> None:
    # docs/consumer.md's first example, as written, given the cluster's address: it reads every
    # record of `orders` and commits, then stops after five quiet polls.
    (example,) = [code for code in python_blocks("consumer.md") if "KafkaConsumer(" in code]
    kafka.create_topic("orders", partitions=3)
    sent = produce(kafka, "orders", 3, 30)
    script = tmp_path / "reader.py"
    script.write_text(example)
    result = subprocess.run(
        [sys.executable, str(script), kafka.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line.split(" ", 3) for line in result.stdout.splitlines()]
    assert {(int(partition), int(offset)) for _, partition, offset, _ in lines} == sent
    assert len(lines) == len(sent) and {topic for topic, *_ in lines} == {"orders"}
    admin = KafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    try:
        offsets = admin.list_group_offsets({"order-processors": None})["order-processors"]
    finally:
        admin.close()
    assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {p: 10 for p in range(3)}
