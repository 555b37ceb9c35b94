"""Text normalisation and character-shingling shared by every benchmark component.

This must match the engine: NFKC, casefold, collapse whitespace runs to one space, strip.
Shingles are the *set* of character 5-grams; a text shorter than 5 characters yields the
single feature ``{text}`` and an empty text yields the empty set.
"""

from __future__ import annotations

import re
import unicodedata

SHINGLE_K = 5
_WS = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Return the engine's canonical form of ``text``."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def shingle_list(norm: str, k: int = SHINGLE_K) -> list[str]:
    """All character k-grams of an already normalised text (with repeats)."""
    if len(norm) < k:
        return [norm] if norm else []
    return [norm[i : i + k] for i in range(len(norm) - k + 1)]


def shingle_set(text: str, k: int = SHINGLE_K) -> set[str]:
    """The k-gram feature set of a raw text (normalises first)."""
    return set(shingle_list(normalize(text), k))


def jaccard(a: set[str], b: set[str]) -> float:
    """Exact Jaccard similarity of two sets; two empty sets are identical (1.0), as in the
    engine (`fingerprint.shingles.jaccard`), where two texts that normalise to nothing are
    exact copies of each other; an empty set and a non-empty one share nothing (0.0)."""
    if not a and not b:
        return 1.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)
