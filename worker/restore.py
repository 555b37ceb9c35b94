"""Rebuilding the index from the compacted changelog topic before consuming.

Reads the committed records of the given changelog partitions from the beginning up to their
current end (read_committed, so aborted transactions are never replayed) and applies them to
a fresh Deduplicator. Progress is logged; the duration is exported by the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.records import FingerprintRecord

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 5.0


def restore_index(
    reader: KafkaConsumer,
    changelog: str,
    partitions: Iterable[int],
    config: DedupConfig,
    should_stop: Callable[[], bool] = lambda: False,
) -> tuple[Deduplicator, int]:
    """A Deduplicator holding every committed changelog record of `partitions`.

    Returns the index and how many records were replayed. Records that fail to decode or
    were made under other fingerprint settings are logged and skipped (they cannot be used).
    """
    dedup = Deduplicator(config)
    tps = [TopicPartition(changelog, p) for p in sorted(set(partitions))]
    if not tps:
        return dedup, 0
    reader.assign(tps)
    reader.seek_to_beginning(*tps)
    end = reader.end_offsets(tps)
    remaining = {tp for tp in tps if reader.position(tp) < end[tp]}
    replayed = skipped = 0
    started = last_log = time.monotonic()
    while remaining and not should_stop():
        batch = reader.poll(timeout_ms=500)
        records = []
        for tp, messages in batch.items():
            for msg in messages:
                if msg.value is None:
                    continue
                try:
                    record = FingerprintRecord.decode(msg.value)
                except ValueError as exc:
                    skipped += 1
                    log.warning("skipping changelog record %s@%d: %s", tp, msg.offset, exc)
                    continue
                if record.config_id != config.fingerprint_id:
                    skipped += 1
                    log.warning("skipping changelog record %s@%d: other fingerprint settings",
                                tp, msg.offset)
                    continue
                records.append(record)
        dedup.apply_records(records)
        replayed += len(records)
        for tp in list(remaining):
            if reader.position(tp) >= end[tp]:
                remaining.discard(tp)
        now = time.monotonic()
        if now - last_log >= PROGRESS_EVERY_S:
            last_log = now
            log.info("restoring: %d records replayed (%.0f/s)", replayed, replayed / (now - started))
    log.info(
        "restored %d records (%d skipped) from %d changelog partitions in %.1f s",
        replayed, skipped, len(tps), time.monotonic() - started,
    )
    return dedup, replayed
