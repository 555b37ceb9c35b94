import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.shingles import char_shingles, jaccard
from neardup_stream.index.similarity import pair_similarity
from tests.unit.conftest import mutate, random_text

SCRIPT = """
import json, sys
from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
fp = Fingerprinter(DedupConfig()).batch(["Near-duplicate detection, 近似重复检测.", "x" * 999])
print(json.dumps({"simhash": fp.simhash.tolist(), "exact": fp.exact.tolist(),
                  "sketch": fp.sketch.tolist(), "keys": fp.lsh_keys.tolist(),
                  "blocks": fp.simhash_keys.tolist()}))
"""


def test_fingerprints_identical_across_fresh_interpreters() -> None:
    outputs = []
    for hashseed in ("1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        proc = subprocess.run(
            [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0]["simhash"][0] != 0


def test_fingerprints_depend_on_the_seed(text: str) -> None:
    a = Fingerprinter(DedupConfig()).batch([text])
    b = Fingerprinter(DedupConfig(seed=7)).batch([text])
    assert a.simhash[0] != b.simhash[0]
    assert not np.array_equal(a.sketch, b.sketch)


def test_empty_and_short_texts() -> None:
    fp = Fingerprinter(DedupConfig()).batch(["", "abc", "abc"])
    assert fp.nfeat.tolist() == [0, 1, 1]
    assert fp.simhash[0] == 0 and not fp.sketch[0].any()
    assert fp.simhash[1] == fp.simhash[2] and np.array_equal(fp.sketch[1], fp.sketch[2])


def test_word_mode_ignores_character_level_layout() -> None:
    fp = Fingerprinter(DedupConfig(shingle="word", shingle_size=3))
    prints = fp.batch(["the cat sat on the mat", "The  CAT sat on the mat"])
    assert prints.simhash[0] == prints.simhash[1]
    assert prints.nfeat.tolist() == [4, 4]


def _hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400), st.sampled_from(["char", "word"]), st.integers(1, 6))
def test_simhash_is_the_majority_vote_of_every_feature_occurrence(
    text: str, mode: str, k: int
) -> None:
    from neardup_stream.fingerprint import kernels
    from neardup_stream.fingerprint.shingles import codepoints

    cfg = DedupConfig(shingle=mode, shingle_size=k)  # type: ignore[arg-type]
    fp = Fingerprinter(cfg)
    kind = kernels.MODE_CHAR if mode == "char" else kernels.MODE_WORD
    feats = kernels.feature_hashes(codepoints(fp.normalize(text)), kind, k, cfg.seed)
    votes = [sum((int(h) >> b) & 1 for h in feats) for b in range(64)]
    expected = sum(1 << b for b in range(64) if 2 * votes[b] > len(feats))
    assert int(fp.batch([text]).simhash[0]) == expected


def test_simhash_small_edit_small_distance_unrelated_large(text: str) -> None:
    fp = Fingerprinter(DedupConfig()).batch([text, mutate(text, 0.01, 3), random_text(99)])
    near = _hamming(int(fp.simhash[0]), int(fp.simhash[1]))
    far = _hamming(int(fp.simhash[0]), int(fp.simhash[2]))
    assert near <= 6 < far


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(0.0, 0.6))
def test_jaccard_estimate_within_error_bound(seed: int, rate: float) -> None:
    base = random_text(seed, words=1500)
    other = mutate(base, rate, seed + 1)
    cfg = DedupConfig()
    fp = Fingerprinter(cfg).batch([base, other])
    est = pair_similarity(
        fp.nfeat[1], fp.sketch[1], fp.other[1], fp.feats[fp.feat_offsets[1] :], fp.sketch[0],
        fp.nfeat[0], Deduplicator(cfg).rules,
    )  # fmt: skip
    true = jaccard(char_shingles(base, 5), char_shingles(other, 5))
    p = (1 + true) / 2
    sigma = 2 * math.sqrt(p * (1 - p) / cfg.sketch_bits)  # the 1-bit sketch's; odd ones do better
    if true >= cfg.threshold - 0.1:
        assert abs(est - true) <= 5 * sigma + 0.02
    else:  # far below the threshold an odd sketch saturates: it only says so, never more
        assert est < true + 0.1


def test_feature_hashes_match_reference_shingles(text: str) -> None:
    fp = Fingerprinter(DedupConfig())
    assert fp.features(text).size == len(set(char_shingles(text, 5)))


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.characters(codec="utf-8"),
            st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x85\xa0\u1680\u2000\u2028\u3000ＡﬁẞΣİ")),
        ),
        max_size=60,
    )
)
def test_kernel_normalisation_and_exact_hash_match_the_python_reference(text: str) -> None:
    from neardup_stream.fingerprint.hashing import exact_hash
    from neardup_stream.fingerprint.normalize import normalize

    cfg = DedupConfig()
    fp = Fingerprinter(cfg).batch([text])
    assert tuple(int(x) for x in fp.exact[0]) == exact_hash(normalize(text), cfg.seed)
    assert fp.nfeat[0] == len(set(char_shingles(normalize(text), 5)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=5000))
def test_bit_counts_equal_naive_counting(values: list[int]) -> None:
    from neardup_stream.fingerprint.kernels import bit_counts

    feats = np.array(values, dtype=np.uint64)
    naive = [sum((v >> b) & 1 for v in values) for b in range(64)]
    assert bit_counts(feats).tolist() == naive


@pytest.mark.parametrize("n", [1, 15, 16, 17, 31, 4079, 4080, 4081, 4095, 4111, 8175, 12000])
def test_bit_counts_at_the_counters_limits(n: int) -> None:
    """Every bit set in every hash carries through each counter at once: the 16s' slices
    fill (255 blocks) and the last hashes, added one at a time, carry into them."""
    from neardup_stream.fingerprint.kernels import bit_counts

    ones = np.full(n, 2**64 - 1, dtype=np.uint64)
    assert bit_counts(ones).tolist() == [n] * 64
    mixed = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    naive = [int(((mixed >> np.uint64(b)) & np.uint64(1)).sum()) for b in range(64)]
    assert bit_counts(mixed).tolist() == naive


@pytest.mark.parametrize(
    "text",
    [
        "ﾊﾟﾝ ｶﾞ",
        "한국어 텍스트",
        "e\u0301clair ÉCLAIR",
        "Straße STRASSE",
        "İstanbul",
        "ΌΣΟΣ",
        "ﬁnance ㎏ ℡ ½",
        "北京，上海。ＡＢＣ",
        "\u1100\u1161\u11a8 각",
        "a\u0b47\u0b3e",
        "x\u00a0\u3000y",
    ],
)
def test_kernel_normalisation_of_context_dependent_text(text: str) -> None:
    from neardup_stream.fingerprint.hashing import exact_hash
    from neardup_stream.fingerprint.normalize import normalize

    cfg = DedupConfig()
    fp = Fingerprinter(cfg).batch([text, text.upper()])
    assert tuple(int(x) for x in fp.exact[0]) == exact_hash(normalize(text), cfg.seed)
    assert tuple(int(x) for x in fp.exact[1]) == exact_hash(normalize(text.upper()), cfg.seed)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=3000), st.integers(0, 3))
def test_bucket_sort_sorts(values: list[int], repeat: int) -> None:
    from neardup_stream.fingerprint.kernels import bucket_sort

    data = np.array(values * (repeat + 1), dtype=np.uint64)
    out = np.empty_like(data)
    bucket_sort(data, out, np.empty(2 * data.size + 2, dtype=np.int64))
    assert out.tolist() == sorted(data.tolist())
