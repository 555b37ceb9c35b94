"""Where a document's verification sketch changes form: the odd sketch's size limit.

A document of more than `compact_limit` features keeps an odd sketch (`odd_sketch`) up to
`odd_limit` features and the 1-bit one-permutation sketch beyond. The odd sketch counts the
symmetric difference of two sets, so its noise grows with it: two documents of n features at
Jaccard J differ in d = 2n (1 - J) / (1 + J), and once d nears the sketch's size its bits
saturate. The 1-bit sketch's noise does not depend on n. False positives come from pairs
just below the threshold t, where the odd sketch's noise grows fastest, so the limit is the
size at which its standard deviation at J = t - 0.05 (`BELOW`) reaches the 1-bit sketch's,
sqrt((1 - J^2) / m) for m bits: with 3,072 bits 2,313 features at t = 0.5, 5,316 at 0.7,
9,295 at 0.8 and 20,144 at 0.9 (at most the store's size cap). There a pair at t - 0.03
reads t or more no more often than with the 1-bit sketch (Gaussian tails: 1.3e-3 against
4.6e-3 at t = 0.8), and one at t - 0.1 never does (below 1e-8).

The odd sketch's variance is exact for d features thrown into m bits (`_odd_sd`): with
a = (1 - 2/m)^d and c = (1 - 4/m)^d, a bit is odd with probability q = (1 - a) / 2, two bits
both with probability (1 - 2a + c) / 4, and the estimate of d moves by 1 / (1 - 2q) per odd
bit (the delta method). A size whose pairs at that similarity come within three standard
deviations of the point where `odd_estimate` gives up (saturation) does not qualify either:
that only binds for small sketches (a few hundred bits).

Pure Python (no numba), so settings can name the limit without loading any kernel.
"""

from __future__ import annotations

import math

SIZE_LIMIT = 65534  # one below the store's saturating set size (uint16)
BELOW = 0.05  # the noise is compared this far below the lowest similarity verified
SATURATED = 3.0  # `odd_estimate` reads 0 when m - 2H is within this many sqrt(m)


def _odd_sd(n: int, similarity: float, bits: int) -> float:
    """Standard deviation of the odd-sketch Jaccard estimate of two n-feature sets."""
    total = 2.0 * n
    d = total * (1.0 - similarity) / (1.0 + similarity)
    a = math.exp(d * math.log1p(-2.0 / bits))
    c = math.exp(d * math.log1p(-4.0 / bits)) if bits > 4 else 0.0
    q = (1.0 - a) / 2.0
    both = (1.0 - 2.0 * a + c) / 4.0
    var_h = max(bits * q + bits * (bits - 1) * both - (bits * q) ** 2, 0.0)
    # the estimate reads 0 within SATURATED standard deviations of half the bits odd
    # (`odd_estimate`): a pair this far apart must stay clear of that, three more over
    if bits * a - SATURATED * math.sqrt(bits) < 3.0 * 2.0 * math.sqrt(var_h):
        return math.inf
    slope = 2.0 * total / (total + d) ** 2  # |dJ / dd|
    return math.sqrt(var_h) / a * slope


def odd_limit(sketch_bits: int, similarity: float) -> int:
    """Largest distinct-feature count whose verification sketch is an odd sketch, for
    `sketch_bits` bits and the lowest similarity verified (see the module docstring)."""
    j = min(max(similarity - BELOW, 0.01), 0.999)
    one_bit = math.sqrt((1.0 - j * j) / sketch_bits)
    if _odd_sd(SIZE_LIMIT, j, sketch_bits) <= one_bit:
        return SIZE_LIMIT
    low, high = 1, SIZE_LIMIT  # _odd_sd grows with n: low qualifies, high does not
    if _odd_sd(low, j, sketch_bits) > one_bit:
        return 0
    while high - low > 1:
        mid = (low + high) // 2
        if _odd_sd(mid, j, sketch_bits) <= one_bit:
            low = mid
        else:
            high = mid
    return low
