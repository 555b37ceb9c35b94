"""The Deduplicator: decide unique / duplicate-of-X for a stream of documents.

A document is a near-duplicate when its Jaccard similarity (over shingles) with ANY earlier
live document reaches the threshold, duplicates included, so drifting chains are caught.
Per batch: fingerprints (one compiled pass) -> id registry (replays keep their first
decision; an id seen before with other content is an update, see below) -> one compiled
pass that, document by document, evicts what age retention excludes, probes the sharded index
(LSH band keys + SimHash pigeonhole block keys), verifies candidates against the document
store (exact hash, 1-bit MinHash sketch estimate), then makes room (`max_docs`), stores and
indexes -> decisions. So a document is compared with the `max_docs` most recent stored ones. Precise
mode verifies candidates near the threshold by exact Jaccard in Python instead; with
`longest_sentences` on, a document no candidate matches may still match by its n longest
sentences (`sentences`), also decided document by document.

Ids and content: a document whose id is stored already is a *replay* when its content (the
exact hash, a 128-bit MurmurHash3 of the normalised text) equals the id's latest version, and
gets that version's decision again. Otherwise it is an *update* (say, a crawler re-fetched a
changed page): it supersedes the earlier version, which from then on is nobody's match (it
still occupies its place in the retention window until evicted), and is decided afresh
against the other documents, with `Decision.update` set. Replays of the update keep the
update's decision.
Pure Python + numpy + numba: no I/O, no Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.config import DedupConfig
from neardup_stream.event_time import event_times
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.kernels import oph_sketch
from neardup_stream.index import kernels
from neardup_stream.index.columns import EXACT, MINHASH, SENTENCES, SIMHASH, UNIQUE, Limits, Rules
from neardup_stream.index.doc_store import DocStore, StoredDecision
from neardup_stream.index.registry import IdRegistry
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.models import METHODS, Decision, Document
from neardup_stream.precise import FeatureSets
from neardup_stream.records import FingerprintRecord
from neardup_stream.sentences import SentenceIndex, signature


class Vote(NamedTuple):
    """What `Deduplicator.vote` found: per row the matched id, and the stored rows' records."""

    match_ids: list[str | None]
    records: list[FingerprintRecord]


@dataclass(frozen=True)
class Outcome:
    """A decision and, for a newly stored document, the record that reproduces its state."""

    decision: Decision
    record: FingerprintRecord | None


def _decision(stored: StoredDecision) -> Decision:
    if stored.method == UNIQUE:
        return Decision(id=stored.doc_id, decision="unique", update=stored.update)
    return Decision(
        id=stored.doc_id,
        decision="duplicate",
        duplicate_of=stored.duplicate_of,
        representative=stored.representative,
        similarity=round(stored.similarity, 6),
        method=METHODS[stored.method - 1],
        update=stored.update,
    )


