"""Per-role CPU cost of the scale-out path, and the throughput model it gives.

    python -m bench.bench_scale_cpu --docs 20000 --shards 24 --batch 50

Runs each role's pure work in this process on one core, in fingerprint-log records of
`--batch` documents, as the roles do, and times it (process CPU):

- edge: parse + fingerprint + pack the log record (once per document, cluster-wide);
- shard: unpack the record (once per replica) + vote (once per shard: S per document);
- gather: decide from S votes + build the outputs (once per document);
- single worker: today's one-engine decide, for comparison.

Model, W replicas of one core each: every replica unpacks every record and votes for its
S/W shards; edge and gather work is spread, so a replica spends per document of the stream
edge/W + unpack + (S/W) x vote + gather/W, and the cluster decides 1 / that documents/s.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import numpy as np

from bench.bench_scale_memory import corpus
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.parsing import parse_document
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.voter import ShardVoter
from worker import codec


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--batch", type=int, default=50)
    args = ap.parse_args()
    raw = [json.dumps({"id": d.id, "text": d.text}).encode() for d in corpus(args.docs)]
    config = DedupConfig(home_shards=args.shards)
    fingerprinter = DocumentFingerprinter(config)
    voters = [ShardVoter(config, s) for s in range(args.shards)]
    gatherer = Gatherer(config)
    single = Deduplicator(DedupConfig())
    cost = dict.fromkeys(("edge", "unpack", "vote", "gather", "single"), 0.0)
    for k in range(0, len(raw), args.batch):
        t = time.process_time()
        docs = [parse_document(r) for r in raw[k : k + args.batch]]
        fb = fingerprinter.batch(docs, [""] * len(docs), np.arange(k, k + len(docs)), 1.8e9)  # type: ignore[arg-type]
        packed = fb.pack()
        cost["edge"] += time.process_time() - t
        t = time.process_time()
        fb = FingerprintBatch.unpack(packed, config.fingerprint_id)
        fb = replace(fb, positions=np.arange(k, k + len(fb), dtype=np.int64))
        cost["unpack"] += time.process_time() - t
        t = time.process_time()
        votes = [v.vote_and_record(fb)[0] for v in voters]
        cost["vote"] += time.process_time() - t
        t = time.process_time()
        decisions = gatherer.decide(fb, votes)
        for d in decisions:
            codec.duplicate_message("d", d) if d.is_duplicate else codec.unique_message("u", d, b"")
        cost["gather"] += time.process_time() - t
        t = time.process_time()
        single.check_batch([parse_document(r) for r in raw[k : k + args.batch]])  # type: ignore[misc]
        cost["single"] += time.process_time() - t
    n, s = len(raw), args.shards
    us = {role: c / n * 1e6 for role, c in cost.items()}
    print(f"{n} documents, S = {s}, {args.batch} per log record; CPU µs per document:")
    print(f"  edge {us['edge']:.1f} | shard: unpack {us['unpack']:.1f} + vote {us['vote'] / s:.1f} x S"
          f" | gather {us['gather']:.1f} | single worker {us['single']:.1f}")  # fmt: skip
    print("  W | µs per stream document per replica | cluster docs/s | vs one single worker")
    for w in (1, 2, 4, 8):
        per = us["edge"] / w + us["unpack"] + us["vote"] / w + us["gather"] / w
        print(f"  {w} | {per:.1f} | {1e6 / per:,.0f} | {us['single'] / per:.2f}x")


if __name__ == "__main__":
    main()
