"""The suite's rerun rule (tests/kafka_python_reruns.py), run on a small test file of its own: only a
test marked kafka_python, and only for kafka-python 3.0.12's join stall, runs again; each rerun
is listed with the client's log line."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).parent

CASES = '''
import pytest
from member_processes import KafkaPythonJoinStall

LOG_LINE = "1.200 kafka-io-kp-1 kafka.coordinator DEBUG Received SyncGroup response: (error_code=0,)"


def stall():
    return KafkaPythonJoinStall(
        "timed out after 60 s waiting for the group: kafka-python member kp-1 is stuck. Its log:\\n"
        + LOG_LINE,
        "kp-1",
        [LOG_LINE],
    )


def first_run(request):
    """True on a test's first run, False on its reruns."""
    marker = request.config.rootpath / (request.node.name + ".ran")
    first = not marker.exists()
    marker.touch()
    return first


@pytest.mark.kafka_python
def test_stalls_once(request):
    if first_run(request):
        raise stall()


@pytest.mark.kafka_python
def test_stalls_every_time():
    raise stall()


@pytest.mark.kafka_python
def test_breaks_a_safety_check_once(request):
    assert not first_run(request), "partition 3 owned by kp-0 and kp-1 at once"


@pytest.mark.kafka_python
def test_times_out_without_a_stall_once(request):
    assert not first_run(request), "timed out after 60 s waiting for the group"


@pytest.mark.kafka_python
def test_breaks_a_safety_check_while_handling_a_stall(request):
    try:
        raise stall()
    except KafkaPythonJoinStall:
        assert not first_run(request), "partition 3 owned twice"


def test_without_kafka_python_stalls_once(request):
    if first_run(request):
        raise stall()
'''


@pytest.fixture
def cases(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(TESTS))  # member_processes, kafka_python_reruns
    pytester.makeconftest('pytest_plugins = ("kafka_python_reruns",)\n')
    pytester.makepyfile(test_cases=CASES)
    return pytester


def test_only_the_join_stall_of_a_kafka_python_test_runs_again(cases: pytest.Pytester) -> None:
    result = cases.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
    outcomes = {
        line.split(" ", 1)[0] + " " + line.split("::", 1)[1].split(" ", 1)[0]
        for line in result.outlines
        if line.startswith(("PASSED ", "FAILED ", "RERUN ")) and "::" in line
    }
    assert outcomes >= {
        "PASSED test_stalls_once",  # after one rerun
        "FAILED test_stalls_every_time",  # after two
        "FAILED test_breaks_a_safety_check_once",
        "FAILED test_times_out_without_a_stall_once",
        "FAILED test_breaks_a_safety_check_while_handling_a_stall",
        "FAILED test_without_kafka_python_stalls_once",
    }, result.stdout.str()
    counts = result.parseoutcomes()
    assert (counts["passed"], counts["failed"], counts["rerun"]) == (1, 5, 3)
    # Each rerun is listed with the client's log line.
    # The section ends where pytest's short summary begins (which, on CI, repeats whole messages).
    after = result.stdout.str().split("run again after kafka-python 3.0.12's join stall", 1)[1]
    summary = after.split("short test summary info", 1)[0]
    reruns = [line for line in summary.splitlines() if line.startswith("RERUN ")]
    assert sorted(reruns) == [
        "RERUN test_cases.py::test_stalls_every_time",
        "RERUN test_cases.py::test_stalls_every_time",
        "RERUN test_cases.py::test_stalls_once",
    ]
    assert summary.count("Received SyncGroup response: (error_code=0,)") == 3


def test_without_pytest_rerunfailures_nothing_runs_again(cases: pytest.Pytester) -> None:
    result = cases.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:rerunfailures")
    result.assert_outcomes(passed=0, failed=6)
    assert "run again after" not in result.stdout.str()
