"""A group's own session and heartbeat interval (KIP-848's group configs) on the embedded
coordinator: DescribeConfigs, IncrementalAlterConfigs and ListConfigResources sent alike to an
Apache Kafka 4 broker and to the embedded coordinator must be answered alike; Kafka's own
``kafka-configs --entity-type groups`` sets and describes them as docs/incremental.md shows; a
killed librdkafka member of a group with its own session is removed after that session; configs
survive a restart. (How a group's new interval and session reach its members, heartbeat by
heartbeat: tests/server/test_consumer_group.py; the APIs authorized as Kafka authorizes them:
tests/server/test_acls_on_kafka.py.)
"""

from __future__ import annotations

import itertools
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import (
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
)
from kafka_tools import _call, _connect, run_kafka_configs_lines
from member_processes import MemberProcess, owned_exactly_once, wait_for

from coordinator_api._errors import GroupError
from coordinator_api._inspect import group_configs
from coordinator_api._protocol import ErrorCode
from coordinator_api.server import CoordinatorConfig, EmbeddedCoordinator, recording_membership
from coordinator_api.server._group_configs import GROUP_CONFIG_KEYS, GROUP_RESOURCE
from coordinator_api.testing import KafkaCluster

SESSION, INTERVAL = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
ASSIGNMENT = "consumer.assignment.interval.ms"
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

#: The bounds the session's Kafka cluster sets (coordinator_api/testing/_kafka_cluster.py);
#: the server's own session and interval are Kafka's defaults on both, and so is its assignment
#: interval: Kafka 4.3's 1,000 ms, not this coordinator's 0 (see ``SERVERS_OWN``).
AS_THE_KAFKA_CLUSTER = CoordinatorConfig(
    consumer_group_min_session_timeout_ms=500,
    consumer_group_min_heartbeat_interval_ms=100,
    consumer_group_assignment_interval_ms=1000,
)
#: Where the assignment interval a group does not set comes from, in either transcript: Kafka
#: reports its default (DEFAULT_CONFIG), the embedded coordinator, whose own default is 0, the
#: 1,000 its config sets (STATIC_BROKER_CONFIG). The values must agree.
SERVERS_OWN = "the server's own"

Change = tuple[str, int, str | None]


def describe(
    sock: Any, *groups: str, keys: list[str] | None = None, synonyms: bool = True, version: int = 4
) -> Any:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        version=version,
        resources=[
            resource(resource_type=GROUP_RESOURCE, resource_name=g, configuration_keys=keys) for g in groups
        ],
        include_synonyms=synonyms,
        include_documentation=False,
    )
    return _call(sock, request, DescribeConfigsResponse)


def alter(
    sock: Any, *resources: tuple[str, list[Change]], validate_only: bool = False, version: int = 1
) -> Any:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    request = IncrementalAlterConfigsRequest(
        version=version,
        resources=[
            resource(
                resource_type=GROUP_RESOURCE,
                resource_name=group,
                configs=[
                    resource.AlterableConfig(name=name, config_operation=op, value=value)
                    for name, op, value in changes
                ],
            )
            for group, changes in resources
        ],
        validate_only=validate_only,
    )
    return _call(sock, request, IncrementalAlterConfigsResponse)


def list_groups_with_configs(sock: Any) -> Any:
    request = ListConfigResourcesRequest(version=1, resource_types=[GROUP_RESOURCE])
    return _call(sock, request, ListConfigResourcesResponse)


# --- the same requests to Apache Kafka and to the embedded coordinator ----------------------------


