"""The asyncio shell around the group state machine.

It frames and decodes Kafka requests, hands them to :class:`GroupCoordinator` with the current
time, writes the state machine's durable changes, encodes and sends the replies, and wakes the
state machine when its next timer is due. Like a Kafka broker it handles one request per
connection at a time (the connection is "muted" while a JoinGroup or SyncGroup waits for the
rest of the group), and it treats a connection that breaks the protocol by closing only it.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import logging
import socket
import sqlite3
import struct
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from coordinator_api._errors import ConfigurationError, CoordinatorStartError
from coordinator_api._plugins._manager import PluginRegistry, installed_plugins
from coordinator_api._plugins._registry import ServerAssignor
from coordinator_api._protocol import ApiKey, ErrorCode
from coordinator_api.server import _wire
from coordinator_api.server._acls import AclBinding, AclOperation, Authorizer, InvalidAclError, ResourceType
from coordinator_api.server._authorization import (
    Refused,
    Requester,
    authorize_request,
    authorized_operations,
    offset_fetch,
    with_authorized_operations,
)
from coordinator_api.server._config import READ_BYTES, CoordinatorConfig
from coordinator_api.server._group_configs import GROUP_RESOURCE, GroupConfigError, GroupConfigs
from coordinator_api.server._listeners import Listener, check_listeners
from coordinator_api.server._messages import (
    ConsumerGroupDescribe,
    ConsumerGroupHeartbeat,
    CreatePartitionsResult,
    CreateTopicsResult,
    DescribeGroups,
    Effects,
    Heartbeat,
    MembershipEvent,
    OffsetCommitResult,
    OffsetFetchResult,
    Request,
    Result,
    Topic,
)
from coordinator_api.server._quotas import (
    AlterOutcome,
    ClientQuotas,
    InvalidQuotaError,
    percent_seconds,
    principal_name,
)
from coordinator_api.server._recording import MEMBERSHIP_LOGGER
from coordinator_api.server._sasl import AuthenticationFailed, SaslExchange, SaslSettings
from coordinator_api.server._state import GroupCoordinator
from coordinator_api.server._store import SqliteStore
from coordinator_api.server._tls import TlsSettings, certificate_principal

try:
    from coordinator_api.server import _network
except ImportError:  # the package was installed without a C compiler
    _network = None  # type: ignore[assignment]

log = logging.getLogger("coordinator_api.server")
membership_log = logging.getLogger(MEMBERSHIP_LOGGER)


# Each api key served, by its number: the key and how it is served.
_SERVED = {int(key): (key, api) for key, api in _wire.API_KEYS.items()}
_SIZE = struct.Struct(">i")  # of every request, before it
# What the network threads answer (CoordinatorConfig.network_thread) stays what the server
# would answer across requests of these api keys: they change no group's members, epochs or
# assignment. (OffsetCommit changes offsets, and a classic member's session deadline, which a
# heartbeat's answer does not say.) Requests of the next set change their own group only.
_LEAVES_HEARTBEATS_ALONE = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.METADATA,
        ApiKey.FIND_COORDINATOR,
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.LIST_OFFSETS,
        ApiKey.OFFSET_COMMIT,
        ApiKey.OFFSET_FETCH,
        ApiKey.OFFSET_DELETE,
        ApiKey.LIST_GROUPS,
        ApiKey.DESCRIBE_GROUPS,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        ApiKey.GROUP_DESCRIBE,
        ApiKey.DESCRIBE_CONFIGS,
        ApiKey.DESCRIBE_ACLS,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        ApiKey.LIST_CONFIG_RESOURCES,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
    }
)
_Heartbeat = Heartbeat | ConsumerGroupHeartbeat  # what the heartbeat APIs read as
_CHANGES_ITS_GROUP = frozenset(
    {
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.GROUP_HEARTBEAT,
    }
)
# What a connection may send before it has authenticated, on a listener with SASL.
_BEFORE_AUTHENTICATION = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
# Kafka's answers to the ACL APIs on a broker without an authorizer, and to a client without
# the cluster permission they need.
_NO_AUTHORIZER = "No Authorizer is configured."
_CLUSTER_REFUSED = "Cluster authorization failed."
# DescribeConfigs of anything but a group or a topic, IncrementalAlterConfigs of anything but a
# group.
_NO_CONFIGS = (
    "the embedded coordinator keeps configs of groups only (resource type 32): it has no brokers' "
    "or topics' configs"
)
_TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC


def consumer_server_assignors(
    config: CoordinatorConfig, plugins: PluginRegistry
) -> dict[str, ServerAssignor]:
    """The server-side assignors ``config.consumer_group_assignors`` names, from ``plugins``.

    :raises ConfigurationError: a name no plugin registers for protocol type ``consumer`` (with
        the consumer plugin disabled there are none, and consumer groups of the incremental
        protocol are refused with UNSUPPORTED_ASSIGNOR).
    """
    available = plugins.server_assignors.of("consumer")
    if not available:
        log.warning(
            "no plugin registers server-side assignors for consumer groups: ConsumerGroupHeartbeat is refused"
        )
        return {}
    unknown = [name for name in config.consumer_group_assignors if name not in available]
    if unknown:
        raise ConfigurationError(
            f"consumer_group_assignors names {', '.join(unknown)}, but the plugins register "
            f"only {', '.join(available)} for protocol type 'consumer'"
        )
    return {name: available[name] for name in config.consumer_group_assignors}


def resource_server_assignors(plugins: PluginRegistry) -> dict[str, dict[str, ServerAssignor]]:
    """The server-side assignors of every protocol type but ``consumer``, from ``plugins``: the
    groups of those types rebalance incrementally over GroupHeartbeat."""
    registry = plugins.server_assignors
    return {kind: registry.of(kind) for kind in registry.protocol_types() if kind != "consumer"}


class CoordinatorServer:
    """The embedded coordinator as an asyncio TCP server.

    :param host: address to listen on; 127.0.0.1 unless told otherwise.
    :param port: port to listen on; 0 picks a free one (see :attr:`port` after :meth:`start`).
    :param config: coordinator settings.
    :param data_dir: where durable state lives; ``None`` keeps everything in memory.
    :param topics: topics to declare at start (name -> partition count), kept if they exist.
    :param advertised_host: the host clients are told to connect to (Metadata,
        FindCoordinator); defaults to ``host``, or 127.0.0.1 when listening on all addresses.
    :param fresh_start: start empty even though ``data_dir`` held state whose database is
        missing, empty or damaged (the old database is kept aside, never deleted).
    :param tls: speak TLS on the listener (Kafka's ``SSL`` security protocol), with these
        certificates; None: plaintext.
    :param sasl: every connection authenticates first (Kafka's ``SASL_PLAINTEXT``, or
        ``SASL_SSL`` with ``tls``); None: no authentication.
    :param listeners: several listeners, each with its own address and security protocol
        (:class:`Listener`), instead of the one that ``host``, ``port``, ``advertised_host``,
        ``tls`` and ``sasl`` describe. Clients are told the addresses of the listener they
        connected to, as Kafka's brokers tell them; :attr:`host`, :attr:`port` and
        :attr:`bootstrap_servers` are the first listener's.
    :param plugins: where the server-side assignors come from (default: the installed plugins,
        :func:`~coordinator_api.installed_plugins`); a plugin author's test can give a registry
        of its own (``PluginRegistry.load(plugin_manager)``).
    :raises ConfigurationError: ``listeners`` together with any of those five, listeners that
        clash, or an unauthenticated listener beyond loopback that does not allow anonymous
        clients (:class:`Listener`).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        config: CoordinatorConfig | None = None,
        data_dir: str | Path | None = None,
        topics: Mapping[str, int] | None = None,
        advertised_host: str | None = None,
        fresh_start: bool = False,
        tls: TlsSettings | None = None,
        sasl: SaslSettings | None = None,
        listeners: Sequence[Listener] | None = None,
        plugins: PluginRegistry | None = None,
    ) -> None:
        self.config = config or CoordinatorConfig()
        if listeners is None:
            listeners = [Listener(host=host, port=port, tls=tls, sasl=sasl, advertised_host=advertised_host)]
        elif (host, port, tls, sasl, advertised_host) != ("127.0.0.1", 0, None, None, None):
            raise ConfigurationError(
                "give either listeners or host, port, advertised_host, tls and sasl, not both"
            )
        check_listeners(listeners)
        self.listeners: tuple[Listener, ...] = tuple(listeners)
        acls_decide = self.config.authorizer and not self.config.allow_everyone_if_no_acl_found
        for listener in self.listeners:
            if listener.anonymous_beyond_loopback and not (listener.allow_anonymous or acls_decide):
                raise ConfigurationError(
                    f"listener {listener.name} on {listener.host or 'every address'}:{listener.port} "
                    "reaches beyond this machine and does not authenticate its clients: anonymous "
                    "access there is off by default. Require SASL (--sasl-users-file, a SASL_ "
                    "listener) or client certificates (--ssl-client-auth required), turn the "
                    "authorizer on so that ACLs decide what User:ANONYMOUS may do, or accept "
                    "anonymous clients knowingly (--allow-anonymous)"
                )
        self.host = self.listeners[0].host
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._fresh_start = fresh_start
        self._declared_topics = dict(topics or {})
        registry = plugins if plugins is not None else installed_plugins()
        self.state = GroupCoordinator(
            self.config,
            server_assignors=consumer_server_assignors(self.config, registry),
            classic_payloads=registry.server_assignors.classic_payloads("consumer"),
            resource_assignors=resource_server_assignors(registry),
            stores_state=self._data_dir is not None,
        )
        # authorizer.class.name: the ACLs in force, or None when every client may do everything.
        self.acls: Authorizer | None = None
        if self.config.authorizer:
            self.acls = Authorizer(
                super_users=self.config.super_users,
                allow_everyone_if_no_acl_found=self.config.allow_everyone_if_no_acl_found,
            )
        # Client quotas (kafka-configs), with those stored once started; measured only once one
        # sets a request_percentage.
        self._quotas = ClientQuotas()
        # The groups' own configs (kafka-configs --entity-type groups), with those stored.
        self._group_configs = GroupConfigs(self.config)
        self._store: SqliteStore | None = None
        self._servers: list[asyncio.Server] = []
        # The listeners served by a network thread (config.network_thread): each one's listening
        # socket and thread, the connections they hold by their ids, and the connections being
        # taken over from them.
        self._network_threads: dict[str, tuple[socket.socket, _network.NetworkThread]] = {}
        self._network_conns: dict[int, _Connection] = {}
        self._remembered: dict[str, set[int]] = {}  # group id -> connections whose heartbeat a thread answers
        self._taking_over: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()
        self.ports: dict[str, int] = {}  # listener name -> the port it listens on, once started
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connections: set[_Connection] = set()
        # What every connection reads into (see _Connection.get_buffer).
        self.read_buffer = memoryview(bytearray(READ_BYTES))
        self._per_address: collections.Counter[str] = collections.Counter()
        # Bytes of requests held by all connections (queued.max.request.bytes), and the
        # connections not read for now because they hold a large share of them.
        self.held_request_bytes = 0
        self._over_budget: set[_Connection] = set()
        self._large_holders: set[_Connection] = set()  # holding more than small_request_bytes
        # Each request parked in the state machine: its connection, its frame, what puts the
        # parts the authorizer refused back into its result, and what answers that result when
        # the request's own terms are needed (OffsetCommit v10's topic ids).
        self._inflight: dict[int, tuple[_Connection, _wire.Frame, _Merge | None, _Respond | None]] = {}
        self._refs = itertools.count(1)
        self._heartbeats = _wire.HeartbeatCodecCache()
        # Per listener: the answer names the listener's own address.
        self._every_topic = {listener.name: _wire.EveryTopicMetadataCache() for listener in self.listeners}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_deadline: int | None = None
        self._idle_task: asyncio.Task[None] | None = None
        self._answers: list[tuple[asyncio.Transport, bytes]] = []  # this turn's, not yet sent

    # --- lifecycle ------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The first listener's port (0 until started)."""
        return self.ports.get(self.listeners[0].name, 0)

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of the first listener, as clients are told to connect to it."""
        return self.bootstrap_servers_of(self.listeners[0].name)

    def _client_port(self, listener: Listener) -> int:
        """The port clients are told to connect to on ``listener`` (0 until started, unless
        advertised)."""
        return listener.advertised_port or self.ports.get(listener.name, 0)

    @property
    def network_thread_answers(self) -> int:
        """How many heartbeats the network threads answered themselves (``network_thread``)."""
        return sum(thread.answered for _, thread in list(self._network_threads.values()))

    def bootstrap_servers_of(self, listener: str) -> str:
        """``host:port`` of the listener of that name, as clients are told to connect to it."""
        for candidate in self.listeners:
            if candidate.name == listener:
                return f"{candidate.client_host}:{self._client_port(candidate)}"
        raise ConfigurationError(
            f"no listener named {listener!r}; there are {', '.join(lis.name for lis in self.listeners)}"
        )

    async def start(self) -> None:
        """Load durable state, declare topics and start listening."""
        self._loop = asyncio.get_running_loop()
        if self._data_dir is not None:
            self._store = SqliteStore(self._data_dir, fresh_start=self._fresh_start)
            topics, groups, offsets = self._store.load()
            self.state.restore(
                topics=topics,
                groups=groups,
                offsets=offsets,
                consumer_groups=self._store.load_consumer_groups(),
                now_ms=self._now_ms(),
            )
            if self.acls is not None:
                self.acls.add(self._store.load_acls())
            self._quotas.apply(self._store.load_client_quotas())
            for group_id, values in self._store.load_group_configs().items():
                self._set_group_configs(group_id, values)
        for name, partitions in self._declared_topics.items():
            existing = self.state.topic(name)
            if existing is not None:
                if existing.partitions != partitions:
                    log.warning(
                        "topic %s exists with %d partitions; keeping it (declared: %d)",
                        name,
                        existing.partitions,
                        partitions,
                    )
                continue
            self.create_topic(name, partitions)
        if self.config.network_thread and _network is None:
            raise ConfigurationError(
                "network_thread needs the C extension coordinator_api.server._network, which was not "
                "built when the package was installed (no C compiler?); reinstall with one, or turn it off"
            )
        for listener in self.listeners:
            if self._uses_network_thread(listener):
                try:
                    self._start_network_thread(listener)
                except OSError as exc:
                    await self.close()
                    raise CoordinatorStartError(
                        f"cannot listen on {listener.host}:{listener.port} (listener {listener.name}): "
                        f"{exc}; choose another port, or 0 for a free one"
                    ) from exc
                self._announce(listener)
                continue
            try:
                server = await self._loop.create_server(
                    lambda listener=listener: _Connection(self, listener),
                    listener.host,
                    listener.port,
                    ssl=listener.tls.context() if listener.tls is not None else None,
                )
            except OSError as exc:
                await self.close()
                raise CoordinatorStartError(
                    f"cannot listen on {listener.host}:{listener.port} (listener {listener.name}): {exc}; "
                    "choose another port, or 0 for a free one"
                ) from exc
            self._servers.append(server)
            self.ports[listener.name] = server.sockets[0].getsockname()[1]
            self._announce(listener)
        self._idle_task = asyncio.create_task(self._close_idle_connections())

    def _uses_network_thread(self, listener: Listener) -> bool:
        """Whether a network thread serves ``listener``: when asked to, on a plaintext listener
        without SASL (the thread reads bytes as they arrive on the socket)."""
        return self.config.network_thread and listener.tls is None and listener.sasl is None

    def _start_network_thread(self, listener: Listener) -> None:
        assert self._loop is not None
        assert _network is not None
        family, kind, proto, _, address = socket.getaddrinfo(
            listener.host or None, listener.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listening = socket.socket(family, kind, proto)
        try:
            listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listening.bind(address)
            listening.listen(100)  # asyncio's backlog
            listening.setblocking(False)
            thread = _network.NetworkThread(listening.fileno())
        except OSError:
            listening.close()
            raise
        self._network_threads[listener.name] = (listening, thread)
        self._loop.add_reader(thread.notify_fd, self._take_over, listener, thread)
        self.ports[listener.name] = listening.getsockname()[1]

    def _take_over(self, listener: Listener, thread: _network.NetworkThread) -> None:
        """Serve the connections the network thread accepted: each through the socket it
        passes their requests on (and takes their answers back) on."""
        assert self._loop is not None
        for conn_id, fd, host, _port in thread.accepted():
            end = _NetworkEnd(thread, conn_id, host)
            task = self._loop.create_task(
                self._loop.connect_accepted_socket(
                    lambda end=end: _Connection(self, listener, end),  # type: ignore[misc]
                    socket.socket(fileno=fd),
                )
            )
            self._taking_over.add(task)
            task.add_done_callback(self._taking_over.discard)

    def _settle_network(self, key: ApiKey | None = None, group_id: str | None = None) -> None:
        """Before the server takes a request (of api ``key``, for group ``group_id``; None: any
        other change, of any group): the network threads forget the heartbeats whose answers it
        could change, and the sessions of the members they answered are renewed first, in the
        order the answers went out. The server answers those heartbeats itself again, and tells
        the threads afresh, until the next change."""
        if not self._network_threads:
            return
        if key is None or key not in _LEAVES_HEARTBEATS_ALONE:
            self._forget_network(group_id if key is None or key in _CHANGES_ITS_GROUP else None)
        self._renew_from_network()

    def _forget_network(self, group_id: str | None) -> None:
        """The network threads forget the heartbeats of ``group_id`` they answer (None: all)."""
        if group_id is None:
            for _, thread in self._network_threads.values():
                thread.forget_all()
            self._remembered.clear()
            return
        for conn_id in self._remembered.pop(group_id, ()):
            conn = self._network_conns.get(conn_id)
            if conn is not None and conn.network is not None:
                conn.network.thread.forget(conn_id)

    def _remember_network(
        self, network: _NetworkEnd, request: _Heartbeat, payload: bytes, answer: bytes
    ) -> None:
        """From now on ``network``'s thread answers this heartbeat itself, with this answer."""
        before = network.request
        if before is not None and before.group_id != request.group_id:
            self._remembered.get(before.group_id, set()).discard(network.conn_id)
        network.request = request
        self._remembered.setdefault(request.group_id, set()).add(network.conn_id)
        network.thread.remember(network.conn_id, payload, answer)

    def _renew_from_network(self) -> None:
        """Renew the session of each member a network thread answered, as of its last answer."""
        for _, thread in self._network_threads.values():
            for conn_id, answered_ms in thread.renewals():
                conn = self._network_conns.get(conn_id)
                if conn is None or conn.network is None or conn.network.request is None:
                    continue
                self.state.renew(conn.network.request, answered_ms)
                conn.last_activity_ms = max(conn.last_activity_ms, answered_ms)

    def _announce(self, listener: Listener) -> None:
        port = self.ports[listener.name]
        log.info(
            "coordinator listening on %s:%d (listener %s, %s), advertised to clients as %s (data dir: %s)",
            listener.host,
            port,
            listener.name,
            listener.security_protocol,
            self.bootstrap_servers_of(listener.name),
            self._data_dir or "none, state in memory",
        )
        if listener.anonymous_beyond_loopback:
            if not self.config.authorizer:
                granted = (
                    "list and describe every group, join, leave or fence any member, and read or "
                    "overwrite any committed offset"
                )
            elif self.config.allow_everyone_if_no_acl_found:
                granted = "do whatever the ACLs grant User:ANONYMOUS, and anything to what no ACL names"
            else:
                granted = "do whatever the ACLs grant User:ANONYMOUS"
            log.warning(
                "listener %s on %s:%d reaches beyond this machine (%s) and does not authenticate its "
                "clients: anyone who can reach the port may %s. Listen on 127.0.0.1 (the default), "
                "require SASL (--sasl-users-file) or client certificates (--ssl-client-auth required), or "
                "allow only trusted hosts to reach this port.",
                listener.name,
                listener.host or "every address",
                port,
                "TLS" if listener.tls is not None else "no TLS",
                granted,
            )

    async def serve_forever(self) -> None:
        assert self.ports, "call start() first"
        await asyncio.gather(*(server.serve_forever() for server in self._servers), self._stopped.wait())

    async def close(self) -> None:
        if self._idle_task is not None:
            self._idle_task.cancel()
        if self._timer is not None:
            self._timer.cancel()
        for server in self._servers:
            server.close()
        for conn in list(self._connections):
            conn.close("coordinator shutting down")
        for task in self._taking_over:
            task.cancel()
        for listening, thread in self._network_threads.values():
            if self._loop is not None:
                self._loop.remove_reader(thread.notify_fd)
            thread.stop()  # closes what it still holds: the clients see the server go
            listening.close()
        self._network_threads.clear()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
        self._stopped.set()
        if self._store is not None:
            self._store.close()
            self._store = None

    def create_topic(self, name: str, partitions: int) -> None:
        """Declare a topic (call on the server's event loop). Raises ConfigurationError if the
        name or partition count is invalid or the topic exists."""
        result = self._run_directly(functools.partial(self.state.create_topic, name, partitions))
        assert isinstance(result, CreateTopicsResult)
        created = result.topics[0]
        if created.error is not ErrorCode.NONE:
            raise ConfigurationError(f"cannot create topic {name!r}: {created.message}")

    def create_partitions(self, name: str, count: int) -> None:
        """Give topic ``name`` ``count`` partitions in all (call on the server's event loop).
        Raises ConfigurationError if the topic does not exist or ``count`` is not more than it
        has."""
        result = self._run_directly(functools.partial(self.state.create_partitions, name, count))
        assert isinstance(result, CreatePartitionsResult)
        created = result.topics[0]
        if created.error is not ErrorCode.NONE:
            message = created.message or f"{created.error.name}: no topic {name!r}"
            raise ConfigurationError(f"cannot give topic {name!r} {count} partitions: {message}")

    def _run_directly(self, step: Callable[[int], Effects]) -> Result:
        """Take one of the state machine's direct entry points (``step`` of the time) as the
        server takes a request that changes groups, and return its result."""
        self._settle_network()
        fx = step(self._now_ms())
        self._apply(fx)
        return fx.replies[0][1]

    # --- time and timers ------------------------------------------------------------------

    def _now_ms(self) -> int:
        assert self._loop is not None
        return int(self._loop.time() * 1000)

    def _reschedule(self) -> None:
        deadline = self.state.next_deadline()
        if deadline == self._timer_deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_deadline = deadline
        if deadline is not None and self._loop is not None:
            self._timer = self._loop.call_at(deadline / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_deadline = None
        now = self._now_ms()
        if self._network_threads:
            # A member the network threads answered is not expired: its session is renewed
            # first, and then usually nothing is due any more.
            self._renew_from_network()
            deadline = self.state.next_deadline()
            if deadline is None or deadline > now:
                self._reschedule()
                return
            self._settle_network()
        self._apply(self.state.expire(now))

    async def _close_idle_connections(self) -> None:
        idle_ms = self.config.connections_max_idle_ms
        arrival_ms = self.config.request_arrival_timeout_ms
        period = max(min(idle_ms / 4000, arrival_ms / 4000, 30.0), 0.05)
        while True:
            await asyncio.sleep(period)
            if self._network_threads:
                self._renew_from_network()  # what the network threads answered is activity too
                self._reschedule()
            now = self._now_ms()
            for conn in list(self._connections):
                if conn.busy_ref is None and now - conn.last_activity_ms > idle_ms:
                    conn.close(f"idle for more than {idle_ms} ms")
                elif conn.frame_started_ms is not None and now - conn.frame_started_ms > arrival_ms:
                    conn.close(
                        f"a request started arriving more than {arrival_ms} ms ago and is not whole yet"
                    )

    # --- requests ---------------------------------------------------------------------------

    def _apply(self, fx: Effects) -> None:
        if fx.writes and self._store is not None:
            try:
                self._store.apply(fx.writes)
            except sqlite3.Error:
                # Nothing that was not stored may be acknowledged: drop the connections
                # waiting for these replies; their clients retry, as after a broker failure.
                log.exception("could not store coordinator state; closing affected connections")
                for ref, _ in fx.replies:
                    entry = self._inflight.pop(ref, None) if isinstance(ref, int) else None
                    if entry is not None:
                        entry[0].close("state could not be stored")
                self._reschedule()
                return
        for ref, answered in fx.replies:
            entry = self._inflight.pop(ref, None) if isinstance(ref, int) else None
            if entry is not None:
                conn, frame, merge, respond = entry
                result = merge(answered) if merge is not None else answered
                if frame.api_key in self._heartbeats.APIS and not log.isEnabledFor(logging.DEBUG):
                    self._finish_heartbeat(conn, frame, result)
                else:
                    conn.finish(frame, _answer_of(frame, result, respond))
        if fx.events:
            # The answers first: a membership change's log lines (one per member it moves) must
            # not delay the members it concerns.
            self.send_answers()
            for event in fx.events:
                _log_event(event)
        self._reschedule()

    def _finish_heartbeat(self, conn: _Connection, frame: _wire.Frame, result: Result) -> bytes | None:
        """Answer a heartbeat, encoded through the heartbeat cache (see :meth:`_apply`); the
        answer, unless its client's request quota was measured (it may be throttled)."""
        metered = conn.meter is not None
        throttle_ms = self.throttle_time(conn, frame, answered=True) if metered else 0
        answer = self._heartbeats.response(frame, result, throttle_ms)
        conn.finish(frame, answer, throttle_ms)
        return None if metered else answer

    def handle_frame(self, conn: _Connection, payload: bytes) -> None:
        """Route one complete request. Raises MalformedRequest to have the connection closed.

        Once a request quota is set (:attr:`ClientQuotas.enabled`), the time spent on the
        request is measured here for its client's quota (:meth:`throttle_time`)."""
        quotas = self._quotas
        if not quotas.enabled:
            self._route_frame(conn, payload)
            return
        started = time.perf_counter_ns()
        known = conn.client_id_field
        if known is not None and payload.startswith(known[1], 8):
            client_id = known[0]
        else:
            known = conn.client_id_field = _wire.client_id(payload)
            client_id = known[0]
        principal = conn.principal
        meter = conn.meter = _Meter(
            principal_name(principal) if principal is not None else None, client_id, started
        )
        try:
            self._route_frame(conn, payload)
        finally:
            spent = time.perf_counter_ns() - meter.since_ns
            meter.since_ns = 0
            if not meter.answered:
                meter.spent_ns += spent  # parked: counted when it is answered
            else:
                if conn.meter is meter:
                    conn.meter = None
                if meter.user is not None:
                    # Encoding and sending the answer: counted, and judged with the next request.
                    quotas.record_unchecked(
                        meter.user, meter.client_id, percent_seconds(spent), self._now_ms()
                    )

    def throttle_time(self, conn: _Connection, frame: _wire.Frame, *, answered: bool) -> int:
        """Count the time spent on ``conn``'s current request for its client's request quota,
        now that its answer is decided, and return the throttle time the answer carries (0
        within the quota, for a request Kafka does not count, and with no answer)."""
        meter = conn.meter
        assert meter is not None
        now_ns = time.perf_counter_ns()
        spent = meter.spent_ns
        if meter.since_ns:
            spent += now_ns - meter.since_ns
            meter.since_ns = now_ns  # the rest of handle_frame is counted after the answer
        else:
            conn.meter = None  # answered after it was parked: nothing more to count
        meter.spent_ns = 0
        meter.answered = True
        if meter.user is None or frame.api_key in _NOT_COUNTED or not answered:
            meter.user = None
            return 0
        return self._quotas.record(meter.user, meter.client_id, percent_seconds(spent), self._now_ms())

    def _route_frame(self, conn: _Connection, payload: bytes) -> None:
        frame = _wire.peek_frame(payload)
        served = _SERVED.get(frame.api_key)
        if served is None:
            raise _wire.MalformedRequest(f"unknown api key {frame.api_key}")
        key, api = served
        if not api.min_version <= frame.api_version <= api.max_version:
            if key is ApiKey.API_VERSIONS:
                # KIP-511: answer with v0 and our versions, so the client can retry with one.
                v0 = _wire.Frame(frame.api_key, 0, frame.correlation_id)
                conn.finish(v0, _wire.api_versions_response(0, ErrorCode.UNSUPPORTED_VERSION))
                return
            raise _wire.MalformedRequest(
                f"api key {frame.api_key} v{frame.api_version} is not supported "
                f"(v{api.min_version}-v{api.max_version} are)"
            )
        if conn.principal is None and key not in _BEFORE_AUTHENTICATION:
            raise _wire.MalformedRequest(f"{key.name} before SASL authentication")
        if key in _BEFORE_AUTHENTICATION and key is not ApiKey.API_VERSIONS:
            self._authenticate(conn, frame, _wire.decode(frame, payload))
            return
        debug = log.isEnabledFor(logging.DEBUG)
        respond: _Respond | None = None
        if key in self._heartbeats.APIS and not debug:
            request = self._heartbeats.request(frame, payload, conn.client_host)
            if self.acls is None and self._renew(conn, frame, payload, request):
                return
            self._settle_network(key, cast(_Heartbeat, request).group_id)
        elif api.to_request is not None and not (key is ApiKey.OFFSET_FETCH and frame.api_version >= 8):
            if key is ApiKey.OFFSET_COMMIT:
                request, respond = self._offset_commit(conn, frame, payload)
            else:
                request = _wire.read_request(frame, payload, conn.client_host)
            self._settle_network(key, getattr(request, "group_id", None))
            if debug:
                log.debug("request from %s: %r", conn.client_host, request)
        else:
            self._settle_network(key)
            message = _wire.decode(frame, payload)
            if debug:
                log.debug("request from %s: %r", conn.client_host, message)
            try:
                answer = self._answer(conn, frame, message)
            except (TypeError, AttributeError, ValueError) as exc:
                raise _wire.MalformedRequest(
                    f"api key {frame.api_key} v{frame.api_version} has fields this server cannot read: "
                    f"{exc!r}"
                ) from exc
            conn.finish(frame, answer)
            return
        merge: _Merge | None = None
        who = self._requester(conn) if self.acls is not None else None
        if who is not None:
            decision = authorize_request(who, request)
            if isinstance(decision, Refused):
                # The state machine never sees a refused request: nothing changes in any group.
                conn.finish(frame, _answer_of(frame, decision.result, respond))
                return
            request, merge = decision.request, decision.merge
        if (
            isinstance(request, DescribeGroups | ConsumerGroupDescribe)
            and request.include_authorized_operations
        ):
            merge = _then(merge, functools.partial(with_authorized_operations, who))
        ref = next(self._refs)
        self._inflight[ref] = (conn, frame, merge, respond)
        conn.busy_ref = ref
        self._apply(self.state.handle(ref, request, self._now_ms()))

    def _renew(self, conn: _Connection, frame: _wire.Frame, payload: bytes, request: Request) -> bool:
        """Answer a steady heartbeat at once, its session renewed, with nothing else to do
        (:meth:`GroupCoordinator.renew`); False if it is not one. On a connection of a network
        thread, the thread answers the same heartbeat itself from then on."""
        network = conn.network
        if network is not None:
            self._renew_from_network()  # this member's answers there are older than this one
        renewed = self.state.renew(request, self._now_ms())
        if renewed is None:
            return False
        answer = self._finish_heartbeat(conn, frame, renewed)
        if network is not None and answer is not None:
            self._remember_network(network, cast(_Heartbeat, request), payload, answer)
        self._reschedule()
        return True

    def _offset_commit(
        self, conn: _Connection, frame: _wire.Frame, payload: bytes
    ) -> tuple[Request, _Respond]:
        """An OffsetCommit, answered in the shape Kafka's KafkaApis gives it (see
        :func:`_wire.offset_commit_response`); v10 names its topics by id: named from the
        coordinator's topics before anything else (Kafka's KafkaApis does so from its metadata),
        and answered by id, an unknown id UNKNOWN_TOPIC_ID."""
        request, asked = _wire.read_offset_commit(frame, payload, conn.client_host, self.state.topic_names())

        def respond(result: Result) -> Any:
            assert isinstance(result, OffsetCommitResult)
            ids = self._topic_ids([result]) if frame.api_version >= 10 else {}
            return _wire.offset_commit_response(frame, result, ids, asked)

        return request, respond

    def _topic_ids(self, results: Iterable[Result]) -> dict[str, bytes]:
        """The topic id of each topic the offset results name, that the coordinator has."""
        names: set[str] = set()
        for result in results:
            if isinstance(result, OffsetCommitResult):
                names.update(topic for topic, _, _ in result.errors)
            elif isinstance(result, OffsetFetchResult):
                names.update(o.topic for o in result.offsets)
        return {name: topic.topic_id for name in names if (topic := self.state.topic(name)) is not None}

    def _requester(self, conn: _Connection) -> Requester:
        assert self.acls is not None
        assert conn.principal is not None
        return Requester(self.acls, conn.principal, conn.client_host.lstrip("/"))

    def _authenticate(self, conn: _Connection, frame: _wire.Frame, message: Any) -> None:
        """SaslHandshake and SaslAuthenticate, as Kafka's brokers answer them; a failed
        authentication is answered, then the connection is closed."""
        settings = conn.listener.sasl
        if frame.api_key == ApiKey.SASL_HANDSHAKE:
            enabled = list(settings.mechanisms) if settings is not None else []
            if settings is None or conn.sasl is not None or conn.principal is not None:
                error = ErrorCode.ILLEGAL_SASL_STATE
            elif message.mechanism not in enabled:
                error = ErrorCode.UNSUPPORTED_SASL_MECHANISM
            else:
                error = ErrorCode.NONE
                conn.sasl = SaslExchange(message.mechanism, settings.users())
            response = _wire.sasl_handshake_response(frame.api_version, error, enabled)
            conn.finish(frame, _wire.encode(frame, response))
            if error is not ErrorCode.NONE and settings is not None:
                conn.close(f"SASL handshake: {error.name}")
            return
        exchange = conn.sasl
        if exchange is None or conn.principal is not None:
            response = _wire.sasl_authenticate_response(
                frame.api_version, ErrorCode.ILLEGAL_SASL_STATE, "Unexpected SaslAuthenticate request"
            )
            conn.finish(frame, _wire.encode(frame, response))
            if settings is not None:
                conn.close("SaslAuthenticate out of turn")
            return
        try:
            token = exchange.respond(bytes(message.auth_bytes))
        except AuthenticationFailed as failed:
            log.warning("SASL authentication from %s failed: %s", conn.client_host, failed)
            response = _wire.sasl_authenticate_response(
                frame.api_version, ErrorCode.SASL_AUTHENTICATION_FAILED, str(failed)
            )
            conn.finish(frame, _wire.encode(frame, response))
            conn.close("SASL authentication failed")
            return
        conn.principal = exchange.principal
        if conn.principal is not None:
            log.info("%s authenticated as %s (%s)", conn.client_host, conn.principal, exchange.mechanism)
        response = _wire.sasl_authenticate_response(frame.api_version, ErrorCode.NONE, None, token)
        conn.finish(frame, _wire.encode(frame, response))

    def _answer(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        """The answer to a request the shell handles itself (None: no answer is expected; bytes:
        already encoded)."""
        key = ApiKey(frame.api_key)
        if key is ApiKey.API_VERSIONS:
            return _wire.api_versions_response(frame.api_version)
        if key is ApiKey.METADATA:
            return self._metadata(conn, frame, message)
        if key is ApiKey.FIND_COORDINATOR:
            refused: frozenset[str] = frozenset()
            if self.acls is not None and message.key_type == 0:
                who = self._requester(conn)
                keys = _wire.coordinator_keys(frame.api_version, message)
                refused = frozenset(
                    k for k in keys if not who.may(AclOperation.DESCRIBE, ResourceType.GROUP, k)
                )
            return _wire.find_coordinator_response(
                frame.api_version,
                message,
                node_id=self.config.node_id,
                host=conn.listener.client_host,
                port=self._client_port(conn.listener),
                refused=refused,
            )
        if key in _wire.ACL_APIS:
            return self._acl_request(conn, frame, message)
        if key in _wire.QUOTA_APIS:
            return self._quota_request(conn, frame, message)
        if key in _wire.CONFIG_APIS:
            return self._config_request(conn, frame, message)
        if key is ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS:
            return self._scram_credentials(conn, frame, message)
        if key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS):
            # acks=0: the producer expects no response.
            if key is ApiKey.PRODUCE and message.acks == 0:
                return None
            return _wire.not_a_log_response(frame, message)
        # OffsetFetch v8+ asks for several groups at once; reads only, answered at once. From v10
        # it names topics by id: named from the coordinator's topics first, as in OffsetCommit.
        by_id = frame.api_version >= 10
        unknown = [
            _wire.name_topics(g.topics, self.state.topic_names()) if by_id else [] for g in message.groups
        ]
        now = self._now_ms()
        results: list[tuple[str, OffsetFetchResult]] = []
        for asked in _wire.offset_fetch_groups(message):
            group_fetch: Request = asked
            merge: _Merge | None = None
            if self.acls is not None:
                decision = offset_fetch(self._requester(conn), asked)
                if isinstance(decision, Refused):
                    assert isinstance(decision.result, OffsetFetchResult)
                    results.append((asked.group_id, decision.result))
                    continue
                group_fetch, merge = decision.request, decision.merge
            fx = self.state.handle(None, group_fetch, now)
            result = fx.replies[0][1]
            if merge is not None:
                result = merge(result)
            assert isinstance(result, OffsetFetchResult)
            results.append((asked.group_id, result))
        if not by_id:
            return _wire.offset_fetch_batch_response(frame, results)
        ids = self._topic_ids(result for _, result in results)
        return _wire.offset_fetch_batch_response(frame, results, ids, unknown)

    def _metadata(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        who = self._requester(conn) if self.acls is not None else None
        every_topic = _wire.asks_for_every_topic(frame.api_version, message)
        refused: set[str] = set()
        if who is not None and not every_topic:
            # KafkaApis: a topic the client may not describe is answered TOPIC_AUTHORIZATION_FAILED.
            by_id: dict[bytes, str] | None = None  # made only if a topic is asked for by id
            for asked in message.topics:
                topic_id = getattr(asked, "topic_id", None)
                name = asked.name
                if topic_id is not None and topic_id.int != 0:
                    if by_id is None:
                        by_id = {t.topic_id: t.name for t in self.state.topics()}
                    name = by_id.get(topic_id.bytes)
                if name is not None and not who.may(AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                    refused.add(name)
        not_created: set[str] = set()
        if self.config.auto_create_topics and message.topics:
            allowed = frame.api_version < 4 or message.allow_auto_topic_creation
            may_create_any = who is None or who.may(AclOperation.CREATE, ResourceType.CLUSTER)
            for requested in message.topics:
                name = requested.name
                if allowed and name is not None and name not in refused and self.state.topic(name) is None:
                    if may_create_any or (
                        who is not None and who.may(AclOperation.CREATE, ResourceType.TOPIC, name)
                    ):
                        self.create_topic(name, self.config.default_num_partitions)
                    else:
                        not_created.add(name)  # auto-creation needs CREATE, as on Kafka
        topics: dict[str, Topic] = {t.name: t for t in self.state.topics()}
        if who is not None and every_topic:
            # Every topic: those the client may not describe are left out.
            topics = {
                n: t for n, t in topics.items() if who.may(AclOperation.DESCRIBE, ResourceType.TOPIC, n)
            }

        def make() -> Any:
            return _wire.metadata_response(
                frame.api_version,
                message,
                topics,
                node_id=self.config.node_id,
                host=conn.listener.client_host,
                port=self._client_port(conn.listener),
                cluster_id=self.config.cluster_id,
                refused=frozenset(refused),
                creation_refused=frozenset(not_created),
                operations=functools.partial(authorized_operations, who),
            )

        if every_topic and who is None and not _wire.asks_for_operations(frame.api_version, message):
            return self._every_topic[conn.listener.name].response(frame, self.state.topics_version, make)
        return make()

    def _acl_request(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        """DescribeAcls, CreateAcls and DeleteAcls, as Kafka's brokers answer them: SECURITY_DISABLED
        without an authorizer; CLUSTER DESCRIBE (describe) or CLUSTER ALTER (create, delete) needed;
        changes stored (and synced) in the data directory before they are answered."""
        key, v = ApiKey(frame.api_key), frame.api_version
        acls = self.acls
        text: str | None
        if acls is None:
            error, text = ErrorCode.SECURITY_DISABLED, _NO_AUTHORIZER
        else:
            needed = AclOperation.DESCRIBE if key is ApiKey.DESCRIBE_ACLS else AclOperation.ALTER
            allowed = self._requester(conn).may(needed, ResourceType.CLUSTER)
            error, text = (
                (ErrorCode.NONE, None)
                if allowed
                else (ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
            )
        if key is ApiKey.DESCRIBE_ACLS:
            if error is not ErrorCode.NONE or acls is None:
                return _wire.describe_acls_response(v, error, text, [])
            try:
                chosen = _wire.acl_filter(message)
            except InvalidAclError as invalid:
                return _wire.describe_acls_response(v, ErrorCode.INVALID_REQUEST, str(invalid), [])
            return _wire.describe_acls_response(v, ErrorCode.NONE, None, acls.bindings(chosen))
        if key is ApiKey.CREATE_ACLS:
            if error is not ErrorCode.NONE or acls is None:
                return _wire.create_acls_response(v, [(error, text)] * len(message.creations))
            outcomes: list[tuple[ErrorCode, str | None]] = []
            valid: list[AclBinding] = []
            for creation in message.creations:
                try:
                    valid.append(_wire.acl_creation(creation))
                    outcomes.append((ErrorCode.NONE, None))
                except InvalidAclError as invalid:
                    outcomes.append((ErrorCode.INVALID_REQUEST, str(invalid)))
            new = sorted({b for b in valid if b not in acls})
            if not self._store_acls(conn, added=new, removed=[]):
                return None
            for binding in acls.add(new):
                log.info("ACL added by %s: %s", conn.principal, _acl_words(binding))
            return _wire.create_acls_response(v, outcomes)
        if error is not ErrorCode.NONE or acls is None:
            return _wire.delete_acls_response(v, [(error, text, [])] * len(message.filters))
        results: list[tuple[ErrorCode, str | None, list[AclBinding]]] = []
        removed: set[AclBinding] = set()
        for entry in message.filters:
            try:
                matched = acls.bindings(_wire.acl_filter(entry))
            except InvalidAclError as invalid:
                results.append((ErrorCode.INVALID_REQUEST, str(invalid), []))
                continue
            results.append((ErrorCode.NONE, None, matched))
            removed.update(matched)
        if not self._store_acls(conn, added=[], removed=sorted(removed)):
            return None
        acls.remove(removed)
        for binding in sorted(removed):
            log.info("ACL removed by %s: %s", conn.principal, _acl_words(binding))
        return _wire.delete_acls_response(v, results)

    def _store_acls(self, conn: _Connection, *, added: list[AclBinding], removed: list[AclBinding]) -> bool:
        """Store an ACL change before it is made and answered; False (and the connection closed,
        so its client retries) if it could not be stored."""
        if self._store is None or not (added or removed):
            return True
        try:
            self._store.change_acls(added, removed)
        except sqlite3.Error:
            log.exception("could not store an ACL change; closing the connection that asked for it")
            conn.close("state could not be stored")
            return False
        return True

    def _quota_request(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        """DescribeClientQuotas and AlterClientQuotas, as Kafka's brokers answer them (KIP-546):
        DESCRIBE_CONFIGS (describe) or ALTER_CONFIGS (alter) on the cluster needed when the
        authorizer is on; changes stored (and synced) in the data directory before they are
        made and answered."""
        quotas = self._quotas
        v = frame.api_version
        describing = frame.api_key == ApiKey.DESCRIBE_CLIENT_QUOTAS
        needed = AclOperation.DESCRIBE_CONFIGS if describing else AclOperation.ALTER_CONFIGS
        allowed = self.acls is None or self._requester(conn).may(needed, ResourceType.CLUSTER)
        if describing:
            if not allowed:
                refused = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                return _wire.describe_client_quotas_response(v, refused, _CLUSTER_REFUSED, None)
            components, strict = _wire.quota_filter(message)
            try:
                found = quotas.describe(components, strict=strict)
            except InvalidQuotaError as invalid:
                return _wire.describe_client_quotas_response(v, invalid.error, str(invalid), None)
            return _wire.describe_client_quotas_response(v, ErrorCode.NONE, None, found)
        alterations = _wire.quota_alterations(message)
        if not allowed:
            outcomes = [
                AlterOutcome(a.entity, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED)
                for a in alterations
            ]
            return _wire.alter_client_quotas_response(v, outcomes)
        outcomes, changes = quotas.alter(alterations)
        if message.validate_only or not changes:
            return _wire.alter_client_quotas_response(v, outcomes)
        if self._store is not None:
            try:
                self._store.change_client_quotas(changes)
            except sqlite3.Error:
                log.exception(
                    "could not store a client quota change; closing the connection that asked for it"
                )
                conn.close("state could not be stored")
                return None
        quotas.apply(changes)
        for change in changes:
            log.info(
                "client quota of %s %s by %s",
                change.entity,
                f"removed: {change.key}" if change.value is None else f"set: {change.key}={change.value:g}",
                conn.principal,
            )
        return _wire.alter_client_quotas_response(v, outcomes)

    def _config_request(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        """DescribeConfigs, IncrementalAlterConfigs and ListConfigResources, as Kafka's brokers
        answer them for groups (KIP-848's group configs), the only resources with configs here:
        DESCRIBE_CONFIGS or ALTER_CONFIGS on each group, DESCRIBE_CONFIGS on the cluster to list
        them, when the authorizer is on; a change stored (and synced) in the data directory
        before it is made and answered. A topic is described with no configs (it keeps no log
        here; ``kafka-topics --describe`` asks), as Kafka's brokers check it: DESCRIBE_CONFIGS
        on the topic, then that it exists."""
        v = frame.api_version
        if frame.api_key == ApiKey.LIST_CONFIG_RESOURCES:
            if self.acls is not None and not self._requester(conn).may(
                AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER
            ):
                return _wire.list_config_resources_response(v, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, [])
            listed = v >= 1 and (not message.resource_types or GROUP_RESOURCE in message.resource_types)
            return _wire.list_config_resources_response(
                v, ErrorCode.NONE, self._group_configs.groups() if listed else []
            )
        operation = (
            AclOperation.DESCRIBE_CONFIGS
            if frame.api_key == ApiKey.DESCRIBE_CONFIGS
            else AclOperation.ALTER_CONFIGS
        )

        def refusal(kind: int, name: str) -> tuple[ErrorCode, str] | None:
            if kind == _TOPIC_RESOURCE and frame.api_key == ApiKey.DESCRIBE_CONFIGS:
                who = self._requester(conn) if self.acls is not None else None
                if who is not None and not who.may(operation, ResourceType.TOPIC, name):
                    return ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed."
                if self.state.topic(name) is None:
                    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ""  # Kafka's: no words
                return None
            if kind != GROUP_RESOURCE:
                return ErrorCode.INVALID_REQUEST, _NO_CONFIGS
            if self.acls is not None and not self._requester(conn).may(operation, ResourceType.GROUP, name):
                return ErrorCode.GROUP_AUTHORIZATION_FAILED, _wire.GROUP_AUTHORIZATION_FAILED_MESSAGE
            return None

        if frame.api_key == ApiKey.DESCRIBE_CONFIGS:
            described = []
            for r in message.resources:
                refused = refusal(r.resource_type, r.resource_name)
                if refused is None and r.resource_type == _TOPIC_RESOURCE:
                    configs = []
                elif refused is None:
                    try:
                        configs = self._group_configs.describe(r.resource_name, r.configuration_keys)
                    except GroupConfigError as invalid:
                        refused = invalid.error, invalid.message
                if refused is not None:
                    described.append(_wire.ConfigsDescribed(r.resource_type, r.resource_name, *refused))
                else:
                    described.append(
                        _wire.ConfigsDescribed(r.resource_type, r.resource_name, configs=tuple(configs))
                    )
            return _wire.describe_configs_response(
                v,
                described,
                synonyms=message.include_synonyms,
                documentation=v >= 3 and message.include_documentation,
            )
        resources = _wire.config_alterations(message)
        named = collections.Counter((kind, name) for kind, name, _ in resources)
        results: list[tuple[int, str, ErrorCode, str | None]] = []
        for kind, name, alterations in resources:
            refused = refusal(kind, name)
            if named[kind, name] > 1:
                refused = ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
            elif refused is None:
                try:
                    values = self._group_configs.alter(name, alterations)
                except GroupConfigError as invalid:
                    refused = invalid.error, invalid.message
                else:
                    if not message.validate_only and not self._change_group_configs(conn, name, values):
                        return None
            results.append((kind, name, ErrorCode.NONE, None) if refused is None else (kind, name, *refused))
        return _wire.incremental_alter_configs_response(v, results)

    def _change_group_configs(self, conn: _Connection, group_id: str, values: dict[str, int]) -> bool:
        """Store, then make, a group's new configs; False (the connection closed) if they could
        not be stored."""
        if values == self._group_configs.values(group_id):
            return True
        if self._store is not None:
            try:
                self._store.set_group_configs(group_id, values)
            except sqlite3.Error:
                log.exception(
                    "could not store a group config change; closing the connection that asked for it"
                )
                conn.close("state could not be stored")
                return False
        self._set_group_configs(group_id, values)
        log.info(
            "configs of group %s set by %s: %s",
            group_id,
            conn.principal,
            ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "none (the server's own apply)",
        )
        return True

    def _set_group_configs(self, group_id: str, values: dict[str, int]) -> None:
        self._settle_network(group_id=group_id)  # its session and interval are in the answers
        self._group_configs.apply(group_id, values)
        self.state.set_group_timeouts(group_id, *self._group_configs.timeouts(group_id))
        self.state.set_group_assignment_interval(group_id, self._group_configs.assignment_interval(group_id))

    def _scram_credentials(self, conn: _Connection, frame: _wire.Frame, message: Any) -> Any:
        """DescribeUserScramCredentials, as Kafka's brokers answer it: DESCRIBE on the cluster
        needed when the authorizer is on; the SCRAM credentials (mechanism and iterations, never
        more) of the SASL listeners' users files (a user in several: the first listener's)."""
        v = frame.api_version
        if self.acls is not None and not self._requester(conn).may(
            AclOperation.DESCRIBE, ResourceType.CLUSTER
        ):
            return _wire.describe_user_scram_credentials_response(
                v, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, _CLUSTER_REFUSED, []
            )
        known: dict[str, list[tuple[str, int]]] = {}
        for listener in self.listeners:
            if listener.sasl is None:
                continue
            try:
                users = listener.sasl.users()
            except ConfigurationError as unreadable:
                return _wire.describe_user_scram_credentials_response(
                    v, ErrorCode.UNKNOWN_SERVER_ERROR, str(unreadable), []
                )
            for user, credentials in users.items():
                known.setdefault(
                    user, [(mechanism, c.iterations) for mechanism, c in sorted(credentials.items())]
                )
        asked = _wire.scram_users_asked(message)
        results: list[tuple[str, ErrorCode, str | None, list[tuple[str, int]]]] = []
        for user in sorted(known) if asked is None else list(dict.fromkeys(asked)):
            if asked is not None and asked.count(user) > 1:
                twice = "Cannot describe SCRAM credentials for the same user twice in a single request: "
                twice += user
                results.append((user, ErrorCode.DUPLICATE_RESOURCE, twice, []))
            elif user in known:
                results.append((user, ErrorCode.NONE, None, known[user]))
            else:
                missing = f"Attempt to describe a user credential that does not exist: {user}"
                results.append((user, ErrorCode.RESOURCE_NOT_FOUND, missing, []))
        return _wire.describe_user_scram_credentials_response(v, ErrorCode.NONE, None, results)

    def send_after_turn(self, transport: asyncio.Transport, answer: bytes) -> None:
        """Send an answer after this turn of the event loop, with every other answer of the
        turn, as a Kafka broker's network thread writes the responses of one poll together
        (and librdkafka's mock those of one poll at the next): a client waiting for many
        answers, on many connections, then wakes up once for them instead of once each."""
        self._answers.append((transport, answer))
        if len(self._answers) == 1:
            assert self._loop is not None
            self._loop.call_soon(self.send_answers)

    def send_answers(self) -> None:
        """Write every answer waiting to be sent, in the order they were given."""
        answers, self._answers = self._answers, []
        for transport, answer in answers:
            if not transport.is_closing():
                transport.write(answer)

    def release(self, ref: int) -> None:
        """The client of a request held in the state machine sent another one."""
        if ref in self._inflight:
            self._settle_network()
            self._apply(self.state.release(ref, self._now_ms()))

    def connection_opened(self, conn: _Connection) -> bool:
        """Count a new connection; False (and it must close) if its address has too many."""
        self._connections.add(conn)
        if conn.network is not None:
            self._network_conns[conn.network.conn_id] = conn
        self._per_address[conn.client_host] += 1
        return self._per_address[conn.client_host] <= self.config.max_connections_per_ip

    def hold_request_bytes(self, conn: _Connection, delta: int) -> None:
        """``conn`` now holds ``conn.held_bytes``, ``delta`` more (or fewer) bytes of requests
        than before. Once the total could pass the budget with one more read, every connection
        holding more than ``small_request_bytes`` stops being read, so that the total stays
        within it; under that again, they are read again."""
        self.held_request_bytes += delta
        if conn.held_bytes > self.config.small_request_bytes:
            self._large_holders.add(conn)
        else:
            self._large_holders.discard(conn)
        # A read brings up to READ_BYTES: that much must still fit.
        if self.held_request_bytes > self.config.queued_max_request_bytes - READ_BYTES:
            stopping = self._large_holders - self._over_budget
            self._over_budget |= stopping
            for other in stopping:
                other.update_reading()
        elif self._over_budget:
            waiting, self._over_budget = self._over_budget, set()
            for other in waiting:
                other.update_reading()

    def over_budget(self, conn: _Connection) -> bool:
        return conn in self._over_budget

    def connection_closed(self, conn: _Connection) -> None:
        if conn in self._connections:
            self._per_address[conn.client_host] -= 1
            if not self._per_address[conn.client_host]:
                del self._per_address[conn.client_host]
        self._connections.discard(conn)
        held, conn.held_bytes = conn.held_bytes, 0
        self.hold_request_bytes(conn, -held)
        self._over_budget.discard(conn)
        network = conn.network
        if network is not None:
            self._renew_from_network()  # its last answers there count
            self._network_conns.pop(network.conn_id, None)
            if network.request is not None:
                self._remembered.get(network.request.group_id, set()).discard(network.conn_id)
        ref = conn.busy_ref
        if ref is not None and self._inflight.pop(ref, None) is not None:
            self._settle_network()
            self._apply(self.state.abandon(ref, self._now_ms()))


_Merge = Callable[[Result], Result]


def _then(first: _Merge | None, second: _Merge) -> _Merge:
    """``second`` applied to what ``first`` (if any) makes of a result."""
    if first is None:
        return second
    return lambda result: second(first(result))


_Respond = Callable[[Result], Any]  # a result's answer on the wire, where it is not to_response's


def _answer_of(frame: _wire.Frame, result: Result, respond: _Respond | None) -> Any:
    return respond(result) if respond is not None else _wire.to_response(frame, result)


# Requests Kafka does not count against request quotas: SASL's are answered by its
# authenticator, before any quota applies (so are ApiVersions before authentication).
_NOT_COUNTED = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


@dataclass(slots=True)
class _Meter:
    """The handling time of a connection's current request, for its client's request quota:
    ``user`` None when it does not count (before authentication, SASL, no answer)."""

    user: str | None
    client_id: str
    since_ns: int  # perf_counter_ns when handle_frame began on it, 0 once that returned
    spent_ns: int = 0  # time counted before, while it was parked, and not yet recorded
    answered: bool = False


def _acl_words(b: AclBinding) -> str:
    return (
        f"{b.permission.name} {b.principal} from {b.host} {b.operation.name} on "
        f"{b.resource_type.name} {b.pattern_type.name} {b.name!r}"
    )


@dataclass(slots=True)
class _NetworkEnd:
    """What a connection of a network thread's listener knows of it: the thread, the
    connection's id there, the client's address, and the heartbeat the thread was last told to
    answer (whose member's session its answers renew)."""

    thread: _network.NetworkThread
    conn_id: int
    host: str
    request: _Heartbeat | None = None


class _Connection(asyncio.BufferedProtocol):
    """One client connection: frames requests and answers them one at a time, in order.

    A buffered protocol: asyncio's plain one reads into a new bytes object of 256 KiB per read,
    which, depending on the allocator's state, is mapped and unmapped each time (two page
    faults and about 25 µs per read in a small process on the development machine; none in
    this server's process under the heartbeat benchmark). Every connection of the server reads
    into the server's one buffer instead: asyncio hands what it read to :meth:`buffer_updated`
    before it reads anything else, on any connection (TLS included), and that copies it out."""

    def __init__(
        self, server: CoordinatorServer, listener: Listener, network: _NetworkEnd | None = None
    ) -> None:
        self._server = server
        self.listener = listener
        self.network = network  # a network thread's connection: the server's end of its socketpair
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._queue: collections.deque[bytes] = collections.deque()
        self.held_bytes = 0  # of the buffer and the queue, counted in the server's budget
        self._reading_paused = False
        self._writing_paused = False
        self.busy_ref: int | None = None  # a request parked in the state machine
        self._processing = False
        self.client_host = ""
        self.last_activity_ms = server._now_ms()
        self.frame_started_ms: int | None = None  # when the partial request in the buffer began
        # SASL: the exchange its handshake started, and who it is once authenticated (None: not
        # yet; a listener without SASL takes everyone as User:ANONYMOUS, as Kafka does).
        self.sasl: SaslExchange | None = None
        self.principal: str | None = None if listener.sasl is not None else "User:ANONYMOUS"
        # Request quotas: the current request's handling time, while quotas are on; and, while a
        # throttled client's delay runs (KIP-219), what ends it.
        self.meter: _Meter | None = None
        self.client_id_field: tuple[str, bytes] | None = None  # the last client id read, and its bytes
        self._unmute: asyncio.TimerHandle | None = None
        self._turn: asyncio.Handle | None = None  # the next request's turn, when more are queued

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport of whichever event loop the server runs on: uvloop's (which
        # uvicorn, for one, runs when installed) has asyncio.Transport's methods without
        # subclassing it.
        self._transport = cast(asyncio.Transport, transport)
        if self.network is not None:
            self.client_host = f"/{self.network.host}" if self.network.host else ""
        else:
            peer = transport.get_extra_info("peername")
            self.client_host = f"/{peer[0]}" if peer else ""
        if self.principal is not None:
            # A client certificate names the principal (TLS; SASL, if on, names it instead).
            self.principal = certificate_principal(transport.get_extra_info("peercert")) or self.principal
        if not self._server.connection_opened(self):
            self.close(
                f"more than {self._server.config.max_connections_per_ip} connections from this address"
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        for pending in (self._unmute, self._turn):
            if pending is not None:
                pending.cancel()
        self._unmute = self._turn = None
        self._queue.clear()
        self._buffer.clear()
        self._server.connection_closed(self)
        self.held_bytes = 0

    def close(self, reason: str) -> None:
        if self._transport is not None:
            log.info("closing connection from %s: %s", self.client_host, reason)
            self._server.send_answers()  # what it was answered goes out before it closes
            self._transport.close()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._process()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._server.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.last_activity_ms = now = self._server._now_ms()
        buffer = self._buffer
        buffer += self._server.read_buffer[:nbytes]
        limit = self._server.config.max_request_bytes
        if self.frame_started_ms is None:
            self.frame_started_ms = now
        while len(buffer) >= 4:
            (size,) = _SIZE.unpack_from(buffer)
            if size <= 0 or size > limit:
                self.close(f"request size {size} is outside 1..{limit} bytes")
                return
            if len(buffer) < 4 + size:
                break
            self._queue.append(bytes(buffer[4 : 4 + size]))
            del buffer[: 4 + size]
            # The next request, if any of it is here, starts arriving now.
            self.frame_started_ms = now if buffer else None
        if self._queue and self.busy_ref is not None:
            # A held heartbeat must not delay what the client sends next.
            self._server.release(self.busy_ref)
        # Served at once, a request is never counted in the budget: only what stays is.
        self._process()
        self._count_held()

    def _count_held(self) -> None:
        held = len(self._buffer) + sum(map(len, self._queue))
        delta, self.held_bytes = held - self.held_bytes, held
        if delta:
            self._server.hold_request_bytes(self, delta)

    def update_reading(self) -> None:
        """Read from the socket unless a request waits to be served (like a Kafka broker:
        pipelined requests stay in the socket, so a connection holds at most one request beyond
        the one being served), the client is throttled, or the server is over its budget of
        request bytes."""
        if self._transport is None:
            return
        waiting = bool(self._queue) or self._unmute is not None
        pause = waiting or self._server.over_budget(self)
        if pause and not self._reading_paused:
            self._transport.pause_reading()
            self._reading_paused = True
            if waiting:
                # The rest of a request cannot arrive while nothing is read: its clock restarts
                # with the next bytes read. (Over the budget it keeps running: a partial request
                # must not hold its bytes forever.)
                self.frame_started_ms = None
        elif not pause and self._reading_paused:
            self._transport.resume_reading()
            self._reading_paused = False

    def _can_serve(self) -> bool:
        return bool(
            self._queue
            and self.busy_ref is None
            and self._unmute is None
            and not self._writing_paused
            and self._transport is not None
        )

    def _process(self) -> None:
        """Serve the next request read, unless one is parked, the client is throttled or its
        answers are not being read. One request per turn of the event loop: a client that
        pipelines many requests (one read may bring thousands) takes turns with every other
        connection, as on a Kafka broker, instead of holding the loop until all are answered."""
        # Re-entrant calls (a reply sent while routing a request) return here at once.
        if self._processing:
            return
        self._processing = True
        try:
            if self._can_serve():
                payload = self._queue.popleft()
                self._count_held()
                try:
                    self._server.handle_frame(self, payload)
                except _wire.MalformedRequest as exc:
                    self.close(str(exc))
                    return
                except Exception:
                    # A bug must cost this connection only, never the server.
                    log.exception("unexpected error handling a request from %s", self.client_host)
                    self.close("internal error")
                    return
                if self._queue and self.busy_ref is not None:
                    # Held, while the client already sent more (both came in one read).
                    self._server.release(self.busy_ref)
        finally:
            self._processing = False
        if self._turn is None and self._can_serve():
            assert self._server._loop is not None
            self._turn = self._server._loop.call_soon(self._next_turn)
        self.update_reading()

    def _next_turn(self) -> None:
        self._turn = None
        self._process()

    def finish(self, frame: _wire.Frame, response: Any, throttle_ms: int | None = None) -> None:
        """Send the answer to the current request (a response, its encoding, or None for no
        answer) and move on to the next one.

        Under a request quota the answer carries the throttle time its client earned (given as
        ``throttle_ms`` if the answer already carries it), and the connection is then neither
        read nor served for that long (KIP-219), whether the client waits or not."""
        self.busy_ref = None
        self.last_activity_ms = self._server._now_ms()
        if self._transport is None:
            return
        carried = throttle_ms is not None
        if throttle_ms is None:
            throttle_ms = (
                self._server.throttle_time(self, frame, answered=response is not None)
                if self.meter is not None
                else 0
            )
        if response is not None:
            if throttle_ms and not carried:
                if isinstance(response, bytes):
                    response = _wire.with_throttle_time(frame, response, throttle_ms)
                else:
                    response.throttle_time_ms = throttle_ms
            if log.isEnabledFor(logging.DEBUG):
                log.debug("response to %s: %r", self.client_host, response)
            data = response if isinstance(response, bytes) else _wire.encode(frame, response)
            self._server.send_after_turn(self._transport, data)
        if throttle_ms:
            self._mute(throttle_ms)
        self._process()

    def _mute(self, throttle_ms: int) -> None:
        """Serve and read nothing more for ``throttle_ms`` (Kafka's muted, throttled channel)."""
        assert self._server._loop is not None
        self._unmute = self._server._loop.call_later(throttle_ms / 1000, self._end_throttling)
        self.update_reading()

    def _end_throttling(self) -> None:
        self._unmute = None
        self._process()


def _log_event(event: MembershipEvent) -> None:
    if not membership_log.isEnabledFor(logging.INFO):
        return
    membership_log.info(
        "%s group=%s generation=%d member=%s instance=%s %s",
        event.kind,
        event.group_id,
        event.generation_id,
        event.member_id or "-",
        event.group_instance_id or "-",
        event.detail,
        extra={"membership_event": dict(vars(event))},
    )
