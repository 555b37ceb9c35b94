"""The kernel driver: how a `Deduplicator` runs the index kernels over a batch.

Owns the calls into `index.kernels` that every decide path shares: marking the rows whose id
is stored already (`mark_known`), the decide or append pass over a range of rows, growing the
sharded index before each pass (`run`), moving the event-time watermark (`advance`), and, once
a batch is decided, registering its stored ids and settling evictions (`remember`). The tables
(store, index, registry) belong to the engine, which may swap them (`from_state`, replicas),
so they are read from it on every call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.index import kernels

if TYPE_CHECKING:
    from neardup_stream.deduplicator import Deduplicator


def mark_known(engine: Deduplicator, batch: Batch) -> None:
    """Mark the rows of `batch` whose id the engine stores already, then reserve room for it."""
    batch.mark_known(engine.registry.find_all(batch.ids, engine.store), engine.store.exact_of)
    engine.store.reserve(len(batch))  # no row moves while the batch is decided


def run(
    engine: Deduplicator,
    batch: Batch,
    decide: bool,
    begin: int = 0,
    end: int | None = None,
    renew: bool = True,
) -> None:
    """Run the decide (or append) kernel over rows begin..end, growing tables as needed.

    A replay (`batch.known`, `batch.repeat_of`) is its id's version again only while that
    version is in the window. With `renew`, each one is checked at its turn, after the rows
    before it were stored: one whose version rows before it evicted (`max_docs`, or age) is
    a new document, decided afresh as it would be in a batch of its own (`Batch.renew`)."""
    end = len(batch) if end is None else end
    if renew and (batch.known or batch.repeat_of) and evicts(engine):
        for row in sorted(r for r in (*batch.known, *batch.repeat_of) if begin <= r < end):
            _pass(engine, batch, decide, begin, row)
            renewed(engine, batch, row)
            begin = row  # skipped if still a replay, decided if renewed
    _pass(engine, batch, decide, begin, end)


def evicts(engine: Deduplicator) -> bool:
    """Whether the engine's window ever evicts (`max_docs` or an age)."""
    return bool(engine._limits.max_docs or engine._limits.max_age)


def renewed(engine: Deduplicator, batch: Batch, row: int) -> bool:
    """At replay `row`'s turn: whether its id's version left the window since the batch
    began, making the row a new document (`Batch.renew`); call once the rows before it ran."""
    version = batch.version(row)
    if version is None or engine.store.alive(version):
        return False
    batch.renew(row, version)
    return True


def _pass(engine: Deduplicator, batch: Batch, decide: bool, begin: int, end: int) -> None:
    """One kernel pass over rows begin..end (the kernel returns early to grow the tables)."""
    width = batch.docs.keys.shape[1]
    i = begin
    while i < end:
        engine.index.reserve(max(width, (end - i) * width // len(engine.index.shards)) + 64)
        args = (batch.docs, batch.decisions, engine.index.arrays, engine.store.arrays())
        window, limits = engine.store.window, engine._limits
        if decide:
            i = kernels.decide_batch(i, end, *args, window, limits, engine._rules)
        else:
            i = kernels.append_batch(i, end, *args, window, limits)


def advance(engine: Deduplicator, ts: int | np.int64) -> None:
    """Move the event-time watermark to `ts` (if later), evicting what age excludes."""
    st = engine.store
    kernels.advance(st.window, st.arrays(), np.int64(ts), engine._limits, False)


def remember(engine: Deduplicator, batch: Batch) -> None:
    """Register the ids of just-stored documents, then settle evictions."""
    stored = batch.stored()
    engine.registry.add(
        [int(batch.decisions.ref[i]) for i in stored], [batch.ids[i] for i in stored]
    )
    st = engine.store
    st.trim_blob()
    if st.window["evicted"][0] > max(4096, st.count):
        engine.index.compact(st.base, st.count)
        engine.registry.compact(st.base, st.count)
        st.window["evicted"][0] = 0
