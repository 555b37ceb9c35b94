"""Compiled (numba) kernels of the index: bucket tables, the store ring, and batch decisions.

Refs are 32-bit sequence numbers; a ref is live while (ref - base) mod 2**32 < count, so
entries of evicted documents are recognised without flags (see `doc_store`). Arguments are
the NamedTuples of `columns`: `TableArrays` (R rows of chained multimaps, key k in row
k % R), `BatchColumns`, `StoreColumns`, `Decisions`, `Bounds`, `Rules`, and the store's
`window` (a one-record array of `columns.WINDOW`, read and updated in place as
`window[0].count` and so on). A batch kernel returns early (with the index of the next
document) when a table row needs to grow, which the Python side does before calling again.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.fingerprint.kernels import popcount64
from neardup_stream.index.columns import (
    EXACT,
    MINHASH,
    SIMHASH,
    UNIQUE,
    Candidates,
)
from neardup_stream.index.similarity import no_sketches, similarity, sketches_for
from neardup_stream.native import njit

_U32 = np.uint64(0xFFFFFFFF)
_FIB = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio
MAX_LOAD = 4
SIZE_CAP = 65535  # stored set sizes saturate here (uint16)


@njit(inline="always", cache=True)
def _bucket(q, mask):
    """The bucket of key q in its row. The row is q mod rows, which fixes q's low bits within
    a row, so the bucket mixes all of q's bits (Fibonacci hashing) instead of taking them."""
    return np.int64(((np.uint64(q) * _FIB) >> np.uint64(32)) & np.uint64(mask))


@njit(cache=True)
def is_indexed(method, expired, index_duplicates):
    """Whether a document decided with `method` goes into the tables (the only such rule).

    Unique documents do. Duplicates (exact copies included) do when `index_duplicates`, so
    drifting chains are caught and a copy stays findable once its original leaves (evicted,
    or superseded by an update of its id). A document that arrives already `expired` (older
    than the age window) never does: it cannot be anyone's match.
    """
    if expired:
        return False
    return method == UNIQUE or index_duplicates


@njit(cache=True)
def expired(window, ts, limits):
    """Whether time `ts` is already outside the age window ending at the watermark."""
    return limits.max_age > 0 and ts < window[0].watermark - limits.max_age


@njit(inline="always", cache=True)
def _sizes_exclude(query, stored, min_sim):
    """Exact size filter: Jaccard <= min(|A|, |B|) / max(|A|, |B|). The query's size is
    exact; a stored size of SIZE_CAP is at least that (saturated), so it excludes nothing."""
    if stored == SIZE_CAP:
        return False
    return sizes_exclude(query, stored, min_sim)


@njit(inline="always", cache=True)
def sizes_exclude(a, b, min_sim):
    """Whether sets of `a` and `b` features cannot reach Jaccard `min_sim` (min / max below it)."""
    return min(a, b) < min_sim * max(a, b)


@njit(inline="always", cache=True)
def _alive(ref, base, count):
    return ((np.uint64(ref) - np.uint64(base)) & _U32) < np.uint64(count)


@njit(cache=True, nogil=True)
def tables_probe(t, qkeys, base, count, out):
    """Write to `out` the live refs stored under `qkeys`; returns how many (may exceed out).

    Entries of evicted documents are skipped, so they never take room from live ones.
    """
    rows = t.heads.shape[0]
    mask = t.heads.shape[1] - 1
    n = 0
    for q in qkeys:
        r = q % rows
        heads, nxt, keys, refs = t.heads[r], t.nxt[r], t.keys[r], t.refs[r]
        e = heads[_bucket(q, mask)]
        while e >= 0:
            if keys[e] == q and _alive(refs[e], base, count):
                if n < out.size:
                    out[n] = refs[e]
                n += 1
            e = nxt[e]
    return n


@njit(cache=True, nogil=True)
def live_hits(t, qkeys, base, count):
    """For each query key, how many live refs are stored under it."""
    out = np.zeros(qkeys.size, dtype=np.int64)
    empty = np.empty(0, dtype=np.uint32)
    for i in range(qkeys.size):
        out[i] = tables_probe(t, qkeys[i : i + 1], base, count, empty)
    return out


@njit(inline="always", cache=True)
def _link(t, r, b, q, ref):
    """Append (q, ref) to row r's entries, at the head of bucket b's chain."""
    size = t.sizes[r]
    t.keys[r, size] = q
    t.refs[r, size] = ref
    t.nxt[r, size] = t.heads[r, b]
    t.heads[r, b] = size
    t.sizes[r] = size + 1


