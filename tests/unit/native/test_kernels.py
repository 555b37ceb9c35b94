"""The kernels ahead of time and on numba's JIT: the install builds the exports, they decide
exactly as the JIT does, and a call no export was built for runs on the JIT instead of being
misread; exports of other kernel sources are refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.fingerprint import kernels as fingerprint_kernels
from neardup_stream.fingerprint.fingerprinter import Fingerprinter
from neardup_stream.index import kernels as index_kernels
from neardup_stream.native import aot, kernel
from tests.unit.conftest import mutate, random_text


@pytest.fixture
def kernels_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Switch the process between the exports ("auto") and the JIT ("jit")."""

    def switch(mode: str) -> None:
        monkeypatch.setenv(aot.MODE_ENV, mode)
        kernel.reload_exports()

    yield switch
    monkeypatch.delenv(aot.MODE_ENV, raising=False)
    kernel.reload_exports()


def _docs() -> list[Document]:
    base = [random_text(i, 40 + 90 * i) for i in range(8)]
    texts = [
        *base,
        "Привет, мир! " * 30,
        "日本語のテキストです。" * 20,
        "한국어 텍스트 가나다 " * 12,
        "ok",
    ]
    texts += [mutate(t, 0.03 * (i % 5 + 1), i) for i, t in enumerate(base)]
    return [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]


def test_the_install_built_the_kernels_ahead_of_time() -> None:
    assert aot.status() == "ahead-of-time kernels", aot.status()
    for k in (fingerprint_kernels.fingerprint_batch, index_kernels.decide_batch):
        assert aot.exports(k.name), k.name


@pytest.mark.parametrize(
    "config",
    [
        DedupConfig(),
        DedupConfig(shingle="word", shingle_size=3, threshold=0.7),
        DedupConfig(precise=True, max_docs=50, max_age_seconds=60),
    ],
    ids=["default", "word-3", "precise-bounded"],
)
def test_ahead_of_time_and_jit_compute_the_same(config: DedupConfig, kernels_on) -> None:
    docs = _docs()
    texts = [d.text for d in docs]
    results = {}
    for mode in ("auto", "jit"):
        kernels_on(mode)
        before = kernel.fallbacks
        raw = Fingerprinter(config)._run(texts)
        decisions = Deduplicator(config).check_batch(docs, now=1e9)
        results[mode] = (raw, [d.model_dump() for d in decisions])
        if mode == "auto":
            assert kernel.fallbacks == before  # every call took an export
    (raw_aot, decided_aot), (raw_jit, decided_jit) = results["auto"], results["jit"]
    for field in raw_aot._fields:
        assert np.array_equal(getattr(raw_aot, field), getattr(raw_jit, field)), field
    assert decided_aot == decided_jit
    assert any(d["decision"] == "duplicate" for d in decided_aot)  # the corpus has some


def test_a_call_no_export_fits_runs_on_the_jit(kernels_on) -> None:
    kernels_on("auto")
    signature = np.random.default_rng(3).integers(0, 2**63, size=(6, 32), dtype=np.uint64)
    exported = fingerprint_kernels.band_keys(signature, 8, 4, 11)
    before = kernel.fallbacks
    # The same values in Fortran order: an export compiled for C order would misread them.
    other = fingerprint_kernels.band_keys(np.asfortranarray(signature), 8, 4, 11)
    assert kernel.fallbacks == before + 1
    assert np.array_equal(exported, other)
    by_name = fingerprint_kernels.band_keys(signature, 8, 4, seed=11)  # keywords: the JIT
    assert np.array_equal(exported, by_name)


def test_exports_of_other_kernel_sources_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kernels_on
) -> None:
    manifest = json.loads(aot.MANIFEST.read_text(encoding="utf-8"))
    manifest["digest"] = "0" * 64  # built before a kernel source changed
    stale = tmp_path / "_aot.json"
    stale.write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setattr(aot, "MANIFEST", stale)
    kernels_on("auto")
    assert aot.exports(fingerprint_kernels.fingerprint_batch.name) == []
    assert "other kernel sources" in aot.status()
    texts = ["one text here", "one text here!"]
    assert Fingerprinter(DedupConfig())._run(texts).simhash.shape == (2,)  # on the JIT
