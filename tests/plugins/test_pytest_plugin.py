"""The fixtures coordinator-api ships for plugin authors (``coordinator_api.testing``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugin_sites import ROOT, environment

from coordinator_api import (
    CallbackError,
    Coordinator,
    CoordinatorClosedError,
    EmbeddedCoordinator,
    GroupTimeoutError,
    JoinedMember,
)
from coordinator_api.testing import pytest_plugin
from coordinator_api.testing._fixtures import TEST_COORDINATOR_CONFIG, MemberFactory

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PLUGIN_AUTHORS_TESTS = '''
import pytest
from coordinator_api import Coordinator, CoordinatorConfig


class Echo(Coordinator):
    """Each member is assigned its own member id."""

    assignment = b""

    def protocol_type(self):
        return "echo"

    def metadata(self):
        return [("echo", b"")]

    def perform_assignment(self, leader_id, protocol, members):
        return {m.member_id: m.member_id.encode() for m in members}

    def on_join_complete(self, generation, member_id, protocol, assignment):
        self.assignment = assignment


def test_a_group_of_three_settles(embedded_coordinator, member_factory):
    assert member_factory.bootstrap_servers == embedded_coordinator.bootstrap_servers
    members = [member_factory(Echo, "echoes") for _ in range(3)]
    generation = member_factory.settle()
    assert generation >= 1
    assert all(m.generation().generation_id == generation for m in members)
    assert sorted(m.assignment.decode() for m in members) == sorted(m.member_id for m in members)


def test_a_call_can_override_member_settings(member_factory):
    member = member_factory(Echo, "echoes", client_id="mine")
    member_factory.settle(member)
    assert member.member_id.startswith("mine")


class TestWithOtherSettings:
    @pytest.fixture
    def embedded_coordinator_config(self):
        return CoordinatorConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=500, max_group_size=1)

    def test_the_config_fixture_can_be_overridden(self, member_factory):
        member_factory(Echo, "echoes")
        member_factory.settle()
        second = member_factory(Echo, "echoes")
        with pytest.raises(Exception, match="GROUP_MAX_SIZE_REACHED"):
            second.ensure_active_group(timeout=10)


def test_the_same_group_on_apache_kafka(kafka_cluster):
    from coordinator_api.testing import MemberFactory

    factory = MemberFactory(kafka_cluster.bootstrap_servers)
    try:
        members = [factory(Echo, "echoes-on-kafka") for _ in range(2)]
        assert factory.settle() >= 1
        assert sorted(m.assignment.decode() for m in members) == sorted(m.member_id for m in members)
    finally:
        factory.close_all()
'''


def test_plugin_authors_get_the_fixtures_in_their_own_test_suite(tmp_path: Path) -> None:
    (tmp_path / "test_my_plugin.py").write_text(PLUGIN_AUTHORS_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    # Autoload off and -p on: the same whether or not coordinator-api's pytest11 entry point is
    # installed in this environment (loading the module both ways would register it twice).
    env = environment(PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "coordinator_api.testing.pytest_plugin",
            "-q",
            "-p",
            "no:cacheprovider",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


def test_pytest_finds_the_fixtures_through_the_pytest11_entry_point() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"coordinator_api": "coordinator_api.testing.pytest_plugin"}
    assert set(pytest_plugin.__all__) == {
        "embedded_coordinator",
        "embedded_coordinator_config",
        "kafka_cluster",
        "kafka_cluster_brokers",
        "member_factory",
    }


class Echo(Coordinator):
    fail = False

    def protocol_type(self) -> str:
        return "echo"

    def metadata(self) -> list[tuple[str, bytes]]:
        return [("echo", b"")]

    def perform_assignment(
        self, leader_id: str, protocol: str, members: list[JoinedMember]
    ) -> dict[str, bytes]:
        return {}

    def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        if self.fail:
            raise RuntimeError("application bug")


class Failing(Echo):
    fail = True


@pytest.fixture
def factory() -> Iterator[MemberFactory]:
    with EmbeddedCoordinator(config=TEST_COORDINATOR_CONFIG) as coordinator:
        members = MemberFactory(coordinator.bootstrap_servers, session_timeout_ms=2000)
        yield members
        members.close_all()


def test_close_all_closes_every_member(factory: MemberFactory) -> None:
    first, second = factory(Echo, "g"), factory(Echo, "g")
    factory.settle()
    assert factory.members == [first, second]
    assert first._settings.session_timeout_ms == 2000
    factory.close_all()
    assert factory.members == []
    for member in (first, second):
        with pytest.raises(CoordinatorClosedError):
            member.poll()


def test_settle_reports_a_callback_that_raises(factory: MemberFactory) -> None:
    member = factory(Failing, "g")
    with pytest.raises(CallbackError, match="on_join_complete"):
        factory.settle(member, timeout=20)


def test_settle_gives_up_after_its_timeout(factory: MemberFactory) -> None:
    member = Echo("g", "127.0.0.1:1", request_timeout_ms=200, retry_backoff_ms=50)  # nothing listens
    try:
        with pytest.raises(GroupTimeoutError, match=r"did not settle on one generation within 0\.5 s"):
            factory.settle(member, timeout=0.5)
    finally:
        member.close(timeout=1)
