"""The Jaccard estimate against a stored compact set, from a query's hashes: all of them, or
its smallest (a document larger than a compact set)."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.compare import compare
from neardup_stream.fingerprint import compact_set, set_estimate
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.shingles import jaccard, shingles
from tests.unit.conftest import mutate, random_text

SKETCH_BITS = DedupConfig().sketch_bits
K = compact_set.compact_limit(SKETCH_BITS)


def _pair(n: int, inter: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two sorted sets of n distinct random 64-bit hashes sharing `inter` of them."""
    rng = np.random.default_rng(seed)
    pool = rng.permutation(np.unique(rng.integers(0, 2**64, size=3 * n, dtype=np.uint64)))
    pool = pool[: 2 * n - inter]
    return np.sort(pool[:n]), np.sort(np.concatenate((pool[:inter], pool[n:])))


def _whole(hashes: np.ndarray) -> np.ndarray:
    words = np.zeros(SKETCH_BITS // 64, dtype=np.uint64)
    assert compact_set.encode(hashes, words)
    return words


@pytest.mark.parametrize(("query", "stored"), [(560, 500), (600, 480), (640, 512)])
def test_a_query_keeping_only_its_smallest_hashes_is_estimated_without_bias(
    query: int, stored: int
) -> None:
    # a document larger than a compact set keeps only its K smallest hashes; against a whole
    # set only the values below the largest of them count
    errors = []
    for seed in range(150):
        rng = np.random.default_rng(seed)
        pool = np.unique(rng.integers(0, 2**64, size=3 * query, dtype=np.uint64))
        pool = rng.permutation(pool)
        inter = int(0.85 * stored)
        a = np.sort(pool[:query])
        b = np.sort(np.concatenate((pool[:inter], pool[query : query + stored - inter])))
        words = _whole(b)
        truth = inter / (query + stored - inter)
        errors.append(set_estimate.estimate(a[:K], query, words, stored) - truth)
    assert abs(float(np.mean(errors))) < 0.005
    assert float(np.std(errors)) < 0.02


def test_a_query_keeping_only_its_smallest_hashes_counts_only_below_its_largest() -> None:
    # a query four times the stored set's size holding all of it scores about 1/4, not 1, and
    # the stored values above the query sample's largest are not counted against it
    a, _ = _pair(4 * K, 4 * K, 3)
    b = np.sort(a[::4][:K])
    assert abs(set_estimate.estimate(a[:K], a.size, _whole(b), b.size) - 0.25) < 0.05
    assert set_estimate.estimate(b, b.size, _whole(b), b.size) == 1.0


def test_the_engine_stores_compact_sets_for_small_documents_only() -> None:
    fp = Fingerprinter(DedupConfig())
    texts = [random_text(seed, words) for seed, words in ((1, 60), (2, 85), (3, 800))]
    prints = fp.batch(texts)
    assert prints.nfeat[0] <= K < prints.nfeat[1] <= fp.keep_max < prints.nfeat[2]
    kept = np.diff(prints.feat_offsets)
    assert kept[0] == prints.nfeat[0] and kept[1] == K and kept[2] == 0
    assert (prints.sketch[0] == _whole(fp.features(texts[0]))).all()


@pytest.mark.parametrize(("words_a", "words_b"), [(90, 120), (150, 160), (200, 260)])
def test_pairs_across_sketch_kinds_are_estimated_near_their_exact_jaccard(
    words_a: int, words_b: int
) -> None:
    # compact set against compact set, compact set against odd sketch, odd against odd
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
