"""Fingerprints of documents: exact hash, SimHash, MinHash signature, sketch, bucket keys.

`Fingerprinter.batch(texts)` runs the fused compiled kernel once over the whole batch's UTF-8:
it normalises (through the fold table; texts with context-dependent characters through the
compiled full NFKC, `nfkc`: no text is folded in Python) and computes everything else. The
same text always yields the same fingerprint (see `hashing` and `kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint import kernels as _kernels
from neardup_stream.fingerprint.compact_set import compact_limit, sample_limit
from neardup_stream.fingerprint.nfkc import nfkc_tables
from neardup_stream.fingerprint.normalize import direct_table, fold_table, normalize, strip_html
from neardup_stream.fingerprint.shingles import codepoints


@dataclass(frozen=True)
class Fingerprints:
    """Column-wise fingerprints of n documents."""

    exact: np.ndarray  # uint64[n, 2]: 128-bit hash of the normalised text
    simhash: np.ndarray  # uint64[n]: weighted 64-bit SimHash
    signature: np.ndarray  # uint64[n, num_perm]: MinHash (one-permutation, densified)
    sketch: np.ndarray  # uint64[n, sketch_bits // 64]: verification sketch (see below)
    nfeat: np.ndarray  # int64[n]: distinct features, the set size (0 for an empty text)
    lsh_keys: np.ndarray  # uint32[n, bands]
    simhash_keys: np.ndarray  # uint32[n, simhash_k + 1]
    feats: np.ndarray  # uint64[...]: sorted distinct feature hashes of the small documents
    feat_offsets: np.ndarray  # int64[n + 1]: document d's are feats[off[d]:off[d + 1]]

    def __len__(self) -> int:
        return int(self.simhash.size)


def kept_features(config: DedupConfig) -> int:
    """Largest set size whose sorted hashes a batch keeps: every document that can reach
    the lowest similarity verified against a compact set, whole or sampled (J <= min/max of
    the set sizes). Beyond `sample_limit` it keeps the `compact_limit` smallest: a sample
    is all such a document's comparison with a compact set needs (`set_estimate`)."""
    lowest = config.threshold - (config.precise_margin if config.precise else 0.0)
    limit = sample_limit(config.sketch_bits)
    return limit if lowest >= 1 else min(65535, math.ceil(limit / max(lowest, 1e-3)))


@lru_cache(maxsize=1)
def fold_tables() -> _kernels.FoldTable:
    """The fold table and the full NFKC tables, as the kernel reads them (cached)."""
    index, pool = fold_table()
    return _kernels.FoldTable(direct_table(index, pool), index, pool, nfkc_tables())


def _utf8(text: str) -> bytes:
    """UTF-8 of `text`, a lone surrogate (JSON allows one) written as its three bytes as the
    kernel reads them; the strict codec first, a third faster than naming an error handler."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")


class Fingerprinter:
    """Computes `Fingerprints` under one `DedupConfig`.

    The verification sketch of a document with at most `compact_limit(sketch_bits)` distinct
    features is its whole feature set, Rice-coded (`compact_set`), and up to
    `sample_limit(sketch_bits)` a sample of it (its smallest hashes); larger documents get the
    1-bit one-permutation MinHash sketch. The batch also returns the sorted feature hashes of
    every document small enough to be compared with a compact set (`kept_features`), all of
    them up to `sample_limit`, else its smallest.
    """

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.bands, self.rows = config.banding
        self.compact_max = compact_limit(config.sketch_bits)
        self.sample_max = sample_limit(config.sketch_bits)
        self.keep_max = kept_features(config)
        self._mode = _kernels.MODE_CHAR if config.shingle == "char" else _kernels.MODE_WORD
        self.shingling = _kernels.Shingling(
            self._mode,
            config.shingle_size,
            config.seed,
            config.sketch_bits,
            config.num_perm,
            self.compact_max,
            self.sample_max,
            self.keep_max,
        )

    def normalize(self, text: str) -> str:
        """The normalised form of `text` under this configuration."""
        return normalize(text, html_input=self.config.strip_html)

    def batch(self, texts: Sequence[str]) -> Fingerprints:
        """Fingerprint raw texts (normalised by the kernel)."""
        cfg = self.config
        if cfg.strip_html:
            texts = [strip_html(t) for t in texts]
        raw = self._run(texts)
        return Fingerprints(
            exact=raw.exact,
            simhash=raw.simhash,
            signature=raw.signature,
            sketch=raw.sketch,
            nfeat=raw.nfeat,
            lsh_keys=_kernels.band_keys(raw.signature, self.bands, self.rows, cfg.seed),
            simhash_keys=_kernels.simhash_block_keys(raw.simhash, cfg.simhash_k, cfg.seed),
            feats=raw.feats,
            feat_offsets=raw.feat_offsets,
        )

    def _run(self, texts: Sequence[str]) -> _kernels.RawFingerprints:
        parts = [_utf8(t) for t in texts]
        offsets = np.zeros(len(parts) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        data = np.frombuffer(b"".join(parts), dtype=np.uint8)
        # freed before the kernel runs: its output arrays then reuse this memory instead of
        # faulting in fresh pages (2 us a document on CJK text, `bench_fingerprint`)
        del parts
        fingerprints: _kernels.RawFingerprints = _kernels.fingerprint_batch(
            _kernels.TextBatch(data, offsets), fold_tables(), self.shingling
        )
        return fingerprints

    def features(self, text: str) -> np.ndarray:
        """Sorted unique feature hashes of a raw text (for exact Jaccard)."""
        cps = codepoints(self.normalize(text))
        return np.unique(
            _kernels.feature_hashes(cps, self._mode, self.config.shingle_size, self.config.seed)
        )