@njit(inline="always", cache=True)
def _insert_one(t, q, ref, cap, base, count):
    """Store ref under q; a key already holding `cap` live refs gives up its oldest instead.

    Keeping the newest refs matters under retention: the oldest are evicted first, and a key
    that kept them would soon hold only dead entries while live documents share it.
    """
    r = q % t.heads.shape[0]
    heads, nxt, keys, refs = t.heads[r], t.nxt[r], t.keys[r], t.refs[r]
    b = _bucket(q, heads.size - 1)
    e = heads[b]
    same = 0
    oldest = -1
    oldest_age = _U32
    while e >= 0:
        if keys[e] == q and _alive(refs[e], base, count):
            same += 1
            age = (np.uint64(refs[e]) - np.uint64(base)) & _U32  # position in the window
            if age < oldest_age:
                oldest, oldest_age = e, age
        e = nxt[e]
    if same >= cap:
        refs[oldest] = ref
        return
    _link(t, r, b, q, ref)


@njit(cache=True, nogil=True)
def tables_insert(t, qkeys, qrefs, cap, base, count):
    """Insert (qkeys[i], qrefs[i]); a key at its cap of live refs replaces its oldest."""
    for i in range(qkeys.size):
        _insert_one(t, qkeys[i], qrefs[i], cap, base, count)


@njit(cache=True, nogil=True)
def tables_rehash(t):
    """Rebuild every row's bucket chains for its first `sizes[r]` entries."""
    t.heads[:] = -1
    mask = t.heads.shape[1] - 1
    for r in range(t.heads.shape[0]):
        heads, nxt, keys = t.heads[r], t.nxt[r], t.keys[r]
        for e in range(t.sizes[r]):
            b = _bucket(keys[e], mask)
            nxt[e] = heads[b]
            heads[b] = e


@njit(cache=True, nogil=True)
def tables_compact(t, base, count):
    """Drop entries whose ref left the live window, in every row."""
    for r in range(t.heads.shape[0]):
        keys, refs = t.keys[r], t.refs[r]
        m = 0
        for e in range(t.sizes[r]):
            if _alive(refs[e], base, count):
                keys[m] = keys[e]
                refs[m] = refs[e]
                m += 1
        t.sizes[r] = m
    tables_rehash(t)


@njit(cache=True, nogil=True)
def advance(window, store, ts, limits, room):
    """Move the watermark to `ts` (never back), then evict what retention excludes.

    Evicts the documents older than watermark - `max_age` (`store.ts` is kept whenever
    `max_age` is set) and, when `room` is asked for one more document, the oldest beyond
    `max_docs` - 1. Room is made only right before a document is stored, after its lookup,
    so a document is compared with the `max_docs` most recent stored documents.
    """
    window[0].watermark = max(window[0].watermark, ts)
    cap = store.simhash.size
    while window[0].count > 0 and (
        (room and limits.max_docs > 0 and window[0].count >= limits.max_docs)
        or (limits.max_age > 0 and store.ts[window[0].start] < window[0].watermark - limits.max_age)
    ):
        window[0].start = (window[0].start + 1) % cap
        window[0].base = (window[0].base + 1) & 0xFFFFFFFF
        window[0].count -= 1
        window[0].evicted += 1


@njit(inline="always", cache=True)
def _slot(ref, store, window):
    """Physical row of live `ref` in the store's ring."""
    d = (np.uint64(ref) - np.uint64(window[0].base)) & _U32
    return (window[0].start + np.int64(d)) % store.simhash.size


@njit(cache=True, nogil=True)
def supersede(i, docs, out, store, window):
    """Mark the stored earlier version of document i's id superseded, if it is still in the
    window: from now on it is nobody's match, the update's own lookup included. Returns
    whether it was (whether document i is an update, decided at its own place in the order,
    so however the stream is cut into batches)."""
    prior = docs.prior[i]
    if docs.prior_row[i] >= 0:
        prior = out.ref[docs.prior_row[i]]  # stored earlier in this batch (-1 if not here)
    if prior < 0 or not _alive(prior, window[0].base, window[0].count):
        return False
    store.superseded[_slot(prior, store, window)] = True
    return True


@njit(cache=True, nogil=True)
def _has_room(i, docs, t):
    """Whether every table row that document i's keys go to has room for all of them."""
    limit = min(t.keys.shape[1], MAX_LOAD * t.heads.shape[1])
    for j in range(docs.nkeys[i]):
        if t.sizes[docs.keys[i, j] % t.heads.shape[0]] + docs.nkeys[i] > limit:
            return False
    return True


@njit(cache=True, nogil=True)
def _append(i, docs, store, window, sim, method, update):
    """Store document i at the end of the ring; returns its ref."""
    cap = store.simhash.size
    p = (window[0].start + window[0].count) % cap
    store.exact[p] = docs.exact[i]
    store.simhash[p] = docs.simhash[i]
    store.sketch[p] = docs.sketch[i]
    store.nfeat[p] = min(docs.nfeat[i], SIZE_CAP)
    if store.ts.size == cap:
        store.ts[p] = docs.ts[i]
    store.similarity[p] = sim
    store.method[p] = method
    store.update[p] = update
    store.superseded[p] = False
    ref = (window[0].base + window[0].count) & 0xFFFFFFFF
    window[0].count += 1
    return ref


