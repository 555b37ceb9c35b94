from pathlib import Path

import numpy as np
import pytest

from neardup_stream import caches


def set_numba_cache_dir(monkeypatch: pytest.MonkeyPatch, path: Path | None) -> None:
    """NUMBA_CACHE_DIR as a new process would see it (numba reads it once, at import)."""
    from numba.core import config

    if path is None:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    else:
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(path))
    monkeypatch.setattr(config, "CACHE_DIR", "" if path is None else str(path))


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
    (seed / "neardup-kernels.sha256").write_text(caches.kernel_digest())  # as warm-up stamps it
    monkeypatch.setenv("NEARDUP_JIT_CACHE_SEED", str(seed))
    set_numba_cache_dir(monkeypatch, target)
    caches.seed_jit_cache()
    assert (target / "pkg" / "k.nbi").read_bytes() == b"index"
    (seed / "pkg" / "k.nbi").write_bytes(b"newer")
    caches.seed_jit_cache()
    assert (target / "pkg" / "k.nbi").read_bytes() == b"index"


def test_a_jit_cache_made_from_other_kernel_sources_is_purged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_numba_cache_dir(monkeypatch, tmp_path)
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


def _packaged(tmp_path: Path) -> Path:
    """A package tree as setup.py leaves it: kernel sources, and in their __pycache__ the
    compiled kernels (an index and its data file) stamped with the sources' digest."""
    root = tmp_path / "pkg"
    for sub in caches._KERNEL_PACKAGES:
        (root / sub / "__pycache__").mkdir(parents=True)
        (root / sub / "kernels.py").write_text(f"# the {sub} kernels\n")
    for sub in caches._KERNEL_PACKAGES:
        built = root / sub / "__pycache__"
        (built / "kernels.k-10.py311.nbi").write_bytes(f"{sub} index".encode())
        (built / "kernels.k-10.py311.1.nbc").write_bytes(f"{sub} code".encode())
        (built / caches._STAMP).write_text(caches.kernel_digest(root))
    return root


def test_packaged_kernels_are_copied_where_numba_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _packaged(tmp_path)
    set_numba_cache_dir(monkeypatch, tmp_path / "numba")
    caches.adopt_packaged_jit_cache(root)
    for sub in caches._KERNEL_PACKAGES:
        target = caches.numba_cache_dir(root / sub / "kernels.py")
        assert target.parent == tmp_path / "numba"
        assert (target / "kernels.k-10.py311.nbi").read_bytes() == f"{sub} index".encode()
        assert (target / "kernels.k-10.py311.1.nbc").read_bytes() == f"{sub} code".encode()
    # an index numba already has there is never replaced (it may hold more signatures)
    (root / "index" / "__pycache__" / "kernels.k-10.py311.nbi").write_bytes(b"other")
    caches.adopt_packaged_jit_cache(root)
    target = caches.numba_cache_dir(root / "index" / "kernels.py")
    assert (target / "kernels.k-10.py311.nbi").read_bytes() == b"index index"


def test_packaged_kernels_of_other_sources_are_not_copied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _packaged(tmp_path)
    (root / "fingerprint" / "kernels.py").write_text("# edited after the build\n")
    set_numba_cache_dir(monkeypatch, tmp_path / "numba")
    caches.adopt_packaged_jit_cache(root)
    assert not list((tmp_path / "numba").rglob("*.nb*"))


def test_packaged_kernels_are_used_in_place_when_numba_looks_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _packaged(tmp_path)
    set_numba_cache_dir(monkeypatch, None)
    for sub in caches._KERNEL_PACKAGES:
        assert caches.numba_cache_dir(root / sub / "kernels.py") == root / sub / "__pycache__"
    before = sorted(p.name for p in tmp_path.rglob("*.nb*"))
    caches.adopt_packaged_jit_cache(root)
    assert sorted(p.name for p in tmp_path.rglob("*.nb*")) == before


def test_the_cache_directory_is_the_one_numba_uses() -> None:
    from neardup_stream.fingerprint import kernels as fingerprint_kernels
    from neardup_stream.index import kernels as index_kernels

    for module, kernel in (
        (fingerprint_kernels, fingerprint_kernels.fingerprint_batch),
        (index_kernels, index_kernels.decide_batch),
    ):
        assert caches.numba_cache_dir(Path(module.__file__)) == Path(
            kernel.dispatcher._cache.cache_path
        )


def test_every_cached_kernel_lives_where_a_source_change_purges_the_cache() -> None:
    """numba checks only a kernel's own file: a cached kernel outside the digested packages
    would keep machine code inlined from an older kernel of another module, silently."""
    root = Path(caches.__file__).parent
    cached = {
        f.parent.name
        for f in root.rglob("*.py")
        if "cache=True" in f.read_text(encoding="utf-8") and f.parent != root
    }
    assert cached, "no cached kernel found: the scan is wrong"
    assert cached <= set(caches._KERNEL_PACKAGES), cached - set(caches._KERNEL_PACKAGES)
