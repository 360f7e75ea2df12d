"""The one table of Kafka error codes and api keys agrees with Apache Kafka's own enums."""

from __future__ import annotations

import subprocess
from pathlib import Path

from coordinator_api._protocol import ApiKey, ErrorCode, error_name
from coordinator_api.testing import kafka_classpath

PRINT_PROTOCOL = """
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

public class PrintProtocol {
    public static void main(String[] args) {
        for (Errors error : Errors.values()) System.out.println("error " + error.name() + " " + error.code());
        for (ApiKeys api : ApiKeys.values()) System.out.println("api " + api.name() + " " + api.id);
    }
}
"""


def test_every_error_code_and_api_key_has_kafkas_number_and_name(tmp_path: Path) -> None:
    source = tmp_path / "PrintProtocol.java"
    source.write_text(PRINT_PROTOCOL)
    result = subprocess.run(
        ["java", "-cp", kafka_classpath(), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kafka = {(kind, name): int(code) for kind, name, code in map(str.split, result.stdout.splitlines())}
    for code in ErrorCode:
        assert kafka["error", code.name] == code.value, code
    kafka_api_ids = {code for (kind, _), code in kafka.items() if kind == "api"}
    for api in ApiKey:
        if api.value >= 10_000:  # this project's own (GroupHeartbeat): no Kafka api has its number
            assert api.value not in kafka_api_ids, api
        else:
            assert kafka["api", api.name] == api.value, api


def test_unlisted_codes_are_named_by_number() -> None:
    assert error_name(27) == "REBALANCE_IN_PROGRESS"
    assert error_name(4242) == "error code 4242"
