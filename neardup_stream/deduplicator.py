"""The Deduplicator: decide unique / duplicate-of-X for a stream of documents.

A document is a near-duplicate when its Jaccard similarity (over shingles) with ANY earlier
live document reaches the threshold, duplicates included, so drifting chains are caught.
Per batch: fingerprints (one compiled pass) -> id registry (idempotency) -> one compiled
pass that, document by document, evicts what retention excludes, probes the sharded index
(LSH band keys + SimHash pigeonhole block keys), verifies candidates against the document
store (exact hash, 1-bit MinHash sketch estimate), stores and indexes -> decisions. Precise
mode verifies candidates near the threshold by exact Jaccard in Python instead.
Pure Python + numpy + numba: no I/O, no Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.hashing import id_key
from neardup_stream.fingerprint.shingles import sorted_jaccard
from neardup_stream.index import kernels as _k
from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.doc_store import DocStore, StoredDecision
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.models import METHODS, Decision, Document
from neardup_stream.records import FingerprintRecord

UNIQUE, EXACT, SIMHASH, MINHASH = _k.UNIQUE, _k.EXACT, _k.SIMHASH, _k.MINHASH
_REGISTRY_CAP = 1 << 30
_MAX_TS = 2**32 - 1


@dataclass(frozen=True)
class Outcome:
    """A decision and, for a newly stored document, the record that reproduces its state."""

    decision: Decision
    record: FingerprintRecord | None


@dataclass
class _Batch:
    """Column arrays of one batch on their way through the kernels."""

    ids: list[str]
    skip: np.ndarray
    keys: np.ndarray
    nkeys: np.ndarray
    exact: np.ndarray
    simhash: np.ndarray
    sketch: np.ndarray
    nfeat: np.ndarray
    ts: np.ndarray
    lsh_width: int
    feats: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.uint64))
    feat_offsets: np.ndarray | None = None

    def columns(self, end: int) -> tuple[np.ndarray, ...]:
        """Rows [0, end) as the kernels' `docs` tuple."""
        offsets = self.feat_offsets
        if offsets is None:  # replayed records carry no feature hashes
            offsets = np.zeros(len(self.ids) + 1, dtype=np.int64)
        return (
            self.skip[:end],
            self.keys[:end],
            self.nkeys[:end],
            self.exact[:end],
            self.simhash[:end],
            self.sketch[:end],
            self.nfeat[:end],
            self.ts[:end],
            self.feats,
            offsets[: end + 1],
        )

    def __post_init__(self) -> None:
        n = len(self.ids)
        self.ref = np.zeros(n, dtype=np.int64)
        self.match = np.full(n, -1, dtype=np.int64)
        self.sim = np.zeros(n, dtype=np.float64)
        self.method = np.zeros(n, dtype=np.int64)
        self.indexed = np.ones(n, dtype=np.bool_)


def _decision(stored: StoredDecision) -> Decision:
    if stored.method == UNIQUE:
        return Decision(id=stored.doc_id, decision="unique")
    return Decision(
        id=stored.doc_id,
        decision="duplicate",
        duplicate_of=stored.duplicate_of,
        representative=stored.representative,
        similarity=round(stored.similarity, 6),
        method=METHODS[stored.method - 1],
    )


