"""The same custom protocol against an independent Kafka-protocol server: librdkafka's mock cluster."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from member_processes import SHARD_MEMBER, MemberProcess, running_members, wait_for
from test_coordinator_processes import SETTLE_S, SHARDS, acting_overlaps, latest, settle

from coordinator_api.testing import KAFKA_PYTHON_API_VERSION, LibrdkafkaMockCluster

GROUP = "shards"


@pytest.fixture
def mock_cluster() -> Iterator[LibrdkafkaMockCluster]:
    with LibrdkafkaMockCluster(brokers=3) as cluster:
        cluster.set_group_coordinator(GROUP, 1)
        yield cluster


def test_shard_group_on_a_three_broker_mock_cluster_survives_a_coordinator_move(
    mock_cluster: LibrdkafkaMockCluster,
) -> None:
    api_version = ".".join(str(x) for x in KAFKA_PYTHON_API_VERSION)
    members = [
        MemberProcess(
            "",
            mock_cluster.bootstrap_servers,
            f"mock-{i}",
            script=SHARD_MEMBER,
            api_version=api_version,
            env={"SHARD_MEMBER_DEBUG": "1"},  # logs the member state machine's events
        )
        for i in range(3)
    ]
    with running_members(members):
        settle(members, "three members on the mock cluster")
        acts_before = sum(len(m.events("act")) for m in members)
        mock_cluster.set_group_coordinator(GROUP, 2)
        # Members learn of the move from NOT_COORDINATOR, find broker 2 and carry on there.
        wait_for(
            lambda: sum(len(m.events("act")) for m in members) > acts_before + 60,
            SETTLE_S,
            "members to keep working after the coordinator moved",
        )
        mock_cluster.set_group_coordinator(GROUP, 3)
        members[2].kill()
        wait_for(
            lambda: (
                sorted(s for m in members[:2] for s in (latest(m, "assigned") or {}).get("shards", []))
                == list(range(SHARDS))
            ),
            SETTLE_S,
            "the survivors to take over on the third coordinator",
        )
        assert not acting_overlaps(members)
        # The moves were seen: NOT_COORDINATOR answers, then the coordinator was found again.
        for member in members[:2]:
            log = member.stderr_text()
            assert "HeartbeatAnswered(sent_at=" in log
            assert "error=16)" in log
            assert log.count("CoordinatorFound()") >= 3
