"""Whether a role can make progress: its stopped partitions, failures and losses.

A role never skips a record it cannot apply: it stops that partition there (no votes or
decisions past it, no checkpoint moved past it), logs one error naming the record and why,
and counts it in `neardup_partitions_stopped{role}`. A checkpoint older than the log start
(retention deleted records the role never applied) is reported once per detection, by an
error log and `neardup_records_lost_total{role}`. `healthy()` is the role's share of the
replica's readiness: false while a partition is stopped or transactions keep failing.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import NamedTuple

from prometheus_client import Gauge

from neardup_stream.worker.metrics import Metrics

log = logging.getLogger(__name__)
MAX_FAILURES = 5  # consecutive failed transactions after which a role reports unhealthy


class Stop(NamedTuple):
    """Where and why a partition stopped."""

    topic: str
    partition: int
    offset: int
    reason: str


class RoleHealth:
    """The progress state of one role of one replica (thread-safe: /healthz reads it)."""

    def __init__(self, role: str, metrics: Metrics, max_failures: int = MAX_FAILURES) -> None:
        self.role, self.metrics, self.max_failures = role, metrics, max_failures
        self._lock = threading.Lock()
        self._stopped: dict[tuple[str, int], Stop] = {}
        self._failures = 0
        metrics.partitions_stopped.labels(role).set(0)
        metrics.records_lost.labels(role)  # the series exists before the first loss

    def stop(self, stop: Stop) -> None:
        """Stop `stop.partition` at `stop.offset`; logs once per stop."""
        key = (stop.topic, stop.partition)
        with self._lock:
            if key in self._stopped:
                return
            self._stopped[key] = stop
            count = len(self._stopped)
        self.metrics.partitions_stopped.labels(self.role).set(count)
        log.error(
            "%s: STOPPED partition %s-%d at offset %d: %s. Nothing past this record is decided "
            "until the cause is fixed and the replica restarts (see docs/scale-out-health.md)",
            self.role,
            stop.topic,
            stop.partition,
            stop.offset,
            stop.reason,
        )

    def is_stopped(self, topic: str, partition: int) -> bool:
        with self._lock:
            return (topic, partition) in self._stopped

    def stopped(self) -> list[Stop]:
        with self._lock:
            return sorted(self._stopped.values())

    def stopped_at(self, topic: str, partition: int) -> int | None:
        """The offset `partition` of `topic` stopped at (None: not stopped)."""
        with self._lock:
            stop = self._stopped.get((topic, partition))
        return None if stop is None else stop.offset

    def stopped_in(self, topic: str) -> set[int]:
        """The partitions of `topic` stopped here."""
        with self._lock:
            return {partition for t, partition in self._stopped if t == topic}

    def release(self, topic: str, partition: int) -> None:
        """The partition left this replica (its next owner finds the record again)."""
        with self._lock:
            self._stopped.pop((topic, partition), None)
            count = len(self._stopped)
        self.metrics.partitions_stopped.labels(self.role).set(count)

    def lost(self, topic: str, partition: int, checkpoint: int, log_start: int) -> int:
        """Report the records [checkpoint, log_start) deleted before this role applied them."""
        return report_lost(self.metrics, self.role, topic, partition, checkpoint, log_start)

    def failed(self) -> None:
        with self._lock:
            self._failures += 1

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0

    def healthy(self) -> bool:
        with self._lock:
            return not self._stopped and self._failures < self.max_failures


def lost_offsets(checkpoint: int, log_start: int) -> int:
    """Offsets between a checkpoint and a later log start (0 when the log still has them)."""
    return max(0, log_start - checkpoint)


def report_lost(
    metrics: Metrics,
    role: str,
    topic: str,
    partition: int,
    checkpoint: int,
    log_start: int,
    cause: str = "the outage outlasted the internal topics' retention",
) -> int:
    """Count and log the offsets [checkpoint, log_start) retention deleted before `role`
    applied them; returns how many (0: nothing was missing, nothing reported)."""
    missing = lost_offsets(checkpoint, log_start)
    if missing:
        metrics.records_lost.labels(role).inc(missing)
        log.error(
            "%s: %s-%d: checkpoint at offset %d but the log starts at %d: %d offsets were "
            "deleted by retention before this role applied them; their documents get no "
            "decision (%s)",
            role,
            topic,
            partition,
            checkpoint,
            log_start,
            missing,
            cause,
        )
    return missing


def forget_series(gauge: Gauge, *labels: str) -> None:
    """Remove one labelled series of a gauge if it exists."""
    with contextlib.suppress(KeyError):
        gauge.remove(*labels)
