"""How the worker waits before trying again: doubling delays, and start-up that outlasts a
broker which is down or restarting (configuration errors stay fatal)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from kafka.errors import KafkaError

from neardup_stream.worker.refusals import retrying_cannot_fix
from neardup_stream.worker.runtime import shutdown

log = logging.getLogger(__name__)
T = TypeVar("T")


def backoff_s(max_s: float, attempt: int) -> float:
    """Seconds to wait before retry `attempt`: 0.5 s doubling, capped at `max_s`."""
    return min(max_s, 0.5 * 2**attempt)


class BrokerUnavailable(RuntimeError):
    """The broker stayed unusable past `kafka.give_up_after_s` at start-up: the worker exits
    with `EXIT_UNAVAILABLE` so that an orchestrator sees it fail."""


EXIT_UNAVAILABLE = 69  # sysexits.h EX_UNAVAILABLE


def until_stopped(
    stop: threading.Event,
    delay_for: Callable[[int], float],
    action: Callable[[], T],
    give_up_after_s: float | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> T | None:
    """`action()`, retried while the broker is unusable (KafkaError, OSError); None if `stop`
    is set first. Anything else (RuntimeError: a configuration problem) propagates, as does
    `BrokerUnavailable` once a failure comes `give_up_after_s` after the first attempt."""
    attempt, started = 0, clock()
    while not stop.is_set():
        try:
            return action()
        except (KafkaError, OSError) as exc:
            if retrying_cannot_fix(exc):
                raise
            now = clock()
            if give_up_after_s is not None and now - started >= give_up_after_s:
                raise BrokerUnavailable(
                    f"the Kafka broker was not usable for {now - started:.0f} s at start-up "
                    f"(last error: {exc!r}); giving up after kafka.give_up_after_s="
                    f"{give_up_after_s:g} (--give-up-after). Check --bootstrap-servers / "
                    "NEARDUP_KAFKA__BOOTSTRAP_SERVERS and that the broker is up"
                ) from None
            attempt += 1
            delay = delay_for(attempt)
            if give_up_after_s is not None:
                delay = min(delay, max(0.0, started + give_up_after_s - now))
            log.warning("broker not usable yet (%r); retrying in %.1f s", exc, delay)
            shutdown.pause(stop, delay)
    return None


def until_done(stop: threading.Event, max_s: float, action: Callable[[], None]) -> None:
    """`action()` until it succeeds or `stop` is set, backing off (0.5 s doubling, capped at
    `max_s`) and logging each failure: a recovery step after a failed batch."""
    attempt = 0
    while not stop.is_set():
        try:
            action()
            return
        except Exception as exc:
            if retrying_cannot_fix(exc):
                raise
            attempt += 1
            delay = backoff_s(max_s, attempt)
            log.exception("recovery step failed; retrying in %.1f s", delay)
            shutdown.pause(stop, delay)
