"""The broker-free driver: Kafka-shaped input in, exactly what the worker would publish out.

`Driver(settings)` runs the worker's own pure steps, not a copy of them: input messages
become `neardup_stream.worker.decide.InputRecord`s as the edge role builds them (headers kept; the single
worker's decide step does not read them, the edge's domain lookup does), batches go through
`neardup_stream.worker.decide.decide` (admission, parsing, dead letters, `codec` formats) against one
`Deduplicator(settings.dedup)` per input partition, and a batch the engine fails on is
handled as the loop does (rebuild the touched partitions from the changelog records already
"committed", bisect, dead-letter the input as `internal_error` / `unpublishable` through
`neardup_stream.worker.rejections.Rejections`). What the driver returns is what one transaction per batch
would commit to the unique, duplicate and dead-letter topics, in send order.

Order and determinism. The returned records are in the order the worker sends them: per
batch and input partition, the dead letters of admission (unparsable, too large) first, then
the decisions, each group in input order; so every output topic holds its records in input
order. A `send_many` call is one poll of the worker (split at `worker.max_batch`): its input
partitions are decided in order of first appearance, as the worker does within one poll; a
real worker's polls can cut a stream elsewhere, so across input partitions compare per
partition (or use one). Decisions depend only on each partition's input order, never on
batch boundaries. Output partitions are left to the producer's partitioner
(`OutputRecord.partition` is None), as in the worker; with one output partition (the default
`topics.partitions=1`) a topic's order is the send order. The same inputs in the same order
give the same outputs, except the dead letter's `at` (the wall clock when it was built), and
event times taken from the wall clock for inputs sent with `timestamp_ms=-1` (no record
time) or stamped ahead of it. Inputs without a timestamp get the driver's clock (`clock_ms`,
starting at `DEFAULT_START_MS`, moved by `advance`), as a producer stamps with its own.

Topic limits the worker reads from the broker (`max.message.bytes` of the unique and
changelog topics) are those of topics the worker creates (`worker.output_max_message_bytes`)
unless `topic_limits` names others. Broker-side failures (a rejected send, an outage) do not
exist here. With `cluster.enabled` the scale-out roles' steps run instead of the loop's
(`neardup_stream.worker.testing.cluster`): decisions are those of offline `dedup --home-shards`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.records import FingerprintRecord
from neardup_stream.worker import changelog
from neardup_stream.worker.decide import (
    BatchOutput,
    DecideRules,
    InputRecord,
    Source,
    Unrecordable,
    decide,
)
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.settings import Settings

if TYPE_CHECKING:
    from neardup_stream.worker.testing.cluster import ClusterPipeline

DEFAULT_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class InputMessage:
    """One message as a producer would send it to the input topic."""

    value: bytes | None
    key: bytes | None = None
    headers: Headers = ()
    partition: int = 0
    timestamp_ms: int | None = None  # None: the driver's clock; -1: no record time
    topic: str | None = None  # None: the input topic


@dataclass(frozen=True)
class OutputRecord:
    """One record the worker publishes, and the input it answers."""

    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    partition: int | None  # None: the producer's partitioner picks it (by key)
    source: Source


class Driver:
    """Feed input messages, get the worker's published records (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        topic_limits: Mapping[str, int] | None = None,
        start_ms: int = DEFAULT_START_MS,
    ) -> None:
        self.settings = settings
        self.rules = DecideRules.of(settings, topic_limits or {})
        self.cluster: ClusterPipeline | None = None
        if settings.topic_scope:
            from neardup_stream.worker.testing.cluster import ClusterPipeline

            self.cluster = ClusterPipeline(settings, self.rules)
        self.clock_ms = start_ms
        self.indexes: dict[int, Deduplicator] = {}
        self.rejected = Rejections(settings.topics.dlq)
        self.published: list[OutputRecord] = []
        self._offsets: dict[int, int] = {}  # next offset per input partition
        self._committed: dict[int, list[bytes]] = {}  # changelog values per input partition

    def advance(self, ms: int) -> None:
        """Move the driver's clock (the timestamp of inputs sent without one)."""
        if ms < 0:
            raise ValueError(f"advance: {ms} ms; the clock only moves forward")
        self.clock_ms += ms

    def send(
        self,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int = 0,
        timestamp_ms: int | None = None,
        topic: str | None = None,
    ) -> list[OutputRecord]:
        """One input message, decided as a batch of its own; returns what it published."""
        message = InputMessage(value, key, tuple(headers), partition, timestamp_ms, topic)
        return self.send_many([message])

    def send_many(self, messages: Iterable[InputMessage]) -> list[OutputRecord]:
        """Messages the worker would get in one poll; returns what they published, in order."""
        records = [self._record(m) for m in messages]
        out: list[OutputRecord] = []
        size = self.settings.worker.max_batch
        for start in range(0, len(records), size):
            out += self._batch(records[start : start + size])
        return out

    def outputs(self, topic: str | None = None) -> list[OutputRecord]:
        """Everything published so far (to `topic` only, if given), in send order."""
        return [r for r in self.published if topic is None or r.topic == topic]

    def _record(self, m: InputMessage) -> InputRecord:
        t = self.settings.topics
        topic = t.input if m.topic is None else m.topic
        if topic != t.input:
            raise ValueError(f"topic {topic!r}: the worker reads only topics.input={t.input!r}")
        if not 0 <= m.partition < t.partitions:
            raise ValueError(
                f"partition {m.partition}: the input topic has topics.partitions={t.partitions}"
            )
        offset = self._offsets.get(m.partition, 0)
        self._offsets[m.partition] = offset + 1
        ts = self.clock_ms if m.timestamp_ms is None else m.timestamp_ms
        return InputRecord(Source(topic, m.partition, offset), m.key, m.value, ts, m.headers)

    def _batch(self, records: list[InputRecord]) -> list[OutputRecord]:
        """Decide like the loop: a batch the engine fails on is bisected and replayed."""
        if self.cluster is not None:
            out = [
                OutputRecord(m.topic, m.key, m.value, tuple(m.headers), m.partition, source)
                for m, source in self.cluster.batch(records)
            ]
            self.published += out
            return out
        published: list[OutputRecord] = []
        failures, pending = 0, records
        while pending:
            chunk = pending[: max(1, len(records) >> min(failures, 20))]
            for p in {r.source.partition for r in chunk}:
                if p not in self.indexes:
                    self.indexes[p] = self._rebuilt(p)
            try:
                output = decide(chunk, self.indexes, self.rules, self.rejected)
            except Exception as exc:
                for p in {r.source.partition for r in chunk}:
                    del self.indexes[p]  # it ran ahead of the commit
                if isinstance(exc, Unrecordable):
                    self.rejected.unpublishable(exc.source, str(exc))
                elif len(chunk) == 1:
                    self.rejected.undecidable(chunk[0].source, exc)
                else:
                    failures += 1
                continue
            published += self._commit(output)
            pending, failures = pending[len(chunk) :], 0
        return published

    def _commit(self, output: BatchOutput) -> list[OutputRecord]:
        for rec in output.changelog:
            self._committed.setdefault(rec.partition, []).append(rec.value)
        out = [
            OutputRecord(m.topic, m.key, m.value, tuple(m.headers), m.partition, source)
            for m, source in zip(output.messages, output.message_sources, strict=True)
        ]
        self.published += out
        return out

    def _rebuilt(self, partition: int) -> Deduplicator:
        """The partition's index from its committed changelog records (as a restore does)."""
        dedup = Deduplicator(self.settings.dedup)
        records = [
            FingerprintRecord.decode(raw)
            for value in self._committed.get(partition, [])
            for raw in changelog.unpack(value).records
        ]
        dedup.apply_records(records)
        return dedup
