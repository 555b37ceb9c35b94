"""Compiled 64-bit hash primitives of the fingerprint kernels, and their shared constants.

MurmurHash3_x64_128 over code points (`murmur3_128`: the exact-text hash, equal to
`mmh3.hash128` of the UTF-32LE bytes) and its 64-bit finaliser (`fmix64`), which finishes
every feature, densification, band and block hash of the other kernel modules. Pure integer
arithmetic with fixed constants: identical on every machine, process and release.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.native import njit

EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)  # an empty MinHash bin (no hash is larger)
GOLD = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: the step between derived seeds
M1 = np.uint64(0xFF51AFD7ED558CCD)  # the finaliser's multipliers
M2 = np.uint64(0xC4CEB9FE1A85EC53)
S32 = np.uint64(32)
ONE = np.uint64(1)
_S33 = np.uint64(33)
_C1 = np.uint64(0x87C37B91114253D5)
_C2 = np.uint64(0x4CF5AD432745937F)


@njit(inline="always", cache=True)
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@njit(cache=True, nogil=True)
def murmur3_128(cps, n, seed):
    """MurmurHash3_x64_128 of the UTF-32LE bytes of cps[:n]; returns (h1, h2)."""
    h1 = np.uint64(seed)
    h2 = np.uint64(seed)
    blocks = n // 4
    for i in range(blocks):
        k1 = np.uint64(cps[4 * i]) | (np.uint64(cps[4 * i + 1]) << S32)
        k2 = np.uint64(cps[4 * i + 2]) | (np.uint64(cps[4 * i + 3]) << S32)
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
            k1 |= np.uint64(cps[4 * blocks + 1]) << S32
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
    h *= M1
    h ^= h >> _S33
    h *= M2
    h ^= h >> _S33
    return h
