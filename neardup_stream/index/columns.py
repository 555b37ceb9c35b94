"""The named arrays passed between Python and the compiled index kernels.

Every kernel argument that bundles arrays is one of these NamedTuples, so both sides read
fields by name (`docs.sketch`, `store.ts`) and numba compiles one specialisation per kernel
whatever the shard count (shard tables are rows of 2-D arrays, not tuples of arrays).

The store's live window is a one-record array of `WINDOW` (fields base, count, start,
watermark, evicted), updated in place by the kernels (`window[0].count`) and read by name in
Python (`window["count"][0]`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

WINDOW = np.dtype(
    [
        ("base", np.int64),  # ref of the oldest live document
        ("count", np.int64),  # live documents
        ("start", np.int64),  # ring row of the oldest live document
        ("watermark", np.int64),  # latest document time seen (seconds)
        ("evicted", np.int64),  # evictions since the tables were last compacted
    ]
)


def new_window() -> np.ndarray:
    """An empty store window (see the module docstring)."""
    return np.zeros(1, dtype=WINDOW)


def window_from(values: np.ndarray) -> np.ndarray:
    """A store window from a saved one: a `WINDOW` record, or (snapshot format 2) the five
    int64 values base, count, start, watermark, evicted in that order."""
    if values.dtype.names is not None:
        return values.astype(WINDOW).reshape(1)
    window = new_window()
    for name, value in zip(WINDOW.names or (), values.astype(np.int64).tolist(), strict=True):
        window[name][0] = value
    return window


# How a document was decided (stored per document as a uint8).
UNIQUE, EXACT, SIMHASH, MINHASH, SENTENCES = 0, 1, 2, 3, 4  # SENTENCES: `sentences`


class BatchColumns(NamedTuple):
    """Fingerprints of a batch, one row per document."""

    skip: np.ndarray  # bool[n]: the id is known (stored, or earlier in the batch): not decided
    probe_only: np.ndarray  # bool[n]: decided but not stored (another home shard's document)
    keys: np.ndarray  # uint32[n, width]: SimHash block keys, then LSH band keys
    nkeys: np.ndarray  # int64[n]: how many of the row's keys are used
    exact: np.ndarray  # uint64[n, 2]
    simhash: np.ndarray  # uint64[n]
    sketch: np.ndarray  # uint64[n, words]
    nfeat: np.ndarray  # int64[n]: shingle-set size
    ts: np.ndarray  # int64[n]: document time (seconds), already clamped
    feats: np.ndarray  # uint64[...]: sorted feature hashes of the small documents (CSR values)
    feat_offsets: np.ndarray  # int64[n + 1]: document i's are feats[off[i]:off[i + 1]]
    other: np.ndarray  # uint64[n, words]: the other form of sketch near odd_max, else zeros
    prior: np.ndarray  # int64[n]: stored ref of the id's earlier version (an update), or -1
    prior_row: np.ndarray  # int64[n]: row of the id's earlier version in this batch, or -1


class Decisions(NamedTuple):
    """Per document of a batch: the decision (written by `decide_batch`, read by `append_batch`)."""

    ref: np.ndarray  # int64[n]: the document's own ref once stored
    match: np.ndarray  # int64[n]: ref of the earlier document it duplicates, or -1
    similarity: np.ndarray  # float64[n]
    method: np.ndarray  # int64[n]: UNIQUE, EXACT, SIMHASH or MINHASH
    indexed: np.ndarray  # bool[n]: whether its keys went into the tables (`is_indexed`)
    update: np.ndarray  # bool[n]: a new version of a stored id (set before the kernels run)


class TableArrays(NamedTuple):
    """R chained multimaps (rows): key k lives in row k % R."""

    heads: np.ndarray  # int32[R, buckets]: first entry of each bucket chain, -1 when empty
    nxt: np.ndarray  # int32[R, capacity]: next entry in the chain
    keys: np.ndarray  # uint32[R, capacity]
    refs: np.ndarray  # uint32[R, capacity]
    sizes: np.ndarray  # int64[R]: entries used per row


class StoreColumns(NamedTuple):
    """The document store's ring of columns (see `doc_store`)."""

    exact: np.ndarray  # uint64[cap, 2]
    simhash: np.ndarray  # uint64[cap]
    sketch: np.ndarray  # uint64[cap, words]
    nfeat: np.ndarray  # uint16[cap], saturating at SIZE_CAP
    ts: np.ndarray  # uint32[cap], or uint32[1] when no retention by age needs it
    similarity: np.ndarray  # float32[cap]
    method: np.ndarray  # uint8[cap]
    update: np.ndarray  # bool[cap]: its decision was an update (a new version of its id)
    superseded: np.ndarray  # bool[cap]: a later version of its id is stored: never a match


class Bounds(NamedTuple):
    """Bounds on buckets and the window; 0 means no limit for the last two."""

    bucket_cap: int
    max_docs: int
    max_age: float


class Rules(NamedTuple):
    """What makes a duplicate and what is indexed."""

    threshold: float
    simhash_k: int
    index_duplicates: bool
    set_max: int  # stored sketches of documents with at most this many features are compact sets
    odd_max: int  # ... of those with more, up to this many, odd sketches; beyond, 1-bit sketches
    other_min: int  # queries of other_min..other_max features carry the other form near odd_max
    other_max: int  # (`fingerprinter.other_range`); others can never meet that form


class Candidates(NamedTuple):
    """Verified candidates of one document (estimate >= the minimum asked for)."""

    refs: np.ndarray  # int64[m]
    similarity: np.ndarray  # float64[m]: 1.0 for an exact copy, else the sketch estimate
    hamming: np.ndarray  # int64[m]: SimHash distance
    exact: np.ndarray  # bool[m]: same 128-bit exact hash


def no_prior(n: int) -> np.ndarray:
    """`BatchColumns.prior` / `prior_row` of n documents that are no updates."""
    return np.full(n, -1, dtype=np.int64)


def new_decisions(n: int) -> Decisions:
    """Empty decisions for n documents: unique, unmatched, indexed."""
    return Decisions(
        ref=np.zeros(n, dtype=np.int64),
        match=np.full(n, -1, dtype=np.int64),
        similarity=np.zeros(n, dtype=np.float64),
        method=np.zeros(n, dtype=np.int64),
        indexed=np.ones(n, dtype=np.bool_),
        update=np.zeros(n, dtype=np.bool_),
    )
