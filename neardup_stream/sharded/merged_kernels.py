"""Compiled kernels of a replica's merged candidate table (docs/design/scale-out.md, "One
merged candidate table per replica").

One `TableArrays` holds the band and block keys of every shard a replica owns (for one
domain). An entry's 32-bit ref is *tagged*: the home shard in the top `bits`-complement
(`ref >> bits`), the shard's own ref modulo 2**bits below. Liveness is the range check of
`index.kernels` against that shard's window, modulo 2**bits (a shard holds fewer than
2**bits documents, checked by the caller). Per local *slot* (the replica's k shards in
order) the kernels get the shard's `StoreColumns` in a typed list and its window as row
`s` of `wins` (a `columns.WINDOW` array the caller copies the stores' windows to and back), and
`slot_of[shard]` (-1: not held here). The bucket cap counts live entries per (key, shard),
so every shard's candidate set is exactly what its own table would hold.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.typed import List

from neardup_stream.fingerprint.kernels import popcount64
from neardup_stream.index import kernels as _k
from neardup_stream.index.columns import EXACT, MINHASH, SIMHASH, UNIQUE, Bounds, Rules
from neardup_stream.index.similarity import no_sketches, similarity, sketches_for
from neardup_stream.native import njit
from neardup_stream.native.kernel import jit_all

_U32 = np.uint64(0xFFFFFFFF)


class RunArgs(NamedTuple):
    """What one `vote_batch` call needs besides the batch, the table and the stores."""

    voting: np.ndarray  # bool[k]: the local slots that vote on this batch
    shards: np.ndarray  # int64[k]: the shard held in each slot
    bits: int  # refs keep their low `bits` bits; the shard is above them
    limits: Bounds
    rules: Rules


class SlotVotes(NamedTuple):
    """Each voting slot's vote per document: [n, k] arrays."""

    match: np.ndarray  # int64: the shard's ref of the matched document, -1 for none
    similarity: np.ndarray  # float64
    method: np.ndarray  # int64: UNIQUE, EXACT, SIMHASH or MINHASH


@njit(cache=True, nogil=True)
def new_store_list(first):
    """A typed list of store columns holding `first`. Built, appended to and set here, in
    cached kernels: numba.typed.List's own Python methods compile on first use in every
    process (about half a second of every replica start), these load from the cache."""
    stores = List()
    stores.append(first)
    return stores


@njit(cache=True, nogil=True)
def append_store(stores, columns):
    stores.append(columns)


@njit(cache=True, nogil=True)
def set_store(stores, slot, columns):
    stores[slot] = columns


@njit(inline="always", cache=True)
def _age(ref, base, smask):
    """Position of (untagged, modulo 2**bits) `ref` in the window of its shard starting at
    `base`; >= the window's count: dead."""
    return (np.uint64(ref) - np.uint64(base)) & smask


@njit(cache=True, nogil=True)
def merged_probe(t, qkeys, slot_of, wins, voting, bits, out):
    """Write `(slot << 32) | ref` of the live entries under `qkeys` of the shards `voting`
    to `out` (refs are the shards' full 32-bit refs); returns how many (may exceed out)."""
    rows = t.heads.shape[0]
    mask = t.heads.shape[1] - 1
    smask = np.uint64((1 << bits) - 1)
    n = 0
    for q in qkeys:
        r = q % rows
        heads, nxt, keys, refs = t.heads[r], t.nxt[r], t.keys[r], t.refs[r]
        e = heads[_k._bucket(q, mask)]
        while e >= 0:
            if keys[e] == q:
                tagged = np.uint64(refs[e])
                s = slot_of[np.int64(tagged >> np.uint64(bits))]
                if s >= 0 and voting[s]:
                    age = _age(tagged & smask, wins[s].base, smask)
                    if age < np.uint64(wins[s].count):
                        if n < out.size:
                            full = (np.uint64(wins[s].base) + age) & _U32
                            out[n] = (np.int64(s) << 32) | np.int64(full)
                        n += 1
            e = nxt[e]
    return n


