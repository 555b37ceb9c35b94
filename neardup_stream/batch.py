"""One batch on its way through the index kernels: its columns, its decisions, its known ids.

A batch comes either from fresh fingerprints (`from_fingerprints`, to be decided) or from
changelog records (`from_records`, decided already).

An id seen before is a *replay* when its content (the exact hash: the 128-bit MurmurHash3 of
the normalised text) equals its latest version's, and an *update* otherwise. Replays are
`skip`ped by the kernels: `known[i]` holds the stored ref of a replay of a stored document,
`repeat_of[i]` the batch position of the version it repeats. An update is decided afresh as a
new document; `docs.prior` (a stored ref) or `docs.prior_row` (a row of this batch) names the
earlier version the kernels supersede (when it is still in the window at the update's turn:
only then is it an update, `decisions.update`; else a new document).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from neardup_stream.fingerprint.fingerprinter import Fingerprints
from neardup_stream.index.columns import BatchColumns, Decisions, new_decisions, no_prior
from neardup_stream.records import FingerprintRecord


class _Latest(NamedTuple):
    """The latest version of an id met so far in `mark_known`."""

    row: int  # its batch row
    ref: int | None  # its stored ref when that row is a replay of a stored document


@dataclass
class Batch:
    """Column arrays of a batch and the decisions the kernels write for it."""

    ids: list[str]
    docs: BatchColumns
    blocks: int  # SimHash block keys at the start of each row of `docs.keys`
    decisions: Decisions = field(init=False)
    known: dict[int, int] = field(default_factory=dict)  # position -> stored ref
    repeat_of: dict[int, int] = field(default_factory=dict)  # position -> first position

    def __post_init__(self) -> None:
        self.decisions = new_decisions(len(self.ids))

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_fingerprints(cls, ids: list[str], fps: Fingerprints, ts: np.ndarray) -> Batch:
        """A batch to decide; empty texts get no LSH keys (only SimHash blocks)."""
        keys = np.concatenate((fps.simhash_keys, fps.lsh_keys), axis=1)
        blocks = fps.simhash_keys.shape[1]
        nkeys = np.where(fps.nfeat > 0, keys.shape[1], blocks)
        docs = BatchColumns(
            skip=np.zeros(len(ids), dtype=np.bool_),
            probe_only=np.zeros(len(ids), dtype=np.bool_),
            keys=keys,
            nkeys=np.asarray(nkeys, dtype=np.int64),
            exact=fps.exact,
            simhash=fps.simhash,
            sketch=fps.sketch,
            nfeat=fps.nfeat,
            ts=np.asarray(ts, dtype=np.int64),
            feats=fps.feats,
            feat_offsets=fps.feat_offsets,
            other=fps.other,
            prior=no_prior(len(ids)),
            prior_row=no_prior(len(ids)),
        )
        return cls(ids, docs, blocks)

    @classmethod
    def from_records(cls, recs: Sequence[FingerprintRecord], bands: int) -> Batch:
        """A batch of decided documents, to store and index as recorded."""
        blocks = recs[0].simhash_keys.size
        keys = np.zeros((len(recs), blocks + bands), dtype=np.uint32)
        for i, r in enumerate(recs):
            keys[i, : blocks + r.lsh_keys.size] = np.concatenate((r.simhash_keys, r.lsh_keys))
        docs = BatchColumns(
            skip=np.zeros(len(recs), dtype=np.bool_),
            probe_only=np.zeros(len(recs), dtype=np.bool_),
            keys=keys,
            nkeys=np.array([blocks + r.lsh_keys.size for r in recs], dtype=np.int64),
            exact=np.array([r.exact for r in recs], dtype=np.uint64).reshape(-1, 2),
            simhash=np.array([r.simhash for r in recs], dtype=np.uint64),
            sketch=np.stack([r.sketch for r in recs]),
            nfeat=np.array([r.nfeat for r in recs], dtype=np.int64),
            ts=np.array([r.ts for r in recs], dtype=np.int64),
            feats=np.empty(0, dtype=np.uint64),  # replay stores and indexes, never verifies
            feat_offsets=np.zeros(len(recs) + 1, dtype=np.int64),
            other=np.zeros((len(recs), recs[0].sketch.size), dtype=np.uint64),
            prior=no_prior(len(recs)),
            prior_row=no_prior(len(recs)),
        )
        batch = cls([r.doc_id for r in recs], docs, blocks)
        batch.decisions.similarity[:] = [r.similarity for r in recs]
        batch.decisions.method[:] = [r.method for r in recs]
        batch.decisions.indexed[:] = [r.indexed for r in recs]
        batch.decisions.update[:] = [r.update for r in recs]
        return batch

    def mark_known(
        self, stored: Sequence[int | None], digest: Callable[[int], tuple[int, int]]
    ) -> None:
        """Tell replays from updates (see the module docstring).

        Args:
            stored: Per row, the stored ref of its id's latest version, if any (read for the
                first row of each id only).
            digest: The exact hash of a stored ref.
        """
        latest: dict[str, _Latest] = {}
        docs = self.docs
        exact = [tuple(row) for row in docs.exact.tolist()]  # Python ints, once
        for i, doc_id in enumerate(self.ids):
            content = exact[i]
            before = latest.get(doc_id)
            if before is None:
                ref = stored[i]
                if ref is not None and digest(ref) == content:
                    self.known[i] = ref
                    latest[doc_id] = _Latest(i, ref)
                    continue
                if ref is not None:
                    docs.prior[i] = ref
            elif exact[before.row] == content:
                self.repeat_of[i] = before.row
                continue
            else:
                if before.ref is not None:
                    docs.prior[i] = before.ref
                else:
                    docs.prior_row[i] = before.row
            latest[doc_id] = _Latest(i, None)
        for i in (*self.known, *self.repeat_of):
            docs.skip[i] = True

    def version(self, row: int) -> int | None:
        """The stored ref of the version replay `row` repeats (None: not stored here, e.g.
        a row another home shard stores); for a repeat, read once the row it repeats ran."""
        if row in self.known:
            return self.known[row]
        first = self.repeat_of[row]
        if first in self.known:
            return self.known[first]
        ref = int(self.decisions.ref[first])
        return ref if ref >= 0 else None

    def renew(self, row: int, version: int) -> None:
        """Replay `row` is a new document: its id's `version` left the window before its
        turn (the `run` of the kernels checks). Later rows of its id that named that
        version (or the row it repeated) as the one they repeat or update now name this row."""
        self.known.pop(row, None)
        first = self.repeat_of.pop(row, -1)  # the row it repeated, if one of this batch
        docs = self.docs
        docs.skip[row] = False
        doc_id = self.ids[row]
        for later in range(row + 1, len(self.ids)):
            if self.ids[later] != doc_id:
                continue
            if first >= 0 and self.repeat_of.get(later) == first:
                self.repeat_of[later] = row  # a replay of the same content: of this row now
            elif docs.prior[later] == version or (first >= 0 and docs.prior_row[later] == first):
                docs.prior[later], docs.prior_row[later] = -1, row

    def stored(self) -> list[int]:
        """Positions of the documents the kernels stored (not known, repeated or probe-only)."""
        docs = self.docs
        return np.flatnonzero(~(docs.skip | docs.probe_only)).tolist()

    def lsh_keys(self, i: int) -> np.ndarray:
        return self.docs.keys[i, self.blocks : self.docs.nkeys[i]]

    def simhash_keys(self, i: int) -> np.ndarray:
        return self.docs.keys[i, : self.blocks]
