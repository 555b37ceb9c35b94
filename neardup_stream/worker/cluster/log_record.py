"""A fingerprint-log record: a packed `FingerprintBatch` and where each document came from.

Every replica's shard role reads every fingerprint-log record, so it carries only what the
shards and the gather's decision need: the fingerprints (a few hundred bytes a document)
and each document's input coordinates (partition, offset; 12 bytes). The payloads (key,
value, record time) travel in the matching record of the payloads topic
(`neardup_stream.worker.cluster.payloads`), which only the gather of the log partition reads; the two are
joined by the first document's input coordinates (`Envelope.join_key`).

Format "NE", version 2. Version 1 carried the payloads inline: this build refuses it in the
shard and gather roles (an upgrade starts a new generation, docs/operations/settings-change.md)
and reads its input coordinates for a handover from such a generation (`sources_of`).

Version 3 is a *decided* record (`decided_record`): a single-stage replica's, which voted and
decided its documents in the transaction that appended it and committed every shard's and
log partition's checkpoint past it. It carries the input coordinates only (a handover reads
them); no role reads it, so the shard and gather roles refuse it like any unreadable record.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.worker.records import Source

MAGIC = b"NE"
VERSION = 2
INLINE_PAYLOADS = 1  # the version that carried each document's key and value inline
DECIDED = 3  # a single-stage replica's record: input coordinates only (module docstring)
_HEAD = struct.Struct("<2sBI")  # magic, version, length of the fingerprint batch
_SOURCES = np.dtype([("partition", "<i4"), ("offset", "<i8")])  # one per document
_V1_DOC = struct.Struct("<iqqii")  # partition, offset, timestamp, key length, value length
POSITION_BITS = 16  # position = log offset << 16 | index: at most 65,536 documents per record


class JoinKey(NamedTuple):
    """The input of a log record's first document: unique per record within a generation
    (every input enters the fingerprint log once), so it names the payload record that
    belongs to the fingerprint record."""

    partition: int
    offset: int

    @classmethod
    def of(cls, source: Source) -> JoinKey:
        return cls(source.partition, source.offset)


@dataclass(frozen=True)
class Envelope:
    """One fingerprint-log record."""

    fingerprints: FingerprintBatch
    sources: list[Source]  # the input of each document, in order

    @property
    def join_key(self) -> JoinKey:
        return JoinKey.of(self.sources[0])

    def pack(self) -> bytes:
        if len(self.sources) != len(self.fingerprints):
            raise ValueError("one source per document")
        return packed(self.fingerprints.pack(), self.sources)

    @staticmethod
    def placed(fb: FingerprintBatch, offset: int, partition: int) -> FingerprintBatch:
        """`fb` as the record at `offset` of log `partition`: its documents' positions count
        from that offset, and the partition is their stream (its clock:
        `neardup_stream.sharded.quiet`)."""
        positions = (np.int64(offset) << POSITION_BITS) + np.arange(len(fb), dtype=np.int64)
        return replace(fb, positions=positions, stream=partition)

    @classmethod
    def unpack(
        cls, data: bytes, config_id: int, input_topic: str, offset: int, partition: int
    ) -> Envelope:
        """The record at `offset` of log `partition`; its documents get positions from that
        offset, and the partition as their stream (its clock: `neardup_stream.sharded.quiet`).

        Raises:
            ValueError: not an envelope, another version or fingerprint config, or cut short.
        """
        version, size = _head(data)
        if version == INLINE_PAYLOADS:
            raise ValueError(
                "fingerprint-log record format 1 (payloads inline, written by an older "
                f"release); this build reads format {VERSION}, with payloads in their own "
                "topic: start a new generation with cluster.handover_from "
                "(docs/operations/settings-change.md)"
            )
        if version == DECIDED:
            raise ValueError(
                "fingerprint-log record decided by a single-stage replica (format 3, no "
                "fingerprints): that transaction committed every shard's and log partition's "
                "checkpoint past it, so reading it means a checkpoint went back"
            )
        if version != VERSION:
            raise ValueError(f"fingerprint-log record format {version}, this build reads {VERSION}")
        at = _HEAD.size + size
        fb = FingerprintBatch.unpack(data[_HEAD.size : at], config_id)
        n = len(fb)
        if len(data) != at + n * _SOURCES.itemsize:
            raise ValueError("fingerprint-log record is truncated")
        coords = np.frombuffer(data, dtype=_SOURCES, count=n, offset=at)
        sources = [Source(input_topic, p, o) for p, o in coords.tolist()]
        return cls(cls.placed(fb, offset, partition), sources)


def packed(fingerprints: bytes, sources: list[Source]) -> bytes:
    """A fingerprint-log record (format 2) of a packed `FingerprintBatch` and its sources."""
    return b"".join([_HEAD.pack(MAGIC, VERSION, len(fingerprints)), fingerprints, _coords(sources)])


def decided_record(sources: list[Source]) -> bytes:
    """The log record of documents a single-stage replica decided (format 3): where each
    came from, no fingerprints (module docstring)."""
    return _HEAD.pack(MAGIC, DECIDED, 0) + _coords(sources)


def _coords(sources: list[Source]) -> bytes:
    """Each document's input coordinates, as a record carries them after its fingerprints."""
    return np.array([(s.partition, s.offset) for s in sources], dtype=_SOURCES).tobytes()


def is_decided(data: bytes) -> bool:
    """Whether `data` is a decided record (`decided_record`)."""
    return len(data) >= _HEAD.size and data[:2] == MAGIC and data[2] == DECIDED


def sources_of(data: bytes, input_topic: str) -> list[Source]:
    """The input of each document of a fingerprint-log record of either format (a handover
    reads the log of an older generation), without its fingerprints.

    Raises:
        ValueError: not an envelope, an unknown version, or cut short.
    """
    version, size = _head(data)
    at = _HEAD.size + size
    if version in (VERSION, DECIDED):
        count, rest = divmod(len(data) - at, _SOURCES.itemsize)
        if rest:
            raise ValueError("fingerprint-log record is truncated")
        coords = np.frombuffer(data, dtype=_SOURCES, count=count, offset=at)
        return [Source(input_topic, int(p), int(o)) for p, o in coords.tolist()]
    if version != INLINE_PAYLOADS:
        raise ValueError(f"fingerprint-log record format {version}, this build reads {VERSION}")
    out = []
    while at < len(data):
        if at + _V1_DOC.size > len(data):
            raise ValueError("fingerprint-log record is truncated")
        partition, off, _, key_len, value_len = _V1_DOC.unpack_from(data, at)
        at += _V1_DOC.size + max(key_len, 0) + value_len
        if at > len(data):
            raise ValueError("fingerprint-log record is truncated")
        out.append(Source(input_topic, partition, off))
    return out


def _head(data: bytes) -> tuple[int, int]:
    """(version, fingerprint batch length) of a record, checking its header."""
    if len(data) < _HEAD.size or data[:2] != MAGIC:
        raise ValueError("not a fingerprint-log record (no 'NE' header)")
    _, version, size = _HEAD.unpack_from(data)
    if _HEAD.size + size > len(data):
        raise ValueError("fingerprint-log record is truncated")
    return version, size
