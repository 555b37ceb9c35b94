"""Admission of one input: its offset counted, then parsed and bounded into a `Document`, or
its one dead letter added (unparsable, too large to pass through, or rejected earlier).

Shared by the single worker's decide step (`decide`) and the cluster's edge (`cluster.ingest`),
so both turn the same bad input into the same dead letter. Under the default mapping a plain
object is admitted as a `PlainDocument`, without building a `Document` (`plain_objects`).

An input goes to the dead-letter topic as `unpublishable` when its pass-through would exceed
the unique topic's limit, or when the broker rejected its output for a deterministic reason
before (`rejected`, filled from the failure policy's blame), so a replay never hits the same
rejection again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from neardup_stream.mapping import DEFAULT_MAPPING, InputMapping
from neardup_stream.models import ErrorRecord, Parsed
from neardup_stream.parsing import ParseError
from neardup_stream.plain_objects import parse_input
from neardup_stream.worker import changelog, codec
from neardup_stream.worker.records import BatchOutput, InputRecord, Rejection, Source

if TYPE_CHECKING:
    from neardup_stream.worker.settings import Settings

# Record-batch and header overhead counted against a topic's max.message.bytes.
RECORD_OVERHEAD_BYTES = 1024
MAX_DLQ_KEY_BYTES = 1024


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

    @cached_property
    def parse_mapping(self) -> InputMapping:
        """`mapping`, as the `DEFAULT_MAPPING` object itself when equal to it (domain settings
        included: none reads the document then), so `parse_input` reads plain objects."""
        return DEFAULT_MAPPING if self.mapping == DEFAULT_MAPPING else self.mapping

    @classmethod
    def of(cls, settings: Settings, limits: Mapping[str, int]) -> DecideRules:
        """The rules of `settings`; `limits` maps output topics to their max.message.bytes (a
        topic missing from it gets the limit the worker gives the topics it creates)."""
        s, default = settings, settings.worker.output_max_message_bytes
        return cls(
            s.topics.unique,
            s.topics.duplicate,
            s.topics.dlq,
            s.input,
            s.worker.max_message_bytes,
            s.worker.dlq_payload_bytes,
            limits.get(s.topics.unique, default),
            default if s.topic_scope else limits.get(changelog.topic_of(s), default),
            changelog.pipeline_of(s),
        )


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


def unpublishable_reason(record: InputRecord, doc: Parsed, rules: DecideRules) -> str | None:
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
) -> Parsed | None:
    """The document of `record`, or None once its one dead letter is added to `out`."""
    tp = (record.source.topic, record.source.partition)
    out.offsets[tp] = max(out.offsets.get(tp, 0), record.source.offset + 1)
    if record.source in rejected:
        why = rejected[record.source]
        dead_letter(out, rules, record, why.reason, why.message, why.keep_payload)
        return None
    parsed = parse_input(record.value, rules.max_message_bytes, rules.parse_mapping, record.key)
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
