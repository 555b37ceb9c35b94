"""One shard's vote: a batch decided against one engine, for document-partitioned shards.

With the index partitioned by document (`sharded`), every shard compares every document with
the documents it stores, and stores only its home documents (rows not `probe_only`). The
shard does not decide: it reports each row's best match here, and the gather step makes the
decision from every shard's vote. So stored rows are recorded without a decision, and their
`FingerprintRecord`s (with `records`) say `unique`, as a replay will apply them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.engine import driver
from neardup_stream.engine.outcomes import StoredAs, fingerprint_records
from neardup_stream.records import FingerprintRecord

if TYPE_CHECKING:
    from neardup_stream.deduplicator import Deduplicator


class Vote(NamedTuple):
    """What `vote` found: per row the matched id, and the stored rows' records."""

    match_ids: list[str | None]
    records: list[FingerprintRecord]


def vote(engine: Deduplicator, batch: Batch, records: bool = False) -> Vote:
    """Decide `batch` against `engine`; store only rows that are not `probe_only`.

    `batch.decisions` then holds each row's best match here (a ref of this engine, -1 for
    none), and `Vote.match_ids` its id. With `records`, each stored row gets the
    `FingerprintRecord` that reproduces it (`apply_records`), in stored order.
    """
    st = engine.store
    home_rows = np.flatnonzero(~batch.docs.probe_only)
    found: list[int | None] = [None] * len(batch)
    if home_rows.size:  # only home rows can be stored here, so only they can be known
        refs = engine.registry.find_all([batch.ids[i] for i in home_rows], st)
        for i, ref in zip(home_rows.tolist(), refs, strict=True):
            found[i] = ref
    batch.mark_known(found, st.exact_of)
    st.reserve(len(batch))
    # replays stay the shard's own (no renew): the gather decides what a replay gets
    driver.run(engine, batch, decide=True, renew=False)
    out = batch.decisions
    made: list[FingerprintRecord] = []
    stored = batch.stored()  # first: later rows of the batch may match these
    st.record_all([int(out.ref[i]) for i in stored], [(batch.ids[i], None, None) for i in stored])
    if records:
        updates = out.update.tolist()
        made = fingerprint_records(
            engine, batch, stored, [StoredAs(batch.ids[i], update=updates[i]) for i in stored]
        )
    matches: list[str | None] = [None] * len(batch)
    for i in np.flatnonzero((out.match >= 0) & ~batch.docs.skip).tolist():
        matches[i] = st.doc_id(int(out.match[i]))
    driver.remember(engine, batch)
    return Vote(matches, made)
