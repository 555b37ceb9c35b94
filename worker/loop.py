"""The worker loop: poll a batch -> validate -> decide -> produce -> commit.

Exactly-once: decisions, dead letters, changelog records and the input offsets go out in one
Kafka transaction. If anything fails the transaction is aborted (or the producer replaced),
the consumer rewinds to the committed offsets and the index is rebuilt from the committed
changelog, so the in-memory state never runs ahead of what Kafka has committed for long.

Pipelining: the commit of batch N runs in a helper thread while batch N+1 is polled and
decided (the kernels release the GIL). Batch N+1 is produced only once N's commit succeeded;
if it failed, N+1's decisions are dropped with the rest of the uncommitted state by the
rewind-and-rebuild above.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document, ErrorRecord
from neardup_stream.parsing import ParseError, parse_document
from neardup_stream.settings import Settings
from worker import clients, codec
from worker.metrics import Metrics
from worker.offsets import AssignmentTracker, rewind_to_committed, update_lag
from worker.restore import restore_index, snapshot_index

log = logging.getLogger(__name__)
RETRY_BACKOFF_S = (0.5, 1, 2, 5, 10)


@dataclass
class _InFlight:
    """A transaction whose commit runs in a helper thread."""

    output: _Output
    started: float
    thread: threading.Thread | None = None
    error: BaseException | None = None
    done_at: float = 0.0


@dataclass(frozen=True)
class _Output:
    messages: list[codec.OutMessage]
    changelog: list[tuple[int, bytes, bytes]]  # (partition, key, value)
    offsets: dict[TopicPartition, OffsetAndMetadata]
    timestamps: list[int]
    counted: list[tuple[str, str]]  # (decision, method) per document, for metrics
    dead: list[str]  # DLQ reasons, for metrics


class Worker:
    """One consumer-group member. `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self.dedup = Deduplicator(settings.dedup)
        self.tracker = AssignmentTracker(metrics)
        self.ready = threading.Event()
        self._stop = threading.Event()
        self.consumer: KafkaConsumer | None = None
        self.producer: KafkaProducer | None = None
        self.reader: KafkaConsumer | None = None
        self._last_snapshot = time.monotonic()
        self.consuming = False
        self._inflight: _InFlight | None = None

    def request_stop(self) -> None:
        """Ask the loop to finish its batch and shut down (safe from signal handlers)."""
        self._stop.set()

    def run(self) -> None:
        s = self.settings
        clients.ensure_topics(s)
        self.reader = clients.make_reader(s)
        self.producer = clients.make_producer(s)
        self.consumer = clients.make_consumer(s)
        self.consumer.subscribe([s.topics.input], listener=self.tracker)
        log.info("consuming %s as group %s", s.topics.input, s.worker.group_id)
        self.consuming = True
        try:
            while not self._stop.is_set():
                batch = self.consumer.poll(
                    timeout_ms=s.worker.poll_timeout_ms, max_records=s.worker.max_batch
                )
                if self.tracker.take_change():
                    if not self._settle():
                        continue  # recovered: rewound, so what this poll returned comes again
                    self._restore()
                if batch:
                    self._handle(batch)
                else:
                    self._settle()
                update_lag(self.consumer, self.tracker.partitions, self.metrics)
        finally:
            self._close()

    def _handle(self, batch: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        started = time.perf_counter()
        if self._snapshot_due():
            if not self._settle():
                return
            self._maybe_snapshot()
        output = self._decide(batch)
        if not self._settle():
            return  # the previous commit failed: everything since the last commit is replayed
        try:
            self._send(output)
        except Exception:
            log.exception("publishing a batch failed; aborting and rewinding")
            self.metrics.transaction_aborts.inc()
            self._recover()
            return
        flight = _InFlight(output, started)
        if self.settings.worker.exactly_once:
            flight.thread = threading.Thread(target=self._commit, args=(flight,), daemon=True)
            self._inflight = flight
            flight.thread.start()
        else:
            flight.done_at = time.time()
            self._account(flight)

    def _commit(self, flight: _InFlight) -> None:
        """Helper thread: finish the open transaction."""
        assert self.producer is not None
        try:
            self.producer.commit_transaction()
        except BaseException as exc:  # reported by _settle on the loop's thread
            flight.error = exc
        flight.done_at = time.time()

    def _join_inflight(self) -> BaseException | None:
        """Wait for the commit in flight and account it; returns its error, if any."""
        flight, self._inflight = self._inflight, None
        if flight is None or flight.thread is None:
            return None
        flight.thread.join()
        if flight.error is None:
            self._account(flight)
        return flight.error

    def _settle(self) -> bool:
        """Wait for the commit in flight; True if everything decided so far is committed."""
        error = self._join_inflight()
        if error is None:
            return True
        log.error("committing a batch failed; aborting and rewinding", exc_info=error)
        self.metrics.transaction_aborts.inc()
        self._recover()
        return False

    def _account(self, flight: _InFlight) -> None:
        """Metrics of a committed batch."""
        output = flight.output
        for decision, method in output.counted:
            self.metrics.documents.labels(decision, method).inc()
        for reason in output.dead:
            self.metrics.dlq.labels(reason).inc()
        for ts in output.timestamps:
            self.metrics.decision_latency.observe(max(0.0, flight.done_at - ts / 1000))
        self.metrics.batch_seconds.observe(time.perf_counter() - flight.started)
        stats = self.dedup.stats()
        self.metrics.index_documents.set(stats["documents"])
        self.metrics.index_entries.set(stats["index_entries"])
        self.metrics.index_bytes.set(stats["index_bytes"])

    def _decide(self, batch: dict[TopicPartition, list[ConsumerRecord]]) -> _Output:
        topics, max_bytes = self.settings.topics, self.settings.worker.max_message_bytes
        records = [m for messages in batch.values() for m in messages]
        parsed = [parse_document(m.value, max_bytes) for m in records]
        docs = [p for p in parsed if isinstance(p, Document)]
        now = time.time()
        times = [
            m.timestamp / 1000 if m.timestamp >= 0 else now
            for m, p in zip(records, parsed, strict=True)
            if isinstance(p, Document)
        ]
        outcomes = iter(self.dedup.process(docs, records=True, times=times))
        out = _Output([], [], {}, [], [], [])
        for m, p in zip(records, parsed, strict=False):
            out.offsets[TopicPartition(m.topic, m.partition)] = OffsetAndMetadata(
                m.offset + 1, "", -1
            )
            if isinstance(p, ParseError):
                error = ErrorRecord.build(
                    p.reason,
                    p.message,
                    m.value or b"",
                    topic=m.topic,
                    partition=m.partition,
                    offset=m.offset,
                )
                out.messages.append(codec.dlq_message(topics.dlq, error, m.key))
                out.dead.append(p.reason)
                continue
            outcome = next(outcomes)
            d = outcome.decision
            if d.is_duplicate:
                out.messages.append(codec.duplicate_message(topics.duplicate, d))
            else:
                out.messages.append(codec.unique_message(topics.unique, d, m.value))
            if outcome.record is not None:
                out.changelog.append((m.partition, d.id.encode(), outcome.record.encode()))
            out.timestamps.append(m.timestamp)
            out.counted.append((d.decision, d.method or "none"))
        return out

    def _send(self, out: _Output) -> None:
        """Produce a batch: open its transaction and add the offsets (exactly-once), or
        produce, flush and commit the offsets (at-least-once)."""
        assert self.producer is not None and self.consumer is not None
        p, topics = self.producer, self.settings.topics
        eos = self.settings.worker.exactly_once
        if eos:
            p.begin_transaction()
        futures = [
            p.send(m.topic, key=m.key, value=m.value, headers=m.headers) for m in out.messages
        ]
        futures += [
            p.send(topics.changelog, key=k, value=v, partition=part) for part, k, v in out.changelog
        ]
        if eos:
            p.send_offsets_to_transaction(out.offsets, self.consumer.group_metadata())
            return
        p.flush()
        for f in futures:
            f.get(timeout=self.settings.kafka.request_timeout_ms / 1000)
        self.consumer.commit(out.offsets)

    def _recover(self) -> None:
        """Abort, rewind to committed offsets, rebuild the index; retry until it works."""
        for attempt in range(1_000_000):
            if self._stop.is_set():
                return
            try:
                self._reset_producer()
                assert self.consumer is not None
                rewind_to_committed(self.consumer, self.tracker.partitions)
                self._restore()
                return
            except Exception:
                delay = RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S) - 1)]
                log.exception("recovery attempt %d failed; retrying in %.1f s", attempt + 1, delay)
                self._stop.wait(delay)

    def _reset_producer(self) -> None:
        assert self.producer is not None
        if self.settings.worker.exactly_once:
            try:
                self.producer.abort_transaction()
                return
            except Exception:
                log.warning("abort failed; replacing the transactional producer", exc_info=True)
        self.producer.close(timeout=5)
        self.producer = clients.make_producer(self.settings)

    def _restore(self) -> None:
        assert self.reader is not None
        self.ready.clear()
        self.metrics.ready.set(0)
        started = time.monotonic()
        partitions = {tp.partition for tp in self.tracker.partitions}
        self.dedup, replayed = restore_index(
            self.reader,
            self.settings.topics.changelog,
            partitions,
            self.settings.dedup,
            self._stop.is_set,
            self.settings.worker.snapshot_dir,
        )
        self.metrics.restore_seconds.set(time.monotonic() - started)
        self.metrics.restored_records.inc(replayed)
        self.ready.set()
        self.metrics.ready.set(1)

    def _snapshot_due(self) -> bool:
        w = self.settings.worker
        return w.snapshot_dir is not None and (
            time.monotonic() - self._last_snapshot >= w.snapshot_every_s
        )

    def _maybe_snapshot(self, force: bool = False) -> None:
        """Save a snapshot if one is due (or forced); call only with nothing in flight."""
        w = self.settings.worker
        if w.snapshot_dir is None or not self.ready.is_set():
            return
        if not (force or self._snapshot_due()):
            return
        assert self.reader is not None
        try:
            snapshot_index(
                self.dedup,
                self.reader,
                self.settings.topics.changelog,
                {tp.partition for tp in self.tracker.partitions},
                w.snapshot_dir,
            )
        except Exception:
            log.exception("saving a snapshot failed; the changelog still covers everything")
        self._last_snapshot = time.monotonic()

    def _close(self) -> None:
        error = self._join_inflight()
        if error is None:
            self._maybe_snapshot(force=True)
        else:
            log.error("the last commit failed; it is replayed on restart", exc_info=error)
        for client in (self.consumer, self.reader):
            if client is not None:
                client.close(autocommit=False)
        if self.producer is not None:
            self.producer.close(timeout=10)
        log.info("worker stopped")
