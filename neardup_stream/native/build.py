"""Build the ahead-of-time exports (`build`, run by `python -m neardup_stream.warmup`).

It runs the warm-up on numba's JIT while recording every kernel call from Python, then
compiles one export per (kernel, argument types) seen, with numba's pycc, into the
extension module `aot.MODULE`, next to this file, and writes the manifest last (so a build
cut short leaves the previous manifest or none, never one naming what is not there). A
call whose arguments have no key (`argkey`) or whose result pycc cannot return (anything
but arrays, scalars and tuples of them) gets no export and stays on the JIT. The machine
code is for a generic CPU of the platform (pycc's default), so it runs wherever the package
lands; exports release the GIL as the JIT kernels do (`nogil`), so Kafka's client threads
run during a batch. Needs numba and a C compiler; without them the kernels stay on the JIT.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from neardup_stream.native import aot, kernel
from neardup_stream.native.argkey import call_key, to_json


def _returnable(ty: Any) -> bool:
    """Whether pycc's wrapper can box a result of numba type `ty` without numba."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return all(_returnable(t) for t in ty.types)  # type: ignore[attr-defined]
    return isinstance(ty, (types.Array, types.Integer, types.Float, types.Boolean, types.NoneType))


def _exports(
    calls: list[tuple[kernel.Kernel, tuple[Any, ...]]],
) -> list[tuple[kernel.Kernel, Any, Any]]:
    """(kernel, argument key, numba signature) per distinct export to build."""
    from numba import typeof

    found: dict[tuple[str, Any], tuple[kernel.Kernel, Any, Any]] = {}
    for k, args in calls:
        key = call_key(args)
        if key is None or (k.name, key) in found:
            continue
        argtypes = tuple(typeof(a) for a in args)
        compiled = k.dispatcher.overloads.get(argtypes)
        if compiled is None or not _returnable(compiled.signature.return_type):
            continue
        found[(k.name, key)] = (k, key, compiled.signature.return_type(*argtypes))
    return list(found.values())


@contextmanager
def _on_the_jit() -> Iterator[None]:
    """Every kernel runs (and is recorded) on the JIT meanwhile; the exports are looked for
    again afterwards, and `NEARDUP_KERNELS` is as it was."""
    mode = os.environ.get(aot.MODE_ENV)
    os.environ[aot.MODE_ENV] = "jit"
    kernel.reload_exports()
    try:
        yield
    finally:
        if mode is None:
            os.environ.pop(aot.MODE_ENV, None)
        else:
            os.environ[aot.MODE_ENV] = mode
        kernel.reload_exports()


@contextmanager
def _releasing_the_gil() -> Iterator[None]:
    """pycc compiles its wrappers with default flags: make them release the GIL (`nogil`)."""
    from numba.pycc import compiler

    default = compiler.Flags

    class NoGilFlags(default):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.release_gil = True

    compiler.Flags = NoGilFlags  # type: ignore[misc]
    try:
        yield
    finally:
        compiler.Flags = default  # type: ignore[misc]


def build(record: Any) -> int:
    """Record `record()`'s kernel calls and build their exports; the number built."""
    from numba.pycc import CC

    from neardup_stream.caches import kernel_digest

    with _on_the_jit():
        calls = kernel.start_recording()
        try:
            record()
        finally:
            kernel.stop_recording()
        target = Path(aot.__file__).resolve().parent
        with (
            tempfile.TemporaryDirectory(dir=target, prefix=".build-") as tmp,
            _releasing_the_gil(),
        ):
            cc = CC(aot.MODULE.rsplit(".", 1)[1])
            cc.output_dir = tmp
            entries = []
            for i, (k, key, signature) in enumerate(_exports(calls)):
                export = f"k{i}"
                cc.export(export, signature)(k.dispatcher)
                entries.append({"kernel": k.name, "export": export, "key": to_json(key)})
            cc.compile()
            built = Path(tmp) / Path(cc.output_file).name
            manifest = {"format": aot.FORMAT, "digest": kernel_digest(), "exports": entries}
            aot.MANIFEST.unlink(missing_ok=True)  # no manifest naming a module being replaced
            os.replace(built, target / built.name)
            staged = Path(tmp) / aot.MANIFEST.name
            staged.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
            os.replace(staged, aot.MANIFEST)
    return len(entries)
