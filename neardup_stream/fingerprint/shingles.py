"""Shingles (features) of a normalised text, as strings: the readable reference definition.

The compiled kernels in `kernels` hash the same shingles without materialising them; this
module is what `compare`, the tests and the benchmark's ground truth use to compute exact
Jaccard similarity.

* character k-grams over Unicode code points, so CJK text needs no word segmenter;
* word n-grams over the single-space-separated tokens of the normalised text;
* a text with fewer than k units yields one feature: the whole text; an empty text, none.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np


def char_shingles(text: str, k: int) -> list[str]:
    """All overlapping character k-grams of `text`, in order (with repeats)."""
    if not text:
        return []
    if len(text) < k:
        return [text]
    return [text[i : i + k] for i in range(len(text) - k + 1)]


def word_shingles(text: str, n: int) -> list[str]:
    """All overlapping word n-grams of `text` (tokens joined by one space), in order."""
    words = text.split(" ") if text else []
    if not words:
        return []
    if len(words) < n:
        return [" ".join(words)]
    return [" ".join(words[i : i + n]) for i in range(len(words) - n + 1)]


def shingles(text: str, mode: str, size: int) -> list[str]:
    """Shingles of a normalised text for `mode` "char" or "word"."""
    if mode == "char":
        return char_shingles(text, size)
    if mode == "word":
        return word_shingles(text, size)
    raise ValueError(f"unknown shingle mode {mode!r}; expected 'char' or 'word'")


def jaccard(a: Collection[object], b: Collection[object]) -> float:
    """Exact Jaccard similarity of two sets; two empty sets are identical (1.0)."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def sorted_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted arrays of unique hashes."""
    if a.size == 0 and b.size == 0:
        return 1.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)


def codepoints(text: str) -> np.ndarray:
    """The Unicode code points of `text` as a uint32 array (the kernels' input)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
