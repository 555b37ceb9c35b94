"""The Jaccard estimate of a query document against a stored one, whatever the stored form.

A stored document's verification sketch takes one of three forms by its set size
(`Rules`): up to `set_max` features its compact set (`compact_set`); up to `odd_max` an
odd sketch (`odd_sketch`); beyond, the 1-bit one-permutation sketch. The query
is compared in the stored document's form, made from what the batch holds of it
(`QuerySketches`, once per query document and form):

* against a compact set, its sorted feature hashes (all, or its smallest);
* against an odd sketch, its own row when it is one, else its `other` row (a document near
  `odd_max` has both forms), else one made from its hashes (a compact set's document);
* against a 1-bit sketch, likewise.

A query that has no sketch of the stored form (its size is beyond the size ratio verified
from the limit, J <= min/max of the set sizes) scores 0; the size filter keeps the kernels
from asking, but the per-pair tools (`compare`, `longest_sentences`) can.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.fingerprint.bitstream import popcount64
from neardup_stream.fingerprint.minhash_kernels import oph_sketch
from neardup_stream.fingerprint.odd_sketch import odd_estimate, odd_sketch
from neardup_stream.fingerprint.set_estimate import estimate
from neardup_stream.native import njit


class QuerySketches(NamedTuple):
    """A query document's sketches in the stored forms met so far: empty until needed, and
    empty when the query has no sketch of that form (its size cannot meet such a document
    at the lowest similarity verified: `Rules.other_min`/`other_max`); `similarity` is then
    0."""

    one_bit: np.ndarray  # uint64[words]: its 1-bit one-permutation sketch
    odd: np.ndarray  # uint64[words]: its odd sketch


@njit(cache=True, nogil=True)
def no_sketches():
    return QuerySketches(np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.uint64))


@njit(cache=True, nogil=True)
def estimate_jaccard(a, b):
    """Jaccard estimate from two 1-bit OPH sketches: P(bit equal) = (1 + J) / 2."""
    diff = 0
    for i in range(a.size):
        diff += popcount64(a[i] ^ b[i])
    j = 1.0 - 2.0 * diff / (a.size * 64)
    return j if j > 0.0 else 0.0


@njit(cache=True, nogil=True)
def one_bit_query(nfeat, row, other, query_feats, rules):
    """A query's 1-bit sketch: its `row` (beyond `odd_max`), its `other` row (an odd-sketched
    document near `odd_max`), or, for a compact set's document, made from its hashes; empty
    for an odd-sketched document too small to carry one."""
    if nfeat > rules.odd_max:
        return row
    if nfeat > rules.set_max:
        return other if nfeat >= rules.other_min else np.empty(0, dtype=np.uint64)
    oph = np.zeros(row.size, dtype=np.uint64)
    oph_sketch(query_feats, row.size * 64, oph)
    return oph


@njit(cache=True, nogil=True)
def odd_query(nfeat, row, other, query_feats, rules):
    """A query's odd sketch: its `row`, its `other` row (a 1-bit-sketched document near
    `odd_max`), or, for a compact set's document, made from its hashes; empty for a 1-bit
    sketched document too large to carry one."""
    if nfeat > rules.odd_max:
        return other if nfeat <= rules.other_max else np.empty(0, dtype=np.uint64)
    if nfeat > rules.set_max:
        return row
    odd = np.zeros(row.size, dtype=np.uint64)
    odd_sketch(query_feats, odd)
    return odd


@njit(cache=True, nogil=True)
def sketches_for(q, nfeat, row, other, query_feats, stored_nfeat, rules):
    """`q` (`QuerySketches`) with the form a stored document of `stored_nfeat` features is
    compared in made, if it is a sketch not made yet."""
    if stored_nfeat > rules.odd_max:
        if q.one_bit.size == 0:
            return QuerySketches(one_bit_query(nfeat, row, other, query_feats, rules), q.odd)
    elif stored_nfeat > rules.set_max and q.odd.size == 0:
        return QuerySketches(q.one_bit, odd_query(nfeat, row, other, query_feats, rules))
    return q


@njit(cache=True, nogil=True)
def similarity(query_feats, query_nfeat, q, stored, stored_nfeat, rules):
    """Estimated Jaccard of a query document (its sorted feature hashes, all or its smallest,
    and its `QuerySketches` from `sketches_for`) and a stored one (sketch row and set size)."""
    if stored_nfeat <= rules.set_max:
        if query_feats.size == 0:
            return 0.0
        return estimate(query_feats, query_nfeat, stored, stored_nfeat)
    if stored_nfeat <= rules.odd_max:
        if q.odd.size == 0:
            return 0.0
        return odd_estimate(q.odd, stored, query_nfeat, stored_nfeat)
    if q.one_bit.size == 0:
        return 0.0
    return estimate_jaccard(q.one_bit, stored)


@njit(cache=True, nogil=True)
def pair_similarity(nfeat, row, other, query_feats, stored, stored_nfeat, rules):
    """`similarity` of one query (its set size, sketch row, other row and kept hashes) and one
    stored document, as verification computes it."""
    q = sketches_for(no_sketches(), nfeat, row, other, query_feats, stored_nfeat, rules)
    return similarity(query_feats, nfeat, q, stored, stored_nfeat, rules)
