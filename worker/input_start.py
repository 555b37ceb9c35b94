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
  error log naming both offsets; reading starts over at the log start.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import NoOffsetForPartitionError, OffsetOutOfRangeError

from worker.metrics import Metrics
from worker.runtime.health import report_lost

log = logging.getLogger(__name__)
CAUSE = "the input topic's retention deleted them before they were read"


class InputStart:
    """Polls `consumer` (made with `auto_offset_reset="none"`), placing partitions whose
    position is missing or out of range at their log start, and reporting what that skips."""

    def __init__(self, consumer: KafkaConsumer, role: str, metrics: Metrics) -> None:
        self.consumer, self.role, self.metrics = consumer, role, metrics
        metrics.records_lost.labels(role)  # the series exists before the first loss
        self._reported: dict[TopicPartition, int] = {}  # offsets below this were reported

    def poll(self, **poll_args: Any) -> dict[TopicPartition, list[Any]]:
        """`consumer.poll(**poll_args)`; after placing partitions at their start, an empty
        poll (the next one reads them)."""
        try:
            polled: dict[TopicPartition, list[Any]] = self.consumer.poll(**poll_args)
            return polled
        except NoOffsetForPartitionError as error:
            if not (partitions := _partitions(error)):
                raise  # no partition named: seeking none would seek every one
            self._from_start(partitions)
        except OffsetOutOfRangeError as error:
            if not (offsets := _offsets(error)):
                raise
            self._out_of_range(offsets)
        return {}

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
