import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.fingerprint.shingles import char_shingles, jaccard
from neardup_stream.index.lsh import candidate_probability, optimal_banding
from tests.unit.conftest import mutate, random_text


@given(st.integers(1, 32), st.integers(1, 16), st.floats(0, 1), st.floats(0, 1))
def test_s_curve_is_monotone_probability(bands: int, rows: int, s1: float, s2: float) -> None:
    lo, hi = sorted((s1, s2))
    p_lo, p_hi = candidate_probability(lo, bands, rows), candidate_probability(hi, bands, rows)
    assert 0 <= p_lo <= p_hi <= 1


@pytest.mark.parametrize(("bands", "rows"), [(1, 1), (2, 1), (1, 3), (3, 2), (4, 3), (2, 6)])
@pytest.mark.parametrize("s", [0.0, 0.3, 0.5, 0.8, 1.0])
def test_s_curve_is_the_chance_that_some_band_agrees_in_every_row(
    bands: int, rows: int, s: float
) -> None:
    """Counted over every outcome: each of bands x rows MinHash values agrees with
    probability s, independently; a pair is a candidate when some band agrees in all rows."""
    cells = bands * rows
    total = 0.0
    for outcome in range(1 << cells):
        agree = [(outcome >> c) & 1 == 1 for c in range(cells)]
        if any(all(agree[b * rows : (b + 1) * rows]) for b in range(bands)):
            k = sum(agree)
            total += s**k * (1 - s) ** (cells - k)
    assert candidate_probability(s, bands, rows) == pytest.approx(total, abs=1e-12)


@pytest.mark.parametrize("threshold", [0.5, 0.7, 0.8, 0.9])
def test_optimal_banding_respects_budget_and_threshold(threshold: float) -> None:
    bands, rows = optimal_banding(threshold, 128, 0.5)
    assert bands * rows <= 128
    assert candidate_probability(threshold - 0.2, bands, rows) < 0.5
    assert candidate_probability(min(1.0, threshold + 0.1), bands, rows) > 0.5


def test_default_banding_favours_recall() -> None:
    bands, rows = DedupConfig().banding
    assert bands <= DedupConfig().max_bands
    assert candidate_probability(0.8, bands, rows) > 0.98


def test_optimal_banding_validates() -> None:
    with pytest.raises(ValueError, match="threshold must be in"):
        optimal_banding(0.0, 128)


@pytest.mark.parametrize(("bands", "rows"), [(8, 8), (12, 5), (20, 3)])
def test_empirical_candidate_rate_follows_s_curve(bands: int, rows: int) -> None:
    """Per similarity band, the share of pairs sharing a bucket matches the S-curve."""
    fp = Fingerprinter(DedupConfig(bands=bands, rows=rows))
    sims, hits = [], []
    for seed in range(400):
        base = random_text(seed, 300)
        other = mutate(base, 0.01 + (seed % 20) / 50, seed + 7)
        prints = fp.batch([base, other])
        sims.append(jaccard(char_shingles(base, 5), char_shingles(other, 5)))
        hits.append(bool((prints.lsh_keys[0] == prints.lsh_keys[1]).any()))
    s, h = np.array(sims), np.array(hits)
    checked = 0
    for lo in np.arange(0.0, 1.0, 0.1):
        inside = (s >= lo) & (s < lo + 0.1)
        n = int(inside.sum())
        if n < 20:
            continue
        expected = float(np.mean(candidate_probability(s[inside], bands, rows)))
        sigma = math.sqrt(max(expected * (1 - expected), 0.01) / n)
        assert abs(float(h[inside].mean()) - expected) <= 4 * sigma + 0.05, (lo, n, expected)
        checked += 1
    assert checked >= 4
