"""The ahead-of-time exports: the extension module `build` made, if it is this source's.

The manifest (`MANIFEST`, JSON, written after the module) names, per kernel, its exports and
the argument key each was compiled for, and the digest of the kernel sources it was built
from. The exports are used only when that digest is the installed sources' (`caches`), the
module imports, and `NEARDUP_KERNELS` is not `jit`; otherwise every kernel runs on numba's
JIT: slower to start, never wrong. Loaded once per process, on the first kernel call.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from neardup_stream.native.argkey import Key, from_json

log = logging.getLogger(__name__)
MODULE = "neardup_stream.native._aot"  # the extension module `build` writes
MANIFEST = Path(__file__).resolve().parent / "_aot.json"
FORMAT = 1
MODE_ENV = "NEARDUP_KERNELS"  # "auto" (the default): exports when they fit; "jit": never


class Export(NamedTuple):
    """One export of a kernel: valid for calls whose argument key is `key`."""

    key: Key
    function: Callable[..., Any]


_table: dict[str, list[Export]] | None = None
_why_not = ""
_lock = threading.Lock()


def exports(kernel: str) -> list[Export]:
    """The exports of `kernel` (`module:qualname`); empty when there are none to use."""
    global _table
    if _table is None:
        with _lock:
            if _table is None:
                _table = _load()
    return _table.get(kernel, [])


def available() -> bool:
    """Whether this process runs kernels ahead of time (loading the exports if need be)."""
    exports("")
    return bool(_table)


def status() -> str:
    """Whether exports are in use, and if not why (for the logs and the tests)."""
    return "ahead-of-time kernels" if available() else f"numba JIT kernels ({_why_not})"


def _load() -> dict[str, list[Export]]:
    global _why_not
    if os.environ.get(MODE_ENV, "auto") == "jit":
        _why_not = f"{MODE_ENV}=jit"
        return {}
    try:
        manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        _why_not = "no ahead-of-time build: python -m neardup_stream.warmup makes one"
        return {}
    from neardup_stream.caches import kernel_digest

    if manifest.get("format") != FORMAT or manifest.get("digest") != kernel_digest():
        _why_not = "the ahead-of-time build is of other kernel sources"
        return {}
    try:
        module = importlib.import_module(MODULE)
    except ImportError as exc:  # e.g. built against another numpy's ABI
        _why_not = f"the ahead-of-time module does not load: {exc}"
        log.warning(
            "neardup-stream: %s; using numba's JIT (python -m neardup_stream.warmup rebuilds it)",
            _why_not,
        )
        return {}
    table: dict[str, list[Export]] = {}
    for entry in manifest["exports"]:
        function = getattr(module, entry["export"], None)
        if function is not None:
            table.setdefault(entry["kernel"], []).append(Export(from_json(entry["key"]), function))
    return table


def reset() -> None:
    """Forget what was loaded (tests, and the build after writing a new module)."""
    global _table
    with _lock:
        _table = None
