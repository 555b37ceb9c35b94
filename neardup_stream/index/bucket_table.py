"""A compact chained multimap from 32-bit bucket keys to 32-bit document refs.

This is the storage behind every hot table (LSH bands, SimHash blocks, the id registry):
four flat numpy arrays instead of a Python object per entry, 12 bytes per entry plus a
heads array kept at load <= 4. Inserts respect a per-key cap so boilerplate buckets stay
bounded. Entries of evicted documents are skipped on read and dropped by `compact`.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.index import kernels as _k

_MIN_BUCKETS = 1024


class BucketTable:
    """Multimap uint32 key -> uint32 ref, with lazy deletion by a live window of refs."""

    def __init__(self, cap: int, initial: int = _MIN_BUCKETS) -> None:
        if cap < 1:
            raise ValueError("cap must be >= 1")
        self.cap = cap
        self.heads = np.full(_MIN_BUCKETS, -1, dtype=np.int32)
        self.nxt = np.empty(0, dtype=np.int32)
        self.keys = np.empty(0, dtype=np.uint32)
        self.refs = np.empty(0, dtype=np.uint32)
        self.size = 0
        self.reserve(initial)

    @classmethod
    def from_arrays(cls, cap: int, keys: np.ndarray, refs: np.ndarray) -> BucketTable:
        """Rebuild a table from its (key, ref) entries, e.g. from a snapshot."""
        table = cls(cap, keys.size)
        table.keys[: keys.size] = keys
        table.refs[: refs.size] = refs
        table.size = int(keys.size)
        table._rehash()
        return table

    def __len__(self) -> int:
        return self.size

    @property
    def nbytes(self) -> int:
        """Bytes held by the table's arrays (allocated capacity included)."""
        return self.heads.nbytes + self.nxt.nbytes + self.keys.nbytes + self.refs.nbytes

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the stored keys and refs."""
        return self.keys[: self.size].copy(), self.refs[: self.size].copy()

    def probe(self, keys: np.ndarray) -> np.ndarray:
        """All refs stored under any of `keys` (may repeat; may include evicted refs)."""
        out = np.empty(min(keys.size * self.cap, 4096), dtype=np.uint32)
        n = _k.table_probe(self.heads, self.nxt, self.keys, self.refs, keys, out)
        if n > out.size:
            out = np.empty(n, dtype=np.uint32)
            _k.table_probe(self.heads, self.nxt, self.keys, self.refs, keys, out)
        return out[:n]

    def insert(
        self, keys: np.ndarray, refs: np.ndarray, base: int = 0, count: int = 2**32 - 1
    ) -> None:
        """Store refs[i] under keys[i] unless that key already holds `cap` live refs."""
        self.reserve(keys.size)
        self.size = _k.table_insert(
            self.heads,
            self.nxt,
            self.keys,
            self.refs,
            self.size,
            keys,
            refs,
            self.cap,
            base,
            count,
        )

    def compact(self, base: int, count: int) -> None:
        """Drop entries whose ref is outside the live window [base, base + count)."""
        self.size = _k.table_compact(
            self.heads, self.nxt, self.keys, self.refs, self.size, base, count
        )

    def reserve(self, extra: int) -> None:
        """Room for `extra` more entries, with the heads resized to keep the load bounded."""
        needed = self.size + extra
        if needed > self.keys.size:
            new = max(needed, self.keys.size + self.keys.size // 8, _MIN_BUCKETS)
            for name in ("nxt", "keys", "refs"):
                old = getattr(self, name)
                grown = np.empty(new, dtype=old.dtype)
                grown[: self.size] = old[: self.size]
                setattr(self, name, grown)
        if needed > _k.MAX_LOAD * self.heads.size:
            buckets = self.heads.size
            while needed > _k.MAX_LOAD * buckets:
                buckets *= 2
            self.heads = np.full(buckets, -1, dtype=np.int32)
            self._rehash()

    def _rehash(self) -> None:
        _k.table_rehash(self.heads, self.nxt, self.keys, self.size)
