"""The document store: what the index keeps per document, in a ring of numpy columns.

Documents get consecutive 32-bit sequence numbers ("refs"). The live window is
[base, base + count) modulo 2**32; eviction always removes the oldest document, so the
store is a ring and every table entry of an evicted document is recognisable as dead by a
range check, without a per-document flag. Per document it keeps: the 128-bit exact hash, the
SimHash, the 1-bit MinHash sketch, the feature count, a timestamp (seconds), and the original
decision (similarity, method, and the ids it named, in a FIFO byte blob).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REF_MASK = 0xFFFFFFFF
_MIN_CAPACITY = 1024
_SEP = b"\x00"


@dataclass(frozen=True)
class StoredDecision:
    """The decision a stored document received when it was first seen."""

    doc_id: str
    duplicate_of: str | None
    representative: str | None
    similarity: float
    method: int


class DocStore:
    """Ring of per-document columns indexed by ref (sequence number)."""

    COLUMNS = ("exact", "simhash", "sketch", "nfeat", "ts", "similarity", "method", "offset")

    def __init__(self, sketch_words: int, capacity: int = _MIN_CAPACITY) -> None:
        self.sketch_words = sketch_words
        self.base = 0
        self.count = 0
        self.start = 0
        self.blob = bytearray()
        self.blob_base = 0
        self._allocate(max(_MIN_CAPACITY, capacity))

    def _allocate(self, capacity: int) -> None:
        self.exact = np.zeros((capacity, 2), dtype=np.uint64)
        self.simhash = np.zeros(capacity, dtype=np.uint64)
        self.sketch = np.zeros((capacity, self.sketch_words), dtype=np.uint64)
        self.nfeat = np.zeros(capacity, dtype=np.int32)
        self.ts = np.zeros(capacity, dtype=np.uint32)
        self.similarity = np.zeros(capacity, dtype=np.float32)
        self.method = np.zeros(capacity, dtype=np.uint8)
        self.offset = np.zeros(capacity, dtype=np.int64)

    @property
    def capacity(self) -> int:
        return int(self.simhash.size)

    @property
    def next_ref(self) -> int:
        return (self.base + self.count) & REF_MASK

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (allocated capacity) and the id blob."""
        return sum(getattr(self, c).nbytes for c in self.COLUMNS) + len(self.blob)

    def alive(self, ref: int) -> bool:
        return ((ref - self.base) & REF_MASK) < self.count

    def slot(self, ref: int) -> int:
        """Physical row of a live ref."""
        return (self.start + ((ref - self.base) & REF_MASK)) % self.capacity

    def append(
        self,
        *,
        doc_id: str,
        duplicate_of: str | None,
        representative: str | None,
        exact: np.ndarray,
        simhash: int,
        sketch: np.ndarray,
        nfeat: int,
        ts: int,
        similarity: float,
        method: int,
    ) -> int:
        """Store one document; returns its ref."""
        if self.count == self.capacity:
            self._grow()
        ref = self.next_ref
        p = (self.start + self.count) % self.capacity
        self.count += 1
        self.exact[p] = exact
        self.simhash[p] = simhash
        self.sketch[p] = sketch
        self.nfeat[p] = nfeat
        self.ts[p] = ts
        self.similarity[p] = similarity
        self.method[p] = method
        self.offset[p] = self.blob_base + len(self.blob)
        parts = [doc_id] if duplicate_of is None else [doc_id, duplicate_of, representative or ""]
        self.blob += _SEP.join(p.encode("utf-8", "surrogatepass") for p in parts)
        return ref

    def _record_bytes(self, ref: int) -> bytes:
        p = self.slot(ref)
        begin = int(self.offset[p]) - self.blob_base
        if ((ref + 1 - self.base) & REF_MASK) < self.count:
            end = int(self.offset[(p + 1) % self.capacity]) - self.blob_base
        else:
            end = len(self.blob)
        return bytes(self.blob[begin:end])

    def doc_id(self, ref: int) -> str:
        return self._record_bytes(ref).split(_SEP, 1)[0].decode("utf-8", "surrogatepass")

    def decision(self, ref: int) -> StoredDecision:
        """The original decision of a live document."""
        parts = [p.decode("utf-8", "surrogatepass") for p in self._record_bytes(ref).split(_SEP)]
        p = self.slot(ref)
        dup = parts[1] if len(parts) > 1 else None
        rep = parts[2] if len(parts) > 2 else None
        return StoredDecision(parts[0], dup, rep, float(self.similarity[p]), int(self.method[p]))

    def representative(self, ref: int) -> str:
        """First document of the cluster `ref` belongs to (itself if it was unique)."""
        d = self.decision(ref)
        return d.representative or d.doc_id

    def oldest_ts(self) -> int:
        return int(self.ts[self.start])

    def evict_oldest(self) -> None:
        if self.count == 0:
            raise IndexError("evict from an empty store")
        self.start = (self.start + 1) % self.capacity
        self.base = (self.base + 1) & REF_MASK
        self.count -= 1
        if self.count == 0:
            self.blob_base += len(self.blob)
            self.blob = bytearray()
            return
        dead = int(self.offset[self.start]) - self.blob_base
        if dead > (1 << 20) and dead * 2 > len(self.blob):
            del self.blob[:dead]
            self.blob_base += dead

    def _grow(self) -> None:
        order = (self.start + np.arange(self.count)) % self.capacity
        old = {c: getattr(self, c) for c in self.COLUMNS}
        self._allocate(max(_MIN_CAPACITY, self.capacity + self.capacity // 2))
        for c, arr in old.items():
            getattr(self, c)[: self.count] = arr[order]
        self.start = 0

    def state(self) -> dict[str, np.ndarray]:
        """Live columns in ref order plus the blob, for snapshots."""
        order = (self.start + np.arange(self.count)) % self.capacity
        out = {f"store_{c}": getattr(self, c)[order] for c in self.COLUMNS}
        out["store_offset"] = out["store_offset"] - self.blob_base
        out["store_blob"] = np.frombuffer(bytes(self.blob), dtype=np.uint8)
        out["store_window"] = np.array([self.base, self.count], dtype=np.int64)
        return out

    @classmethod
    def from_state(cls, sketch_words: int, state: dict[str, np.ndarray]) -> DocStore:
        base, count = (int(x) for x in state["store_window"])
        store = cls(sketch_words, count)
        for c in cls.COLUMNS:
            getattr(store, c)[:count] = state[f"store_{c}"]
        store.base, store.count, store.start = base, count, 0
        store.blob = bytearray(state["store_blob"].tobytes())
        return store
