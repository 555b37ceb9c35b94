"""Compiled (numba) kernels of the index: bucket tables, the store ring, and batch decisions.

Refs are 32-bit sequence numbers; a ref is live while (ref - base) mod 2**32 < count, so
entries of evicted documents are recognised without flags (see `doc_store`). The store's
window lives in a small int64 array, `window = [base, count, start, watermark, evicted]`,
updated in place. Shard tables are passed as tuples of arrays; key `k` lives in shard
`k % len(tables)`. A batch kernel returns early (with the index of the next document) when a
table needs to grow, which the Python side does before calling again.

The batch kernels take their arrays bundled in tuples:

* `docs`   = (skip, keys, nkeys, exact, simhash, sketch, nfeat, ts, feats, feat_offsets): the
  batch's fingerprints, one row per document (`keys` holds the SimHash block keys, then the
  LSH band keys; `feats` the sorted feature hashes of small documents, CSR);
* `tables` = (heads, nxt, keys, refs, sizes): per-shard tuples of the bucket-table arrays;
* `store`  = (exact, simhash, sketch, nfeat, ts, similarity, method): the store's columns;
* `limits` = (bucket_cap, max_docs, max_age): 0 means no limit for the last two.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from neardup_stream.fingerprint.compact_set import estimate
from neardup_stream.fingerprint.kernels import oph_sketch, popcount64

_U32 = np.uint64(0xFFFFFFFF)
BASE, COUNT, START, WATERMARK, EVICTED = 0, 1, 2, 3, 4
UNIQUE, EXACT, SIMHASH, MINHASH = 0, 1, 2, 3
MAX_LOAD = 4
SIZE_CAP = 65535  # stored set sizes saturate here (uint16)


@njit(inline="always", cache=True)
def _sizes_exclude(a, b, min_sim):
    """Exact size filter: Jaccard <= min(|A|, |B|) / max(|A|, |B|)."""
    a = min(a, SIZE_CAP)
    if a == SIZE_CAP or b == SIZE_CAP:
        return False
    return min(a, b) < min_sim * max(a, b)


@njit(inline="always", cache=True)
def _alive(ref, base, count):
    return ((np.uint64(ref) - np.uint64(base)) & _U32) < np.uint64(count)


@njit(cache=True, nogil=True)
def table_probe(heads, nxt, keys, refs, qkeys, out):
    """Write to `out` the refs stored under `qkeys`; returns how many exist (may exceed out)."""
    mask = heads.size - 1
    n = 0
    for q in qkeys:
        e = heads[q & mask]
        while e >= 0:
            if keys[e] == q:
                if n < out.size:
                    out[n] = refs[e]
                n += 1
            e = nxt[e]
    return n


@njit(cache=True, nogil=True)
def live_hits(heads, nxt, keys, refs, qkeys, base, count):
    """For each query key, how many live refs are stored under it."""
    mask = heads.size - 1
    out = np.zeros(qkeys.size, dtype=np.int64)
    for i in range(qkeys.size):
        q = qkeys[i]
        e = heads[q & mask]
        while e >= 0:
            if keys[e] == q and _alive(refs[e], base, count):
                out[i] += 1
            e = nxt[e]
    return out


@njit(inline="always", cache=True)
def _insert_one(heads, nxt, keys, refs, size, q, ref, cap, base, count):
    b = q & (heads.size - 1)
    e = heads[b]
    same = 0
    while e >= 0:
        if keys[e] == q and _alive(refs[e], base, count):
            same += 1
            if same >= cap:
                return size
        e = nxt[e]
    keys[size] = q
    refs[size] = ref
    nxt[size] = heads[b]
    heads[b] = size
    return size + 1


@njit(cache=True, nogil=True)
def table_insert(heads, nxt, keys, refs, size, qkeys, qrefs, cap, base, count):
    """Insert (qkeys[i], qrefs[i]) unless that key already holds `cap` live refs."""
    for i in range(qkeys.size):
        size = _insert_one(heads, nxt, keys, refs, size, qkeys[i], qrefs[i], cap, base, count)
    return size


@njit(cache=True, nogil=True)
def table_rehash(heads, nxt, keys, size):
    """Rebuild the bucket chains for the first `size` entries."""
    heads[:] = -1
    mask = heads.size - 1
    for e in range(size):
        b = keys[e] & mask
        nxt[e] = heads[b]
        heads[b] = e


@njit(cache=True, nogil=True)
def table_compact(heads, nxt, keys, refs, size, base, count):
    """Drop entries whose ref left the live window; returns the new size."""
    m = 0
    for e in range(size):
        if _alive(refs[e], base, count):
            keys[m] = keys[e]
            refs[m] = refs[e]
            m += 1
    table_rehash(heads, nxt, keys, m)
    return m


@njit(cache=True, nogil=True)
def estimate_jaccard(a, b):
    """Jaccard estimate from two 1-bit OPH sketches: P(bit equal) = (1 + J) / 2."""
    diff = 0
    for i in range(a.size):
        diff += popcount64(a[i] ^ b[i])
    j = 1.0 - 2.0 * diff / (a.size * 64)
    return j if j > 0.0 else 0.0


@njit(cache=True, nogil=True)
def evict(window, st_ts, cap, max_docs, max_age):
    """Drop the oldest documents beyond `max_docs` or older than watermark - `max_age`."""
    while window[COUNT] > 0 and (
        (max_docs > 0 and window[COUNT] >= max_docs)
        or (max_age > 0 and st_ts[window[START]] < window[WATERMARK] - max_age)
    ):
        window[START] = (window[START] + 1) % cap
        window[BASE] = (window[BASE] + 1) & 0xFFFFFFFF
        window[COUNT] -= 1
        window[EVICTED] += 1


@njit(cache=True, nogil=True)
def _prepare(i, docs, tables, store, window, limits):
    """Room check, watermark and eviction before document i; False when a table must grow."""
    heads_t, _, keys_t, _, sizes = tables
    need = docs[1].shape[1]
    for s in range(sizes.size):
        if sizes[s] + need > keys_t[s].size or sizes[s] > MAX_LOAD * heads_t[s].size:
            return False
    window[WATERMARK] = max(window[WATERMARK], docs[7][i])
    evict(window, store[4], store[1].size, limits[1], limits[2])
    return True


@njit(cache=True, nogil=True)
def _append(i, docs, store, window, sim, method):
    """Store document i at the end of the ring; returns its ref."""
    exact, simhash, sketch, nfeat, ts = docs[3], docs[4], docs[5], docs[6], docs[7]
    st_exact, st_simhash, st_sketch, st_nfeat, st_ts, st_sim, st_method = store
    cap = st_simhash.size
    p = (window[START] + window[COUNT]) % cap
    st_exact[p] = exact[i]
    st_simhash[p] = simhash[i]
    st_sketch[p] = sketch[i]
    st_nfeat[p] = min(nfeat[i], SIZE_CAP)
    if st_ts.size == cap:
        st_ts[p] = ts[i]
    st_sim[p] = sim
    st_method[p] = method
    ref = (window[BASE] + window[COUNT]) & 0xFFFFFFFF
    window[COUNT] += 1
    return ref


@njit(cache=True, nogil=True)
def _index(i, ref, docs, tables, window, cap):
    """Insert ref under document i's keys, each in the shard that owns it."""
    keys, nkeys = docs[1], docs[2]
    heads_t, nxt_t, keys_t, refs_t, sizes = tables
    shards = sizes.size
    for j in range(nkeys[i]):
        q = keys[i, j]
        s = q % shards
        sizes[s] = _insert_one(
            heads_t[s],
            nxt_t[s],
            keys_t[s],
            refs_t[s],
            sizes[s],
            q,
            np.uint32(ref),
            cap,
            window[BASE],
            window[COUNT],
        )


