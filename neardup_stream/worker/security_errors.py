"""Security misconfiguration that kafka-python hides behind a bootstrap timeout.

kafka-python 3 retries a failed SASL authentication or TLS certificate verification as if the
broker were unreachable: the caller only ever sees `KafkaTimeoutError('Unable to bootstrap
...')`, while the cause is logged by kafka's own loggers on every attempt. `watch()` listens
to those loggers while the worker connects, keeps the first such cause and drops what follows;
`Watch.failure` turns it into one `SecurityFailure` that says what failed: the SASL mechanism
and user (never the password), or the TLS verification error and the CA file.

Either is a configuration error: retrying cannot fix a wrong password or a CA that did not
sign the broker's certificate, and a worker that retried would look alive while doing
nothing. The worker exits with the message instead (`neardup_stream.worker.main`), so an orchestrator shows
a crash with its reason.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, NamedTuple, TypeVar

from kafka.errors import KafkaError, SaslAuthenticationFailedError, UnsupportedSaslMechanismError

from neardup_stream.worker.settings import KafkaSettings

KAFKA_LOGGERS = "kafka"
EXIT_CONFIG = 78  # sysexits.h EX_CONFIG: the worker exits with it on a SecurityFailure
T = TypeVar("T")


class SecurityFailure(RuntimeError):
    """The broker refused our credentials, or we refused its certificate."""


class Cause(NamedTuple):
    """The first security failure seen while connecting."""

    kind: Literal["sasl", "tls"]
    detail: str


def raised_from(exc: BaseException | None) -> Iterator[BaseException]:
    """`exc`, then each exception it was raised from (`__cause__`, else `__context__`), each
    once: where the worker looks for a cause retrying cannot fix (here, `authorization`,
    `refusals`)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def cause_of(exc: BaseException) -> Cause | None:
    """The security failure in `exc` or the exceptions it was raised from, if any."""
    for current in raised_from(exc):
        if isinstance(current, (SaslAuthenticationFailedError, UnsupportedSaslMechanismError)):
            detail = str(current.args[0]) if current.args else current.description
            return Cause("sasl", detail)
        if isinstance(current, ssl.SSLCertVerificationError):
            return Cause("tls", current.verify_message or str(current))
    return None


class Watch(logging.Filter):
    """A filter on kafka's loggers: records the first security failure, then drops it and
    everything kafka logs after it (its repeats, the disconnects and backoffs it causes)."""

    def __init__(self) -> None:
        super().__init__()
        self.cause: Cause | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if self.cause is not None:  # what follows (disconnects, backoff) is the same failure
            return False
        args = record.args if isinstance(record.args, tuple) else ()
        errors = [a for a in args if isinstance(a, BaseException)]
        if record.exc_info and record.exc_info[1] is not None:
            errors.append(record.exc_info[1])
        for error in errors:
            self.cause = cause_of(error)
            if self.cause is not None:
                return False  # said once, by the SecurityFailure
        return True

    def failure(self, kafka: KafkaSettings) -> SecurityFailure | None:
        """The failure to stop with, worded for `kafka`'s settings; None if none was seen."""
        if self.cause is None:
            return None
        where = kafka.bootstrap_servers
        if self.cause.kind == "sasl":
            detail = self.cause.detail
            if kafka.sasl_password is not None:  # never echo a secret, whatever the broker says
                detail = detail.replace(kafka.sasl_password.get_secret_value(), "**********")
            return SecurityFailure(
                f"Kafka SASL authentication failed at {where} (mechanism {kafka.sasl_mechanism},"
                f" user {kafka.sasl_username!r}): {detail}. Check NEARDUP_KAFKA__SASL_MECHANISM,"
                " NEARDUP_KAFKA__SASL_USERNAME and NEARDUP_KAFKA__SASL_PASSWORD."
            )
        cafile = kafka.ssl_cafile or "the system's default CAs"
        return SecurityFailure(
            f"TLS certificate verification of the Kafka broker at {where} failed:"
            f" {self.cause.detail} (trusted CAs: {cafile}). The CA file must hold the CA that"
            " signed the broker's certificate, for the host name in the bootstrap address;"
            " check NEARDUP_KAFKA__SSL_CAFILE."
        )


@contextmanager
def watch() -> Iterator[Watch]:
    """Watch every kafka logger (`kafka` and below) for security failures while inside."""
    watcher = Watch()
    names = [KAFKA_LOGGERS] + [
        n for n in logging.Logger.manager.loggerDict if n.startswith(KAFKA_LOGGERS + ".")
    ]
    loggers = [logging.getLogger(n) for n in names]
    for logger in loggers:
        logger.addFilter(watcher)
    try:
        yield watcher
    finally:
        for logger in loggers:
            logger.removeFilter(watcher)


def checked(kafka: KafkaSettings, action: Callable[[], T]) -> Callable[[], T]:
    """`action`, raising a `SecurityFailure` instead of the KafkaError that hid one.

    A SecurityFailure is a RuntimeError, so `retry.until_stopped(..., checked(kafka, a))`
    retries an unreachable broker but stops at wrong credentials or an untrusted certificate.
    """

    def run() -> T:
        with watch() as watcher:
            try:
                return action()
            except KafkaError:
                failure = watcher.failure(kafka)
                if failure is None:
                    raise
                raise failure from None  # kafka-python's bootstrap timeout only hid it

    return run
