"""Settings of the embedded coordinator, named and defaulted as Kafka's broker settings."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from coordinator_api._errors import ConfigurationError
from coordinator_api.server._acls import check_principal

#: The most bytes the embedded coordinator reads from a connection at once (the size of the
#: buffer its connections read into): how far past the request budget one read could take it.
READ_BYTES = 256 * 1024

#: ``group.consumer.migration.policy``'s values, as Kafka names them.
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True, kw_only=True)
class CoordinatorConfig:
    """Settings of the embedded coordinator.

    Durations are milliseconds, as in Kafka; each setting's Kafka broker counterpart is named.

    :param initial_rebalance_delay_ms: ``group.initial.rebalance.delay.ms``: how long the first
        rebalance of an empty group waits for more members (extended while members keep
        arriving, up to the rebalance timeout). 0 completes as soon as everyone has joined.
    :param min_session_timeout_ms: ``group.min.session.timeout.ms``.
    :param max_session_timeout_ms: ``group.max.session.timeout.ms``.
    :param max_group_size: ``group.max.size``; ``None`` means unlimited.
    :param max_pending_members: the most member ids a classic group may have handed out and
        not yet seen join (KIP-394's MEMBER_ID_REQUIRED answers), each kept for its session;
        one more first join is answered GROUP_MAX_SIZE_REACHED. No Kafka counterpart (Kafka
        keeps any number): it bounds what a client asking for ids by the thousand can hold.
        The price: while a client holds them, no new member can join that group until their
        sessions end (Kafka would let it in); ACLs (READ on the group) decide who may ask.
    :param offset_metadata_max_bytes: ``offset.metadata.max.bytes``.
    :param offsets_retention_ms: ``offsets.retention.minutes`` (in ms; 7 days): how long a
        group's committed offsets outlive it (KIP-211). An Empty group's offsets expire this long
        after it became Empty; those of a group that only stores offsets (no members ever, or
        an admin's commits), this long after each commit; a group with members keeps them. An
        OffsetCommit v2-4 may set its own retention. A group left with no offsets is deleted.
    :param offsets_retention_check_interval_ms: ``offsets.retention.check.interval.ms``.
    :param default_num_partitions: ``num.partitions``, for CreateTopics asking for the default.
    :param max_partitions_per_topic: the most partitions a topic may declare; Kafka has no such
        limit, but every Metadata answer lists every partition, so a typo of many zeros would
        stall the server.
    :param max_topics_per_request: the most topics one CreateTopics may create (Kafka bounds
        the rate with a controller mutation quota instead); a larger request is refused whole,
        POLICY_VIOLATION for each topic.
    :param auto_create_topics: ``auto.create.topics.enable``; off here, unlike Kafka, because
        a coordinator's topics only describe partition counts and a typo should not invent one.
    :param max_request_bytes: ``socket.request.max.bytes``: a larger length prefix closes the
        connection.
    :param connections_max_idle_ms: ``connections.max.idle.ms``: a connection silent this
        long, including one stalled inside a request, is closed.
    :param queued_max_request_bytes: ``queued.max.request.bytes``: the most bytes of requests
        all connections together may hold in memory (partial requests being read, and requests
        read but not yet answered). Over it, connections holding more than
        ``small_request_bytes`` stop being read until it is under again, so a few clients
        sending huge requests cannot take the server's memory, while small requests (a
        heartbeat) are still read. Kafka's default is unbounded; 256 MiB here. Those
        connections stop being read once one more read (asyncio reads at most 256 KiB at a
        time) could take the total past the budget, so it is never passed; it must hold one
        request of ``max_request_bytes`` and such a read.
    :param small_request_bytes: how much a connection may always hold, whatever the budget: so
        many connections each holding a little are bounded by ``max_connections_per_ip`` times
        this per client address, not by the budget.
    :param max_connections_per_ip: ``max.connections.per.ip``: more connections from one
        client address are closed at once (Kafka's default is unbounded; 4,096 here).
    :param request_arrival_timeout_ms: a request whose first bytes have arrived must arrive
        whole within this long, or its connection is closed: a client trickling a byte at a
        time into a frame it never finishes would otherwise hold the connection and its buffer
        forever (each byte resets ``connections_max_idle_ms``). No Kafka counterpart; generous
        by default (30 s), as a slow link must not be cut off.
    :param heartbeat_hold_ms: how long a Heartbeat of a member of a Stable group may be held
        before it is answered, so that a rebalance reaches the member at once (answered
        REBALANCE_IN_PROGRESS the moment it starts) instead of at its next heartbeat; never more
        than a third of the member's session, and released as soon as the client sends another
        request on the connection. For consumer groups of the incremental protocol, a
        ConsumerGroupHeartbeat with nothing new for its member is held (at most a third of the
        group session, and half of what the heartbeat interval leaves of it) and answered the
        moment the member has news (docs/incremental.md). No Kafka counterpart; 0 answers every
        heartbeat at once, as Kafka's coordinators do.
    :param network_thread: read and write the connections of each plaintext listener without
        SASL in a thread of their own, written in C, as Kafka's brokers read theirs in network
        threads; that thread answers a connection's steady heartbeat (the same request, but
        for its correlation id, as the last one the server answered with nothing changed) the
        way the server last answered it, and the server renews the member's session from it.
        Everything else goes to the server as before. Needs ``heartbeat_hold_ms`` 0, and the
        extension built when the package was installed (a C compiler). Off by default
        (docs/coordinator.md, "The network thread").
    :param consumer_group_session_timeout_ms: ``group.consumer.session.timeout.ms``: the session
        of a member of a consumer group of the incremental protocol (KIP-848), where the
        coordinator, not the member, sets it.
    :param consumer_group_heartbeat_interval_ms: ``group.consumer.heartbeat.interval.ms``: how
        often such members heartbeat.
    :param consumer_group_min_session_timeout_ms: ``group.consumer.min.session.timeout.ms``: the
        shortest session a group's own ``consumer.session.timeout.ms`` may set (Kafka's
        ``kafka-configs --entity-type groups``; docs/incremental.md).
    :param consumer_group_max_session_timeout_ms: ``group.consumer.max.session.timeout.ms``.
    :param consumer_group_min_heartbeat_interval_ms:
        ``group.consumer.min.heartbeat.interval.ms``: the same for
        ``consumer.heartbeat.interval.ms``.
    :param consumer_group_max_heartbeat_interval_ms:
        ``group.consumer.max.heartbeat.interval.ms``. The four bounds only bound what groups
        set for themselves; unlike Kafka's broker, the server's own session and interval may lie
        outside them.
    :param consumer_group_assignment_interval_ms: ``group.consumer.assignment.interval.ms``
        (KIP-1263): a consumer group's new target assignment is computed at most this often;
        a change within the interval waits for the first heartbeat after it (the group is
        ``Assigning`` meanwhile). 0, the default here, computes it at once, as Kafka did before
        4.3; Kafka 4.3's default is 1,000.
    :param consumer_group_min_assignment_interval_ms:
        ``group.consumer.min.assignment.interval.ms``: the least a group's own
        ``consumer.assignment.interval.ms`` may set.
    :param consumer_group_max_assignment_interval_ms:
        ``group.consumer.max.assignment.interval.ms``: the most it may set.
    :param consumer_group_assignors: ``group.consumer.assignors``: the server-side assignors
        consumer groups may ask for, found in the plugin registry (protocol type ``consumer``);
        the first is the default.
    :param consumer_group_max_size: ``group.consumer.max.size``; ``None`` means unlimited.
    :param consumer_group_migration_policy: ``group.consumer.migration.policy``: which online
        migrations of a group with members between the classic protocol and the incremental
        one (docs/incremental.md) the coordinator makes: ``bidirectional`` (Kafka 4's default)
        both; ``upgrade`` only a classic group's to the incremental protocol when a member of
        it joins; ``downgrade`` only back to classic when the last member of the incremental
        protocol leaves; ``disabled`` neither, and no classic member joins a consumer group
        with members (INCONSISTENT_GROUP_PROTOCOL, as on Kafka 4.3). Named in any case. An
        empty group moves either way whatever the policy.
    :param authorizer: ``authorizer.class.name`` set to Kafka's ``StandardAuthorizer``: every
        request is checked against the ACLs (``coordinator-api acls``, or Kafka's
        ``kafka-acls``) of the principal that sent it, as a Kafka broker checks it
        (docs/operations.md, "ACLs"). Off: every client may do everything, and the ACL APIs
        answer SECURITY_DISABLED.
    :param super_users: ``super.users``: principals (``User:admin``) allowed everything.
    :param allow_everyone_if_no_acl_found: ``allow.everyone.if.no.acl.found``: a resource no
        ACL names is open to everyone (default: closed to all but super users).
    :param node_id: the broker id this coordinator reports for itself.
    :param cluster_id: the cluster id reported in Metadata.
    """

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_group_size: int | None = None
    max_pending_members: int = 1000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    default_num_partitions: int = 1
    max_partitions_per_topic: int = 10_000
    max_topics_per_request: int = 100
    auto_create_topics: bool = False
    max_request_bytes: int = 104_857_600
    queued_max_request_bytes: int = 256 * 1024 * 1024
    small_request_bytes: int = 65_536
    max_connections_per_ip: int = 4096
    connections_max_idle_ms: int = 600_000
    request_arrival_timeout_ms: int = 30_000
    heartbeat_hold_ms: int = 5000
    network_thread: bool = False
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_min_session_timeout_ms: int = 45_000
    consumer_group_max_session_timeout_ms: int = 60_000
    consumer_group_min_heartbeat_interval_ms: int = 5_000
    consumer_group_max_heartbeat_interval_ms: int = 15_000
    consumer_group_assignment_interval_ms: int = 0
    consumer_group_min_assignment_interval_ms: int = 0
    consumer_group_max_assignment_interval_ms: int = 15_000
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    consumer_group_max_size: int | None = None
    consumer_group_migration_policy: str = "bidirectional"
    authorizer: bool = False
    super_users: tuple[str, ...] = ()
    allow_everyone_if_no_acl_found: bool = False
    node_id: int = 0
    cluster_id: str = "coordinator-api"

    def __post_init__(self) -> None:
        for name in ("authorizer", "allow_everyone_if_no_acl_found", "network_thread"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if isinstance(self.super_users, list):  # as a config file gives it
            object.__setattr__(self, "super_users", tuple(self.super_users))
        if not isinstance(self.super_users, tuple):
            raise ConfigurationError(
                f"super_users must be a list of principals (User:NAME), got {self.super_users!r}"
            )
        for principal in self.super_users:
            check_principal(principal, what="super user")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_ms") and (not isinstance(value, int) or value < 0):
                raise ConfigurationError(f"{f.name} must be a non-negative integer, got {value!r}")
        for name in (
            "offsets_retention_ms",
            "offsets_retention_check_interval_ms",
            "request_arrival_timeout_ms",
        ):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.min_session_timeout_ms > self.max_session_timeout_ms:
            raise ConfigurationError(
                "min_session_timeout_ms must not exceed max_session_timeout_ms "
                f"({self.min_session_timeout_ms} > {self.max_session_timeout_ms})"
            )
        if self.consumer_group_heartbeat_interval_ms >= self.consumer_group_session_timeout_ms:
            raise ConfigurationError(
                "consumer_group_heartbeat_interval_ms must be below consumer_group_session_timeout_ms "
                f"({self.consumer_group_heartbeat_interval_ms} >= {self.consumer_group_session_timeout_ms})"
            )
        for least, most in (
            ("consumer_group_min_session_timeout_ms", "consumer_group_max_session_timeout_ms"),
            ("consumer_group_min_heartbeat_interval_ms", "consumer_group_max_heartbeat_interval_ms"),
        ):
            if not 1 <= getattr(self, least) <= getattr(self, most):
                raise ConfigurationError(
                    f"{least} must be at least 1 and not exceed {most} "
                    f"({getattr(self, least)}, {getattr(self, most)})"
                )
        if self.consumer_group_min_assignment_interval_ms > self.consumer_group_max_assignment_interval_ms:
            raise ConfigurationError(
                "consumer_group_min_assignment_interval_ms must not exceed "
                "consumer_group_max_assignment_interval_ms "
                f"({self.consumer_group_min_assignment_interval_ms} > "
                f"{self.consumer_group_max_assignment_interval_ms})"
            )
        if self.consumer_group_max_size is not None and self.consumer_group_max_size < 1:
            raise ConfigurationError(
                f"consumer_group_max_size must be at least 1, got {self.consumer_group_max_size}"
            )
        policy = self.consumer_group_migration_policy
        if not isinstance(policy, str) or policy.lower() not in MIGRATION_POLICIES:
            raise ConfigurationError(
                "consumer_group_migration_policy must be one of "
                f"{', '.join(MIGRATION_POLICIES)}, got {policy!r}"
            )
        object.__setattr__(self, "consumer_group_migration_policy", policy.lower())
        if self.network_thread and self.heartbeat_hold_ms:
            raise ConfigurationError(
                "network_thread answers heartbeats only when they are answered at once: "
                f"set heartbeat_hold_ms to 0 (it is {self.heartbeat_hold_ms})"
            )
        if self.max_pending_members < 1:
            raise ConfigurationError(
                f"max_pending_members must be at least 1, got {self.max_pending_members}"
            )
        if self.max_group_size is not None and self.max_group_size < 1:
            raise ConfigurationError(f"max_group_size must be at least 1, got {self.max_group_size}")
        if self.default_num_partitions < 1:
            raise ConfigurationError(
                f"default_num_partitions must be at least 1, got {self.default_num_partitions}"
            )
        for name in ("max_partitions_per_topic", "max_topics_per_request"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")
        if self.max_request_bytes < 1024:
            raise ConfigurationError(f"max_request_bytes must be at least 1024, got {self.max_request_bytes}")
        if self.queued_max_request_bytes < self.max_request_bytes + READ_BYTES:
            raise ConfigurationError(
                "queued_max_request_bytes must be at least max_request_bytes + 262144 (one request "
                "and one read of the next must fit), "
                f"got {self.queued_max_request_bytes} < {self.max_request_bytes + READ_BYTES}"
            )
        if not 1024 <= self.small_request_bytes <= self.max_request_bytes:
            raise ConfigurationError(
                "small_request_bytes must be between 1024 and max_request_bytes, "
                f"got {self.small_request_bytes}"
            )
        if self.max_connections_per_ip < 1:
            raise ConfigurationError(
                f"max_connections_per_ip must be at least 1, got {self.max_connections_per_ip}"
            )

    @property
    def upgrades_classic_groups(self) -> bool:
        """Whether a classic consumer group with members moves to the incremental protocol when
        a member of that protocol joins it (``consumer_group_migration_policy``)."""
        return self.consumer_group_migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrades_consumer_groups(self) -> bool:
        """Whether a consumer group moves back to the classic protocol when the last member of
        the incremental protocol leaves it (``consumer_group_migration_policy``)."""
        return self.consumer_group_migration_policy in ("bidirectional", "downgrade")

    @classmethod
    def from_mapping(cls, values: dict[str, Any]) -> CoordinatorConfig:
        """Build from a mapping (a config file's ``[coordinator]`` table), rejecting unknown keys."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigurationError(
                f"unknown coordinator setting(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )
        return cls(**values)
