"""What a shard or a gather step changed in one batch: the records its changelog keeps.

Replaying its changes in order rebuilds a `ShardVoter` or a `Gatherer` exactly as it was,
without the fingerprint log (`apply`):

- `ShardChange`: per domain, the home documents a shard stored (their `FingerprintRecord`s
  and positions) and the domain's event-time watermark after the batch ("NS", v2);
- `FirstDecisions`: per domain, the first decisions a gather step made and its watermark
  ("NG", v3; v2 rows carry the update flag, v1 rows are read as no updates).

Both carry the domain's quiet-rule mark (`sharded.quiet`): its stream, the stream's clock
just after its last document (`seen`), and whether the domain started afresh before them
(`reset`). Records of the older formats have no mark: they are read with no stream, `seen`
at the watermark and no reset.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass

import numpy as np

from neardup_stream.models import Decision
from neardup_stream.records import FingerprintRecord

_SHARD = struct.Struct("<2sBqII")  # magic, version, watermark, domain bytes, records
_MARK = struct.Struct("<qiB")  # v2, after the header: seen, stream (-1: none), reset
_FIRST = struct.Struct("<2sBI")  # magic, version, JSON bytes
_LEN = struct.Struct("<I")


@dataclass(frozen=True)
class ShardChange:
    """The home documents one shard stored for one domain in one batch."""

    domain: str
    watermark: int
    positions: np.ndarray  # int64[n]
    records: list[FingerprintRecord]
    stream: int | None  # the stream of the domain (None: recorded before streams were)
    seen: int  # the stream's clock just after the domain's last document
    reset: bool  # the domain started afresh before these documents

    def pack(self) -> bytes:
        encoded = [rec.encode() for rec in self.records]
        return self._pack(encoded, self.positions, self.watermark, self.reset)

    def pack_parts(self, limit: int) -> list[bytes]:
        """The change as records of at most ~`limit` bytes each, applying to the same state
        (one record, `pack`, when it fits), as `FirstDecisions.pack_parts` splits: every
        part but the last carries the highest event time of its own records as watermark
        (the state's watermark reaches that anyway while they apply), the last carries
        `watermark`; only the first resets the domain; all carry its stream and `seen`. One
        record larger than `limit` still forms a part of its own."""
        encoded = [rec.encode() for rec in self.records]
        base = 64 + len(self.domain.encode("utf-8", "surrogatepass"))
        spans = _spans([_LEN.size + 8 + len(e) for e in encoded], base, limit)
        return [
            self._pack(
                encoded[a:b],
                self.positions[a:b],
                self.watermark if b == len(encoded) else max(r.ts for r in self.records[a:b]),
                self.reset and a == 0,
            )
            for a, b in spans
        ]

    def _pack(
        self, encoded: list[bytes], positions: np.ndarray, watermark: int, reset: bool
    ) -> bytes:
        """Format "NS" v2 of `encoded` records at `positions`."""
        domain = self.domain.encode("utf-8", "surrogatepass")
        stream = -1 if self.stream is None else self.stream
        parts = [
            _SHARD.pack(b"NS", 2, watermark, len(domain), len(encoded)),
            _MARK.pack(self.seen, stream, reset),
            domain,
            positions.astype("<i8").tobytes(),
        ]
        for data in encoded:
            parts += [_LEN.pack(len(data)), data]
        return b"".join(parts)

    @classmethod
    def unpack(cls, data: bytes) -> ShardChange:
        """Raises ValueError when `data` is not one, another version, or cut short."""
        if len(data) < _SHARD.size or data[:2] != b"NS":
            raise ValueError("not a shard change (no 'NS' header)")
        _, version, watermark, dlen, n = _SHARD.unpack_from(data)
        if version not in (1, 2):
            raise ValueError(f"shard change format {version}, this build reads 1 and 2")
        at = _SHARD.size
        seen, stream, reset = watermark, -1, False
        if version == 2:
            if len(data) < at + _MARK.size:
                raise ValueError("shard change is truncated")
            seen, stream, reset = _MARK.unpack_from(data, at)
            at += _MARK.size
        if len(data) < at + dlen + 8 * n:
            raise ValueError("shard change is truncated")
        domain = data[at : at + dlen].decode("utf-8", "surrogatepass")
        at += dlen
        positions = np.frombuffer(data, "<i8", n, at).astype(np.int64)
        at += 8 * n
        records = []
        for _ in range(n):
            if at + _LEN.size > len(data):
                raise ValueError("shard change is truncated")
            (size,) = _LEN.unpack_from(data, at)
            at += _LEN.size
            if at + size > len(data):
                raise ValueError("shard change is truncated")
            records.append(FingerprintRecord.decode(data[at : at + size]))
            at += size
        mark = (None if stream < 0 else int(stream), int(seen), bool(reset))
        return cls(domain, int(watermark), positions, records, *mark)


def _spans(needs: list[int], base: int, limit: int) -> list[tuple[int, int]]:
    """Ranges of items, in order, each within `limit` bytes with `base` bytes of its own
    (items of `needs` bytes; one item larger than `limit` forms a range of its own)."""
    spans: list[tuple[int, int]] = []
    start, size = 0, base
    for i, need in enumerate(needs):
        if i > start and size + need > limit:
            spans.append((start, i))
            start, size = i, base
        size += need
    return [*spans, (start, len(needs))]


def _json(value: object) -> bytes:
    """Compact JSON (ASCII: other characters, lone surrogates too, escaped)."""
    return json.dumps(value, separators=(",", ":")).encode()


def _list(encoded: list[bytes]) -> bytes:
    """The JSON array of values already encoded."""
    return b"[" + b",".join(encoded) + b"]"


def _row(ts: int, d: Decision) -> list[object]:
    """One first decision as `FirstDecisions` writes it (a JSON array)."""
    return [ts, d.id, d.duplicate_of, d.representative, d.similarity, d.method, d.update]


@dataclass(frozen=True)
class FirstDecisions:
    """The first decisions one gather step made for one domain in one batch."""

    domain: str
    watermark: int
    entries: list[tuple[int, Decision]]  # (event time, decision), in log order
    stream: int | None  # as in `ShardChange`
    seen: int
    reset: bool

    def pack(self) -> bytes:
        rows = _json([_row(ts, d) for ts, d in self.entries])
        return self._pack(rows, self.watermark, self.reset)

    def pack_parts(self, limit: int) -> list[bytes]:
        """The change as records of at most ~`limit` bytes each, applying to the same state
        (one record, `pack`, when it fits); the entries are encoded at once when they fit,
        else each once.

        Every part but the last carries the highest event time of its own entries as watermark
        (the state's watermark reaches that anyway while they apply); the last carries
        `watermark`. Only the first part resets the domain; all carry its stream and `seen`.
        One entry larger than `limit` still forms a part of its own.
        """
        base = 64 + len(_json(self.domain))
        rows = [_row(ts, d) for ts, d in self.entries]
        whole = _json(rows)  # = "[" + the rows joined by "," + "]"
        if base + len(whole) - 1 <= limit or len(rows) < 2:
            return [self._pack(whole, self.watermark, self.reset)]
        encoded = [_json(row) for row in rows]
        return [
            self._pack(
                _list(encoded[a:b]),
                self.watermark if b == len(encoded) else max(ts for ts, _ in self.entries[a:b]),
                self.reset and a == 0,
            )
            for a, b in _spans([len(row) + 1 for row in encoded], base, limit)
        ]

    def _pack(self, rows: bytes, watermark: int, reset: bool) -> bytes:
        """Format "NG" v3: JSON [domain, watermark, rows, stream, seen, reset], `rows` being
        the JSON array of the entries."""
        head = _json([self.domain, watermark])[:-1]
        tail = _json([self.stream, self.seen, reset])[1:]
        body = b"".join((head, b",", rows, b",", tail))
        return _FIRST.pack(b"NG", 3, len(body)) + body

    @classmethod
    def unpack(cls, data: bytes) -> FirstDecisions:
        """Raises ValueError when `data` is not one, another version, or cut short."""
        if len(data) < _FIRST.size or data[:2] != b"NG":
            raise ValueError("not a first-decisions record (no 'NG' header)")
        _, version, size = _FIRST.unpack_from(data)
        if version not in (1, 2, 3):
            raise ValueError(f"first-decisions format {version}, this build reads 1 to 3")
        if len(data) != _FIRST.size + size:
            raise ValueError("first-decisions record is truncated")
        try:
            domain, watermark, rows, *mark = json.loads(data[_FIRST.size :])
            stream, seen, reset = mark if version == 3 else (None, watermark, False)
            entries = [
                (
                    int(ts),
                    Decision(
                        id=i,
                        decision="unique" if dup is None else "duplicate",
                        duplicate_of=dup,
                        representative=rep,
                        similarity=sim,
                        method=method,
                        update=bool(update[0]) if update else False,
                    ),
                )
                for ts, i, dup, rep, sim, method, *update in rows
            ]
            stream = None if stream is None else int(stream)
            seen, reset = int(seen), bool(reset)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"first-decisions record is malformed: {exc}") from exc
        return cls(str(domain), int(watermark), entries, stream, seen, reset)
