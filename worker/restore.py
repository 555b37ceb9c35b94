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
from neardup_stream.snapshot import load_snapshot, read_meta, save_snapshot

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 5.0


def restore_index(
    reader: KafkaConsumer,
    changelog: str,
    partitions: Iterable[int],
    config: DedupConfig,
    should_stop: Callable[[], bool] = lambda: False,
    snapshot_dir: str | None = None,
) -> tuple[Deduplicator, int]:
    """A Deduplicator holding every committed changelog record of `partitions`.

    With `snapshot_dir` holding a snapshot of the same partitions, it starts from the
    snapshot and replays only the changelog written after it. Returns the index and how many
    records were replayed. Records that fail to decode or were made under other fingerprint
    settings are logged and skipped (they cannot be used).
    """
    tps = [TopicPartition(changelog, p) for p in sorted(set(partitions))]
    dedup, offsets = _from_snapshot(snapshot_dir, [tp.partition for tp in tps], config)
    if not tps:
        return dedup, 0
    reader.assign(tps)
    reader.seek_to_beginning(*tps)
    for tp in tps:
        if str(tp.partition) in offsets:
            reader.seek(tp, int(offsets[str(tp.partition)]))
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
                    log.warning(
                        "skipping changelog record %s@%d: other fingerprint settings",
                        tp,
                        msg.offset,
                    )
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
            log.info(
                "restoring: %d records replayed (%.0f/s)", replayed, replayed / (now - started)
            )
    log.info(
        "restored %d records (%d skipped) from %d changelog partitions in %.1f s",
        replayed,
        skipped,
        len(tps),
        time.monotonic() - started,
    )
    return dedup, replayed


def _from_snapshot(
    snapshot_dir: str | None, partitions: list[int], config: DedupConfig
) -> tuple[Deduplicator, dict[str, int]]:
    """The snapshot's index and changelog offsets if it matches; else an empty index."""
    if snapshot_dir is None:
        return Deduplicator(config), {}
    try:
        meta = read_meta(snapshot_dir)
        if meta.get("partitions") != partitions:
            log.info("snapshot in %s covers other partitions; not used", snapshot_dir)
            return Deduplicator(config), {}
        dedup = load_snapshot(snapshot_dir, config)
    except (OSError, ValueError) as exc:
        log.info("no usable snapshot in %s: %s", snapshot_dir, exc)
        return Deduplicator(config), {}
    offsets = dict(meta.get("changelog_offsets") or {})  # type: ignore[call-overload]
    log.info("loaded snapshot of %d documents from %s", len(dedup), snapshot_dir)
    return dedup, offsets


def snapshot_index(
    dedup: Deduplicator,
    reader: KafkaConsumer,
    changelog: str,
    partitions: Iterable[int],
    snapshot_dir: str,
) -> None:
    """Save the index with the changelog end offsets it covers (call right after a commit)."""
    parts = sorted(set(partitions))
    ends = reader.end_offsets([TopicPartition(changelog, p) for p in parts])
    offsets = {str(tp.partition): int(off) for tp, off in ends.items()}
    save_snapshot(dedup, snapshot_dir, {"partitions": parts, "changelog_offsets": offsets})
    log.info("snapshot of %d documents saved to %s", len(dedup), snapshot_dir)
