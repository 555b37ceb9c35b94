"""Compact chained multimaps from 32-bit bucket keys to 32-bit document refs.

This is the storage behind every hot table (LSH bands, SimHash blocks, the id registry):
flat numpy arrays instead of a Python object per entry, 12 bytes per entry plus heads kept
at load <= 4. A table has R rows, each an independent multimap holding the keys with
key % R == row (the shards of `shards.ShardedIndex`; the id registry has one row). All rows
share one capacity, so the compiled kernels see the same array types whatever R is. Inserts
respect a per-key cap on live refs so boilerplate buckets stay bounded (a key at its cap
keeps its newest refs, which outlive older ones under retention). Entries of evicted
documents are skipped on read and dropped by `compact`.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.index import kernels as _k
from neardup_stream.index.columns import TableArrays

_MIN_BUCKETS = 64
_MIN_CAPACITY = 256
_ALL = 2**32 - 1  # a live window covering every ref


class BucketTable:
    """R rows of multimap uint32 key -> uint32 ref, with lazy deletion by a live window."""

    def __init__(self, cap: int, rows: int = 1, initial: int = _MIN_CAPACITY) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        if rows < 1:
            raise ValueError("rows must be >= 1")
        self.cap = cap
        self.arrays = TableArrays(
            heads=np.full((rows, _MIN_BUCKETS), -1, dtype=np.int32),
            nxt=np.empty((rows, 0), dtype=np.int32),
            keys=np.empty((rows, 0), dtype=np.uint32),
            refs=np.empty((rows, 0), dtype=np.uint32),
            sizes=np.zeros(rows, dtype=np.int64),
        )
        self.reserve(initial)

    @classmethod
    def from_entries(cls, cap: int, rows: int, keys: np.ndarray, refs: np.ndarray) -> BucketTable:
        """Rebuild a table from its (key, ref) entries (e.g. from a snapshot), in order."""
        table = cls(cap, rows, 0)
        owner = keys % np.uint32(rows)
        counts = np.bincount(owner, minlength=rows)
        table.reserve(int(counts.max(initial=0)))
        t = table.arrays
        for r in range(rows):
            mine = owner == r
            t.keys[r, : counts[r]] = keys[mine]
            t.refs[r, : counts[r]] = refs[mine]
        t.sizes[:] = counts
        _k.tables_rehash(t)
        return table

    @property
    def rows(self) -> int:
        return int(self.arrays.sizes.size)

    @property
    def capacity(self) -> int:
        """Entries each row can hold before it grows."""
        return int(self.arrays.keys.shape[1])

    def __len__(self) -> int:
        return int(self.arrays.sizes.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays (allocated capacity included)."""
        return sum(a.nbytes for a in self.arrays)

    def entries(self, row: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the stored keys and refs (of one row, or of all rows in row order)."""
        t = self.arrays
        rows = range(self.rows) if row is None else [row]
        keys = [t.keys[r, : t.sizes[r]] for r in rows]
        refs = [t.refs[r, : t.sizes[r]] for r in rows]
        return np.concatenate(keys), np.concatenate(refs)

    def probe(self, keys: np.ndarray, base: int = 0, count: int = _ALL) -> np.ndarray:
        """All live refs stored under any of `keys` (repeated once per key holding them)."""
        keys = np.ascontiguousarray(keys, dtype=np.uint32)
        out = np.empty(min(keys.size * self.cap, 4096), dtype=np.uint32)
        n = _k.tables_probe(self.arrays, keys, base, count, out)
        if n > out.size:
            out = np.empty(n, dtype=np.uint32)
            _k.tables_probe(self.arrays, keys, base, count, out)
        return out[:n]

    def live_hits(self, keys: np.ndarray, base: int, count: int) -> np.ndarray:
        """For each key, how many live refs are stored under it."""
        return _k.live_hits(self.arrays, np.ascontiguousarray(keys, dtype=np.uint32), base, count)

    def insert(self, keys: np.ndarray, refs: np.ndarray, base: int = 0, count: int = _ALL) -> None:
        """Store refs[i] under keys[i]; a key at its cap of live refs replaces its oldest."""
        keys = np.ascontiguousarray(keys, dtype=np.uint32)
        self.reserve(keys.size)
        refs = np.ascontiguousarray(refs, dtype=np.uint32)
        _k.tables_insert(self.arrays, keys, refs, self.cap, base, count)

    def compact(self, base: int, count: int) -> None:
        """Drop entries whose ref is outside the live window [base, base + count)."""
        _k.tables_compact(self.arrays, base, count)

    def reserve(self, extra: int) -> None:
        """Room for `extra` more entries in every row, heads resized to keep the load bounded."""
        t = self.arrays
        needed = int(t.sizes.max(initial=0)) + extra
        keys, nxt, refs, heads = t.keys, t.nxt, t.refs, t.heads
        if needed > self.capacity:
            new = max(needed, self.capacity + self.capacity // 8, _MIN_CAPACITY)
            keys, nxt, refs = (self._grown(a, new) for a in (t.keys, t.nxt, t.refs))
        buckets = heads.shape[1]
        while needed > _k.MAX_LOAD * buckets:
            buckets *= 2
        if buckets != heads.shape[1]:
            heads = np.empty((self.rows, buckets), dtype=np.int32)
        if heads is not t.heads or keys is not t.keys:
            self.arrays = TableArrays(heads, nxt, keys, refs, t.sizes)
            if heads is not t.heads:
                _k.tables_rehash(self.arrays)

    def _grown(self, old: np.ndarray, capacity: int) -> np.ndarray:
        grown = np.empty((self.rows, capacity), dtype=old.dtype)
        used = int(self.arrays.sizes.max(initial=0))
        grown[:, :used] = old[:, :used]
        return grown
