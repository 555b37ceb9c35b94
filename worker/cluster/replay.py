"""Read one partition of a role's changelog from its start to its last stable offset."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import NamedTuple

from kafka import KafkaConsumer, TopicPartition

from worker import failpoints
from worker.metrics import Metrics

log = logging.getLogger(__name__)


class Unreadable(NamedTuple):
    """The first changelog record a replay could not apply."""

    offset: int
    reason: str


class Replayed(NamedTuple):
    """What a replay applied, and where it stopped if a record could not be applied."""

    applied: int
    unreadable: Unreadable | None


def replay(
    reader: KafkaConsumer,
    tp: TopicPartition,
    apply: Callable[[bytes], None],
    should_stop: Callable[[], bool],
    metrics: Metrics,
) -> Replayed:
    """Call `apply` on every committed record of `tp`, in order, counting them in `metrics`.

    A record `apply` refuses with ValueError (corrupt, another version) ends the replay:
    the state would miss what it held, so the caller stops that partition rather than
    deciding on a state with a hole. Reading stops at the last stable offset seen at the
    start: the records the previous owner committed (read_committed waits for its open
    transaction to settle).
    """
    reader.assign([tp])
    reader.seek_to_beginning(tp)
    end = reader.end_offsets([tp])[tp]
    applied = 0
    unreadable: Unreadable | None = None
    started = time.monotonic()
    while unreadable is None and reader.position(tp) < end and not should_stop():
        for record in reader.poll(timeout_ms=500).get(tp, []):
            if record.offset >= end or should_stop():  # a poll returns up to 10,000 records
                break
            try:
                apply(record.value)
                applied += 1
            except ValueError as exc:
                unreadable = Unreadable(record.offset, f"unreadable changelog record: {exc}")
                break
        failpoints.hit("restore_batch")
    metrics.restored_records.inc(applied)
    log.info(
        "replayed %s: %d records%s in %.1f s",
        tp,
        applied,
        f" (stopped at unreadable offset {unreadable.offset})" if unreadable else "",
        time.monotonic() - started,
    )
    return Replayed(applied, unreadable)