@njit(cache=True, nogil=True)
def _index(i, ref, docs, t, window, cap):
    """Insert ref under document i's keys, each in the row that owns it."""
    for j in range(docs.nkeys[i]):
        _insert_one(t, docs.keys[i, j], np.uint32(ref), cap, window[0].base, window[0].count)


@njit(cache=True, nogil=True)
def append_batch(begin, end, docs, out, t, store, window, limits):
    """Store and index documents begin..end whose decisions are known (replay, precise mode).

    Reads `out.similarity`, `out.method`, `out.indexed` and `out.update`; writes `out.ref`.
    """
    for i in range(begin, end):
        if docs.skip[i]:
            continue
        if not _has_room(i, docs, t):
            return i
        advance(window, store, docs.ts[i], limits, True)
        supersede(i, docs, out, store, window)  # (the record says whether it was an update)
        ref = _append(i, docs, store, window, out.similarity[i], out.method[i], out.update[i])
        out.ref[i] = ref
        if out.indexed[i]:
            _index(i, ref, docs, t, window, limits.bucket_cap)
    return end


@njit(cache=True, nogil=True)
def probe_verify(i, docs, t, store, window, min_sim, rules):
    """Live candidates of document i whose estimate reaches `min_sim`, as `Candidates`."""
    query_feats = docs.feats[docs.feat_offsets[i] : docs.feat_offsets[i + 1]]
    q = no_sketches()
    width = docs.nkeys[i]
    buf = np.empty(width * 64 + 64, dtype=np.uint32)
    n = tables_probe(t, docs.keys[i, :width], window[0].base, window[0].count, buf)
    if n > buf.size:
        buf = np.empty(n, dtype=np.uint32)
        tables_probe(t, docs.keys[i, :width], window[0].base, window[0].count, buf)
    cands = np.sort(buf[:n])
    refs = np.empty(n, dtype=np.int64)
    sims = np.empty(n, dtype=np.float64)
    hams = np.empty(n, dtype=np.int64)
    same = np.zeros(n, dtype=np.bool_)
    m = 0
    last = -1
    for c in range(n):
        ref = np.int64(cands[c])
        if ref == last:
            continue
        last = ref
        p = _slot(ref, store, window)
        if store.superseded[p]:  # an earlier version of an updated id
            continue
        exact = store.exact[p, 0] == docs.exact[i, 0] and store.exact[p, 1] == docs.exact[i, 1]
        if exact:
            sim = 1.0
        elif (
            docs.nfeat[i] == 0
            or store.nfeat[p] == 0
            or _sizes_exclude(docs.nfeat[i], store.nfeat[p], min_sim)
        ):
            continue
        else:
            nfeat = docs.nfeat[i]
            row, other = docs.sketch[i], docs.other[i]
            q = sketches_for(q, nfeat, row, other, query_feats, store.nfeat[p], rules)
            sim = similarity(query_feats, nfeat, q, store.sketch[p], store.nfeat[p], rules)
        if sim < min_sim:
            continue
        refs[m] = ref
        sims[m] = sim
        hams[m] = np.int64(popcount64(docs.simhash[i] ^ store.simhash[p]))
        same[m] = exact
        m += 1
    return Candidates(refs[:m], sims[:m], hams[:m], same[:m])


@njit(cache=True, nogil=True)
def decide_batch(begin, end, docs, out, t, store, window, limits, rules):
    """Decide, store and index documents begin..end in order (each sees all earlier ones);
    `probe_only` documents are decided against the store but not stored. An update (a new
    version of a stored id) supersedes its earlier version before its own lookup."""
    for i in range(begin, end):
        if docs.skip[i]:
            continue
        if not _has_room(i, docs, t):
            return i
        advance(window, store, docs.ts[i], limits, False)  # count makes room only to store
        update = supersede(i, docs, out, store, window)
        cands = probe_verify(i, docs, t, store, window, rules.threshold, rules)
        match, sim, method = -1, 0.0, UNIQUE
        for c in range(cands.refs.size):
            if cands.exact[c]:
                match, sim, method = cands.refs[c], 1.0, EXACT
                break
            if cands.similarity[c] > sim:
                match, sim = cands.refs[c], cands.similarity[c]
                method = SIMHASH if cands.hamming[c] <= rules.simhash_k else MINHASH
        if docs.probe_only[i]:  # another home shard stores it: only its best match here
            out.ref[i], out.match[i], out.similarity[i] = -1, match, sim
            out.method[i], out.indexed[i] = method, False
            continue
        advance(window, store, docs.ts[i], limits, True)  # after the lookup: it saw max_docs
        out.update[i] = update
        ref = _append(i, docs, store, window, sim, method, update)
        late = expired(window, docs.ts[i], limits)
        indexed = is_indexed(method, late, rules.index_duplicates)
        out.ref[i], out.match[i], out.similarity[i] = ref, match, sim
        out.method[i], out.indexed[i] = method, indexed
        if indexed:
            _index(i, ref, docs, t, window, limits.bucket_cap)
    return end
