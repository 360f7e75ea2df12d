"""The one table of Kafka error codes agrees with kafka-python's, an independent source."""

from __future__ import annotations

import kafka.errors

from coordinator_api._protocol import ErrorCode, error_name

# Where kafka-python's names differ from those of Kafka's own Errors enum (which this table uses).
KAFKA_PYTHON_SPELLING = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "UNKNOWN",
    ErrorCode.INVALID_TOPIC_EXCEPTION: "INVALID_TOPIC",
}


def test_every_error_code_has_kafkas_number_and_name() -> None:
    for code in ErrorCode:
        if code is ErrorCode.NONE:
            continue
        assert kafka.errors.for_code(code.value).errno == code.value
        expected = KAFKA_PYTHON_SPELLING.get(code, code.name)
        assert kafka.errors.for_code(code.value).message == expected


def test_unlisted_codes_are_named_by_number() -> None:
    assert error_name(27) == "REBALANCE_IN_PROGRESS"
    assert error_name(4242) == "error code 4242"
