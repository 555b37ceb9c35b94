"""Keeping freed memory for the next batch: glibc's malloc tuned once, by the commands.

Every batch allocates its arrays afresh (texts, fingerprints, decisions), from one to tens of
megabytes. By default glibc serves a block above its mmap threshold (128 KiB, raised as such
blocks are freed) from fresh pages and hands the memory back to the system when it is freed
(`munmap`, or trimming the heap's top past the trim threshold): the next batch then faults
in and zeroes the same amount again. On 930 CJK documents that was ~1,000 page faults,
2.5 µs a document, a fifth of fingerprinting them (`bench_fingerprint`).

`keep_freed_memory` raises both thresholds (`mallopt`), so blocks up to `MMAP_THRESHOLD`
come from the heap and freed memory at a heap's top stays mapped for reuse up to
`TRIM_THRESHOLD` (per arena; fragmentation can keep more). The commands (`neardup-stream
dedup`, the worker) call it at start-up, before they start threads; importing the package
never does (a library does not retune its host's allocator). It does nothing on a C library
without `mallopt` (e.g. musl), or when the user tuned glibc's thresholds through its
environment (`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`, or those tunables in
`GLIBC_TUNABLES`): theirs win.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
# glibc's largest mmap threshold (4 MiB * sizeof(long): 32 MiB on 64-bit, 16 MiB on 32-bit)
MMAP_THRESHOLD = 4 * 1024 * 1024 * ctypes.sizeof(ctypes.c_long)
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc pairs with a raised mmap threshold
USER_VARIABLES = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
USER_TUNABLES = ("glibc.malloc.mmap_threshold", "glibc.malloc.trim_threshold")


def keep_freed_memory(environ: Mapping[str, str] = os.environ) -> bool:
    """Raise glibc's mmap and trim thresholds for this process; True if they were set."""
    if any(name in environ for name in USER_VARIABLES):
        return False
    if any(name in environ.get("GLIBC_TUNABLES", "") for name in USER_TUNABLES):
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
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the process's own symbols: its C library's
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt
