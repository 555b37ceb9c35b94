"""The pure decide step: one polled batch -> every record the batch publishes.

No Kafka client here: input records come in as `InputRecord`s, and what to publish goes out
as a `BatchOutput` (messages, changelog records, next offsets, what to count). Each input
gets exactly one outcome: a decision (unique: the original bytes; duplicate: the decision as
JSON) or one dead letter. Inputs are decided per partition, in offset order, against that
partition's index, so a decision is a function of its partition's order alone.

An input also goes to the dead-letter topic, as `unpublishable`, when its output could not be
published: before deciding, when its pass-through would exceed the unique topic's limit; or
when the broker rejected it for a deterministic reason earlier (`rejected`, filled by the
loop from the transaction step), so a replay never hits the same rejection again. An input
the engine failed on, alone in its batch, is likewise dead-lettered as `internal_error`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.mapping import InputMapping
from neardup_stream.models import Document, ErrorRecord
from neardup_stream.parsing import ParseError, parse_document
from worker import changelog, codec

# Record-batch and header overhead counted against a topic's max.message.bytes.
RECORD_OVERHEAD_BYTES = 1024
MAX_DLQ_KEY_BYTES = 1024


class Source(NamedTuple):
    """Where an input record came from."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True)
class InputRecord:
    """One polled input message, free of any Kafka client type."""

    source: Source
    key: bytes | None
    value: bytes | None
    timestamp_ms: int  # Kafka's record time; -1 when the producer set none
    headers: tuple[tuple[str, bytes | None], ...] = ()


class Rejection(NamedTuple):
    """An input the worker could not publish (`unpublishable`) or decide (`internal_error`):
    on the replay it becomes a dead letter with this reason."""

    reason: str
    message: str
    keep_payload: bool = True  # False once even its dead letter was rejected


@dataclass(frozen=True)
class DecideRules:
    """Everything the decide step needs besides the records and the indexes."""

    unique_topic: str
    duplicate_topic: str
    dlq_topic: str
    mapping: InputMapping
    max_message_bytes: int
    dlq_payload_bytes: int
    unique_limit: int  # the unique topic's max.message.bytes
    changelog_limit: int = 1 << 62  # the changelog topic's max.message.bytes
    pipeline: changelog.Pipeline | None = None  # whose changelog records; required to write


class Unrecordable(Exception):
    """An input's index record cannot be written to the changelog (e.g. a precise-mode shingle
    set beyond the topic's limit). The index already holds it: the loop rebuilds the
    partition and dead-letters the input as `unpublishable`."""

    def __init__(self, source: Source, size: int, limit: int) -> None:
        super().__init__(
            f"its index record is {size} bytes; the changelog accepts {limit} (max.message.bytes)"
        )
        self.source = source


@dataclass(frozen=True)
class ChangelogRecord:
    """A changelog message (packed index records of one pipeline) for changelog partition =
    input partition; its key names the pipeline (`changelog.key`)."""

    partition: int
    key: bytes
    value: bytes


@dataclass
class BatchOutput:
    """What one batch publishes, in input order, and what it counts once committed."""

    messages: list[codec.OutMessage] = field(default_factory=list)
    message_sources: list[Source] = field(default_factory=list)
    changelog: list[ChangelogRecord] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # next offset to read
    decided: list[tuple[str, str]] = field(default_factory=list)  # (decision, method)
    dead: list[str] = field(default_factory=list)  # dead-letter reasons
    timestamps_ms: list[int] = field(default_factory=list)  # record times of decisions
    started: float = 0.0  # perf_counter when the batch was polled, for the batch histogram

    @property
    def partitions(self) -> set[int]:
        """Input partitions this batch touched."""
        return {partition for _, partition in self.offsets}

    def add(self, message: codec.OutMessage, source: Source) -> None:
        self.messages.append(message)
        self.message_sources.append(source)


def dead_letter(
    out: BatchOutput,
    rules: DecideRules,
    record: InputRecord,
    reason: str,
    message: str,
    keep_payload: bool = True,
) -> None:
    """Add the one dead letter of `record`, bounded so that it always fits."""
    error = ErrorRecord.build(
        reason,
        message,
        record.value or b"",
        rules.dlq_payload_bytes if keep_payload else 0,
        topic=record.source.topic,
        partition=record.source.partition,
        offset=record.source.offset,
        timestamp=record.timestamp_ms,
    )
    small = record.key is not None and len(record.key) <= MAX_DLQ_KEY_BYTES
    key = record.key if small and keep_payload else None
    out.add(codec.dlq_message(rules.dlq_topic, error, key), record.source)
    out.dead.append(reason)


def unpublishable_reason(record: InputRecord, doc: Document, rules: DecideRules) -> str | None:
    """Why the unique pass-through of `doc` cannot be published, or None if it fits."""
    size = len(record.value or b"") + len(doc.id.encode()) + RECORD_OVERHEAD_BYTES
    if size <= rules.unique_limit:
        return None
    return (
        f"the document is {len(record.value or b'')} bytes; topic {rules.unique_topic!r} "
        f"accepts {rules.unique_limit} (max.message.bytes) including key and headers"
    )


def admit(
    out: BatchOutput,
    record: InputRecord,
    rules: DecideRules,
    rejected: Mapping[Source, Rejection],
) -> Document | None:
    """The document of `record`, or None once its one dead letter is added to `out`."""
    tp = (record.source.topic, record.source.partition)
    out.offsets[tp] = max(out.offsets.get(tp, 0), record.source.offset + 1)
    if record.source in rejected:
        why = rejected[record.source]
        dead_letter(out, rules, record, why.reason, why.message, why.keep_payload)
        return None
    parsed = parse_document(record.value, rules.max_message_bytes, rules.mapping, record.key)
    if isinstance(parsed, ParseError):
        dead_letter(out, rules, record, parsed.reason, parsed.message)
        return None
    too_big = unpublishable_reason(record, parsed, rules)
    if too_big is not None:
        dead_letter(out, rules, record, "unpublishable", too_big)
        return None
    return parsed


def record_times(records: Sequence[InputRecord]) -> list[float | None]:
    """Kafka's record time of each input, in seconds: its document's reference time (None:
    the wall clock then); the engine clamps event times that run ahead of it."""
    return [r.timestamp_ms / 1000 if r.timestamp_ms >= 0 else None for r in records]


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
    docs: list[Document] = []
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
