"""Requests as a client puts them on the wire, for the tests that feed the server bytes."""

from __future__ import annotations

from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest


def consumer_group_join(member_id: str, correlation_id: int, topics: list[str] | None = None) -> bytes:
    """A framed ConsumerGroupHeartbeat v1 by which ``member_id`` joins group ``g``, subscribed
    to ``topics`` (by default the one topic ``t``)."""
    request = ConsumerGroupHeartbeatRequest(
        version=1,
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        instance_id=None,
        rack_id=None,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=topics or ["t"],
        subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=[],
    )
    request.with_header(correlation_id=correlation_id, client_id="c")
    return bytes(request.encode(header=True, framed=True))