@njit(cache=True, nogil=True)
def append_batch(begin, docs, decided, tables, store, window, limits, out_ref):
    """Store and index documents whose decisions are known (replay, precise mode).

    `decided` = (similarity, method, indexed) per document.
    """
    sims, methods, indexed = decided
    for i in range(begin, docs[0].size):
        if docs[0][i]:
            continue
        if not _prepare(i, docs, tables, store, window, limits):
            return i
        ref = _append(i, docs, store, window, sims[i], methods[i])
        out_ref[i] = ref
        if indexed[i]:
            _index(i, ref, docs, tables, window, limits[0])
    return docs[0].size


@njit(cache=True, nogil=True)
def similarity(query_feats, query_nfeat, query_oph, stored, stored_nfeat, compact_max):
    """Estimated Jaccard of a query document and a stored one (sketch row and set size).

    A stored compact set (at most `compact_max` features) is compared with the query's sorted
    feature hashes (not kept, so empty, only beyond any size ratio that is verified); a stored
    1-bit sketch with the query's one-permutation sketch `query_oph`."""
    if stored_nfeat <= compact_max:
        if query_feats.size != query_nfeat:
            return 0.0
        return estimate(query_feats, stored, stored_nfeat)
    return estimate_jaccard(query_oph, stored)


@njit(cache=True, nogil=True)
def probe_verify(i, docs, tables, store, window, min_sim, buf, compact_max):
    """Candidates of document i with estimate >= min_sim: (refs, sims, hamming, exact)."""
    keys, nkeys, exact, simhash, sketch, nfeat, feats, feat_off = (
        docs[1],
        docs[2],
        docs[3],
        docs[4],
        docs[5],
        docs[6],
        docs[8],
        docs[9],
    )
    query_oph = np.empty(0, dtype=np.uint64)
    query_feats = feats[feat_off[i] : feat_off[i + 1]]
    heads_t, nxt_t, keys_t, refs_t, _ = tables
    st_exact, st_simhash, st_sketch, st_nfeat = store[0], store[1], store[2], store[3]
    shards = len(heads_t)
    n = 0
    for j in range(nkeys[i]):
        s = keys[i, j] % shards
        n += table_probe(heads_t[s], nxt_t[s], keys_t[s], refs_t[s], keys[i, j : j + 1], buf[n:])
        n = min(n, buf.size)
    cands = np.sort(buf[:n])
    cap = st_simhash.size
    out_ref = np.empty(n, dtype=np.int64)
    out_sim = np.empty(n, dtype=np.float64)
    out_ham = np.empty(n, dtype=np.int64)
    out_exact = np.zeros(n, dtype=np.bool_)
    m = 0
    last = -1
    for c in range(n):
        ref = np.int64(cands[c])
        if ref == last:
            continue
        last = ref
        d = (np.uint64(ref) - np.uint64(window[BASE])) & _U32
        if d >= np.uint64(window[COUNT]):
            continue
        p = (window[START] + np.int64(d)) % cap
        same = st_exact[p, 0] == exact[i, 0] and st_exact[p, 1] == exact[i, 1]
        if same:
            sim = 1.0
        elif nfeat[i] == 0 or st_nfeat[p] == 0 or _sizes_exclude(nfeat[i], st_nfeat[p], min_sim):
            continue
        else:
            if query_oph.size == 0 and st_nfeat[p] > compact_max:
                query_oph = sketch[i]
                if nfeat[i] <= compact_max:  # i's own row holds its compact set
                    query_oph = np.zeros(sketch.shape[1], dtype=np.uint64)
                    oph_sketch(query_feats, sketch.shape[1] * 64, query_oph)
            sim = similarity(
                query_feats, nfeat[i], query_oph, st_sketch[p], st_nfeat[p], compact_max
            )
        if sim < min_sim:
            continue
        out_ref[m] = ref
        out_sim[m] = sim
        out_ham[m] = np.int64(popcount64(simhash[i] ^ st_simhash[p]))
        out_exact[m] = same
        m += 1
    return out_ref[:m], out_sim[:m], out_ham[:m], out_exact[:m]


