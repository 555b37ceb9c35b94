"""The worker loop: poll -> decide -> publish (one transaction) -> commit in flight.

It ties the parts together: `partitions.Assignment` says what this worker owns, a
`restore.RestoreJob` rebuilds the index of each partition it gains (paused until complete,
so the loop keeps polling within the poll interval), `decide.decide` turns a batch into
outputs against one index per partition, and `transaction.Publisher` commits them exactly
once. When a batch fails, only the partitions it touched are rebuilt (their indexes ran
ahead of what Kafka committed); inputs the broker rejected for a deterministic reason are
dead-lettered on the replay; transient failures back off and shrink the next batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kafka import TopicPartition

from neardup_stream.deduplicator import Deduplicator
from worker import clients, failpoints, snapshots, topics
from worker.decide import BatchOutput, DecideRules, InputRecord, Rejection, Source, decide
from worker.metrics import Metrics
from worker.partitions import Assignment, rewind_to_committed, update_lag
from worker.restore import RestoreInterrupted, RestoreJob
from worker.settings import Settings
from worker.transaction import Publisher, PublishFailure

log = logging.getLogger(__name__)


class FatalError(RuntimeError):
    """A condition retrying cannot fix (e.g. even a bare dead letter is rejected)."""


class Worker:
    """One consumer-group member. `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.ready = threading.Event()
        self.consuming = False
        self.indexes: dict[int, Deduplicator] = {}
        self.rejected: dict[Source, Rejection] = {}
        self._stop = threading.Event()
        self._job: RestoreJob | None = None
        self._failures = 0
        self._revoke_failure: PublishFailure | None = None
        self._last_snapshot = time.monotonic()

    def request_stop(self) -> None:
        """Ask the loop to finish its batch and shut down (safe from signal handlers)."""
        self._stop.set()

    def run(self) -> None:
        s = self.settings
        layout = topics.ensure_topics(s)
        self._changelog_partitions = layout.input_partitions
        self.rules = DecideRules(
            s.topics.unique,
            s.topics.duplicate,
            s.topics.dlq,
            s.input,
            s.worker.max_message_bytes,
            s.worker.dlq_payload_bytes,
            layout.limits[s.topics.unique],
        )
        self.consumer = clients.make_consumer(s)
        self.publisher = Publisher(s, self.consumer, self._account)
        self.assignment = Assignment(s.topics.input, self.metrics, self._settle_before_revoke)
        self.consumer.subscribe([s.topics.input], listener=self.assignment)
        log.info("consuming %s as group %s", s.topics.input, s.worker.group_id)
        self.consuming = True
        try:
            while not self._stop.is_set():
                polled = self.consumer.poll(
                    timeout_ms=s.worker.poll_timeout_ms, max_records=self._batch_size()
                )
                if self._revoke_failure is not None:
                    failure, self._revoke_failure = self._revoke_failure, None
                    self._recover(failure)
                    continue
                self._follow_assignment()
                records = self._live(polled)
                if records:
                    self._handle(records)
                else:
                    self._settle()
                self._maybe_snapshot()
                update_lag(self.consumer, s.topics.input, set(self.indexes), self.metrics)
        finally:
            self._close()

    def _batch_size(self) -> int:
        """Shrinks with consecutive failures, so a batch that keeps failing is bisected."""
        return max(1, self.settings.worker.max_batch >> min(self._failures, 20))

    def _live(self, polled: dict[TopicPartition, list]) -> list[InputRecord]:
        """Records of partitions with a complete index; others are rewound for later."""
        out: list[InputRecord] = []
        for tp, messages in polled.items():
            if tp.partition not in self.indexes:
                if messages:
                    self.consumer.seek(tp, messages[0].offset)
                continue
            out.extend(
                InputRecord(Source(m.topic, m.partition, m.offset), m.key, m.value, m.timestamp)
                for m in messages
            )
        return out

    def _handle(self, records: list[InputRecord]) -> None:
        started = time.perf_counter()
        output = decide(records, self.indexes, self.rules, self.rejected)
        output.started = started
        failure = self.publisher.settle()  # the previous batch's commit
        if failure is not None:
            self._recover(failure, also=output.partitions)
            return
        self._failures = 0
        failure = self.publisher.publish(output)
        if failure is not None:
            self._recover(failure)

    def _settle(self) -> bool:
        failure = self.publisher.settle()
        if failure is not None:
            self._recover(failure)
            return False
        self._failures = 0
        return True

    def _settle_before_revoke(self) -> None:
        """Rebalance listener: commit what is in flight while the partitions are ours."""
        failure = self.publisher.settle()
        if failure is not None:
            self._revoke_failure = failure

    def _account(self, output: BatchOutput, committed_at: float) -> None:
        """Metrics of a committed batch (runs right after its commit succeeded)."""
        m = self.metrics
        for decision, method in output.decided:
            m.documents.labels(decision, method).inc()
        for reason in output.dead:
            m.dlq.labels(reason).inc()
        for ts in output.timestamps_ms:
            if ts >= 0:
                m.decision_latency.observe(max(0.0, committed_at - ts / 1000))
        if output.started:
            m.batch_seconds.observe(time.perf_counter() - output.started)

    def _recover(
        self, failure: PublishFailure, also: frozenset[int] | set[int] = frozenset()
    ) -> None:
        """Drop what was not committed: rebuild the touched partitions, rewind, retry."""
        self.metrics.transaction_aborts.inc()
        for source, why in failure.rejected.items():
            earlier = self.rejected.get(source)
            if earlier is not None and not earlier.keep_payload:
                raise FatalError(
                    f"even a bare dead letter for {source} was rejected ({why}); "
                    f"check the dead-letter topic {self.settings.topics.dlq!r}"
                ) from failure.error
            self.rejected[source] = Rejection(why, keep_payload=earlier is None)
        if failure.rejected:
            log.warning(
                "the broker rejected %d outputs; those inputs go to the DLQ", len(failure.rejected)
            )
        else:
            self._failures += 1
            delay = min(self.settings.worker.retry_backoff_max_s, 0.5 * 2 ** (self._failures - 1))
            log.error(
                "a batch failed (%s); retrying in %.1f s",
                failure.error,
                delay,
                exc_info=failure.error,
            )
            self._stop.wait(delay)
        for p in (failure.partitions | set(also)) & set(self.indexes):
            del self.indexes[p]  # its index ran ahead of the commit: rebuilt from the changelog
        self._retry(self.publisher.reset)
        owned = self.assignment.owned()
        self._retry(lambda: rewind_to_committed(self.consumer, self.settings.topics.input, owned))
        self._follow_assignment()

    def _retry(self, action: Callable[[], None]) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                action()
                return
            except Exception:
                attempt += 1
                delay = min(self.settings.worker.retry_backoff_max_s, 0.5 * 2**attempt)
                log.exception("recovery step failed; retrying in %.1f s", delay)
                self._stop.wait(delay)

    def _follow_assignment(self) -> None:
        """Drop indexes of partitions gone, pause and restore the ones gained."""
        owned, dropped = self.assignment.take()
        for p in [p for p in self.indexes if p not in owned or p in dropped]:
            del self.indexes[p]
        job = self._job
        if job is not None and (job.partitions - owned or job.partitions & dropped):
            job.cancel()
            self._job = job = None
        if job is not None and job.done:
            self._job = None
            self._install(job, owned)
        pending = owned - set(self.indexes)
        topic = self.settings.topics.input
        if pending:
            self.consumer.pause(*[TopicPartition(topic, p) for p in pending])
        if self._job is None and pending and not self._stop.is_set():
            self._start_restore(pending)
        self.metrics.partitions_restoring.set(len(pending))
        restored = self.assignment.seen_assignment and not pending
        if restored != self.ready.is_set():
            (self.ready.set if restored else self.ready.clear)()
            self.metrics.ready.set(int(restored))

    def _start_restore(self, pending: set[int]) -> None:
        s, topic = self.settings, self.settings.topics.input
        if max(pending) >= self._changelog_partitions:  # input partitions added at runtime
            topics.grow_changelog_for(s, max(pending) + 1)
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
            log.error(
                "restoring partitions %s failed; retrying",
                sorted(job.partitions),
                exc_info=job.error,
            )
            self._stop.wait(1.0)
            return
        topic = self.settings.topics.input
        for p, dedup in job.result.items():
            if p in owned:
                self.indexes[p] = dedup
                self.consumer.resume(TopicPartition(topic, p))
        self.metrics.restore_seconds.set(time.monotonic() - job.started)
        self._update_index_gauges()

    def _update_index_gauges(self) -> None:
        stats = [d.stats() for d in self.indexes.values()]
        self.metrics.index_documents.set(sum(st["documents"] for st in stats))
        self.metrics.index_entries.set(sum(st["index_entries"] for st in stats))
        self.metrics.index_bytes.set(sum(st["index_bytes"] for st in stats))

    def _maybe_snapshot(self, force: bool = False) -> None:
        """Snapshot every complete partition index, with nothing in flight."""
        w, changelog = self.settings.worker, self.settings.topics.changelog
        due = time.monotonic() - self._last_snapshot >= w.snapshot_every_s
        if w.snapshot_dir is None or not (force or due) or not self.indexes:
            return
        self._update_index_gauges()
        if not force and not self._settle():
            return
        self._last_snapshot = time.monotonic()
        tps = {p: TopicPartition(changelog, p) for p in self.indexes}
        try:
            ends = self.consumer.end_offsets(list(tps.values()))
            for p, dedup in self.indexes.items():
                snapshots.save(dedup, w.snapshot_dir, changelog, p, ends[tps[p]])
                failpoints.hit("snapshot_saved")
            log.info("snapshots of partitions %s saved", sorted(self.indexes))
        except Exception:
            log.exception("saving a snapshot failed")

    def _close(self) -> None:
        if self._job is not None:
            self._job.cancel()
        settled = self.consuming and self.publisher.settle() is None
        if settled:
            self._maybe_snapshot(force=True)
        elif self.consuming:
            log.error("the last commit failed; it is replayed on restart")
        if self.consuming:
            self.consumer.close(autocommit=False)
            self.publisher.close()
        log.info("worker stopped")
