"""Read one partition of a role's changelog from its start to its last stable offset."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from kafka import KafkaConsumer, TopicPartition

from worker.metrics import Metrics

log = logging.getLogger(__name__)


def replay(
    reader: KafkaConsumer,
    tp: TopicPartition,
    apply: Callable[[bytes], None],
    should_stop: Callable[[], bool],
    metrics: Metrics,
) -> None:
    """Call `apply` on every committed record of `tp`, in order, counting them in `metrics`.

    A record `apply` refuses with ValueError (corrupt, another version) is logged, counted
    and skipped. Reading stops at the last stable offset seen at the start: the records the
    previous owner committed (read_committed waits for its open transaction to settle).
    """
    reader.assign([tp])
    reader.seek_to_beginning(tp)
    end = reader.end_offsets([tp])[tp]
    applied = skipped = 0
    started = time.monotonic()
    while reader.position(tp) < end and not should_stop():
        for record in reader.poll(timeout_ms=500).get(tp, []):
            if record.offset >= end:
                break
            try:
                apply(record.value)
                applied += 1
            except ValueError as exc:
                skipped += 1
                if skipped <= 5:
                    log.error("skipping changelog record %s@%d: %s", tp, record.offset, exc)
    metrics.restored_records.inc(applied)
    if skipped:
        metrics.restore_skipped.labels("corrupt").inc(skipped)
    log.info(
        "replayed %s: %d records (%d skipped) in %.1f s",
        tp,
        applied,
        skipped,
        time.monotonic() - started,
    )
