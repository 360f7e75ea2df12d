"""The one table of Kafka error codes agrees with Apache Kafka's own ``Errors`` enum."""

from __future__ import annotations

import subprocess
from pathlib import Path

from coordinator_api._protocol import ErrorCode, error_name
from coordinator_api.testing import kafka_classpath

PRINT_ERRORS = """
import org.apache.kafka.common.protocol.Errors;

public class PrintErrors {
    public static void main(String[] args) {
        for (Errors error : Errors.values()) System.out.println(error.name() + " " + error.code());
    }
}
"""


def test_every_error_code_has_kafkas_number_and_name(tmp_path: Path) -> None:
    source = tmp_path / "PrintErrors.java"
    source.write_text(PRINT_ERRORS)
    result = subprocess.run(
        ["java", "-cp", kafka_classpath(), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kafka = {name: int(code) for name, code in (line.split() for line in result.stdout.splitlines())}
    for code in ErrorCode:
        assert kafka[code.name] == code.value, code


def test_unlisted_codes_are_named_by_number() -> None:
    assert error_name(27) == "REBALANCE_IN_PROGRESS"
    assert error_name(4242) == "error code 4242"
