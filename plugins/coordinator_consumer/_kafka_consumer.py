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
            self.consumer.assign([TopicPartition(topic, partition) for topic, partition in sorted(owned)])
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
        """Commit the consumer's positions for the owned partitions, fenced by the member's
        generation (raises :class:`CommitFailedError` if the group has moved on)."""
        from kafka import TopicPartition

        offsets = {
            (topic, partition): self.consumer.position(TopicPartition(topic, partition))
            for topic, partition in sorted(self._assigned)
        }
        if offsets:
            self.member.commit(offsets)
