"""Checkpoints of the stateful roles, kept in the metadata of their committed offsets.

A role's state is rebuilt from the start of the fingerprint log; the checkpoint says from
which log offsets on its outputs were already committed, so the rebuild publishes nothing
twice. It is committed in the same transaction as those outputs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord
from kafka.errors import KafkaError

from neardup_stream.worker.cluster.log_record import is_decided
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS

log = logging.getLogger(__name__)
VERSION = 1


def encode(
    next_offsets: dict[int, int], payloads: dict[int, PayloadCheckpoint] | None = None
) -> str:
    """Metadata naming, per log partition, the first offset not yet published (and, for a
    gather, where it resumes reading the payloads topic)."""
    data: dict[str, object] = {
        "v": VERSION,
        "next": {str(p): o for p, o in sorted(next_offsets.items())},
    }
    if payloads:
        data["payloads"] = {str(p): [c.start, list(c.used)] for p, c in sorted(payloads.items())}
    return json.dumps(data, separators=(",", ":"))


def decode_payloads(metadata: str | None) -> dict[int, PayloadCheckpoint]:
    """The payload checkpoints of `encode` (none: read the payloads from their start)."""
    if not metadata:
        return {}
    try:
        data = json.loads(metadata).get("payloads", {})
        return {
            int(p): PayloadCheckpoint(int(start), tuple(int(o) for o in used))
            for p, (start, used) in data.items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.error("ignoring unreadable payload checkpoint %r: %s", metadata[:200], exc)
        return {}


def decode(metadata: str | None) -> dict[int, int]:
    """`encode`'s inverse; an empty or foreign checkpoint means "publish everything"."""
    if not metadata:
        return {}
    try:
        data = json.loads(metadata)
        if data.get("v") != VERSION:
            raise ValueError(f"checkpoint version {data.get('v')!r}")
        return {int(p): int(o) for p, o in data["next"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        log.error("ignoring unreadable checkpoint %r: %s", metadata[:200], exc)
        return {}


def read(consumer: KafkaConsumer, tp: TopicPartition) -> dict[int, int]:
    """The committed checkpoint of `tp` (read_committed: waits for pending transactions)."""
    return decode(read_metadata(consumer, tp))


def read_metadata(consumer: KafkaConsumer, tp: TopicPartition) -> str | None:
    """The metadata of `tp`'s committed offset (None: nothing committed). Waits
    `COMMITTED_TIMEOUT_MS` at most, then raises KafkaTimeoutError (the follower tries the
    restore again later)."""
    committed = consumer.committed(tp, metadata=True, timeout_ms=COMMITTED_TIMEOUT_MS)
    if not isinstance(committed, OffsetAndMetadata):
        return None
    return str(committed.metadata)


class Overtaken(KafkaError):
    """A role read a log record that a single-stage replica decided, and its committed
    checkpoints are past that record: the role reads on a view that is no longer its own
    (it was paused or cut off while another replica was the whole cluster). Retriable: the
    role rebuilds from its committed checkpoints, as after a failed read."""

    retriable = True

    def __init__(self, topic: str, partition: int, offset: int) -> None:
        super().__init__(
            f"{topic}-{partition} offset {offset} was decided by a single-stage replica "
            "while this replica was away (the committed checkpoints are past it); "
            "rebuilding from them"
        )


def decided_past(
    consumer: KafkaConsumer, committed: Collection[TopicPartition], p: int, offset: int
) -> bool:
    """Whether the checkpoint committed at each of `committed` (one at least) says log
    partition `p` is decided past `offset`. A role that meets a single-stage record there
    was overtaken (`Overtaken`); otherwise a checkpoint went back, and it stops."""
    return bool(committed) and all(read(consumer, tp).get(p, 0) > offset for tp in committed)


def check_overtaken(
    consumer: KafkaConsumer, committed: Collection[TopicPartition], log: ConsumerRecord
) -> None:
    """Raise `Overtaken` if the log record `log` a role cannot read is a single-stage one
    that every checkpoint at `committed` is past (`decided_past`); return, for the role to
    stop there, otherwise."""
    if is_decided(log.value) and decided_past(consumer, committed, log.partition, log.offset):
        raise Overtaken(log.topic, log.partition, log.offset)
