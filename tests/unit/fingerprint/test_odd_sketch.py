"""Odd sketches: the estimator, the kernel's rows, and comparisons across `odd_limit`."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.compare import compare
from neardup_stream.fingerprint.feature_set_kernels import distinct_count, set_size
from neardup_stream.fingerprint.fingerprinter import Fingerprinter, other_range
from neardup_stream.fingerprint.odd_sketch import odd_estimate, odd_sketch
from neardup_stream.fingerprint.shingles import char_shingles, jaccard
from neardup_stream.fingerprint.sketch_forms import BELOW, _odd_sd, odd_limit
from neardup_stream.index.kernels import sizes_exclude
from tests.unit.conftest import random_text

WORDS = 48  # 3,072 bits


def _pair(rng: np.random.Generator, n: int, j: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Two sets of n distinct random hashes with Jaccard about j, and their true Jaccard."""
    inter = round(2 * n * j / (1 + j))
    union = np.unique(rng.integers(0, 2**64, size=2 * n, dtype=np.uint64))[: 2 * n - inter]
    rng.shuffle(union)
    return union[:n], union[n - inter :], inter / (2 * n - inter)


def _sketch(values: np.ndarray) -> np.ndarray:
    out = np.zeros(WORDS, dtype=np.uint64)
    odd_sketch(values, out)
    return out


@pytest.mark.parametrize(("n", "j", "sd_max"), [(1100, 0.8, 0.006), (4000, 0.8, 0.008),
                                                 (6000, 0.7, 0.015), (3000, 0.9, 0.004)])  # fmt: skip
def test_the_estimate_is_unbiased_and_tighter_than_a_1_bit_sketch(
    n: int, j: float, sd_max: float
) -> None:
    # the 1-bit sketch of 3,072 bits: sqrt((1 - J^2) / 3,072) = 0.0108 at J = 0.8 at best
    rng = np.random.default_rng(n)
    errors = []
    for _ in range(200):
        a, b, truth = _pair(rng, n, j)
        errors.append(odd_estimate(_sketch(a), _sketch(b), a.size, b.size) - truth)
    assert abs(np.mean(errors)) < 0.003
    assert np.std(errors) < sd_max


def test_a_set_scores_one_against_itself_and_zero_against_a_set_it_does_not_share() -> None:
    rng = np.random.default_rng(1)
    a, b, _ = _pair(rng, 3000, 0.0)
    assert odd_estimate(_sketch(a), _sketch(a), a.size, a.size) == 1.0
    assert odd_estimate(_sketch(a), _sketch(b), a.size, b.size) < 0.05
    assert odd_estimate(_sketch(a[:0]), _sketch(a[:0]), 0, 0) == 0.0


def test_the_distinct_count_s_sketch_is_that_of_the_distinct_values() -> None:
    rng = np.random.default_rng(2)
    values = rng.integers(0, 2**64, size=3000, dtype=np.uint64)
    repeated = np.concatenate([values, values[::3], values[:10]])
    odd = np.zeros(WORDS, dtype=np.uint64)
    seen = np.zeros(set_size(repeated.size), dtype=np.uint64)
    assert distinct_count(repeated, seen, 1, odd) == 3000
    assert (odd == _sketch(values)).all()


AT_07 = DedupConfig(threshold=0.7)  # odd sketches up to 5,316 shingles


def test_documents_get_the_form_of_their_size_and_the_other_one_near_the_limit() -> None:
    config = AT_07
    fp = Fingerprinter(config)
    low, high = other_range(config)
    assert fp.odd_max == odd_limit(3072, 0.7) == 5316 and (low, high) == (3722, 7594)
    texts = [random_text(5, w) for w in (300, 700, 900, 1000, 1100, 2000)]
    prints = fp.batch(texts)
    for d, text in enumerate(texts):
        nfeat, other = int(prints.nfeat[d]), prints.other[d]
        if fp.compact_max < nfeat <= fp.odd_max:
            assert (prints.sketch[d] == _sketch(fp.features(text))).all()
        assert other.any() == (low <= nfeat <= high), nfeat
        if fp.odd_max < nfeat <= high:
            assert (other == _sketch(fp.features(text))).all()
    assert sorted(np.searchsorted([low, fp.odd_max, high], prints.nfeat, side="right")) == [
        0, 1, 2, 2, 2, 3,
    ]  # fmt: skip


def _near_copy(text: str, seed: int, rate: float) -> str:
    rng = np.random.default_rng(seed)
    words = text.split()
    for i in rng.choice(len(words), size=int(rate * len(words)), replace=False):
        words[i] = "x" + words[i][::-1]
    return " ".join(words)


