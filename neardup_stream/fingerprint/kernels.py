"""Compiled (numba) kernels of fingerprinting: normalisation tail, hashing, SimHash, MinHash.

Everything here is pure integer arithmetic on numpy arrays with fixed 64-bit constants, so the
results are identical on every machine, process and release (no salted hashing anywhere).
Kernels release the GIL, so the Kafka clients' threads keep working while a batch is hashed.

Input is raw UTF-8. The kernel decodes it and folds every code point through the
per-character fold table (`normalize.fold_table`); a text holding a code point that table
cannot fold on its own is folded by the full compiled NFKC + case folding (`nfkc.fold_full`)
instead, so no text goes back to Python. It then collapses whitespace runs (the `str.isspace`
set) to one space and strips the ends, so it sees exactly `normalize.normalize(text)`, and
hashes that text with MurmurHash3_x64_128 over its UTF-32LE form (equal to
`mmh3.hash128(normalized.encode("utf-32-le"), seed)`).

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
  bins filled by optimal densification, Shrivastava 2017). A document with few distinct
  features keeps its Rice-coded feature set in the sketch's place instead (`compact_set`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.caches import seed_jit_cache

seed_jit_cache()  # before the first @njit(cache=True) sets up numba's cache directory

from numba import njit  # noqa: E402

from neardup_stream.fingerprint.compact_set import encode  # noqa: E402
from neardup_stream.fingerprint.nfkc import NfkcTables, fold_full  # noqa: E402

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_FNV = np.uint64(0x100000001B3)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S33 = np.uint64(33)
_S32 = np.uint64(32)
_S63 = np.uint64(63)
_ONE = np.uint64(1)
_SPACE = np.uint32(32)
_K1 = np.uint64(0x5555555555555555)
_K2 = np.uint64(0x3333333333333333)
_K4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_KF = np.uint64(0x0101010101010101)
_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)
_POLY = np.uint64(0x9E3779B97F4A7C17)
MODE_CHAR = 0
MODE_WORD = 1
_SPACE_TABLE = np.zeros(0x3001, dtype=np.bool_)
for _c in range(0x3001):
    _SPACE_TABLE[_c] = chr(_c).isspace()


@njit(inline="always", cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, nogil=True)
def normalize_utf8(data, begin, end, out, fold_index, fold_pool):
    """Decode UTF-8 data[begin:end] into `out`, folded, whitespace collapsed and stripped.

    Every code point is replaced by casefold(NFKC(c)) from the per-character fold table.
    Returns the number of code points written, or -1 when a code point has no table entry
    or the output would not fit: the caller folds that text with `nfkc.fold_full` instead.
    """
    n = 0
    pending_space = False
    i = begin
    while i < end:
        b = np.uint32(data[i])
        if b < 0x80:
            c = b
            i += 1
        elif b < 0xE0:
            c = ((b & 0x1F) << 6) | (np.uint32(data[i + 1]) & 0x3F)
            i += 2
        elif b < 0xF0:
            c = ((b & 0x0F) << 12) | ((np.uint32(data[i + 1]) & 0x3F) << 6)
            c |= np.uint32(data[i + 2]) & 0x3F
            i += 3
        else:
            c = ((b & 0x07) << 18) | ((np.uint32(data[i + 1]) & 0x3F) << 12)
            c |= ((np.uint32(data[i + 2]) & 0x3F) << 6) | (np.uint32(data[i + 3]) & 0x3F)
            i += 4
        if c < 0x80:
            if 65 <= c <= 90:
                c += 32
            start, length = -1, 1
        elif c >= fold_index.size or fold_index[c] < 0:
            return -1
        else:
            start = fold_index[c] + 1
            length = np.int64(fold_pool[start - 1])
        if n + length + 1 > out.size:
            return -1
        for j in range(length):
            x = c if start < 0 else fold_pool[start + j]
            if x <= 0x3000 and _SPACE_TABLE[x]:
                pending_space = n > 0
                continue
            if pending_space:
                out[n] = _SPACE
                n += 1
                pending_space = False
            out[n] = x
            n += 1
    return n


@njit(cache=True, nogil=True)
def collapse_spaces(cps, out):
    """Copy folded code points to `out` (room for all of them), whitespace runs collapsed to
    one space and the ends stripped, as `normalize_utf8` does; returns the length."""
    n = 0
    pending_space = False
    for x in cps:
        if x <= 0x3000 and _SPACE_TABLE[x]:
            pending_space = n > 0
            continue
        if pending_space:
            out[n] = _SPACE
            n += 1
            pending_space = False
        out[n] = x
        n += 1
    return n


@njit(cache=True, nogil=True)
def murmur3_128(cps, n, seed):
    """MurmurHash3_x64_128 of the UTF-32LE bytes of cps[:n]; returns (h1, h2)."""
    h1 = np.uint64(seed)
    h2 = np.uint64(seed)
    blocks = n // 4
    for i in range(blocks):
        k1 = np.uint64(cps[4 * i]) | (np.uint64(cps[4 * i + 1]) << _S32)
        k2 = np.uint64(cps[4 * i + 2]) | (np.uint64(cps[4 * i + 3]) << _S32)
        k1 = _rotl(k1 * _C1, 31) * _C2
        h1 ^= k1
        h1 = _rotl(h1, 27) + h2
        h1 = h1 * np.uint64(5) + np.uint64(0x52DCE729)
        k2 = _rotl(k2 * _C2, 33) * _C1
        h2 ^= k2
        h2 = _rotl(h2, 31) + h1
        h2 = h2 * np.uint64(5) + np.uint64(0x38495AB5)
    rest = n - 4 * blocks
    if rest == 3:
        k2 = _rotl(np.uint64(cps[4 * blocks + 2]) * _C2, 33) * _C1
        h2 ^= k2
    if rest >= 1:
        k1 = np.uint64(cps[4 * blocks])
        if rest >= 2:
            k1 |= np.uint64(cps[4 * blocks + 1]) << _S32
        h1 ^= _rotl(k1 * _C1, 31) * _C2
    length = np.uint64(4 * n)
    h1 ^= length
    h2 ^= length
    h1 += h2
    h2 += h1
    h1 = fmix64(h1)
    h2 = fmix64(h2)
    h1 += h2
    h2 += h1
    return h1, h2


@njit(inline="always", cache=True)
def fmix64(h):
    h ^= h >> _S33
    h *= _M1
    h ^= h >> _S33
    h *= _M2
    h ^= h >> _S33
    return h


@njit(inline="always", cache=True)
def popcount64(x):
    x = x - ((x >> _ONE) & _K1)
    x = (x & _K2) + ((x >> np.uint64(2)) & _K2)
    x = (x + (x >> np.uint64(4))) & _K4
    return (x * _KF) >> np.uint64(56)


@njit(cache=True, nogil=True)
def _word_hashes(cps, seed):
    """FNV-1a + fmix hash of every space-separated word of a normalised text."""
    n = cps.size
    out = np.empty(n // 2 + 1, dtype=np.uint64)
    m = 0
    h = seed
    in_word = False
    for i in range(n):
        c = cps[i]
        if c == _SPACE:
            if in_word:
                out[m] = fmix64(h)
                m += 1
                in_word = False
            continue
        if not in_word:
            h = seed
            in_word = True
        h = (h ^ np.uint64(c)) * _FNV
    if in_word:
        out[m] = fmix64(h)
        m += 1
    return out[:m]


@njit(cache=True, nogil=True)
def feature_hashes(cps, mode, k, seed):
    """All feature hashes of one normalised text (code points), in order (repeats kept)."""
    useed = fmix64(np.uint64(seed) ^ _GOLD)
    if mode == MODE_CHAR:
        n = cps.size
        if n == 0:
            return np.empty(0, dtype=np.uint64)
        if n < k:
            h = np.uint64(0)
            for i in range(n):
                h = h * _POLY + np.uint64(cps[i])
            out = np.empty(1, dtype=np.uint64)
            out[0] = fmix64(h ^ useed)
            return out
        out = np.empty(n - k + 1, dtype=np.uint64)
        drop = np.uint64(1)
        for _ in range(k):
            drop *= _POLY
        h = np.uint64(0)
        for i in range(n):
            h = h * _POLY + np.uint64(cps[i])
            if i >= k:
                h -= np.uint64(cps[i - k]) * drop
            if i >= k - 1:
                out[i - k + 1] = fmix64(h ^ useed)
        return out
    units = _word_hashes(cps, np.uint64(seed))
    n = units.size
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = k if n >= k else n
    out = np.empty(n - width + 1, dtype=np.uint64)
    for i in range(n - width + 1):
        h = useed
        for j in range(width):
            h = (h ^ units[i + j]) * _FNV
        out[i] = fmix64(h)
    return out


@njit(cache=True, nogil=True)
def _densify(v):
    """Rotation densification: an empty bin takes the next non-empty bin's value, re-hashed."""
    size = v.size
    first = -1
    for i in range(size):
        if v[i] != EMPTY:
            first = i
            break
    if first < 0:
        return
    nxt = first + size
    for i in range(size - 1, -1, -1):
        if v[i] != EMPTY:
            nxt = i
        else:
            v[i] = fmix64(v[nxt % size] + np.uint64(nxt - i) * _GOLD)


