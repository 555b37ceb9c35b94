"""The single worker as a `runtime.role.Role`: input -> decisions, dead letters, changelog.

`BatchRole` owns what the single worker reads and holds: its consumer following the
assignment (`partitions.Assignment`), one complete index per owned input partition
(`indexes.PartitionIndexes`, restored in the background, paused until complete) and the
step, `decide.decide` against those indexes. The runner (in flight: the commit of a batch
runs while the next is decided) publishes, settles and applies the failure policy; the role
adds what `runtime.role.InFlight` asks: it settles the commit before a revoke (its
rebalance listener), judges a failed step (the input the engine cannot record or fails on
alone is dead-lettered, a larger batch is bisected), rebuilds only the partitions a failed
batch touched (their indexes ran ahead of what Kafka committed) and snapshots its indexes
between batches with nothing in flight. Its metrics are the single worker's own
(`neardup_transaction_aborts_total`, the batch and decision counters: `metrics.account`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from neardup_stream.worker import clients, retry, snapshots
from neardup_stream.worker.admission import DecideRules
from neardup_stream.worker.changelog import pipeline_of, topic_of
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.decide import Unrecordable, decide
from neardup_stream.worker.indexes import PartitionIndexes
from neardup_stream.worker.input_start import InputStart
from neardup_stream.worker.metrics import Metrics, account, index_gauges
from neardup_stream.worker.partitions import (
    Assignment,
    behind,
    generation_of,
    rewind_to_committed,
    update_lag,
)
from neardup_stream.worker.records import BatchOutput, InputRecord, Source
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.runtime.health import RoleHealth
from neardup_stream.worker.runtime.publisher import PublishFailure, Transaction
from neardup_stream.worker.runtime.role import Limits, Output, Verdict, isolate
from neardup_stream.worker.scope import WithinPartitionWarning
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
Settle = Callable[[], PublishFailure[BatchOutput] | None]


class BatchRole:
    """One consumer-group member of `worker.group_id` deciding its input partitions."""

    name = "batch"  # failpoints `batch_produced`, `batch_committed`; the commit thread
    health: RoleHealth | None = None  # readiness is `ready` (every owned partition restored)
    max_bytes = 0  # not capped in bytes: a batch is `max_records` inputs

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        ready: threading.Event,
        rules: DecideRules,
        input_partitions: int,
    ) -> None:
        self.settings = self.role = settings
        self.metrics, self._stop, self.rules = metrics, stop, rules
        self.rejections = Rejections(settings.topics.dlq)
        self.max_records = settings.worker.max_batch
        self._lags: dict[int, int] = {}  # owned input partition -> records behind its end
        self.consumer = clients.make_consumer(settings, reset="none")
        self.input = InputStart(self.consumer, "worker", metrics)
        scope = WithinPartitionWarning(settings.topics.input)  # one index per partition: say so
        self.assignment = Assignment(
            settings.topics.input,
            metrics,
            self._settle_before_revoke,
            scope.observe,
            generation_of(self.consumer),
        )
        self.indexes = PartitionIndexes(
            settings, metrics, self.consumer, self.assignment, ready, stop, input_partitions
        )
        self._settle: Settle = lambda: None
        self._revoke_failure: PublishFailure[BatchOutput] | None = None
        self._last_snapshot = time.monotonic()

    def start(self) -> None:
        s = self.settings
        self.consumer.subscribe([s.topics.input], listener=self.assignment)
        log.info("consuming %s as group %s", s.topics.input, s.worker.group_id)

    def poll(self, limits: Limits) -> list[InputRecord]:
        """Records of partitions with a complete index; others are rewound for later."""
        polled = self.input.poll(
            timeout_ms=self.settings.worker.poll_timeout_ms, max_records=limits.records
        )
        if self._revoke_failure is not None:
            return []  # the runner recovers first: nothing of this poll is decided
        self.indexes.follow()
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

    def step(self, polled: list[InputRecord], limits: Limits) -> Output[BatchOutput] | None:
        """The batch's outputs, then its changelog records."""
        if not polled:
            return None
        started = time.perf_counter()
        output = decide(polled, self.indexes, self.rules, self.rejections)
        output.started = started
        changelog = topic_of(self.settings)
        records = [
            OutMessage(changelog, r.key, r.value, partition=r.partition) for r in output.changelog
        ]
        offsets = self.input.offsets(output.offsets)
        # A changelog record answers for the inputs it records. Only a batch of one input can
        # be blamed for it: a refused record (too large for the changelog) then dead-letters
        # that input as `unpublishable` instead of failing forever; in a larger batch the
        # failure shrinks the batch until the input causing it is alone.
        alone = polled[0].source if len(polled) == 1 else None
        sources: list[Source | None] = [*output.message_sources, *([alone] * len(records))]
        return Output(Transaction([*output.messages, *records], sources, offsets), output)

    def committed(self, carried: BatchOutput, at: float) -> None:
        """Counted on the commit thread (`counted`): nothing more once settled."""

    def counted(self, carried: BatchOutput, committed_at: float) -> None:
        account(self.metrics, carried, committed_at)

    def bind(self, settle: Settle) -> None:
        self._settle = settle

    def _settle_before_revoke(self) -> None:
        """Rebalance listener: commit what is in flight while the partitions are ours."""
        failure = self._settle()
        if failure is not None:
            self._revoke_failure = failure

    def revoke_failure(self) -> PublishFailure[BatchOutput] | None:
        failure, self._revoke_failure = self._revoke_failure, None
        return failure

    def step_failed(self, polled: list[InputRecord], error: Exception) -> Verdict:
        """The engine raised: bisect down to the input that causes it, then dead-letter it."""
        if isinstance(error, Unrecordable):
            self.rejections.unpublishable(error.source, str(error))
            return Verdict.DEAD_LETTERED
        return isolate([r.source for r in polled], error, self.rejections, "deciding")

    def aborted(self) -> None:
        self.metrics.transaction_aborts.inc()

    def recover(self, carried: BatchOutput | None, polled: list[InputRecord] | None) -> None:
        """Rebuild the partitions the failed batches touched, rewind, restore them."""
        touched = {r.source.partition for r in polled or []}
        self.indexes.drop((set() if carried is None else carried.partitions) | touched)
        owned = self.assignment.owned()
        retry.until_done(
            self._stop,
            self.settings.worker.retry_backoff_max_s,
            lambda: rewind_to_committed(self.consumer, self.settings.topics.input, owned),
        )
        self.indexes.follow()

    def rebuild(self) -> None:
        self.recover(None, None)

    def between(self, settled: Callable[[], bool]) -> None:
        """After a round: snapshot when due (nothing in flight), export lag and gauges."""
        self.snapshot(settled)
        topic = self.settings.topics.input
        self._lags = update_lag(self.consumer, topic, set(self.indexes), self.metrics)
        index_gauges(self.metrics, self.indexes)

    def waiting_for(self) -> str | None:
        """`runtime.stall.Waits`: input behind the end of an owned partition."""
        return behind(self.settings.topics.input, self._lags)

    def snapshot(self, settled: Callable[[], bool] | None = None) -> None:
        """Snapshot every complete partition index, with nothing in flight (`settled`; None:
        the caller settled already)."""
        w, changelog = self.settings.worker, topic_of(self.settings)
        due = time.monotonic() - self._last_snapshot >= w.snapshot_every_s
        if w.snapshot_dir is None or not (settled is None or due) or not self.indexes:
            return
        if settled is not None and not settled():
            return
        self._last_snapshot = time.monotonic()
        snapshots.save_all(
            self.indexes, self.consumer, w.snapshot_dir, changelog, pipeline_of(self.settings)
        )

    def close(self) -> None:
        self.consumer.close(autocommit=False)