@pytest.mark.parametrize(("stored_words", "query_words"), [(780, 900), (900, 780)])
def test_documents_across_the_limit_compare_in_the_stored_form(
    stored_words: int, query_words: int
) -> None:
    # one side odd-sketched (~5,250 shingles), the other 1-bit (~6,000): the query's `other`
    base = random_text(8, max(stored_words, query_words))
    stored = " ".join(base.split()[:stored_words])
    query = _near_copy(" ".join(base.split()[:query_words]), 3, 0.01)
    fp = Fingerprinter(AT_07)
    nfeat = fp.batch([stored, query]).nfeat
    assert min(nfeat) <= fp.odd_max < max(nfeat)
    report = compare(stored, query, AT_07)
    truth = jaccard(char_shingles(fp.normalize(stored), 5), char_shingles(fp.normalize(query), 5))
    assert 0.75 < truth < 0.9
    assert abs(report.estimated_jaccard - truth) < 0.04
    decisions = Deduplicator(AT_07).check_batch([Document(id="s", text=stored),
                                                  Document(id="q", text=query)])  # fmt: skip
    assert decisions[1].duplicate_of == "s"


def test_a_query_past_the_stored_size_cap_is_not_scored_against_an_odd_sketch() -> None:
    # 65,535+ shingles (a stored size saturates there, a query's does not): the size filter
    # still applies, and a query with no odd sketch scores 0 against one, not ~q / (q + 2s)
    rng = np.random.default_rng(7)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz     "))
    small = "".join(rng.choice(letters, 2500))
    huge = (small + " ") * 60 + "".join(rng.choice(letters, 90_000))
    fp = Fingerprinter(DedupConfig())
    nfeat = fp.batch([small, huge]).nfeat
    assert fp.compact_max < nfeat[0] <= fp.odd_max and nfeat[1] > 65_535
    decisions = Deduplicator().check_batch([Document(id="s", text=small),
                                             Document(id="h", text=huge)])  # fmt: skip
    assert decisions[1].decision == "unique"
    assert compare(small, huge).estimated_jaccard < 0.05


@pytest.mark.parametrize("sketch_bits", [64, 2176, 3072, 8192])
@pytest.mark.parametrize("threshold", [0.05, 0.5, 0.68, 0.7, 0.8, 0.9, 0.97, 1.0])
def test_the_other_range_is_exactly_what_the_size_filter_lets_meet_across_the_limit(
    sketch_bits: int, threshold: float
) -> None:
    config = DedupConfig(sketch_bits=sketch_bits, num_perm=64, threshold=threshold)
    low, high = other_range(config)
    odd_max = config.odd_limit
    assert not sizes_exclude(low, odd_max, threshold) and not sizes_exclude(
        high, odd_max, threshold
    )
    assert sizes_exclude(low - 1, odd_max, threshold) and sizes_exclude(
        high + 1, odd_max, threshold
    )


@pytest.mark.parametrize(("n", "j"), [(1000, 0.8), (6000, 0.8), (3000, 0.5), (12000, 0.9)])
def test_the_noise_model_that_places_the_limit_matches_the_estimator(n: int, j: float) -> None:
    rng = np.random.default_rng(n)
    errors = []
    for _ in range(300):
        a, b, truth = _pair(rng, n, j)
        errors.append(odd_estimate(_sketch(a), _sketch(b), a.size, b.size) - truth)
    assert np.std(errors) == pytest.approx(_odd_sd(n, j, 3072), rel=0.2)


@pytest.mark.parametrize("t", [0.3, 0.5, 0.7, 0.8, 0.9])
def test_the_limit_is_where_the_odd_sketch_stops_beating_the_1_bit_sketch_below_t(t: float) -> None:
    j = t - BELOW
    limit, one_bit = odd_limit(3072, t), np.sqrt((1 - j * j) / 3072)
    assert _odd_sd(limit, j, 3072) <= one_bit < _odd_sd(limit + 1, j, 3072)
    assert odd_limit(3072, t) < odd_limit(3072, t + 0.05) and odd_limit(2048, t) < limit


@pytest.mark.parametrize(("bits", "t"), [(64, 0.8), (256, 0.5), (512, 0.95), (3072, 0.9)])
def test_at_the_limit_a_pair_at_the_threshold_is_not_read_as_saturated(bits: int, t: float) -> None:
    # the estimate gives up (0) near half the bits odd; the limit keeps pairs at t - 0.05
    # and above clear of that, small sketches included
    rng = np.random.default_rng(bits)
    n, zeros, errors = odd_limit(bits, t), 0, []
    for _ in range(400):
        a, b, truth = _pair(rng, n, t)
        sa, sb = np.zeros(bits // 64, np.uint64), np.zeros(bits // 64, np.uint64)
        odd_sketch(a, sa)
        odd_sketch(b, sb)
        estimate = odd_estimate(sa, sb, a.size, b.size)
        zeros += estimate == 0.0
        errors.append(estimate - truth)
    assert zeros <= 4
    assert np.std(errors) < 1.2 * np.sqrt((1 - t * t) / bits)  # about the 1-bit sketch's