class TextBatch(NamedTuple):
    """The texts of a batch as `fingerprint_batch` reads them."""

    data: np.ndarray  # uint8[...]: the concatenated UTF-8 of the texts
    offsets: np.ndarray  # int64[n + 1]: byte boundaries of each text in `data`


class FoldTable(NamedTuple):
    """The per-code-point fold table (`normalize.fold_table`) and the full path's tables."""

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


class RawFingerprints(NamedTuple):
    """What `fingerprint_batch` computes for n texts."""

    exact: np.ndarray  # uint64[n, 2]
    simhash: np.ndarray  # uint64[n]
    sketch: np.ndarray  # uint64[n, sketch_bits // 64]
    signature: np.ndarray  # uint64[n, num_perm]
    nfeat: np.ndarray  # int64[n]: distinct features (the set size)
    feats: np.ndarray  # uint64[...]: kept sorted distinct feature hashes (CSR values)
    feat_offsets: np.ndarray  # int64[n + 1]: text d's are feats[off[d]:off[d + 1]]


@njit(cache=True, nogil=True)
def fingerprint_batch(texts, fold, spec):
    """Fingerprint every document of a batch in one call.

    Args:
        texts: A `TextBatch`.
        fold: The `FoldTable`.
        spec: The `Shingling`. Documents with at most `spec.compact_max` distinct features
            get their set coded into the sketch (`compact_set`) instead of the 1-bit OPH
            sketch; those with at most `spec.keep_max` return them sorted.

    Returns:
        `RawFingerprints` of every text.
    """
    data, offsets = texts.data, texts.offsets
    mode, k, seed = spec.mode, spec.k, spec.seed
    sketch_bits, num_perm = spec.sketch_bits, spec.num_perm
    compact_max, keep_max = spec.compact_max, spec.keep_max
    n = offsets.size - 1
    words = sketch_bits // 64
    exact = np.empty((n, 2), dtype=np.uint64)
    simhash = np.zeros(n, dtype=np.uint64)
    sketch = np.zeros((n, words), dtype=np.uint64)
    signature = np.empty((n, num_perm), dtype=np.uint64)
    nfeat = np.zeros(n, dtype=np.int64)
    group = sketch_bits // num_perm
    longest = 0
    for d in range(n):
        longest = max(longest, offsets[d + 1] - offsets[d])
    buf = np.empty(2 * longest + 64, dtype=np.uint32)
    bins = np.empty(sketch_bits, dtype=np.uint64)
    seen = np.empty(64, dtype=np.uint32)
    scratch = np.empty(2 * keep_max + 2, dtype=np.int64)
    room = 0
    for d in range(n):
        room += min(offsets[d + 1] - offsets[d], keep_max)
    feat_values = np.empty(room, dtype=np.uint64)
    feat_offsets = np.zeros(n + 1, dtype=np.int64)
    used = 0
    for d in range(n):
        m = normalize_utf8(data, offsets[d], offsets[d + 1], buf, fold.lookup, fold.pool)
        if m < 0:
            folded = fold_full(data, offsets[d], offsets[d + 1], fold.full)
            if folded.size > buf.size:
                buf = np.empty(folded.size + 64, dtype=np.uint32)
            m = collapse_spaces(folded, buf)
        exact[d, 0], exact[d, 1] = murmur3_128(buf, m, seed)
        feats = feature_hashes(buf[:m], mode, k, seed)
        counts = bit_counts(feats)
        total = feats.size
        # a signature value is the minimum of its group of bins (bin // group is the hash's
        # top 32 bits scaled to num_perm, as sketch_bits = group * num_perm): taken from the
        # bins where the 1-bit sketch may need them, else straight from the features
        signature[d, :] = EMPTY
        if total > compact_max:
            bins[:] = EMPTY
            for f in range(total):
                h = feats[f]
                b = _bin(h, sketch_bits)
                bins[b] = min(bins[b], h)
            for b in range(sketch_bits):
                g = b // group
                signature[d, g] = min(signature[d, g], bins[b])
        else:
            for f in range(total):
                h = feats[f]
                g = _bin(h, num_perm)
                signature[d, g] = min(signature[d, g], h)
        if _set_size(total) > seen.size:
            seen = np.empty(_set_size(total), dtype=np.uint32)
        nfeat[d] = distinct_count(feats, seen)
        sh = np.uint64(0)
        for b in range(64):
            if 2 * counts[b] > total:
                sh |= _ONE << np.uint64(b)
        simhash[d] = sh
        _densify(signature[d])
        if nfeat[d] <= keep_max:
            if 2 * feats.size + 2 > scratch.size:
                scratch = np.empty(2 * feats.size + 2, dtype=np.int64)
            if used + feats.size > feat_values.size:  # folding can make more than it read
                grown = np.empty(max(2 * feat_values.size, used + feats.size), dtype=np.uint64)
                grown[:used] = feat_values[:used]
                feat_values = grown
            used = _sorted_distinct(feats, feat_values, used, scratch)
        feat_offsets[d + 1] = used
        if 0 < nfeat[d] <= compact_max:
            encode(feat_values[feat_offsets[d] : used], sketch[d])
        elif total:  # more than compact_max features, so the bins are filled
            _sketch_bits(bins, total, sketch[d])
    return RawFingerprints(
        exact, simhash, sketch, signature, nfeat, feat_values[:used], feat_offsets
    )


