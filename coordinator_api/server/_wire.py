"""Kafka wire format <-> the state machine's messages, through kafka-python's message classes.

Nothing here encodes a Kafka message by hand (ARCHITECTURE rule 3): kafka-python 3 generates
its classes from Kafka's own JSON schemas, flexible versions and tagged fields included. This
module only decides which versions to offer and maps fields, so the state machine never sees a
wire version.
"""

from __future__ import annotations

import io
import itertools
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.api_header import RequestHeader
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import ProduceRequest, ProduceResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from coordinator_api._protocol import ApiKey, ErrorCode
from coordinator_api.server._acls import CLUSTER_NAME, AclBinding, AclBindingFilter, ResourceType
from coordinator_api.server._group_configs import GROUP_RESOURCE, INT_TYPE, Alteration, ConfigEntry
from coordinator_api.server._messages import (
    NO_TOPIC_ID,
    CommittedOffset,
    ConsumerGroupDescribe,
    ConsumerGroupDescribeResult,
    ConsumerGroupHeartbeat,
    ConsumerGroupHeartbeatResult,
    CreatePartitions,
    CreatePartitionsResult,
    CreateTopics,
    CreateTopicsResult,
    DeleteGroups,
    DeleteGroupsResult,
    DeleteTopics,
    DeleteTopicsResult,
    DescribedConsumerGroup,
    DescribedConsumerMember,
    DescribedPartitions,
    DescribeGroups,
    DescribeGroupsResult,
    FetchedOffset,
    Heartbeat,
    HeartbeatResult,
    JoinGroup,
    JoinGroupResult,
    LeaveGroup,
    LeaveGroupResult,
    LeavingMember,
    ListGroups,
    ListGroupsResult,
    NewPartitions,
    NewTopic,
    OffsetCommit,
    OffsetCommitResult,
    OffsetDelete,
    OffsetDeleteResult,
    OffsetFetch,
    OffsetFetchResult,
    Request,
    Result,
    SyncGroup,
    SyncGroupResult,
    Topic,
    TopicToDelete,
)
from coordinator_api.server._quotas import (
    AlterOutcome,
    FilterComponent,
    QuotaAlteration,
    QuotaEntity,
)
from coordinator_api.server.schemas import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    GroupDescribeRequest,
    GroupDescribeResponse,
    GroupHeartbeatRequest,
    GroupHeartbeatResponse,
)

# What Produce, Fetch and ListOffsets get: the request is well formed, but this server keeps
# no log. INVALID_REQUEST is not retriable, so clients report it instead of retrying forever.
NOT_A_LOG = ErrorCode.INVALID_REQUEST
NOT_A_LOG_MESSAGE = "the embedded coordinator keeps no log: it only coordinates groups"


class MalformedRequest(Exception):
    """The bytes are not a request this server can read; the connection must close."""


class Frame(NamedTuple):
    """The fixed start of every request: enough to route it or to reject it."""

    api_key: int
    api_version: int
    correlation_id: int


_FRAME = struct.Struct(">hhi")


def peek_frame(payload: bytes) -> Frame:
    if len(payload) < 8:
        raise MalformedRequest(f"a request of {len(payload)} bytes is shorter than its header")
    return Frame._make(_FRAME.unpack_from(payload))


def decode(frame: Frame, payload: bytes) -> Any:
    """Decode a request whose api key and version are supported, header included."""
    api = API_KEYS[ApiKey(frame.api_key)]
    try:
        message = api.request.decode(payload, version=frame.api_version, header=True)
    except Exception as exc:  # kafka-python raises assorted errors on bad bytes
        raise MalformedRequest(
            f"cannot decode api key {frame.api_key} v{frame.api_version}: {exc!r}"
        ) from exc
    return message


def encode(frame: Frame, response: Any) -> bytes:
    # Every response is built with its version already set (the version= argument of
    # encode() would also try to stamp it on the response header).
    response.with_header(correlation_id=frame.correlation_id)
    return bytes(response.encode(header=True, framed=True))


def read_request(frame: Frame, payload: bytes, client_host: str) -> Request:
    """Decode a request the state machine answers and translate it to its terms."""
    return _readable(frame, decode(frame, payload), client_host)


def _readable(frame: Frame, message: Any, client_host: str) -> Request:
    # Decodable is not readable: a null where Kafka requires a value makes the translation
    # fail, which is the client's error, not the server's.
    try:
        return to_request(frame, message, client_host)
    except (TypeError, AttributeError, ValueError) as exc:
        raise MalformedRequest(
            f"api key {frame.api_key} v{frame.api_version} has fields this server cannot read: {exc!r}"
        ) from exc


def name_topics(topics: list[Any] | None, names: Mapping[bytes, str]) -> list[Any]:
    """Give each topic of an OffsetCommit or OffsetFetch v10 that names it by id its name, as
    Kafka's brokers do from their metadata, and take out and return those whose id ``names``
    does not know (a zero id included): they are answered UNKNOWN_TOPIC_ID."""
    if topics is None:
        return []

    known, unknown = [], []
    for topic in topics:
        # kafka-python reads the zero id as None
        name = None if topic.topic_id is None else names.get(topic.topic_id.bytes)
        if name is None:
            unknown.append(topic)
        else:
            topic.name = name
            known.append(topic)
    topics[:] = known
    return unknown


def read_offset_commit(
    frame: Frame, payload: bytes, client_host: str, names: Mapping[bytes, str]
) -> tuple[Request, list[Any]]:
    """An OffsetCommit in the state machine's terms (v10's topics named, see
    :func:`name_topics`), and its topic entries as asked, for :func:`offset_commit_response`."""
    message = decode(frame, payload)
    asked = list(message.topics)
    if frame.api_version >= 10:
        name_topics(message.topics, names)
    return _readable(frame, message, client_host), asked


def offset_commit_response(
    frame: Frame, result: OffsetCommitResult, ids: Mapping[str, bytes], asked: list[Any]
) -> Any:
    """OffsetCommit's answer as Kafka 4.3's KafkaApis builds it. When nothing fails its own
    checks (a topic id it does not know, v10; a partition that does not exist; a topic the
    client may not read), the answer is the group coordinator's: an entry per topic entry asked
    with partitions, in the order asked, a topic asked twice answered twice. Otherwise what
    failed comes first, topic by topic in the order asked (an unknown id's partitions
    UNKNOWN_TOPIC_ID), and the rest of ``result`` joins its topic's entry: one entry per topic.
    v10 names the topics by id (``ids``: name -> id)."""
    by_id = frame.api_version >= 10
    failing = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    failed: dict[str, list[tuple[int, ErrorCode]]] = {}
    for name, partition, error in result.errors:
        if error in failing:
            failed.setdefault(name, []).append((partition, error))
    by_topic: dict[Any, list[tuple[int, ErrorCode]]] = {}
    for topic in asked:
        if by_id and topic.name == "":  # named by name_topics only when its id is known
            partitions = [(p.partition_index, ErrorCode.UNKNOWN_TOPIC_ID) for p in topic.partitions]
            by_topic.setdefault(topic.topic_id, []).extend(partitions)
        elif topic.name in failed and topic.name not in by_topic:
            by_topic[topic.name] = failed[topic.name]
    entries: list[tuple[Any, list[tuple[int, ErrorCode]]]]
    if by_topic:
        for name, partition, error in result.errors:
            if error not in failing:
                by_topic.setdefault(name, []).append((partition, error))
        entries = list(by_topic.items())
    else:
        answers = iter(result.errors)  # one per partition, in the order asked
        entries = [
            (topic.name, [(p, e) for _, p, e in itertools.islice(answers, len(topic.partitions))])
            for topic in asked
            if topic.partitions
        ]
    topic_cls = OffsetCommitResponse.OffsetCommitResponseTopic
    partition_cls = topic_cls.OffsetCommitResponsePartition

    def entry(key: Any, partitions: list[tuple[int, ErrorCode]]) -> Any:
        answered = [partition_cls(partition_index=p, error_code=e) for p, e in partitions]
        if not by_id:
            return topic_cls(name=key, partitions=answered)
        return topic_cls(topic_id=_uuid(ids[key]) if isinstance(key, str) else key, partitions=answered)

    return OffsetCommitResponse(
        version=frame.api_version,
        throttle_time_ms=0,
        topics=[entry(key, partitions) for key, partitions in entries],
    )


