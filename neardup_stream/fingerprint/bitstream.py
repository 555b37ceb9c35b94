"""Bits of uint64 words: counting them (`popcount64`, also SimHash's distance), reversing
them, and bit streams in words, little-endian bit order: writing a few bits at a bit
position, reading a unary run or `r` bits back (what `compact_set` codes sets with).

Every operation reads or writes whole words at a time, never a branch per bit.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.hash_kernels import ONE
from neardup_stream.native import njit

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_M1 = np.uint64(0x5555555555555555)  # alternate bits, pairs, nibbles, bytes, half-words
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_M8 = np.uint64(0x00FF00FF00FF00FF)
_M16 = np.uint64(0x0000FFFF0000FFFF)
_BYTES = np.uint64(0x0101010101010101)


@njit(inline="always", cache=True)
def popcount64(x):
    """Set bits of `x`."""
    x = x - ((x >> ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return (x * _BYTES) >> np.uint64(56)


@njit(inline="always", cache=True)
def bit_length(x):
    """Bits of `x` up to its highest set one (0 for 0)."""
    n = 0
    while x:
        x >>= np.uint64(1)
        n += 1
    return n


@njit(inline="always", cache=True)
def reverse(x):
    """The 64 bits of `x` in reverse order."""
    x = ((x >> np.uint64(1)) & _M1) | ((x & _M1) << np.uint64(1))
    x = ((x >> np.uint64(2)) & _M2) | ((x & _M2) << np.uint64(2))
    x = ((x >> np.uint64(4)) & _M4) | ((x & _M4) << np.uint64(4))
    x = ((x >> np.uint64(8)) & _M8) | ((x & _M8) << np.uint64(8))
    x = ((x >> np.uint64(16)) & _M16) | ((x & _M16) << np.uint64(16))
    return (x >> np.uint64(32)) | (x << np.uint64(32))


@njit(inline="always", cache=True)
def put(out, pos, bits):
    """OR `bits` (fewer than 64, the rest zero) into the bit stream `out` at bit `pos`."""
    shift = np.uint64(pos & 63)
    out[pos >> 6] |= bits << shift
    if shift and pos + 64 - (pos & 63) < out.size * 64:
        out[(pos >> 6) + 1] |= bits >> (np.uint64(64) - shift)


@njit(inline="always", cache=True)
def ones(words, pos):
    """How many 1 bits follow bit `pos` before the next 0 (a unary code; no branch per bit)."""
    shift = np.uint64(pos & 63)
    x = words[pos >> 6] >> shift
    # x + 1 clears the run and sets the 0 after it (none when all 64 bits are set)
    ones = np.uint64(64) if x == _ALL else popcount64(x ^ (x + ONE)) - ONE
    if ones >= np.uint64(64) - shift:  # the run reaches the end of the word
        ones = np.uint64(64) - shift
        pos += np.int64(ones)
        while (words[pos >> 6] >> np.uint64(pos & 63)) & ONE:
            ones += ONE
            pos += 1
    return ones


@njit(inline="always", cache=True)
def take(words, pos, r):
    """The `r` (< 64) bits `put` wrote at bit `pos`, reversed back (most significant first)."""
    if r == 0:
        return np.uint64(0)
    shift = np.uint64(pos & 63)
    x = words[pos >> 6] >> shift
    if shift and np.int64(shift) + r > 64:
        x |= words[(pos >> 6) + 1] << (np.uint64(64) - shift)
    return reverse(x << np.uint64(64 - r))
