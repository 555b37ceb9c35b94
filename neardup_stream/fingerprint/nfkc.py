"""Full NFKC + case folding in compiled code, for texts the per-character fold table cannot fold.

The kernel's fast path (`text_kernels.normalize_text`) maps each code point on its own through
`normalize.fold_table()`, which is exact only for code points that cannot interact with their
neighbours under NFKC. A text holding any other code point (a combining mark, a Hangul
syllable or jamo, a starter that composes backwards, a code point past the table) is folded
here instead, still inside the kernel, exactly as `normalize.fold` does in Python:

1. decode UTF-8 and replace every code point by its full compatibility decomposition (NFKD);
2. put every run of non-starters in canonical order (stable sort by combining class);
3. canonical composition (UAX #15: a character composes with the last starter unless blocked);
4. case fold every code point (`str.casefold` is per character).

The tables (`NfkcTables`) come from `unicodedata`, so they follow the Python's Unicode version
like the fast table does, and are kept on disk (`caches`). Code points at or past `limit`
are their own decomposition and fold, have combining class 0 and compose with nothing
(checked when the tables are built). A property test checks this path against `normalize`.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from neardup_stream.caches import cached_arrays
from neardup_stream.native import njit

_TOP = 0x110000
_HANGUL_S, _HANGUL_L, _HANGUL_V, _HANGUL_T = 0xAC00, 0x1100, 0x1161, 0x11A7
_MISSING = np.uint64(0xFFFFFFFFFFFFFFFF)
_S32 = np.uint64(32)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_NAMES = ("decomp", "ccc", "casefold", "pool", "keys", "values")


class NfkcTables(NamedTuple):
    """What the compiled full normalisation reads (built by `build_nfkc_tables`)."""

    decomp: np.ndarray  # int32[limit]: where NFKD(c) starts in `pool` (length first), or -1: c
    ccc: np.ndarray  # uint8[limit]: canonical combining class
    casefold: np.ndarray  # int32[limit]: where casefold(c) starts in `pool`, or -1: c
    pool: np.ndarray  # uint32[...]: length, then code points, per entry
    keys: np.ndarray  # uint64[2**k]: open-addressing table of (first << 32 | second) pairs
    values: np.ndarray  # uint32[2**k]: the primary composite of each pair in `keys`


@lru_cache(maxsize=1)
def nfkc_tables() -> NfkcTables:
    """The tables for this Python's Unicode version, from the disk cache or built (seconds)."""
    name = f"nfkc-v1-unicode{unicodedata.unidata_version}.npz"
    return NfkcTables(*cached_arrays(name, _NAMES, build_nfkc_tables))


