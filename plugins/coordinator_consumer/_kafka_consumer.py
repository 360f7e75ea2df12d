"""Keep a kafka-python ``KafkaConsumer`` reading exactly the partitions a member owns."""

from __future__ import annotations

from typing import Any

from coordinator_consumer._member import ConsumerGroupMember


class AssignedConsumer:
    """Drives a kafka-python ``KafkaConsumer`` on manual ``assign()`` from a
    :class:`ConsumerGroupMember`'s assignment, so records come from a Kafka cluster while this
    project's member manages the group::

        member = ConsumerGroupMember("orders", bootstrap, topics=["orders"])
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        reader = AssignedConsumer(member, consumer)
        while running:
            for record in reader.poll(1.0):
                handle(record)
            reader.commit()  # fenced by the member's generation

    The consumer must not subscribe or join a group itself (no ``group_id``): the member owns
    membership, the consumer only fetches. After every ``poll`` the consumer's assignment equals
    the member's; records of partitions the member no longer owns are dropped, not returned.

    A partition newly assigned to the member starts at the group's committed offset, as in
    Kafka's own consumer: a consumer without ``group_id`` never fetches committed offsets itself
    (it would start every partition at its ``auto_offset_reset`` position, re-reading or
    skipping what the previous owner had committed), so the reader fetches them through the
    member and seeks there. Partitions without a committed offset follow ``auto_offset_reset``.
    """

    def __init__(self, member: ConsumerGroupMember, consumer: Any) -> None:
        self.member = member
        self.consumer = consumer
        self._assigned: set[tuple[str, int]] = set()

    def poll(self, timeout: float = 0.0) -> list[Any]:
        """Follow the group (``member.poll``), align the consumer's assignment, then fetch."""
        from kafka import TopicPartition

        self.member.poll(min(timeout, 0.05))
        owned = self.member.assignment() if self.member.generation_if_stable() is not None else set()
        if owned != self._assigned:
            added = owned - self._assigned
            # Where the previous owner left off. Fetched before anything changes, so a failure
            # (raised) leaves the reader as it was and the next poll tries again.
            start = self.member.committed_offsets(added) if added else {}
            self.consumer.assign([TopicPartition(topic, partition) for topic, partition in sorted(owned)])
            for (topic, partition), (offset, _metadata) in sorted(start.items()):
                self.consumer.seek(TopicPartition(topic, partition), offset)
            self._assigned = owned
        if not owned:
            return []
        batches = self.consumer.poll(timeout_ms=int(timeout * 1000))
        still_owned = self.member.assignment()
        return [
            record
            for tp, records in sorted(batches.items(), key=lambda item: (item[0].topic, item[0].partition))
            if (tp.topic, tp.partition) in still_owned
            for record in records
        ]

    def commit(self) -> None:
        """Commit the consumer's positions for the partitions the member still owns, fenced by
        the member's generation (raises :class:`CommitFailedError` if the group has moved on).

        Partitions the member lost since the last ``poll`` are left out, as Kafka's consumer
        leaves them out after ``onPartitionsLost``: their records were dropped, not returned,
        while the consumer's position had already moved past them."""
        from kafka import TopicPartition

        offsets = {
            (topic, partition): self.consumer.position(TopicPartition(topic, partition))
            for topic, partition in sorted(self._assigned & self.member.assignment())
        }
        if offsets:
            self.member.commit(offsets)
