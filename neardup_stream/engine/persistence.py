"""What lets an engine outlive its process: its state as arrays, and changelog replay.

A restore rebuilds an engine from a snapshot (`load_state` of what `state` made), then
replays the changelog from where the snapshot ends (`apply_records`); a standby follows the
changelog the same way. The arrays hold no settings: a state is loaded under the fingerprint
settings it was made under (`snapshot` checks that); shards, bucket caps and retention may
differ, since the tables are rebuilt from their entries. A record is refused unless it was
made under this engine's fingerprint settings and, in precise mode, carries its shingle set.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from neardup_stream.batch import Batch
from neardup_stream.engine import driver
from neardup_stream.index.doc_store import DocStore
from neardup_stream.index.registry import IdRegistry
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.precise import FeatureSets
from neardup_stream.records import FingerprintRecord
from neardup_stream.sentences import SentenceIndex

if TYPE_CHECKING:
    from neardup_stream.deduplicator import Deduplicator


def state(engine: Deduplicator) -> dict[str, np.ndarray]:
    """Everything the engine's index keeps, as named arrays (see `load_state`)."""
    arrays = engine.store.state()
    arrays["registry_keys"], arrays["registry_refs"] = engine.registry.key_refs()
    arrays["index_keys"], arrays["index_refs"] = engine.index.key_refs()
    arrays.update(engine.features.state())
    if engine.config.longest_sentences:
        arrays.update(engine.sentences.state())
    return arrays


def load_state(engine: Deduplicator, arrays: dict[str, np.ndarray]) -> None:
    """Replace the tables of `engine` (new, empty) by those `arrays` hold (from `state`)."""
    config = engine.config
    keep_time = config.max_age_seconds is not None
    engine.store = DocStore.from_state(config.sketch_bits // 64, keep_time, arrays)
    engine.registry = IdRegistry.from_entries(arrays["registry_keys"], arrays["registry_refs"])
    engine.index = ShardedIndex.from_entries(
        config.shards, config.bucket_cap, arrays["index_keys"], arrays["index_refs"]
    )
    engine.features = FeatureSets.from_state(config, arrays)
    if config.longest_sentences:
        engine.sentences = SentenceIndex.from_state(arrays)


def check_record(engine: Deduplicator, rec: FingerprintRecord) -> None:
    """Refuse a record the engine cannot apply as it was made (ValueError, naming why)."""
    cfg = engine.config
    if rec.config_id != cfg.fingerprint_id:
        raise ValueError(
            f"record was made under fingerprint config {rec.config_id:#010x}, "
            f"this index uses {cfg.fingerprint_id:#010x}"
        )
    if cfg.precise and rec.features is None:
        raise ValueError(f"record {rec.doc_id!r} has no shingle set for precise mode")


def apply_records(engine: Deduplicator, records: Iterable[FingerprintRecord]) -> int:
    """Replay changelog records in order (no verification); returns how many were stored.

    A record whose id's latest stored version has the same content is skipped (already
    applied); one with other content is an update and supersedes that version, as it did
    live. So records must be replayed once, in order (a restore replays the changelog
    from where its snapshot ends): an older record replayed again would count as an update.
    Every record is checked (`check_record`) before any is applied.
    """
    recs = list(records)
    for rec in recs:
        check_record(engine, rec)
    if not recs:
        return 0
    batch = Batch.from_records(recs, engine.fingerprinter.bands)
    driver.mark_known(engine, batch)
    driver.run(engine, batch, decide=False)
    stored = batch.stored()
    refs = [int(batch.decisions.ref[i]) for i in stored]
    names = [(recs[i].doc_id, recs[i].duplicate_of, recs[i].representative) for i in stored]
    engine.store.record_all(refs, names)
    for i, ref in zip(stored, refs, strict=True):
        rec = recs[i]
        if rec.features is not None:
            engine.features.add(ref, rec.features)
        if rec.sentences is not None and engine.config.longest_sentences:
            engine.sentences.add(ref, rec.sentences)
    driver.remember(engine, batch)
    engine.features.forget(engine.store.alive)
    engine.sentences.forget(engine.store.alive)
    return len(stored)
