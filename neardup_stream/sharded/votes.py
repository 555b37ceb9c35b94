"""One shard's votes on one fingerprint batch, and the votes record that carries them.

A vote names the matched document (id and position), the similarity and the method
(`columns.UNIQUE` for no match). `seen` is set, by the document's home shard only, when the
id is already stored there with the same content (or earlier in the batch): the gather step
then replays the document's first decision. `update` is set, by the home shard only, when the
id is stored there with other content: the gather step decides it afresh as an update.

A votes record ("NV", v3: `pack_record` / `unpack_record`) carries the votes of any set of
shards on one batch, each sparse: only the documents whose vote is not the default (a match,
`seen` or `update`), so a replica sends one record per log record whatever the number of
shards it holds, and writing or reading it costs per match, not per shard and document.
v1 and v2 records (one shard each, every document; v1 without `update`) are still read.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

MAGIC = b"NV"
VERSION = 3
_HEADER = struct.Struct("<2sBII")  # magic, version, then v3: documents, shards (v1/2: shard, n)
_SHARD = struct.Struct("<II")  # v3, per shard: shard, entries
_ENTRY = 4 + 8 + 8 + 1 + 1  # v3 entry columns: document, position, similarity, method, flags
_SEEN, _UPDATE = 1, 2  # v3 flag bits
NO_MATCH = -1
MAX_DOCUMENTS = 1 << 16  # a fingerprint-log record numbers its documents in 16 bits


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

    @property
    def nbytes(self) -> int:
        """Bytes these votes hold in memory (a record's are sparse: far fewer on the wire)."""
        arrays = (self.match_position, self.similarity, self.method, self.seen, self.update)
        named = np.flatnonzero(self.match_position != NO_MATCH).tolist()  # (only they have ids)
        ids = sum(len(self.match_ids[i] or "") for i in named)
        return sum(a.nbytes for a in arrays) + 8 * len(self.match_ids) + ids

    def pack(self) -> bytes:
        """A votes record of this shard alone."""
        return pack_record([self])

    @classmethod
    def unpack(cls, data: bytes) -> Votes:
        """The votes of a record of one shard; raises ValueError as `unpack_record` does, or
        when it holds the votes of several."""
        found = unpack_record(data)
        if len(found) != 1:
            raise ValueError(f"votes record of {len(found)} shards, one expected")
        return found[0]


def pack_record(votes: Sequence[Votes]) -> bytes:
    """The votes of several shards (distinct, at least one) on one batch, as one record."""
    if not votes:
        raise ValueError("a votes record holds the votes of at least one shard")
    return _record(_batch_size(votes), [_part(v) for v in votes])


def pack_records(votes: Sequence[Votes], limit: int) -> list[bytes]:
    """The votes of several shards on one batch, in as few records as keep each within
    `limit` bytes (a shard's votes are never split: alone, they may exceed it)."""
    if not votes:
        return []
    n = _batch_size(votes)
    out: list[bytes] = []
    group: list[bytes] = []
    size = _HEADER.size
    for part in (_part(v) for v in votes):
        if group and size + len(part) > limit:
            out.append(_record(n, group))
            group, size = [], _HEADER.size
        group.append(part)
        size += len(part)
    out.append(_record(n, group))
    return out


def _batch_size(votes: Sequence[Votes]) -> int:
    n = votes[0].match_position.size
    if any(v.match_position.size != n for v in votes):
        raise ValueError("votes of one record are on batches of different sizes")
    return n


def _record(n: int, parts: list[bytes]) -> bytes:
    return b"".join([_HEADER.pack(MAGIC, VERSION, n, len(parts)), *parts])


def _part(v: Votes) -> bytes:
    """One shard's votes in a v3 record: the documents whose vote is not the default."""
    flags = (v.seen != 0).astype(np.uint8) | ((v.update != 0).astype(np.uint8) << 1)
    matched = v.match_position != NO_MATCH
    kept = np.flatnonzero(matched | (flags != 0) | (v.method != 0) | (v.similarity != 0))
    named = kept[matched[kept]]
    ids = [(v.match_ids[i] or "").encode("utf-8", "surrogatepass") for i in named.tolist()]
    return b"".join(
        [
            _SHARD.pack(v.shard, kept.size),
            kept.astype("<u4").tobytes(),
            v.match_position[kept].astype("<i8").tobytes(),
            v.similarity[kept].astype("<f8").tobytes(),
            v.method[kept].astype("i1").tobytes(),
            flags[kept].tobytes(),
            np.array([len(b) for b in ids], dtype="<u4").tobytes(),
            *ids,
        ]
    )


def unpack_record(data: bytes) -> list[Votes]:
    """The votes a record holds, one `Votes` per shard; raises ValueError when it is not a
    votes record, is of another version, or is cut short or inconsistent."""
    if len(data) < _HEADER.size or data[:2] != MAGIC:
        raise ValueError("not a votes record (no 'NV' header)")
    _, version, a, b = _HEADER.unpack_from(data)
    if version in (1, 2):
        return [_unpack_dense(data, version, shard=a, n=b)]
    if version != VERSION:
        raise ValueError(f"votes format {version}, this build reads 1 to {VERSION}")
    n, shards = a, b
    if shards == 0:
        raise ValueError("votes record holds no shard")
    if n > MAX_DOCUMENTS:
        raise ValueError(f"votes record on a batch of {n} documents, at most {MAX_DOCUMENTS}")
    at, out = _HEADER.size, []
    for _ in range(shards):
        if len(data) < at + _SHARD.size:
            raise ValueError("votes record is truncated")
        shard, m = _SHARD.unpack_from(data, at)
        at += _SHARD.size
        if len(data) < at + m * _ENTRY:
            raise ValueError("votes record is truncated")
        kept = np.frombuffer(data, "<u4", m, at).astype(np.int64)
        if m and (int(kept.max()) >= n or np.any(np.diff(kept) <= 0)):
            raise ValueError("votes record names documents out of order or past its batch")
        v = Votes.none(int(shard), n)
        v.match_position[kept] = np.frombuffer(data, "<i8", m, at + 4 * m)
        v.similarity[kept] = np.frombuffer(data, "<f8", m, at + 12 * m)
        v.method[kept] = np.frombuffer(data, "i1", m, at + 20 * m)
        flags = np.frombuffer(data, "u1", m, at + 21 * m)
        v.seen[kept] = (flags & _SEEN) != 0
        v.update[kept] = (flags & _UPDATE) != 0
        at += m * _ENTRY
        named = kept[v.match_position[kept] != NO_MATCH].tolist()
        if len(data) < at + 4 * len(named):
            raise ValueError("votes record is truncated")
        lengths = np.frombuffer(data, "<u4", len(named), at).tolist()
        at += 4 * len(named)
        if len(data) < at + sum(lengths):
            raise ValueError("votes record is truncated")
        for i, length in zip(named, lengths, strict=True):
            v.match_ids[i] = data[at : at + length].decode("utf-8", "surrogatepass")
            at += length
        out.append(v)
    if at != len(data):
        raise ValueError("votes record has bytes past its last shard")
    if len({v.shard for v in out}) != len(out):
        raise ValueError("votes record holds one shard twice")
    return out


def _unpack_dense(data: bytes, version: int, shard: int, n: int) -> Votes:
    """A v1 or v2 record: one shard, every document (v1: without `update`)."""
    flags = 2 if version == 2 else 1  # seen, then (v2) update
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
    for length, p in zip(lengths.tolist(), pos.tolist(), strict=True):
        ids.append(data[at : at + length].decode("utf-8", "surrogatepass") if p >= 0 else None)
        at += length
    return Votes(int(shard), pos, sim, method, seen, ids, update)