@njit(cache=True, nogil=True)
def merged_insert(t, q, tagged, cap, window, bits):
    """Store `tagged` under key q; when its shard already holds `cap` live refs under q, the
    oldest of them gives way (as `kernels._insert_one` does within one shard's table)."""
    r = q % t.heads.shape[0]
    heads, nxt, keys, refs = t.heads[r], t.nxt[r], t.keys[r], t.refs[r]
    b = _k._bucket(q, heads.size - 1)
    smask = np.uint64((1 << bits) - 1)
    tag = np.uint64(tagged) >> np.uint64(bits)
    e = heads[b]
    same = 0
    oldest = -1
    oldest_age = _U32
    while e >= 0:
        if keys[e] == q and (np.uint64(refs[e]) >> np.uint64(bits)) == tag:
            age = _age(np.uint64(refs[e]) & smask, window[0].base, smask)
            if age < np.uint64(window[0].count):
                same += 1
                if age < oldest_age:
                    oldest, oldest_age = e, age
        e = nxt[e]
    if same >= cap:
        refs[oldest] = tagged
        return
    _k._link(t, r, b, q, tagged)


@njit(cache=True, nogil=True)
def merged_insert_all(t, qkeys, qrefs, shard, cap, window, bits):
    """Insert (qkeys[i], qrefs[i]) of one shard, in order (refs untagged, full 32-bit)."""
    smask = np.uint64((1 << bits) - 1)
    top = np.uint64(shard) << np.uint64(bits)
    for i in range(qkeys.size):
        tagged = np.uint32(top | (np.uint64(qrefs[i]) & smask))
        merged_insert(t, qkeys[i], tagged, cap, window, bits)


@njit(cache=True, nogil=True)
def merged_compact(t, slot_of, wins, bits):
    """Drop entries of shards not held (`slot_of` -1) and of refs out of their window."""
    smask = np.uint64((1 << bits) - 1)
    for r in range(t.heads.shape[0]):
        keys, refs = t.keys[r], t.refs[r]
        m = 0
        for e in range(t.sizes[r]):
            tagged = np.uint64(refs[e])
            s = slot_of[np.int64(tagged >> np.uint64(bits))]
            if s >= 0 and _age(tagged & smask, wins[s].base, smask) < np.uint64(wins[s].count):
                keys[m] = keys[e]
                refs[m] = refs[e]
                m += 1
        t.sizes[r] = m
    _k.tables_rehash(t)


