"""Local index snapshots, one per input partition, and the rules for trusting one.

Layout: `<snapshot_dir>/<changelog topic>/p<partition>/` (a `neardup_stream.snapshot`
directory, written atomically). Its metadata names the changelog topic (and its topic id,
so a snapshot of a changelog deleted and created again under its name is not used) and
partition, the pipeline (input topic, group id: `neardup_stream.worker.changelog.Pipeline`), the changelog
offset it covers and a digest of the whole engine configuration. A snapshot is used only when
all of them match and its offset is still inside the changelog (between the log start and the
last stable offset); otherwise restore replays the partition from the start. A snapshot of an
earlier version names no pipeline: it is rejected (`other_pipeline`) and the replay, which
checks every record's pipeline, rebuilds the index once.
A snapshot that cannot be read is rejected the same way: counted, logged, never a crash.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import NamedTuple

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.config import FINGERPRINT_FORMAT, DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.snapshot import load_snapshot, other_format, read_meta, save_snapshot
from neardup_stream.worker import failpoints, topic_ids
from neardup_stream.worker.changelog import Pipeline

log = logging.getLogger(__name__)


class Snapshot(NamedTuple):
    """A trusted snapshot: its index and the changelog offset to replay from."""

    dedup: Deduplicator
    offset: int


class Rejected(NamedTuple):
    """Why a snapshot was not used (`reason` is a metric label)."""

    reason: str  # missing | corrupt | other_topic | other_pipeline | other_config | out_of_range
    detail: str


def config_digest(config: DedupConfig) -> str:
    """A digest of every engine setting (retention included: it shapes the index)."""
    text = json.dumps(config.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def partition_dir(root: str | Path, changelog: str, partition: int) -> Path:
    return Path(root) / changelog / f"p{partition}"


def save(
    dedup: Deduplicator,
    root: str | Path,
    changelog: str,
    partition: int,
    offset: int,
    pipeline: Pipeline,
    topic_id: str | None = None,
) -> Path:
    """Snapshot one partition's index covering the changelog (of id `topic_id`) up to
    `offset` (exclusive)."""
    extra: dict[str, object] = {
        "changelog_topic": changelog,
        "changelog_topic_id": topic_id,
        "partition": partition,
        "pipeline": {"input_topic": pipeline.input_topic, "group_id": pipeline.group_id},
        "changelog_offset": offset,
        "config_digest": config_digest(dedup.config),
    }
    return save_snapshot(dedup, partition_dir(root, changelog, partition), extra)


def load(
    root: str | Path,
    changelog: str,
    partition: int,
    config: DedupConfig,
    log_start: int,
    log_end: int,
    pipeline: Pipeline,
    topic_id: str | None = None,
) -> Snapshot | Rejected:
    """The snapshot of `partition` if it can be trusted, else why not (`topic_id`: the
    changelog's now; None when the broker gives none, and then not compared)."""
    path = partition_dir(root, changelog, partition)
    if not (path / "meta.json").exists():
        return Rejected("missing", f"no snapshot in {path}")
    try:
        meta = read_meta(path)
        topic, part = meta.get("changelog_topic"), meta.get("partition")
        offset = meta.get("changelog_offset")
        if topic != changelog or part != partition or not isinstance(offset, int):
            return Rejected("other_topic", f"{path} covers {topic!r} partition {part!r}")
        made_of = meta.get("changelog_topic_id")
        if topic_id is not None and made_of != topic_id:
            return Rejected(
                "other_topic",
                f"{path} was made from changelog {changelog!r} of topic id {made_of}, and that "
                f"topic now has id {topic_id}: it was deleted and created again",
            )
        made_for = meta.get("pipeline")
        ours = {"input_topic": pipeline.input_topic, "group_id": pipeline.group_id}
        if made_for != ours:
            return Rejected(
                "other_pipeline",
                f"{path} holds the index of pipeline {made_for!r}, not of {ours!r}",
            )
        made = other_format(meta)
        if made is not None:
            return Rejected(
                "other_config",
                f"{path} holds fingerprints of format {made}, this release makes format "
                f"{FINGERPRINT_FORMAT}",
            )
        if meta.get("config_digest") != config_digest(config):
            return Rejected("other_config", f"{path} was made under other engine settings")
        if not log_start <= offset <= log_end:
            return Rejected(
                "out_of_range",
                f"{path} covers up to offset {offset}; the changelog holds {log_start}..{log_end}",
            )
        dedup = load_snapshot(path, config)
    except Exception as exc:
        return Rejected("corrupt", f"{path} cannot be read: {type(exc).__name__}: {exc}")
    return Snapshot(dedup, offset)


def save_all(
    indexes: dict[int, Deduplicator],
    consumer: KafkaConsumer,
    root: str,
    changelog: str,
    pipeline: Pipeline,
) -> None:
    """Snapshot every partition index at the changelog's last stable offset; call only with
    nothing in flight, so that offset covers everything the indexes hold."""
    tps = {p: TopicPartition(changelog, p) for p in indexes}
    try:
        ends = consumer.end_offsets(list(tps.values()))
        made_of = topic_ids.current(consumer, changelog)
        for p, dedup in indexes.items():
            save(dedup, root, changelog, p, ends[tps[p]], pipeline, made_of)
            failpoints.hit("snapshot_saved")
        log.info("snapshots of partitions %s saved", sorted(indexes))
    except Exception:
        log.exception("saving a snapshot failed")
