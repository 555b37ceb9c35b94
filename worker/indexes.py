"""The indexes of the input partitions this worker owns, and their restores.

`PartitionIndexes` maps an owned input partition to its complete `Deduplicator`. After each
poll `follow()` brings it in line with the assignment: indexes of partitions gone are
dropped, partitions gained (or whose index was dropped after a failed batch) are paused and
restored by one background `RestoreJob` at a time, and installed and resumed only when that
job completed for partitions still owned. `ready` is set once every owned partition has its
index (the /healthz answer).

A restore that met another pipeline's records (`restore.OtherPipeline`) is final: the worker
logs that error once, drops every index, keeps every owned partition paused and stays
unready (it decides nothing) until it is stopped and given its own changelog.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from neardup_stream.deduplicator import Deduplicator
from worker import changelog, clients, topics
from worker.metrics import Metrics, index_gauges
from worker.partitions import Assignment
from worker.restore import OtherPipeline, RestoreInterrupted, restore_partitions
from worker.runtime import following
from worker.settings import Settings

Indexes = dict[int, Deduplicator]
Restore = Callable[[KafkaConsumer, Callable[[], bool]], Indexes]

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
        self.refused: OtherPipeline | None = None  # set for good: this worker decides nothing

    def drop(self, partitions: set[int]) -> None:
        """Forget indexes that ran ahead of what Kafka committed; `follow` restores them."""
        for p in partitions & set(self):
            del self[p]

    def follow(self) -> None:
        """Drop indexes of partitions gone, pause and restore the ones gained."""
        if self.assignment.rebalancing:
            return  # revoked, not yet reassigned: what stays is not known yet
        owned, dropped = self.assignment.take()
        job = self._job
        restoring = set() if job is None else job.partitions
        gone = following.leaving(set(self), restoring, owned, dropped)
        self.drop(gone.release)
        if job is not None and gone.cancel & restoring:  # one job restores them all
            job.cancel()
            self._job = job = None
        if job is not None and job.done:
            self._job = None
            self._install(job, owned)
        if self.refused is not None:
            self.drop(set(self))
        pending = owned - set(self)
        topic = self.settings.topics.input
        if pending:
            self.consumer.pause(*[TopicPartition(topic, p) for p in pending])
        idle = self._job is None and self.refused is None
        if idle and pending and not self._stop.is_set():
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
        name = changelog.topic_of(s)
        if max(pending) >= self._changelog_partitions:  # input partitions added at runtime
            if time.monotonic() < self._grow_after:
                return
            try:
                topics.grow_changelog_for(s, max(pending) + 1)
            except KafkaError as exc:  # transient: a later `follow` tries again
                self._grow_after = time.monotonic() + s.worker.retry_backoff_max_s
                log.warning("could not grow changelog %s yet: %r", name, exc)
                return
            self._changelog_partitions = max(pending) + 1
        # read_committed: waits until no transaction holds its offsets
        committed = {p: self.consumer.committed(TopicPartition(topic, p)) for p in pending}
        log.info("restoring partitions %s from %s", sorted(pending), name)
        pipeline, metrics = changelog.pipeline_of(s), self.metrics

        def restore(reader: KafkaConsumer, should_stop: Callable[[], bool]) -> Indexes:
            return restore_partitions(
                reader, name, pending, s.dedup, pipeline, metrics, should_stop,
                s.worker.snapshot_dir, committed,
            )  # fmt: skip

        self._job = RestoreJob(lambda: clients.make_reader(s), restore, pending, self._stop.is_set)

    def _install(self, job: RestoreJob, owned: set[int]) -> None:
        if isinstance(job.error, RestoreInterrupted):
            return
        if isinstance(job.error, OtherPipeline):
            self.refused = job.error
            log.error("refusing the changelog: %s", job.error)
            self.drop(set(self))
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


class RestoreJob:
    """Restores a set of partitions in a background thread while the loop keeps polling.

    The loop pauses those partitions until `done`; it installs `result` only if the job was
    not cancelled and the partitions are still its own. The thread has its own reader.
    """

    def __init__(
        self,
        make_reader: Callable[[], KafkaConsumer],
        restore: Restore,
        partitions: set[int],
        stopping: Callable[[], bool],
    ) -> None:
        self.partitions = frozenset(partitions)
        self.result: dict[int, Deduplicator] | None = None
        self.error: BaseException | None = None
        self._cancelled = False
        self._stopping = stopping
        self._make_reader, self._restore = make_reader, restore
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="restore", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Stop and wait; nothing of a cancelled job is ever used."""
        self._cancelled = True
        self._thread.join()

    def _run(self) -> None:
        reader = None
        try:
            reader = self._make_reader()
            self.result = self._restore(reader, lambda: self._cancelled or self._stopping())
        except BaseException as exc:
            self.error = exc
        finally:
            if reader is not None:
                reader.close()
