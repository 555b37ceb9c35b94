"""The sharded candidate index: S shards, each owning the bucket keys with key mod S == shard.

A shard knows nothing about documents beyond their refs: `probe(keys)` returns candidate refs
stored under those keys and `insert(keys, ref)` stores one, so a shard can live in another
process (or worker) as long as keys are routed by `key % S`. LSH band keys and SimHash block
keys share a shard's table; their derivations are seeded apart, and every candidate is
verified against the document store afterwards. In one process, the batch kernels work on all
shards at once through `arrays()`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from neardup_stream.index.bucket_table import BucketTable


class IndexShard:
    """One shard: a bucket table of (key, ref) entries."""

    def __init__(self, shard_id: int, bucket_cap: int, table: BucketTable | None = None) -> None:
        self.shard_id = shard_id
        self.table = table if table is not None else BucketTable(bucket_cap)

    def probe(self, keys: np.ndarray) -> np.ndarray:
        """Candidate refs stored under any of `keys` (unverified; may repeat)."""
        return self.table.probe(keys)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        """Store `ref` under `keys` (keys at their cap are left as they are)."""
        self.table.insert(keys, np.full(keys.size, ref, dtype=np.uint32), base, count)


class ShardedIndex:
    """Routes keys to shards (key % S) and exposes all shards' arrays to the kernels."""

    def __init__(self, shards: int, bucket_cap: int) -> None:
        if shards < 1:
            raise ValueError("shards must be >= 1")
        self.shards = [IndexShard(i, bucket_cap) for i in range(shards)]
        self.bucket_cap = bucket_cap

    def owner(self, keys: np.ndarray) -> np.ndarray:
        """Shard id of each key."""
        return keys % np.uint32(len(self.shards))

    def probe(self, keys: np.ndarray) -> np.ndarray:
        """Candidate refs from every shard owning one of `keys`."""
        owner = self.owner(keys)
        parts = [s.probe(keys[owner == s.shard_id]) for s in self.shards]
        return np.concatenate(parts)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        owner = self.owner(keys)
        for shard in self.shards:
            shard.insert(keys[owner == shard.shard_id], ref, base, count)

    def arrays(self) -> tuple[Any, ...]:
        """The kernels' `tables` tuple: per-shard heads, nxt, keys, refs, then the sizes."""
        tables = [s.table for s in self.shards]
        return (
            tuple(t.heads for t in tables),
            tuple(t.nxt for t in tables),
            tuple(t.keys for t in tables),
            tuple(t.refs for t in tables),
            np.array([t.size for t in tables], dtype=np.int64),
        )

    def reserve(self, extra: int) -> None:
        """Room for `extra` more entries in every shard."""
        for shard in self.shards:
            shard.table.reserve(extra)

    def set_sizes(self, sizes: np.ndarray) -> None:
        for shard, size in zip(self.shards, sizes, strict=False):
            shard.table.size = int(size)

    def compact(self, base: int, count: int) -> None:
        """Drop entries of evicted refs in every shard."""
        for shard in self.shards:
            shard.table.compact(base, count)

    @property
    def entries(self) -> int:
        return sum(len(s.table) for s in self.shards)

    @property
    def nbytes(self) -> int:
        return sum(s.table.nbytes for s in self.shards)