class Deduplicator:
    """Streaming near-duplicate detector over an in-memory sharded index."""

    def __init__(self, config: DedupConfig | None = None) -> None:
        self.config = config or DedupConfig()
        self.fingerprinter = Fingerprinter(self.config)
        self.store = DocStore(
            self.config.sketch_bits // 64, self.config.max_age_seconds is not None
        )
        self.index = ShardedIndex(self.config.shards, self.config.bucket_cap)
        self.registry = BucketTable(_REGISTRY_CAP)
        self.features: dict[int, np.ndarray] = {}
        cfg = self.config
        self._retention = cfg.max_docs is not None or cfg.max_age_seconds is not None

    def __len__(self) -> int:
        return self.store.count

    @property
    def watermark(self) -> int:
        """Latest document time seen (seconds); retention by age counts back from it."""
        return int(self.store.window[_k.WATERMARK])

    def check(self, doc: Document, now: float | None = None) -> Decision:
        """Decide one document (and index it)."""
        return self.process([doc], now=now)[0].decision

    def check_batch(self, docs: Sequence[Document], now: float | None = None) -> list[Decision]:
        """Decide documents in order; later ones see earlier ones of the same batch."""
        return [o.decision for o in self.process(docs, now=now)]

    def lookup(self, doc_id: str) -> Decision | None:
        """The original decision for an id still in the window, if any."""
        ref = self._find(doc_id)
        return None if ref is None else _decision(self.store.decision(ref))

    def _find(self, doc_id: str) -> int | None:
        for ref in self.registry.probe(np.array([id_key(doc_id)], dtype=np.uint32)):
            if self.store.alive(int(ref)) and self.store.doc_id(int(ref)) == doc_id:
                return int(ref)
        return None

    def process(
        self,
        docs: Sequence[Document],
        now: float | None = None,
        records: bool = False,
        times: Sequence[float] | None = None,
    ) -> list[Outcome]:
        """Decide documents in order, optionally returning their fingerprint records.

        Args:
            docs: Documents in stream order.
            now: Seconds used as the time of documents without a timestamp (default: now).
            records: Build a `FingerprintRecord` for every newly stored document.
            times: Per-document fallback times (e.g. Kafka record times), instead of `now`.
        """
        fps = self.fingerprinter.batch([d.text for d in docs])
        default_ts = time.time() if now is None else now
        fallback = times if times is not None else [default_ts] * len(docs)
        ts = [
            d.timestamp.timestamp() if d.timestamp else t
            for d, t in zip(docs, fallback, strict=True)
        ]
        keys = np.concatenate((fps.simhash_keys, fps.lsh_keys), axis=1)
        nkeys = np.asarray(np.where(fps.nfeat > 0, keys.shape[1], fps.simhash_keys.shape[1]))
        batch = _Batch(
            [d.id for d in docs],
            np.zeros(len(docs), dtype=np.bool_),
            keys,
            nkeys,
            fps.exact,
            fps.simhash,
            fps.sketch,
            fps.nfeat,
            np.clip(np.array(ts, dtype=np.float64), 0, _MAX_TS).astype(np.int64),
            fps.lsh_keys.shape[1],
            fps.feats,
            fps.feat_offsets,
        )
        earlier = self._mark_known(batch)
        if self.config.precise:
            self._decide_precise(batch, [d.text for d in docs])
        else:
            self._run(batch, decide=True)
        return self._finish(batch, earlier, records)

    def _mark_known(self, batch: _Batch) -> dict[int, int]:
        """Skip ids already stored or repeated in the batch; returns repeat -> first index."""
        reg, st = self.registry, self.store
        keys = np.array([id_key(doc_id) for doc_id in batch.ids], dtype=np.uint32)
        hits = _k.live_hits(reg.heads, reg.nxt, reg.keys, reg.refs, keys, st.base, st.count)
        first: dict[str, int] = {}
        earlier: dict[int, int] = {}
        for i, doc_id in enumerate(batch.ids):
            if doc_id in first:
                earlier[i] = first[doc_id]
                batch.skip[i] = True
                continue
            first[doc_id] = i
            ref = self._find(doc_id) if hits[i] else None
            if ref is not None:
                batch.ref[i] = ref
                batch.match[i] = -2
                batch.skip[i] = True
        return earlier

    def _run(self, batch: _Batch, decide: bool, begin: int = 0, end: int | None = None) -> None:
        """Run the decide (or append) kernel over batch rows begin..end, growing tables."""
        cfg, st = self.config, self.store
        end = len(batch.ids) if end is None else end
        width = batch.keys.shape[1]
        st.reserve(end - begin)
        docs = batch.columns(end)
        limits = (cfg.bucket_cap, cfg.max_docs or 0, cfg.max_age_seconds or 0)
        rules = (
            cfg.threshold,
            cfg.simhash_k,
            cfg.index_duplicates,
            self._retention,
            self.fingerprinter.compact_max,
        )
        i = begin
        while i < end:
            self.index.reserve((end - i) * width // len(self.index.shards) + 64)
            tables = self.index.arrays()
            if decide:
                out = (batch.ref, batch.match, batch.sim, batch.method)
                i = _k.decide_batch(i, docs, tables, st.arrays(), st.window, limits, rules, out)
            else:
                decided = (batch.sim[:end], batch.method[:end], batch.indexed[:end])
                i = _k.append_batch(
                    i, docs, decided, tables, st.arrays(), st.window, limits, batch.ref
                )
            self.index.set_sizes(tables[4])

    def _decide_precise(self, batch: _Batch, texts: list[str]) -> None:
        """Per document: candidates near the threshold are verified by exact Jaccard."""
        cfg, st = self.config, self.store
        buf = np.empty(batch.keys.shape[1] * cfg.bucket_cap * 4 + 64, dtype=np.uint32)
        docs = batch.columns(len(batch.ids))
        for i in range(len(batch.ids)):
            if batch.skip[i]:
                continue
            st.window[_k.WATERMARK] = max(int(st.window[_k.WATERMARK]), int(batch.ts[i]))
            _k.evict(st.window, st.ts, st.capacity, cfg.max_docs or 0, cfg.max_age_seconds or 0)
            feats = self.fingerprinter.features(texts[i])
            cands = _k.probe_verify(
                i,
                docs,
                self.index.arrays(),
                st.arrays(),
                st.window,
                cfg.threshold - cfg.precise_margin,
                buf,
                self.fingerprinter.compact_max,
            )
            self._choose_exactly(batch, i, feats, *cands)
            self._run(batch, decide=False, begin=i, end=i + 1)
            self.features[int(batch.ref[i])] = feats
        for ref in [r for r in self.features if not st.alive(r)]:
            del self.features[ref]

    def _choose_exactly(
        self,
        batch: _Batch,
        i: int,
        feats: np.ndarray,
        refs: np.ndarray,
        sims: np.ndarray,
        hams: np.ndarray,
        same: np.ndarray,
    ) -> None:
        cfg = self.config
        if same.any():
            j, sim, method = int(np.argmax(same)), 1.0, EXACT
        else:
            exact = np.array(
                [
                    sorted_jaccard(feats, self.features[int(r)]) if int(r) in self.features else s
                    for r, s in zip(refs, sims, strict=False)
                ]
            )
            if exact.size == 0 or exact.max() < cfg.threshold:
                return
            j = int(np.argmax(exact))
            sim, method = float(exact[j]), SIMHASH if hams[j] <= cfg.simhash_k else MINHASH
        batch.match[i], batch.sim[i], batch.method[i] = refs[j], sim, method
        batch.indexed[i] = self._indexes(method)

    def _indexes(self, method: int) -> bool:
        """Whether a document decided with `method` goes into the tables (the kernel's rule).

        Exact copies add nothing to the tables unless retention may evict their original.
        """
        cfg = self.config
        return method == UNIQUE or (cfg.index_duplicates and (method != EXACT or self._retention))

    def _finish(self, batch: _Batch, earlier: dict[int, int], records: bool) -> list[Outcome]:
        st, cfg = self.store, self.config
        blocks = batch.keys.shape[1] - batch.lsh_width
        out: list[Outcome] = []
        stored: list[tuple[int, str]] = []
        for i, doc_id in enumerate(batch.ids):
            if i in earlier:
                out.append(Outcome(out[earlier[i]].decision, None))
                continue
            if batch.match[i] == -2:
                out.append(Outcome(_decision(st.decision(int(batch.ref[i]))), None))
                continue
            ref, match, method = int(batch.ref[i]), int(batch.match[i]), int(batch.method[i])
            dup = rep = None
            if match < 0:
                decision = Decision(id=doc_id, decision="unique")
            else:
                dup, rep = st.doc_id(match), st.representative(match)
                decision = Decision(
                    id=doc_id,
                    decision="duplicate",
                    duplicate_of=dup,
                    representative=rep,
                    similarity=round(float(np.float32(batch.sim[i])), 6),
                    method=METHODS[method - 1],
                )
            st.record(ref, doc_id, dup, rep)  # before later documents of the batch read it
            stored.append((ref, doc_id))
            record = None
            if records:
                record = FingerprintRecord(
                    config_id=cfg.fingerprint_id,
                    doc_id=doc_id,
                    duplicate_of=dup,
                    representative=rep,
                    ts=int(batch.ts[i]),
                    method=method,
                    similarity=float(batch.sim[i]),
                    nfeat=int(batch.nfeat[i]),
                    exact=(int(batch.exact[i, 0]), int(batch.exact[i, 1])),
                    simhash=int(batch.simhash[i]),
                    lsh_keys=batch.keys[i, blocks : batch.nkeys[i]],
                    simhash_keys=batch.keys[i, :blocks],
                    sketch=batch.sketch[i],
                    indexed=self._indexes(method),
                )
            out.append(Outcome(decision, record))
        self._remember(stored)
        return out

    def _remember(self, stored: list[tuple[int, str]]) -> None:
        """Register the (ref, id) of just-stored documents, then settle evictions."""
        keys = np.array([id_key(doc_id) for _, doc_id in stored], dtype=np.uint32)
        refs = np.array([ref for ref, _ in stored], dtype=np.uint32)
        self.registry.insert(keys, refs)
        self._after_evictions()

    def _after_evictions(self) -> None:
        st = self.store
        st.trim_blob()
        if st.window[_k.EVICTED] > max(4096, st.count):
            self.index.compact(st.base, st.count)
            self.registry.compact(st.base, st.count)
            st.window[_k.EVICTED] = 0

    def apply_records(self, records: Iterable[FingerprintRecord]) -> int:
        """Replay changelog records in order (no verification); returns how many were new."""
        recs = list(records)
        for rec in recs:
            if rec.config_id != self.config.fingerprint_id:
                raise ValueError(
                    f"record was made under fingerprint config {rec.config_id:#010x}, "
                    f"this index uses {self.config.fingerprint_id:#010x}"
                )
        if not recs:
            return 0
        blocks, bands = recs[0].simhash_keys.size, self.fingerprinter.bands
        keys = np.zeros((len(recs), blocks + bands), dtype=np.uint32)
        for i, r in enumerate(recs):
            keys[i, : blocks + r.lsh_keys.size] = np.concatenate((r.simhash_keys, r.lsh_keys))
        batch = _Batch(
            [r.doc_id for r in recs],
            np.zeros(len(recs), dtype=np.bool_),
            keys,
            np.array([blocks + r.lsh_keys.size for r in recs], dtype=np.int64),
            np.array([r.exact for r in recs], dtype=np.uint64).reshape(-1, 2),
            np.array([r.simhash for r in recs], dtype=np.uint64),
            np.stack([r.sketch for r in recs]),
            np.array([r.nfeat for r in recs], dtype=np.int64),
            np.array([r.ts for r in recs], dtype=np.int64),
            bands,
        )
        batch.sim[:] = [r.similarity for r in recs]
        batch.method[:] = [r.method for r in recs]
        batch.indexed[:] = [r.indexed for r in recs]
        self._mark_known(batch)
        self._run(batch, decide=False)
        stored = []
        for i, rec in enumerate(recs):
            if not batch.skip[i]:
                ref = int(batch.ref[i])
                self.store.record(ref, rec.doc_id, rec.duplicate_of, rec.representative)
                stored.append((ref, rec.doc_id))
        self._remember(stored)
        return len(stored)

    def apply_record(self, rec: FingerprintRecord) -> bool:
        """Replay one changelog record; False if its id is already known."""
        return self.apply_records([rec]) == 1

    def index_bytes(self) -> int:
        """Bytes held by everything the index keeps (allocated capacity included)."""
        feats = sum(f.nbytes for f in self.features.values())
        return self.store.nbytes + self.index.nbytes + self.registry.nbytes + feats

    def stats(self) -> dict[str, int]:
        """Document count, table entries and memory, for metrics and reports."""
        return {
            "documents": self.store.count,
            "index_entries": self.index.entries,
            "index_bytes": self.index_bytes(),
        }
