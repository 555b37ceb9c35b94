"""The sharded candidate index: S shards, each owning the bucket keys with key mod S == shard.

A shard knows nothing about documents beyond their refs: `probe(keys)` returns candidate refs
stored under those keys and `insert(keys, ref)` stores one, so a shard can live in another
process (or worker) as long as keys are routed by `key % S`. LSH band keys and SimHash block
keys share a shard's table; their derivations are seeded apart, and every candidate is
verified against the document store afterwards. In one process the shards are the rows of
one `BucketTable`, and the batch kernels work on all of them at once through `arrays`.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.columns import TableArrays

_ALL = 2**32 - 1


class IndexShard:
    """One shard: a view of row `shard_id` of the index's table."""

    def __init__(self, index: ShardedIndex, shard_id: int) -> None:
        self.index = index
        self.shard_id = shard_id

    def __len__(self) -> int:
        return int(self.index.table.arrays.sizes[self.shard_id])

    def _mine(self, keys: np.ndarray) -> np.ndarray:
        keys = np.asarray(keys, dtype=np.uint32)
        if (self.index.owner(keys) != self.shard_id).any():
            raise ValueError(f"keys routed to another shard than {self.shard_id}")
        return keys

    def probe(self, keys: np.ndarray, base: int = 0, count: int = _ALL) -> np.ndarray:
        """Live candidate refs stored under any of `keys` (unverified; may repeat)."""
        return self.index.table.probe(self._mine(keys), base, count)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        """Store `ref` under `keys` (a key at its cap replaces its oldest ref)."""
        keys = self._mine(keys)
        self.index.table.insert(keys, np.full(keys.size, ref, dtype=np.uint32), base, count)

    def key_refs(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of this shard's keys and refs."""
        return self.index.table.entries(self.shard_id)


class ShardedIndex:
    """Routes keys to shards (key % S) and exposes all shards' arrays to the kernels."""

    def __init__(self, shards: int, bucket_cap: int, table: BucketTable | None = None) -> None:
        if shards < 1:
            raise ValueError("shards must be >= 1")
        self.bucket_cap = bucket_cap
        self.table = table if table is not None else BucketTable(bucket_cap, shards)
        if self.table.rows != shards:
            raise ValueError(f"table has {self.table.rows} rows for {shards} shards")
        self.shards = [IndexShard(self, s) for s in range(shards)]

    @classmethod
    def from_entries(
        cls, shards: int, bucket_cap: int, keys: np.ndarray, refs: np.ndarray
    ) -> ShardedIndex:
        """Rebuild from (key, ref) entries, routed to `shards` shards (a count that may differ
        from the one they were saved under)."""
        return cls(shards, bucket_cap, BucketTable.from_entries(bucket_cap, shards, keys, refs))

    @property
    def arrays(self) -> TableArrays:
        """The kernels' view of every shard (rows of one table)."""
        return self.table.arrays

    def owner(self, keys: np.ndarray) -> np.ndarray:
        """Shard id of each key."""
        return np.asarray(keys, dtype=np.uint32) % np.uint32(len(self.shards))

    def probe(self, keys: np.ndarray, base: int = 0, count: int = _ALL) -> np.ndarray:
        """Live candidate refs from every shard owning one of `keys`."""
        return self.table.probe(keys, base, count)

    def insert(self, keys: np.ndarray, ref: int, base: int, count: int) -> None:
        """Store `ref` under `keys`, each in the shard that owns it."""
        keys = np.asarray(keys, dtype=np.uint32)
        self.table.insert(keys, np.full(keys.size, ref, dtype=np.uint32), base, count)

    def reserve(self, extra: int) -> None:
        """Room for `extra` more entries in every shard."""
        self.table.reserve(extra)

    def compact(self, base: int, count: int) -> None:
        """Drop entries of evicted refs in every shard."""
        self.table.compact(base, count)

    def key_refs(self) -> tuple[np.ndarray, np.ndarray]:
        """Copies of every shard's keys and refs."""
        return self.table.entries()

    @property
    def entries(self) -> int:
        """Entries stored over all shards."""
        return len(self.table)

    @property
    def nbytes(self) -> int:
        return self.table.nbytes
