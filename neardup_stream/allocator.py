"""Keeping freed memory for the next batch: glibc's malloc tuned once, by the commands.

Every batch allocates its arrays afresh (texts, fingerprints, decisions), from one to tens of
megabytes. By default glibc serves a block above its mmap threshold (128 KiB, raised as such
blocks are freed) from fresh pages and hands the memory back to the system when it is freed
(`munmap`, or trimming the heap's top past the trim threshold): the next batch then faults
in and zeroes the same amount again. On 930 CJK documents that was ~1,000 page faults,
2.5 µs a document, a fifth of fingerprinting them (`bench_fingerprint`).

`keep_freed_memory` raises both thresholds (`mallopt`), so blocks up to `MMAP_THRESHOLD`
come from the heap and up to `TRIM_THRESHOLD` of freed memory stays mapped for reuse. The
commands (`neardup-stream dedup`, the worker) call it at start-up; importing the package
never does (a library does not retune its host's allocator). It does nothing on a C library
without `mallopt` (e.g. musl), or when the user tuned glibc through its own environment
variables (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`): theirs win.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Mapping

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's largest dynamic threshold on 64-bit (4 * 1 MiB * 8)
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc pairs with a raised mmap threshold
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory(environ: Mapping[str, str] = os.environ) -> bool:
    """Raise glibc's mmap and trim thresholds for this process; True if they were set."""
    if any(name in environ for name in USER_VARIABLES):
        return False
    mallopt = _mallopt()
    if mallopt is None:
        return False
    # mmap first: setting it fixes both thresholds (glibc stops adjusting them)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )


def _mallopt() -> ctypes._NamedFuncPointer | None:
    """The C library's `mallopt(int, int) -> int`, or None where there is none."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
