"""TF-IDF cosine similarity of two texts (seed 003), for explaining a pair in `compare`.

With only two documents the IDF is computed over the pair itself (smoothed, as in
scikit-learn: idf = ln((1 + n) / (1 + df)) + 1), so shared features weigh less than
distinctive ones.
"""

from __future__ import annotations

import math
from collections import Counter


def tfidf_cosine(a: list[str], b: list[str]) -> float:
    """Cosine similarity of the TF-IDF vectors of two feature lists (with repeats)."""
    ta, tb = Counter(a), Counter(b)
    if not ta or not tb:
        return 1.0 if not ta and not tb else 0.0
    n = 2

    def idf(term: str) -> float:
        df = (term in ta) + (term in tb)
        return math.log((1 + n) / (1 + df)) + 1

    weights = {t: idf(t) for t in ta.keys() | tb.keys()}
    dot = sum(ta[t] * tb[t] * weights[t] ** 2 for t in ta.keys() & tb.keys())
    na = math.sqrt(sum((c * weights[t]) ** 2 for t, c in ta.items()))
    nb = math.sqrt(sum((c * weights[t]) ** 2 for t, c in tb.items()))
    return dot / (na * nb)
