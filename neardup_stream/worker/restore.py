"""The single worker's restore of one input partition's index from the changelog.

`restore_index` is the worker's `RestoreFn` (`neardup_stream.worker.runtime.restore`): it builds one
`Deduplicator` holding every committed changelog record of the partition, read by the one
changelog reader (`neardup_stream.worker.runtime.replay`, up to the last stable offset). A trusted local
snapshot (`neardup_stream.worker.snapshots`) shortens the replay; without one the replay starts at the log
start, so records compaction removed are never silently skipped past.

`IndexReplay` applies the changelog's packs (`neardup_stream.worker.changelog`). What it cannot apply it
reports as refusals, and `WORKER_POLICY` says what they do: corrupt records and records of
other fingerprint settings are counted and skipped; a record of another pipeline refuses the
whole restore, raised as `OtherPipeline` naming both pipelines and the fix (the worker then
decides nothing: `neardup_stream.worker.indexes`). Packs written before pipelines were named are replayed as
this worker's own (the upgrade path) and counted in the log. A partition whose changelog is
empty while the group already committed input offsets for it is warned about, and so is one
whose restored index holds documents while the group has no committed offset for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.records import FingerprintRecord
from neardup_stream.worker import changelog, snapshots, topic_ids
from neardup_stream.worker.changelog import Pipeline
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.runtime.replay import WORKER_POLICY, Applied, Refused, Skipped, replay
from neardup_stream.worker.runtime.restore import Restored

log = logging.getLogger(__name__)


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


class IndexReplay:
    """Applies changelog packs to one index: the worker's `replay.Apply`."""

    def __init__(self, dedup: Deduplicator, config: DedupConfig, pipeline: Pipeline) -> None:
        self.dedup, self.config, self.pipeline = dedup, config, pipeline
        self.legacy = 0  # records of packs that name no pipeline, applied as ours
        self.foreign: Pipeline | None = None  # the last other pipeline met

    def __call__(self, partition: int, value: bytes) -> Applied:
        packed = changelog.unpack(value)  # ValueError: the message is corrupt
        if packed.pipeline is None:
            self.legacy += len(packed.records)
        elif packed.pipeline != self.pipeline:
            self.foreign = packed.pipeline
            detail = f"a record of {packed.pipeline.describe()}"
            return Applied(0, (Skipped("other_pipeline", detail, len(packed.records)),))
        refused: list[Skipped] = []
        records: list[FingerprintRecord] = []
        for raw in packed.records:
            try:
                record = FingerprintRecord.decode(raw)
            except Exception as exc:  # any malformed bytes: struct, unicode, numpy
                refused.append(Skipped("corrupt", f"{type(exc).__name__}: {exc}"))
                continue
            if record.config_id != self.config.fingerprint_id:
                refused.append(Skipped("other_config", "other fingerprint settings"))
                continue
            records.append(record)
        try:
            self.dedup.apply_records(records)
            return Applied(len(records), tuple(refused))
        except Exception:
            applied = 0
            for record in records:
                try:
                    self.dedup.apply_records([record])
                    applied += 1
                except Exception as exc:
                    refused.append(Skipped("corrupt", f"{type(exc).__name__}: {exc}"))
            return Applied(applied, tuple(refused))


