"""Compiled text kernels: texts (UTF-8 or code points) folded and normalised, then hashed.

`normalize_text` decodes raw UTF-8 (or reads code points) and folds every code point
through the per-character fold table (`normalize.fold_table`, read through
`normalize.direct_table`), collapsing whitespace runs (the `str.isspace` set) to one space
and stripping the ends; a text the table cannot fold alone is folded by `nfkc.fold_full`
(`nfkc.fold_code_points`) and then `collapse_spaces`.
`feature_hashes` gives the features (shingles) of the normalised text: character k-grams as
a rolling polynomial over code points (mod 2**64), or word n-grams combining FNV-1a word
hashes; both finished with `fmix64`, seeded.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.hash_kernels import GOLD, fmix64
from neardup_stream.fingerprint.normalize import DIRECT_NONE, DIRECT_POOL, SPACE_TABLE
from neardup_stream.native import njit

_FNV = np.uint64(0x100000001B3)
_POLY = np.uint64(0x9E3779B97F4A7C17)
_SPACE = np.uint32(32)
_CODE = np.uint32(0x7FFFFFFF)  # a direct entry's code point
_SPECIAL = np.uint32(DIRECT_POOL)
_NONE = np.uint32(DIRECT_NONE)
MODE_CHAR = 0
MODE_WORD = 1


@njit(cache=True, nogil=True)
def normalize_text(texts, d, out, fold):
    """Fold text `d` of the `kernels.TextBatch` `texts` into `out`, whitespace collapsed and
    stripped: its UTF-8 or, for a wide text, its code points (UTF-32: nothing to decode, a
    third of the time on CJK and Cyrillic text).

    Every code point is replaced by casefold(NFKC(c)): its `direct` entry of the
    `kernels.FoldTable` `fold` when that is one code point, else from the fold table
    (`lookup`, `pool`). Returns the number of code points written, or -1 when a code point
    has no table entry or the output would not fit: the caller folds that text with
    `nfkc.fold_full` (`nfkc.fold_code_points` for a wide one) instead.

    Whitespace is collapsed without a branch per character (whether a character is a space
    is a coin flip the CPU cannot predict): every character is written, a space only counts
    after a non-space, and a trailing space is dropped at the end. (The choice of input is
    made once per text: the compiler makes one loop of each.)
    """
    data, wide = texts.data, texts.wide
    direct, fold_index, fold_pool = fold.direct, fold.lookup, fold.pool
    is_wide = texts.wide_offsets[d + 1] > texts.wide_offsets[d]
    i = texts.wide_offsets[d] if is_wide else texts.offsets[d]
    stop = texts.wide_offsets[d + 1] if is_wide else texts.offsets[d + 1]
    n = 0
    after_space = 1  # a leading space never counts
    while i < stop:
        if is_wide:
            c = wide[i]
            i += 1
        else:
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
        if c >= direct.size:
            return -1
        entry = direct[c]
        if entry < _SPECIAL:
            if n + 2 > out.size:
                return -1
            space = np.int64(entry >> np.uint32(31))
            out[n] = entry & _CODE
            n += (space ^ 1) | (after_space ^ 1)
            after_space = space
            continue
        if entry == _NONE:
            return -1
        start = fold_index[c] + 1
        length = np.int64(fold_pool[start - 1])
        if n + length + 1 > out.size:
            return -1
        n, after_space = _append(out, n, after_space, fold_pool[start : start + length])
    if after_space and n > 0:
        n -= 1
    return n


@njit(inline="always", cache=True)
def _append(out, n, after_space, cps):
    """Append `cps` to out[:n] the way `normalize_text` does (room for all of them)."""
    for x in cps:
        space = np.int64(x < SPACE_TABLE.size and SPACE_TABLE[x])
        out[n] = _SPACE if space else x
        n += (space ^ 1) | (after_space ^ 1)
        after_space = space
    return n, after_space


@njit(cache=True, nogil=True)
def collapse_spaces(cps, out):
    """Copy folded code points to `out` (room for all of them), whitespace runs collapsed to
    one space and the ends stripped, as `normalize_text` does; returns the length."""
    n, after_space = _append(out, 0, 1, cps)
    if after_space and n > 0:
        n -= 1
    return n


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
    useed = fmix64(np.uint64(seed) ^ GOLD)
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
