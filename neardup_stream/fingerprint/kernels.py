"""Compiled (numba) kernels of fingerprinting: normalisation tail, hashing, SimHash, MinHash.

Everything here is pure integer arithmetic on numpy arrays with fixed 64-bit constants, so the
results are identical on every machine, process and release (no salted hashing anywhere).
Kernels release the GIL, so the Kafka clients' threads keep working while a batch is hashed.

Input is raw UTF-8 (ASCII texts) or code points (UTF-32, the others: no decoding). The kernel
folds every code point through the per-character fold table (`normalize.fold_table`); a text
holding a code point that table cannot fold on its own is folded by the full compiled NFKC +
case folding (`nfkc.fold_full`) instead, so no text goes back to Python. It then collapses
whitespace runs (the `str.isspace` set) to one space and strips the ends, so it sees exactly
`normalize.normalize(text)`, and hashes that text with MurmurHash3_x64_128 over its UTF-32LE
form (equal to `mmh3.hash128(normalized.encode("utf-32-le"), seed)`).

Feature hashing: a character k-gram is a rolling polynomial over code points (mod 2**64),
a word n-gram combines FNV-1a word hashes; both are finished with the MurmurHash3 64-bit
finaliser, seeded.

One pass over the features of a document computes, per feature, in O(1):
* the weighted SimHash (term-frequency weights: every occurrence votes), counted per bit
  with a carry-save adder tree so a vote costs a handful of word operations, not 64 adds;
* a one-permutation MinHash (OPH) of `sketch_bits` bins: bin = top bits of a second hash
  (scaled to the bin count, any multiple of 64),
  value = min hash in the bin. Grouping bins gives the `num_perm`-value MinHash signature used
  for LSH banding (empty groups filled by rotation densification, Shrivastava & Li 2014); the
  lowest bit of every bin gives the 1-bit verification sketch (b-bit minwise hashing; empty
  bins filled by optimal densification, Shrivastava 2017) of a large document. A document
  with few distinct features keeps its Rice-coded feature set in the sketch's place instead
  (`compact_set`), and one with up to `odd_max` an odd sketch (`odd_sketch`: each distinct
  feature flips a bit); their signatures come straight from the features, and no bin is
  filled or densified unless the document also needs a 1-bit sketch (`other_min`).

This module is the batch pass (`fingerprint_batch`) and its interface types; the kernels it
runs live by concept, and are re-exported here: `hash_kernels` (MurmurHash3, `fmix64`),
`text_kernels` (folding, normalisation, feature hashes), `minhash_kernels` (OPH bins,
densification, 1-bit sketch, band keys), `simhash_kernels` (bit counts, block keys) and
`feature_set_kernels` (distinct count, sorted distinct set).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.fingerprint.bitstream import popcount64
from neardup_stream.fingerprint.compact_set import encode
from neardup_stream.fingerprint.feature_set_kernels import (
    bucket_sort,
    distinct_count,
    set_size,
    sorted_distinct,
)
from neardup_stream.fingerprint.hash_kernels import EMPTY, ONE, fmix64, murmur3_128
from neardup_stream.fingerprint.minhash_kernels import (
    band_keys,
    bin_of,
    densify,
    one_bit_sketch,
    oph_sketch,
    sketch_scratch,
)
from neardup_stream.fingerprint.nfkc import NfkcTables, fold_code_points, fold_full
from neardup_stream.fingerprint.odd_sketch import odd_sketch
from neardup_stream.fingerprint.simhash_kernels import bit_counts, simhash_block_keys
from neardup_stream.fingerprint.text_kernels import (
    MODE_CHAR,
    MODE_WORD,
    collapse_spaces,
    feature_hashes,
    normalize_text,
)
from neardup_stream.native import njit

__all__ = [
    "EMPTY",
    "MODE_CHAR",
    "MODE_WORD",
    "FoldTable",
    "RawFingerprints",
    "Shingling",
    "TextBatch",
    "band_keys",
    "bit_counts",
    "bucket_sort",
    "collapse_spaces",
    "distinct_count",
    "feature_hashes",
    "fingerprint_batch",
    "fmix64",
    "murmur3_128",
    "normalize_text",
    "oph_sketch",
    "popcount64",
    "simhash_block_keys",
]


class TextBatch(NamedTuple):
    """The texts of a batch as `fingerprint_batch` reads them: text d is either the code
    points wide[wide_offsets[d]:wide_offsets[d + 1]], when there are any, or the UTF-8
    data[offsets[d]:offsets[d + 1]]; the other range is empty (`text_batch` puts ASCII texts
    in `data` and the others in `wide`, which needs no decoding)."""

    data: np.ndarray  # uint8[...]: the concatenated UTF-8 of the narrow texts
    offsets: np.ndarray  # int64[n + 1]: byte boundaries of each text in `data`
    wide: np.ndarray  # uint32[...]: the concatenated code points (UTF-32) of the wide texts
    wide_offsets: np.ndarray  # int64[n + 1]: boundaries of each text in `wide`


class FoldTable(NamedTuple):
    """The per-code-point fold table (`normalize.fold_table`) and the full path's tables."""

    direct: np.ndarray  # uint32 per code point: its one-code-point folding (`direct_table`)
    lookup: np.ndarray  # per code point: where its folding starts in `pool`
    pool: np.ndarray
    full: NfkcTables  # for texts the per-code-point table cannot fold (`nfkc.nfkc_tables`)


