"""`refusals.refused`: the broker's refusal of a setting found in what kafka-python raises."""

from __future__ import annotations

from kafka.errors import (
    InvalidSessionTimeoutError,
    InvalidTransactionTimeoutError,
    KafkaError,
    KafkaTimeoutError,
)

from neardup_stream.worker.refusals import SettingRefused, refused
from neardup_stream.worker.settings import Settings


def settings() -> Settings:
    return Settings.model_validate(
        {"worker": {"transaction_timeout_ms": 1_000_000, "session_timeout_ms": 2_000_000}}
    )


def test_kafka_pythons_generic_init_producer_id_error_names_the_setting() -> None:
    # what kafka-python 3.0.12 raises from init_transactions (the type is lost)
    error = KafkaError(
        f"Unexpected error in InitProducerIdResponse: {InvalidTransactionTimeoutError()}"
    )
    found = refused(error, settings())
    assert isinstance(found, SettingRefused)
    assert "worker.transaction_timeout_ms = 1000000" in str(found)
    assert "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS" in str(found)


def test_a_refusal_raised_from_another_error_is_found() -> None:
    try:
        try:
            raise InvalidTransactionTimeoutError()
        except KafkaError as inner:
            raise RuntimeError("creating the producer failed") from inner
    except RuntimeError as outer:
        assert refused(outer, settings()) is not None


def test_other_errors_are_not_refusals() -> None:
    assert refused(KafkaTimeoutError("no answer"), settings()) is None
    assert refused(None, settings()) is None


def test_a_session_timeout_the_group_coordinator_refuses_names_its_setting() -> None:
    found = refused(InvalidSessionTimeoutError(), settings())
    assert found is not None
    assert "worker.session_timeout_ms = 2000000" in str(found)
    assert "NEARDUP_WORKER__SESSION_TIMEOUT_MS" in str(found)
    assert "group.max.session.timeout.ms" in str(found)