class Deduplicator:
    """Streaming near-duplicate detector over an in-memory sharded index."""

    def __init__(self, config: DedupConfig | None = None) -> None:
        cfg = self.config = config or DedupConfig()
        self.fingerprinter = Fingerprinter(cfg)
        self.store = DocStore(cfg.sketch_bits // 64, cfg.max_age_seconds is not None)
        self.index = ShardedIndex(cfg.shards, cfg.bucket_cap)
        self.registry = IdRegistry()
        self.features = FeatureSets(cfg)
        self.sentences = SentenceIndex()
        self._limits = Limits(cfg.bucket_cap, cfg.max_docs or 0, float(cfg.max_age_seconds or 0))
        self._rules = Rules(
            cfg.threshold,
            cfg.simhash_k,
            cfg.index_duplicates,
            self.fingerprinter.compact_max,
        )

    def __len__(self) -> int:
        return self.store.count

    @property
    def watermark(self) -> int:
        """Latest document time seen (seconds); retention by age counts back from it."""
        return int(self.store.window["watermark"][0])

    def check(self, doc: Document, now: float | None = None) -> Decision:
        """Decide one document (and index it)."""
        return self.process([doc], now=now)[0].decision

    def check_batch(self, docs: Sequence[Document], now: float | None = None) -> list[Decision]:
        """Decide documents in order; later ones see earlier ones of the same batch."""
        return [o.decision for o in self.process(docs, now=now)]

    def lookup(self, doc_id: str) -> Decision | None:
        """The decision of the latest version of an id still in the window, if any."""
        ref = self.registry.find(doc_id, self.store)
        return None if ref is None else _decision(self.store.decision(ref))

    def process(
        self,
        docs: Sequence[Document],
        now: float | None = None,
        records: bool = False,
        times: Sequence[float | None] | None = None,
    ) -> list[Outcome]:
        """Decide documents in order, optionally returning their fingerprint records.

        Args:
            docs: Documents in stream order.
            now: The wall clock in seconds (default: `time.time()`).
            records: Build a `FingerprintRecord` for every newly stored document.
            times: Per-document record times in seconds (e.g. Kafka record timestamps;
                None or negative for none). Event times follow `event_time.event_times`.
        """
        texts = [d.text for d in docs]
        real = time.time() if now is None else now
        ts = event_times(docs, real, self.config.max_future_skew_seconds, times)
        batch = Batch.from_fingerprints([d.id for d in docs], self.fingerprinter.batch(texts), ts)
        batch.mark_known(self.registry.find_all(batch.ids, self.store), self.store.exact_of)
        self.store.reserve(len(batch))  # no row moves while the batch is decided
        feats: dict[int, np.ndarray] = {}
        sigs: dict[int, int] = {}
        if self.config.precise:
            feats = self._decide_precise(batch, texts)
        elif self.config.longest_sentences:
            sigs = self._decide_sentences(batch, texts)
        else:
            self._run(batch, decide=True)
        return self._finish(batch, records, feats, sigs)

    def vote(self, batch: Batch, records: bool = False) -> Vote:
        """Decide `batch` against this engine; store only rows that are not `probe_only`.

        For document-partitioned shards: `batch.decisions` then holds each row's best match
        here (a ref of this engine, -1 for none), and `Vote.match_ids` its id. Stored rows
        are recorded without a decision (the gather step makes it); with `records`, each gets
        the `FingerprintRecord` that reproduces it (`apply_records`), in stored order.
        """
        home_rows = np.flatnonzero(~batch.docs.probe_only)
        found: list[int | None] = [None] * len(batch)
        if home_rows.size:  # only home rows can be stored here, so only they can be known
            refs = self.registry.find_all([batch.ids[i] for i in home_rows], self.store)
            for i, ref in zip(home_rows.tolist(), refs, strict=True):
                found[i] = ref
        batch.mark_known(found, self.store.exact_of)
        self.store.reserve(len(batch))
        self._run(batch, decide=True)
        out = batch.decisions
        made: list[FingerprintRecord] = []
        for i in batch.stored():  # first: later rows of the batch may match these
            self.store.record(int(out.ref[i]), batch.ids[i], None, None)
            if records:
                update = bool(out.update[i])
                decision = Decision(id=batch.ids[i], decision="unique", update=update)
                made.append(self._record(batch, i, decision, None))
        matches: list[str | None] = [None] * len(batch)
        for i in np.flatnonzero((out.match >= 0) & ~batch.docs.skip).tolist():
            matches[i] = self.store.doc_id(int(out.match[i]))
        self._remember(batch)
        return Vote(matches, made)

    def advance_to(self, ts: int) -> None:
        """Move the event-time watermark to `ts` (if later), evicting what age excludes."""
        st = self.store
        kernels.advance(st.window, st.arrays(), np.int64(ts), self._limits, False)

    def _run(self, batch: Batch, decide: bool, begin: int = 0, end: int | None = None) -> None:
        """Run the decide (or append) kernel over rows begin..end, growing tables as needed."""
        end = len(batch) if end is None else end
        width = batch.docs.keys.shape[1]
        i = begin
        while i < end:
            self.index.reserve(max(width, (end - i) * width // len(self.index.shards)) + 64)
            args = (batch.docs, batch.decisions, self.index.arrays, self.store.arrays())
            if decide:
                i = kernels.decide_batch(
                    i, end, *args, self.store.window, self._limits, self._rules
                )
            else:
                i = kernels.append_batch(i, end, *args, self.store.window, self._limits)

    def _decide_precise(self, batch: Batch, texts: list[str]) -> dict[int, np.ndarray]:
        """Per document: candidates near the threshold are verified by exact Jaccard."""
        cfg, st, out = self.config, self.store, batch.decisions
        feats: dict[int, np.ndarray] = {}
        for i in batch.stored():
            kernels.advance(st.window, st.arrays(), batch.docs.ts[i], self._limits, False)
            out.update[i] = kernels.supersede(i, batch.docs, out, st.arrays(), st.window)
            feats[i] = self.fingerprinter.features(texts[i])
            cands = kernels.probe_verify(
                i,
                batch.docs,
                self.index.arrays,
                st.arrays(),
                st.window,
                cfg.threshold - cfg.precise_margin,
                self._rules.compact_max,
            )
            chosen = self.features.choose(feats[i], cands)
            if chosen is not None:
                out.match[i], out.similarity[i], out.method[i] = chosen
            late = kernels.expired(st.window, batch.docs.ts[i], self._limits)
            rules = self._rules
            out.indexed[i] = kernels.is_indexed(out.method[i], late, rules.index_duplicates)
            self._run(batch, decide=False, begin=i, end=i + 1)
            self.features.add(int(out.ref[i]), feats[i])
        self.features.forget(st.alive)
        return feats

    def _decide_sentences(self, batch: Batch, texts: list[str]) -> dict[int, int]:
        """Per document, as `decide_batch` decides, then, when no candidate reached the
        threshold, the most recent live document with its sentence signature."""
        cfg, st, out, docs = self.config, self.store, batch.decisions, batch.docs
        sigs: dict[int, int] = {}
        for i in batch.stored():
            kernels.advance(st.window, st.arrays(), docs.ts[i], self._limits, False)
            out.update[i] = kernels.supersede(i, docs, out, st.arrays(), st.window)
            cands = kernels.probe_verify(
                i,
                docs,
                self.index.arrays,
                st.arrays(),
                st.window,
                cfg.threshold,
                self._rules.compact_max,
            )
            match, sim, method = -1, 0.0, UNIQUE
            for c in range(cands.refs.size):  # the kernel's rule: exact first, else the best
                if cands.exact[c]:
                    match, sim, method = int(cands.refs[c]), 1.0, EXACT
                    break
                if cands.similarity[c] > sim:
                    match, sim = int(cands.refs[c]), float(cands.similarity[c])
                    method = SIMHASH if cands.hamming[c] <= cfg.simhash_k else MINHASH
            sig = signature(texts[i], cfg.longest_sentences, cfg.strip_html)
            if match < 0 and sig is not None:
                found = self.sentences.find(sig, lambda r: st.alive(r) and not st.is_superseded(r))
                if found is not None:
                    match, sim, method = found, self._estimate(batch, i, found), SENTENCES
            out.match[i], out.similarity[i], out.method[i] = match, sim, method
            late = kernels.expired(st.window, docs.ts[i], self._limits)
            out.indexed[i] = kernels.is_indexed(method, late, cfg.index_duplicates)
            self._run(batch, decide=False, begin=i, end=i + 1)
            if sig is not None:
                sigs[i] = sig
                self.sentences.add(int(out.ref[i]), sig)
        self.sentences.forget(st.alive)
        return sigs

    def _estimate(self, batch: Batch, i: int, ref: int) -> float:
        """The Jaccard estimate of row i and stored document `ref`, as verification makes it."""
        docs, st, compact_max = batch.docs, self.store, self._rules.compact_max
        p = st.slot(ref)
        feats = docs.feats[docs.feat_offsets[i] : docs.feat_offsets[i + 1]]
        oph = docs.sketch[i]
        if docs.nfeat[i] <= compact_max:  # its row holds its compact set: sketch it
            oph = np.zeros(docs.sketch.shape[1], dtype=np.uint64)
            oph_sketch(feats, docs.sketch.shape[1] * 64, oph)
        arrays = st.arrays()
        return float(
            kernels.similarity(
                feats, docs.nfeat[i], oph, arrays.sketch[p], arrays.nfeat[p], compact_max
            )
        )

    def _finish(
        self,
        batch: Batch,
        records: bool,
        feats: dict[int, np.ndarray],
        sigs: dict[int, int] | None = None,
    ) -> list[Outcome]:
        st, out = self.store, batch.decisions
        outcomes: list[Outcome] = []
        for i, doc_id in enumerate(batch.ids):
            if i in batch.repeat_of:
                outcomes.append(Outcome(outcomes[batch.repeat_of[i]].decision, None))
                continue
            if i in batch.known:
                outcomes.append(Outcome(_decision(st.decision(batch.known[i])), None))
                continue
            ref, match, method = int(out.ref[i]), int(out.match[i]), int(out.method[i])
            update = bool(out.update[i])
            dup = rep = None
            if match < 0:
                decision = Decision(id=doc_id, decision="unique", update=update)
            else:
                dup, rep = st.doc_id(match), st.representative(match)
                decision = Decision(
                    id=doc_id,
                    decision="duplicate",
                    duplicate_of=dup,
                    representative=rep,
                    similarity=round(float(np.float32(out.similarity[i])), 6),
                    method=METHODS[method - 1],
                    update=update,
                )
            st.record(ref, doc_id, dup, rep)  # before later documents of the batch read it
            record = (
                self._record(batch, i, decision, feats.get(i), (sigs or {}).get(i))
                if records
                else None
            )
            outcomes.append(Outcome(decision, record))
        self._remember(batch)
        return outcomes

    def _record(
        self,
        batch: Batch,
        i: int,
        decision: Decision,
        feats: np.ndarray | None,
        sentences: int | None = None,
    ) -> FingerprintRecord:
        docs, out = batch.docs, batch.decisions
        return FingerprintRecord(
            config_id=self.config.fingerprint_id,
            doc_id=decision.id,
            duplicate_of=decision.duplicate_of,
            representative=decision.representative,
            ts=int(docs.ts[i]),
            method=int(out.method[i]),
            similarity=float(out.similarity[i]),
            nfeat=int(docs.nfeat[i]),
            exact=(int(docs.exact[i, 0]), int(docs.exact[i, 1])),
            simhash=int(docs.simhash[i]),
            lsh_keys=batch.lsh_keys(i),
            simhash_keys=batch.simhash_keys(i),
            sketch=docs.sketch[i],
            indexed=bool(out.indexed[i]),
            features=feats,
            update=decision.update,
            sentences=sentences,
        )

    def _remember(self, batch: Batch) -> None:
        """Register the ids of just-stored documents, then settle evictions."""
        stored = batch.stored()
        self.registry.add(
            [int(batch.decisions.ref[i]) for i in stored], [batch.ids[i] for i in stored]
        )
        st = self.store
        st.trim_blob()
        if st.window["evicted"][0] > max(4096, st.count):
            self.index.compact(st.base, st.count)
            self.registry.compact(st.base, st.count)
            st.window["evicted"][0] = 0

    def apply_records(self, records: Iterable[FingerprintRecord]) -> int:
        """Replay changelog records in order (no verification); returns how many were stored.

        A record whose id's latest stored version has the same content is skipped (already
        applied); one with other content is an update and supersedes that version, as it did
        live. So records must be replayed once, in order (a restore replays the changelog
        from where its snapshot ends): an older record replayed again would count as an update.
        """
        recs = list(records)
        for rec in recs:
            if rec.config_id != self.config.fingerprint_id:
                raise ValueError(
                    f"record was made under fingerprint config {rec.config_id:#010x}, "
                    f"this index uses {self.config.fingerprint_id:#010x}"
                )
            if self.config.precise and rec.features is None:
                raise ValueError(f"record {rec.doc_id!r} has no shingle set for precise mode")
        if not recs:
            return 0
        batch = Batch.from_records(recs, self.fingerprinter.bands)
        batch.mark_known(self.registry.find_all(batch.ids, self.store), self.store.exact_of)
        self.store.reserve(len(batch))
        self._run(batch, decide=False)
        for i in batch.stored():
            rec = recs[i]
            ref = int(batch.decisions.ref[i])
            self.store.record(ref, rec.doc_id, rec.duplicate_of, rec.representative)
            if rec.features is not None:
                self.features.add(ref, rec.features)
            if rec.sentences is not None and self.config.longest_sentences:
                self.sentences.add(ref, rec.sentences)
        self._remember(batch)
        self.features.forget(self.store.alive)
        self.sentences.forget(self.store.alive)
        return len(batch.stored())

    def apply_record(self, rec: FingerprintRecord) -> bool:
        """Replay one changelog record; False if its id is stored with the same content."""
        return self.apply_records([rec]) == 1

    def state(self) -> dict[str, np.ndarray]:
        """Everything the index keeps, as named arrays (see `from_state`)."""
        arrays = self.store.state()
        arrays["registry_keys"], arrays["registry_refs"] = self.registry.key_refs()
        arrays["index_keys"], arrays["index_refs"] = self.index.key_refs()
        arrays.update(self.features.state())
        if self.config.longest_sentences:
            arrays.update(self.sentences.state())
        return arrays

    @classmethod
    def from_state(cls, config: DedupConfig, state: dict[str, np.ndarray]) -> Deduplicator:
        """A Deduplicator holding `state` (from `state()` under the same fingerprint settings;
        shards, caps and retention may differ)."""
        dedup = cls(config)
        keep_time = config.max_age_seconds is not None
        dedup.store = DocStore.from_state(config.sketch_bits // 64, keep_time, state)
        dedup.registry = IdRegistry.from_entries(state["registry_keys"], state["registry_refs"])
        dedup.index = ShardedIndex.from_entries(
            config.shards, config.bucket_cap, state["index_keys"], state["index_refs"]
        )
        dedup.features = FeatureSets.from_state(config, state)
        if config.longest_sentences:
            dedup.sentences = SentenceIndex.from_state(state)
        return dedup

    def index_bytes(self) -> int:
        """Bytes held by everything the index keeps (allocated capacity included)."""
        parts = (self.store, self.index, self.registry, self.features, self.sentences)
        return sum(p.nbytes for p in parts)

    def stats(self) -> dict[str, int]:
        """Document count, table entries and memory, for metrics and reports."""
        return {
            "documents": self.store.count,
            "index_entries": self.index.entries,
            "index_bytes": self.index_bytes(),
        }