@njit(cache=True, nogil=True)
def _sorted_distinct(feats, out, used, counts):
    """Append the sorted distinct values of `feats` to out[used:] (room for all of them);
    returns the new end."""
    part = out[used : used + feats.size]
    bucket_sort(feats, part, counts)
    m = 0
    for j in range(part.size):
        if j == 0 or part[j] != part[m - 1]:
            part[m] = part[j]
            m += 1
    return used + m


@njit(cache=True, nogil=True)
def bucket_sort(values, out, counts):
    """Sort uniformly spread 64-bit `values` into `out` in expected linear time.

    A counting pass places every value in one of ~n buckets by its top bits (`counts`, of at
    least 2n + 2 entries, is the scratch space), then an insertion sort finishes the nearly
    sorted array: each value moves past O(1) others on average. Hashes are uniform, so this
    beats a comparison sort (about 5x at a few hundred values)."""
    n = values.size
    bits = 1
    while (1 << bits) < n:
        bits += 1
    shift = np.uint64(64 - bits)
    buckets = 1 << bits
    counts[: buckets + 1] = 0
    for i in range(n):
        counts[np.int64(values[i] >> shift) + 1] += 1
    for b in range(buckets):
        counts[b + 1] += counts[b]
    for i in range(n):
        h = values[i]
        b = np.int64(h >> shift)
        out[counts[b]] = h
        counts[b] += 1
    for i in range(1, n):
        h = out[i]
        j = i
        while j > 0 and out[j - 1] > h:
            out[j] = out[j - 1]
            j -= 1
        out[j] = h


