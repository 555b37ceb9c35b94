"""Publishing a batch exactly once: one Kafka transaction per batch, one commit in flight.

`Publisher.publish` opens a transaction, sends every output of a `BatchOutput` (decisions,
dead letters, changelog records) and adds the input offsets; `commit_async` finishes the
transaction in a helper thread while the loop polls and decides the next batch (the kernels
release the GIL). `settle` waits for that commit. A batch that fails comes back as a
`PublishFailure` naming the inputs the broker rejected for a deterministic reason (too large,
invalid record): the loop dead-letters those as `unpublishable` on the replay, so the same
rejection never repeats. Everything else (broker down, timeouts, fencing during a rebalance)
is transient: the producer is replaced and the batch replayed after a backoff.

At-least-once mode (`exactly_once=False`) sends, flushes and commits offsets synchronously.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

from worker import clients, failpoints
from worker.changelog import topic_of
from worker.records import BatchOutput, Source
from worker.runtime.policy import blame
from worker.settings import Settings

log = logging.getLogger(__name__)

COMMIT_POLL_S = 0.05


class CommitAbandoned(RuntimeError):
    """The commit did not complete: a record failed under it, or it outlived its timeout."""


@dataclass
class PublishFailure:
    """Why a batch did not commit, and which inputs can never be published as they are."""

    error: BaseException
    partitions: set[int]
    rejected: dict[Source, str] = field(default_factory=dict)  # input -> why


@dataclass
class _Sent:
    """A batch whose transaction is open or committing."""

    output: BatchOutput
    futures: list[Any]  # FutureRecordMetadata per message, aligned with output.messages
    changelog: list[Any] = field(default_factory=list)  # futures of the changelog messages
    thread: threading.Thread | None = None
    error: BaseException | None = None

    def doomed(self) -> bool:
        """A record of the transaction failed: its commit can no longer succeed."""
        return any(f.is_done and f.exception is not None for f in self.futures + self.changelog)


class Publisher:
    """Owns the producer; at most one transaction is committing at a time."""

    def __init__(
        self,
        settings: Settings,
        consumer: KafkaConsumer,
        on_committed: Callable[[BatchOutput, float], None],
    ) -> None:
        self.settings = settings
        self.consumer = consumer
        self.on_committed = on_committed
        self.producer: KafkaProducer = clients.make_producer(settings)
        self._sent: _Sent | None = None
        self._lock = threading.Lock()

    @property
    def exactly_once(self) -> bool:
        return self.settings.worker.exactly_once

    def publish(self, output: BatchOutput) -> PublishFailure | None:
        """Send a batch and start its commit; a failure means nothing of it is committed."""
        sent = _Sent(output, [])
        p, changelog = self.producer, topic_of(self.settings)
        try:
            if self.exactly_once:
                p.begin_transaction()
            for m in output.messages:
                sent.futures.append(p.send(m.topic, key=m.key, value=m.value, headers=m.headers))
            for rec in output.changelog:
                sent.changelog.append(
                    p.send(changelog, key=rec.key, value=rec.value, partition=rec.partition)
                )
            offsets = {
                TopicPartition(topic, partition): OffsetAndMetadata(offset, "", -1)
                for (topic, partition), offset in output.offsets.items()
            }
            if not self.exactly_once:
                p.flush()
                self._raise_first(sent)
                self.consumer.commit(offsets)
                self.on_committed(output, time.time())
                return None
            p.send_offsets_to_transaction(offsets, self.consumer.group_metadata())
        except BaseException as exc:
            return self._failure(sent, exc)
        failpoints.hit("batch_produced")
        sent.thread = threading.Thread(target=self._commit, args=(sent, p), daemon=True)
        with self._lock:
            self._sent = sent
        sent.thread.start()
        failpoints.hit("commit_inflight")
        return None

    def _commit(self, sent: _Sent, producer: KafkaProducer) -> None:
        """Helper thread: finish the open transaction, then count what it committed."""
        try:
            producer.commit_transaction()
        except BaseException as exc:
            sent.error = exc
            return
        failpoints.hit("batch_committed")
        self.on_committed(sent.output, time.time())

    def settle(self) -> PublishFailure | None:
        """Wait for the commit in flight (if any); safe from the rebalance listener."""
        with self._lock:
            sent, self._sent = self._sent, None
        if sent is None or sent.thread is None:
            return None
        # kafka-python's commit_transaction() has no timeout and can wait forever once a record
        # of the transaction failed; stop waiting then (or past the transaction timeout). The
        # caller replaces the producer, whose init_transactions fences this one, and rewinds
        # to the committed offsets: whether this commit landed or not, nothing repeats.
        deadline = time.monotonic() + self.settings.worker.transaction_timeout_ms / 1000 + 5
        while sent.thread.is_alive():
            sent.thread.join(COMMIT_POLL_S)
            if sent.thread.is_alive() and (sent.doomed() or time.monotonic() > deadline):
                log.warning("giving up on a commit that cannot complete")
                return self._failure(sent, sent.error or CommitAbandoned("commit abandoned"))
        return None if sent.error is None else self._failure(sent, sent.error)

    def _raise_first(self, sent: _Sent) -> None:
        timeout = self.settings.kafka.request_timeout_ms / 1000
        for future in sent.futures:
            future.get(timeout=timeout)

    def _failure(self, sent: _Sent, error: BaseException) -> PublishFailure:
        """The failure, naming the one input a deterministic rejection is blamed on
        (`runtime.policy.blame`)."""
        failure = PublishFailure(error, sent.output.partitions)
        found = blame(error, sent.futures, sent.output.messages)
        if found is not None:
            failure.rejected[sent.output.message_sources[found.position]] = found.why
        return failure

    def reset(self) -> None:
        """Replace the producer: the new one's init_transactions aborts what is open."""
        try:
            self.producer.close(timeout=5)
        except Exception:
            log.warning("closing the failed producer raised", exc_info=True)
        self.producer = clients.make_producer(self.settings)

    def close(self) -> None:
        self.producer.close(timeout=10)
