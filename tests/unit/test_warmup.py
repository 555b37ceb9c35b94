"""The warm-up compiles every specialisation a run can need: after it, no configuration,
mode or entry point makes numba compile a kernel again (so a warm cache means a warm start),
and no call misses the ahead-of-time exports built from it."""

from __future__ import annotations

from pathlib import Path

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.compare import compare
from neardup_stream.fingerprint import (
    bitstream,
    compact_set,
    feature_set_kernels,
    hash_kernels,
    minhash_kernels,
    set_estimate,
    simhash_kernels,
    text_kernels,
)
from neardup_stream.fingerprint import kernels as fingerprint_kernels
from neardup_stream.index import kernels as index_kernels
from neardup_stream.native import Kernel, kernel
from neardup_stream.snapshot import load_snapshot, save_snapshot
from neardup_stream.warmup import warm_up
from tests.unit.conftest import mutate, random_text


def _signatures() -> dict[str, int]:
    return {
        f"{module.__name__}.{name}": len(obj.dispatcher.signatures)
        for module in (
            fingerprint_kernels,
            hash_kernels,
            text_kernels,
            minhash_kernels,
            simhash_kernels,
            feature_set_kernels,
            bitstream,
            compact_set,
            set_estimate,
            index_kernels,
        )
        for name, obj in vars(module).items()
        if isinstance(obj, Kernel)
    }


def test_no_configuration_compiles_anything_after_the_warm_up(tmp_path: Path) -> None:
    warm_up()
    before, fallbacks = _signatures(), kernel.fallbacks
    text = random_text(3, 300)
    docs = [Document(id=f"d{i}", text=mutate(text, 0.02 * i, i)) for i in range(6)]
    docs.append(Document(id="html", text="<p>Hello <b>world</b></p> &amp; more"))
    configs = [
        DedupConfig(shards=1024, bands=64, rows=2, bucket_cap=1),
        DedupConfig(shingle="word", shingle_size=2, num_perm=32, sketch_bits=64, simhash_k=0),
        DedupConfig(threshold=0.5, max_docs=2, index_duplicates=False, strip_html=True),
        DedupConfig(precise=True, max_age_seconds=0.5, seed=7, shards=3),
    ]
    for cfg in configs:
        live = Deduplicator(cfg)
        outcomes = live.process(docs, now=1e9, records=True, times=[None, -1, 5e8, *[1e9] * 4])
        live.check(Document(id="again", text=text))
        replay = Deduplicator(cfg)
        replay.apply_records(o.record for o in outcomes if o.record is not None)
        save_snapshot(live, tmp_path / str(id(cfg)))
        load_snapshot(tmp_path / str(id(cfg))).check_batch(docs)
        compare(text, mutate(text, 0.1, 1), cfg)
    long_run = Deduplicator(DedupConfig(max_docs=10))  # > 4096 evictions: tables compacted
    long_run.check_batch([Document(id=str(i), text=random_text(i, 8)) for i in range(4200)])
    assert long_run.lookup("4199") is not None
    assert _signatures() == before
    assert kernel.fallbacks == fallbacks  # every call fitted an ahead-of-time export