def battery(sock: Any, group: str, other: str) -> list[tuple[str, Any]]:
    """Requests about two groups that exist nowhere yet; each answer reduced to what a client
    reads (group ids named, as the two runs use their own)."""
    names = {group: "<group>", other: "<other>"}
    steps: list[tuple[str, Any]] = []

    def source(name: str, number: int) -> int | str:
        own = name == f"group.{ASSIGNMENT}" or (name == ASSIGNMENT and number != 8)  # not the group's
        return SERVERS_OWN if own else number

    def described(label: str, answer: Any) -> None:
        steps.append(
            (
                label,
                [
                    (
                        names.get(r.resource_name, r.resource_name),
                        r.error_code,
                        r.error_message,
                        [
                            (
                                c.name,
                                c.value,
                                c.read_only,
                                source(c.name, c.config_source),
                                c.is_sensitive,
                                [(s.name, s.value, source(s.name, s.source)) for s in c.synonyms],
                                c.config_type if answer.API_VERSION >= 3 else None,
                            )
                            for c in r.configs
                            if c.name in GROUP_CONFIG_KEYS  # Kafka lists share and streams configs too
                        ],
                    )
                    for r in answer.results
                ],
            )
        )

    barrier, changes = f"{group}-barrier", itertools.count(1001)

    def altered(label: str, answer: Any) -> None:
        # A Kafka broker answers DescribeConfigs from the metadata it has applied, which may lag
        # behind the controller that made the change: a change of another group made after this
        # one, once seen, shows that this one is applied too (the log is applied in order).
        value = str(next(changes))
        (marked,) = alter(sock, (barrier, [(INTERVAL, SET, value)])).responses
        assert marked.error_code == ErrorCode.NONE, marked
        deadline = time.monotonic() + 30
        while describe(sock, barrier, keys=[INTERVAL]).results[0].configs[0].value != value:
            assert time.monotonic() < deadline, f"{label}: the change of {barrier} never applied"
            time.sleep(0.02)
        steps.append(
            (
                label,
                [
                    (
                        names.get(r.resource_name, r.resource_name),
                        r.resource_type,
                        r.error_code,
                        r.error_message,
                    )
                    for r in answer.responses
                ],
            )
        )

    def change(label: str, *changes: Change, version: int = 1, validate_only: bool = False) -> None:
        altered(label, alter(sock, (group, list(changes)), version=version, validate_only=validate_only))

    described("a group without configs", describe(sock, group, keys=[SESSION, INTERVAL]))
    described("all configs, v1, no synonyms", describe(sock, group, synonyms=False, version=1))
    described("a key Kafka does not know", describe(sock, group, keys=["no.such.key", INTERVAL]))
    described("no keys", describe(sock, group, keys=[]))
    described("an empty group name", describe(sock, "", keys=[SESSION]))
    change("set the session", (SESSION, SET, "50000"))
    described("the session set", describe(sock, group, other, keys=[SESSION, INTERVAL], version=3))
    change("above the most", (SESSION, SET, "60001"))
    change("at the most", (SESSION, SET, "60000"), version=0)
    change("below the least", (INTERVAL, SET, "99"))
    change("interval above its most", (INTERVAL, SET, "15001"))
    change("interval not below the session", (SESSION, SET, "10000"), (INTERVAL, SET, "10000"))
    change("assignment interval 0", (ASSIGNMENT, SET, "0"))
    described("the assignment interval set", describe(sock, group, keys=[ASSIGNMENT]))
    change("assignment interval negative", (ASSIGNMENT, SET, "-1"))
    change("assignment interval above its most", (ASSIGNMENT, SET, "15001"))
    change(
        "heartbeat and assignment interval above theirs", (INTERVAL, SET, "15001"), (ASSIGNMENT, SET, "15001")
    )
    change("delete the assignment interval", (ASSIGNMENT, DELETE, None))
    change("not a number", (SESSION, SET, "abc"))
    change("zero", (SESSION, SET, "0"))
    change("negative", (SESSION, SET, "-5"))
    change("beyond an int", (SESSION, SET, "2147483648"))
    change("an unknown name", ("foo.bar", SET, "1"))
    change("an unknown name and a bad number", (SESSION, SET, "abc"), ("foo.bar", SET, "1"))
    change("append", (SESSION, APPEND, "1"))
    change("subtract", (INTERVAL, SUBTRACT, "1"))
    change("delete, with a value", (INTERVAL, DELETE, "123"))
    change("delete an unknown name", ("foo.bar", DELETE, None))
    change("a key twice", (SESSION, SET, "50000"), (SESSION, SET, "51000"))
    change("a null value", (SESSION, SET, None))
    change("a number with a sign and spaces", (SESSION, SET, " +52000 "))
    described("as a number", describe(sock, group, keys=[SESSION]))
    change("leading zeros and a control character", (SESSION, SET, "\x01000000000000053000"))
    described("as a number again", describe(sock, group, keys=[SESSION]))
    change("validate only", (SESSION, SET, "55000"), validate_only=True)
    described("still the value set", describe(sock, group, keys=[SESSION]))
    change("both, as valid", (SESSION, SET, "20000"), (INTERVAL, SET, "2000"))
    altered(
        "the group twice", alter(sock, (group, [(SESSION, SET, "30000")]), (group, [(SESSION, SET, "40000")]))
    )
    altered("the default group", alter(sock, ("", [(SESSION, SET, "30000")])))
    altered(
        "two groups, one refused",
        alter(sock, (other, [(INTERVAL, SET, "3000")]), (group, [(INTERVAL, SET, "30000")])),
    )
    steps.append(
        (
            "listed",
            sorted(
                names[r.resource_name]
                for r in list_groups_with_configs(sock).config_resources
                if r.resource_name in names
            ),
        )
    )
    described("both groups", describe(sock, group, other, keys=None))
    change("delete the session", (SESSION, DELETE, None))
    described("the interval left", describe(sock, group, keys=[SESSION, INTERVAL]))
    return steps