def _pairs() -> dict[tuple[int, int], int]:
    """Every primary composite by its two-character canonical decomposition, Hangul included."""
    pairs = {}
    for c in range(_TOP):
        d = unicodedata.decomposition(chr(c))
        if d and not d.startswith("<") and len(d.split()) == 2:
            a, b = (int(x, 16) for x in d.split())
            if unicodedata.normalize("NFC", chr(a) + chr(b)) == chr(c):
                pairs[(a, b)] = c
    for lv in range(19 * 21):
        s = _HANGUL_S + lv * 28
        pairs[(_HANGUL_L + lv // 21, _HANGUL_V + lv % 21)] = s
        for t in range(1, 28):
            pairs[(s, _HANGUL_T + t)] = s + t
    return pairs


def build_nfkc_tables() -> tuple[np.ndarray, ...]:
    """Compute `nfkc_tables()` from `unicodedata` (a few seconds)."""
    pairs = _pairs()
    composing = {c for pair in pairs for c in pair}
    decomp = np.full(_TOP, -1, dtype=np.int32)
    casefold = np.full(_TOP, -1, dtype=np.int32)
    ccc = np.zeros(_TOP, dtype=np.uint8)
    pool: list[int] = []
    limit = 0
    for c in range(_TOP):
        ch = chr(c)
        if 0xD800 <= c <= 0xDFFF:
            continue  # a lone surrogate is left alone by NFKC and casefold
        ccc[c] = unicodedata.combining(ch)
        for table, mapped in (
            (decomp, unicodedata.normalize("NFKD", ch)),
            (casefold, ch.casefold()),
        ):
            if mapped != ch:
                table[c] = len(pool)
                pool.append(len(mapped))
                pool.extend(ord(x) for x in mapped)
        if decomp[c] >= 0 or casefold[c] >= 0 or ccc[c] or c in composing:
            limit = c + 1
    keys, values = _compose_table(pairs)
    return decomp[:limit], ccc[:limit], casefold[:limit], np.array(pool, np.uint32), keys, values


def _compose_table(pairs: dict[tuple[int, int], int]) -> tuple[np.ndarray, np.ndarray]:
    size = 1 << max(4, (4 * len(pairs)).bit_length())
    keys = np.full(size, _MISSING, dtype=np.uint64)
    values = np.zeros(size, dtype=np.uint32)
    for (a, b), c in pairs.items():
        key = np.uint64(a << 32 | b)
        j = _slot(key, size)
        while keys[j] != _MISSING:
            j = (j + 1) & (size - 1)
        keys[j], values[j] = key, c
    return keys, values


@njit(inline="always", cache=True)
def _slot(key, size):
    return np.int64(((key * _MIX) >> _S32) & np.uint64(size - 1))


@njit(cache=True, nogil=True)
def _compose(first, second, keys, values):
    """The primary composite of (first, second), or -1."""
    key = (np.uint64(first) << _S32) | np.uint64(second)
    mask = keys.size - 1
    j = _slot(key, keys.size)
    while keys[j] != _MISSING:
        if keys[j] == key:
            return np.int64(values[j])
        j = (j + 1) & mask
    return np.int64(-1)


@njit(inline="always", cache=True)
def _class(c, ccc):
    return np.int64(ccc[c]) if c < ccc.size else np.int64(0)


@njit(cache=True, nogil=True)
def _decode(data, begin, end):
    out = np.empty(end - begin, dtype=np.uint32)
    n = 0
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
        out[n] = c
        n += 1
    return out[:n]


@njit(cache=True, nogil=True)
def _expand(cps, index, pool):
    """Every code point replaced by its `index`/`pool` mapping (itself where there is none)."""
    size = 0
    for c in cps:
        size += 1 if c >= index.size or index[c] < 0 else np.int64(pool[index[c]])
    out = np.empty(size, dtype=np.uint32)
    n = 0
    for c in cps:
        if c >= index.size or index[c] < 0:
            out[n] = c
            n += 1
        else:
            start = index[c]
            for j in range(pool[start]):
                out[n] = pool[start + 1 + j]
                n += 1
    return out


@njit(cache=True, nogil=True)
def _reorder(cps, ccc):
    """Canonical ordering: a stable insertion sort of every run of non-starters by class."""
    for i in range(1, cps.size):
        c = cps[i]
        k = _class(c, ccc)
        if k == 0:
            continue
        j = i
        while j > 0 and _class(cps[j - 1], ccc) > k:
            cps[j] = cps[j - 1]
            j -= 1
        cps[j] = c


@njit(cache=True, nogil=True)
def _recompose(cps, tables):
    """Canonical composition in place (UAX #15); returns the new length."""
    if cps.size == 0:
        return 0
    starter = 0
    last = _class(cps[0], tables.ccc)
    if last != 0:
        last = 256  # a leading non-starter blocks everything after it
    n = 1
    for i in range(1, cps.size):
        c = cps[i]
        k = _class(c, tables.ccc)
        composite = _compose(cps[starter], c, tables.keys, tables.values)
        if composite >= 0 and (last < k or last == 0):
            cps[starter] = np.uint32(composite)
            continue
        if k == 0:
            starter = n
        last = k
        cps[n] = c
        n += 1
    return n


@njit(cache=True, nogil=True)
def fold_full(data, begin, end, tables):
    """casefold(NFKC(text)) of the UTF-8 data[begin:end], as code points (spaces untouched)."""
    return fold_code_points(_decode(data, begin, end), tables)


@njit(cache=True, nogil=True)
def fold_code_points(text, tables):
    """casefold(NFKC(text)) of a text given as code points (`text` is left as it is)."""
    cps = _expand(text, tables.decomp, tables.pool)
    _reorder(cps, tables.ccc)
    n = _recompose(cps, tables)
    return _expand(cps[:n], tables.casefold, tables.pool)
