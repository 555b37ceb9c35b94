"""One domain's rows of a fingerprint batch voted on through a replica's merged table.

`vote_domain` is the core of `ReplicaVoter.vote_and_record` (§3.5a of
docs/design/scale-out.md): it finds the documents already known at their home shard, runs
the merged-table kernel (`merged_kernels.vote_batch`) over the rows, once for every held
shard, and writes the outcome back into each voting shard: its store, registry and positions
(its home documents not seen before), its `Votes` on the rows, the trimming of what its
window evicted, and, with `record`, the `ShardChange` that replays what it stored. A shard
without an engine of the domain only moves its watermark. The table is compacted once
enough entries were evicted.
"""

from __future__ import annotations

import numpy as np

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.engine.outcomes import StoredAs, fingerprint_records
from neardup_stream.records import FingerprintRecord
from neardup_stream.sharded import merged_kernels as mk
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.merged_tables import MergedTables, engines_of
from neardup_stream.sharded.quiet import Segment
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import Votes

MASK32 = 0xFFFFFFFF
_NONE = np.empty(0, dtype=np.int64)  # positions of a change that stored nothing
Voted = dict[int, tuple[Votes, list[ShardChange]]]  # per voting shard: votes and changes


def vote_domain(
    merged: MergedTables,
    voters: list[ShardVoter],
    template: Deduplicator,
    fb: FingerprintBatch,
    domain: str,
    segment: Segment,
    home: np.ndarray,
    voting: np.ndarray,
    record: bool,
    out: Voted,
) -> None:
    """Vote on `fb`'s rows of `segment` (all of `domain`): `voters` are the held shards in
    slot order, `home[j]` the slot of row j's home shard (-1: not held, or not voting),
    `voting` the slots that vote; each voting shard's votes and changes fill `out`.
    `template` gives the limits and rules every shard's engines share."""
    rows = segment.rows
    mark = (fb.stream, segment.seen, segment.reset)
    m, k = rows.size, len(merged.order)
    batch = fb.rows(rows, home >= 0)
    homed: dict[int, list[int]] = {}  # slot -> its home rows
    for j, h in enumerate(home.tolist()):
        if h >= 0:
            homed.setdefault(h, []).append(j)
    engines = engines_of(voters, domain, homed)
    at_home = {slot: held[0] for slot, held in enumerate(engines) if held and slot in homed}
    found: list[int | None] = [None] * m
    for slot, mine in homed.items():  # an id is known only at its home
        engine = at_home[slot]
        refs = engine.registry.find_all([batch.ids[j] for j in mine], engine.store)
        for j, ref in zip(mine, refs, strict=True):
            if ref is not None:
                found[j] = slot << 32 | ref
    batch.mark_known(found, lambda tagged: at_home[tagged >> 32].store.exact_of(tagged & MASK32))
    docs = batch.docs
    docs.prior[docs.prior >= 0] &= MASK32  # the home shard's own ref
    known = np.zeros(m, dtype=np.bool_)
    known[list(batch.known)] = True
    repeat = np.zeros(m, dtype=np.bool_)
    repeat[list(batch.repeat_of)] = True
    for engine in at_home.values():
        engine.store.reserve(m)
    stores = merged.store_list(domain, engines)
    wins = merged.windows(domain, engines, lambda slot: voters[slot].idle.get(domain))
    if int(wins["count"].max()) + m >= 1 << merged.bits:
        fullest = int(wins["count"].argmax())
        merged.check_room(merged.order[fullest], domain, int(wins["count"][fullest]) + m)
    votes = mk.SlotVotes(
        np.full((m, k), -1, dtype=np.int64),
        np.zeros((m, k), dtype=np.float64),
        np.zeros((m, k), dtype=np.int64),
    )
    order = np.array(merged.order, dtype=np.int64)
    run = mk.RunArgs(voting, order, merged.bits, template._limits, template._rules)
    table = merged.table(domain)
    width = docs.keys.shape[1]
    decisions = batch.decisions
    kernel_docs = docs._replace(skip=repeat)
    i = 0
    while i < m:
        table.reserve(max(width, (m - i) * width // table.rows) + 64)
        args = (kernel_docs, known, home, decisions, votes, table.arrays)
        i = mk.vote_batch(i, m, *args, stores, wins, merged.slot_of, run)
    matched = set(np.flatnonzero((votes.match >= 0).any(axis=0)).tolist())
    seen = (known | repeat).tolist()
    refs, updates = decisions.ref.tolist(), decisions.update.tolist()
    at = fb.positions[rows]
    window = {name: wins[name].tolist() for name in ("base", "count", "watermark", "evicted")}
    for slot, held in enumerate(engines):
        if not voting[slot]:
            continue
        shard_votes, changes = out[merged.order[slot]]
        if held is None:  # stores nothing of the domain: only its watermark moved
            voters[slot].idle[domain] = window["watermark"][slot]
            if record:
                changes.append(ShardChange(domain, window["watermark"][slot], _NONE, [], *mark))
            continue
        engine, positions = held
        st = engine.store
        stored = [j for j in homed.get(slot, ()) if not seen[j]]
        made: list[FingerprintRecord] = []
        stored_refs, stored_ids = [refs[j] for j in stored], [batch.ids[j] for j in stored]
        st.record_all(stored_refs, [(doc_id, None, None) for doc_id in stored_ids])
        if record:  # a shard stores its home documents as unique: the gather decides
            made = fingerprint_records(
                engine, batch, stored, [StoredAs(batch.ids[j], update=updates[j]) for j in stored]
            )
        if stored:  # refs of one batch are consecutive
            positions.add(stored_refs[0], at[stored])
            engine.registry.add(stored_refs, stored_ids)
        for j in homed.get(slot, ()):
            shard_votes.seen[rows[j]] = seen[j]
            shard_votes.update[rows[j]] = updates[j]
        if slot in matched:
            for j in np.flatnonzero(votes.match[:, slot] >= 0).tolist():
                ref, r = int(votes.match[j, slot]), int(rows[j])
                shard_votes.match_position[r] = positions.get(ref)
                shard_votes.similarity[r] = votes.similarity[j, slot]
                shard_votes.method[r] = votes.method[j, slot]
                shard_votes.match_ids[r] = st.doc_id(ref)
        if window["evicted"][slot]:
            st.trim_blob()
            if window["evicted"][slot] > max(4096, window["count"][slot]):
                engine.registry.compact(window["base"][slot], window["count"][slot])
                merged.dead[domain] += window["evicted"][slot]
                wins["evicted"][slot] = 0
            positions.trim(window["base"][slot])
        if record:
            stored_at = at[stored] if stored else _NONE
            changes.append(ShardChange(domain, window["watermark"][slot], stored_at, made, *mark))
    if merged.dead[domain] > max(4096, sum(window["count"])):
        merged.compact(domain, wins)
