from pathlib import Path

import numpy as np
import pytest

from neardup_stream import caches


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEARDUP_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_derived_arrays_are_built_once_then_loaded(cache_dir: Path) -> None:
    builds = []

    def build() -> tuple[np.ndarray, ...]:
        builds.append(1)
        return np.arange(5), np.array([7, 8], dtype=np.uint32)

    first = caches.cached_arrays("t.npz", ("a", "b"), build)
    again = caches.cached_arrays("t.npz", ("a", "b"), build)
    assert len(builds) == 1 and (cache_dir / "t.npz").exists()
    assert all(
        np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(first, again, strict=True)
    )


def test_a_corrupt_cache_file_is_rebuilt(cache_dir: Path) -> None:
    cache_dir.mkdir()
    (cache_dir / "t.npz").write_bytes(b"not an npz")
    for d in caches.cache_dirs()[1:]:
        assert not (d / "t.npz").exists()
    (a,) = caches.cached_arrays("t.npz", ("a",), lambda: (np.ones(3),))
    assert a.tolist() == [1.0, 1.0, 1.0]


def test_jit_cache_is_seeded_only_into_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed, target = tmp_path / "seed", tmp_path / "target"
    (seed / "pkg").mkdir(parents=True)
    (seed / "pkg" / "k.nbi").write_bytes(b"index")
    (seed / "neardup-kernels.sha256").write_text(caches._kernel_digest())  # as warm-up stamps it
    monkeypatch.setenv("NEARDUP_JIT_CACHE_SEED", str(seed))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(target))
    caches.seed_jit_cache()
    assert (target / "pkg" / "k.nbi").read_bytes() == b"index"
    (seed / "pkg" / "k.nbi").write_bytes(b"newer")
    caches.seed_jit_cache()
    assert (target / "pkg" / "k.nbi").read_bytes() == b"index"


def test_a_jit_cache_made_from_other_kernel_sources_is_purged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    stale = tmp_path / "x" / "kernels.decide-1.py311.nbi"
    stale.parent.mkdir()
    stale.write_bytes(b"old")
    (tmp_path / "neardup-kernels.sha256").write_text("digest of older sources")
    caches.purge_stale_jit_cache()
    assert not stale.exists()
    fresh = tmp_path / "x" / "kernels.decide-1.py311.nbi"
    fresh.write_bytes(b"new")
    caches.purge_stale_jit_cache()  # same sources: kept
    assert fresh.exists()


def test_a_warm_kernel_cache_is_not_called_cold() -> None:
    from neardup_stream.caches import jit_cache_cold
    from neardup_stream.deduplicator import Deduplicator
    from neardup_stream.models import Document

    Deduplicator().check(Document(id="a", text="compile and cache the kernels"))
    assert not jit_cache_cold()
