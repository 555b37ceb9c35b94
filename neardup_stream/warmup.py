"""Fill the start-up caches: `python -m neardup_stream.warmup` (run by the package build,
`make install` and the worker image build).

Builds the Unicode fold and NFKC tables and runs every compiled kernel once on a few
documents, in each mode the engine has (character and word shingles, precise mode, retention,
changelog replay, `compare`, and the sharded engine of `--home-shards` and scale-out
replicas: voting through a merged table, a restored shard moved in, a shard moved out), so
numba writes their machine code to its cache and later processes only load it. Then, unless
the package already has them for these sources, it builds the ahead-of-time exports of the
kernels those runs called (`native.build`), so a process that needs no other kernel never
imports numba; a build that fails (no C compiler) only warns.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from neardup_stream.compare import compare
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.fingerprint.nfkc import nfkc_tables
from neardup_stream.fingerprint.normalize import fold_table
from neardup_stream.models import Document
from neardup_stream.native import aot
from neardup_stream.native.build import build
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter

_TEXTS = [
    "Near-duplicate detection finds documents that say the same thing.",
    "Near-duplicate detection finds documents that say the same thing!",
    "近似重复检测是搜索引擎和新闻聚合中的关键步骤。",
    "Straße ÉTÉ ﬁnance",
    "ok",
]


def warm_up() -> None:
    """Build and compile everything a first run would (see the module docstring)."""
    fold_table()
    nfkc_tables()
    docs = [Document(id=str(i), text=t) for i, t in enumerate(_TEXTS)]
    configs = [
        DedupConfig(),
        DedupConfig(shingle="word", shingle_size=3, max_docs=3),
        DedupConfig(precise=True, max_age_seconds=60),
    ]
    for cfg in configs:
        live = Deduplicator(cfg)
        records = [o.record for o in live.process(docs, now=0.0, records=True)]
        Deduplicator(cfg).apply_records(r for r in records if r is not None)
        live.check(docs[0])  # an id seen before: the registry's probe
        restored = Deduplicator.from_state(cfg, live.state())  # tables rebuilt (snapshots)
        restored.index.compact(restored.store.base, restored.store.count)  # long evictions
    for cfg in (DedupConfig(home_shards=3), DedupConfig(home_shards=3, max_age_seconds=60)):
        _warm_sharded(cfg, docs)
    compare(_TEXTS[0], _TEXTS[1])


def warm_replica(config: DedupConfig) -> None:
    """Load what a scale-out replica's shards run under `config` (numba and the merged-table
    kernels, from its cache) now, so a replica is ready only once they are, not on its first
    vote: that load costs ~0.4 s of CPU, and a cold cache compiles."""
    _warm_sharded(config, [Document(id="0", text=_TEXTS[0])])


def _warm_sharded(config: DedupConfig, docs: list[Document]) -> None:
    """The merged-table kernels: vote and store, restore a shard into a replica, drop one."""
    fingerprinter = DocumentFingerprinter(config)
    fb = fingerprinter.batch(docs, [""] * len(docs), np.arange(len(docs)), 0.0)
    replica = ReplicaVoter(config, range(config.home_shards))
    voted = replica.vote_and_record(fb)
    # A store that grows is replaced alone in the merged table's list of stores (`set_store`):
    # every replica's first growth would compile it.
    held = next(s for s in replica.shards if replica.voter(s).holds(""))
    store = replica.voter(held).engine("")[0].store
    store.reserve(store.capacity + 1)
    n = len(docs)
    replica.vote_and_record(fingerprinter.batch(docs, [""] * n, np.arange(n, 2 * n), 0.0))
    for shard, (_, changes) in voted.items():
        restored = ShardVoter(config, shard)
        for change in changes:
            restored.apply(change)
        ReplicaVoter(config).add(restored)
    replica.remove(0)


def main() -> int:
    start = time.perf_counter()
    warm_up()
    print(f"neardup-stream: caches ready in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    if aot.available():
        return 0
    start = time.perf_counter()
    try:
        built = build(warm_up)
    except Exception as exc:  # no C compiler, pycc gone: the kernels stay on the JIT
        print(
            f"neardup-stream: no ahead-of-time kernels ({exc}); numba's JIT runs them",
            file=sys.stderr,
        )
        return 0
    took = time.perf_counter() - start
    print(f"neardup-stream: {built} ahead-of-time kernels built in {took:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
