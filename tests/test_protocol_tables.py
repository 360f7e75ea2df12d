"""The one table of Kafka error codes and api keys agrees with Apache Kafka's own enums, and the
schemas of Kafka's messages with Kafka's own definitions."""

from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from coordinator_api._protocol import ApiKey, ErrorCode, StreamsGroupStatus, error_name
from coordinator_api.server import schemas
from coordinator_api.testing import kafka_classpath

PRINT_PROTOCOL = """
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.StreamsGroupHeartbeatResponse;

public class PrintProtocol {
    public static void main(String[] args) {
        for (Errors error : Errors.values()) System.out.println("error " + error.name() + " " + error.code());
        for (ApiKeys api : ApiKeys.values()) System.out.println("api " + api.name() + " " + api.id);
        for (StreamsGroupHeartbeatResponse.Status status : StreamsGroupHeartbeatResponse.Status.values())
            System.out.println("status " + status.name() + " " + status.code());
    }
}
"""


def test_every_error_code_api_key_and_streams_status_has_kafkas_number_and_name(tmp_path: Path) -> None:
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
    kafka_statuses = {name: code for (kind, name), code in kafka.items() if kind == "status"}
    assert {status.name: status.value for status in StreamsGroupStatus} == kafka_statuses


def test_unlisted_codes_are_named_by_number() -> None:
    assert error_name(27) == "REBALANCE_IN_PROGRESS"
    assert error_name(4242) == "error code 4242"


SCHEMAS = Path(schemas.__file__).parent
# What decides the bytes on the wire; the rest ("about", "entityType") is commentary.
WIRE_KEYS = ("name", "type", "versions", "nullableVersions", "taggedVersions", "tag", "default", "mapKey")


def wire_shape(fields: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {key: field[key] for key in WIRE_KEYS if key in field}
        | {"fields": wire_shape(field.get("fields", []))}
        for field in fields
    ]


def message(text: str) -> dict[str, Any]:
    """A message schema, its // comments dropped, as Kafka's generator reads them."""
    return dict(
        json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))
    )


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in SCHEMAS.glob("*.json") if message(p.read_text())["apiKey"] < 10_000)
)
def test_the_schemas_of_kafkas_messages_are_kafkas(name: str) -> None:
    """Each schema of a Kafka message that kafka-python lacks puts on the wire what Apache
    Kafka's own definition in its client jar does: the same fields, types, versions, nullability,
    tags and defaults, and the same structs."""
    jar = next(Path(kafka_classpath()).parent.glob("kafka-clients-*.jar"))
    with zipfile.ZipFile(jar) as archive:
        kafka = message(archive.read(f"common/message/{name}.json").decode())
    ours = message((SCHEMAS / f"{name}.json").read_text())
    for key in ("apiKey", "type", "name", "validVersions", "flexibleVersions"):
        assert ours[key] == kafka[key], key
    assert wire_shape(ours["fields"]) == wire_shape(kafka["fields"])
    structs = {s["name"]: wire_shape(s["fields"]) for s in kafka.get("commonStructs", [])}
    assert {s["name"]: wire_shape(s["fields"]) for s in ours.get("commonStructs", [])} == structs
