"""Compiled SimHash kernels: per-bit counts of the feature hashes, and the block keys.

`bit_counts` counts, for each of the 64 bit positions, the feature hashes with that bit set
(a Harley-Seal carry-save adder tree: a handful of word operations per hash, branch-free);
the weighted SimHash keeps the bits set in more than half of them. `simhash_block_keys`
cuts a SimHash into k+1 blocks (pigeonhole: within distance k two share a block) and hashes
each to a 32-bit key. The distance's bit count is `bitstream.popcount64`.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.hash_kernels import EMPTY, GOLD, ONE, S32, fmix64
from neardup_stream.native import njit


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
    return np.int64((word >> np.uint64(b)) & ONE)


@njit(inline="always", cache=True)
def _carry(slices, carry):
    """Add `carry` (a bit-vector of 16s) into the bit-sliced counter `slices`."""
    for j in range(8):
        t = slices[j] & carry
        slices[j] ^= carry
        carry = t
        if carry == 0:
            break


@njit(inline="always", cache=True)
def _flush(slices, counts):
    """Move the 16s counted in `slices` into `counts`, and clear them."""
    for b in range(64):
        c = 0
        for j in range(8):
            c += _bit(slices[j], b) << j
        counts[b] += 16 * c
    slices[:] = 0


@njit(cache=True, nogil=True)
def bit_counts(feats):
    """For each of the 64 bit positions, how many feature hashes have that bit set.

    Harley-Seal carry-save adder tree over blocks of 16 hashes (about five word operations
    per hash, branch-free), feeding a bit-sliced counter of 16s; the last (< 16) hashes go
    through the same counters one at a time, so the counts are read out once, at the end.
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
        _carry(slices, carry)
        pending += 1
        if pending == 255:  # (a slice counts up to 255 sixteens)
            _flush(slices, counts)
            pending = 0
        i += 16
    for f in range(i, n):  # a ripple through ones..eights; at most one carry into the 16s
        carry = feats[f]
        t = ones & carry
        ones ^= carry
        carry = t
        t = twos & carry
        twos ^= carry
        carry = t
        t = fours & carry
        fours ^= carry
        carry = t
        t = eights & carry
        eights ^= carry
        _carry(slices, t)
    _flush(slices, counts)
    for b in range(64):
        counts[b] += 8 * _bit(eights, b) + 4 * _bit(fours, b) + 2 * _bit(twos, b) + _bit(ones, b)
    return counts


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
            mask = EMPTY if w == 64 else (ONE << np.uint64(w)) - ONE
            block = (simhash[d] >> np.uint64(lo)) & mask
            h = fmix64(block ^ fmix64(base + np.uint64(t + 1) * GOLD))
            out[d, t] = np.uint32(h >> S32)
            lo += w
    return out
