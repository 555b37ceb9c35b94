"""Index bytes per replica when S home shards are spread over W = 1, 2, 3 replicas.

    python -m bench.bench_scale_memory --docs 100000 --shards 24

Runs the sharded core in one process (decisions are the same however shards are placed)
and sums each replica's shards round-robin (each with its share of the merged candidate
table, by entries), next to one plain engine for comparison.
"""

from __future__ import annotations

import argparse
import random

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document
from neardup_stream.sharded.deduplicator import ShardedDeduplicator


def corpus(n: int, seed: int = 1) -> list[Document]:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrst") for _ in range(6)) for _ in range(20000)]
    docs: list[Document] = []
    for i in range(n):
        if docs and rng.random() < 0.3:
            tokens = rng.choice(docs[-5000:]).text.split()
            for _ in range(max(1, len(tokens) // 20)):
                tokens[rng.randrange(len(tokens))] = rng.choice(words)
            text = " ".join(tokens)
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(50, 400)))
        docs.append(Document(id=f"d{i}", text=text))
    return docs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=24)
    args = ap.parse_args()
    docs = corpus(args.docs)
    plain = Deduplicator(DedupConfig())
    sharded = ShardedDeduplicator(DedupConfig(home_shards=args.shards))
    for k in range(0, len(docs), 2000):
        plain.check_batch(docs[k : k + 2000])
        sharded.process(docs[k : k + 2000])
    n = len(docs)
    print(f"{n} documents, S = {args.shards}")
    print(f"one engine: {plain.index_bytes() / n:.0f} B/doc")
    shares = sharded.replica.shard_bytes()  # merged table split by entries
    per_shard = [shares[s] for s in range(args.shards)]
    print(
        f"all shards: {sum(per_shard) / n:.0f} B/doc; gather state: {len(sharded.gatherer)} entries"
    )
    for w in (1, 2, 3):
        replicas = [sum(per_shard[s] for s in range(r, args.shards, w)) for r in range(w)]
        mib = ", ".join(f"{b / 2**20:.1f}" for b in replicas)
        print(
            f"W = {w}: index MiB per replica {mib} (max/mean {max(replicas) * w / sum(replicas):.3f})"
        )


if __name__ == "__main__":
    main()
