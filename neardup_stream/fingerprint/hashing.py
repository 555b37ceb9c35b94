"""Deterministic hashing outside the compiled kernels: exact-text and id hashes.

Python's built-in `hash()` is salted per process and must never reach a fingerprint. These
functions use MurmurHash3 (mmh3) with explicit seeds, so they agree across processes, machines
and releases.
"""

from __future__ import annotations

import mmh3

_ID_SEED = 0x1D5EED


def exact_hash(normalized: str, seed: int) -> tuple[int, int]:
    """128-bit MurmurHash3 (x64) of the normalised text's UTF-32LE bytes, as two 64-bit halves.

    This is the reference for the compiled kernel, which computes the same value in its pass.
    """
    data = normalized.encode("utf-32-le", "surrogatepass")
    h = mmh3.hash128(data, seed, x64arch=True, signed=False)
    return h & 0xFFFFFFFFFFFFFFFF, h >> 64


def id_key(doc_id: str) -> int:
    """32-bit bucket key of a document id (the id registry's table key)."""
    return mmh3.hash(doc_id.encode("utf-8", "surrogatepass"), _ID_SEED, signed=False)
