"""Checkpoints of the stateful roles, kept in the metadata of their committed offsets.

A role's state is rebuilt from the start of the fingerprint log; the checkpoint says from
which log offsets on its outputs were already committed, so the rebuild publishes nothing
twice. It is committed in the same transaction as those outputs.
"""

from __future__ import annotations

import json
import logging

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)
VERSION = 1


def encode(next_offsets: dict[int, int]) -> str:
    """Metadata naming, per log partition, the first offset not yet published."""
    return json.dumps({"v": VERSION, "next": {str(p): o for p, o in sorted(next_offsets.items())}})


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
    committed = consumer.committed(tp, metadata=True)
    if not isinstance(committed, OffsetAndMetadata):
        return {}
    return decode(committed.metadata)
