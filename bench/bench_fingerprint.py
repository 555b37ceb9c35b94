"""Fingerprinting throughput on one core: SimHash + 128-value MinHash (+ sketch) per document.

Reports million characters per second over the evaluation corpus for the compiled kernel
alone (texts already in its buffers, `text_batch`; it folds every text itself) and for
`Fingerprinter.batch` end to end (encoding, bucket keys; in batches of `dedup`'s size), best
of three, after a warm-up. Like the commands, it keeps freed memory for the next batch
(`allocator`).

    python -m bench.bench_fingerprint [--docs 20000]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.corpus import DATA_DIR, ensure_corpus, read_jsonl
from neardup_stream import DedupConfig
from neardup_stream.allocator import keep_freed_memory
from neardup_stream.cli import BATCH
from neardup_stream.fingerprint import kernels as _kernels
from neardup_stream.fingerprint.fingerprinter import Fingerprinter, fold_tables, text_batch


def _best(fn: object, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        fn()  # type: ignore[operator]
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument("--corpus", type=Path, help="another JSONL corpus (e.g. the hard one)")
    args = parser.parse_args()
    keep_freed_memory()  # as the commands do
    corpus = args.corpus or ensure_corpus(DATA_DIR / f"corpus-{args.docs}-s7.jsonl", args.docs)
    texts = [d["text"] for d in read_jsonl(corpus)]
    chars = sum(len(t) for t in texts)
    cfg = DedupConfig()
    fp = Fingerprinter(cfg)
    fp.batch(texts[:50])
    batch = text_batch(texts)
    table = fold_tables()

    def end_to_end() -> None:  # in batches of `dedup`'s size, as the engine runs it
        for start in range(0, len(texts), BATCH):
            fp.batch(texts[start : start + BATCH])

    def kernel() -> None:
        _kernels.fingerprint_batch(batch, table, fp.shingling)

    rows = {
        "compiled kernel": chars / _best(kernel) / 1e6,
        "Fingerprinter.batch (end to end)": chars / _best(end_to_end) / 1e6,
    }
    print(f"{len(texts)} documents, {chars / 1e6:.1f} M characters, one core")
    for name, rate in rows.items():
        print(f"  {name:<42} {rate:7.1f} Mchar/s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"docs": len(texts), "chars": chars, "mchar_per_s": rows}, fh, indent=2)


if __name__ == "__main__":
    main()
