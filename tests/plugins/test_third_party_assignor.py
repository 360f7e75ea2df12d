"""An assignor from an installed third-party package runs in a consumer group exactly like a
built-in one: found by protocol type and name in the plugin registry, beside kafka-python."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from coordinator_consumer import decode_assignment
from member_processes import MemberProcess, wait_for
from plugin_sites import environment, install_distribution

from coordinator_api import EmbeddedCoordinator
from coordinator_api._inspect import describe_group
from coordinator_api.testing._fixtures import TEST_COORDINATOR_CONFIG

MEMBER = Path(__file__).with_name("third_party_consumer_member.py")
PARTITIONS = 6

# A third-party plugin: Kafka's range rule with the members taken in reverse order of member id,
# so the outcome tells it apart from the built-in range assignor.
REVERSE_RANGE = """
from coordinator_api import hookimpl
from coordinator_consumer import assign_range


def assign_reverse_range(subscriptions, cluster):
    by_range = assign_range(subscriptions, cluster)
    members = sorted(by_range)
    return {member: by_range[other] for member, other in zip(members, reversed(members))}


@hookimpl
def coordinator_api_register_assignors(registry):
    registry.register("consumer", "reverse-range", assign_reverse_range)
"""


def expected_reverse_range(member_ids: list[str]) -> dict[str, list[int]]:
    ordered = sorted(member_ids, reverse=True)
    share, extra = divmod(PARTITIONS, len(ordered))
    result, start = {}, 0
    for index, member in enumerate(ordered):
        count = share + (1 if index < extra else 0)
        result[member] = list(range(start, start + count))
        start += count
    return result


@pytest.fixture(scope="module")
def reverse_range_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("reverse-range-site")
    install_distribution(
        site,
        name="reverse-range-assignor",
        version="1.0",
        entry_points={"coordinator_api": {"reverse-range": "reverse_range_assignor"}},
        modules={"reverse_range_assignor": REVERSE_RANGE},
    )
    return site


class OurMember:
    """The ConsumerGroupMember process, reading its JSON lines on a thread."""

    def __init__(self, site: Path, bootstrap: str) -> None:
        self.reports: list[dict[str, Any]] = []
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER), bootstrap, "plugged", "events", "reverse-range"],
            env=environment(site),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.reports.append(json.loads(line))

    def close(self) -> str:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        return self.process.stderr.read()


def test_a_third_party_consumer_assignor_leads_a_group_with_kafka_python(reverse_range_site: Path) -> None:
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=TEST_COORDINATOR_CONFIG) as coordinator:
        bootstrap = coordinator.bootstrap_servers
        ours = OurMember(reverse_range_site, bootstrap)
        others: list[MemberProcess] = []
        try:
            # Alone first, so it leads: the group's leader runs the assignor for everyone.
            wait_for(
                lambda: ours.reports and ours.reports[-1]["owned"] == list(range(PARTITIONS)), 60, "lead"
            )
            others = [
                MemberProcess("kafka-python", bootstrap, f"kp{i}", group="plugged", assignor="reverse-range")
                for i in range(2)
            ]

            def settled() -> dict[str, list[int]] | None:
                group = describe_group(bootstrap, "plugged")
                if group.state != "Stable" or len(group.members) != 3:
                    return None
                by_member = {
                    m.member_id: sorted(tp.partition for tp in decode_assignment(m.assignment)[0])
                    for m in group.members
                }
                clients = {m.client_id: m.member_id for m in group.members}
                live = [sorted(o.owned) == by_member[clients[o.name]] for o in others]
                mine = ours.reports[-1]["owned"] == by_member[ours.reports[-1]["member_id"]]
                return by_member if all(live) and mine else None

            by_member = wait_for(settled, 90, "the three members to own the plugin's assignment")
            assert by_member == expected_reverse_range(list(by_member))
            assert by_member != {m: p for m, p in zip(sorted(by_member), [[0, 1], [2, 3], [4, 5]])}
            assert not any(o.events("error") for o in others)
        finally:
            for other in others:
                other.terminate()
            stderr = ours.close()
        assert ours.process.returncode == 0, stderr


def test_an_unknown_assignor_names_the_installed_ones(reverse_range_site: Path) -> None:
    with EmbeddedCoordinator(topics={"events": PARTITIONS}, config=TEST_COORDINATOR_CONFIG) as coordinator:
        result = subprocess.run(
            [sys.executable, str(MEMBER), coordinator.bootstrap_servers, "g", "events", "reverse-ranje"],
            env=environment(reverse_range_site),
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode != 0
    assert "unknown assignor 'reverse-ranje'" in result.stderr
    assert "reverse-range" in result.stderr.split("choose one of", 1)[1]