def restore_index(
    reader: KafkaConsumer,
    should_stop: Callable[[], bool],
    *,
    topic: str,
    partition: int,
    config: DedupConfig,
    pipeline: Pipeline,
    metrics: Metrics,
    snapshot_dir: str | None = None,
    committed: int | None = None,
) -> Restored[Deduplicator]:
    """The index of `partition`, complete up to the changelog's last stable offset.

    `committed` is the group's next input offset for the partition, to warn when its index
    starts empty after input was decided."""
    tp = TopicPartition(topic, partition)
    log_start = reader.beginning_offsets([tp])[tp]
    log_end = reader.end_offsets([tp])[tp]
    if log_start == log_end and (committed or 0) > 0:
        _warn_empty(topic, partition, committed, pipeline)
    made_of = topic_ids.current(reader, topic)
    dedup, offset = _start(
        snapshot_dir, tp, made_of, config, pipeline, (log_start, log_end), metrics
    )
    apply = IndexReplay(dedup, config, pipeline)
    try:
        done = replay(reader, {tp: offset}, apply, WORKER_POLICY, should_stop, metrics)
    except Refused as exc:
        if apply.foreign is None:
            raise
        raise OtherPipeline(topic, partition, exc.at.offset, apply.foreign, pipeline) from exc
    if committed is None and len(dedup) > 0:  # (not a changelog of aborted records only)
        _warn_uncommitted(topic, partition, pipeline)
    for reason, count in done.skipped.items():
        log.error("%d changelog records skipped as %s%s", count, reason, SKIP_HINTS.get(reason, ""))
    if apply.legacy:
        log.warning(
            "%d changelog records of %s name no pipeline (written before pipelines were "
            "named); replayed as this pipeline's, %s%s",
            apply.legacy,
            topic,
            pipeline.describe(),
            "; this group has committed no input offsets yet: if another pipeline wrote them, "
            "give this one its own changelog (--changelog-topic / NEARDUP_TOPICS__CHANGELOG)"
            if not committed
            else "",
        )
    return Restored(dedup)


def _warn_empty(topic: str, partition: int, committed: int | None, pipeline: Pipeline) -> None:
    """Never start an index empty silently after the group decided input."""
    log.warning(
        "changelog topic %s holds no records for partitions [%d], but the group already "
        "committed input offsets {%d: %s} there: its index starts empty, so documents decided "
        "before are not known (nothing is missing if none of them was indexed: every one "
        "dead-lettered, or aged out by retention). If an earlier version or setting wrote them "
        "to another "
        "changelog (the default used to be neardup.changelog for every group), set "
        "--changelog-topic / NEARDUP_TOPICS__CHANGELOG to it. Pipeline: %s",
        topic,
        partition,
        partition,
        committed,
        pipeline.describe(),
    )


def _warn_uncommitted(topic: str, partition: int, pipeline: Pipeline) -> None:
    """An index without the group's offsets: say what reading the input again means."""
    log.warning(
        "changelog topic %s holds index records for partition %d, but the group has no "
        "committed input offset there: the input is read from its log start, against this "
        "index. After the input topic was deleted and created again, that is expected. If "
        "the group's offsets expired instead (the broker's offsets.retention.minutes, 7 days "
        "by default, counted from when the group had no member), the inputs still retained "
        "were decided before and are decided again. Pipeline: %s",
        topic,
        partition,
        pipeline.describe(),
    )


def _start(
    snapshot_dir: str | None,
    tp: TopicPartition,
    topic_id: str | None,
    config: DedupConfig,
    pipeline: Pipeline,
    bounds: tuple[int, int],
    metrics: Metrics,
) -> tuple[Deduplicator, int]:
    """The index to replay onto and the changelog offset to replay from (`bounds`: the
    changelog partition's log start and last stable offset)."""
    log_start, log_end = bounds
    if snapshot_dir is None:
        return Deduplicator(config), log_start
    found = snapshots.load(
        snapshot_dir, tp.topic, tp.partition, config, log_start, log_end, pipeline, topic_id
    )
    if isinstance(found, snapshots.Rejected):
        if found.reason != "missing":
            metrics.snapshots_rejected.labels(found.reason).inc()
            log.warning("snapshot not used: %s", found.detail)
        return Deduplicator(config), log_start
    log.info(
        "partition %d: snapshot of %d documents up to offset %d",
        tp.partition,
        len(found.dedup),
        found.offset,
    )
    return found.dedup, found.offset


# What an operator can do about records skipped for a reason.
SKIP_HINTS = {
    "other_config": (
        ": they were fingerprinted under other settings (shingling, seed, sketch size, banding), "
        "so this index starts without them. Upgraded? Fingerprint format 3 changed what a "
        "document of 513-1,024 shingles keeps, so no earlier release's index can be reused"
    ),
}
