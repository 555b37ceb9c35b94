"""A fingerprint-log record: a packed `FingerprintBatch` plus what the gather step publishes.

Per document it carries the input coordinates, the record time, the key and the original
value (the unique topic passes it through). Format "NE", version 1.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace

import numpy as np

from neardup_stream.sharded.fingerprints import FingerprintBatch
from worker.records import Source

MAGIC = b"NE"
VERSION = 1
_HEAD = struct.Struct("<2sBI")  # magic, version, length of the fingerprint batch
_DOC = struct.Struct(
    "<iqqii"
)  # input partition, offset, timestamp ms, key length (-1 none), value length
POSITION_BITS = 16  # position = log offset << 16 | index: at most 65,536 documents per record


@dataclass(frozen=True)
class Passage:
    """One document's way back out: where it came from and its original bytes."""

    source: Source
    timestamp_ms: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True)
class Envelope:
    """One fingerprint-log record."""

    fingerprints: FingerprintBatch
    passages: list[Passage]

    def pack(self) -> bytes:
        fb = self.fingerprints.pack()
        parts = [_HEAD.pack(MAGIC, VERSION, len(fb)), fb]
        for p in self.passages:
            key_len = -1 if p.key is None else len(p.key)
            parts.append(
                _DOC.pack(
                    p.source.partition, p.source.offset, p.timestamp_ms, key_len, len(p.value)
                )
            )
            parts.append(p.key or b"")
            parts.append(p.value)
        return b"".join(parts)

    @classmethod
    def unpack(cls, data: bytes, config_id: int, input_topic: str, offset: int) -> Envelope:
        """The record at log `offset`; its documents get positions from that offset.

        Raises:
            ValueError: not an envelope, another version or fingerprint config, or cut short.
        """
        if len(data) < _HEAD.size or data[:2] != MAGIC:
            raise ValueError("not a fingerprint-log record (no 'NE' header)")
        _, version, size = _HEAD.unpack_from(data)
        if version != VERSION:
            raise ValueError(f"fingerprint-log record format {version}, this build reads {VERSION}")
        at = _HEAD.size + size
        fb = FingerprintBatch.unpack(data[_HEAD.size : at], config_id)
        n = len(fb)
        fb = replace(
            fb, positions=(np.int64(offset) << POSITION_BITS) + np.arange(n, dtype=np.int64)
        )
        passages = []
        for _ in range(n):
            if at + _DOC.size > len(data):
                raise ValueError("fingerprint-log record is truncated")
            partition, off, ts, key_len, value_len = _DOC.unpack_from(data, at)
            at += _DOC.size
            key = None if key_len < 0 else data[at : at + key_len]
            at += max(key_len, 0)
            value = data[at : at + value_len]
            at += value_len
            if at > len(data):
                raise ValueError("fingerprint-log record is truncated")
            passages.append(Passage(Source(input_topic, partition, off), ts, key, value))
        return cls(fb, passages)
