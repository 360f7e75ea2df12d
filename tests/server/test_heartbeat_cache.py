"""The heartbeat codec cache (coordinator_api.server._wire.HeartbeatCodecCache): a cached
request or answer is exactly what decoding or encoding would have made, for any correlation
id; the cache stays within its bounds; bad bytes are refused as without it."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer import HeartbeatRequest

from coordinator_api._protocol import ApiKey, ErrorCode
from coordinator_api.server import _wire
from coordinator_api.server._messages import ConsumerGroupHeartbeatResult, HeartbeatResult
from coordinator_api.server.schemas import ConsumerGroupHeartbeatRequest

correlation_ids = st.integers(-(2**31), 2**31 - 1)
names = st.text(min_size=1, max_size=20)
topic_ids = st.binary(min_size=16, max_size=16).filter(any)  # kafka-python reads all zeros as null
partitions = st.lists(st.integers(0, 2**31 - 1), max_size=8).map(lambda ps: tuple(sorted(set(ps))))


@st.composite
def group_heartbeats(draw: st.DrawFn) -> tuple[int, bytes]:
    """A ConsumerGroupHeartbeat v0 or v1 as it comes off the wire (header, no size)."""
    version = draw(st.integers(0, 1))
    full = draw(st.booleans())
    owned = draw(st.lists(st.tuples(topic_ids, partitions), max_size=3)) if full else None
    request = ConsumerGroupHeartbeatRequest(
        version=version,
        group_id=draw(names),
        member_id=draw(names),
        member_epoch=draw(st.integers(-2, 2**31 - 1)),
        instance_id=draw(st.none() | names),
        rack_id=draw(st.none() | names),
        rebalance_timeout_ms=draw(st.integers(1, 300_000)) if full else -1,
        subscribed_topic_names=draw(st.lists(names, max_size=3)) if full else None,
        subscribed_topic_regex=(draw(st.none() | names) if version >= 1 else None),
        server_assignor=draw(st.none() | st.sampled_from(["uniform", "range"])),
        topic_partitions=None
        if owned is None
        else [
            ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=uuid.UUID(bytes=t), partitions=list(p))
            for t, p in owned
        ],
    )
    request.with_header(correlation_id=draw(correlation_ids), client_id=draw(st.none() | names))
    return version, bytes(request.encode(header=True, framed=False))


def with_correlation_id(payload: bytes, correlation_id: int) -> bytes:
    return payload[:4] + correlation_id.to_bytes(4, "big", signed=True) + payload[8:]


@settings(max_examples=200, deadline=None)
@given(heartbeat=group_heartbeats(), again=correlation_ids, host=st.sampled_from(["127.0.0.1", "::1"]))
def test_a_cached_request_is_what_decoding_it_gives(
    heartbeat: tuple[int, bytes], again: int, host: str
) -> None:
    version, payload = heartbeat
    cache = _wire.HeartbeatCodecCache()
    first_frame = _wire.peek_frame(payload)
    first = cache.request(first_frame, payload, host)
    assert first == _wire.read_request(first_frame, payload, host)
    repeated = with_correlation_id(payload, again)
    frame = _wire.peek_frame(repeated)
    assert (frame.api_key, frame.api_version, frame.correlation_id) == (
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        version,
        again,
    )
    assert cache.request(frame, repeated, host) == _wire.read_request(frame, repeated, host) == first
    # Another client address is another request (the engine records where members run).
    other = cache.request(frame, repeated, "10.0.0.1")
    assert other.client_host == "10.0.0.1"  # type: ignore[union-attr]


group_results = st.builds(
    ConsumerGroupHeartbeatResult,
    error=st.sampled_from(list(ErrorCode)),
    message=st.none() | st.text(max_size=30),
    member_id=st.none() | names,
    member_epoch=st.integers(-1, 2**31 - 1),
    heartbeat_interval_ms=st.integers(0, 60_000),
    assignment=st.none() | st.lists(st.tuples(topic_ids, partitions), max_size=3).map(tuple),
)


@settings(max_examples=200, deadline=None)
@given(result=group_results, version=st.integers(0, 1), ids=st.lists(correlation_ids, min_size=1, max_size=4))
def test_a_cached_answer_is_what_encoding_it_gives(
    result: ConsumerGroupHeartbeatResult, version: int, ids: list[int]
) -> None:
    cache = _wire.HeartbeatCodecCache()
    for correlation_id in ids:
        frame = _wire.Frame(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, correlation_id)
        expected = _wire.encode(frame, _wire.to_response(frame, result))
        assert cache.response(frame, result) == expected


@pytest.mark.parametrize("version", range(5))
def test_classic_heartbeats_are_cached_alike(version: int) -> None:
    cache = _wire.HeartbeatCodecCache()
    request = HeartbeatRequest(version=version, group_id="g", generation_id=3, member_id="m")
    if version >= 3:
        request.group_instance_id = "i"
    for correlation_id in (1, 2, -7):
        request.with_header(correlation_id=correlation_id, client_id="c")
        payload = bytes(request.encode(header=True, framed=False))
        frame = _wire.peek_frame(payload)
        assert cache.request(frame, payload, "h") == _wire.read_request(frame, payload, "h")
        for error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            result = HeartbeatResult(error=error)
            assert cache.response(frame, result) == _wire.encode(frame, _wire.to_response(frame, result))


def test_the_cache_keeps_within_its_bounds() -> None:
    cache = _wire.HeartbeatCodecCache(max_entries=8, max_payload_bytes=200)
    frame = _wire.Frame(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 1)
    for epoch in range(50):
        cache.response(
            frame, ConsumerGroupHeartbeatResult(error=ErrorCode.NONE, member_id="m", member_epoch=epoch)
        )
    big = ConsumerGroupHeartbeatResult(
        error=ErrorCode.NONE, member_id="m", member_epoch=1, assignment=((b"t" * 16, tuple(range(100))),)
    )
    cache.response(frame, big)
    assert len(cache._responses) == 8 and all(key[1] is not big for key in cache._responses)


def test_bytes_that_do_not_decode_are_refused_and_not_remembered() -> None:
    cache = _wire.HeartbeatCodecCache()
    request = ConsumerGroupHeartbeatRequest(version=1, group_id="g", member_id="m", member_epoch=0)
    request.with_header(correlation_id=1, client_id="c")
    payload = bytes(request.encode(header=True, framed=False))[:-3]  # cut short
    for _ in range(2):
        with pytest.raises(_wire.MalformedRequest):
            cache.request(_wire.peek_frame(payload), payload, "h")
    assert not cache._requests
