"""Every configuration `DedupConfig` accepts works: no hang, and the fast path agrees with
precise mode wherever the sketch estimate is not within its noise of the threshold."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.fingerprint.shingles import jaccard, shingles
from tests.unit.conftest import mutate, random_text

POW2 = [2**i for i in range(4, 11)]


@st.composite
def configs(draw: st.DrawFn) -> DedupConfig:
    num_perm = draw(st.sampled_from(POW2[:5]))
    step = max(64, num_perm)  # any multiple of 64 and of num_perm, powers of two or not
    sketch_bits = draw(st.integers(1, 4096 // step)) * step
    banding: dict[str, int] = {}
    if draw(st.booleans()):
        bands = draw(st.integers(1, num_perm))
        banding = {"bands": bands, "rows": draw(st.integers(1, num_perm // bands))}
    shingle = draw(st.sampled_from(["char", "word"]))
    return DedupConfig(
        threshold=draw(st.floats(0.5, 1.0)),
        shingle=shingle,
        shingle_size=draw(st.integers(1, 8 if shingle == "char" else 4)),
        num_perm=num_perm,
        sketch_bits=sketch_bits,
        max_bands=draw(st.integers(1, 32)),
        simhash_k=draw(st.integers(0, 7)),
        shards=draw(st.sampled_from([1, 2, 3, 7, 64, 1024])),
        bucket_cap=draw(st.integers(1, 80)),
        index_duplicates=draw(st.booleans()),
        max_docs=draw(st.none() | st.integers(1, 40)),
        max_age_seconds=draw(st.none() | st.floats(1, 100)),
        **banding,
    )


@st.composite
def streams(draw: st.DrawFn) -> list[Document]:
    texts: list[str] = []
    for i in range(draw(st.integers(2, 14))):
        kind = draw(st.sampled_from(["new", "near", "near", "copy", "short"]))
        if kind == "new" or not texts:
            texts.append(random_text(draw(st.integers(0, 10**6)), draw(st.integers(150, 400))))
        elif kind == "near":
            src = draw(st.sampled_from(texts))
            texts.append(mutate(src, draw(st.floats(0.0, 0.15)), i))
        elif kind == "copy":
            texts.append(draw(st.sampled_from(texts)))
        else:
            texts.append(draw(st.sampled_from([".", "a", "hello world", "近似重复"])))
    return [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]


def _noise(cfg: DedupConfig, a: str, b: str) -> float:
    """Five standard deviations of the 1-bit sketch estimate for this pair."""
    sizes = [len(set(shingles(t, cfg.shingle, cfg.shingle_size))) for t in (a, b)]
    samples = max(1, min(cfg.sketch_bits, *sizes))
    return 5 / math.sqrt(samples)


@pytest.mark.timeout(900, method="thread")
@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(configs(), streams(), st.integers(1, 5))
def test_any_valid_config_decides_like_precise_mode_outside_the_noise(
    cfg: DedupConfig, docs: list[Document], step: int
) -> None:
    times = [float(step * i) for i in range(len(docs))]
    fast = Deduplicator(cfg).process(docs, now=0, times=times)
    exact = Deduplicator(DedupConfig(**{**cfg.model_dump(), "precise": True})).process(
        docs, now=0, times=times
    )
    fp = Deduplicator(cfg).fingerprinter
    text = {d.id: fp.normalize(d.text) for d in docs}

    def similarity(a: str, b: str) -> float:
        return jaccard(*(shingles(text[x], cfg.shingle, cfg.shingle_size) for x in (a, b)))

    assert len(fast) == len(exact) == len(docs)
    for f, e in zip(fast, exact, strict=True):
        f, e = f.decision, e.decision
        if f.is_duplicate == e.is_duplicate:
            continue
        # The first disagreement (later ones see different indexes): the candidate that made
        # the difference must be within the estimate's noise of the threshold.
        other = f.duplicate_of if f.is_duplicate else e.duplicate_of
        assert other is not None
        true = similarity(f.id, other)
        assert abs(true - cfg.threshold) <= _noise(cfg, text[f.id], text[other]), (f, e, true)
        break