class HeartbeatCodecCache:
    """Heartbeats repeat: a member's heartbeat is, request after request, the same bytes but
    for its correlation id, and so is the answer while nothing changes. For the two heartbeat
    APIs this keeps the request each such payload decodes to and the bytes each answer encodes
    to, so that a steady heartbeat costs neither a decode nor an encode; the correlation id is
    put in at its fixed place (bytes 4-7 of every request header, and of every framed response
    header). Bounded: payloads up to ``max_payload_bytes``, at most ``max_entries`` of each kind
    (the oldest go first). The codec still makes every byte: this only remembers its output.
    An answer to a throttled client (request quotas) carries its throttle time, so it is
    encoded afresh and not remembered."""

    APIS = frozenset({ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.GROUP_HEARTBEAT})

    def __init__(self, *, max_entries: int = 16_384, max_payload_bytes: int = 1024) -> None:
        self._max_entries = max_entries
        self._max_payload_bytes = max_payload_bytes
        self._requests: dict[tuple[bytes, bytes, str], Request] = {}
        self._responses: dict[tuple[int, int, Result], bytes] = {}

    def request(self, frame: Frame, payload: bytes, client_host: str) -> Request:
        if len(payload) > self._max_payload_bytes:
            return read_request(frame, payload, client_host)
        key = (payload[:4], payload[8:], client_host)
        found = self._requests.get(key)
        if found is None:
            found = read_request(frame, payload, client_host)
            self._remember(self._requests, key, found)
        return found

    def response(self, frame: Frame, result: Result, throttle_time_ms: int = 0) -> bytes:
        if throttle_time_ms:
            response = to_response(frame, result)
            response.throttle_time_ms = throttle_time_ms
            return encode(frame, response)
        key = (frame.api_key, frame.api_version, result)
        encoded = self._responses.get(key)
        if encoded is None:
            encoded = encode(Frame(frame.api_key, frame.api_version, 0), to_response(frame, result))
            if len(encoded) <= self._max_payload_bytes:
                self._remember(self._responses, key, encoded)
        framed = bytearray(encoded)
        _CORRELATION_ID.pack_into(framed, 4, frame.correlation_id)
        return bytes(framed)

    def _remember(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        if len(table) >= self._max_entries:
            del table[next(iter(table))]
        table[key] = value


_CORRELATION_ID = struct.Struct(">i")


def client_id(payload: bytes) -> tuple[str, bytes]:
    """The client id of a request, read with kafka-python's header class (it comes right after
    the correlation id, in the same form in every header version), and its field's bytes: a
    request that starts its header (from byte 8) with them has the same client id. \"\" if
    null, or if the header cannot be read (the request's own decoding then refuses it)."""
    read = io.BytesIO(payload)
    try:
        header = RequestHeader.decode(read, flexible=False)
    except Exception:  # kafka-python raises assorted errors on bad bytes
        return "", b"\xff"  # a field no request starts with: never taken as known
    return str(header.client_id or ""), payload[8 : read.tell()]


def with_throttle_time(frame: Frame, encoded: bytes, throttle_time_ms: int) -> bytes:
    """An encoded answer (from a cache of encodings) again, carrying ``throttle_time_ms`` where
    its version has the field: decoded and encoded by kafka-python, as any answer."""
    api = API_KEYS[ApiKey(frame.api_key)]
    response = api.response.decode(encoded[4:], version=frame.api_version, header=True)
    response.throttle_time_ms = throttle_time_ms
    return encode(frame, response)


# --- answered by the shell without the state machine -----------------------------------------


#: The ACL APIs (answered SECURITY_DISABLED without the authorizer, as Kafka's brokers do).
ACL_APIS = frozenset({ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS})


def api_versions_response(version: int, error: ErrorCode = ErrorCode.NONE) -> Any:
    """The APIs and versions served (the ACL APIs too, with or without the authorizer, as
    Kafka's brokers list them)."""
    return ApiVersionsResponse(
        version=version,
        error_code=error,
        api_keys=[
            ApiVersionsResponse.ApiVersion(
                api_key=key, min_version=api.min_version, max_version=api.max_version
            )
            for key, api in sorted(API_KEYS.items())
        ],
        throttle_time_ms=0,
    )


def metadata_response(
    version: int,
    request: Any,
    topics: dict[str, Topic],
    *,
    node_id: int,
    host: str,
    port: int,
    cluster_id: str,
    refused: frozenset[str] = frozenset(),
    creation_refused: frozenset[str] = frozenset(),
    operations: Callable[[ResourceType, str], frozenset[int]] | None = None,
) -> Any:
    """Metadata of ``topics``, or of those the request names. The topics named in ``refused``
    (which the client may not describe) and in ``creation_refused`` (which it may describe but
    not auto-create) are answered TOPIC_AUTHORIZATION_FAILED, as Kafka answers them. What the
    client may do to each topic, and to the cluster, is said when the request asks for it and
    ``operations`` gives it.

    Named topics are answered in the order of Kafka's ``KafkaApis.handleTopicMetadataRequest``:
    ids it does not know, the topics it describes (existing ones, then the unknown ones), those
    it may not create, those it may not describe; each part in the request's order."""
    partition_cls = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition
    unknown_ids: list[Any] = []
    found: list[Any] = []
    missing: list[Any] = []
    not_created: list[Any] = []
    hidden: list[Any] = []

    def topic_operations(name: str) -> frozenset[int] | None:
        if operations is None or not (version >= 8 and request.include_topic_authorized_operations):
            return None
        return operations(ResourceType.TOPIC, name)

    def answer(name: str) -> None:
        topic = topics.get(name)
        if name in refused or name in creation_refused:
            (hidden if name in refused else not_created).append(
                MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    name=name,
                    is_internal=False,
                    partitions=[],
                )
            )
        elif topic is None:
            missing.append(
                MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    name=name,
                    partitions=[],
                    authorized_operations=topic_operations(name),  # as Kafka says them, too
                )
            )
        else:
            found.append(
                MetadataResponse.MetadataResponseTopic(
                    error_code=ErrorCode.NONE,
                    name=name,
                    topic_id=_uuid(topic.topic_id),
                    is_internal=False,
                    partitions=[
                        partition_cls(
                            error_code=ErrorCode.NONE,
                            partition_index=p,
                            leader_id=node_id,
                            leader_epoch=0,
                            replica_nodes=[node_id],
                            isr_nodes=[node_id],
                            offline_replicas=[],
                        )
                        for p in range(topic.partitions)
                    ],
                    authorized_operations=topic_operations(name),
                )
            )

    if asks_for_every_topic(version, request):
        for name in sorted(topics):
            answer(name)
    else:
        # v10+ may ask by topic id (KIP-516), as KIP-848 clients do for their assigned topics.
        by_id = {t.topic_id: t.name for t in topics.values()}
        for asked in request.topics:
            topic_id = getattr(asked, "topic_id", None)
            # A set (non-zero) id wins, as on Kafka's broker: Java's client asks by id with the
            # name left at its schema default "" (a RE2J regex subscription does, KIP-848).
            if asked.name is not None and (topic_id is None or topic_id.int == 0):
                answer(asked.name)
                continue
            found_name = by_id.get(topic_id.bytes) if topic_id is not None else None
            if found_name is not None and found_name in refused:
                # Topic ids are not secret (KafkaApis): refused by id, without the name.
                hidden.append(
                    MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                        name=None,
                        topic_id=topic_id,
                        partitions=[],
                    )
                )
            elif found_name is not None:
                answer(found_name)
            else:
                unknown_ids.append(
                    MetadataResponse.MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=topic_id, partitions=[]
                    )
                )
    return MetadataResponse(
        version=version,
        throttle_time_ms=0,
        brokers=[MetadataResponse.MetadataResponseBroker(node_id=node_id, host=host, port=port, rack=None)],
        cluster_id=cluster_id,
        controller_id=node_id,
        topics=unknown_ids + found + missing + not_created + hidden,
        # Asked for in v8-10 only (KIP-700 moved it to DescribeCluster).
        authorized_operations=operations(ResourceType.CLUSTER, CLUSTER_NAME)
        if operations is not None and 8 <= version <= 10 and request.include_cluster_authorized_operations
        else None,
    )


