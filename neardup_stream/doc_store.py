"""The document store: what the index keeps per document, in a ring of numpy columns.

Documents get consecutive 32-bit sequence numbers ("refs"). The live window is
[base, base + count) modulo 2**32; eviction always removes the oldest document, so the store
is a ring and every table entry of an evicted document is recognisable as dead by a range
check, without a per-document flag. Per document it keeps: the 128-bit exact hash, the
SimHash, the 1-bit MinHash sketch, the feature count, a timestamp (seconds), and the original
decision (similarity, method, and the ids it named, in a FIFO byte blob). The compiled kernels
append and evict; this class owns the arrays, the id blob and growth.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from neardup_stream._index_kernels import BASE, COUNT, START

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
        self.window = np.zeros(5, dtype=np.int64)  # base, count, start, watermark, evicted
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
    def base(self) -> int:
        return int(self.window[BASE])

    @property
    def count(self) -> int:
        return int(self.window[COUNT])

    @property
    def capacity(self) -> int:
        return int(self.simhash.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (allocated capacity) and the id blob."""
        return sum(getattr(self, c).nbytes for c in self.COLUMNS) + len(self.blob)

    def alive(self, ref: int) -> bool:
        return ((ref - self.base) & REF_MASK) < self.count

    def slot(self, ref: int) -> int:
        """Physical row of `ref`; also valid for refs evicted since the last `reserve`."""
        delta = ((ref - self.base + 2**31) & REF_MASK) - 2**31
        return (int(self.window[START]) + delta) % self.capacity

    def reserve(self, extra: int) -> None:
        """Make room for `extra` appends without overwriting any row in use."""
        if self.count + extra <= self.capacity:
            return
        order = (int(self.window[START]) + np.arange(self.count)) % self.capacity
        old = {c: getattr(self, c) for c in self.COLUMNS}
        self._allocate(max(self.count + extra, self.capacity + self.capacity // 2))
        for c, arr in old.items():
            getattr(self, c)[: self.count] = arr[order]
        self.window[START] = 0

    def record(self, ref: int, doc_id: str, duplicate_of: str | None, rep: str | None) -> None:
        """Append the ids of a just-stored document to the blob (in ref order)."""
        self.offset[self.slot(ref)] = self.blob_base + len(self.blob)
        parts = [doc_id] if duplicate_of is None else [doc_id, duplicate_of, rep or ""]
        self.blob += _SEP.join(p.encode("utf-8", "surrogatepass") for p in parts)

    def trim_blob(self) -> None:
        """Release the blob prefix of evicted documents once it is large."""
        if self.count == 0:
            self.blob_base += len(self.blob)
            self.blob = bytearray()
            return
        dead = int(self.offset[int(self.window[START])]) - self.blob_base
        if dead > (1 << 20) and dead * 2 > len(self.blob):
            del self.blob[:dead]
            self.blob_base += dead

    def _record_bytes(self, ref: int) -> bytes:
        p = self.slot(ref)
        begin = int(self.offset[p]) - self.blob_base
        nxt = (p + 1) % self.capacity
        following = (ref + 1 - self.base) & REF_MASK
        end = len(self.blob)
        if following < self.count and int(self.offset[nxt]) - self.blob_base > begin:
            end = int(self.offset[nxt]) - self.blob_base
        return bytes(self.blob[begin:end])

    def doc_id(self, ref: int) -> str:
        return self._record_bytes(ref).split(_SEP, 1)[0].decode("utf-8", "surrogatepass")

    def decision(self, ref: int) -> StoredDecision:
        """The original decision of a stored document."""
        parts = [p.decode("utf-8", "surrogatepass") for p in self._record_bytes(ref).split(_SEP)]
        p = self.slot(ref)
        dup = parts[1] if len(parts) > 1 else None
        rep = parts[2] if len(parts) > 2 else None
        return StoredDecision(parts[0], dup, rep, float(self.similarity[p]), int(self.method[p]))

    def representative(self, ref: int) -> str:
        """First document of the cluster `ref` belongs to (itself if it was unique)."""
        d = self.decision(ref)
        return d.representative or d.doc_id

    def state(self) -> dict[str, np.ndarray]:
        """Live columns in ref order plus the blob, for snapshots."""
        order = (int(self.window[START]) + np.arange(self.count)) % self.capacity
        out = {f"store_{c}": getattr(self, c)[order] for c in self.COLUMNS}
        out["store_offset"] = out["store_offset"] - self.blob_base
        out["store_blob"] = np.frombuffer(bytes(self.blob), dtype=np.uint8)
        out["store_window"] = self.window.copy()
        return out

    @classmethod
    def from_state(cls, sketch_words: int, state: dict[str, np.ndarray]) -> DocStore:
        window = state["store_window"].astype(np.int64)
        count = int(window[COUNT])
        store = cls(sketch_words, count)
        for c in cls.COLUMNS:
            getattr(store, c)[:count] = state[f"store_{c}"]
        store.window[:] = window
        store.window[START] = 0
        store.blob = bytearray(state["store_blob"].tobytes())
        return store
