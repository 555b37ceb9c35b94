"""Which shard a document lives on: its home, a hash of its domain and id."""

from __future__ import annotations

import mmh3

HOME_SEED = 0x5EED_0001


def home_shard(domain: str, doc_id: str, shards: int) -> int:
    """The shard (0..shards-1) that stores document `doc_id` of `domain`."""
    key = f"{domain}\x00{doc_id}".encode("utf-8", "surrogatepass")
    return mmh3.hash(key, HOME_SEED, signed=False) % shards


def domain_partition(domain: str, partitions: int) -> int:
    """The fingerprint-log partition that orders `domain` (all its documents, in one order)."""
    return mmh3.hash(domain.encode("utf-8", "surrogatepass"), HOME_SEED, signed=False) % partitions