@njit(cache=True, nogil=True)
def vote_batch(begin, end, docs, known, home, out, votes, t, stores, wins, slot_of, run):
    """Vote on documents begin..end for every voting local shard, storing home documents.

    Per document and per voting shard this does what `kernels.decide_batch` does in that
    shard's own engine: advance its window; at the home shard, supersede the id's earlier
    version; then one probe of the merged table gives every shard its candidates, verified
    against that shard's store and chosen by the same rule (ascending refs, the first exact
    match wins, else the strictly highest estimate); the home shard then makes room, stores
    and indexes the document. `home[i]` is the document's slot (-1: not held or not voting),
    `known[i]` that its home already stores it, `docs.skip[i]` that it repeats an earlier row
    of the batch (no shard votes on it). `votes` (match, similarity, method: [n, k] each)
    receive each shard's vote; `out` the home shard's decision (as `decide_batch` writes it).
    Returns the next document when the table needs to grow first (`end` when done).
    """
    voting, bits, limits, rules = run.voting, run.bits, run.limits, run.rules
    k = voting.size
    active = np.empty(k, dtype=np.bool_)
    best = np.empty(k, dtype=np.int64)
    best_sim = np.empty(k, dtype=np.float64)
    best_method = np.empty(k, dtype=np.int64)
    done = np.empty(k, dtype=np.bool_)
    smask = np.uint64((1 << bits) - 1)
    # Candidates come sorted by slot: a slot's columns are taken from the typed list only
    # when the slot changes (a typed-list read references all of a store's arrays; none is
    # reallocated during the call, the caller reserved room).
    current = np.int64(-1)
    store, w = stores[0], wins[0:1]
    for i in range(begin, end):
        if docs.skip[i]:
            continue
        h = home[i]
        if h >= 0 and not known[i] and not _k._has_room(i, docs, t):
            return i
        for s in range(k):
            active[s] = voting[s] and not (s == h and known[i])
            if active[s]:  # (`advance` without room only evicts by age)
                if limits.max_age > 0:
                    _k.advance(wins[s : s + 1], stores[s], docs.ts[i], limits, False)
                elif docs.ts[i] > wins[s].watermark:
                    wins[s].watermark = docs.ts[i]
        stores_here = h >= 0 and not known[i]
        update = False
        if stores_here:
            update = _k.supersede(i, docs, out, stores[h], wins[h : h + 1])
        width = docs.nkeys[i]
        buf = np.empty(width * 64 + 64, dtype=np.int64)
        n = merged_probe(t, docs.keys[i, :width], slot_of, wins, active, bits, buf)
        if n > buf.size:
            buf = np.empty(n, dtype=np.int64)
            merged_probe(t, docs.keys[i, :width], slot_of, wins, active, bits, buf)
        cands = np.sort(buf[:n])
        best[:] = -1
        best_sim[:] = 0.0
        best_method[:] = UNIQUE
        done[:] = False
        query_feats = docs.feats[docs.feat_offsets[i] : docs.feat_offsets[i + 1]]
        q = no_sketches()
        last = np.int64(-1)
        for c in range(n):
            v = cands[c]
            if v == last:
                continue
            last = v
            s = v >> 32
            ref = v & 0xFFFFFFFF
            if done[s]:
                continue
            if s != current:
                store, w, current = stores[s], wins[s : s + 1], s
            p = _k._slot(ref, store, w)
            if store.superseded[p]:
                continue
            exact = store.exact[p, 0] == docs.exact[i, 0] and store.exact[p, 1] == docs.exact[i, 1]
            if exact:
                best[s], best_sim[s], best_method[s], done[s] = ref, 1.0, EXACT, True
                continue
            if (
                docs.nfeat[i] == 0
                or store.nfeat[p] == 0
                or _k._sizes_exclude(docs.nfeat[i], store.nfeat[p], rules.threshold)
            ):
                continue
            nfeat = docs.nfeat[i]
            row, other = docs.sketch[i], docs.other[i]
            q = sketches_for(q, nfeat, row, other, query_feats, store.nfeat[p], rules)
            sim = similarity(query_feats, nfeat, q, store.sketch[p], store.nfeat[p], rules)
            if sim >= rules.threshold and sim > best_sim[s]:
                ham = popcount64(docs.simhash[i] ^ store.simhash[p])
                best[s], best_sim[s] = ref, sim
                best_method[s] = SIMHASH if ham <= rules.simhash_k else MINHASH
        for s in range(k):
            if active[s]:
                votes.match[i, s] = best[s]
                votes.similarity[i, s] = best_sim[s]
                votes.method[i, s] = best_method[s]
        if not stores_here:
            continue
        st, home_win = stores[h], wins[h : h + 1]
        _k.advance(home_win, st, docs.ts[i], limits, True)  # after the lookup: it saw max_docs
        out.update[i] = update
        ref = _k._append(i, docs, st, home_win, best_sim[h], best_method[h], update)
        late = _k.expired(home_win, docs.ts[i], limits)
        indexed = _k.is_indexed(best_method[h], late, rules.index_duplicates)
        out.ref[i], out.match[i], out.similarity[i] = ref, best[h], best_sim[h]
        out.method[i], out.indexed[i] = best_method[h], indexed
        if indexed:
            tag = np.uint64(run.shards[h]) << np.uint64(bits)
            for j in range(docs.nkeys[i]):
                tagged = np.uint32(tag | (np.uint64(ref) & smask))
                merged_insert(t, docs.keys[i, j], tagged, limits.bucket_cap, home_win, bits)
    return end


# These kernels take numba's typed lists, so they always run on the JIT: make the dispatchers
# now, at import (as `numba.njit` did), not in the first batch a replica votes on, where
# importing numba and its typing would hold the GIL for a second mid-stream.
jit_all()
