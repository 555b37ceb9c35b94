"""The id registry: document id -> ref of the stored document, for idempotent replays.

A one-row `BucketTable` keyed by the 32-bit `hashing.id_key` of the id; since keys can
collide, every hit is confirmed against the id kept in the document store. Entries of
evicted documents are ignored (and compacted away with the index's), and so are superseded
versions of an updated id: an id finds its latest version.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from neardup_stream.fingerprint.hashing import id_key
from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.doc_store import DocStore

_CAP = 1 << 30  # ids are unique: no cap is needed, only room for key collisions


class IdRegistry:
    """Finds the stored ref of a document id."""

    def __init__(self, table: BucketTable | None = None) -> None:
        self.table = table if table is not None else BucketTable(_CAP)

    @classmethod
    def from_entries(cls, keys: np.ndarray, refs: np.ndarray) -> IdRegistry:
        return cls(BucketTable.from_entries(_CAP, 1, keys, refs))

    def find(self, doc_id: str, store: DocStore) -> int | None:
        """The live ref of the latest version of `doc_id`, if any."""
        keys = np.array([id_key(doc_id)], dtype=np.uint32)
        for ref in self.table.probe(keys, store.base, store.count):
            if not store.is_superseded(int(ref)) and store.doc_id(int(ref)) == doc_id:
                return int(ref)
        return None

    def find_all(self, ids: Sequence[str], store: DocStore) -> list[int | None]:
        """`find` for many ids, with one compiled pass to rule out most of them."""
        keys = np.array([id_key(doc_id) for doc_id in ids], dtype=np.uint32)
        hits = self.table.live_hits(keys, store.base, store.count)
        return [self.find(d, store) if h else None for d, h in zip(ids, hits, strict=True)]

    def add(self, refs: Sequence[int], ids: Sequence[str]) -> None:
        """Register just-stored documents."""
        keys = np.array([id_key(doc_id) for doc_id in ids], dtype=np.uint32)
        self.table.insert(keys, np.array(refs, dtype=np.uint32))

    def compact(self, base: int, count: int) -> None:
        self.table.compact(base, count)

    def key_refs(self) -> tuple[np.ndarray, np.ndarray]:
        return self.table.entries()

    @property
    def nbytes(self) -> int:
        return self.table.nbytes
