"""Fingerprints of documents: exact hash, SimHash, MinHash signature, sketch, bucket keys.

`Fingerprinter.batch(texts)` runs the fused compiled kernel once over the whole batch's UTF-8:
it normalises (through the fold table; texts with context-dependent characters through the
compiled full NFKC, `nfkc`: no text is folded in Python) and computes everything else. The
same text always yields the same fingerprint (see `hashing` and `kernels`).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint import kernels as _kernels
from neardup_stream.fingerprint.compact_set import compact_limit
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
    other: np.ndarray  # uint64[n, sketch_bits // 64]: the sketch of the other form near
    # `odd_limit` (`kernels.RawFingerprints.other`), zeros elsewhere

    def __len__(self) -> int:
        return int(self.simhash.size)


def kept_features(config: DedupConfig) -> int:
    """Largest set size whose sorted hashes a batch keeps: every document that can reach
    the lowest similarity verified against a compact set (J <= min/max of the set sizes).
    Beyond `compact_limit` it keeps the `compact_limit` smallest: a sample is all such a
    document's comparison with a compact set needs (`set_estimate`)."""
    lowest = config.lowest_similarity
    limit = compact_limit(config.sketch_bits)
    return limit if lowest >= 1 else min(65535, math.ceil(limit / max(lowest, 1e-3)))


EVERY_SIZE = 1 << 40  # a set size above any document's


def other_range(config: DedupConfig) -> tuple[int, int]:
    """Set sizes (lowest, highest) whose documents also get the other form of sketch: every
    size the index's size filter lets meet one across `config.odd_limit` at the lowest
    similarity verified (it excludes sizes a <= b when a < min_sim * b: the same float
    comparison)."""
    lowest, odd_max = config.lowest_similarity, config.odd_limit
    if lowest < 1e-9:  # every size can meet every other (kept far from int64 overflow)
        return 0, EVERY_SIZE
    low = max(math.floor(lowest * odd_max) - 1, 0)
    while low < lowest * odd_max:  # the smallest size a with odd_max not excluding it
        low += 1
    high = math.ceil(odd_max / lowest) + 1
    while odd_max < lowest * high:  # the largest size b with b not excluding odd_max
        high -= 1
    return low, min(high, EVERY_SIZE)


@lru_cache(maxsize=1)
def fold_tables() -> _kernels.FoldTable:
    """The fold table and the full NFKC tables, as the kernel reads them (cached)."""
    index, pool = fold_table()
    return _kernels.FoldTable(direct_table(index, pool), index, pool, nfkc_tables())


_WIDE = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"  # uint32 as numpy reads it


def _code_points(text: str) -> bytes:
    """The code points of `text` as native uint32, a lone surrogate (JSON allows one) kept as
    it is; the strict codec first, faster than naming an error handler."""
    try:
        return text.encode(_WIDE)
    except UnicodeEncodeError:
        return text.encode(_WIDE, "surrogatepass")


def text_batch(texts: Sequence[str]) -> _kernels.TextBatch:
    """`texts` as the kernel reads them: an ASCII text as its bytes, any other as its code
    points. Encoding CJK or Cyrillic text to UTF-32 takes a third of the time UTF-8 does, and
    the kernel then has nothing to decode (end to end on s31: CJK +24%, Cyrillic +27%)."""
    narrow = [t.isascii() for t in texts]
    ascii_parts = [t.encode() if a else b"" for t, a in zip(texts, narrow, strict=True)]
    wide_parts = [b"" if a else _code_points(t) for t, a in zip(texts, narrow, strict=True)]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in ascii_parts], out=offsets[1:])
    wide_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in wide_parts], out=wide_offsets[1:])
    wide_offsets //= 4
    data = np.frombuffer(b"".join(ascii_parts), dtype=np.uint8)
    wide = np.frombuffer(b"".join(wide_parts), dtype=np.uint32)
    return _kernels.TextBatch(data, offsets, wide, wide_offsets)


class Fingerprinter:
    """Computes `Fingerprints` under one `DedupConfig`.

    The verification sketch of a document with at most `compact_limit(sketch_bits)` distinct
    features is its whole feature set, Rice-coded (`compact_set`); up to
    `config.odd_limit` an odd sketch (`odd_sketch`), larger documents the 1-bit
    one-permutation MinHash sketch. The batch also returns the sorted feature hashes of
    every document small enough to be compared with a compact set (`kept_features`), all of
    them up to `compact_limit`, else its smallest.
    """

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self.bands, self.rows = config.banding
        self.compact_max = compact_limit(config.sketch_bits)
        self.keep_max = kept_features(config)
        self.odd_max = config.odd_limit
        self.other_min, self.other_max = other_range(config)
        self._mode = _kernels.MODE_CHAR if config.shingle == "char" else _kernels.MODE_WORD
        self.shingling = _kernels.Shingling(
            self._mode,
            config.shingle_size,
            config.seed,
            config.sketch_bits,
            config.num_perm,
            self.compact_max,
            self.keep_max,
            self.odd_max,
            self.other_min,
            self.other_max,
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
            other=raw.other,
        )

    def _run(self, texts: Sequence[str]) -> _kernels.RawFingerprints:
        # the pieces of `text_batch` are freed before the kernel runs: its output arrays then
        # reuse that memory instead of faulting in fresh pages (2 us a document on CJK text)
        fingerprints: _kernels.RawFingerprints = _kernels.fingerprint_batch(
            text_batch(texts), fold_tables(), self.shingling
        )
        return fingerprints

    def features(self, text: str) -> np.ndarray:
        """Sorted unique feature hashes of a raw text (for exact Jaccard)."""
        cps = codepoints(self.normalize(text))
        return np.unique(
            _kernels.feature_hashes(cps, self._mode, self.config.shingle_size, self.config.seed)
        )
