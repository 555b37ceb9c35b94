"""One shard's votes on one fingerprint batch: its best earlier match for every document.

A vote names the matched document (id and position), the similarity and the method
(`columns.UNIQUE` for no match). `seen` is set, by the document's home shard only, when the
id is already stored there with the same content (or earlier in the batch): the gather step
then replays the document's first decision. `update` is set, by the home shard only, when the
id is stored there with other content: the gather step decides it afresh as an update.
`pack`/`unpack` give the bytes of one votes record ("NV", v2; v1 is read as no updates).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

MAGIC = b"NV"
VERSION = 2
_HEADER = struct.Struct("<2sBII")  # magic, version, shard, n
NO_MATCH = -1


class Votes(NamedTuple):
    """Per document of a batch, in batch order (see the module docstring)."""

    shard: int
    match_position: np.ndarray  # int64[n]: position of the matched document, NO_MATCH if none
    similarity: np.ndarray  # float64[n]
    method: np.ndarray  # int8[n]: UNIQUE, EXACT, SIMHASH or MINHASH
    seen: np.ndarray  # bool[n]: (home shard only) the id is stored already, same content
    match_ids: list[str | None]
    update: np.ndarray  # bool[n]: (home shard only) the id is stored with other content

    @classmethod
    def none(cls, shard: int, n: int) -> Votes:
        """`shard`'s votes before it looked: no match, nothing seen, for `n` documents."""
        return cls(
            shard,
            np.full(n, NO_MATCH, dtype=np.int64),
            np.zeros(n, dtype=np.float64),
            np.zeros(n, dtype=np.int8),
            np.zeros(n, dtype=np.bool_),
            [None] * n,
            np.zeros(n, dtype=np.bool_),
        )

    def pack(self) -> bytes:
        n = self.match_position.size
        ids = [m.encode("utf-8", "surrogatepass") if m is not None else b"" for m in self.match_ids]
        return b"".join(
            [
                _HEADER.pack(MAGIC, VERSION, self.shard, n),
                self.match_position.astype("<i8").tobytes(),
                self.similarity.astype("<f8").tobytes(),
                self.method.astype("i1").tobytes(),
                self.seen.astype("u1").tobytes(),
                self.update.astype("u1").tobytes(),
                np.array([len(b) for b in ids], dtype="<u4").tobytes(),
                b"".join(ids),
            ]
        )

    @classmethod
    def unpack(cls, data: bytes) -> Votes:
        """Parse `pack` output; raises ValueError when it is not one or is cut short."""
        if len(data) < _HEADER.size or data[:2] != MAGIC:
            raise ValueError("not a votes record (no 'NV' header)")
        _, version, shard, n = _HEADER.unpack_from(data)
        if version not in (1, VERSION):
            raise ValueError(f"votes format {version}, this build reads 1 and {VERSION}")
        flags = 2 if version == VERSION else 1  # seen, then (v2) update
        at = _HEADER.size
        fixed = n * (8 + 8 + 1 + flags + 4)
        if len(data) < at + fixed:
            raise ValueError("votes record is truncated")
        pos = np.frombuffer(data, "<i8", n, at).astype(np.int64)
        sim = np.frombuffer(data, "<f8", n, at + 8 * n).astype(np.float64)
        method = np.frombuffer(data, "i1", n, at + 16 * n).astype(np.int8)
        seen = np.frombuffer(data, "u1", n, at + 17 * n).astype(np.bool_)
        update = np.zeros(n, dtype=np.bool_)
        if flags == 2:
            update = np.frombuffer(data, "u1", n, at + 18 * n).astype(np.bool_)
        lengths = np.frombuffer(data, "<u4", n, at + (17 + flags) * n)
        at += fixed
        if len(data) != at + int(lengths.sum()):
            raise ValueError("votes record is truncated")
        ids: list[str | None] = []
        for length, p in zip(lengths, pos, strict=True):
            ids.append(
                data[at : at + int(length)].decode("utf-8", "surrogatepass") if p >= 0 else None
            )
            at += int(length)
        return cls(int(shard), pos, sim, method, seen, ids, update)
