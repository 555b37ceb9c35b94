"""The payloads topic: what the gather publishes, kept out of the fingerprint log.

The edge writes, in the transaction that appends a fingerprint-log record to log partition
p, one `PayloadRecord` to partition p of the payloads topic (`cluster.payloads`, by default
`<group>.payloads`): per document its input coordinates, record time, key and value. Only
the gather of log partition p reads it; the shards never do, so a replica that does not
gather reads a few hundred bytes per document instead of the whole input.

Several edges append to one log partition at once, so a payload record's offset need not
follow its fingerprint record's order: `PayloadJoin` holds the payload records read, keyed by
the input of their first document (`JoinKey`, as in the fingerprint record), hands each to
the decision of its fingerprint record, and gives the gather's checkpoint: the lowest
payload offset still needed, and the payload offsets at or past it that were already used
(read again after a restart, they are skipped). Payloads whose log records were deleted by
retention are dropped (`prune_before`, `keep_only`), so the checkpoint stays small.
Format "NP", version 1. Pure: no Kafka.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import NamedTuple

from neardup_stream.worker.cluster.log_record import JoinKey
from neardup_stream.worker.records import Source

MAGIC = b"NP"
VERSION = 1
_HEAD = struct.Struct("<2sBI")  # magic, version, documents
_DOC = struct.Struct("<iqqii")  # input partition, offset, timestamp ms, key length (-1 none),
# value length
DOC_OVERHEAD = _DOC.size


class Passage(NamedTuple):
    """One document's way back out: where it came from and its original bytes (a NamedTuple:
    one is made per document, on the edge and again on the gather)."""

    source: Source
    timestamp_ms: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True)
class PayloadRecord:
    """The payloads of one fingerprint-log record's documents, in the same order."""

    passages: list[Passage]

    @property
    def join_key(self) -> JoinKey:
        return JoinKey.of(self.passages[0].source)

    def pack(self) -> bytes:
        parts = [_HEAD.pack(MAGIC, VERSION, len(self.passages))]
        for p in self.passages:
            key_len = -1 if p.key is None else len(p.key)
            s = p.source
            parts.append(_DOC.pack(s.partition, s.offset, p.timestamp_ms, key_len, len(p.value)))
            parts.append(p.key or b"")
            parts.append(p.value)
        return b"".join(parts)

    @classmethod
    def unpack(cls, data: bytes, input_topic: str) -> PayloadRecord:
        """Raises ValueError: not a payload record, another version, cut short or empty."""
        if len(data) < _HEAD.size or data[:2] != MAGIC:
            raise ValueError("not a payload record (no 'NP' header)")
        _, version, n = _HEAD.unpack_from(data)
        if version != VERSION:
            raise ValueError(f"payload record format {version}, this build reads {VERSION}")
        if n == 0:
            raise ValueError("payload record holds no document")
        at, passages = _HEAD.size, []
        for _ in range(n):
            if at + _DOC.size > len(data):
                raise ValueError("payload record is truncated")
            partition, off, ts, key_len, value_len = _DOC.unpack_from(data, at)
            at += _DOC.size
            key = None if key_len < 0 else data[at : at + key_len]
            at += max(key_len, 0)
            value = data[at : at + value_len]
            at += value_len
            if at > len(data):
                raise ValueError("payload record is truncated")
            passages.append(Passage(Source(input_topic, partition, off), ts, key, value))
        if at != len(data):
            raise ValueError("payload record has trailing bytes")
        return cls(passages)


class PayloadCheckpoint(NamedTuple):
    """Where a gather resumes reading payloads: `start`, skipping the offsets in `used`."""

    start: int
    used: tuple[int, ...] = ()


class Held(NamedTuple):
    offset: int
    passages: list[Passage]
    size: int


@dataclass
class PayloadJoin:
    """The payload records of one log partition read but not yet used (module docstring)."""

    resume: PayloadCheckpoint = field(default_factory=lambda: PayloadCheckpoint(0))
    held: dict[JoinKey, Held] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)  # offsets >= resume.start used since
    position: int = -1  # next payload offset to read (-1: the resume point)
    held_bytes: int = 0

    def __post_init__(self) -> None:
        if self.position < 0:
            self.position = self.resume.start

    def add(self, offset: int, record: PayloadRecord, size: int) -> None:
        """The payload record at `offset` (offsets increase; ones read before are ignored)."""
        if offset < self.position:
            return
        self.position = offset + 1
        if offset in self.resume.used:
            return
        self.held[record.join_key] = Held(offset, record.passages, size)
        self.held_bytes += size

    def take(self, key: JoinKey) -> list[Passage] | None:
        """The payloads of the fingerprint record `key`, now used (None: not read yet)."""
        held = self.held.pop(key, None)
        if held is None:
            return None
        self.held_bytes -= held.size
        self.used.add(held.offset)
        self.prune_before(key)
        return held.passages

    def prune_before(self, key: JoinKey) -> int:
        """Drop payloads of earlier inputs of the same input partition: their fingerprint
        records came before `key`'s (an input partition enters a log partition in order),
        so they were decided already, or deleted by retention. Returns how many."""
        stale = [k for k in self.held if k.partition == key.partition and k.offset < key.offset]
        for k in stale:
            held = self.held.pop(k)
            self.held_bytes -= held.size
            self.used.add(held.offset)
        return len(stale)

    def keep_only(self, keys: set[JoinKey]) -> int:
        """Drop the held payloads of log records not among `keys` (the records read and not
        decided yet), once every log record of a held payload is known to have been read:
        theirs were decided, or deleted by retention. Returns how many."""
        stale = [k for k in self.held if k not in keys]
        for k in stale:
            held = self.held.pop(k)
            self.held_bytes -= held.size
            self.used.add(held.offset)
        return len(stale)

    def checkpoint(self) -> PayloadCheckpoint:
        """The lowest payload offset still needed and the used offsets from it on."""
        start = min((h.offset for h in self.held.values()), default=self.position)
        self.used = {o for o in self.used if o >= start}
        skipped = {o for o in self.resume.used if o >= start}
        return PayloadCheckpoint(start, tuple(sorted(self.used | skipped)))
