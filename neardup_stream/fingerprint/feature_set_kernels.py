"""Compiled kernels of a document's distinct feature set: its size, and its sorted values.

`distinct_count` counts the distinct feature hashes with an open-addressing hash set (of
`set_size` slots); `sorted_distinct` appends them sorted (`bucket_sort`: expected linear
time on uniform hashes), the set a document with few features keeps (`compact_set`) and
exact Jaccard is computed from.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.hash_kernels import S32
from neardup_stream.fingerprint.odd_sketch import flip
from neardup_stream.native import njit


@njit(inline="always", cache=True)
def set_size(n):
    size = 64
    while size < 4 * n:  # load at most 1/4: fewer probes past a taken slot (-25% time)
        size *= 2
    return size


@njit(cache=True, nogil=True)
def distinct_count(feats, seen, mark, odd):
    """Number of distinct hashes in `feats`, using `seen` as an open-addressing hash set;
    each distinct hash also flips its bit of the odd sketch `odd` (zeroed words; none when
    empty: `odd_sketch`), in the same pass.

    `seen` (zeroed when made, at least `set_size(feats.size)` slots) is reused from call to
    call without clearing it: a slot holds `mark << 32 | tag` and is taken only for the call
    whose `mark` it holds, so every call passes a new mark (1, 2, ..., below 2**32).

    A slot keeps each hash's top 32 bits as its tag, so two hashes sharing those and one run
    of probes count once: rarely (less than one document in 10,000 of a few thousand
    shingles), a document counts one fewer. Documents small enough to keep their set are
    counted exactly, by its sort."""
    mask = np.uint64(set_size(feats.size) - 1)
    mark = np.uint64(mark)
    bits = odd.size * 64
    n = 0
    for f in range(feats.size):
        h = feats[f]
        tag = (mark << S32) | (h >> S32)
        j = h & mask  # (unsigned: no check for a negative index)
        slot = seen[j]
        while slot >> S32 == mark and slot != tag:
            j = (j + np.uint64(1)) & mask
            slot = seen[j]
        # branch-free: whether a hash is new is a coin flip the CPU cannot predict
        seen[j] = tag
        new = slot >> S32 != mark
        n += np.int64(new)
        if bits:
            flip(h, odd, bits, np.uint64(new))
    return n


@njit(cache=True, nogil=True)
def bucket_sort(values, out, counts):
    """Sort uniformly spread 64-bit `values` into `out` in expected linear time.

    A counting pass places every value in one of ~n buckets by its top bits (`counts`, of at
    least 2n + 2 entries, is the scratch space), then an insertion sort finishes the nearly
    sorted array: each value moves past O(1) others on average. Hashes are uniform, so this
    beats a comparison sort (about 5x at a few hundred values)."""
    n = values.size
    bits = 1
    while (1 << bits) < n:
        bits += 1
    shift = np.uint64(64 - bits)
    buckets = 1 << bits
    counts[: buckets + 1] = 0
    for i in range(n):
        counts[np.int64(values[i] >> shift) + 1] += 1
    for b in range(buckets):
        counts[b + 1] += counts[b]
    for i in range(n):
        h = values[i]
        b = np.int64(h >> shift)
        out[counts[b]] = h
        counts[b] += 1
    for i in range(1, n):
        h = out[i]
        j = i
        while j > 0 and out[j - 1] > h:
            out[j] = out[j - 1]
            j -= 1
        out[j] = h


@njit(cache=True, nogil=True)
def sorted_distinct(feats, out, used, counts):
    """Append the sorted distinct values of `feats` to out[used:] (room for all of them);
    returns the new end."""
    part = out[used : used + feats.size]
    bucket_sort(feats, part, counts)
    m = 0
    for j in range(part.size):
        if j == 0 or part[j] != part[m - 1]:
            part[m] = part[j]
            m += 1
    return used + m