@pytest.fixture(scope="module")
def embedded() -> Iterator[EmbeddedCoordinator]:
    with EmbeddedCoordinator(config=AS_THE_KAFKA_CLUSTER) as coordinator:
        yield coordinator


def test_group_configs_are_answered_as_kafka_answers_them(
    kafka_cluster: KafkaCluster, embedded: EmbeddedCoordinator
) -> None:
    transcripts = []
    for bootstrap in (kafka_cluster.bootstrap_servers, embedded.bootstrap_servers):
        run = uuid.uuid4().hex[:8]
        with _connect(bootstrap.split(",")[0]) as sock:
            transcripts.append(battery(sock, f"configs-{run}", f"configs-other-{run}"))
    on_kafka, on_embedded = transcripts
    different = [
        f"{label}:\n  Kafka    {k!r}\n  embedded {e!r}"
        for (label, k), (_, e) in zip(on_kafka, on_embedded, strict=True)
        if k != e
    ]
    assert not different, "\n".join(different)


# --- what only the embedded coordinator says ------------------------------------------------------


def test_what_the_coordinator_does_not_keep_is_refused_with_words_saying_so(
    embedded: EmbeddedCoordinator,
) -> None:
    group = f"refused-{uuid.uuid4().hex[:8]}"
    embedded.create_topic("events", 1)
    with _connect(embedded.bootstrap_servers) as sock:
        # Kafka's other group configs concern share groups, Kafka Streams groups and batched
        # assignments, which this coordinator does not have: refused, never stored without effect.
        (share,) = alter(sock, (group, [("share.session.timeout.ms", SET, "50000")])).responses
        assert (share.error_code, share.error_message) == (
            ErrorCode.INVALID_CONFIG,
            "Group config share.session.timeout.ms is not served by the embedded coordinator, which "
            "serves consumer.session.timeout.ms, consumer.heartbeat.interval.ms and "
            "consumer.assignment.interval.ms only",
        )
        # An operation code IncrementalAlterConfigs does not have (Kafka 4.3.1's controller
        # fails on one with a NullPointerException and gives up its leadership).
        (unknown,) = alter(sock, (group, [(SESSION, 7, "50000")])).responses
        assert (unknown.error_code, unknown.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Unknown config operation 7",
        )
        # Topics have no configs here (kafka-topics --describe asks), brokers none to describe.
        resource = DescribeConfigsRequest.DescribeConfigsResource
        request = DescribeConfigsRequest(
            version=4,
            resources=[
                resource(resource_type=2, resource_name="events", configuration_keys=None),
                resource(resource_type=2, resource_name="nowhere", configuration_keys=None),
                resource(resource_type=4, resource_name="0", configuration_keys=None),
                resource(resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=[SESSION]),
            ],
            include_synonyms=False,
            include_documentation=True,
        )
        topic, unknown_topic, broker, described = _call(sock, request, DescribeConfigsResponse).results
        assert (topic.error_code, topic.error_message, topic.configs) == (ErrorCode.NONE, "", [])
        assert (unknown_topic.error_code, unknown_topic.error_message, unknown_topic.configs) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            "",
            [],
        )
        assert (broker.error_code, broker.configs) == (ErrorCode.INVALID_REQUEST, [])
        assert "configs of groups only" in broker.error_message
        ((config,),) = [described.configs]
        assert (config.name, config.value, config.synonyms) == (SESSION, "45000", [])
        assert config.documentation.startswith("How long a member of this group may go without a heartbeat")
        assert group not in [r.resource_name for r in list_groups_with_configs(sock).config_resources]


def test_group_configs_reads_a_groups_configs_from_its_coordinator(embedded: EmbeddedCoordinator) -> None:
    """What ``KafkaCluster.set_group_config`` waits on: the group's own and the server's
    defaults, and the coordinator's refusal as a GroupError."""
    group = f"read-{uuid.uuid4().hex[:8]}"
    with _connect(embedded.bootstrap_servers) as sock:
        (altered,) = alter(sock, (group, [(SESSION, SET, "50000")])).responses
        assert altered.error_code == 0
    assert group_configs(embedded.bootstrap_servers, group) == {
        SESSION: "50000",
        ASSIGNMENT: "1000",  # this server's own (AS_THE_KAFKA_CLUSTER)
        INTERVAL: "5000",
    }
    with pytest.raises(GroupError, match="INVALID_REQUEST Group name must not be empty"):
        group_configs(embedded.bootstrap_servers, "")


