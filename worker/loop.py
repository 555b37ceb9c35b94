"""The worker loop: poll -> decide -> publish (one transaction) -> commit in flight.

It ties the parts together: `partitions.Assignment` says what this worker owns,
`indexes.PartitionIndexes` holds one complete index per owned partition and restores the ones
it gains in the background (paused until complete, so the loop keeps polling within the poll
interval), `decide.decide` turns a batch into
outputs against one index per partition, and `runtime.publisher.Publisher` (in flight: the
commit runs while the next batch is decided) commits them exactly once. When a batch fails, only the partitions it touched are rebuilt (their indexes ran
ahead of what Kafka committed); inputs the broker rejected for a deterministic reason are
dead-lettered on the replay; transient failures back off and shrink the next batch.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from kafka import OffsetAndMetadata, TopicPartition

from worker import claims, clients, retry, security_errors, snapshots, topics
from worker.changelog import pipeline_of, topic_of
from worker.codec import OutMessage
from worker.decide import Unrecordable, decide
from worker.indexes import PartitionIndexes
from worker.metrics import Metrics, account, index_gauges
from worker.partitions import Assignment, rewind_to_committed, update_lag
from worker.records import BatchOutput, InputRecord, Source
from worker.rejections import Rejections
from worker.runtime.policy import FailurePolicy
from worker.runtime.publisher import Publisher, PublishFailure, Transaction
from worker.scope import WithinPartitionWarning
from worker.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


class Worker:
    """One consumer-group member. `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.ready = threading.Event()
        self.consuming = False
        self.rejected = Rejections(settings.topics.dlq)
        self._stop = threading.Event()
        self.policy = FailurePolicy(settings.worker.retry_backoff_max_s)
        self._revoke_failure: PublishFailure[BatchOutput] | None = None
        self._last_snapshot = time.monotonic()

    def request_stop(self) -> None:
        """Ask the loop to finish its batch and shut down (safe from signal handlers)."""
        self._stop.set()

    def run(self) -> None:
        s = self.settings
        layout = self._until_stopped(lambda: topics.ensure_topics(s))
        if layout is None:
            return
        taken = self._until_stopped(lambda: claims.claim(s, [topic_of(s)]))
        if taken is None or taken:
            self._refuse(taken)
            return
        self.rules = layout.decide_rules(s)
        self.consumer = clients.make_consumer(s)
        self.publisher: Publisher[BatchOutput] = Publisher(
            s, self.consumer, "batch", in_flight=True, on_committed=self._committed
        )
        scope = WithinPartitionWarning(s.topics.input)  # one index per partition: say so
        self.assignment = Assignment(
            s.topics.input, self.metrics, self._settle_before_revoke, scope.observe
        )
        self.indexes = PartitionIndexes(
            s,
            self.metrics,
            self.consumer,
            self.assignment,
            self.ready,
            self._stop,
            layout.input_partitions,
        )
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
                self.indexes.follow()
                records = self._live(polled)
                if records:
                    self._handle(records)
                else:
                    self._settle()
                self._maybe_snapshot()
                update_lag(self.consumer, s.topics.input, set(self.indexes), self.metrics)
                index_gauges(self.metrics, self.indexes)
        finally:
            self._close()

    def _refuse(self, taken: list[str] | None) -> None:
        """Another pipeline owns the changelog (`claims`): say so once, stay unready (as a
        cluster replica refuses), write nothing, until stopped."""
        if taken is None:  # stopped while claiming
            return
        log.error("refusing the changelog: %s | %s", " | ".join(taken), claims.CHANGELOG_HINT)
        self.metrics.settings_mismatch.set(1)
        self.consuming = True  # a signal now stops it the ordinary way
        self._stop.wait()

    def _batch_size(self) -> int:
        """Shrinks with consecutive failures, so a batch that keeps failing is bisected."""
        return self.policy.shrunk(self.settings.worker.max_batch)

    def _live(self, polled: dict[TopicPartition, list]) -> list[InputRecord]:
        """Records of partitions with a complete index; others are rewound for later."""
        out: list[InputRecord] = []
        owned = self.assignment.owned()
        for tp, messages in polled.items():
            if tp.partition not in self.indexes:
                if messages and tp.partition in owned:
                    self.consumer.seek(tp, messages[0].offset)
                continue
            out.extend(
                InputRecord(Source(m.topic, m.partition, m.offset), m.key, m.value, m.timestamp)
                for m in messages
            )
        return out

    def _handle(self, records: list[InputRecord]) -> None:
        started = time.perf_counter()
        try:
            output = decide(records, self.indexes, self.rules, self.rejected)
        except Exception as exc:
            self._decide_failed(records, exc)
            return
        output.started = started
        failure = self.publisher.settle()  # the previous batch's commit
        if failure is not None:
            self._recover(failure, also=output.partitions)
            return
        failure = self.publisher.publish(self._transaction(output), output)
        if failure is not None:
            self._recover(failure)

    def _transaction(self, output: BatchOutput) -> Transaction:
        """The batch's outputs, then its changelog records (they answer for no input)."""
        changelog = topic_of(self.settings)
        records = [
            OutMessage(changelog, r.key, r.value, partition=r.partition) for r in output.changelog
        ]
        offsets = {
            TopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)
            for (topic, partition), offset in output.offsets.items()
        }
        sources: list[Source | None] = [*output.message_sources, *([None] * len(records))]
        return Transaction([*output.messages, *records], sources, offsets)

    def _settle(self) -> bool:
        failure = self.publisher.settle()
        if failure is not None:
            self._recover(failure)
            return False
        return True

    def _committed(self, output: BatchOutput, committed_at: float) -> None:
        """A batch committed (on the commit thread): count it; failures are over."""
        account(self.metrics, output, committed_at)
        self.policy.succeeded()

    def _settle_before_revoke(self) -> None:
        """Rebalance listener: commit what is in flight while the partitions are ours."""
        failure = self.publisher.settle()
        if failure is not None:
            self._revoke_failure = failure

    def _decide_failed(self, records: list[InputRecord], error: Exception) -> None:
        """The engine raised: bisect down to the input that causes it, then dead-letter it."""
        touched = {r.source.partition for r in records}
        failure = self.publisher.settle() or PublishFailure(error, BatchOutput())
        if isinstance(error, Unrecordable):
            self.rejected.unpublishable(error.source, str(error))
        elif len(records) == 1:
            self.rejected.undecidable(records[0].source, error)
        else:
            log.error("deciding %d records failed; retrying smaller", len(records), exc_info=error)
            self.policy.bisect()
        self._recover(failure, also=touched, backoff=False)

    def _recover(
        self,
        failure: PublishFailure[BatchOutput],
        also: set[int] | None = None,
        backoff: bool = True,
    ) -> None:
        """Drop what was not committed: rebuild the touched partitions, rewind, retry."""
        self.metrics.transaction_aborts.inc()
        rejected = failure.rejected
        if rejected is not None:
            self.rejected.unpublishable(rejected.source, rejected.why)
        if backoff and rejected is None:
            delay = self.policy.failed()
            log.error("a batch failed; retrying in %.1f s", delay, exc_info=failure.error)
            self._stop.wait(delay)
        self.indexes.drop(
            failure.carried.partitions | (also or set())
        )  # they ran ahead of the commit
        self._retry(self.publisher.reset)
        owned = self.assignment.owned()
        self._retry(lambda: rewind_to_committed(self.consumer, self.settings.topics.input, owned))
        self.indexes.follow()

    def _backoff(self, attempt: int) -> float:
        return retry.backoff_s(self.settings.worker.retry_backoff_max_s, attempt)

    def _until_stopped(self, action: Callable[[], T]) -> T | None:
        checked = security_errors.checked(self.settings.kafka, action)
        return retry.until_stopped(self._stop, self._backoff, checked)

    def _retry(self, action: Callable[[], None]) -> None:
        attempt = 0
        while not self._stop.is_set():
            try:
                action()
                return
            except Exception:
                attempt += 1
                delay = self._backoff(attempt)
                log.exception("recovery step failed; retrying in %.1f s", delay)
                self._stop.wait(delay)

    def _maybe_snapshot(self, force: bool = False) -> None:
        """Snapshot every complete partition index, with nothing in flight."""
        w, changelog = self.settings.worker, topic_of(self.settings)
        due = time.monotonic() - self._last_snapshot >= w.snapshot_every_s
        if w.snapshot_dir is None or not (force or due) or not self.indexes:
            return
        if not force and not self._settle():
            return
        self._last_snapshot = time.monotonic()
        snapshots.save_all(
            self.indexes, self.consumer, w.snapshot_dir, changelog, pipeline_of(self.settings)
        )

    def _close(self) -> None:
        if self.consuming:
            self.indexes.close()
        settled = self.consuming and self.publisher.settle() is None
        if settled:
            self._maybe_snapshot(force=True)
        elif self.consuming:
            log.error("the last commit failed; it is replayed on restart")
        if self.consuming:
            self.consumer.close(autocommit=False)
            self.publisher.close()
        log.info("worker stopped")
