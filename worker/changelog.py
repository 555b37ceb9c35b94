"""The changelog's message format: fingerprint records packed many to a message.

kafka-python's cost per produced record is about as large as deciding a document, so the
worker packs the `FingerprintRecord`s of one batch and partition into few messages:
`b"NP"`, a format version byte, a record count, then each record as a 4-byte length and its
bytes, up to `MAX_PACK_BYTES` per message. The key names the batch (`<partition>:<first
offset>`), so a compacted changelog keeps every pack. `unpack` also reads a bare record
(`b"ND..."`, one per message, as earlier versions wrote) and raises ValueError on anything
malformed, which restore counts and skips.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

MAGIC = b"NP"
VERSION = 1
MAX_PACK_BYTES = 512 * 1024
_HEAD = struct.Struct("<2sBI")
_LEN = struct.Struct("<I")
_RECORD_MAGIC = b"ND"


def pack(records: list[bytes], max_bytes: int = MAX_PACK_BYTES) -> Iterator[bytes]:
    """Messages holding `records` in order, each at most about `max_bytes`."""
    start = 0
    while start < len(records):
        size, end = _HEAD.size, start
        while end < len(records) and (end == start or size + 4 + len(records[end]) <= max_bytes):
            size += 4 + len(records[end])
            end += 1
        chunk = records[start:end]
        parts = [_HEAD.pack(MAGIC, VERSION, len(chunk))]
        for r in chunk:
            parts += [_LEN.pack(len(r)), r]
        yield b"".join(parts)
        start = end


def unpack(message: bytes) -> list[bytes]:
    """The records of one changelog message; ValueError if it is malformed."""
    if message[:2] == _RECORD_MAGIC:
        return [message]
    if len(message) < _HEAD.size or message[:2] != MAGIC:
        raise ValueError("not a changelog message")
    _, version, count = _HEAD.unpack_from(message)
    if version != VERSION:
        raise ValueError(f"unsupported changelog pack version {version}")
    out, pos = [], _HEAD.size
    for _ in range(count):
        if pos + 4 > len(message):
            raise ValueError("truncated changelog pack")
        (n,) = _LEN.unpack_from(message, pos)
        pos += 4
        if pos + n > len(message):
            raise ValueError("truncated changelog pack")
        out.append(message[pos : pos + n])
        pos += n
    if pos != len(message):
        raise ValueError("trailing bytes in changelog pack")
    return out