def sasl_handshake_response(version: int, error: ErrorCode, mechanisms: list[str]) -> Any:
    return SaslHandshakeResponse(version=version, error_code=error, mechanisms=mechanisms)


def sasl_authenticate_response(
    version: int, error: ErrorCode, message: str | None, token: bytes = b""
) -> Any:
    # Kafka's broker answers a success with an empty message, not null.
    return SaslAuthenticateResponse(
        version=version,
        error_code=error,
        error_message="" if message is None else message,
        auth_bytes=token,
        session_lifetime_ms=0,
    )


def asks_for_every_topic(version: int, request: Any) -> bool:
    """Whether a Metadata request asks for every topic (null; an empty list before v1)."""
    return request.topics is None or (version == 0 and not request.topics)


def asks_for_operations(version: int, request: Any) -> bool:
    """Whether a Metadata request asks what the client may do to its topics or the cluster."""
    return version >= 8 and (
        request.include_topic_authorized_operations
        or (version <= 10 and request.include_cluster_authorized_operations)
    )


class EveryTopicMetadataCache:
    """Metadata for every topic is the largest answer (a line per partition: 0.7 s of encoding
    at 100,000 partitions) and the same bytes for every client while the topics stay as they
    are. This keeps its encoding per version, with the version of the topics it was made for
    (the coordinator's ``topics_version``), and puts each request's correlation id in; a new
    topic, or new partitions, make it again. So clients asking for it over and over cost a
    copy each, and cannot hold the event loop that serves everyone's heartbeats."""

    def __init__(self) -> None:
        self._encoded: dict[int, tuple[int, bytes]] = {}

    def response(self, frame: Frame, topics_version: int, make: Callable[[], Any]) -> bytes:
        cached = self._encoded.get(frame.api_version)
        if cached is None or cached[0] != topics_version:
            cached = (topics_version, encode(Frame(frame.api_key, frame.api_version, 0), make()))
            self._encoded[frame.api_version] = cached
        framed = bytearray(cached[1])
        _CORRELATION_ID.pack_into(framed, 4, frame.correlation_id)
        return bytes(framed)


def coordinator_keys(version: int, request: Any) -> list[str]:
    """The keys a FindCoordinator asks about (one before v4)."""
    return list(request.coordinator_keys) if version >= 4 else [request.key]


def find_coordinator_response(
    version: int, request: Any, *, node_id: int, host: str, port: int, refused: frozenset[str] = frozenset()
) -> Any:
    """This coordinator for every group key; the keys in ``refused`` (groups the client may not
    describe) are answered GROUP_AUTHORIZATION_FAILED.

    The messages are Kafka's: v1-v3 carry its text for the error code (``NONE`` when found,
    ``Group authorization failed.`` when refused); v4's per-key message is never set by Kafka's
    broker, so it is the schema's default, empty."""
    # Key type 0 is a group; 1 (transactions) and 2 (share groups) are not coordinated here.
    error = ErrorCode.NONE if request.key_type == 0 else ErrorCode.INVALID_REQUEST
    message = None if error is ErrorCode.NONE else "only group coordinators are found here"

    def answer(key: str) -> tuple[ErrorCode, str | None]:
        if error is not ErrorCode.NONE:
            return error, message
        if key in refused:
            error_text = "" if version >= 4 else GROUP_AUTHORIZATION_FAILED_MESSAGE
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, error_text
        return error, "" if version >= 4 else error.name

    if version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            key_error, key_message = answer(key)
            ok = key_error is ErrorCode.NONE
            coordinators.append(
                FindCoordinatorResponse.Coordinator(
                    key=key,
                    node_id=node_id if ok else -1,
                    host=host if ok else "",
                    port=port if ok else -1,
                    error_code=key_error,
                    error_message=key_message,
                )
            )
        return FindCoordinatorResponse(version=version, throttle_time_ms=0, coordinators=coordinators)
    error, message = answer(request.key)
    ok = error is ErrorCode.NONE
    return FindCoordinatorResponse(
        version=version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        node_id=node_id if ok else -1,
        host=host if ok else "",
        port=port if ok else -1,
    )


#: Kafka's message of GROUP_AUTHORIZATION_FAILED (``Errors``).
GROUP_AUTHORIZATION_FAILED_MESSAGE = "Group authorization failed."


# --- ACLs: DescribeAcls, CreateAcls, DeleteAcls ------------------------------------------------


def acl_filter(entry: Any) -> AclBindingFilter:
    """The filter of a DescribeAcls request, or of one entry of a DeleteAcls request.

    :raises InvalidAclError: a value Kafka refuses in a filter.
    """
    return AclBindingFilter.of(
        resource_type=entry.resource_type_filter,
        name=entry.resource_name_filter,
        pattern_type=entry.pattern_type_filter,
        principal=entry.principal_filter,
        host=entry.host_filter,
        operation=entry.operation,
        permission=entry.permission_type,
    )


def acl_creation(entry: Any) -> AclBinding:
    """One binding of a CreateAcls request.

    :raises InvalidAclError: a value Kafka refuses in a binding.
    """
    return AclBinding.of(
        resource_type=entry.resource_type,
        name=entry.resource_name,
        pattern_type=entry.resource_pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission=entry.permission_type,
    )


