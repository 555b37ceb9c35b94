"""The document store: what the index keeps per document, in a ring of numpy columns.

Documents get consecutive 32-bit sequence numbers ("refs"). The live window is
[base, base + count) modulo 2**32; eviction always removes the oldest document, so the store
is a ring and every table entry of an evicted document is recognisable as dead by a range
check, without a per-document flag. Per document it keeps: the 128-bit exact hash, the
SimHash, the 1-bit MinHash sketch, its shingle-set size (for the exact size filter
J <= min/max; saturating at 65535), a timestamp (seconds, only when
retention by age needs it), the original decision (similarity, method, whether it was an
update, and the ids it named, as length-prefixed records in a FIFO byte blob addressed by
32-bit offsets), and whether a later version of its id superseded it (an update; a
superseded document stays in the ring until evicted, but is nobody's match). The
compiled kernels append and evict; this class owns the arrays, the id blob and growth
(in steps of 1/8 of the capacity, so little is allocated but unused).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from neardup_stream.index.columns import StoreColumns, new_window, window_from

REF_MASK = 0xFFFFFFFF
_MIN_CAPACITY = 16  # small: a shard keeps an engine per domain, most domains hold few documents
_DOUBLING_UPTO = 1024  # small stores double, larger ones grow by an eighth
_SEP = b"\x00"
_LEN = 2  # bytes of the length prefix of a blob record
_BLOB_LIMIT = 1 << 32  # the live blob must stay addressable by 32-bit offsets


Names = tuple[str, str | None, str | None]  # (id, duplicate_of, representative)
Refs = TypeVar("Refs", int, np.ndarray)


@dataclass(frozen=True)
class StoredDecision:
    """The decision a stored document received when it was first seen."""

    doc_id: str
    duplicate_of: str | None
    representative: str | None
    similarity: float
    method: int
    update: bool  # it was a new version of an id stored before


class DocStore:
    """Ring of per-document columns indexed by ref (sequence number)."""

    COLUMNS = (
        "exact",
        "simhash",
        "sketch",
        "nfeat",
        "ts",
        "similarity",
        "method",
        "update",
        "superseded",
        "offset",
    )
    FLAGS = ("update", "superseded")  # absent from snapshots made before updates: all False

    def __init__(self, sketch_words: int, keep_time: bool, capacity: int = _MIN_CAPACITY) -> None:
        self.sketch_words = sketch_words
        self.keep_time = keep_time
        self.window = new_window()  # see `columns`
        self.blob = bytearray()
        self.blob_base = 0
        self._allocate(max(_MIN_CAPACITY, capacity))

    def _allocate(self, capacity: int) -> None:
        self.exact = np.zeros((capacity, 2), dtype=np.uint64)
        self.simhash = np.zeros(capacity, dtype=np.uint64)
        self.sketch = np.zeros((capacity, self.sketch_words), dtype=np.uint64)
        self.nfeat = np.zeros(capacity, dtype=np.uint16)  # set size, saturating
        self.ts = np.zeros(capacity if self.keep_time else 1, dtype=np.uint32)
        self.similarity = np.zeros(capacity, dtype=np.float32)
        self.method = np.zeros(capacity, dtype=np.uint8)
        self.update = np.zeros(capacity, dtype=np.bool_)
        self.superseded = np.zeros(capacity, dtype=np.bool_)
        self.offset = np.zeros(capacity, dtype=np.uint32)

    @property
    def columns(self) -> tuple[str, ...]:
        return self.COLUMNS if self.keep_time else tuple(c for c in self.COLUMNS if c != "ts")

    @property
    def base(self) -> int:
        return int(self.window["base"][0])

    @property
    def count(self) -> int:
        return int(self.window["count"][0])

    @property
    def capacity(self) -> int:
        return int(self.simhash.size)

    @property
    def nbytes(self) -> int:
        """Bytes held by the columns (allocated capacity) and the id blob."""
        return sum(getattr(self, c).nbytes for c in self.COLUMNS) + len(self.blob)

    def _rel(self, offset: int) -> int:
        """Position in the blob of a stored 32-bit offset."""
        return (int(offset) - self.blob_base) & REF_MASK

    def arrays(self) -> StoreColumns:
        """The columns as the kernels see them."""
        return StoreColumns(
            self.exact,
            self.simhash,
            self.sketch,
            self.nfeat,
            self.ts,
            self.similarity,
            self.method,
            self.update,
            self.superseded,
        )

    def exact_of(self, ref: int) -> tuple[int, int]:
        """The 128-bit exact hash (content digest of the normalised text) of stored `ref`."""
        row = self.exact[self.slot(ref)]
        return int(row[0]), int(row[1])

    def is_superseded(self, ref: int) -> bool:
        return bool(self.superseded[self.slot(ref)])

    def alive(self, ref: int) -> bool:
        return ((ref - self.base) & REF_MASK) < self.count

    def slot(self, ref: int) -> int:
        """Physical row of `ref`; also valid for refs evicted since the last `reserve`."""
        return int(self.slots(ref))

    def slots(self, refs: Refs) -> Refs:
        """`slot` of a ref, or of each of an int64 array of refs."""
        delta = ((refs - self.base + 2**31) & REF_MASK) - 2**31
        return (int(self.window["start"][0]) + delta) % self.capacity

    def reserve(self, extra: int) -> None:
        """Make room for `extra` appends without overwriting any row in use."""
        count, capacity = self.count, self.capacity
        if count + extra <= capacity:
            return
        start = int(self.window["start"][0])
        head = min(count, capacity - start)  # rows from start to the ring's end; then wrapped
        old = {c: getattr(self, c) for c in self.columns}
        grown = capacity + capacity // 8
        self._allocate(max(count + extra, grown, min(2 * capacity, _DOUBLING_UPTO)))
        for c, arr in old.items():  # two block copies, oldest first (no gather by index)
            new = getattr(self, c)
            new[:head] = arr[start : start + head]
            new[head:count] = arr[: count - head]
        self.window["start"][0] = 0

    def record(self, ref: int, doc_id: str, duplicate_of: str | None, rep: str | None) -> None:
        """Append the ids of one just-stored document (a batch: `record_all`, one call)."""
        self.record_all([ref], [(doc_id, duplicate_of, rep)])

    def record_all(self, refs: list[int], names: list[Names]) -> None:
        """Append the ids of just-stored documents to the blob, in ref order: each one's
        own id and, for a duplicate, the ids of its match and of that cluster's first.

        Raises:
            OverflowError: the ids of live documents would pass 4 GiB, beyond what 32-bit
                offsets address (lower `max_docs` or shorten the ids).
        """
        if not refs:
            return
        bodies = [
            doc_id.encode("utf-8", "surrogatepass")
            if dup is None
            else _SEP.join(p.encode("utf-8", "surrogatepass") for p in (doc_id, dup, rep or ""))
            for doc_id, dup, rep in names
        ]
        sizes = [_LEN + len(b) for b in bodies]
        if len(self.blob) + sum(sizes) > _BLOB_LIMIT:
            raise OverflowError(
                "the ids of live documents would pass 4 GiB, beyond the store's 32-bit "
                "offsets; lower max_docs (or max_age_seconds) or shorten the ids"
            )
        starts = self.blob_base + len(self.blob) + np.cumsum([0, *sizes[:-1]], dtype=np.int64)
        self.offset[self.slots(np.asarray(refs, dtype=np.int64))] = starts & REF_MASK
        self.blob += b"".join(len(b).to_bytes(_LEN, "little") + b for b in bodies)

    def names(self, ref: int) -> tuple[str, str]:
        """The id of stored `ref` and of the first document of its cluster (itself if it
        was unique)."""
        parts = self._record_bytes(ref).split(_SEP)
        own = parts[0].decode("utf-8", "surrogatepass")
        first = parts[2].decode("utf-8", "surrogatepass") if len(parts) > 2 else ""
        return own, first or own

    def trim_blob(self) -> None:
        """Release the blob prefix of evicted documents once it is large."""
        if self.count == 0:
            self.blob_base += len(self.blob)
            self.blob = bytearray()
            return
        dead = self._rel(self.offset[int(self.window["start"][0])])
        if dead > (1 << 20) and dead * 2 > len(self.blob):
            del self.blob[:dead]
            self.blob_base += dead

    def _record_bytes(self, ref: int) -> bytes:
        begin = self._rel(self.offset[self.slot(ref)])
        size = int.from_bytes(self.blob[begin : begin + _LEN], "little")
        return bytes(self.blob[begin + _LEN : begin + _LEN + size])

    def doc_id(self, ref: int) -> str:
        return self._record_bytes(ref).split(_SEP, 1)[0].decode("utf-8", "surrogatepass")

    def decision(self, ref: int) -> StoredDecision:
        """The original decision of a stored document."""
        parts = [p.decode("utf-8", "surrogatepass") for p in self._record_bytes(ref).split(_SEP)]
        p = self.slot(ref)
        dup = parts[1] if len(parts) > 1 else None
        rep = parts[2] if len(parts) > 2 else None
        return StoredDecision(
            parts[0], dup, rep, float(self.similarity[p]), int(self.method[p]), bool(self.update[p])
        )

    def representative(self, ref: int) -> str:
        """First document of the cluster `ref` belongs to (itself if it was unique)."""
        return self.names(ref)[1]

    def state(self) -> dict[str, np.ndarray]:
        """Live columns in ref order plus the blob, for snapshots."""
        order = (int(self.window["start"][0]) + np.arange(self.count)) % self.capacity
        out = {f"store_{c}": getattr(self, c)[order] for c in self.columns}
        out["store_offset"] = out["store_offset"] - np.uint32(self.blob_base & REF_MASK)
        out["store_blob"] = np.frombuffer(bytes(self.blob), dtype=np.uint8)
        out["store_window"] = self.window.copy()
        return out

    @classmethod
    def from_state(
        cls, sketch_words: int, keep_time: bool, state: dict[str, np.ndarray]
    ) -> DocStore:
        window = window_from(state["store_window"])
        count = int(window["count"][0])
        store = cls(sketch_words, keep_time, count)
        for c in store.columns:
            if f"store_{c}" in state:
                getattr(store, c)[:count] = state[f"store_{c}"]
            elif c in cls.FLAGS:  # a snapshot made before updates existed: none were made
                getattr(store, c)[:count] = False
            else:  # a snapshot taken without timestamps: treat everything as current
                getattr(store, c)[:count] = window["watermark"][0]
        store.window[:] = window
        store.window["start"][0] = 0
        store.blob = bytearray(state["store_blob"].tobytes())
        return store
