"""Saying clearly, once, that the Kafka bootstrap servers cannot be reached.

With a wrong `--bootstrap-servers` the worker retries forever (a broker may come up later),
and kafka-python logs every failed attempt: about a hundred lines in a few minutes, the
first of them only after its bootstrap timeout. At start-up `announce_unreachable` tries a
plain TCP connection to every bootstrap address (seconds, not the client's timeout) and,
when none answers, logs one warning naming each address and why, and that the worker keeps
retrying. `throttle_kafka_connection_logs` lets each kind of kafka-python connection message
through once per interval, noting how many it held back, so retries go on quietly.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

log = logging.getLogger(__name__)
_NUMBERS = re.compile(r"\d+(?:\.\d+)?")
# kafka-python 3 (kafka.net.*) and 2.x (kafka.conn, kafka.client_async) connection loggers.
KAFKA_CONNECTION_LOGGERS = (
    "kafka.net.manager",
    "kafka.net.connection",
    "kafka.net.inet",
    "kafka.conn",
    "kafka.client_async",
)


class Unreachable(NamedTuple):
    """A bootstrap address no TCP connection could be made to, and why."""

    address: str
    reason: str


def addresses(bootstrap_servers: str) -> list[str]:
    return [s.strip() for s in bootstrap_servers.split(",") if s.strip()]


def probe(address: str, timeout_s: float) -> Unreachable | None:
    """None when `host:port` accepts a TCP connection within `timeout_s`."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")  # [::1]:9092
    if not host or not port.isdigit():
        return Unreachable(address, "not a host:port address")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return None
    except socket.gaierror as exc:
        return Unreachable(address, f"host name not found ({exc.strerror})")
    except TimeoutError:
        return Unreachable(address, f"no answer within {timeout_s:g} s")
    except OSError as exc:
        return Unreachable(address, (exc.strerror or str(exc)).lower())


def announce_unreachable(bootstrap_servers: str, timeout_s: float = 3.0) -> list[Unreachable]:
    """Log one warning if no bootstrap address answers; returns the ones that did not.
    A security or protocol problem is not detected here: the address answers."""
    failed = [u for a in addresses(bootstrap_servers) if (u := probe(a, timeout_s)) is not None]
    if failed and len(failed) == len(addresses(bootstrap_servers)):
        named = "; ".join(f"{u.address}: {u.reason}" for u in failed)
        log.warning(
            "cannot reach the Kafka bootstrap server(s) %s. Check --bootstrap-servers / "
            "NEARDUP_KAFKA__BOOTSTRAP_SERVERS; the worker keeps retrying until one answers "
            "(kafka-python's connection errors are then logged at most once a minute)",
            named,
        )
    return failed


class ThrottleFilter(logging.Filter):
    """Passes each message template (per logger, numbers aside) at most once per `interval_s`;
    the next one passed says how many were held back. Thread-safe: kafka-python logs from its I/O thread."""

    def __init__(
        self, interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__()
        self._interval_s = interval_s
        self._clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._held: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        # kafka-python formats some messages itself (f-strings with the backoff, the node id):
        # their numbers do not make them another kind of message.
        key = (record.name, _NUMBERS.sub("#", str(record.msg)))
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval_s:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} (and {held} like it held back since the last one)"
        return True


def throttle_kafka_connection_logs(interval_s: float = 60.0) -> ThrottleFilter:
    """Install one `ThrottleFilter` on kafka-python's connection loggers."""
    throttle = ThrottleFilter(interval_s)
    for name in KAFKA_CONNECTION_LOGGERS:
        logging.getLogger(name).addFilter(throttle)
    return throttle