@njit(inline="always", cache=True)
def _bin(h, k):
    """Bin of the hash `h` among `k` (at most 2**32): its top 32 bits scaled to [0, k)
    (multiply-shift). For k a power of two this is exactly h's top log2(k) bits, so sketches
    of power-of-two sizes are what they were when only those were allowed."""
    return ((h >> _S32) * np.uint64(k)) >> _S32


@njit(inline="always", cache=True)
def _probe(x, k):
    """Bin of the probe `x` among `k`: half of fmix64 (one xor-shift, one multiply)."""
    x ^= x >> _S32
    return _bin(x * _M1, k)


@njit(cache=True, nogil=True)
def _sketch_bits(bins, total, out):
    """The 1-bit sketch of OPH `bins`: the lowest bit of every bin's minimum; an empty bin
    borrows from the first non-empty bin of its own fixed pseudo-random probe sequence
    (optimal densification, Shrivastava 2017), re-hashed with the bin's index.

    Two sets agree on a bin with probability J whatever their sizes, and unlike rotation
    (which copies each value over a run of empty bins of random length) every non-empty bin
    is borrowed about equally often, so a sparse document's sketch stays close to the
    variance of independent permutations. Writes nothing for an empty set."""
    if total == 0:
        return
    k = bins.size
    for i in range(k):
        v = bins[i]
        if v == EMPTY:
            key = (np.uint64(i) + _ONE) * _M2
            step = _GOLD
            j = _probe(key + step, k)
            while bins[j] == EMPTY:
                step += _GOLD
                j = _probe(key + step, k)
            v = ((bins[j] ^ key) * _M1) >> _S63  # one well-mixed bit of (borrowed value, i)
        out[i >> 6] |= (v & _ONE) << np.uint64(i & 63)


