"""The Deduplicator: decide unique / duplicate-of-X for a stream of documents.

A document is a near-duplicate when its Jaccard similarity (over shingles) with ANY earlier
live document reaches the threshold, duplicates included, so drifting chains are caught.
Pipeline per document: id registry (idempotency) -> candidates from the sharded index (LSH
band keys + SimHash pigeonhole block keys) -> verification against the document store (exact
hash, 1-bit MinHash sketch estimate; exact Jaccard near the threshold in precise mode) ->
store + index. Pure Python + numpy: no I/O, no Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from neardup_stream import _kernels
from neardup_stream.bucket_table import BucketTable
from neardup_stream.config import DedupConfig
from neardup_stream.doc_store import DocStore, StoredDecision
from neardup_stream.fingerprint import Fingerprinter, Fingerprints
from neardup_stream.hashing import id_key
from neardup_stream.models import METHODS, Decision, Document
from neardup_stream.records import FingerprintRecord
from neardup_stream.shard import ShardedIndex
from neardup_stream.shingles import sorted_jaccard

UNIQUE, EXACT, SIMHASH, MINHASH = 0, 1, 2, 3
_REGISTRY_CAP = 1 << 30
_MAX_TS = 2**32 - 1


@dataclass(frozen=True)
class Outcome:
    """A decision and, for a newly stored document, the record that reproduces its state."""

    decision: Decision
    record: FingerprintRecord | None


@dataclass(frozen=True)
class _Match:
    ref: int
    similarity: float
    method: int


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
        self.store = DocStore(self.config.sketch_bits // 64)
        self.index = ShardedIndex(self.config.shards, self.config.bucket_cap)
        self.registry = BucketTable(_REGISTRY_CAP)
        self.features: dict[int, np.ndarray] = {}
        self.watermark = 0
        self._evicted_since_compact = 0

    def __len__(self) -> int:
        return self.store.count

    def check(self, doc: Document, now: float | None = None) -> Decision:
        """Decide one document (and index it)."""
        return self.process([doc], now=now)[0].decision

    def check_batch(self, docs: Sequence[Document], now: float | None = None) -> list[Decision]:
        """Decide documents in order; later ones see earlier ones of the same batch."""
        return [o.decision for o in self.process(docs, now=now)]

    def process(
        self, docs: Sequence[Document], now: float | None = None, records: bool = False
    ) -> list[Outcome]:
        """Decide documents in order, optionally returning their fingerprint records.

        Args:
            docs: Documents in stream order.
            now: Wall-clock seconds used for documents without a timestamp.
            records: Build a `FingerprintRecord` for every newly stored document.
        """
        normalized = [self.fingerprinter.normalize(d.text) for d in docs]
        fps = self.fingerprinter.batch_normalized(normalized)
        default_ts = time.time() if now is None else now
        out: list[Outcome] = []
        for i, doc in enumerate(docs):
            known = self.lookup(doc.id)
            if known is not None:
                out.append(Outcome(known, None))
                continue
            ts = doc.timestamp.timestamp() if doc.timestamp is not None else default_ts
            self._advance(int(min(max(ts, 0), _MAX_TS)))
            feats = self.fingerprinter.features(normalized[i]) if self.config.precise else None
            match = self._best_match(fps, i, feats)
            out.append(self._store(doc.id, fps, i, match, feats, records))
        return out

    def lookup(self, doc_id: str) -> Decision | None:
        """The original decision for an id still in the window, if any."""
        for ref in self.registry.probe(np.array([id_key(doc_id)], dtype=np.uint32)):
            if self.store.alive(int(ref)) and self.store.doc_id(int(ref)) == doc_id:
                return _decision(self.store.decision(int(ref)))
        return None

    def _keys(self, fps: Fingerprints, i: int) -> np.ndarray:
        if fps.nfeat[i] == 0:
            return fps.simhash_keys[i]
        return np.concatenate((fps.lsh_keys[i], fps.simhash_keys[i]))

    def _best_match(self, fps: Fingerprints, i: int, feats: np.ndarray | None) -> _Match | None:
        cfg, st = self.config, self.store
        cands = self.index.probe(self._keys(fps, i))
        if cands.size == 0:
            return None
        min_sim = cfg.threshold - cfg.precise_margin if cfg.precise else cfg.threshold
        refs, sims, hams, exact = _kernels.verify(
            cands,
            st.base,
            st.count,
            st.start,
            fps.sketch[i],
            fps.simhash[i],
            fps.exact[i],
            fps.nfeat[i],
            st.sketch,
            st.simhash,
            st.exact,
            st.nfeat,
            min_sim,
        )
        if refs.size == 0:
            return None
        if exact.any():
            return _Match(int(refs[np.argmax(exact)]), 1.0, EXACT)
        if feats is not None:
            sims = sims.copy()
            for j, ref in enumerate(refs):
                other = self.features.get(int(ref))
                if other is not None:
                    sims[j] = sorted_jaccard(feats, other)
            if sims.max() < cfg.threshold:
                return None
        best = int(np.argmax(sims))
        method = SIMHASH if hams[best] <= cfg.simhash_k else MINHASH
        return _Match(int(refs[best]), float(sims[best]), method)

    def _store(
        self,
        doc_id: str,
        fps: Fingerprints,
        i: int,
        match: _Match | None,
        feats: np.ndarray | None,
        records: bool,
    ) -> Outcome:
        st, cfg = self.store, self.config
        if match is None:
            decision = Decision(id=doc_id, decision="unique")
            dup = rep = None
            method, sim = UNIQUE, 0.0
        else:
            dup, rep = st.doc_id(match.ref), st.representative(match.ref)
            method, sim = match.method, match.similarity
            decision = Decision(
                id=doc_id,
                decision="duplicate",
                duplicate_of=dup,
                representative=rep,
                similarity=round(sim, 6),
                method=METHODS[method - 1],
            )
        indexed = match is None or (
            cfg.index_duplicates
            and (method != EXACT or cfg.max_docs is not None or cfg.max_age_seconds is not None)
        )
        record = FingerprintRecord(
            config_id=cfg.fingerprint_id,
            doc_id=doc_id,
            duplicate_of=dup,
            representative=rep,
            ts=self.watermark,
            method=method,
            similarity=sim,
            nfeat=int(fps.nfeat[i]),
            exact=(int(fps.exact[i, 0]), int(fps.exact[i, 1])),
            simhash=int(fps.simhash[i]),
            lsh_keys=fps.lsh_keys[i] if fps.nfeat[i] else fps.lsh_keys[i][:0],
            simhash_keys=fps.simhash_keys[i],
            sketch=fps.sketch[i],
            indexed=indexed,
        )
        self._insert(record, feats)
        return Outcome(decision, record if records else None)

    def _insert(self, rec: FingerprintRecord, feats: np.ndarray | None) -> None:
        st = self.store
        ref = st.append(
            doc_id=rec.doc_id,
            duplicate_of=rec.duplicate_of,
            representative=rec.representative,
            exact=np.array(rec.exact, dtype=np.uint64),
            simhash=rec.simhash,
            sketch=rec.sketch,
            nfeat=rec.nfeat,
            ts=rec.ts,
            similarity=rec.similarity,
            method=rec.method,
        )
        if rec.indexed:
            keys = np.concatenate((rec.lsh_keys, rec.simhash_keys))
            self.index.insert(keys, ref, st.base, st.count)
        self.registry.insert(np.array([id_key(rec.doc_id)], dtype=np.uint32), ref)
        if feats is not None:
            self.features[ref] = feats

    def apply_record(self, rec: FingerprintRecord) -> bool:
        """Replay a changelog record into the index; False if its id is already known."""
        if rec.config_id != self.config.fingerprint_id:
            raise ValueError(
                f"record was made under fingerprint config {rec.config_id:#010x}, "
                f"this index uses {self.config.fingerprint_id:#010x}"
            )
        if self.lookup(rec.doc_id) is not None:
            return False
        self._advance(rec.ts)
        self._insert(rec, None)
        return True

    def apply_records(self, records: Iterable[FingerprintRecord]) -> int:
        """Replay records in order; returns how many were new."""
        return sum(self.apply_record(r) for r in records)

    def _advance(self, ts: int) -> None:
        """Move the time watermark and evict what the retention settings exclude."""
        self.watermark = max(self.watermark, ts)
        cfg, st = self.config, self.store
        evicted = 0
        while st.count and (
            (cfg.max_docs is not None and st.count >= cfg.max_docs)
            or (
                cfg.max_age_seconds is not None
                and st.oldest_ts() < self.watermark - cfg.max_age_seconds
            )
        ):
            self.features.pop(st.base, None)
            st.evict_oldest()
            evicted += 1
        if not evicted:
            return
        self._evicted_since_compact += evicted
        if self._evicted_since_compact > max(4096, st.count):
            self.index.compact(st.base, st.count)
            self.registry.compact(st.base, st.count)
            self._evicted_since_compact = 0

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
