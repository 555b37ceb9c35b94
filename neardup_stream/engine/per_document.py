"""The decide paths that run document by document: precise mode and longest sentences.

The default path decides a whole batch in one kernel call (`driver.run`). These two need
Python between a document's probe and its storing, so they drive the kernels one row at a
time, in the same order the batch kernel follows: advance the watermark, supersede an
earlier version (updates), probe and verify, choose, then append the row.

- Precise mode (`decide_precise`): candidates within `precise_margin` below the threshold are
  verified by exact Jaccard over shingle sets (`precise.FeatureSets`).
- Longest sentences (`decide_sentences`): the kernel's rule (exact first, else the best
  estimate), then, when no candidate reached the threshold, the most recent live document
  with the same signature of the n longest sentences (`sentences`), method `sentences`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.engine import driver
from neardup_stream.index import kernels
from neardup_stream.index.columns import EXACT, MINHASH, SENTENCES, SIMHASH, UNIQUE
from neardup_stream.index.similarity import pair_similarity
from neardup_stream.sentences import signature

if TYPE_CHECKING:
    from neardup_stream.deduplicator import Deduplicator


def decide_precise(engine: Deduplicator, batch: Batch, texts: list[str]) -> dict[int, np.ndarray]:
    """Decide `batch` in precise mode; returns each stored row's shingle set."""
    cfg, st, out = engine.config, engine.store, batch.decisions
    feats: dict[int, np.ndarray] = {}
    for i in _turns(engine, batch):
        driver.advance(engine, batch.docs.ts[i])
        out.update[i] = kernels.supersede(i, batch.docs, out, st.arrays(), st.window)
        feats[i] = engine.fingerprinter.features(texts[i])
        cands = kernels.probe_verify(
            i,
            batch.docs,
            engine.index.arrays,
            st.arrays(),
            st.window,
            cfg.threshold - cfg.precise_margin,
            engine._rules,
        )
        chosen = engine.features.choose(feats[i], cands)
        if chosen is not None:
            out.match[i], out.similarity[i], out.method[i] = chosen
        late = kernels.expired(st.window, batch.docs.ts[i], engine._limits)
        out.indexed[i] = kernels.is_indexed(out.method[i], late, engine._rules.index_duplicates)
        driver.run(engine, batch, decide=False, begin=i, end=i + 1)
        engine.features.add(int(out.ref[i]), feats[i])
    engine.features.forget(st.alive)
    return feats


def decide_sentences(engine: Deduplicator, batch: Batch, texts: list[str]) -> dict[int, int]:
    """Decide `batch` with longest sentences on; returns each stored row's signature."""
    cfg, st, out, docs = engine.config, engine.store, batch.decisions, batch.docs
    sigs: dict[int, int] = {}
    for i in _turns(engine, batch):
        driver.advance(engine, docs.ts[i])
        out.update[i] = kernels.supersede(i, docs, out, st.arrays(), st.window)
        cands = kernels.probe_verify(
            i,
            docs,
            engine.index.arrays,
            st.arrays(),
            st.window,
            cfg.threshold,
            engine._rules,
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
            found = engine.sentences.find(sig, lambda r: st.alive(r) and not st.is_superseded(r))
            if found is not None:
                match, sim, method = found, _estimate(engine, batch, i, found), SENTENCES
        out.match[i], out.similarity[i], out.method[i] = match, sim, method
        late = kernels.expired(st.window, docs.ts[i], engine._limits)
        out.indexed[i] = kernels.is_indexed(method, late, cfg.index_duplicates)
        driver.run(engine, batch, decide=False, begin=i, end=i + 1)
        if sig is not None:
            sigs[i] = sig
            engine.sentences.add(int(out.ref[i]), sig)
    engine.sentences.forget(st.alive)
    return sigs


def _turns(engine: Deduplicator, batch: Batch) -> Iterator[int]:
    """The rows to decide, in order: those the kernels would store, and a replay whose
    version left the window before its turn (`driver.renewed`, checked at that turn)."""
    docs, evicts = batch.docs, driver.evicts(engine)
    for i in range(len(batch)):
        if docs.probe_only[i]:
            continue
        if docs.skip[i] and not (evicts and driver.renewed(engine, batch, i)):
            continue
        yield i


def _estimate(engine: Deduplicator, batch: Batch, i: int, ref: int) -> float:
    """The Jaccard estimate of row i and stored document `ref`, as verification makes it."""
    docs, st, rules = batch.docs, engine.store, engine._rules
    p = st.slot(ref)
    arrays = st.arrays()
    feats = docs.feats[docs.feat_offsets[i] : docs.feat_offsets[i + 1]]
    nfeat, row, other = docs.nfeat[i], docs.sketch[i], docs.other[i]
    return float(
        pair_similarity(nfeat, row, other, feats, arrays.sketch[p], arrays.nfeat[p], rules)
    )
