"""Compiled MinHash kernels: one-permutation bins, densification, 1-bit sketches, LSH keys.

A feature hash falls in bin `bin_of(h, k)` (its top 32 bits scaled to k) and a bin keeps the
minimum. Grouped bins give the `num_perm`-value signature, its empty groups filled by
rotation (`densify`, Shrivastava & Li 2014); the lowest bit of every bin gives the 1-bit
verification sketch, its empty bins filled by optimal densification (`one_bit_sketch`,
Shrivastava 2017). `band_keys` hashes bands of the signature into 32-bit LSH bucket keys.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.fingerprint.hash_kernels import EMPTY, GOLD, M1, M2, ONE, S32, fmix64
from neardup_stream.native import njit

_S63 = np.uint64(63)


@njit(inline="always", cache=True)
def bin_of(h, k):
    """Bin of the hash `h` among `k` (at most 2**32): its top 32 bits scaled to [0, k)
    (multiply-shift). For k a power of two this is exactly h's top log2(k) bits, so sketches
    of power-of-two sizes are what they were when only those were allowed."""
    return ((h >> S32) * np.uint64(k)) >> S32


@njit(inline="always", cache=True)
def _probe(x, k):
    """Bin of the probe `x` among `k`: half of fmix64 (one xor-shift, one multiply)."""
    x ^= x >> S32
    return bin_of(x * M1, k)


@njit(cache=True, nogil=True)
def densify(v):
    """Rotation densification: an empty bin takes the next non-empty bin's value, re-hashed."""
    size = v.size
    empty = 0
    for i in range(size):  # (vectorised: most signatures have no empty bin, and end here)
        empty += np.int64(v[i] == EMPTY)
    if empty == 0 or empty == size:
        return
    first = 0
    while v[first] == EMPTY:
        first += 1
    nxt = first + size  # the next non-empty bin after i, counted past the end
    src = first  # the same bin, wrapped: nxt % size
    for i in range(size - 1, -1, -1):  # branch-free: which bins are empty is unpredictable
        x = v[i]
        full = np.int64(x != EMPTY)
        keep = np.uint64(0) - np.uint64(full)  # all ones where the bin is full
        v[i] = (x & keep) | (fmix64(v[src] + np.uint64(nxt - i) * GOLD) & ~keep)
        nxt += (i - nxt) * full
        src += (i - src) * full


class SketchScratch(NamedTuple):
    """Work arrays of `one_bit_sketch` for `k` bins (made once per batch: `sketch_scratch`)."""

    todo: np.ndarray  # int64[k]: the empty bins still looking for a non-empty one
    keys: np.ndarray  # uint64[k]: their probe keys
    bits: np.ndarray  # uint8[k]: the bit each empty bin borrowed
    empty: np.ndarray  # int64[k]: every empty bin, in order


@njit(cache=True, nogil=True)
def sketch_scratch(k):
    return SketchScratch(
        np.empty(k, dtype=np.int64),
        np.empty(k, dtype=np.uint64),
        np.empty(k, dtype=np.uint8),
        np.empty(k, dtype=np.int64),
    )


@njit(cache=True, nogil=True)
def one_bit_sketch(bins, total, out, work):
    """The 1-bit sketch of OPH `bins`: the lowest bit of every bin's minimum; an empty bin
    borrows from the first non-empty bin of its own fixed pseudo-random probe sequence
    (optimal densification, Shrivastava 2017), re-hashed with the bin's index.

    Two sets agree on a bin with probability J whatever their sizes, and unlike rotation
    (which copies each value over a run of empty bins of random length) every non-empty bin
    is borrowed about equally often, so a sparse document's sketch stays close to the
    variance of independent permutations. Writes nothing for an empty set.

    The probes run in rounds over the empty bins still unresolved (the t-th probe of each,
    then the next round over those that missed), without a branch per bin or per probe:
    the same bits as probing bin by bin, 1.5-3x faster (`work`: `sketch_scratch(k)`)."""
    if total == 0:
        return
    k = bins.size
    todo, keys, bits, empty = work
    w = 0
    for word in range(k >> 6):  # every bin's low bit (an empty bin's is EMPTY's, 1); queue
        acc = np.uint64(0)
        for r in range(64):
            i = (word << 6) + r
            v = bins[i]
            acc |= (v & ONE) << np.uint64(r)
            todo[w] = i
            w += v == EMPTY
        out[word] |= acc
    for t in range(w):
        empty[t] = todo[t]
        keys[t] = (np.uint64(todo[t]) + ONE) * M2
    queued = w
    step = GOLD
    while w:
        n = 0
        for t in range(w):
            i, key = todo[t], keys[t]
            b = bins[_probe(key + step, k)]
            bits[i] = np.uint8(((b ^ key) * M1) >> _S63)  # one well-mixed bit of (b, i)
            todo[n], keys[n] = i, key
            n += b == EMPTY
        w = n
        step += GOLD
    for t in range(queued):  # their bit is EMPTY's 1 so far: flip where the borrowed is 0
        i = empty[t]
        out[i >> 6] ^= np.uint64(bits[i] ^ 1) << np.uint64(i & 63)


@njit(cache=True, nogil=True)
def oph_sketch(feats, sketch_bits, out):
    """Write the 1-bit one-permutation sketch of hashes `feats` to the zeroed array `out`."""
    bins = np.full(sketch_bits, EMPTY, dtype=np.uint64)
    for f in range(feats.size):
        h = feats[f]
        b = bin_of(h, sketch_bits)
        bins[b] = min(bins[b], h)
    one_bit_sketch(bins, feats.size, out, sketch_scratch(sketch_bits))


@njit(cache=True, nogil=True)
def band_keys(signature, bands, rows, seed):
    """32-bit LSH bucket keys: one per band of `rows` consecutive signature values."""
    n = signature.shape[0]
    out = np.empty((n, bands), dtype=np.uint32)
    base = np.uint64(seed) ^ np.uint64(0xB5AD4ECEDA1CE2A9)
    for d in range(n):
        for b in range(bands):
            h = fmix64(base + np.uint64(b + 1) * GOLD)
            for r in range(rows):
                h = fmix64(h ^ signature[d, b * rows + r])
            out[d, b] = np.uint32(h >> S32)
    return out