@njit(cache=True, nogil=True)
def decide_batch(begin, docs, tables, store, window, limits, rules, out):
    """Decide, store and index documents begin.. in order (each sees all earlier ones).

    `rules` = (threshold, simhash_k, index_duplicates, retention, compact_max);
    `out` = (ref, match, similarity, method) per document.
    """
    threshold, simhash_k, index_dups, retention, compact_max = rules
    out_ref, out_match, out_sim, out_method = out
    buf = np.empty(docs[1].shape[1] * limits[0] * 4 + 64, dtype=np.uint32)
    for i in range(begin, docs[0].size):
        if docs[0][i]:
            continue
        if not _prepare(i, docs, tables, store, window, limits):
            return i
        refs, sims, hams, same = probe_verify(
            i, docs, tables, store, window, threshold, buf, compact_max
        )
        match, sim, method = -1, 0.0, UNIQUE
        for c in range(refs.size):
            if same[c]:
                match, sim, method = refs[c], 1.0, EXACT
                break
            if sims[c] > sim:
                match, sim = refs[c], sims[c]
                method = SIMHASH if hams[c] <= simhash_k else MINHASH
        ref = _append(i, docs, store, window, sim, method)
        out_ref[i], out_match[i], out_sim[i], out_method[i] = ref, match, sim, method
        if method == UNIQUE or (index_dups and (method != EXACT or retention)):
            _index(i, ref, docs, tables, window, limits[0])
    return docs[0].size
