"""Rebuilding partitions' indexes from the changelog, all or nothing.

`restore_partitions` returns one `Deduplicator` per requested input partition, holding every
committed changelog record of that partition up to its last stable offset (the reader is
read_committed, so aborted transactions are never replayed, and starts at `earliest`, so
records compaction removed are never silently skipped past). A trusted local snapshot
(`worker.snapshots`) shortens the replay. A stop request raises `RestoreInterrupted`: a
partial index is never returned, so it can never be decided against or snapshotted.
Corrupt records and records of other fingerprint settings are counted and skipped.

Every pack names its pipeline (`worker.changelog`). A record of another pipeline is never
applied: it is counted (`other_pipeline`) and the restore raises `OtherPipeline`, naming both
pipelines and the fix; the worker then decides nothing (`worker.indexes`). Packs written
before pipelines were named are replayed as this worker's own (the upgrade path) and counted
in the log. A partition whose changelog is empty while the group already committed input
offsets for it is warned about: its index starts empty.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.records import FingerprintRecord
from worker import changelog, failpoints, snapshots
from worker.changelog import Pipeline
from worker.metrics import Metrics

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 5.0
LOGGED_SKIPS = 10


class RestoreInterrupted(Exception):
    """The restore was asked to stop; nothing of it may be used."""


class OtherPipeline(Exception):
    """The changelog holds records of another pipeline: nothing of this restore may be used,
    and retrying cannot help until the pipelines use different changelog topics."""

    def __init__(self, topic: str, partition: int, offset: int, theirs: Pipeline, ours: Pipeline):
        super().__init__(
            f"changelog topic {topic!r} (partition {partition}, offset {offset}) holds index "
            f"records of another pipeline ({theirs.describe()}); this worker is the pipeline "
            f"of {ours.describe()}. Its records are never applied and this worker decides "
            "nothing: give each pipeline its own changelog with --changelog-topic / "
            "NEARDUP_TOPICS__CHANGELOG (the default, <group id>.changelog, is one per group)"
        )
        self.theirs, self.ours = theirs, ours


def restore_partitions(
    reader: KafkaConsumer,
    changelog: str,
    partitions: Iterable[int],
    config: DedupConfig,
    pipeline: Pipeline,
    metrics: Metrics,
    should_stop: Callable[[], bool],
    snapshot_dir: str | None = None,
    committed: Mapping[int, int | None] | None = None,
) -> dict[int, Deduplicator]:
    """Indexes of `partitions`, each complete up to the changelog's last stable offset.

    Only `pipeline`'s records (and legacy ones) are applied; `committed` is the group's next
    input offset per partition, to warn when an index starts empty after input was decided.
    """
    tps = {p: TopicPartition(changelog, p) for p in sorted(set(partitions))}
    if not tps:
        return {}
    started = last_log = time.monotonic()
    reader.assign(list(tps.values()))
    starts = reader.beginning_offsets(list(tps.values()))
    ends = reader.end_offsets(list(tps.values()))
    _warn_if_empty(changelog, pipeline, committed or {}, starts, ends, tps)
    indexes: dict[int, Deduplicator] = {}
    for p, tp in tps.items():
        indexes[p], offset = _start(
            snapshot_dir, changelog, p, config, pipeline, starts[tp], ends[tp], metrics
        )
        reader.seek(tp, offset)
    remaining = {tp for tp in tps.values() if reader.position(tp) < ends[tp]}
    replayed, skip = 0, _Skips(metrics, pipeline)
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
        log.error("%d changelog records skipped as %s%s", count, reason, SKIP_HINTS.get(reason, ""))
    if skip.legacy:
        fresh = not any((committed or {}).get(p) for p in tps)
        log.warning(
            "%d changelog records of %s name no pipeline (written before pipelines were "
            "named); replayed as this pipeline's, %s%s",
            skip.legacy,
            changelog,
            pipeline.describe(),
            "; this group has committed no input offsets yet: if another pipeline wrote them, "
            "give this one its own changelog (--changelog-topic / NEARDUP_TOPICS__CHANGELOG)"
            if fresh
            else "",
        )
    log.info(
        "restored partitions %s: %d records replayed in %.1f s",
        sorted(tps),
        replayed,
        time.monotonic() - started,
    )
    return indexes


def _warn_if_empty(
    changelog: str,
    pipeline: Pipeline,
    committed: Mapping[int, int | None],
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    tps: Mapping[int, TopicPartition],
) -> None:
    """Never start an index empty silently after the group decided input."""
    empty = {
        p: committed[p]
        for p, tp in tps.items()
        if starts[tp] == ends[tp] and (committed.get(p) or 0) > 0
    }
    if empty:
        log.warning(
            "changelog topic %s holds no records for partitions %s, but the group already "
            "committed input offsets %s there: their indexes start empty, so documents decided "
            "before are not known. If an earlier version or setting wrote them to another "
            "changelog (the default used to be neardup.changelog for every group), set "
            "--changelog-topic / NEARDUP_TOPICS__CHANGELOG to it. Pipeline: %s",
            changelog,
            sorted(empty),
            dict(sorted(empty.items())),
            pipeline.describe(),
        )


def _start(
    snapshot_dir: str | None,
    changelog: str,
    partition: int,
    config: DedupConfig,
    pipeline: Pipeline,
    log_start: int,
    log_end: int,
    metrics: Metrics,
) -> tuple[Deduplicator, int]:
    """The index to replay onto and the changelog offset to replay from."""
    if snapshot_dir is None:
        return Deduplicator(config), log_start
    found = snapshots.load(snapshot_dir, changelog, partition, config, log_start, log_end, pipeline)
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
        if packed.pipeline is None:
            skip.legacy += len(packed.records)
        elif packed.pipeline != skip.pipeline:
            skip.count("other_pipeline", len(packed.records))
            raise OtherPipeline(tp.topic, tp.partition, msg.offset, packed.pipeline, skip.pipeline)
        for raw in packed.records:
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


# What an operator can do about records skipped for a reason.
SKIP_HINTS = {
    "other_config": (
        ": they were fingerprinted under other settings (shingling, seed, sketch size, banding), "
        "so this index starts without them. Upgraded from 0.1 with default settings? Its sketch "
        "was 2,048 bits: set NEARDUP_DEDUP__SKETCH_BITS=2048 to keep using that index"
    ),
}


class _Skips:
    """Counts skipped records (metric) and logs the first few of each reason: a changelog
    written under other settings would otherwise log every one of its records. Also counts
    the records that name no pipeline (`legacy`), replayed as `pipeline`'s."""

    def __init__(self, metrics: Metrics, pipeline: Pipeline) -> None:
        self.metrics, self.pipeline = metrics, pipeline
        self.counts: dict[str, int] = {}
        self.legacy = 0

    def count(self, reason: str, n: int) -> None:
        """Count `n` records not applied, without logging them."""
        self.metrics.restore_skipped.labels(reason).inc(n)

    def __call__(self, reason: str, tp: TopicPartition, offset: int, detail: str) -> None:
        self.count(reason, 1)
        seen = self.counts[reason] = self.counts.get(reason, 0) + 1
        if seen <= LOGGED_SKIPS:
            log.warning(
                "skipping changelog record %s[%d]@%d: %s", tp.topic, tp.partition, offset, detail
            )
        elif seen == LOGGED_SKIPS + 1:
            log.warning("more changelog records skipped as %s; not logged one by one", reason)
