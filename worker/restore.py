"""Rebuilding partitions' indexes from the changelog, all or nothing.

`restore_partitions` returns one `Deduplicator` per requested input partition, holding every
committed changelog record of that partition up to its last stable offset (the reader is
read_committed, so aborted transactions are never replayed, and starts at `earliest`, so
records compaction removed are never silently skipped past). A trusted local snapshot
(`worker.snapshots`) shortens the replay. A stop request raises `RestoreInterrupted`: a
partial index is never returned, so it can never be decided against or snapshotted.
Corrupt records and records of other fingerprint settings are counted and skipped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.records import FingerprintRecord
from worker import changelog, failpoints, snapshots
from worker.metrics import Metrics

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 5.0
LOGGED_SKIPS = 10


class RestoreInterrupted(Exception):
    """The restore was asked to stop; nothing of it may be used."""


def restore_partitions(
    reader: KafkaConsumer,
    changelog: str,
    partitions: Iterable[int],
    config: DedupConfig,
    metrics: Metrics,
    should_stop: Callable[[], bool],
    snapshot_dir: str | None = None,
) -> dict[int, Deduplicator]:
    """Indexes of `partitions`, each complete up to the changelog's last stable offset."""
    tps = {p: TopicPartition(changelog, p) for p in sorted(set(partitions))}
    if not tps:
        return {}
    started = last_log = time.monotonic()
    reader.assign(list(tps.values()))
    starts = reader.beginning_offsets(list(tps.values()))
    ends = reader.end_offsets(list(tps.values()))
    indexes: dict[int, Deduplicator] = {}
    for p, tp in tps.items():
        indexes[p], offset = _start(
            snapshot_dir, changelog, p, config, starts[tp], ends[tp], metrics
        )
        reader.seek(tp, offset)
    remaining = {tp for tp in tps.values() if reader.position(tp) < ends[tp]}
    replayed, skip = 0, _Skips(metrics)
    while remaining:
        if should_stop():
            raise RestoreInterrupted(f"restore of partitions {sorted(tps)} stopped")
        for tp, messages in reader.poll(timeout_ms=500).items():
            replayed += _apply(indexes[tp.partition], tp, messages, config, skip)
        failpoints.hit("restore_batch")
        remaining = {tp for tp in remaining if reader.position(tp) < ends[tp]}
        now = time.monotonic()
        if now - last_log >= PROGRESS_EVERY_S:
            last_log = now
            log.info(
                "restoring: %d records replayed (%.0f/s)", replayed, replayed / (now - started)
            )
    metrics.restored_records.inc(replayed)
    for reason, count in skip.counts.items():
        log.error("%d changelog records skipped as %s", count, reason)
    log.info(
        "restored partitions %s: %d records replayed in %.1f s",
        sorted(tps),
        replayed,
        time.monotonic() - started,
    )
    return indexes


def _start(
    snapshot_dir: str | None,
    changelog: str,
    partition: int,
    config: DedupConfig,
    log_start: int,
    log_end: int,
    metrics: Metrics,
) -> tuple[Deduplicator, int]:
    """The index to replay onto and the changelog offset to replay from."""
    if snapshot_dir is None:
        return Deduplicator(config), log_start
    found = snapshots.load(snapshot_dir, changelog, partition, config, log_start, log_end)
    if isinstance(found, snapshots.Rejected):
        if found.reason != "missing":
            metrics.snapshots_rejected.labels(found.reason).inc()
            log.warning("snapshot not used: %s", found.detail)
        return Deduplicator(config), log_start
    log.info(
        "partition %d: snapshot of %d documents up to offset %d",
        partition,
        len(found.dedup),
        found.offset,
    )
    return found.dedup, found.offset


def _apply(
    dedup: Deduplicator, tp: TopicPartition, messages: list, config: DedupConfig, skip: _Skips
) -> int:
    """Decode and apply one partition's polled records; returns how many were applied."""
    records = []
    for msg in messages:
        if msg.value is None:
            continue  # a compaction tombstone
        try:
            packed = changelog.unpack(msg.value)
        except ValueError as exc:
            skip("corrupt", tp, msg.offset, str(exc))
            continue
        for raw in packed:
            try:
                record = FingerprintRecord.decode(raw)
            except Exception as exc:  # any malformed bytes: struct, unicode, numpy
                skip("corrupt", tp, msg.offset, f"{type(exc).__name__}: {exc}")
                continue
            if record.config_id != config.fingerprint_id:
                skip("other_config", tp, msg.offset, "other fingerprint settings")
                continue
            records.append((msg.offset, record))
    try:
        dedup.apply_records([r for _, r in records])
        return len(records)
    except Exception:
        applied = 0
        for offset, record in records:
            try:
                dedup.apply_records([record])
                applied += 1
            except Exception as exc:
                skip("corrupt", tp, offset, f"{type(exc).__name__}: {exc}")
        return applied


class _Skips:
    """Counts skipped records (metric) and logs the first few of each reason: a changelog
    written under other settings would otherwise log every one of its records."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.counts: dict[str, int] = {}

    def __call__(self, reason: str, tp: TopicPartition, offset: int, detail: str) -> None:
        self.metrics.restore_skipped.labels(reason).inc()
        seen = self.counts[reason] = self.counts.get(reason, 0) + 1
        if seen <= LOGGED_SKIPS:
            log.warning(
                "skipping changelog record %s[%d]@%d: %s", tp.topic, tp.partition, offset, detail
            )
        elif seen == LOGGED_SKIPS + 1:
            log.warning("more changelog records skipped as %s; not logged one by one", reason)


class RestoreJob:
    """Restores a set of partitions in a background thread while the loop keeps polling.

    The loop pauses those partitions until `done`; it installs `result` only if the job was
    not cancelled and the partitions are still its own. The thread has its own reader.
    """

    def __init__(
        self,
        make_reader: Callable[[], KafkaConsumer],
        changelog: str,
        partitions: set[int],
        config: DedupConfig,
        metrics: Metrics,
        snapshot_dir: str | None,
        stopping: Callable[[], bool],
    ) -> None:
        self.partitions = frozenset(partitions)
        self.result: dict[int, Deduplicator] | None = None
        self.error: BaseException | None = None
        self._cancelled = False
        self._stopping = stopping
        self._changelog, self._config = changelog, config
        self._metrics, self._snapshot_dir = metrics, snapshot_dir
        self._make_reader = make_reader
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="restore", daemon=True)
        self._thread.start()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def cancel(self) -> None:
        """Stop and wait; nothing of a cancelled job is ever used."""
        self._cancelled = True
        self._thread.join()

    def _run(self) -> None:
        reader = None
        try:
            reader = self._make_reader()
            self.result = restore_partitions(
                reader,
                self._changelog,
                self.partitions,
                self._config,
                self._metrics,
                lambda: self._cancelled or self._stopping(),
                self._snapshot_dir,
            )
        except BaseException as exc:
            self.error = exc
        finally:
            if reader is not None:
                reader.close()
