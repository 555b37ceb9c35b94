"""Index memory per document at 100k and 1M documents (default and precise modes).

Documents are unique pseudo-random texts of ~1,000 characters drawn from a 20k-word
vocabulary, so every document is indexed (no bucket caps or exact-duplicate shortcuts
flatter the figure). Bytes are what the index's arrays allocate, capacity slack included.

    python -m bench.bench_memory --docs 100000 1000000 [--precise-docs 100000]
    python -m bench.bench_memory --docs 1000000 --precise-docs --set sketch_bits=2048
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from neardup_stream import DedupConfig, Deduplicator, Document


def _vocab(rng: np.random.Generator, size: int = 20_000) -> np.ndarray:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    lengths = rng.integers(2, 10, size)
    return np.array(["".join(rng.choice(letters, n)) for n in lengths])


def measure(n: int, config: DedupConfig, words: int = 160, batch: int = 2000) -> dict[str, float]:
    """Index `n` unique documents; report bytes per document by component."""
    rng = np.random.default_rng(7)
    vocab = _vocab(rng)
    dedup = Deduplicator(config)
    started = time.perf_counter()
    for start in range(0, n, batch):
        size = min(batch, n - start)
        picks = rng.integers(0, vocab.size, (size, words))
        docs = [
            Document(id=f"doc-{start + i:09d}", text=" ".join(vocab[picks[i]])) for i in range(size)
        ]
        dedup.check_batch(docs)
    elapsed = time.perf_counter() - started
    return {
        "docs": n,
        "precise": config.precise,
        "sketch_bits": config.sketch_bits,
        "bytes_per_doc": dedup.index_bytes() / n,
        "store_per_doc": dedup.store.nbytes / n,
        "tables_per_doc": dedup.index.nbytes / n,
        "registry_per_doc": dedup.registry.nbytes / n,
        "entries_per_doc": dedup.index.entries / n,
        "docs_per_s": n / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--precise-docs", type=int, nargs="*", default=[100_000])
    parser.add_argument("--json", help="write results to this file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an engine setting (DedupConfig field, JSON value), e.g. --set sketch_bits=2048",
    )
    args = parser.parse_args()
    extra = {k: json.loads(v) for k, _, v in (item.partition("=") for item in args.set)}
    rows = [measure(n, DedupConfig(**extra)) for n in args.docs]
    rows += [measure(n, DedupConfig(precise=True, **extra)) for n in args.precise_docs]
    print(
        f"{'docs':>9} {'mode':>8} {'B/doc':>8} {'store':>7} {'tables':>7} {'ids':>5} {'entries':>7}"
    )
    for r in rows:
        mode = "precise" if r["precise"] else "default"
        print(
            f"{r['docs']:>9} {mode:>8} {r['bytes_per_doc']:>8.0f} {r['store_per_doc']:>7.0f} "
            f"{r['tables_per_doc']:>7.0f} {r['registry_per_doc']:>5.0f} {r['entries_per_doc']:>7.1f}"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
