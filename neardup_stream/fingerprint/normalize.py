"""Text normalisation applied before any hashing: NFKC, case folding, whitespace collapsing.

Every fingerprint, exact hash and ground-truth shingle set is computed from `normalize(text)`,
so this function is part of the on-disk format: change it and stored indexes become stale.

The compiled kernel applies the same normalisation itself, character by character, through
`fold_table()`: for every code point c that cannot interact with its neighbours under NFKC
(no combining class, no combining marks first in its decomposition, nothing that composes
with a preceding character; precomposed Hangul syllables too, see `_HANGUL_SYLLABLES`),
casefold(NFKC(s)) is the concatenation of casefold(NFKC(c)).
Texts holding any other code point are folded by the kernel's full NFKC (`nfkc`) instead.
Property tests check the kernel against `normalize` on arbitrary and multi-script Unicode.
"""

from __future__ import annotations

import html
import re
import unicodedata
from functools import lru_cache

import numpy as np

from neardup_stream.caches import cached_arrays

_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]{0,2000}>", re.S | re.I)


def strip_html(text: str) -> str:
    """Remove tags, comments, scripts and styles, and decode character entities."""
    return html.unescape(_TAG.sub(" ", text))


# whether each code point up to U+3000, the last whitespace one, is whitespace (`str.isspace`)
SPACE_TABLE = np.array([chr(c).isspace() for c in range(0x3001)], dtype=np.bool_)
FOLD_LIMIT = 0x30000  # code points at or above are left to the full path (`nfkc`)
_HANGUL_JAMO = ((0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xD7B0, 0xD7FF))
# Precomposed Hangul syllables decompose to jamo that compose backwards, but only with each
# other: the one thing a syllable composes with is a trailing jamo after it, and every
# trailing jamo (and every character decomposing to one) stays out of the table, so a text
# holding one is folded by the full path. Within the table, a syllable folds to itself.
_HANGUL_SYLLABLES = (0xAC00, 0xD7A3)


def _composes_backwards() -> set[int]:
    """Starters that can compose with a preceding character (NFC quick-check "maybe")."""
    found = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for z in range(FOLD_LIMIT):
        d = unicodedata.decomposition(chr(z))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2 and unicodedata.combining(chr(int(parts[1], 16))) == 0:
                found.add(int(parts[1], 16))
    return found


@lru_cache(maxsize=1)
def fold_table() -> tuple[np.ndarray, np.ndarray]:
    """(index, pool): pool[index[c]] = length, then the code points of casefold(NFKC(c)).

    index[c] is -1 where c is not context-free under NFKC (see the module docstring). The
    table depends only on the Unicode version; it is built once and kept on disk (`caches`).
    """
    name = f"fold-v2-unicode{unicodedata.unidata_version}-{FOLD_LIMIT:x}.npz"
    index, pool = cached_arrays(name, ("index", "pool"), build_fold_table)
    return index, pool


def build_fold_table() -> tuple[np.ndarray, np.ndarray]:
    """Compute `fold_table()` from `unicodedata` (a few seconds)."""
    backwards = _composes_backwards()
    index = np.full(FOLD_LIMIT, -1, dtype=np.int32)
    pool: list[int] = []
    for c in range(FOLD_LIMIT):
        ch = chr(c)
        if 0xD800 <= c <= 0xDFFF or any(lo <= c <= hi for lo, hi in _HANGUL_JAMO):
            continue
        decomposed = unicodedata.normalize("NFKD", ch)
        syllable = _HANGUL_SYLLABLES[0] <= c <= _HANGUL_SYLLABLES[1]
        if (
            unicodedata.combining(ch)
            or unicodedata.combining(decomposed[0])
            or (not syllable and any(ord(x) in backwards for x in decomposed))
        ):
            continue
        mapped = unicodedata.normalize("NFKC", ch).casefold()
        index[c] = len(pool)
        pool.append(len(mapped))
        pool.extend(ord(x) for x in mapped)
    return index, np.array(pool, dtype=np.uint32)


DIRECT_SPACE = 1 << 31 | 0x20  # a direct entry: whitespace (bit 31), written as a space
DIRECT_POOL = 0xC000_0000  # a direct entry: the folding is in the pool (not one code point)
DIRECT_NONE = 0xC000_0001  # a direct entry: no fold table entry (the full path folds it)


def direct_table(index: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """uint32 per code point of `fold_table()`: its folding when that is one code point, so
    the kernel reads one entry per character.

    An entry below 2**31 is the folded code point; `DIRECT_SPACE` means a whitespace one
    (`str.isspace`), which normalisation writes as a space; `DIRECT_POOL` sends the kernel to
    the pool (a folding of zero or several code points) and `DIRECT_NONE` to the full path,
    as index -1 does.
    """
    direct = np.full(index.size, DIRECT_NONE, dtype=np.uint32)
    known = np.flatnonzero(index >= 0)
    direct[known] = DIRECT_POOL
    one = known[pool[index[known]] == 1]
    folded = pool[index[one] + 1]
    is_space = SPACE_TABLE[np.minimum(folded, SPACE_TABLE.size - 1)]
    is_space &= folded < SPACE_TABLE.size
    direct[one] = np.where(is_space, DIRECT_SPACE, folded)
    return direct


def fold(text: str, *, html_input: bool = False) -> str:
    """The first half of `normalize`: HTML stripping, NFKC and case folding (the reference
    for the compiled `nfkc.fold_full`)."""
    if html_input:
        text = strip_html(text)
    return unicodedata.normalize("NFKC", text).casefold()


def normalize(text: str, *, html_input: bool = False) -> str:
    """Return the canonical form of `text` that all features are computed from.

    Args:
        text: Raw document text.
        html_input: Strip HTML markup first.

    Returns:
        NFKC-normalised, case-folded text with every whitespace run collapsed to one space
        and no leading or trailing space.
    """
    return " ".join(fold(text, html_input=html_input).split())
