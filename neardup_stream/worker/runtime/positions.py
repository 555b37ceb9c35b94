"""The pipeline's own copy of the positions its roles commit: group offsets that never expire.

A consumer group's committed offsets expire once the group has had no member for the
broker's `offsets.retention.minutes` (7 days by default, KIP-211). A cluster stopped for
longer would start over: the edge would read every retained input again and decide it a
second time, and the shard and gather roles would lose the checkpoints their offsets carry.
So a replica's every transaction also writes, for each offset it commits, a position record
to the pipeline's positions topic (`cluster.positions`, by default `<group>.positions`: one
partition, compacted, kept forever), in the same transaction: the record and the offset
commit land together or not at all.

At start, before any role joins its group (`restore_expired`), a replica reads the
positions topic to its end and commits back, for each role's group, the positions the group
no longer has. That is allowed only while the group has no member, which is the only time
offsets expire. It skips a position of a partition that no longer exists, and one naming
another incarnation of its topic (`topic_ids`: an input deleted and created again starts
over). One WARNING names the group and the partitions restored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from kafka import KafkaAdminClient, OffsetAndMetadata, TopicPartition

from neardup_stream.worker import topic_ids, topics
from neardup_stream.worker.codec import OutMessage

log = logging.getLogger(__name__)
FORMAT = 1
ROLES = ("edge", "shards", "gather")  # whose groups' positions are kept (`role_settings`)
TOPIC_CONFIGS = {  # compacted and kept forever; a short segment keeps the dirty tail short
    "cleanup.policy": "compact",
    "segment.ms": str(10 * 60 * 1000),
    "min.cleanable.dirty.ratio": "0.1",
}


class Position(NamedTuple):
    """One committed offset of one group, as the positions topic keeps it."""

    group: str
    partition: TopicPartition
    offset: OffsetAndMetadata


def message(topic: str, position: Position) -> OutMessage:
    """The record of `position`, keyed by group and partition (compaction keeps the last)."""
    group, tp, at = position
    key = json.dumps([group, tp.topic, tp.partition], separators=(",", ":")).encode()
    value = {
        "format": FORMAT,
        "group": group,
        "topic": tp.topic,
        "partition": tp.partition,
        "offset": at.offset,
        "metadata": at.metadata,
    }
    return OutMessage(topic, key, json.dumps(value).encode(), partition=0)


def messages(
    topic: str, commits: Iterable[tuple[str, dict[TopicPartition, Any]]]
) -> list[OutMessage]:
    """The position records of a transaction's offset commits (group id -> offsets)."""
    return [
        message(topic, Position(group, tp, at))
        for group, offsets in commits
        for tp, at in sorted(offsets.items())
    ]


def decode(value: bytes | None) -> Position | None:
    """The position a record holds (None: a tombstone, or not a record this version reads)."""
    if value is None:
        return None
    try:
        v = json.loads(value)
        if v.get("format") != FORMAT:
            return None
        tp = TopicPartition(str(v["topic"]), int(v["partition"]))
        return Position(str(v["group"]), tp, OffsetAndMetadata(int(v["offset"]), v["metadata"], -1))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def latest(values: Iterable[bytes | None]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
    """The last position of each group's partition, read in log order."""
    found: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
    for value in values:
        position = decode(value)
        if position is not None:
            found.setdefault(position.group, {})[position.partition] = position.offset
    return found


def missing(
    kept: dict[TopicPartition, OffsetAndMetadata],
    committed: dict[TopicPartition, Any],
    partitions: dict[str, int],
    ids: dict[str, str | None],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The kept positions to commit back: partitions that exist (`partitions`: topic ->
    count), without a committed offset, and not of another incarnation of their topic
    (`ids`: topic -> its id now, None when unknown)."""
    back = {}
    for tp, at in kept.items():
        if tp in committed or tp.partition >= partitions.get(tp.topic, 0):
            continue
        named, now = topic_ids.from_metadata(at.metadata), ids.get(tp.topic)
        if named is not None and now is not None and named != now:
            continue
        back[tp] = at
    return back


def ensure_topic(admin: KafkaAdminClient, name: str, replication_factor: int) -> None:
    """Create the positions topic when missing."""
    if name not in set(admin.list_topics()):
        spec = {"num_partitions": 1, "replication_factor": replication_factor}
        topics.create(admin, {name: {**spec, "configs": dict(TOPIC_CONFIGS)}})


def restore_expired(
    admin: KafkaAdminClient, values: Sequence[bytes | None], groups: Sequence[str]
) -> dict[str, list[TopicPartition]]:
    """Commit back the kept positions each of `groups` no longer has (module docstring);
    what was restored, by group. `values`: the positions topic, in log order."""
    kept, restored = latest(values), {}
    for group in groups:
        if not kept.get(group):
            continue
        committed = admin.list_group_offsets({group: None}).get(group, {})
        names = sorted({tp.topic for tp in kept[group]})
        described = {t["name"]: t for t in admin.describe_topics(names)}
        partitions = {
            n: len(t.get("partitions") or ())
            for n, t in described.items()
            if not t.get("error_code")
        }
        ids = {n: topic_ids.named(t.get("topic_id")) for n, t in described.items()}
        back = missing(kept[group], committed, partitions, ids)
        if not back:
            continue
        errors = admin.alter_group_offsets(group, back)
        done = sorted(tp for tp, error in errors.items() if getattr(error, "errno", 0) == 0)
        failed = {tp: error for tp, error in errors.items() if tp not in done}
        if failed:  # a member joined meanwhile: its offsets are there, nothing expired
            log.info("group %s: positions not restored (%s)", group, failed)
        if done:
            restored[group] = done
            log.warning(
                "group %s had no committed offsets for %s, which it had committed before: "
                "they expired (the broker's offsets.retention.minutes, counted from when the "
                "group had no member) or were deleted; restored from the pipeline's positions",
                group,
                ", ".join(f"{tp.topic}-{tp.partition}@{back[tp].offset}" for tp in done),
            )
    return restored
