"""The 1-bit one-permutation sketch of a sparse set keeps its accuracy (optimal densification)."""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.kernels import oph_sketch
from neardup_stream.index.similarity import estimate_jaccard

BITS = 2048


def _sketch(values: np.ndarray) -> np.ndarray:
    out = np.zeros(BITS // 64, dtype=np.uint64)
    oph_sketch(values, BITS, out)
    return out


def test_sparse_sets_are_estimated_without_bias_and_with_dense_set_variance() -> None:
    rng = np.random.default_rng(3)
    errors = []
    for _ in range(300):
        n = 500  # a quarter of the bins: rotation densification gives sd ~0.02 here
        inter = round(2 * n * 0.8 / 1.8)
        pool = rng.permutation(np.unique(rng.integers(0, 2**64, 3 * n, dtype=np.uint64)))
        a, b = pool[:n], np.concatenate((pool[:inter], pool[n : 2 * n - inter]))
        errors.append(estimate_jaccard(_sketch(a), _sketch(b)) - inter / (2 * n - inter))
    assert abs(float(np.mean(errors))) < 0.004
    assert float(np.std(errors)) < 0.0165  # ~0.013 for sets that fill every bin


def test_identical_and_disjoint_sets() -> None:
    rng = np.random.default_rng(4)
    a = rng.integers(0, 2**64, 300, dtype=np.uint64)
    b = rng.integers(0, 2**64, 300, dtype=np.uint64)
    assert estimate_jaccard(_sketch(a), _sketch(a)) == 1.0
    assert estimate_jaccard(_sketch(a), _sketch(b)) < 0.1


def _errors(bits: int, n: int, seed: int) -> np.ndarray:
    """Estimate minus truth at J = 0.8 for 300 pairs of n-element sets, `bits`-bit sketches."""
    rng = np.random.default_rng(seed)
    errors = []
    for _ in range(300):
        inter = round(2 * n * 0.8 / 1.8)
        pool = rng.permutation(np.unique(rng.integers(0, 2**64, 3 * n, dtype=np.uint64)))
        a, b = pool[:n], np.concatenate((pool[:inter], pool[n : 2 * n - inter]))
        sa, sb = np.zeros(bits // 64, dtype=np.uint64), np.zeros(bits // 64, dtype=np.uint64)
        oph_sketch(a, bits, sa)
        oph_sketch(b, bits, sb)
        errors.append(estimate_jaccard(sa, sb) - inter / (2 * n - inter))
    return np.array(errors)


def test_sketches_of_any_multiple_of_64_bits_are_unbiased_and_sharper_with_more_bits() -> None:
    spread = {}
    for bits in (2048, 3072, 4096):
        errors = _errors(bits, 8000, seed=bits)
        assert abs(float(errors.mean())) < 0.003
        spread[bits] = float(errors.std())
    # 1-bit sketches: sd = sqrt((1 - J)(1 + J) / bits), 0.0133, 0.0108 and 0.0094 here
    assert spread[3072] < 0.0125 and spread[4096] < 0.011
    assert spread[2048] > spread[3072] > spread[4096]


def test_a_power_of_two_bin_is_the_hash_top_bits_as_before() -> None:
    # sketches of 2,048 bits are what they were when only powers of two were allowed
    rng = np.random.default_rng(5)
    values = rng.integers(0, 2**64, 5000, dtype=np.uint64)
    top = (values >> np.uint64(64 - 11)).astype(np.int64)
    mins = np.full(BITS, np.iinfo(np.uint64).max, dtype=np.uint64)
    np.minimum.at(mins, top, values)
    filled = mins != np.iinfo(np.uint64).max
    bits = np.unpackbits(_sketch(values).view(np.uint8), bitorder="little").astype(bool)
    assert np.array_equal(bits[filled], (mins[filled] & np.uint64(1)).astype(bool))


M1, M2, GOLD = 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x9E3779B97F4A7C15
MASK = 2**64 - 1


def _reference(values: np.ndarray, bits: int) -> np.ndarray:
    """Optimal densification written bin by bin, in Python: each empty bin walks its own
    probe sequence to the first non-empty bin (what the kernel computes in rounds)."""
    bins = [MASK] * bits
    for h in values.tolist():
        b = ((h >> 32) * bits) >> 32
        bins[b] = min(bins[b], h)

    def probe(x: int) -> int:
        x ^= x >> 32
        return ((((x * M1) & MASK) >> 32) * bits) >> 32

    out = np.zeros(bits // 64, dtype=np.uint64)
    for i, v in enumerate(bins):
        if v == MASK:
            key, step = ((i + 1) * M2) & MASK, GOLD
            while bins[probe((key + step) & MASK)] == MASK:
                step = (step + GOLD) & MASK
            v = (((bins[probe((key + step) & MASK)] ^ key) * M1) & MASK) >> 63
        out[i >> 6] |= np.uint64((v & 1) << (i & 63))
    return out


def test_the_sketch_is_the_bin_by_bin_densification_at_every_density() -> None:
    rng = np.random.default_rng(9)
    for n in (1, 3, 90, 700, 3000, 20000):  # from one filled bin to none empty
        values = rng.integers(0, 2**64, n, dtype=np.uint64)
        for bits in (256, 3072):
            mine = np.zeros(bits // 64, dtype=np.uint64)
            oph_sketch(values, bits, mine)
            assert mine.tolist() == _reference(values, bits).tolist(), (n, bits)
