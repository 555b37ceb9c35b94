"""Compiled (numba) kernels: the hot loops of fingerprinting, bucket tables and verification.

Everything here is pure integer arithmetic on numpy arrays with fixed 64-bit constants, so the
results are identical on every machine, process and release (no salted hashing anywhere).

Feature hashing: a feature (character k-gram over code points, or word n-gram) is hashed
with FNV-1a over 32-bit units followed by the MurmurHash3 64-bit finaliser, seeded.

One pass over the features of a document computes, per feature, in O(1):
* the weighted SimHash (term-frequency weights: every occurrence votes), accumulated with
  bit-sliced counters so a vote costs a handful of word operations instead of 64 adds;
* a one-permutation MinHash (OPH) of `sketch_bits` bins: bin = top bits of a second hash,
  value = min hash in the bin. Grouping bins gives the `num_perm`-value MinHash signature used
  for LSH banding; the lowest bit of every bin gives the 1-bit verification sketch (b-bit
  minwise hashing). Empty bins are filled by rotation densification (Shrivastava & Li 2014).
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)
_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_FNV = np.uint64(0x100000001B3)
_GOLD = np.uint64(0x9E3779B97F4A7C15)
_S33 = np.uint64(33)
_S32 = np.uint64(32)
_ONE = np.uint64(1)
_SPACE = np.uint32(32)
_K1 = np.uint64(0x5555555555555555)
_K2 = np.uint64(0x3333333333333333)
_K4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_KF = np.uint64(0x0101010101010101)
_U32 = np.uint64(0xFFFFFFFF)
MODE_CHAR = 0
MODE_WORD = 1


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


@njit(cache=True)
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


@njit(cache=True)
def feature_hashes(cps, mode, k, seed):
    """All feature hashes of one normalised text, in order (repeats kept)."""
    useed = np.uint64(seed)
    units = cps.astype(np.uint64) if mode == MODE_CHAR else _word_hashes(cps, useed)
    n = units.size
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    width = k if n >= k else n
    count = n - width + 1
    out = np.empty(count, dtype=np.uint64)
    for i in range(count):
        h = useed
        for j in range(width):
            h = (h ^ units[i + j]) * _FNV
        out[i] = fmix64(h)
    return out


@njit(cache=True)
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


@njit(cache=True)
def fingerprint_batch(cps, offsets, mode, k, seed, sketch_bits, num_perm):
    """Fingerprint every document of a batch in one call.

    Args:
        cps: Concatenated code points (uint32) of the normalised texts.
        offsets: int64 array of n+1 boundaries into `cps`.
        mode: MODE_CHAR or MODE_WORD.
        k: Shingle size.
        seed: Hash seed.
        sketch_bits: OPH bins (power of two); also the 1-bit sketch length.
        num_perm: MinHash signature length (power of two <= sketch_bits).

    Returns:
        simhash uint64[n], sketch uint64[n, sketch_bits // 64], signature uint64[n, num_perm],
        nfeat int64[n] (feature occurrences).
    """
    n = offsets.size - 1
    words = sketch_bits // 64
    simhash = np.zeros(n, dtype=np.uint64)
    sketch = np.zeros((n, words), dtype=np.uint64)
    signature = np.empty((n, num_perm), dtype=np.uint64)
    nfeat = np.zeros(n, dtype=np.int64)
    log2 = 0
    while (1 << log2) < sketch_bits:
        log2 += 1
    shift = np.uint64(64 - log2)
    group = sketch_bits // num_perm
    bins = np.empty(sketch_bits, dtype=np.uint64)
    slices = np.zeros(8, dtype=np.uint64)
    counts = np.zeros(64, dtype=np.int64)
    for d in range(n):
        feats = feature_hashes(cps[offsets[d] : offsets[d + 1]], mode, k, seed)
        bins[:] = EMPTY
        slices[:] = 0
        counts[:] = 0
        pending = 0
        for f in range(feats.size):
            h = feats[f]
            carry = h
            for j in range(8):
                t = slices[j] & carry
                slices[j] ^= carry
                carry = t
                if carry == 0:
                    break
            pending += 1
            if pending == 255:
                for b in range(64):
                    c = 0
                    for j in range(8):
                        c += np.int64((slices[j] >> np.uint64(b)) & _ONE) << j
                    counts[b] += c
                slices[:] = 0
                pending = 0
            h2 = fmix64(h + _GOLD)
            b = h2 >> shift
            if h2 < bins[b]:
                bins[b] = h2
        for b in range(64):
            c = 0
            for j in range(8):
                c += np.int64((slices[j] >> np.uint64(b)) & _ONE) << j
            counts[b] += c
        total = feats.size
        nfeat[d] = total
        sh = np.uint64(0)
        for b in range(64):
            if 2 * counts[b] > total:
                sh |= _ONE << np.uint64(b)
        simhash[d] = sh
        for g in range(num_perm):
            m = EMPTY
            for j in range(g * group, (g + 1) * group):
                if bins[j] < m:
                    m = bins[j]
            signature[d, g] = m
        _densify(signature[d])
        _densify(bins)
        if total > 0:
            for j in range(sketch_bits):
                sketch[d, j >> 6] |= (bins[j] & _ONE) << np.uint64(j & 63)
    return simhash, sketch, signature, nfeat


@njit(cache=True)
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


@njit(cache=True)
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


@njit(inline="always", cache=True)
def _alive(ref, base, count):
    return ((np.uint64(ref) - np.uint64(base)) & _U32) < np.uint64(count)


@njit(cache=True)
def table_probe(heads, nxt, keys, refs, qkeys, out):
    """Write to `out` the refs stored under `qkeys`; returns how many exist (may exceed out)."""
    mask = heads.size - 1
    n = 0
    for q in qkeys:
        e = heads[q & mask]
        while e >= 0:
            if keys[e] == q:
                if n < out.size:
                    out[n] = refs[e]
                n += 1
            e = nxt[e]
    return n


@njit(cache=True)
def table_insert(heads, nxt, keys, refs, size, qkeys, ref, cap, base, count):
    """Insert (key, ref) for every key unless its bucket already holds `cap` live refs."""
    mask = heads.size - 1
    for q in qkeys:
        b = q & mask
        e = heads[b]
        same = 0
        while e >= 0:
            if keys[e] == q and _alive(refs[e], base, count):
                same += 1
            e = nxt[e]
        if same >= cap:
            continue
        keys[size] = q
        refs[size] = ref
        nxt[size] = heads[b]
        heads[b] = size
        size += 1
    return size


@njit(cache=True)
def table_rehash(heads, nxt, keys, size):
    """Rebuild the bucket chains for the first `size` entries."""
    heads[:] = -1
    mask = heads.size - 1
    for e in range(size):
        b = keys[e] & mask
        nxt[e] = heads[b]
        heads[b] = e


@njit(cache=True)
def table_compact(heads, nxt, keys, refs, size, base, count):
    """Drop entries whose ref left the live window; returns the new size."""
    m = 0
    for e in range(size):
        if _alive(refs[e], base, count):
            keys[m] = keys[e]
            refs[m] = refs[e]
            m += 1
    table_rehash(heads, nxt, keys, m)
    return m


@njit(cache=True)
def estimate_jaccard(a, b):
    """Jaccard estimate from two 1-bit OPH sketches: P(bit equal) = (1 + J) / 2."""
    diff = 0
    for i in range(a.size):
        diff += popcount64(a[i] ^ b[i])
    bits = a.size * 64
    j = 1.0 - 2.0 * diff / bits
    return j if j > 0.0 else 0.0


@njit(cache=True)
def verify(
    cands,
    base,
    count,
    start,
    q_sketch,
    q_simhash,
    q_exact,
    q_nfeat,
    st_sketch,
    st_simhash,
    st_exact,
    st_nfeat,
    min_sim,
):
    """Verify candidate refs against the store; keep those with estimate >= min_sim.

    Returns refs, similarity estimates, Hamming distances and exact-match flags.
    """
    cands = np.sort(cands)
    cap = st_simhash.size
    out_ref = np.empty(cands.size, dtype=np.uint32)
    out_sim = np.empty(cands.size, dtype=np.float64)
    out_ham = np.empty(cands.size, dtype=np.int64)
    out_exact = np.zeros(cands.size, dtype=np.bool_)
    n = 0
    last = -1
    for i in range(cands.size):
        ref = cands[i]
        if np.int64(ref) == last:
            continue
        last = np.int64(ref)
        d = (np.uint64(ref) - np.uint64(base)) & _U32
        if d >= np.uint64(count):
            continue
        p = (start + np.int64(d)) % cap
        exact = st_exact[p, 0] == q_exact[0] and st_exact[p, 1] == q_exact[1]
        if exact:
            sim = 1.0
        elif q_nfeat == 0 or st_nfeat[p] == 0:
            continue
        else:
            sim = estimate_jaccard(q_sketch, st_sketch[p])
        if sim < min_sim:
            continue
        out_ref[n] = ref
        out_sim[n] = sim
        out_ham[n] = np.int64(popcount64(q_simhash ^ st_simhash[p]))
        out_exact[n] = exact
        n += 1
    return out_ref[:n], out_sim[:n], out_ham[:n], out_exact[:n]