class Shingling(NamedTuple):
    """How features, signatures and sketches are made (from `DedupConfig`)."""

    mode: int  # MODE_CHAR or MODE_WORD
    k: int  # shingle size
    seed: int  # hash seed
    sketch_bits: int  # OPH bins (a multiple of 64 and of num_perm); also the 1-bit sketch length
    num_perm: int  # MinHash signature length (power of two <= sketch_bits)
    compact_max: int  # at most this many distinct features: the set is coded in the sketch
    keep_max: int  # at most this many distinct features: their sorted hashes are returned
    odd_max: int  # at most this many (beyond compact_max): an odd sketch (`odd_sketch`)
    other_min: int  # documents of other_min..other_max distinct features that can meet one
    other_max: int  # ... of the other form at odd_max also get that form (`RawFingerprints.other`)


class RawFingerprints(NamedTuple):
    """What `fingerprint_batch` computes for n texts."""

    exact: np.ndarray  # uint64[n, 2]
    simhash: np.ndarray  # uint64[n]
    sketch: np.ndarray  # uint64[n, sketch_bits // 64]
    signature: np.ndarray  # uint64[n, num_perm]
    nfeat: np.ndarray  # int64[n]: distinct features (the set size)
    feats: np.ndarray  # uint64[...]: kept sorted distinct feature hashes (CSR values)
    feat_offsets: np.ndarray  # int64[n + 1]: text d's are feats[off[d]:off[d + 1]]
    other: np.ndarray  # uint64[n, sketch_bits // 64]: near odd_max, the sketch of the other
    # form (the 1-bit sketch of an odd-sketched document, the odd sketch of a 1-bit one), to
    # compare with stored documents across that boundary; zeros elsewhere