def describe_acls_response(
    version: int, error: ErrorCode, message: str | None, bindings: list[AclBinding]
) -> Any:
    """The bindings, grouped by resource pattern as Kafka groups them."""
    resource_cls = DescribeAclsResponse.DescribeAclsResource
    by_pattern: dict[tuple[int, str, int], list[Any]] = {}
    for b in sorted(bindings):
        by_pattern.setdefault((b.resource_type, b.name, b.pattern_type), []).append(
            resource_cls.AclDescription(
                principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission
            )
        )
    return DescribeAclsResponse(
        version=version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        resources=[
            resource_cls(resource_type=kind, resource_name=name, pattern_type=pattern, acls=acls)
            for (kind, name, pattern), acls in by_pattern.items()
        ],
    )


def create_acls_response(version: int, results: list[tuple[ErrorCode, str | None]]) -> Any:
    return CreateAclsResponse(
        version=version,
        throttle_time_ms=0,
        results=[
            CreateAclsResponse.AclCreationResult(error_code=error, error_message=message)
            for error, message in results
        ],
    )


def delete_acls_response(version: int, results: list[tuple[ErrorCode, str | None, list[AclBinding]]]) -> Any:
    result_cls = DeleteAclsResponse.DeleteAclsFilterResult
    return DeleteAclsResponse(
        version=version,
        throttle_time_ms=0,
        filter_results=[
            result_cls(
                error_code=error,
                error_message=message,
                matching_acls=[
                    result_cls.DeleteAclsMatchingAcl(
                        error_code=ErrorCode.NONE,
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in matched
                ],
            )
            for error, message, matched in results
        ],
    )


#: The client quota APIs (KIP-546), answered by the shell: quotas are not group state.
QUOTA_APIS = frozenset({ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.ALTER_CLIENT_QUOTAS})


def quota_filter(request: Any) -> tuple[list[FilterComponent], bool]:
    """A DescribeClientQuotas request's filter components, and whether it is strict."""
    components = [FilterComponent(c.entity_type, c.match_type, c.match) for c in request.components]
    return components, bool(request.strict)


def describe_client_quotas_response(
    version: int,
    error: ErrorCode,
    message: str | None,
    found: list[tuple[QuotaEntity, dict[str, float]]] | None,
) -> Any:
    """The quotas found; an error answers with no entries (null), as Kafka's does."""
    entry_cls = DescribeClientQuotasResponse.EntryData
    return DescribeClientQuotasResponse(
        version=version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        entries=None
        if found is None
        else [
            entry_cls(
                entity=[
                    entry_cls.EntityData(entity_type=entity_type, entity_name=name)
                    for entity_type, name in entity.parts()
                ],
                values=[entry_cls.ValueData(key=key, value=value) for key, value in values.items()],
            )
            for entity, values in found
        ],
    )


def quota_alterations(request: Any) -> list[QuotaAlteration]:
    """An AlterClientQuotas request's entries, as the client named them."""
    return [
        QuotaAlteration(
            entity=tuple((e.entity_type, e.entity_name) for e in entry.entity),
            ops=tuple((op.key, float(op.value), bool(op.remove)) for op in entry.ops),
        )
        for entry in request.entries
    ]


#: Kafka's ScramMechanism type codes.
SCRAM_MECHANISM_TYPES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def scram_users_asked(request: Any) -> list[str] | None:
    """The users a DescribeUserScramCredentials asks about; None (or none): every user."""
    return [u.name for u in request.users] if request.users else None


def describe_user_scram_credentials_response(
    version: int,
    error: ErrorCode,
    message: str | None,
    results: list[tuple[str, ErrorCode, str | None, list[tuple[str, int]]]],
) -> Any:
    """Per user: its error, and its credentials' (mechanism, iterations)."""
    result_cls = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
    return DescribeUserScramCredentialsResponse(
        version=version,
        throttle_time_ms=0,
        error_code=error,
        error_message=message,
        results=[
            result_cls(
                user=user,
                error_code=user_error,
                error_message=user_message,
                credential_infos=[
                    result_cls.CredentialInfo(
                        mechanism=SCRAM_MECHANISM_TYPES[mechanism], iterations=iterations
                    )
                    for mechanism, iterations in credentials
                ],
            )
            for user, user_error, user_message, credentials in results
        ],
    )


def alter_client_quotas_response(version: int, outcomes: list[AlterOutcome]) -> Any:
    entry_cls = AlterClientQuotasResponse.EntryData
    return AlterClientQuotasResponse(
        version=version,
        throttle_time_ms=0,
        entries=[
            entry_cls(
                error_code=o.error,
                error_message=o.message,
                entity=[entry_cls.EntityData(entity_type=t, entity_name=n) for t, n in o.entity],
            )
            for o in outcomes
        ],
    )


#: The config APIs, answered by the shell: only groups have configs here (KIP-848's group
#: configs), and they are not group state.
CONFIG_APIS = frozenset(
    {ApiKey.DESCRIBE_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.LIST_CONFIG_RESOURCES}
)


@dataclass(frozen=True)
class ConfigsDescribed:
    """One resource of a DescribeConfigs answer: an error, or its configs."""

    resource_type: int
    resource_name: str
    error: ErrorCode = ErrorCode.NONE
    message: str = ""
    configs: tuple[ConfigEntry, ...] = ()


def config_alterations(request: Any) -> list[tuple[int, str, list[Alteration]]]:
    """An IncrementalAlterConfigs request's resources: (type, name, changes), in its order."""
    return [
        (
            r.resource_type,
            r.resource_name,
            [Alteration(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in request.resources
    ]


def describe_configs_response(
    version: int, results: list[ConfigsDescribed], *, synonyms: bool, documentation: bool
) -> Any:
    """Synonyms and documentation only when asked for, as Kafka's brokers answer."""
    result_cls = DescribeConfigsResponse.DescribeConfigsResult
    config_cls = result_cls.DescribeConfigsResourceResult
    return DescribeConfigsResponse(
        version=version,
        throttle_time_ms=0,
        results=[
            result_cls(
                error_code=r.error,
                error_message=r.message,
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=[
                    config_cls(
                        name=c.name,
                        value=c.value,
                        read_only=False,
                        config_source=c.source,
                        is_sensitive=False,
                        synonyms=[
                            config_cls.DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source)
                            for s in c.synonyms
                        ]
                        if synonyms
                        else [],
                        config_type=INT_TYPE,
                        documentation=c.documentation if documentation else None,
                    )
                    for c in r.configs
                ],
            )
            for r in results
        ],
    )


def incremental_alter_configs_response(
    version: int, results: list[tuple[int, str, ErrorCode, str | None]]
) -> Any:
    """Per resource: (type, name, error, message; None on success, as Kafka's)."""
    result_cls = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    return IncrementalAlterConfigsResponse(
        version=version,
        throttle_time_ms=0,
        responses=[
            result_cls(error_code=error, error_message=message, resource_type=kind, resource_name=name)
            for kind, name, error, message in results
        ],
    )


def list_config_resources_response(version: int, error: ErrorCode, groups: list[str]) -> Any:
    """The groups that have configs of their own (v1+; v0 asks for client metrics resources, of
    which this coordinator has none)."""
    resource_cls = ListConfigResourcesResponse.ConfigResource
    return ListConfigResourcesResponse(
        version=version,
        throttle_time_ms=0,
        error_code=error,
        config_resources=[resource_cls(resource_name=g, resource_type=GROUP_RESOURCE) for g in groups],
    )


def not_a_log_response(frame: Frame, request: Any) -> Any:
    """Answer Produce, Fetch or ListOffsets with NOT_A_LOG for every partition asked about."""
    if frame.api_key == ApiKey.PRODUCE:
        return ProduceResponse(
            version=frame.api_version,
            throttle_time_ms=0,
            responses=[
                ProduceResponse.TopicProduceResponse(
                    name=t.name,
                    partition_responses=[
                        ProduceResponse.TopicProduceResponse.PartitionProduceResponse(
                            index=p.index,
                            error_code=NOT_A_LOG,
                            base_offset=-1,
                            error_message=NOT_A_LOG_MESSAGE,
                            record_errors=[],
                        )
                        for p in t.partition_data
                    ],
                )
                for t in request.topic_data
            ],
        )
    if frame.api_key == ApiKey.FETCH:
        return FetchResponse(
            version=frame.api_version,
            throttle_time_ms=0,
            error_code=NOT_A_LOG,
            session_id=0,
            responses=[
                FetchResponse.FetchableTopicResponse(
                    topic=t.topic,
                    partitions=[
                        FetchResponse.FetchableTopicResponse.PartitionData(
                            partition_index=p.partition,
                            error_code=NOT_A_LOG,
                            high_watermark=-1,
                            aborted_transactions=None,
                            records=None,
                        )
                        for p in t.partitions
                    ],
                )
                for t in request.topics
            ],
        )
    return ListOffsetsResponse(
        version=frame.api_version,
        throttle_time_ms=0,
        topics=[
            ListOffsetsResponse.ListOffsetsTopicResponse(
                name=t.name,
                partitions=[
                    ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=NOT_A_LOG,
                        old_style_offsets=[],
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _uuid(raw: bytes) -> Any:
    import uuid

    return uuid.UUID(bytes=raw)


# --- group requests: wire -> state machine ---------------------------------------------------


def to_request(frame: Frame, message: Any, client_host: str) -> Request:
    """Translate a decoded group or topic request into the state machine's terms."""
    translate = API_KEYS[ApiKey(frame.api_key)].to_request
    assert translate is not None, f"api key {frame.api_key} is answered by the shell"
    return translate(frame.api_version, message, client_host)


def _join_group(v: int, message: Any, client_host: str) -> Request:
    return JoinGroup(
        group_id=message.group_id,
        member_id=message.member_id,
        group_instance_id=message.group_instance_id if v >= 5 else None,
        client_id=message.header.client_id or "",
        client_host=client_host,
        session_timeout_ms=message.session_timeout_ms,
        # v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms=message.rebalance_timeout_ms if v >= 1 else message.session_timeout_ms,
        protocol_type=message.protocol_type,
        protocols=_distinct_protocols(message.protocols),
        require_known_member_id=v >= 4,
        reason=message.reason if v >= 8 else None,
        skip_assignment_supported=v >= 9,
    )


def _sync_group(v: int, message: Any, client_host: str) -> Request:
    return SyncGroup(
        group_id=message.group_id,
        generation_id=message.generation_id,
        member_id=message.member_id,
        group_instance_id=message.group_instance_id if v >= 3 else None,
        protocol_type=message.protocol_type if v >= 5 else None,
        protocol_name=message.protocol_name if v >= 5 else None,
        assignments=tuple((a.member_id, bytes(a.assignment)) for a in message.assignments),
    )


def _heartbeat(v: int, message: Any, client_host: str) -> Request:
    return Heartbeat(
        group_id=message.group_id,
        generation_id=message.generation_id,
        member_id=message.member_id,
        group_instance_id=message.group_instance_id if v >= 3 else None,
    )


def _leave_group(v: int, message: Any, client_host: str) -> Request:
    if v < 3:
        members: tuple[LeavingMember, ...] = (
            LeavingMember(member_id=message.member_id, group_instance_id=None),
        )
    else:
        members = tuple(
            LeavingMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                reason=m.reason if v >= 5 else None,
            )
            for m in message.members
        )
    return LeaveGroup(group_id=message.group_id, members=members)


def _offset_commit(v: int, message: Any, client_host: str) -> Request:
    return OffsetCommit(
        group_id=message.group_id,
        generation_id=message.generation_id_or_member_epoch,
        member_id=message.member_id,
        group_instance_id=message.group_instance_id if v >= 7 else None,
        version=v,
        retention_ms=message.retention_time_ms if 2 <= v <= 4 else -1,
        offsets=tuple(
            CommittedOffset(
                topic=t.name,
                partition=p.partition_index,
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch if v >= 6 else -1,
                metadata=p.committed_metadata,
            )
            for t in message.topics
            for p in t.partitions
        ),
    )


def _offset_fetch(v: int, message: Any, client_host: str) -> Request:
    # v8+ batches groups; translate_offset_fetch handles that, this is the single-group form.
    topics = message.topics
    return OffsetFetch(
        group_id=message.group_id,
        partitions=None
        if topics is None
        else tuple((t.name, p) for t in topics for p in t.partition_indexes),
    )


def _offset_delete(v: int, message: Any, client_host: str) -> Request:
    return OffsetDelete(
        group_id=message.group_id,
        partitions=tuple((t.name, p.partition_index) for t in message.topics for p in t.partitions),
    )


def _list_groups(v: int, message: Any, client_host: str) -> Request:
    return ListGroups(
        states=frozenset(s.strip().lower() for s in message.states_filter) if v >= 4 else frozenset(),
        types=frozenset(t.lower() for t in message.types_filter) if v >= 5 else frozenset(),
    )


def _describe_groups(v: int, message: Any, client_host: str) -> Request:
    return DescribeGroups(
        group_ids=tuple(message.groups),
        include_authorized_operations=v >= 3 and message.include_authorized_operations,
    )


def _delete_groups(v: int, message: Any, client_host: str) -> Request:
    return DeleteGroups(group_ids=tuple(message.groups_names))


def _consumer_group_heartbeat(v: int, message: Any, client_host: str) -> Request:
    owned = message.topic_partitions
    return ConsumerGroupHeartbeat(
        group_id=message.group_id,
        member_id=message.member_id,
        member_epoch=message.member_epoch,
        instance_id=message.instance_id,
        rack_id=message.rack_id,
        rebalance_timeout_ms=message.rebalance_timeout_ms,
        subscribed_topic_names=None
        if message.subscribed_topic_names is None
        else tuple(message.subscribed_topic_names),
        subscribed_topic_regex=message.subscribed_topic_regex if v >= 1 else None,
        server_assignor=message.server_assignor,
        owned=None if owned is None else tuple((t.topic_id.bytes, tuple(t.partitions)) for t in owned),
        client_id=message.header.client_id or "",
        client_host=client_host,
        member_id_required=v >= 1,
    )


def _group_heartbeat(v: int, message: Any, client_host: str) -> Request:
    owned, declared = message.owned_resources, message.resources
    return ConsumerGroupHeartbeat(
        group_id=message.group_id,
        member_id=message.member_id,
        member_epoch=message.member_epoch,
        instance_id=message.instance_id,
        rack_id=message.rack_id,
        rebalance_timeout_ms=message.rebalance_timeout_ms,
        server_assignor=message.server_assignor,
        # The engine keys resource groups by their UTF-8 names where consumer groups have topic ids.
        owned=None if owned is None else tuple((r.name.encode(), tuple(r.indexes)) for r in owned),
        client_id=message.header.client_id or "",
        client_host=client_host,
        protocol_type=message.protocol_type,
        resources=None if declared is None else tuple(sorted((r.name, r.count) for r in declared)),
        metadata=None if message.metadata is None else bytes(message.metadata),
        list_owners=bool(message.list_owners),
    )


def _consumer_group_describe(v: int, message: Any, client_host: str) -> Request:
    return ConsumerGroupDescribe(
        group_ids=tuple(message.group_ids),
        include_authorized_operations=message.include_authorized_operations,
    )


def _group_describe(v: int, message: Any, client_host: str) -> Request:
    return ConsumerGroupDescribe(group_ids=tuple(message.group_ids), any_protocol_type=True)


def _create_topics(v: int, message: Any, client_host: str) -> Request:
    return CreateTopics(
        topics=tuple(
            NewTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
            )
            for t in message.topics
        ),
        validate_only=bool(message.validate_only) if v >= 1 else False,
    )


def _create_partitions(v: int, message: Any, client_host: str) -> Request:
    return CreatePartitions(
        topics=tuple(
            NewPartitions(
                name=t.name,
                count=t.count,
                assignments=None
                if t.assignments is None
                else tuple(tuple(a.broker_ids) for a in t.assignments),
            )
            for t in message.topics
        ),
        validate_only=bool(message.validate_only),
    )


def _delete_topics(v: int, message: Any, client_host: str) -> Request:
    if v < 6:
        return DeleteTopics(topics=tuple(TopicToDelete(name=name) for name in message.topic_names))
    return DeleteTopics(
        topics=tuple(
            TopicToDelete(name=t.name, topic_id=NO_TOPIC_ID if t.topic_id is None else t.topic_id.bytes)
            for t in message.topics
        )
    )


# --- the one table of the APIs served --------------------------------------------------------


@dataclass(frozen=True)
class _Api:
    request: Any
    response: Any
    min_version: int
    max_version: int
    # Translates a decoded request for the state machine; None: the shell answers it itself.
    to_request: Callable[[int, Any, str], Request] | None = None


# The versions offered. Each stops where a version would need something this coordinator does
# not have (topic ids in Fetch v13), and starts where kafka-python's schemas start.
API_KEYS: dict[ApiKey, _Api] = {
    ApiKey.PRODUCE: _Api(ProduceRequest, ProduceResponse, 3, 9),
    ApiKey.FETCH: _Api(FetchRequest, FetchResponse, 4, 12),
    ApiKey.LIST_OFFSETS: _Api(ListOffsetsRequest, ListOffsetsResponse, 1, 7),
    ApiKey.METADATA: _Api(MetadataRequest, MetadataResponse, 0, 12),
    # OffsetCommit and OffsetFetch v10 name topics by id: the shell names them (name_topics).
    ApiKey.OFFSET_COMMIT: _Api(OffsetCommitRequest, OffsetCommitResponse, 2, 10, _offset_commit),
    # OffsetFetch v8+ batches groups; the shell splits it (offset_fetch_groups).
    ApiKey.OFFSET_FETCH: _Api(OffsetFetchRequest, OffsetFetchResponse, 1, 10, _offset_fetch),
    # FindCoordinator v5 (TRANSACTION_ABORTABLE) and v6 (share group keys) change nothing for a
    # group's key; the other key types are not coordinated here.
    ApiKey.FIND_COORDINATOR: _Api(FindCoordinatorRequest, FindCoordinatorResponse, 0, 6),
    ApiKey.JOIN_GROUP: _Api(JoinGroupRequest, JoinGroupResponse, 0, 9, _join_group),
    ApiKey.HEARTBEAT: _Api(HeartbeatRequest, HeartbeatResponse, 0, 4, _heartbeat),
    ApiKey.LEAVE_GROUP: _Api(LeaveGroupRequest, LeaveGroupResponse, 0, 5, _leave_group),
    ApiKey.SYNC_GROUP: _Api(SyncGroupRequest, SyncGroupResponse, 0, 5, _sync_group),
    # DescribeGroups v6 answers a group that is not found, or not classic, GROUP_ID_NOT_FOUND.
    ApiKey.DESCRIBE_GROUPS: _Api(DescribeGroupsRequest, DescribeGroupsResponse, 0, 6, _describe_groups),
    ApiKey.LIST_GROUPS: _Api(ListGroupsRequest, ListGroupsResponse, 0, 5, _list_groups),
    ApiKey.API_VERSIONS: _Api(ApiVersionsRequest, ApiVersionsResponse, 0, 4),
    # Answered on every listener, as Kafka's brokers do (ILLEGAL_SASL_STATE without SASL); v0 of
    # the handshake (raw tokens after it, before Kafka 1.0) is not offered.
    ApiKey.SASL_HANDSHAKE: _Api(SaslHandshakeRequest, SaslHandshakeResponse, 1, 1),
    ApiKey.SASL_AUTHENTICATE: _Api(SaslAuthenticateRequest, SaslAuthenticateResponse, 0, 2),
    ApiKey.CREATE_TOPICS: _Api(CreateTopicsRequest, CreateTopicsResponse, 2, 7, _create_topics),
    ApiKey.CREATE_PARTITIONS: _Api(
        CreatePartitionsRequest, CreatePartitionsResponse, 0, 3, _create_partitions
    ),
    ApiKey.DELETE_GROUPS: _Api(DeleteGroupsRequest, DeleteGroupsResponse, 0, 2, _delete_groups),
    # v0 was removed in Kafka 4.0; v6 names topics by name or by id.
    ApiKey.DELETE_TOPICS: _Api(DeleteTopicsRequest, DeleteTopicsResponse, 1, 6, _delete_topics),
    ApiKey.OFFSET_DELETE: _Api(OffsetDeleteRequest, OffsetDeleteResponse, 0, 0, _offset_delete),
    # The ACL APIs, answered by the shell (the ACLs are not group state); v0 has no pattern type.
    ApiKey.DESCRIBE_ACLS: _Api(DescribeAclsRequest, DescribeAclsResponse, 1, 3),
    ApiKey.CREATE_ACLS: _Api(CreateAclsRequest, CreateAclsResponse, 1, 3),
    ApiKey.DELETE_ACLS: _Api(DeleteAclsRequest, DeleteAclsResponse, 1, 3),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: _Api(DescribeClientQuotasRequest, DescribeClientQuotasResponse, 0, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: _Api(AlterClientQuotasRequest, AlterClientQuotasResponse, 0, 1),
    # Kafka's kafka-configs --describe of users asks for these after their quotas.
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _Api(
        DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, 0, 0
    ),
    # Group configs (KIP-848), answered by the shell; kafka-configs --entity-type groups asks.
    ApiKey.DESCRIBE_CONFIGS: _Api(DescribeConfigsRequest, DescribeConfigsResponse, 1, 4),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _Api(
        IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1
    ),
    ApiKey.LIST_CONFIG_RESOURCES: _Api(ListConfigResourcesRequest, ListConfigResourcesResponse, 0, 1),
    ApiKey.CONSUMER_GROUP_HEARTBEAT: _Api(
        ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, 0, 1, _consumer_group_heartbeat
    ),
    ApiKey.CONSUMER_GROUP_DESCRIBE: _Api(
        ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, 0, 1, _consumer_group_describe
    ),
    ApiKey.GROUP_HEARTBEAT: _Api(GroupHeartbeatRequest, GroupHeartbeatResponse, 0, 0, _group_heartbeat),
    ApiKey.GROUP_DESCRIBE: _Api(GroupDescribeRequest, GroupDescribeResponse, 0, 0, _group_describe),
}


def _distinct_protocols(protocols: Any) -> tuple[tuple[str, bytes], ...]:
    """A protocol named twice counts once, with its first metadata, in the member's order."""
    distinct: dict[str, bytes] = {}
    for protocol in protocols:
        distinct.setdefault(protocol.name, bytes(protocol.metadata))
    return tuple(distinct.items())


def offset_fetch_groups(message: Any) -> list[OffsetFetch]:
    """OffsetFetch v8+ asks for several groups at once."""
    return [
        OffsetFetch(
            group_id=g.group_id,
            partitions=None
            if g.topics is None
            else tuple((t.name, p) for t in g.topics for p in t.partition_indexes),
            member_id=getattr(g, "member_id", None),  # v9+
            member_epoch=getattr(g, "member_epoch", -1),
        )
        for g in message.groups
    ]


# --- state machine -> wire ---------------------------------------------------------------------


def to_response(frame: Frame, result: Result) -> Any:
    v = frame.api_version
    if isinstance(result, ConsumerGroupHeartbeatResult) and frame.api_key == ApiKey.GROUP_HEARTBEAT:
        return GroupHeartbeatResponse(
            **_heartbeat_answer(v, result),
            assignment=None
            if result.assignment is None
            else GroupHeartbeatResponse.Assignment(
                resources=[
                    GroupHeartbeatResponse.Assignment.Resources(name=key.decode(), indexes=list(indexes))
                    for key, indexes in result.assignment
                ]
            ),
            owners=None
            if result.owners is None
            else [
                GroupHeartbeatResponse.Owner(name=name, index=index, member_id=member_id, metadata=metadata)
                for name, index, member_id, metadata in result.owners
            ],
        )
    if isinstance(result, ConsumerGroupHeartbeatResult):
        heartbeat_partitions = ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions
        return ConsumerGroupHeartbeatResponse(
            **_heartbeat_answer(v, result),
            assignment=None
            if result.assignment is None
            else ConsumerGroupHeartbeatResponse.Assignment(
                topic_partitions=[
                    heartbeat_partitions(topic_id=_uuid(topic_id), partitions=list(parts))
                    for topic_id, parts in result.assignment
                ]
            ),
        )
    if isinstance(result, ConsumerGroupDescribeResult) and frame.api_key == ApiKey.GROUP_DESCRIBE:
        return _group_describe_response(result)
    if isinstance(result, ConsumerGroupDescribeResult):
        return _consumer_group_describe_response(v, result)
    if isinstance(result, JoinGroupResult):
        return JoinGroupResponse(
            version=v,
            throttle_time_ms=0,
            error_code=result.error,
            generation_id=result.generation_id,
            protocol_type=result.protocol_type,
            # Before v7 the protocol name is not nullable.
            protocol_name=result.protocol_name if v >= 7 else (result.protocol_name or ""),
            leader=result.leader,
            skip_assignment=result.skip_assignment,
            member_id=result.member_id,
            members=[
                JoinGroupResponse.JoinGroupResponseMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata,
                )
                for m in result.members
            ],
        )
    if isinstance(result, SyncGroupResult):
        return SyncGroupResponse(
            version=v,
            throttle_time_ms=0,
            error_code=result.error,
            protocol_type=result.protocol_type,
            protocol_name=result.protocol_name,
            assignment=result.assignment,
        )
    if isinstance(result, HeartbeatResult):
        return HeartbeatResponse(version=v, throttle_time_ms=0, error_code=result.error)
    if isinstance(result, LeaveGroupResult):
        error = result.error
        if v < 3 and error is ErrorCode.NONE and result.members:
            error = result.members[0].error
        return LeaveGroupResponse(
            version=v,
            throttle_time_ms=0,
            error_code=error,
            members=[
                LeaveGroupResponse.MemberResponse(
                    member_id=m.member_id, group_instance_id=m.group_instance_id, error_code=m.error
                )
                for m in result.members
            ],
        )
    if isinstance(result, OffsetFetchResult):
        topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
        by_topic: dict[str, list[Any]] = {}
        for o in _offsets_answered(v, result):
            by_topic.setdefault(o.topic, []).append(
                topic_cls.OffsetFetchResponsePartition(
                    partition_index=o.partition,
                    committed_offset=o.offset,
                    committed_leader_epoch=o.leader_epoch,
                    metadata=o.metadata,
                    error_code=o.error,
                )
            )
        return OffsetFetchResponse(
            version=v,
            throttle_time_ms=0,
            error_code=result.error,
            topics=[topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()],
        )
    if isinstance(result, OffsetDeleteResult):
        # Grouped by topic in the order each topic first appears, as Kafka's response builder
        # does; a group-level error lists no partition.
        delete_topics: dict[str, list[Any]] = {}
        for topic, partition, error in result.partitions:
            delete_topics.setdefault(topic, []).append(
                OffsetDeleteResponse.OffsetDeleteResponseTopic.OffsetDeleteResponsePartition(
                    partition_index=partition, error_code=error
                )
            )
        return OffsetDeleteResponse(
            version=v,
            error_code=result.error,
            throttle_time_ms=0,
            topics=[
                OffsetDeleteResponse.OffsetDeleteResponseTopic(name=name, partitions=parts)
                for name, parts in delete_topics.items()
            ],
        )
    if isinstance(result, ListGroupsResult):
        return ListGroupsResponse(
            version=v,
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            groups=[
                ListGroupsResponse.ListedGroup(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type,
                    group_state=g.state.value,
                    group_type=g.group_type,
                )
                for g in result.groups
            ],
        )
    if isinstance(result, DescribeGroupsResult):
        return _describe_groups_response(v, result)
    if isinstance(result, CreatePartitionsResult):
        return CreatePartitionsResponse(
            version=v,
            throttle_time_ms=0,
            # A name given twice has one result (INVALID_REQUEST), as on Kafka.
            results=[
                CreatePartitionsResponse.CreatePartitionsTopicResult(
                    name=t.name, error_code=t.error, error_message=t.message
                )
                for t in {t.name: t for t in result.topics}.values()  # (alike, where named twice)
            ],
        )
    if isinstance(result, DeleteTopicsResult):
        return DeleteTopicsResponse(
            version=v,
            throttle_time_ms=0,
            responses=[
                DeleteTopicsResponse.DeletableTopicResult(
                    name=t.name, topic_id=_uuid(t.topic_id), error_code=t.error, error_message=t.message
                )
                for t in result.topics
            ],
        )
    if isinstance(result, DeleteGroupsResult):
        return DeleteGroupsResponse(
            version=v,
            throttle_time_ms=0,
            results=[
                DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=error)
                for group_id, error in result.results
            ],
        )
    assert isinstance(result, CreateTopicsResult)
    return CreateTopicsResponse(
        version=v,
        throttle_time_ms=0,
        topics=[
            CreateTopicsResponse.CreatableTopicResult(
                name=t.name,
                topic_id=_uuid(t.topic_id),
                error_code=t.error,
                error_message=t.message,
                num_partitions=t.num_partitions,
                replication_factor=1 if t.error is ErrorCode.NONE else -1,
                configs=[] if t.error is ErrorCode.NONE else None,
            )
            for t in result.topics
        ],
    )


def offset_fetch_batch_response(
    frame: Frame,
    results: list[tuple[str, OffsetFetchResult]],
    topic_ids: Mapping[str, bytes] | None = None,
    unknown: list[list[Any]] | None = None,
) -> Any:
    """OffsetFetch v8+: one entry per group. From v10 topics are named by id (``topic_ids``;
    an offset of a topic without one is left out, as Kafka leaves out topics its metadata does
    not have), and each group's topics of unknown ids (``unknown``, see :func:`name_topics`)
    follow the others, each partition UNKNOWN_TOPIC_ID, as Kafka answers them."""
    group_cls = OffsetFetchResponse.OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    partition_cls = topic_cls.OffsetFetchResponsePartitions
    groups = []
    for index, (group_id, result) in enumerate(results):
        by_topic: dict[str, list[Any]] = {}
        for o in _offsets_answered(frame.api_version, result):
            by_topic.setdefault(o.topic, []).append(
                partition_cls(
                    partition_index=o.partition,
                    committed_offset=o.offset,
                    committed_leader_epoch=o.leader_epoch,
                    metadata=o.metadata,
                    error_code=o.error,
                )
            )
        if topic_ids is None:
            topics = [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]
        else:
            topics = [
                topic_cls(topic_id=_uuid(topic_ids[name]), partitions=parts)
                for name, parts in by_topic.items()
                if name in topic_ids
            ]
            if unknown is not None and result.error is ErrorCode.NONE:
                topics += [
                    topic_cls(
                        topic_id=t.topic_id,
                        partitions=[
                            partition_cls(
                                partition_index=p,
                                committed_offset=-1,
                                committed_leader_epoch=-1,
                                metadata="",
                                error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                            )
                            for p in t.partition_indexes
                        ],
                    )
                    for t in unknown[index]
                ]
        groups.append(group_cls(group_id=group_id, topics=topics, error_code=result.error))
    return OffsetFetchResponse(version=frame.api_version, throttle_time_ms=0, groups=groups)


def _offsets_answered(v: int, result: OffsetFetchResult) -> tuple[FetchedOffset, ...]:
    """The partitions an OffsetFetch answer lists. From v2 a group's error is the answer's own
    field and the answer lists no partition with it; v0 and v1 have no such field, so each
    partition asked for carries the group's error (Kafka's ``OffsetFetchResponse.groupError``)."""
    if v >= 2 and result.error is not ErrorCode.NONE:
        return ()
    return result.offsets


def _heartbeat_answer(v: int, result: ConsumerGroupHeartbeatResult) -> dict[str, Any]:
    """The fields ConsumerGroupHeartbeat's and GroupHeartbeat's answers share."""
    return {
        "version": v,
        "throttle_time_ms": 0,
        "error_code": result.error,
        "error_message": result.message,
        "member_id": result.member_id,
        "member_epoch": result.member_epoch,
        "heartbeat_interval_ms": result.heartbeat_interval_ms,
    }


def _described_group(g: DescribedConsumerGroup) -> dict[str, Any]:
    """The fields ConsumerGroupDescribe and GroupDescribe share, of one group."""
    return {
        "error_code": g.error,
        "error_message": g.message,
        "group_id": g.group_id,
        "group_state": g.state,
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "assignor_name": g.assignor_name,
    }


def _described_member(m: DescribedConsumerMember) -> dict[str, Any]:
    """The fields ConsumerGroupDescribe and GroupDescribe share, of one member."""
    return {
        "member_id": m.member_id,
        "instance_id": m.instance_id,
        "rack_id": m.rack_id,
        "member_epoch": m.member_epoch,
        "client_id": m.client_id,
        "client_host": m.client_host,
    }


def _describe_groups_response(v: int, result: DescribeGroupsResult) -> Any:
    group_cls = DescribeGroupsResponse.DescribedGroup
    groups = []
    for g in result.groups:
        error, message = g.error, g.message
        if error is ErrorCode.GROUP_ID_NOT_FOUND and v < 6:
            error, message = ErrorCode.NONE, None  # Dead, as Kafka answered before v6
        groups.append(
            group_cls(
                error_code=error,
                error_message=message,
                group_id=g.group_id,
                # Kafka's answer for a group refused names no state; one not found is Dead.
                group_state=""
                if error not in (ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND)
                else g.state.value,
                protocol_type=g.protocol_type,
                protocol_data=g.protocol_name,
                members=[
                    group_cls.DescribedGroupMember(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in g.members
                ],
                authorized_operations=g.authorized_operations if error is ErrorCode.NONE else None,
            )
        )
    return DescribeGroupsResponse(version=v, throttle_time_ms=0, groups=groups)


def _group_describe_response(result: ConsumerGroupDescribeResult) -> Any:
    group_cls = GroupDescribeResponse.DescribedGroup
    member_cls = group_cls.Member

    def resources(described: DescribedPartitions) -> list[Any]:
        return [member_cls.Resources(name=name, indexes=list(parts)) for _, name, parts in described]

    return GroupDescribeResponse(
        version=0,
        throttle_time_ms=0,
        groups=[
            group_cls(
                **_described_group(g),
                protocol_type=g.protocol_type if g.error is ErrorCode.NONE else "",
                members=[
                    member_cls(
                        **_described_member(m),
                        subscribed=list(m.subscribed_topic_names),
                        metadata=m.metadata,
                        assignment=resources(m.assignment),
                        target_assignment=resources(m.target_assignment),
                    )
                    for m in g.members
                ],
            )
            for g in result.groups
        ],
    )


_NOT_ASKED = -(2**31)  # Kafka's authorized operations when not asked for, or not given


def _consumer_group_describe_response(v: int, result: ConsumerGroupDescribeResult) -> Any:
    group_cls = ConsumerGroupDescribeResponse.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    partitions_cls = assignment_cls.TopicPartitions

    def assignment(partitions: DescribedPartitions) -> Any:
        return assignment_cls(
            topic_partitions=[
                partitions_cls(topic_id=_uuid(topic_id), topic_name=name, partitions=list(parts))
                for topic_id, name, parts in partitions
            ]
        )

    return ConsumerGroupDescribeResponse(
        version=v,
        throttle_time_ms=0,
        groups=[
            group_cls(
                **_described_group(g),
                # A bit field here (this schema is the project's copy of Kafka's), one bit per code.
                authorized_operations=sum(1 << op for op in g.authorized_operations)
                if g.authorized_operations is not None and g.error is ErrorCode.NONE
                else _NOT_ASKED,
                members=[
                    member_cls(
                        **_described_member(m),
                        subscribed_topic_names=list(m.subscribed_topic_names),
                        subscribed_topic_regex=m.subscribed_topic_regex,
                        assignment=assignment(m.assignment),
                        target_assignment=assignment(m.target_assignment),
                        member_type=0 if m.classic else 1,  # KIP-1099: classic 0, consumer 1
                    )
                    for m in g.members
                ],
            )
            for g in result.groups
        ],
    )
