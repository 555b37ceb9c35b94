"""The pure decide step: one polled batch -> every record the batch publishes.

No Kafka client here: input records come in as `InputRecord`s, and what to publish goes out
as a `BatchOutput` (messages, changelog records, next offsets, what to count). Each input
gets exactly one outcome: a decision (unique: the original bytes; duplicate: the decision as
JSON) or one dead letter. Inputs are decided per partition, in offset order, against that
partition's index, so a decision is a function of its partition's order alone.

Admission (parse, bound, dead-letter) is `admission.admit`; the shared input and output types
are in `records` (re-exported here for the modules that import them from `decide`). An input
the engine failed on, alone in its batch, is dead-lettered as `internal_error`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Parsed
from neardup_stream.worker import changelog, codec
from neardup_stream.worker.admission import (
    MAX_DLQ_KEY_BYTES,
    RECORD_OVERHEAD_BYTES,
    DecideRules,
    admit,
    dead_letter,
    record_times,
    unpublishable_reason,
)
from neardup_stream.worker.records import (
    BatchOutput,
    ChangelogRecord,
    InputRecord,
    Rejection,
    Source,
)

__all__ = [
    "MAX_DLQ_KEY_BYTES",
    "RECORD_OVERHEAD_BYTES",
    "BatchOutput",
    "ChangelogRecord",
    "DecideRules",
    "InputRecord",
    "Rejection",
    "Source",
    "Unrecordable",
    "admit",
    "dead_letter",
    "decide",
    "record_times",
    "unpublishable_reason",
]


class Unrecordable(Exception):
    """An input's index record cannot be written to the changelog (e.g. a precise-mode shingle
    set beyond the topic's limit). The index already holds it: the loop rebuilds the
    partition and dead-letters the input as `unpublishable`."""

    def __init__(self, source: Source, size: int, limit: int) -> None:
        super().__init__(
            f"its index record is {size} bytes; the changelog accepts {limit} (max.message.bytes)"
        )
        self.source = source


def decide(
    records: Sequence[InputRecord],
    indexes: Mapping[int, Deduplicator],
    rules: DecideRules,
    rejected: Mapping[Source, Rejection],
) -> BatchOutput:
    """Decide a batch: every record gets one output; `indexes` holds one per partition."""
    out = BatchOutput()
    by_partition: dict[int, list[InputRecord]] = {}
    for record in records:
        by_partition.setdefault(record.source.partition, []).append(record)
    for partition, items in by_partition.items():
        _decide_partition(out, items, indexes[partition], rules, rejected)
    return out


def _decide_partition(
    out: BatchOutput,
    records: list[InputRecord],
    dedup: Deduplicator,
    rules: DecideRules,
    rejected: Mapping[Source, Rejection],
) -> None:
    docs: list[Parsed] = []
    kept: list[InputRecord] = []
    for record in records:
        parsed = admit(out, record, rules, rejected)
        if parsed is not None:
            docs.append(parsed)
            kept.append(record)
    if not docs:
        return
    outcomes = dedup.process(docs, records=True, times=record_times(kept))
    stored: list[bytes] = []
    for record, outcome in zip(kept, outcomes, strict=True):
        d = outcome.decision
        if d.is_duplicate:
            out.add(codec.duplicate_message(rules.duplicate_topic, d), record.source)
        else:
            out.add(codec.unique_message(rules.unique_topic, d, record.value or b""), record.source)
        if outcome.record is not None:
            stored.append(outcome.record.encode())
            if len(stored[-1]) + RECORD_OVERHEAD_BYTES > rules.changelog_limit:
                raise Unrecordable(record.source, len(stored[-1]), rules.changelog_limit)
        out.timestamps_ms.append(record.timestamp_ms)
        out.decided.append((d.decision, d.method or "none"))
    if not stored:
        return
    if rules.pipeline is None:
        raise ValueError("DecideRules.pipeline is required to write changelog records")
    partition, first = kept[0].source.partition, kept[0].source.offset
    for i, value in enumerate(changelog.pack(stored, rules.pipeline)):
        key = changelog.key(rules.pipeline, partition, first, i)
        out.changelog.append(ChangelogRecord(partition, key, value))
