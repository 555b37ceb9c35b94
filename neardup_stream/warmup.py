"""Fill the start-up caches: `python -m neardup_stream.warmup` (run by `make install` and the
worker image build).

Builds the Unicode fold and NFKC tables and runs every compiled kernel once on a few documents, in each
mode the engine has (character and word shingles, precise mode, retention, changelog replay,
`compare`), so numba writes their machine code to its cache and later processes only load it.
"""

from __future__ import annotations

import sys
import time

from neardup_stream.compare import compare
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.fingerprint.nfkc import nfkc_tables
from neardup_stream.fingerprint.normalize import fold_table
from neardup_stream.models import Document

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
    compare(_TEXTS[0], _TEXTS[1])


def main() -> int:
    start = time.perf_counter()
    warm_up()
    print(f"neardup-stream: caches ready in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
