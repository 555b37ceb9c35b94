"""The benchmarks' ground-truth text model agrees with the engine's, empty texts included."""

from __future__ import annotations

import pytest

from bench import textnorm
from neardup_stream.fingerprint.normalize import normalize
from neardup_stream.fingerprint.shingles import char_shingles, jaccard


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", ""),
        ("", "some text here"),
        ("abc", "abc"),
        ("abc", "abd"),
        ("  The Quick  brown fox\u00a0jumps ", "the quick brown fox jumps over"),
        ("Straße ÉTÉ ﬁnance", "strasse été finance"),
    ],
)
def test_bench_jaccard_and_shingles_match_the_engine(a: str, b: str) -> None:
    assert textnorm.normalize(a) == normalize(a)
    sa, sb = textnorm.shingle_set(a), textnorm.shingle_set(b)
    ea, eb = set(char_shingles(normalize(a), 5)), set(char_shingles(normalize(b), 5))
    assert (sa, sb) == (ea, eb)
    assert textnorm.jaccard(sa, sb) == pytest.approx(jaccard(ea, eb))