@njit(cache=True, nogil=True)
def oph_sketch(feats, sketch_bits, out):
    """Write the 1-bit one-permutation sketch of hashes `feats` to the zeroed array `out`."""
    bins = np.full(sketch_bits, EMPTY, dtype=np.uint64)
    for f in range(feats.size):
        h = feats[f]
        b = _bin(h, sketch_bits)
        bins[b] = min(bins[b], h)
    _sketch_bits(bins, feats.size, out)


@njit(inline="always", cache=True)
def _set_size(n):
    size = 64
    while size < 2 * n:
        size *= 2
    return size


@njit(cache=True, nogil=True)
def distinct_count(feats, seen):
    """Number of distinct hashes in `feats`, using `seen` as an open-addressing hash set."""
    size = _set_size(feats.size)
    if seen.size < size:
        seen = np.empty(size, dtype=np.uint32)
    mask = size - 1
    seen[:size] = 0
    n = 0
    for f in range(feats.size):
        h = feats[f]
        tag = np.uint32(h >> _S32) | np.uint32(1)
        j = np.int64(h & np.uint64(mask))
        slot = seen[j]
        while slot != 0 and slot != tag:
            j = (j + 1) & mask
            slot = seen[j]
        # branch-free: whether a hash is new is a coin flip the CPU cannot predict
        seen[j] = tag
        n += np.int64(slot == 0)
    return n


@njit(inline="always", cache=True)
def _csa(a, b, c):
    """Carry-save adder: (carry, sum) of three bit-vectors."""
    u = a ^ b
    return (a & b) | (u & c), u ^ c


