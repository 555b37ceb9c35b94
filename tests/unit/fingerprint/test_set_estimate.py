"""Samples of a document's smallest hashes: coding, the Jaccard estimate against them, and
where the engine uses them (documents of `compact_limit` to `sample_limit` shingles)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.compare import compare
from neardup_stream.fingerprint import compact_set, set_estimate
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.shingles import jaccard, shingles
from tests.unit.conftest import mutate, random_text

SKETCH_BITS = DedupConfig().sketch_bits
K = compact_set.compact_limit(SKETCH_BITS)
SAMPLE_MAX = compact_set.sample_limit(SKETCH_BITS)


def _pair(n: int, inter: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted sets of n distinct random 64-bit hashes sharing `inter` of them."""
    rng = np.random.default_rng(seed)
    pool = rng.permutation(np.unique(rng.integers(0, 2**64, size=3 * n, dtype=np.uint64)))
    pool = pool[: 2 * n - inter]
    return np.sort(pool[:n]), np.sort(np.concatenate((pool[:inter], pool[n:])))


def _sample(hashes: np.ndarray) -> np.ndarray:
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    assert compact_set.encode_sample(hashes, words, K)
    return words


@settings(max_examples=40, deadline=None)
@given(st.integers(K + 1, SAMPLE_MAX), st.integers(0, 2**31))
def test_a_sample_is_flagged_and_scores_its_own_set_exactly_one(n: int, seed: int) -> None:
    a, _ = _pair(n, n, seed)
    words = _sample(a)
    assert compact_set.is_sample(words)
    overlap = compact_set.common_values(a, words, compact_set.NO_LIMIT)
    assert overlap.common == compact_set.stored_values(words) > 0.9 * K  # few prefixes merge
    assert overlap.last_common
    assert set_estimate.estimate(a, a.size, words, n) == 1.0


def test_whole_sets_are_not_flagged() -> None:
    a, _ = _pair(K, K, 1)
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    assert compact_set.encode(a, words)
    assert not compact_set.is_sample(words)


@pytest.mark.parametrize("n", [2 * K, 4 * K, 16 * K])
def test_a_sample_codes_its_values_as_densely_as_a_whole_set(n: int) -> None:
    # its values lie below ~K/n of the range: the prefixes are wider by as many bits, so as
    # few of them merge as in a whole set of K
    a, _ = _pair(n, n, 2)
    sampled = _sample(a)
    whole = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    compact_set.encode(np.sort(a[np.random.default_rng(2).permutation(n)[:K]]), whole)
    wider = compact_set.prefix_width(sampled) - compact_set.prefix_width(whole)
    assert wider >= int(np.log2(n // K)) - 1
    assert compact_set.stored_values(sampled) >= compact_set.stored_values(whole) - 8


@pytest.mark.parametrize(("n", "sd"), [(K + 8, 0.008), (700, 0.014), (SAMPLE_MAX, 0.016)])
@pytest.mark.parametrize("similarity", [0.7, 0.8, 0.9])
def test_samples_estimate_without_bias(n: int, sd: float, similarity: float) -> None:
    # measured over 600 pairs (J = 0.8): standard deviations 0.005 at 520 shingles, 0.011 at
    # 700 and 0.013 at 1,024, against 0.012 for the 1-bit sketch these sizes had before
    errors = []
    for seed in range(150):
        inter = round(2 * n * similarity / (1 + similarity))
        a, b = _pair(n, inter, seed)
        errors.append(set_estimate.estimate(a, a.size, _sample(b), n) - inter / (2 * n - inter))
    assert abs(float(np.mean(errors))) < 0.004
    assert float(np.std(errors)) < sd


@pytest.mark.parametrize(("query", "stored"), [(1100, 1000), (1100, 480), (1300, 1250)])
def test_a_query_keeping_only_its_smallest_hashes_is_estimated_without_bias(
    query: int, stored: int
) -> None:
    # a document with a 1-bit sketch keeps only its K smallest hashes; against a whole set or
    # a sample only the values below the lower of the two samples' largest count
    errors = []
    for seed in range(150):
        rng = np.random.default_rng(seed)
        pool = np.unique(rng.integers(0, 2**64, size=3 * query, dtype=np.uint64))
        pool = rng.permutation(pool)
        inter = int(0.85 * stored)
        a = np.sort(pool[:query])
        b = np.sort(np.concatenate((pool[:inter], pool[query : query + stored - inter])))
        words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
        if stored <= K:
            compact_set.encode(b, words)
        else:
            compact_set.encode_sample(b, words, K)
        truth = inter / (query + stored - inter)
        errors.append(set_estimate.estimate(a[:K], query, words, stored) - truth)
    assert abs(float(np.mean(errors))) < 0.005
    assert float(np.std(errors)) < 0.02


def test_a_sample_against_a_query_of_another_size() -> None:
    # the query's hashes above the sample's largest are not counted: a query twice the
    # stored set's size holding all of it scores about 1/2, not 1
    a, _ = _pair(2 * 700, 2 * 700, 3)
    b = np.sort(a[::2])
    assert abs(set_estimate.estimate(a, a.size, _sample(b), b.size) - 0.5) < 0.05


def test_the_engine_stores_samples_for_mid_sized_documents_only() -> None:
    fp = Fingerprinter(DedupConfig())
    texts = [random_text(seed, words) for seed, words in ((1, 60), (2, 110), (3, 800))]
    prints = fp.batch(texts)
    assert prints.nfeat[0] <= K < prints.nfeat[1] <= SAMPLE_MAX < prints.nfeat[2]
    assert not compact_set.is_sample(prints.sketch[0])
    assert compact_set.is_sample(prints.sketch[1])
    kept = np.diff(prints.feat_offsets)
    assert (kept[:2] == prints.nfeat[:2]).all()  # a sample's document keeps its whole set


@pytest.mark.parametrize(("words_a", "words_b"), [(90, 120), (150, 160), (200, 260)])
def test_pairs_across_sketch_kinds_are_estimated_near_their_exact_jaccard(
    words_a: int, words_b: int
) -> None:
    # whole set against a sample, sample against sample, sample against a 1-bit sketch
    base = random_text(words_a * 7, words_b)
    a = " ".join(base.split(" ")[:words_a])
    b = mutate(base, 0.02, 11)
    report = compare(a, b)
    exact = jaccard(shingles(" ".join(a.split()), "char", 5), shingles(b, "char", 5))
    assert abs(report.estimated_jaccard - exact) < 0.05
    assert report.exact_jaccard == pytest.approx(exact, abs=1e-6)


def test_mid_sized_near_duplicates_are_found_and_unrelated_ones_are_not() -> None:
    dedup = Deduplicator()
    originals = [random_text(100 + i, 150 + 5 * i) for i in range(20)]  # ~750-1,250 shingles
    copies = [mutate(t, 0.01, i) for i, t in enumerate(originals)]
    docs = [Document(id=f"o{i}", text=t) for i, t in enumerate(originals)]
    docs += [Document(id=f"c{i}", text=t) for i, t in enumerate(copies)]
    decisions = dedup.check_batch(docs)
    assert all(d.decision == "unique" for d in decisions[:20])
    assert [d.duplicate_of for d in decisions[20:]] == [f"o{i}" for i in range(20)]
