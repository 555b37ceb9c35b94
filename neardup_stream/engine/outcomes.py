"""What a decided batch comes out as: one `Outcome` per document, in input order.

Owns the translation from the kernels' columns to `Decision`s (a stored row's method code to
its `METHODS` name, a match's ref to its id and representative), the rule for rows that were
not decided here (a repeat within the batch gets its first occurrence's decision, a replay
its stored version's), and the `FingerprintRecord` that reproduces a newly stored document
(`apply_records`). `finish` also records the ids of each stored row in the store, for the
whole batch at once (later rows of the batch that match an earlier one read its ids from the
batch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.engine import driver
from neardup_stream.index.columns import UNIQUE
from neardup_stream.index.doc_store import Names, StoredDecision
from neardup_stream.models import METHODS, Decision
from neardup_stream.records import FingerprintRecord

if TYPE_CHECKING:
    from neardup_stream.deduplicator import Deduplicator


@dataclass(frozen=True)
class Outcome:
    """A decision and, for a newly stored document, the record that reproduces its state."""

    decision: Decision
    record: FingerprintRecord | None


def stored_decision(stored: StoredDecision) -> Decision:
    """The decision a stored document was given, as a `Decision`."""
    if stored.method == UNIQUE:
        return Decision(id=stored.doc_id, decision="unique", update=stored.update)
    return Decision(
        id=stored.doc_id,
        decision="duplicate",
        duplicate_of=stored.duplicate_of,
        representative=stored.representative,
        similarity=round(stored.similarity, 6),
        method=METHODS[stored.method - 1],
        update=stored.update,
    )


def finish(
    engine: Deduplicator,
    batch: Batch,
    records: bool,
    feats: dict[int, np.ndarray],
    sigs: dict[int, int],
) -> list[Outcome]:
    """The outcomes of a decided batch; stores each row's decision and remembers its ids.

    `feats` and `sigs` hold, by row, the shingle sets (precise mode) and sentence signatures
    (longest sentences) the records carry.
    """
    st, out = engine.store, batch.decisions
    refs, matches, methods = out.ref.tolist(), out.match.tolist(), out.method.tolist()
    updates = out.update.tolist()
    similarities = out.similarity.astype(np.float32).tolist()  # as the store keeps them
    named: dict[int, tuple[str, str]] = {}  # ref stored by this batch -> (id, representative)
    stored_refs: list[int] = []
    stored_names: list[Names] = []
    outcomes: list[Outcome] = []
    for i, doc_id in enumerate(batch.ids):
        if i in batch.repeat_of:
            outcomes.append(Outcome(outcomes[batch.repeat_of[i]].decision, None))
            continue
        if i in batch.known:
            outcomes.append(Outcome(stored_decision(st.decision(batch.known[i])), None))
            continue
        ref, match, update = refs[i], matches[i], updates[i]
        dup = rep = None
        if match < 0:
            decision = Decision(id=doc_id, decision="unique", update=update)
        else:
            dup, rep = named.get(match) or st.names(match)
            decision = Decision(
                id=doc_id,
                decision="duplicate",
                duplicate_of=dup,
                representative=rep,
                similarity=round(similarities[i], 6),
                method=METHODS[methods[i] - 1],
                update=update,
            )
        named[ref] = (doc_id, rep or doc_id)  # later documents of the batch may match it
        stored_refs.append(ref)
        stored_names.append((doc_id, dup, rep))
        record = (
            fingerprint_record(engine, batch, i, decision, feats.get(i), sigs.get(i))
            if records
            else None
        )
        outcomes.append(Outcome(decision, record))
    st.record_all(stored_refs, stored_names)
    driver.remember(engine, batch)
    return outcomes


def fingerprint_record(
    engine: Deduplicator,
    batch: Batch,
    i: int,
    decision: Decision,
    feats: np.ndarray | None,
    sentences: int | None = None,
) -> FingerprintRecord:
    """The changelog record that reproduces row `i` of `batch`, stored with `decision`."""
    docs, out = batch.docs, batch.decisions
    return FingerprintRecord(
        config_id=engine.config.fingerprint_id,
        doc_id=decision.id,
        duplicate_of=decision.duplicate_of,
        representative=decision.representative,
        ts=int(docs.ts[i]),
        method=int(out.method[i]),
        similarity=float(out.similarity[i]),
        nfeat=int(docs.nfeat[i]),
        exact=(int(docs.exact[i, 0]), int(docs.exact[i, 1])),
        simhash=int(docs.simhash[i]),
        lsh_keys=batch.lsh_keys(i),
        simhash_keys=batch.simhash_keys(i),
        sketch=docs.sketch[i],
        indexed=bool(out.indexed[i]),
        features=feats,
        update=decision.update,
        sentences=sentences,
    )
