"""The sharded candidate index: S shards, each owning the bucket keys with key mod S == shard.

A shard knows nothing about documents beyond their refs: `probe(keys)` returns candidate refs
stored under those keys and `insert(keys, ref)` stores one, so a shard can live in another
process (or worker) as long as keys are routed by `key % S`. LSH band keys and SimHash block
keys share a shard's table; their derivations are seeded apart, and every candidate is
verified against the document store afterwards.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.bucket_table import BucketTable


class IndexShard:
    """One shard: a bucket table of (key, ref) entries."""

    def __init__(self, shard_id: int, bucket_cap: int, table: BucketTable | None = None) -> None:
        self.shard_id = shard_id
        self.table = table if table is not None else BucketTable(bucket_cap)

    def probe(self, keys: np.ndarray) -> np.ndarray:
        """Candidate refs stored under any of `keys` (unverified; may repeat)."""
        return self.table.probe(keys)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        """Store `ref` under `keys` (buckets at their cap are left as they are)."""
        self.table.insert(keys, ref, base, count)

    @property
    def nbytes(self) -> int:
        return self.table.nbytes


class ShardedIndex:
    """Routes keys to shards and gathers their answers."""

    def __init__(self, shards: int, bucket_cap: int) -> None:
        if shards < 1:
            raise ValueError("shards must be >= 1")
        self.shards = [IndexShard(i, bucket_cap) for i in range(shards)]
        self.bucket_cap = bucket_cap

    def route(self, keys: np.ndarray) -> list[tuple[IndexShard, np.ndarray]]:
        """(shard, its keys) for every shard that owns at least one of `keys`."""
        n = len(self.shards)
        if n == 1:
            return [(self.shards[0], keys)]
        owner = keys % np.uint32(n)
        return [(s, keys[owner == s.shard_id]) for s in self.shards if np.any(owner == s.shard_id)]

    def probe(self, keys: np.ndarray) -> np.ndarray:
        """Candidate refs from every shard owning one of `keys`."""
        parts = [shard.probe(k) for shard, k in self.route(keys)]
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.uint32)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        for shard, k in self.route(keys):
            shard.insert(k, ref, base, count)

    def compact(self, base: int, count: int) -> None:
        """Drop entries of evicted refs in every shard."""
        for shard in self.shards:
            shard.table.compact(base, count)

    @property
    def entries(self) -> int:
        return sum(len(s.table) for s in self.shards)

    @property
    def nbytes(self) -> int:
        return sum(s.nbytes for s in self.shards)
