"""What a decided batch comes out as: its `DecisionColumns`, or one `Outcome` per document
(a `Decision` and its record), in input order.

Owns the translation from the kernels' columns to `Decision`s (a stored row's method code to
its `METHODS` name, a match's ref to its id and representative), the rule for rows that were
not decided here (a repeat within the batch gets its first occurrence's decision, a replay
its stored version's), and the `FingerprintRecord` that reproduces a newly stored document
(`apply_records`). `finish_columns` (which `finish` runs) also records the ids of each stored
row in the store, for the whole batch at once (later rows of the batch that match an earlier
one read its ids from the batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

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


@dataclass
class DecisionColumns:
    """The decisions of a batch as columns, row by row in input order (no object per row).

    `method[i]` is UNIQUE (0) or 1 + the index of its name in `METHODS`; `similarity[i]` is
    rounded as a `Decision` shows it, None for a unique document."""

    ids: list[str] = field(default_factory=list)
    method: list[int] = field(default_factory=list)
    duplicate_of: list[str | None] = field(default_factory=list)
    representative: list[str | None] = field(default_factory=list)
    similarity: list[float | None] = field(default_factory=list)
    update: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def append(
        self, doc_id: str, method: int, dup: str | None, rep: str | None, sim: float, update: bool
    ) -> None:
        unique = method == UNIQUE
        self.ids.append(doc_id)
        self.method.append(method)
        self.duplicate_of.append(dup)
        self.representative.append(rep)
        self.similarity.append(None if unique else round(sim, 6))
        self.update.append(update)

    def copy_row(self, i: int, doc_id: str) -> None:
        """Append row `i`'s decision again, for `doc_id` (a repeat of the same id)."""
        self.ids.append(doc_id)
        self.method.append(self.method[i])
        self.duplicate_of.append(self.duplicate_of[i])
        self.representative.append(self.representative[i])
        self.similarity.append(self.similarity[i])
        self.update.append(self.update[i])

    def method_name(self, i: int) -> str | None:
        """Row `i`'s method as a `Decision` names it, None for a unique document."""
        code = self.method[i]
        return None if code == UNIQUE else METHODS[code - 1]

    def decision(self, i: int) -> Decision:
        """Row `i` as a `Decision`."""
        if self.method[i] == UNIQUE:
            return Decision(id=self.ids[i], decision="unique", update=self.update[i])
        return Decision(
            id=self.ids[i],
            decision="duplicate",
            duplicate_of=self.duplicate_of[i],
            representative=self.representative[i],
            similarity=self.similarity[i],
            method=self.method_name(i),
            update=self.update[i],
        )


def stored_decision(stored: StoredDecision) -> Decision:
    """The decision a stored document was given, as a `Decision`."""
    one = DecisionColumns()
    _append_stored(one, stored)
    return one.decision(0)


def _append_stored(cols: DecisionColumns, stored: StoredDecision) -> None:
    cols.append(
        stored.doc_id,
        stored.method,
        stored.duplicate_of,
        stored.representative,
        stored.similarity,
        stored.update,
    )


def finish_columns(engine: Deduplicator, batch: Batch) -> DecisionColumns:
    """The decisions of a decided batch; stores each row's decision and remembers its ids.

    A repeat within the batch gets its first occurrence's decision, a replay its stored
    version's."""
    st, out = engine.store, batch.decisions
    refs, matches, methods = out.ref.tolist(), out.match.tolist(), out.method.tolist()
    updates = out.update.tolist()
    similarities = out.similarity.astype(np.float32).tolist()  # as the store keeps them
    named: dict[int, tuple[str, str]] = {}  # ref stored by this batch -> (id, representative)
    stored_refs: list[int] = []
    stored_names: list[Names] = []
    cols = DecisionColumns()
    repeat_of, known = batch.repeat_of, batch.known
    for i, doc_id in enumerate(batch.ids):
        if i in repeat_of:
            cols.copy_row(repeat_of[i], doc_id)
            continue
        if i in known:
            _append_stored(cols, st.decision(known[i]))
            continue
        ref, match = refs[i], matches[i]
        dup = rep = None
        if match >= 0:
            dup, rep = named.get(match) or st.names(match)
        cols.append(
            doc_id, methods[i] if match >= 0 else UNIQUE, dup, rep, similarities[i], updates[i]
        )
        named[ref] = (doc_id, rep or doc_id)  # later documents of the batch may match it
        stored_refs.append(ref)
        stored_names.append((doc_id, dup, rep))
    st.record_all(stored_refs, stored_names)
    driver.remember(engine, batch)
    return cols


def finish(
    engine: Deduplicator,
    batch: Batch,
    records: bool,
    feats: dict[int, np.ndarray],
    sigs: dict[int, int],
) -> list[Outcome]:
    """The outcomes of a decided batch (`finish_columns`), with, when `records` is set, the
    record of every newly stored row. `feats` and `sigs` hold, by row, the shingle sets
    (precise mode) and sentence signatures (longest sentences) the records carry."""
    cols = finish_columns(engine, batch)
    decisions = [cols.decision(i) for i in range(len(cols))]
    if not records:
        return [Outcome(d, None) for d in decisions]
    new = [i for i in range(len(cols)) if i not in batch.repeat_of and i not in batch.known]
    made = fingerprint_records(
        engine, batch, new, [StoredAs.of(decisions[i]) for i in new], feats, sigs
    )
    record: dict[int, FingerprintRecord] = dict(zip(new, made, strict=True))
    return [Outcome(d, record.get(i)) for i, d in enumerate(decisions)]


class StoredAs(NamedTuple):
    """What the record of a stored document says of its decision."""

    doc_id: str
    duplicate_of: str | None = None
    representative: str | None = None
    update: bool = False

    @classmethod
    def of(cls, decision: Decision) -> StoredAs:
        return cls(decision.id, decision.duplicate_of, decision.representative, decision.update)


def fingerprint_records(
    engine: Deduplicator,
    batch: Batch,
    rows: Sequence[int],
    stored: Sequence[StoredAs],
    feats: Mapping[int, np.ndarray] | None = None,
    sigs: Mapping[int, int] | None = None,
) -> list[FingerprintRecord]:
    """The changelog records that reproduce `rows` of `batch`, stored as `stored` says (one
    each), with their shingle sets and sentence signatures by row. Each column is read once
    for all rows: a numpy scalar a field and row cost more than the record itself."""
    if not rows:
        return []
    docs, out = batch.docs, batch.decisions
    at = np.asarray(rows, dtype=np.int64)
    ts, nfeat, simhash = docs.ts[at].tolist(), docs.nfeat[at].tolist(), docs.simhash[at].tolist()
    exact = docs.exact[at].tolist()
    method, similarity = out.method[at].tolist(), out.similarity[at].tolist()
    indexed = out.indexed[at].tolist()
    config_id, feats, sigs = engine.config.fingerprint_id, feats or {}, sigs or {}
    return [
        FingerprintRecord(
            config_id,
            s.doc_id,
            s.duplicate_of,
            s.representative,
            ts[k],
            method[k],
            similarity[k],
            nfeat[k],
            (exact[k][0], exact[k][1]),
            simhash[k],
            batch.lsh_keys(i),
            batch.simhash_keys(i),
            docs.sketch[i],
            indexed[k],
            feats.get(i),
            s.update,
            sigs.get(i),
        )
        for k, (i, s) in enumerate(zip(rows, stored, strict=True))
    ]
