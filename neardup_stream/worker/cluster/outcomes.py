"""What one gather transaction publishes, and what it counts once committed.

Per decided log record: each document's decision (duplicate topic) or pass-through (unique
topic) — none for an input a previous generation decided (`Handover`) — or, for an input whose output the broker rejected before (`Rejections`), its dead
letter as `unpublishable`; then the first decisions for the gather changelog, split under
the message limit. Every message remembers the input it publishes, so a rejected one can be
traced back to its input. Counted (documents, latency from the input record times, batch
time, dead letters) only after the commit, as the single worker does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from neardup_stream.models import Decision, ErrorRecord
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.worker import codec
from neardup_stream.worker.admission import MAX_DLQ_KEY_BYTES
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.cluster.payloads import Passage
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.metrics import Metrics, count_decisions
from neardup_stream.worker.records import Rejection, Source
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.settings import Settings


@dataclass
class Outcomes:
    """The messages of one gather transaction (see the module docstring)."""

    settings: Settings
    rejections: Rejections
    # Inputs a previous generation decided (`Handover`): decided and indexed, not published.
    handover: Handover = field(default_factory=lambda: Handover("", {}))
    messages: list[OutMessage] = field(default_factory=list)
    sources: list[Source | None] = field(default_factory=list)  # None: a changelog record
    counts: list[tuple[str, str]] = field(default_factory=list)  # (decision, method)
    timestamps_ms: list[int] = field(default_factory=list)  # input record times of decisions
    dead: list[Source] = field(default_factory=list)  # inputs dead-lettered as unpublishable
    size: int = 0  # bytes of all messages
    started: float = field(default_factory=time.perf_counter)

    def add_record(
        self,
        partition: int,
        offset: int,
        decisions: list[Decision],
        passages: list[Passage],
        firsts: list[FirstDecisions],
    ) -> None:
        """The outputs of the log record at `offset` of log `partition`."""
        t = self.settings.topics
        for d, passage in zip(decisions, passages, strict=True):
            if not self.handover.publishes(passage.source):
                continue
            why = self.rejections.get(passage.source)
            if why is not None:
                m = dead_letter(self.settings, passage, why)
                self.dead.append(passage.source)
            elif d.is_duplicate:
                m = codec.duplicate_message(t.duplicate, d)
            else:
                m = codec.unique_message(t.unique, d, passage.value)
            if why is None:
                self.counts.append((d.decision, d.method or "none"))
                self.timestamps_ms.append(passage.timestamp_ms)
            self._add(m, passage.source)
        key = str(offset).encode()
        topic = self.settings.cluster.gather_changelog
        limit = self.settings.worker.output_max_message_bytes // 2
        for f in firsts:
            for part in f.pack_parts(limit):
                self._add(OutMessage(topic, key, part, partition=partition), None)

    def _add(self, message: OutMessage, source: Source | None) -> None:
        self.messages.append(message)
        self.sources.append(source)
        self.size += len(message.value) + len(message.key or b"")

    def account(self, metrics: Metrics, committed_at: float) -> None:
        """Count the transaction that committed at `committed_at` (wall time; counted later
        when the commit overlapped the next round); its dead-lettered inputs are settled."""
        count_decisions(metrics, self.timestamps_ms, self.counts, committed_at)
        since = max(0.0, time.time() - committed_at)
        metrics.batch_seconds.observe(max(0.0, time.perf_counter() - since - self.started))
        for source in self.dead:
            metrics.dlq.labels("unpublishable").inc()
            self.rejections.pop(source, None)


def dead_letter(settings: Settings, passage: Passage, why: Rejection) -> OutMessage:
    """The input's dead letter (bounded like the single worker's: `admission.dead_letter`)."""
    error = ErrorRecord.build(
        why.reason,
        why.message,
        passage.value,
        settings.worker.dlq_payload_bytes if why.keep_payload else 0,
        topic=passage.source.topic,
        partition=passage.source.partition,
        offset=passage.source.offset,
        timestamp=passage.timestamp_ms,
    )
    small = passage.key is not None and len(passage.key) <= MAX_DLQ_KEY_BYTES
    key = passage.key if small and why.keep_payload else None
    return codec.dlq_message(settings.topics.dlq, error, key)
