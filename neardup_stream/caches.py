"""Start-up caches: derived tables kept on disk, and numba's compiled-code cache.

Two things are slow to make and never change for a given install: the Unicode fold tables
(`fingerprint.normalize.fold_table`, `fingerprint.nfkc.nfkc_tables`: seconds of `unicodedata`
calls) and the machine code of the compiled kernels (numba, tens of seconds). `python -m neardup_stream.warmup` makes both at
install or image-build time, so the first run starts warm.

* Derived tables are `.npz` files named by what they depend on (e.g. the Unicode version),
  looked up in `$NEARDUP_CACHE_DIR`, then inside the installed package, then in the user's
  cache directory; a missing one is built and written (atomically, best effort) to the first
  writable of those.
* numba's compiled-code cache: `setup.py` fills it while the package is built (wheel or
  editable install), inside the package's own `__pycache__` directories; numba keys it by
  source content, so it travels with the package. When numba looks elsewhere (NUMBA_CACHE_DIR
  set, or a read-only install), `seed_jit_cache()` (called before any kernel module is
  imported) copies it there. An image can also carry a read-only, pre-filled copy and name it
  in `NEARDUP_JIT_CACHE_SEED`: copied into `NUMBA_CACHE_DIR` when that holds no index yet.
* `announce_compilation` says once, on stderr, when the first use of the kernels is about to
  compile them (the cache is cold), and how to do that ahead of time.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np

_PACKAGE_ROOT = Path(__file__).resolve().parent
_PACKAGE_DIR = _PACKAGE_ROOT / "_cache"


def cache_dirs() -> list[Path]:
    """Where derived tables are looked for, in order."""
    dirs = []
    if os.environ.get("NEARDUP_CACHE_DIR"):
        dirs.append(Path(os.environ["NEARDUP_CACHE_DIR"]))
    dirs.append(_PACKAGE_DIR)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    dirs.append(Path(xdg) / "neardup-stream")
    return dirs


def _load(path: Path, names: tuple[str, ...]) -> tuple[np.ndarray, ...] | None:
    try:
        with np.load(path) as npz:
            return tuple(npz[n] for n in names)
    except (OSError, KeyError, ValueError):
        return None


def _save(path: Path, arrays: dict[str, np.ndarray]) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)  # type: ignore[arg-type]
        os.replace(tmp, path)
        return True
    except OSError:
        return False


def cached_arrays(
    name: str, names: tuple[str, ...], build: Callable[[], tuple[np.ndarray, ...]]
) -> tuple[np.ndarray, ...]:
    """The arrays stored as `name` in a cache directory, else `build()` them and store them."""
    for d in cache_dirs():
        found = _load(d / name, names)
        if found is not None:
            return found
    arrays = build()
    for d in cache_dirs():
        if _save(d / name, dict(zip(names, arrays, strict=True))):
            break
    return arrays


_KERNEL_PACKAGES = ("fingerprint", "index", "sharded")  # sharded: the merged-table kernels
_STAMP = "neardup-kernels.sha256"


def kernel_digest(root: Path = _PACKAGE_ROOT) -> str:
    """A digest of every source file the compiled kernels are built from."""
    h = hashlib.sha256()
    for pkg in _KERNEL_PACKAGES:
        for f in sorted((root / pkg).glob("*.py")):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def purge_stale_jit_cache() -> None:
    """Delete numba's cached machine code when any kernel source changed since it was made.

    numba checks only the file a kernel is defined in; a kernel that inlines one from another
    module (index kernels call fingerprint ones) would otherwise load stale code silently.
    """
    with contextlib.suppress(OSError):
        digest = kernel_digest()
        root = _PACKAGE_ROOT
        custom = _numba_cache_root()
        dirs = (
            [Path(custom)]
            if custom
            else [numba_cache_dir(root / pkg / "kernels.py") for pkg in _KERNEL_PACKAGES]
        )
        for d in dirs:
            stamp = d / _STAMP
            if stamp.exists() and stamp.read_text() == digest:
                continue
            if d.is_dir():
                for f in [*d.rglob("*.nbi"), *d.rglob("*.nbc")]:
                    f.unlink(missing_ok=True)
            d.mkdir(parents=True, exist_ok=True)  # stamped before numba writes anything there
            stamp.write_text(digest)


def seed_jit_cache() -> None:
    """Drop a stale JIT cache, copy the pre-filled one named by NEARDUP_JIT_CACHE_SEED into
    NUMBA_CACHE_DIR, then adopt the kernels the package carries (`adopt_packaged_jit_cache`)."""
    purge_stale_jit_cache()
    seed, target = os.environ.get("NEARDUP_JIT_CACHE_SEED"), _numba_cache_root()
    empty = not (target and Path(target).is_dir() and any(Path(target).rglob("*.nbi")))
    if seed and target and Path(seed).is_dir() and empty:
        with contextlib.suppress(OSError):  # numba compiles what it cannot load: not wrong
            shutil.copytree(seed, target, dirs_exist_ok=True)
    adopt_packaged_jit_cache()


def _numba_cache_root() -> str:
    """NUMBA_CACHE_DIR as numba read it when it was imported (importing it now if need be)."""
    from numba.core import config

    return str(getattr(config, "CACHE_DIR", "") or "")


def numba_cache_dir(source: Path) -> Path:
    """The directory numba caches the kernels of `source` in, by its own locator order:
    under NUMBA_CACHE_DIR when set, else the module's `__pycache__` when writable, else the
    user's cache directory (subdirectories named as numba names them)."""
    from numba.core.caching import UserWideCacheLocator
    from numba.misc.appdirs import AppDirs

    subpath = UserWideCacheLocator.get_suitable_cache_subpath(str(source))
    custom = _numba_cache_root()
    if custom:
        return Path(custom) / subpath
    in_tree = source.parent / "__pycache__"
    try:
        in_tree.mkdir(exist_ok=True)
        tempfile.TemporaryFile(dir=in_tree).close()
        return in_tree
    except OSError:
        return Path(AppDirs(appname="numba", appauthor=False).user_cache_dir) / subpath