@njit(inline="always", cache=True)
def _add8(feats, i, ones, twos, fours):
    """Add feats[i:i+8] into the ones/twos/fours counters; returns (eights carry, counters)."""
    twos_a, ones = _csa(ones, feats[i], feats[i + 1])
    twos_b, ones = _csa(ones, feats[i + 2], feats[i + 3])
    fours_a, twos = _csa(twos, twos_a, twos_b)
    twos_a, ones = _csa(ones, feats[i + 4], feats[i + 5])
    twos_b, ones = _csa(ones, feats[i + 6], feats[i + 7])
    fours_b, twos = _csa(twos, twos_a, twos_b)
    eights, fours = _csa(fours, fours_a, fours_b)
    return eights, ones, twos, fours


@njit(inline="always", cache=True)
def _bit(word, b):
    return np.int64((word >> np.uint64(b)) & _ONE)


@njit(cache=True, nogil=True)
def bit_counts(feats):
    """For each of the 64 bit positions, how many feature hashes have that bit set.

    Harley-Seal carry-save adder tree over blocks of 16 hashes (about five word operations
    per hash, branch-free), feeding a bit-sliced counter of 16s.
    """
    ones = twos = fours = eights = np.uint64(0)
    slices = np.zeros(8, dtype=np.uint64)
    counts = np.zeros(64, dtype=np.int64)
    pending = 0
    n = feats.size
    i = 0
    while i + 16 <= n:
        eights_a, ones, twos, fours = _add8(feats, i, ones, twos, fours)
        eights_b, ones, twos, fours = _add8(feats, i + 8, ones, twos, fours)
        carry, eights = _csa(eights, eights_a, eights_b)
        for j in range(8):
            t = slices[j] & carry
            slices[j] ^= carry
            carry = t
            if carry == 0:
                break
        pending += 1
        if pending == 255 or i + 32 > n:
            for b in range(64):
                c = 0
                for j in range(8):
                    c += _bit(slices[j], b) << j
                counts[b] += 16 * c
            slices[:] = 0
            pending = 0
        i += 16
    for b in range(64):
        counts[b] += 8 * _bit(eights, b) + 4 * _bit(fours, b) + 2 * _bit(twos, b) + _bit(ones, b)
        for f in range(i, n):
            counts[b] += _bit(feats[f], b)
    return counts


@njit(cache=True, nogil=True)
def band_keys(signature, bands, rows, seed):
    """32-bit LSH bucket keys: one per band of `rows` consecutive signature values."""
    n = signature.shape[0]
    out = np.empty((n, bands), dtype=np.uint32)
    base = np.uint64(seed) ^ np.uint64(0xB5AD4ECEDA1CE2A9)
    for d in range(n):
        for b in range(bands):
            h = fmix64(base + np.uint64(b + 1) * _GOLD)
            for r in range(rows):
                h = fmix64(h ^ signature[d, b * rows + r])
            out[d, b] = np.uint32(h >> _S32)
    return out


@njit(cache=True, nogil=True)
def simhash_block_keys(simhash, k, seed):
    """32-bit keys of the k+1 SimHash blocks (pigeonhole: distance <= k shares a block)."""
    n = simhash.size
    blocks = k + 1
    width = 64 // blocks
    out = np.empty((n, blocks), dtype=np.uint32)
    base = np.uint64(seed) ^ np.uint64(0x51D4A5B10C4E7F23)
    for d in range(n):
        lo = 0
        for t in range(blocks):
            w = 64 - lo if t == blocks - 1 else width
            mask = EMPTY if w == 64 else (_ONE << np.uint64(w)) - _ONE
            block = (simhash[d] >> np.uint64(lo)) & mask
            h = fmix64(block ^ fmix64(base + np.uint64(t + 1) * _GOLD))
            out[d, t] = np.uint32(h >> _S32)
            lo += w
    return out
