"""Partition assignment, committed-offset rewinds and consumer lag.

The rebalance listener only records what changed; the loop acts on it between batches
(restore the index for the new assignment). After an aborted transaction the consumer's
position is already past the batch, so `rewind_to_committed` seeks back: skipping it would
lose input silently.
"""

from __future__ import annotations

import contextlib
import logging

from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition

from worker.metrics import Metrics

log = logging.getLogger(__name__)


class AssignmentTracker(ConsumerRebalanceListener):
    """Remembers the current assignment and whether it changed since the last look."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.partitions: set[TopicPartition] = set()
        self.changed = False

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        for tp in revoked:
            self.partitions.discard(tp)
            with contextlib.suppress(KeyError):
                self.metrics.consumer_lag.remove(tp.topic, str(tp.partition))
        if revoked:
            log.info("partitions revoked: %s", sorted(tp.partition for tp in revoked))
            self.changed = True

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        self.partitions |= set(assigned)
        log.info("partitions assigned: %s", sorted(tp.partition for tp in self.partitions))
        self.changed = True

    def take_change(self) -> bool:
        changed, self.changed = self.changed, False
        return changed


def rewind_to_committed(consumer: KafkaConsumer, partitions: set[TopicPartition]) -> None:
    """Seek every partition back to its committed offset (or the beginning if none)."""
    for tp in partitions:
        committed = consumer.committed(tp)
        if committed is None:
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, committed)


def update_lag(consumer: KafkaConsumer, partitions: set[TopicPartition], metrics: Metrics) -> None:
    """Export end-minus-position per partition, from what the fetcher already knows."""
    for tp in partitions:
        high = consumer.highwater(tp)
        if high is None:
            continue
        lag = max(0, high - consumer.position(tp))
        metrics.consumer_lag.labels(tp.topic, str(tp.partition)).set(lag)
