"""Compact shingle sets: coding, the Jaccard estimate, and where the engine uses them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from neardup_stream import DedupConfig
from neardup_stream.compare import compare
from neardup_stream.fingerprint import compact_set, set_estimate
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.kernels import oph_sketch
from neardup_stream.fingerprint.odd_sketch import odd_sketch
from neardup_stream.fingerprint.shingles import jaccard, shingles
from tests.unit.conftest import random_text

SKETCH_BITS = DedupConfig().sketch_bits
LIMIT = compact_set.compact_limit(SKETCH_BITS)


def _pair(n: int, inter: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted sets of n distinct random 64-bit hashes sharing `inter` of them."""
    rng = np.random.default_rng(seed)
    pool = rng.permutation(np.unique(rng.integers(0, 2**64, size=3 * n, dtype=np.uint64)))
    pool = pool[: 2 * n - inter]
    a = np.sort(pool[:n])
    b = np.sort(np.concatenate((pool[:inter], pool[n:])))
    return a, b


@settings(max_examples=60, deadline=None)
@given(st.integers(1, LIMIT), st.integers(0, 2**31))
@example(306, 825)  # 14 of 306 13-bit prefixes collide: the old estimator scored it 0.945
def test_every_set_up_to_the_limit_fits_and_decodes_to_itself(n: int, seed: int) -> None:
    a, _ = _pair(n, n, seed)
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    assert compact_set.encode(a, words)
    overlap = compact_set.common_values(a, words, compact_set.NO_LIMIT)
    assert overlap.common == set_estimate.distinct_prefixes(a, overlap.b)
    assert compact_set.stored_values(words) == overlap.common
    assert set_estimate.estimate(a, a.size, words, n) == 1.0  # at every prefix width


def test_prefix_collisions_near_the_limit_do_not_bias_the_self_score() -> None:
    colliding = 0
    for seed in range(100):
        a, _ = _pair(LIMIT - seed % 60, LIMIT - seed % 60, seed)
        words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
        compact_set.encode(a, words)
        colliding += compact_set.common_values(a, words, compact_set.NO_LIMIT).common < a.size
        assert set_estimate.estimate(a, a.size, words, a.size) == 1.0
    assert colliding > 50  # the sets near the limit do lose values to shared prefixes


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 60), st.data())
def test_small_sets_are_estimated_exactly(n: int, data: st.DataObject) -> None:
    inter = data.draw(st.integers(0, n))
    a, b = _pair(n, inter, data.draw(st.integers(0, 2**31)))
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    compact_set.encode(b, words)
    assert set_estimate.estimate(a, a.size, words, b.size) == inter / (2 * n - inter)


def test_sets_near_the_limit_are_estimated_closely_and_without_bias() -> None:
    errors = []
    for seed in range(200):
        n = LIMIT - seed % 150
        inter = round(2 * n * 0.8 / 1.8)
        a, b = _pair(n, inter, seed)
        words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
        compact_set.encode(b, words)
        errors.append(set_estimate.estimate(a, a.size, words, n) - inter / (2 * n - inter))
    # the 1-bit one-permutation sketch: a standard deviation of ~0.015 at these sizes;
    # measured here (3,072 bits, 512 shingles): mean ~0.0001, standard deviation ~0.004
    assert abs(float(np.mean(errors))) < 0.002
    assert float(np.std(errors)) < 0.01


def _edit(text: str, positions: list[int]) -> str:
    chars = list(text)
    for p in positions:
        chars[p % len(chars)] = "#"
    return "".join(chars)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31), st.lists(st.integers(0, 200), min_size=1, max_size=4))
def test_short_documents_get_their_exact_jaccard(seed: int, positions: list[int]) -> None:
    rng = np.random.default_rng(seed)
    a = "".join(rng.choice(list("abcdefghij klmnop"), size=int(rng.integers(20, 60))))
    b = _edit(a, positions)
    report = compare(a, b)
    exact = jaccard(
        shingles(" ".join(a.split()), "char", 5), shingles(" ".join(b.split()), "char", 5)
    )
    assert abs(report.estimated_jaccard - exact) < 1e-6


