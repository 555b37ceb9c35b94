"""The indexes of the input partitions this worker owns, and their restores.

`PartitionIndexes` maps an owned input partition to its complete `Deduplicator`. After each
poll `follow()` brings it in line with the assignment: indexes of partitions gone are
dropped, partitions gained (or whose index was dropped after a failed batch) are paused and
restored by one background `RestoreJob` at a time, and installed and resumed only when that
job completed for partitions still owned. `ready` is set once every owned partition has its
index (the /healthz answer).
"""

from __future__ import annotations

import logging
import threading
import time

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from neardup_stream.deduplicator import Deduplicator
from worker import clients, topics
from worker.metrics import Metrics, index_gauges
from worker.partitions import Assignment
from worker.restore import RestoreInterrupted, RestoreJob
from worker.settings import Settings

log = logging.getLogger(__name__)


class PartitionIndexes(dict[int, Deduplicator]):
    """Owned input partition -> its complete index."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        consumer: KafkaConsumer,
        assignment: Assignment,
        ready: threading.Event,
        stop: threading.Event,
        changelog_partitions: int,
    ) -> None:
        super().__init__()
        self.settings, self.metrics = settings, metrics
        self.consumer, self.assignment = consumer, assignment
        self.ready, self._stop = ready, stop
        self._changelog_partitions = changelog_partitions
        self._job: RestoreJob | None = None
        self._grow_after = 0.0  # monotonic time before which a failed growth is not retried

    def drop(self, partitions: set[int]) -> None:
        """Forget indexes that ran ahead of what Kafka committed; `follow` restores them."""
        for p in partitions & set(self):
            del self[p]

    def follow(self) -> None:
        """Drop indexes of partitions gone, pause and restore the ones gained."""
        if self.assignment.rebalancing:
            return  # revoked, not yet reassigned: what stays is not known yet
        owned, dropped = self.assignment.take()
        self.drop({p for p in self if p not in owned or p in dropped})
        job = self._job
        if job is not None and (job.partitions - owned or job.partitions & dropped):
            job.cancel()
            self._job = job = None
        if job is not None and job.done:
            self._job = None
            self._install(job, owned)
        pending = owned - set(self)
        topic = self.settings.topics.input
        if pending:
            self.consumer.pause(*[TopicPartition(topic, p) for p in pending])
        if self._job is None and pending and not self._stop.is_set():
            self._start(pending)
        self.metrics.partitions_restoring.set(len(pending))
        restored = self.assignment.seen_assignment and not pending
        if restored != self.ready.is_set():
            (self.ready.set if restored else self.ready.clear)()
            self.metrics.ready.set(int(restored))

    def close(self) -> None:
        """Stop a restore in progress; nothing of it is used."""
        if self._job is not None:
            self._job.cancel()
            self._job = None

    def _start(self, pending: set[int]) -> None:
        s, topic = self.settings, self.settings.topics.input
        if max(pending) >= self._changelog_partitions:  # input partitions added at runtime
            if time.monotonic() < self._grow_after:
                return
            try:
                topics.grow_changelog_for(s, max(pending) + 1)
            except KafkaError as exc:  # transient: a later `follow` tries again
                self._grow_after = time.monotonic() + s.worker.retry_backoff_max_s
                log.warning("could not grow changelog %s yet: %r", s.topics.changelog, exc)
                return
            self._changelog_partitions = max(pending) + 1
        for p in pending:  # read_committed: waits until no transaction holds its offsets
            self.consumer.committed(TopicPartition(topic, p))
        log.info("restoring partitions %s", sorted(pending))
        self._job = RestoreJob(
            lambda: clients.make_reader(s),
            s.topics.changelog,
            pending,
            s.dedup,
            self.metrics,
            s.worker.snapshot_dir,
            self._stop.is_set,
        )

    def _install(self, job: RestoreJob, owned: set[int]) -> None:
        if isinstance(job.error, RestoreInterrupted):
            return
        if job.error is not None or job.result is None:
            log.error("restoring %s failed; retrying", sorted(job.partitions), exc_info=job.error)
            self._stop.wait(1.0)
            return
        topic = self.settings.topics.input
        for p, dedup in job.result.items():
            if p in owned:
                self[p] = dedup
                self.consumer.resume(TopicPartition(topic, p))
        self.metrics.restore_seconds.set(time.monotonic() - job.started)
        index_gauges(self.metrics, self)
