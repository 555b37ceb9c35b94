"""LSH banding: the S-curve and the choice of (bands, rows) for a Jaccard threshold.

A pair with Jaccard similarity s shares at least one of b bands of r MinHash rows with
probability 1 - (1 - s^r)^b (seed 004). The index probes one bucket per band; every candidate
is then verified, so false positives cost only CPU while false negatives cost recall.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np


def candidate_probability(s: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """Probability that a pair with Jaccard `s` becomes an LSH candidate."""
    return 1.0 - (1.0 - np.power(s, rows)) ** bands


def _area(f: Callable[[np.ndarray], object], lo: float, hi: float) -> float:
    """Trapezoid-rule integral of `f` over [lo, hi]."""
    xs = np.linspace(lo, hi, 201)
    ys = np.asarray(f(xs), dtype=np.float64)
    return float(np.sum((ys[1:] + ys[:-1]) * np.diff(xs)) / 2)


def false_positive_area(threshold: float, bands: int, rows: int) -> float:
    """Integral of the candidate probability below the threshold."""
    return _area(lambda s: candidate_probability(s, bands, rows), 0.0, threshold)


def false_negative_area(threshold: float, bands: int, rows: int) -> float:
    """Integral of the miss probability above the threshold."""
    return _area(lambda s: 1.0 - candidate_probability(s, bands, rows), threshold, 1.0)


@lru_cache(maxsize=64)
def optimal_banding(
    threshold: float, num_perm: int, fp_weight: float = 0.5, max_bands: int | None = None
) -> tuple[int, int]:
    """(bands, rows) minimising fp_weight * FP area + (1 - fp_weight) * FN area.

    Args:
        threshold: Jaccard threshold in (0, 1].
        num_perm: Signature length; bands * rows must not exceed it.
        fp_weight: Weight of the false-positive area, in [0, 1].
        max_bands: Upper bound on bands (each band costs one table entry per document).
    """
    if not 0 < threshold <= 1:
        raise ValueError("threshold must be in (0, 1]")
    if not 0 <= fp_weight <= 1:
        raise ValueError("fp_weight must be in [0, 1]")
    best: tuple[float, int, int] | None = None
    for bands in range(1, (max_bands or num_perm) + 1):
        for rows in range(1, num_perm // bands + 1):
            fp = false_positive_area(threshold, bands, rows)
            fn = false_negative_area(threshold, bands, rows)
            err = fp_weight * fp + (1 - fp_weight) * fn
            if best is None or err < best[0] - 1e-12:
                best = (err, bands, rows)
    assert best is not None
    return best[1], best[2]