@njit(cache=True, nogil=True)
def fingerprint_batch(texts, fold, spec):
    """Fingerprint every document of a batch in one call.

    Args:
        texts: A `TextBatch`.
        fold: The `FoldTable`.
        spec: The `Shingling`. Documents with at most `spec.compact_max` distinct features
            get their set coded into the sketch (`compact_set`), up to `spec.odd_max` an odd
            sketch, beyond it the 1-bit OPH sketch; documents in `spec.other_min..other_max`
            also get the other form (`RawFingerprints.other`). Those with at most
            `spec.keep_max` return their hashes sorted (beyond `compact_max`, their
            `compact_max` smallest).

    Returns:
        `RawFingerprints` of every text.
    """
    data, offsets = texts.data, texts.offsets
    wide, wide_offsets = texts.wide, texts.wide_offsets
    mode, k, seed = spec.mode, spec.k, spec.seed
    sketch_bits, num_perm = spec.sketch_bits, spec.num_perm
    compact_max, keep_max = spec.compact_max, spec.keep_max
    odd_max, other_min, other_max = spec.odd_max, spec.other_min, spec.other_max
    n = offsets.size - 1
    if wide_offsets.size != offsets.size:
        raise ValueError("TextBatch: offsets and wide_offsets must both have one per text + 1")
    words = sketch_bits // 64
    exact = np.empty((n, 2), dtype=np.uint64)
    simhash = np.zeros(n, dtype=np.uint64)
    sketch = np.zeros((n, words), dtype=np.uint64)
    signature = np.empty((n, num_perm), dtype=np.uint64)
    nfeat = np.zeros(n, dtype=np.int64)
    other = np.zeros((n, words), dtype=np.uint64)
    odd = np.zeros(words, dtype=np.uint64)  # a document's odd sketch, when it may need one
    no_odd = np.zeros(0, dtype=np.uint64)
    mark = 0  # distinct_count's mark: a new one per call
    group = sketch_bits // num_perm
    longest = 0  # in UTF-8 bytes, a code point counted as 3 (a BMP one's most)
    room = 0  # (the length of a text bounds its features, except where folding expands it)
    for d in range(n):
        code_points = wide_offsets[d + 1] - wide_offsets[d]
        longest = max(longest, offsets[d + 1] - offsets[d] + 3 * code_points)
        room += min(offsets[d + 1] - offsets[d] + code_points, keep_max)
    buf = np.empty(2 * longest + 64, dtype=np.uint32)  # else `fold_full` (rarely: a fold x6)
    bins = np.empty(sketch_bits, dtype=np.uint64)
    work = sketch_scratch(sketch_bits)
    seen = np.zeros(64, dtype=np.uint64)  # distinct_count's set, reused: a mark per call
    scratch = np.empty(2 * keep_max + 2, dtype=np.int64)
    feat_values = np.empty(room, dtype=np.uint64)
    feat_offsets = np.zeros(n + 1, dtype=np.int64)
    used = 0
    for d in range(n):
        m = normalize_text(texts, d, buf, fold)
        if m < 0:
            w0, w1 = wide_offsets[d], wide_offsets[d + 1]
            if w1 > w0:
                folded = fold_code_points(wide[w0:w1], fold.full)
            else:
                folded = fold_full(data, offsets[d], offsets[d + 1], fold.full)
            if folded.size > buf.size:
                buf = np.empty(folded.size + 64, dtype=np.uint32)
            m = collapse_spaces(folded, buf)
        exact[d, 0], exact[d, 1] = murmur3_128(buf, m, seed)
        feats = feature_hashes(buf[:m], mode, k, seed)
        counts = bit_counts(feats)
        total = feats.size
        odd[:] = 0
        has_odd = False
        if total > keep_max:  # (at most keep_max are counted exactly by their sort, below)
            if set_size(total) > seen.size:
                seen = np.zeros(set_size(total), dtype=np.uint64)
            has_odd = total <= 2 * other_max  # (else most likely past other_max: no odd)
            mark += 1
            nfeat[d] = distinct_count(feats, seen, mark, odd if has_odd else no_odd)
            if not has_odd and nfeat[d] <= other_max:  # a text repeating itself a lot
                has_odd = True
                mark += 1
                distinct_count(feats, seen, mark, odd)
        if total <= keep_max or nfeat[d] <= keep_max:
            if 2 * feats.size + 2 > scratch.size:
                scratch = np.empty(2 * feats.size + 2, dtype=np.int64)
            if used + feats.size > feat_values.size:  # folding can make more than it read
                grown = np.empty(max(2 * feat_values.size, used + feats.size), dtype=np.uint64)
                grown[:used] = feat_values[:used]
                feat_values = grown
            used = sorted_distinct(feats, feat_values, used, scratch)
            nfeat[d] = used - feat_offsets[d]
            if nfeat[d] > compact_max and not has_odd:
                has_odd = True
                odd_sketch(feat_values[feat_offsets[d] : used], odd)
            if nfeat[d] > compact_max:  # a sketched document keeps its smallest only
                used = feat_offsets[d] + compact_max
        feat_offsets[d + 1] = used
        kept = feat_values[feat_offsets[d] : used]
        # a signature value is the minimum of its group of bins (bin // group is the hash's
        # top 32 bits scaled to num_perm, as sketch_bits = group * num_perm): taken from the
        # bins where a 1-bit sketch needs them, else straight from the features
        signature[d, :] = EMPTY
        one_bit = nfeat[d] > odd_max or (nfeat[d] > compact_max and nfeat[d] >= other_min)
        if one_bit:
            bins[:] = EMPTY
            for f in range(total):
                h = feats[f]
                b = bin_of(h, sketch_bits)
                bins[b] = min(bins[b], h)
            for g in range(num_perm):  # (no division per bin)
                low = EMPTY
                for b in range(g * group, (g + 1) * group):
                    low = min(low, bins[b])
                signature[d, g] = low
        else:
            for h in kept if nfeat[d] <= compact_max else feats:
                g = bin_of(h, num_perm)
                signature[d, g] = min(signature[d, g], h)
        sh = np.uint64(0)
        for b in range(64):
            if 2 * counts[b] > total:
                sh |= ONE << np.uint64(b)
        simhash[d] = sh
        densify(signature[d])
        if 0 < nfeat[d] <= compact_max:
            encode(kept, sketch[d])
        elif nfeat[d] <= odd_max:
            sketch[d, :] = odd
            if one_bit:  # (the bins are filled)
                one_bit_sketch(bins, total, other[d], work)
        elif total:
            one_bit_sketch(bins, total, sketch[d], work)
            if nfeat[d] <= other_max:
                other[d, :] = odd
    return RawFingerprints(
        exact, simhash, sketch, signature, nfeat, feat_values[:used], feat_offsets, other
    )