def _copy_atomically(src: Path, dst: Path) -> None:
    fd, tmp = tempfile.mkstemp(dir=dst.parent, prefix=f".{dst.name}.")
    with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
        shutil.copyfileobj(inp, out)
    os.replace(tmp, dst)


def adopt_packaged_jit_cache(root: Path = _PACKAGE_ROOT) -> None:
    """Copy the compiled kernels the installed package carries to where numba looks for them.

    `setup.py` compiles them into the package's own `__pycache__` directories at build time;
    numba keys them by source content, so they are valid wherever the package lands. numba
    reads them in place unless NUMBA_CACHE_DIR is set or the package is read-only: then every
    packaged index missing there is copied (its data files first), if the package's stamp
    says it was made from these sources. Whatever fails, numba compiles: slower, not wrong.
    """
    with contextlib.suppress(OSError):
        digest = kernel_digest(root)
        for pkg in _KERNEL_PACKAGES:
            src = root / pkg / "__pycache__"
            dst = numba_cache_dir(root / pkg / "kernels.py")
            stamp = src / _STAMP
            if dst == src or not stamp.exists() or stamp.read_text() != digest:
                continue
            for index in sorted(src.glob("*.nbi")):
                if (dst / index.name).exists():
                    continue
                dst.mkdir(parents=True, exist_ok=True)
                for data in src.glob(f"{glob.escape(index.name[: -len('.nbi')])}.*.nbc"):
                    _copy_atomically(data, dst / data.name)
                _copy_atomically(index, dst / index.name)


COMPILE_NOTICE = (
    "neardup-stream: compiling the kernels (numba, about 30 s, once: this install carries none "
    "for this numba version and CPU). Do it ahead of time with: python -m neardup_stream.warmup\n"
)


def jit_cache_cold() -> bool:
    """Whether the first use of the kernels will compile them: numba's cache holds no machine
    code for this source and this CPU for the fingerprint or the decide kernel.

    Reads numba's cache index (an internal interface): whatever goes wrong there, the answer
    is False, so at worst the notice is missing, never wrong. Compiles nothing.
    """
    from neardup_stream.fingerprint import kernels as fingerprint_kernels
    from neardup_stream.index import kernels as index_kernels
    from neardup_stream.native import aot

    kernels = [fingerprint_kernels.fingerprint_batch, index_kernels.decide_batch]
    if all(aot.exports(k.name) for k in kernels):
        return False  # built ahead of time: nothing compiles (and numba is not imported)
    try:
        from numba.core.registry import cpu_target

        machine = cpu_target.target_context.codegen().magic_tuple()
        for kernel in kernels:
            index = kernel.dispatcher._cache._cache_file._load_index()
            if not any(key[1] == machine for key in index):
                return True
    except Exception:  # numba's internals moved: stay silent rather than guess
        return False
    return False


def announce_compilation(err: IO[str]) -> bool:
    """Write `COMPILE_NOTICE` to `err` when the kernels are about to compile; True if so."""
    if not jit_cache_cold():
        return False
    err.write(COMPILE_NOTICE)
    err.flush()
    return True
