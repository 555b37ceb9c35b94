"""Security failures kafka-python hides behind a bootstrap timeout become one clear error.

The integration tests (tests/integration/test_security.py) prove it against a real SASL_SSL
broker; these pin the wording and the recognition of kafka-python's exception chains.
"""

from __future__ import annotations

import logging
import ssl

import pytest
from kafka.errors import (
    KafkaConnectionError,
    KafkaTimeoutError,
    SaslAuthenticationFailedError,
)
from pydantic import SecretStr

from neardup_stream.worker.security_errors import SecurityFailure, cause_of, checked, watch
from neardup_stream.worker.settings import KafkaSettings

PASSWORD = "s3cret-pw"
KAFKA = KafkaSettings(
    bootstrap_servers="broker:9093",
    security_protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-512",
    sasl_username="alice",
    sasl_password=SecretStr(PASSWORD),
    ssl_cafile="/etc/ca.pem",
)


def _handshake_error() -> KafkaConnectionError:
    """What kafka-python raises for an untrusted certificate: the ssl error is the context."""
    verify = ssl.SSLCertVerificationError(1, "certificate verify failed")
    verify.verify_message = "self-signed certificate in certificate chain"
    try:
        try:
            raise verify
        except ssl.SSLError as e:
            raise KafkaConnectionError(f"Handshake failed: {e}")  # noqa: B904 (as kafka-python)
    except KafkaConnectionError as wrapped:
        return wrapped


def _auth_error() -> SaslAuthenticationFailedError:
    return SaslAuthenticationFailedError(
        "SaslAuthenticationFailedError: Authentication failed due to invalid credentials"
        " with SASL mechanism SCRAM-SHA-512"
    )


def test_causes_are_found_in_the_exception_chain() -> None:
    assert cause_of(_handshake_error()) == (
        "tls",
        "self-signed certificate in certificate chain",
    )
    sasl = cause_of(_auth_error())
    assert sasl is not None and sasl.kind == "sasl" and "invalid credentials" in sasl.detail
    assert cause_of(KafkaConnectionError("socket disconnected")) is None


def test_the_watch_keeps_the_first_cause_and_drops_it_and_what_follows(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conn_log = logging.getLogger("kafka.net.connection")
    with caplog.at_level(logging.WARNING, logger="kafka"), watch() as watcher:
        conn_log.error("%s: Connection lost: %s", "conn", KafkaConnectionError("disconnected"))
        conn_log.error("%s: Connection lost: %s", "conn", _auth_error())
        conn_log.warning("Bootstrap connection failed: %s", KafkaConnectionError("again"))
    assert watcher.cause is not None and watcher.cause.kind == "sasl"
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 1 and "disconnected" in messages[0]  # before the cause: kept
    conn_log.error("after the watch: %s", _auth_error())
    assert len(caplog.records) == 2  # the filter is gone once the watch ends


def test_a_sasl_failure_names_mechanism_and_user_never_the_password() -> None:
    leaky = SaslAuthenticationFailedError(f"bad password {PASSWORD}")

    def bootstrap() -> None:
        logging.getLogger("kafka.net.manager").warning("failed: %s", leaky)
        raise KafkaTimeoutError("Unable to bootstrap from broker:9093")

    with pytest.raises(SecurityFailure) as failure:
        checked(KAFKA, bootstrap)()
    text = str(failure.value)
    assert "SASL authentication failed" in text and "SCRAM-SHA-512" in text
    assert "'alice'" in text and "broker:9093" in text and "NEARDUP_KAFKA__SASL_PASSWORD" in text
    assert PASSWORD not in text


def test_a_tls_failure_names_the_verification_error_and_the_ca_file() -> None:
    def bootstrap() -> None:
        logging.getLogger("kafka.net.manager").error("Connection failed: %s", _handshake_error())
        raise KafkaTimeoutError("Unable to bootstrap from broker:9093")

    with pytest.raises(SecurityFailure, match="TLS certificate verification") as failure:
        checked(KAFKA, bootstrap)()
    assert "self-signed certificate" in str(failure.value)
    assert "/etc/ca.pem" in str(failure.value)


def test_an_unreachable_broker_stays_a_retryable_kafka_error() -> None:
    def bootstrap() -> None:
        logging.getLogger("kafka.net.manager").warning(
            "failed: %s", KafkaConnectionError("refused")
        )
        raise KafkaTimeoutError("Unable to bootstrap from broker:9093")

    with pytest.raises(KafkaTimeoutError):
        checked(KAFKA, bootstrap)()
    assert checked(KAFKA, lambda: 7)() == 7
