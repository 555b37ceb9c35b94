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
This module is the facade and owns the engine's tables and settings; the parts it drives are
in `engine/`: the kernel driver, the outcomes and records of a batch, the per-document paths
(precise mode, longest sentences), changelog replay, state as arrays, and a shard's vote.
Pure Python + numpy + numba: no I/O, no Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import datetime

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.config import DedupConfig
from neardup_stream.engine import driver, outcomes, per_document, persistence
from neardup_stream.engine.outcomes import DecisionColumns, Outcome
from neardup_stream.engine.vote import Vote, vote
from neardup_stream.event_time import event_times
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.index.columns import Bounds, Rules
from neardup_stream.index.doc_store import DocStore
from neardup_stream.index.registry import IdRegistry
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.models import Decision, Document, Parsed
from neardup_stream.precise import FeatureSets
from neardup_stream.records import FingerprintRecord
from neardup_stream.sentences import SentenceIndex

__all__ = ["DecisionColumns", "Deduplicator", "Outcome", "Vote"]


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
        self._limits = Bounds(cfg.bucket_cap, cfg.max_docs or 0, float(cfg.max_age_seconds or 0))
        fp = self.fingerprinter
        self._rules = Rules(
            threshold=cfg.threshold,
            simhash_k=cfg.simhash_k,
            index_duplicates=cfg.index_duplicates,
            set_max=fp.compact_max,
            odd_max=fp.odd_max,
            other_min=fp.other_min,
            other_max=fp.other_max,
        )

    def __len__(self) -> int:
        return self.store.count

    @property
    def rules(self) -> Rules:
        """What makes a duplicate, and which sketch form a stored set size has."""
        return self._rules

    @property
    def watermark(self) -> int:
        """Latest document time seen (seconds); retention by age counts back from it."""
        return int(self.store.window["watermark"][0])

    def check(self, doc: Document, now: float | None = None) -> Decision:
        """Decide one document (and index it)."""
        return self.process([doc], now=now)[0].decision

    def check_batch(self, docs: Sequence[Parsed], now: float | None = None) -> list[Decision]:
        """Decide documents in order; later ones see earlier ones of the same batch."""
        return [o.decision for o in self.process(docs, now=now)]

    def lookup(self, doc_id: str) -> Decision | None:
        """The decision of the latest version of an id still in the window, if any."""
        ref = self.registry.find(doc_id, self.store)
        return None if ref is None else outcomes.stored_decision(self.store.decision(ref))

    def process(
        self,
        docs: Sequence[Parsed],
        now: float | None = None,
        records: bool = False,
        times: Sequence[float | None] | None = None,
    ) -> list[Outcome]:
        """Decide documents in order, optionally returning their fingerprint records.

        Args:
            docs: Documents (or `PlainDocument`s) in stream order.
            now: The wall clock in seconds (default: `time.time()`).
            records: Build a `FingerprintRecord` for every newly stored document.
            times: Per-document record times in seconds (e.g. Kafka record timestamps;
                None or negative for none). Event times follow `event_time.event_times`.
        """
        stamps = [d.timestamp for d in docs]
        batch, feats, sigs = self._decide(
            [d.id for d in docs], [d.text for d in docs], stamps, now, times
        )
        return outcomes.finish(self, batch, records, feats, sigs)

    def decide_columns(
        self,
        ids: list[str],
        texts: list[str],
        stamps: Sequence[datetime | None],
        now: float | None = None,
    ) -> DecisionColumns:
        """`check_batch` for documents given as columns (id, text and own timestamp of each),
        with the decisions as columns: no object per document either way."""
        batch, _, _ = self._decide(ids, texts, stamps, now, None)
        return outcomes.finish_columns(self, batch)

    def _decide(
        self,
        ids: list[str],
        texts: list[str],
        stamps: Sequence[datetime | None],
        now: float | None,
        times: Sequence[float | None] | None,
    ) -> tuple[Batch, dict[int, np.ndarray], dict[int, int]]:
        """A batch decided, stored and indexed (event times: `event_time.event_times`), with
        its rows' shingle sets (precise mode) and sentence signatures (longest sentences),
        which the records carry."""
        real = time.time() if now is None else now
        ts = event_times(stamps, real, self.config.max_future_skew_seconds, times)
        batch = Batch.from_fingerprints(ids, self.fingerprinter.batch(texts), ts)
        driver.mark_known(self, batch)
        feats: dict[int, np.ndarray] = {}
        sigs: dict[int, int] = {}
        if self.config.precise:
            feats = per_document.decide_precise(self, batch, texts)
        elif self.config.longest_sentences:
            sigs = per_document.decide_sentences(self, batch, texts)
        else:
            driver.run(self, batch, decide=True)
        return batch, feats, sigs

    def vote(self, batch: Batch, records: bool = False) -> Vote:
        """Decide `batch` against this engine as one shard's vote (see `engine.vote`)."""
        return vote(self, batch, records)

    def advance_to(self, ts: int) -> None:
        """Move the event-time watermark to `ts` (if later), evicting what age excludes."""
        driver.advance(self, ts)

    def apply_records(self, records: Iterable[FingerprintRecord]) -> int:
        """Replay changelog records in order; returns how many were stored (`engine.persistence`)."""
        return persistence.apply_records(self, records)

    def apply_record(self, rec: FingerprintRecord) -> bool:
        """Replay one changelog record; False if its id is stored with the same content."""
        return self.apply_records([rec]) == 1

    def state(self) -> dict[str, np.ndarray]:
        """Everything the index keeps, as named arrays (see `from_state`)."""
        return persistence.state(self)

    @classmethod
    def from_state(cls, config: DedupConfig, state: dict[str, np.ndarray]) -> Deduplicator:
        """A Deduplicator holding `state` (from `state()` under the same fingerprint settings;
        shards, caps and retention may differ)."""
        dedup = cls(config)
        persistence.load_state(dedup, state)
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
