"""The edge step, pure: polled input records -> fingerprint-log records and dead letters.

Every input gets one outcome: a dead letter (the single worker's reasons and bounds), or a
place in one fingerprint-log record of its domain's log partition, with its payload in the
matching record of the payloads topic (same partition, same transaction; `LogTopics`).
Inputs of one input partition keep their order within each log partition. An input whose dead letter the broker
rejected before (`rejected`, from the failure policy's blame) is dead-lettered as
`unpublishable`, then without its payload, as in the single worker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.compact_set import compact_limit
from neardup_stream.mapping import domain_of
from neardup_stream.models import Parsed
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.home import domain_partition
from neardup_stream.worker.admission import MAX_DLQ_KEY_BYTES, DecideRules, admit, record_times
from neardup_stream.worker.cluster.log_record import POSITION_BITS, decided_record, packed
from neardup_stream.worker.cluster.payloads import Passage, PayloadRecord
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.records import BatchOutput, InputRecord, Rejection, Source

# Room a document's fixed-size fingerprint fields take in a log record (hashes, sizes, time,
# offsets, flags, the passage's source); its id and domain come from its value.
FIXED_BYTES = 512
MAX_DOCUMENTS = 1 << POSITION_BITS  # positions number the documents of a record in 16 bits


class LogTopics(NamedTuple):
    """Where the edge appends: the fingerprint log and the payloads topic."""

    fingerprints: str
    payloads: str


class LogAppend(NamedTuple):
    """One fingerprint-log record of an `Ingested`: where it is among the messages, its
    documents' passages (what its payload record holds) and their fingerprints (a single
    stage votes on them as they are: what the record carries packed, when it carries them)."""

    at: int
    passages: list[Passage]
    fingerprints: FingerprintBatch


@dataclass
class Ingested:
    """What one edge transaction publishes, and the next input offsets it commits."""

    messages: list[OutMessage] = field(default_factory=list)
    # the input of each message: a dead letter's; None for a log or payload record
    sources: list[Source | None] = field(default_factory=list)
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    documents: int = 0
    dead: list[str] = field(default_factory=list)
    appends: list[LogAppend] = field(default_factory=list)  # the log records, in order


def ingest(
    records: Sequence[InputRecord],
    rules: DecideRules,
    fingerprinter: DocumentFingerprinter,
    log: LogTopics,
    log_partitions: int,
    now: float,
    rejected: Mapping[Source, Rejection] | None = None,
    single_stage: bool = False,
) -> Ingested:
    """Parse, dead-letter or fingerprint every record (see the module docstring). For a
    `single_stage` transaction, which votes and decides them itself, no payload records and
    decided log records (`log_record.decided_record`): no role would read more. Those hold all
    of a log partition's documents of the batch (up to `MAX_DOCUMENTS`): no record carries
    their values, and the shard changelog splits what it would not fit
    (`ShardChange.pack_parts`), so the per-record work is done once a batch."""
    admitted = BatchOutput()  # dead letters and offsets
    groups: dict[int, tuple[list[Parsed], list[str], list[InputRecord]]] = {}
    for record in records:
        parsed = admit(admitted, record, rules, rejected or {})
        if parsed is None:
            continue
        domain = domain_of(rules.mapping, parsed, record.key, record.headers)
        docs, domains, kept = groups.setdefault(
            domain_partition(domain, log_partitions), ([], [], [])
        )
        docs.append(parsed)
        domains.append(domain)
        kept.append(record)
    sources: list[Source | None] = list(admitted.message_sources)
    out = Ingested(admitted.messages, sources, admitted.offsets, 0, admitted.dead)
    room = fingerprint_bytes(fingerprinter.config)
    for partition, (docs, domains, kept) in sorted(groups.items()):
        if single_stage:  # no record carries values, the shard changelog splits (docstring)
            chunks = [
                (a, min(a + MAX_DOCUMENTS, len(kept))) for a in range(0, len(kept), MAX_DOCUMENTS)
            ]
        else:
            chunks = _chunks(kept, rules.max_message_bytes, room)
        for a, b in chunks:
            fb = fingerprinter.batch(
                docs[a:b], domains[a:b], np.arange(b - a), now, record_times(kept[a:b])
            )
            chunk = kept[a:b]
            inputs = [r.source for r in chunk]
            value = decided_record(inputs) if single_stage else packed(fb.pack(), inputs)
            passages = [
                Passage(r.source, r.timestamp_ms, carried_key(r.key), r.value or b"") for r in chunk
            ]
            out.appends.append(LogAppend(len(out.messages), passages, fb))
            out.messages.append(OutMessage(log.fingerprints, None, value, partition=partition))
            out.sources.append(None)  # they hold many inputs: none to blame
            if not single_stage:
                payload = PayloadRecord(passages).pack()
                out.messages.append(OutMessage(log.payloads, None, payload, partition=partition))
                out.sources.append(None)
            out.documents += b - a
    return out


def carried_key(key: bytes | None) -> bytes | None:
    """The input key a passage carries to the gather: only a key a dead letter keeps (up to
    `MAX_DLQ_KEY_BYTES`; a pass-through is keyed by the document id). A larger one would
    make a payload record of a value at the size limit larger than the producer may send,
    a record blamed on no input, retried for good."""
    return key if key is None or len(key) <= MAX_DLQ_KEY_BYTES else None


def fingerprint_bytes(config: DedupConfig) -> int:
    """Most room one document's fingerprints take in a log record besides its value and key:
    the sketch, the LSH and SimHash keys, the sorted shingle hashes a small document
    carries for compact-set comparisons (all of them up to `compact_limit` shingles, else the
    smallest: at most 4,096 bytes by default), and the other sketch of one near `odd_limit`
    (with its row number)."""
    bands, _ = config.banding
    keys = bands + config.simhash_k + 1
    sketches = 2 * (config.sketch_bits // 8) + 8
    return sketches + 8 * keys + 8 * compact_limit(config.sketch_bits) + FIXED_BYTES


def _chunks(records: list[InputRecord], limit: int, room: int) -> list[tuple[int, int]]:
    """Ranges of `records` whose fingerprint and payload records each stay within `limit`
    bytes plus the topic's headroom (a lone record always fits: inputs are at most `limit`
    bytes and a carried key at most `MAX_DLQ_KEY_BYTES`), each record counted with its value,
    its carried key and `room` (more than either record's per-document overhead)."""
    out, start, size = [], 0, 0
    for i, r in enumerate(records):
        need = len(r.value or b"") + len(carried_key(r.key) or b"") + room
        if i > start and (size + need > limit or i - start >= MAX_DOCUMENTS):
            out.append((start, i))
            start, size = i, 0
        size += need
    if start < len(records):
        out.append((start, len(records)))
    return out
