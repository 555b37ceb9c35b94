"""Where reading an input partition starts when its offset is missing or gone.

The input consumers (the single worker's and the edge's) are made with
`auto_offset_reset="none"`, so kafka-python never moves their position on its own: a reset
there used to be silent. `InputStart.poll` makes each case explicit:

* no committed offset (a new group or partition): start at the log start, logged once;
* a fetch offset older than the log start (retention deleted inputs before they were read,
  at assignment or while the consumer lagged): the offsets in between are reported lost,
  by an error log and `neardup_records_lost_total{role}` (`worker` or `edge`), once per
  offset; reading goes on at the log start;
* a fetch offset past the log end (the topic was deleted and made again, or truncated): an
  error log naming both offsets; reading starts over at the log start;
* a topic deleted and created again (its topic id changed: `topic_ids`), found at the first
  read after a start or rebalance, from the id the committed offsets name, or while reading:
  one error naming both ids; every assigned partition of it is read again from its log start
  (the committed offsets belong to the old topic), and the records polled are dropped;
* a position kept from an earlier assignment: after each rebalance (the group generation
  changed), every assigned partition reads on at its committed offset. kafka-python keeps a
  partition's position when it is in both the assignment it last applied and the new one,
  even if, in the generations this consumer missed (its SyncGroup failed, so it never
  applied them), another member read the partition and committed past that position.
  Reading on from there decided those inputs twice. Java's consumer drops the whole
  assignment before an eager rebalance. A position that differs from the committed offset is
  logged; that partition's polled records are dropped, and reading goes on from the
  committed offset.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaError, NoOffsetForPartitionError, OffsetOutOfRangeError

from neardup_stream.worker import topic_ids
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS, generation_of
from neardup_stream.worker.runtime.broker_gone import group_poll
from neardup_stream.worker.runtime.health import report_lost

log = logging.getLogger(__name__)
CAUSE = "the input topic's retention deleted them before they were read"


class InputStart:
    """Polls `consumer` (made with `auto_offset_reset="none"`), placing partitions whose
    position is missing or out of range at their log start, and reporting what that skips."""

    def __init__(self, consumer: KafkaConsumer, role: str, metrics: Metrics) -> None:
        self.consumer, self.role, self.metrics = consumer, role, metrics
        metrics.records_lost.labels(role)  # the series exists before the first loss
        self._reported: dict[TopicPartition, int] = {}  # offsets below this were reported
        self._generation_now = generation_of(consumer)
        self._generation: int | None = None  # the group generation last checked
        self.incarnations = topic_ids.Incarnations()

    def poll(self, **poll_args: Any) -> dict[TopicPartition, list[Any]]:
        """`consumer.poll(**poll_args)`; after placing partitions at their start, an empty
        poll (the next one reads them)."""
        try:
            polled = group_poll(self.consumer, **poll_args)
            placed = self._from_committed(polled)
            return {} if placed is None else self._recreated(placed)
        except NoOffsetForPartitionError as error:
            if not (partitions := _partitions(error)):
                raise  # no partition named: seeking none would seek every one
            self._from_start(partitions)
        except OffsetOutOfRangeError as error:
            if not (offsets := _offsets(error)):
                raise
            self._out_of_range(offsets)
        return {}

    def offsets(self, offsets: dict[tuple[str, int], int]) -> dict[TopicPartition, Any]:
        """The input offsets to commit, each naming the topic id it was read under."""
        return {
            TopicPartition(topic, p): OffsetAndMetadata(o, self.incarnations.metadata(topic), -1)
            for (topic, p), o in offsets.items()
        }

    def _from_committed(
        self, polled: dict[TopicPartition, list[Any]]
    ) -> dict[TopicPartition, list[Any]] | None:
        """`polled`, once every partition reads at its committed offset after a rebalance
        (module docstring); the records of a partition placed there are dropped. None: the
        committed offsets were not readable (the poll's records are read again later)."""
        generation = self._generation_now()
        if generation == self._generation or generation < 0:
            return polled
        try:
            commits = {
                tp: self.consumer.committed(tp, metadata=True, timeout_ms=COMMITTED_TIMEOUT_MS)
                for tp in sorted(self.consumer.assignment())
            }
        except KafkaError as error:  # the broker is away, or a commit still pending
            log.warning(
                "%s: the committed offsets are not readable after a rebalance (%s): "
                "this poll's records are read again after the next one",
                self.role,
                type(error).__name__,
            )
            for tp, dropped in polled.items():
                if dropped:
                    self.consumer.seek(tp, dropped[0].offset)
            return None
        self._generation = generation
        for tp, commit in commits.items():
            if commit is None:
                continue  # nothing committed: the log start (`_from_start`)
            self.incarnations.committed(tp.topic, commit.metadata)
            committed = commit.offset
            records = polled.get(tp)
            at = records[0].offset if records else self._position(tp)
            if at is None or at == committed:
                continue
            log.warning(
                "%s: %s-%d: reading at offset %d, kept from an earlier assignment of generation "
                "< %d, but its committed offset is %d: reading from there",
                self.role,
                tp.topic,
                tp.partition,
                at,
                generation,
                committed,
            )
            self.consumer.seek(tp, committed)
            polled.pop(tp, None)
        return polled

    def _recreated(
        self, polled: dict[TopicPartition, list[Any]]
    ) -> dict[TopicPartition, list[Any]]:
        """`polled`, unless a topic it reads was created again since its positions were
        taken (module docstring): that topic's records are dropped, its partitions read
        again from their log start."""
        assigned = self.consumer.assignment()
        for topic in sorted({tp.topic for tp in assigned}):
            found = self.incarnations.check(topic, topic_ids.current(self.consumer, topic))
            if found is None:
                continue
            tps = sorted(tp for tp in assigned if tp.topic == topic)
            log.error(
                "%s: input topic %s was deleted and created again (topic id %s, now %s): its "
                "committed offsets belong to the old topic; reading partitions %s of the new "
                "one from their log start",
                self.role,
                topic,
                found.was,
                found.now,
                [tp.partition for tp in tps],
            )
            for tp in tps:
                polled.pop(tp, None)
                self._reported.pop(tp, None)
            self.consumer.seek_to_beginning(*tps)
        return polled

    def _position(self, tp: TopicPartition) -> int | None:
        try:
            return int(self.consumer.position(tp, timeout_ms=COMMITTED_TIMEOUT_MS))
        except Exception:  # not positioned yet (no committed offset, or being reset)
            return None

    def _from_start(self, partitions: list[TopicPartition]) -> None:
        log.info(
            "%s: no committed offset for %s: reading from the log start",
            self.role,
            ", ".join(f"{tp.topic}-{tp.partition}" for tp in partitions),
        )
        self.consumer.seek_to_beginning(*partitions)

    def _out_of_range(self, offsets: dict[TopicPartition, int]) -> None:
        tps = sorted(offsets)
        starts = self.consumer.beginning_offsets(tps)
        ends = self.consumer.end_offsets(tps)
        for tp in tps:
            at, start, end = offsets[tp], starts.get(tp, 0), ends.get(tp, 0)
            if at > end:
                log.error(
                    "%s: %s-%d: reading at offset %d but the log ends at %d (the topic was "
                    "deleted and created again, or truncated): reading it again from offset %d",
                    self.role,
                    tp.topic,
                    tp.partition,
                    at,
                    end,
                    start,
                )
                self._reported.pop(tp, None)
            elif start > at:
                reported = self._reported.get(tp, 0)
                report_lost(
                    self.metrics, self.role, tp.topic, tp.partition, max(at, reported), start, CAUSE
                )
                self._reported[tp] = max(start, reported)
        self.consumer.seek_to_beginning(*tps)


def _partitions(error: NoOffsetForPartitionError) -> list[TopicPartition]:
    """The partitions an error names (kafka-python passes them as its first argument)."""
    named = error.args[0] if error.args else ()
    return sorted(tp for tp in named if isinstance(tp, TopicPartition))


def _offsets(error: OffsetOutOfRangeError) -> dict[TopicPartition, int]:
    named = error.args[0] if error.args else {}
    return {tp: int(o) for tp, o in dict(named).items() if isinstance(tp, TopicPartition)}
