"""Odd sketches: the verification sketch of mid-sized documents (Mitzenmacher, Pagh & Pham,
"Efficient estimation for high similarities using odd sketches", WWW 2014).

Every distinct feature hash flips one of the sketch's `sketch_bits` bits (its low 32 bits
scaled to the bit count: independent of the top bits the one-permutation bins and the
compact sets use), so the XOR of two documents' sketches is the odd sketch of their
symmetric difference: with `H` bits set among `m`, the difference holds about
d = -(m / 2) ln(1 - 2H / m) features, and with the two set sizes known exactly, Jaccard is
(|A| + |B| - d) / (|A| + |B| + d).

Why: a 1-bit one-permutation sketch spends a bit on every bin, most of them the same in
two near-duplicates, and its standard deviation is ~0.011 at J = 0.8 and 3,072 bits
whatever the document's size. An odd sketch spends its bits on the difference only:
measured at 3,072 bits (`bench.bench_sketch_noise`), standard deviations 0.005-0.007 at
J = 0.8 up to 6,000 features, 0.003 at J = 0.9 and 0.007-0.012 at J = 0.7. Past a size that
depends on the similarity (`sketch_forms.odd_limit`) the difference fills the sketch and the
1-bit sketch is the better one.
"""

from __future__ import annotations

import math

import numpy as np

from neardup_stream.fingerprint.bitstream import popcount64
from neardup_stream.fingerprint.hash_kernels import ONE, S32
from neardup_stream.fingerprint.sketch_forms import SATURATED
from neardup_stream.native import njit

_LOW32 = np.uint64(0xFFFFFFFF)
_S6 = np.uint64(6)
_M63 = np.uint64(63)


@njit(inline="always", cache=True)
def odd_bit(h, bits):
    """The bit feature hash `h` flips among `bits`: its low 32 bits scaled (multiply-shift)."""
    return ((h & _LOW32) * np.uint64(bits)) >> S32


@njit(inline="always", cache=True)
def flip(h, out, bits, on):
    """Flip `h`'s bit in the odd sketch `out` (uint64[bits // 64]) when `on` is 1, not when 0
    (a uint64: branch-free for callers that learn per hash whether it counts)."""
    b = odd_bit(h, bits)
    out[b >> _S6] ^= on << (b & _M63)


@njit(cache=True, nogil=True)
def odd_sketch(distinct, out):
    """Fill `out` (uint64 words, zeroed) with the odd sketch of the distinct hashes given."""
    bits = out.size * 64
    for i in range(distinct.size):
        flip(distinct[i], out, bits, ONE)


@njit(cache=True, nogil=True)
def odd_estimate(a, b, n_a, n_b):
    """Jaccard of two sets of `n_a` and `n_b` distinct features from their odd sketches.

    A difference much larger than the sketch leaves about half its bits odd whatever its
    size, and there the estimate is noise (a pair at J = 0.3 of 9,000 features each can read
    0.5): within three standard deviations of half the bits (sqrt(m) / 2 each), the sketch
    says only "far apart", and the estimate is 0. Near any threshold the index verifies at,
    the difference is far smaller (`sketch_forms.odd_limit`)."""
    total = n_a + n_b
    if total == 0:
        return 0.0
    m = a.size * 64
    h = 0
    for w in range(a.size):
        h += popcount64(a[w] ^ b[w])
    if m - 2 * h <= SATURATED * math.sqrt(m):  # saturated: no information left
        return 0.0
    d = -0.5 * m * math.log1p(-2.0 * h / m)
    return min(max((total - d) / (total + d), 0.0), 1.0)
