"""`njit`: a kernel declared once, run ahead of time when it can, by numba's JIT otherwise.

`@njit(**options)`, with numba's options, makes a `Kernel`. Declaring one imports
nothing: numba is imported the first time any kernel needs the JIT (`jit_all`), which then
makes a numba dispatcher for every kernel declared so far, with its options, and teaches
numba's typing that a `Kernel` is its dispatcher, so kernels call kernels (and inline them)
as they did as plain `numba.njit` functions.

A call from Python takes the ahead-of-time export whose argument key (`argkey`) equals its
own (`aot.exports`), else the dispatcher. A kernel with exports that gets a call none of them
fits says so once in the log (`fallbacks` counts such calls): the build did not see those
argument types, and that call now pays numba's import and loading.
While `recording` (the build), every call from Python is recorded with its arguments.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from neardup_stream.native import aot
from neardup_stream.native.argkey import call_key

log = logging.getLogger(__name__)
_declared: list[Kernel] = []
_lock = threading.RLock()
_recording: list[tuple[Kernel, tuple[Any, ...]]] | None = None
_typed = False  # numba's typing knows a `Kernel` as its dispatcher
fallbacks = 0  # calls of a kernel with exports that none of them fits


class Kernel:
    """One compiled kernel (see the module docstring)."""

    def __init__(self, py_func: Callable[..., Any], options: dict[str, Any]) -> None:
        self.py_func, self.options = py_func, options
        self.name = f"{py_func.__module__}:{py_func.__qualname__}"
        self.__doc__, self.__wrapped__ = py_func.__doc__, py_func
        self._dispatcher: Any = None
        self._exports: list[aot.Export] | None = None
        self._warned = False
        with _lock:
            _declared.append(self)

    def __repr__(self) -> str:
        return f"<kernel {self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # exports take positional arguments only
            return self.dispatcher(*args, **kwargs)
        exports = self._exports
        if exports is None:
            exports = self._exports = aot.exports(self.name)
        if exports:
            key = call_key(args)
            for export in exports:
                if export.key == key:
                    return export.function(*args)
            self._fell_back()
        if _recording is not None:
            _recording.append((self, args))
        return self.dispatcher(*args)

    @property
    def dispatcher(self) -> Any:
        """numba's dispatcher of this kernel (importing numba, for every kernel, if need be)."""
        if self._dispatcher is None:
            jit_all()
        return self._dispatcher

    def _fell_back(self) -> None:
        global fallbacks
        fallbacks += 1
        if not self._warned:
            self._warned = True
            log.warning(
                "kernel %s: no ahead-of-time export for these argument types; using numba's "
                "JIT (python -m neardup_stream.warmup rebuilds the exports)",
                self.name,
            )


def njit(**options: Any) -> Callable[[Callable[..., Any]], Kernel]:
    """`numba.njit(**options)`, deferred (see the module docstring)."""

    def declare(py_func: Callable[..., Any]) -> Kernel:
        return Kernel(py_func, options)

    return declare


def jit_all() -> None:
    """Import numba and make the dispatcher of every kernel declared (once per process)."""
    global _typed
    with _lock:
        pending = [k for k in _declared if k._dispatcher is None]
        if not pending:
            return
        from neardup_stream.caches import seed_jit_cache

        seed_jit_cache()  # before the first dispatcher sets up numba's cache directory
        import numba
        from numba.core import types
        from numba.extending import typeof_impl

        if not _typed:
            typeof_impl.register(Kernel)(lambda k, context: types.Dispatcher(k.dispatcher))
            _typed = True
        for k in pending:
            k._dispatcher = numba.njit(**k.options)(k.py_func)


def start_recording() -> list[tuple[Kernel, tuple[Any, ...]]]:
    """Record every call from Python from now on (the build); returns the record."""
    global _recording
    _recording = []
    return _recording


def stop_recording() -> None:
    global _recording
    _recording = None


def reload_exports() -> None:
    """Look for the ahead-of-time exports again (after a build wrote new ones)."""
    with _lock:
        aot.reset()
        for k in _declared:
            k._exports = None