# --- Kafka's kafka-configs, as docs/incremental.md runs it ----------------------------------------

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "incremental.md"


def test_kafka_configs_sets_and_describes_a_groups_session_as_the_guide_shows(tmp_path: Path) -> None:
    """The guide's kafka-configs.sh lines, run as written against a coordinator with the default
    settings, print what the guide shows; deleting a config gives the group the server's own."""
    section = GUIDE.read_text().split("\n### A group's own session and heartbeat interval\n", 1)[1]
    commands_block, printed_block = re.findall(r"```(?:sh)?\n(.*?)```", section, re.DOTALL)[:2]
    commands = [line for line in commands_block.splitlines() if line.strip()]
    assert len(commands) == 2
    with EmbeddedCoordinator() as coordinator:
        runs = run_kafka_configs_lines(commands, coordinator.bootstrap_servers, tmp_path)
        assert [(r.returncode, r.stderr) for r in runs] == [(0, "")] * 2, runs
        assert runs[0].stdout + runs[1].stdout == printed_block
        (deleted,) = run_kafka_configs_lines(
            [commands[0].replace("--add-config", "--delete-config").split("=")[0]],
            coordinator.bootstrap_servers,
            tmp_path,
        )
        assert (deleted.returncode, deleted.stdout) == (
            0,
            "Completed updating config for group orders-app.\n",
        )
        with _connect(coordinator.bootstrap_servers) as sock:
            (group,) = describe(sock, "orders-app").results
            assert [(c.name, c.value, c.config_source) for c in group.configs] == [
                (SESSION, "45000", 5),
                (ASSIGNMENT, "0", 5),
                (INTERVAL, "10000", 8),
            ]


# --- a live group, and a restart ------------------------------------------------------------------


def test_a_killed_librdkafka_member_is_removed_after_its_groups_own_session(tmp_path: Path) -> None:
    """librdkafka consumers (group.protocol=consumer) in a group given a 3 s session by
    kafka-python's admin client, on a coordinator whose own session is Kafka's 45 s: one killed
    is removed, and its partitions handed over, after the group's session; then the coordinator
    restarts on its data directory and the group still has its session."""
    group = "short-session"
    config = CoordinatorConfig(
        initial_rebalance_delay_ms=0,
        consumer_group_min_session_timeout_ms=1000,
        consumer_group_min_heartbeat_interval_ms=100,
    )
    data_dir = tmp_path / "data"
    with (
        recording_membership() as membership,
        EmbeddedCoordinator(topics={"events": 4}, config=config, data_dir=data_dir) as coordinator,
    ):
        admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap_servers)
        try:
            configs = {SESSION: "3000", INTERVAL: "500"}
            admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs)], incremental=True)
        finally:
            admin.close()
        members = [
            MemberProcess(
                "confluent", coordinator.bootstrap_servers, name, group=group, group_protocol="consumer"
            )
            for name in ("a", "b")
        ]
        wait_for(lambda: owned_exactly_once(members, 4), 60, "both members to own the partitions")
        members[0].kill()
        killed = time.monotonic()
        expired = membership.wait_for("expired", group, timeout=30)
        took = time.monotonic() - killed
        assert expired.detail == "session timed out"
        print(f"a member of a group with a 3 s session expired {took:.2f} s after its SIGKILL")
        # 3 s from the arrival of its last heartbeat: at most an interval and a hold (0.9 s) before.
        assert 2.0 <= took < 15, took
        wait_for(lambda: members[1].owned == frozenset(range(4)), 30, "b to own every partition")
        members[1].terminate()
    with (
        EmbeddedCoordinator(topics={"events": 4}, config=config, data_dir=data_dir) as restarted,
        _connect(restarted.bootstrap_servers) as sock,
    ):
        (described,) = describe(sock, group).results
        assert [(c.name, c.value, c.config_source) for c in described.configs] == [
            (SESSION, "3000", 8),
            (ASSIGNMENT, "0", 5),
            (INTERVAL, "500", 8),
        ]
        assert [r.resource_name for r in list_groups_with_configs(sock).config_resources] == [group]