def test_near_threshold_short_pairs_are_decided_by_exact_jaccard() -> None:
    # word 1-grams: every document is a set of 50 distinct words
    config = DedupConfig(shingle="word", shingle_size=1, bands=32, rows=1)
    words = [f"w{i}" for i in range(200)]
    base = " ".join(words[:50])
    above = " ".join(words[:45] + words[100:105])  # 45 / 55 = 0.818
    below = " ".join(words[:44] + words[110:116])  # 44 / 56 = 0.786
    exactly = " ".join(words[:40])  # 40 / 50 = 0.8: at the threshold
    for text, want in ((above, "duplicate"), (below, "unique"), (exactly, "duplicate")):
        assert compare(base, text, config).decision == want


def test_a_sketch_made_from_a_query_s_hashes_is_the_one_the_kernel_stores() -> None:
    # under 64-bit sketches: compact sets up to 10 shingles, odd sketches up to 128
    config = DedupConfig(sketch_bits=64, num_perm=64)
    fp = Fingerprinter(config)
    mid, long = "a short text with some forty characters.", random_text(3, words=60)
    prints = fp.batch([mid, long])
    assert fp.compact_max < prints.nfeat[0] <= fp.odd_max < prints.nfeat[1]
    odd = np.zeros(1, dtype=np.uint64)
    odd_sketch(fp.features(mid), odd)
    assert odd[0] == prints.sketch[0, 0]
    one_bit = np.zeros(1, dtype=np.uint64)
    oph_sketch(fp.features(long), 64, one_bit)
    assert one_bit[0] == prints.sketch[1, 0]


def _rice_words(b: int, r: int, values: list[int]) -> np.ndarray:
    """The coded set of `values` (sorted, distinct, `b`-bit), written bit by bit as the
    module docstring lays it out: each gap's quotient in unary, then its r low bits, most
    significant first."""
    bits = [(b >> i) & 1 for i in range(8)] + [(r >> i) & 1 for i in range(8)]
    bits += [(len(values) >> i) & 1 for i in range(16)]
    for k, v in enumerate(values):
        gap = v if k == 0 else v - values[k - 1] - 1
        bits += [1] * (gap >> r) + [0] + [(gap >> (r - 1 - i)) & 1 for i in range(r)]
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    for pos, bit in enumerate(bits):
        words[pos >> 6] |= np.uint64(bit) << np.uint64(pos & 63)
    return words


@pytest.mark.parametrize("run", [0, 1, 30, 31, 32, 63, 94, 95, 96, 159, 160, 300])
@pytest.mark.parametrize("r", [0, 5, 33])
def test_unary_runs_and_remainders_decode_across_word_boundaries(run: int, r: int) -> None:
    # the header ends at bit 32: a first quotient of 31 fills its word exactly, 95 one more
    # word, 96 spills one bit past it; a remainder of 33 bits straddles a word boundary
    b = 48
    first = (run << r) | ((1 << r) - 1 if r else 0)
    values = [first, first + 7, first + (1 << r) * 3 + 5]
    words = _rice_words(b, r, values)
    cut = [np.uint64(v) << np.uint64(64 - b) for v in values]
    overlap = compact_set.common_values(np.array(cut, np.uint64), words, compact_set.NO_LIMIT)
    assert (overlap.common, overlap.stored, overlap.b) == (3, 3, b)
    missed = [cut[0] + (np.uint64(1) << np.uint64(64 - b)), cut[1], cut[2]]  # first off by one
    missing = np.array(missed, np.uint64)
    assert compact_set.common_values(missing, words, compact_set.NO_LIMIT).common == 2


def test_a_unary_run_filling_a_whole_word_decodes() -> None:
    # r = 0: the first code (31 ones and a zero) ends the header's word, so the second,
    # 74 ones, starts a word and fills it
    b = 48
    values = [31, 31 + 74 + 1]
    cut = np.array([np.uint64(v) << np.uint64(64 - b) for v in values], np.uint64)
    overlap = compact_set.common_values(cut, _rice_words(b, 0, values), compact_set.NO_LIMIT)
    assert (overlap.common, overlap.b) == (2, b)
