"""The pure work of a single-stage replica's batch against the plain worker's, part by part.

    python -m bench.bench_single_stage_cpu [--docs 20000] [--batch 500] [--rounds 3]

No broker: what each does per batch of parsed documents, on one core, CPU µs per document.

- plain (`neardup_stream.worker.decide`): `Deduplicator.process` (fingerprint, decide, store, records), the
  output messages (`codec`), the changelog records' encoding;
- single stage (`neardup_stream.worker.cluster.single_stage`): the fingerprinter, the 24-shard vote with
  its shard changes (`ReplicaVoter`), their changelog records (`ShardChange.pack_parts`),
  the gather's decisions and first decisions (`Gatherer`), the output messages, the gather
  changelog records (`FirstDecisions.pack_parts`).

Each round builds both from empty, plain first; the first round pays for loading the
kernels and growing the tables, so read the last. The difference is the sharded core's
share of a replica's cost over the plain worker's; the rest of it is the Kafka shell
(`bench.bench_cluster_cost`).
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from bench.bench_scale_memory import corpus
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Decision, Parsed
from neardup_stream.parsing import parse_document
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.worker import codec
from neardup_stream.worker.cluster.log_record import Envelope

LIMIT = 4 << 20  # changelog record limit (the default 8 MB message limit halved)
Step = Callable[[Sequence[Parsed], int], None]


def _messages(decisions: Sequence[Decision]) -> None:
    for d in decisions:
        if d.is_duplicate:
            codec.duplicate_message("d", d)
        else:
            codec.unique_message("u", d, b"")


class Timer:
    """CPU seconds per named part."""

    def __init__(self) -> None:
        self.parts: dict[str, float] = defaultdict(float)
        self._at = 0.0

    def start(self) -> None:
        self._at = time.process_time()

    def lap(self, part: str) -> None:
        now = time.process_time()
        self.parts[part] += now - self._at
        self._at = now


def plain(config: DedupConfig, timer: Timer) -> Step:
    dedup = Deduplicator(config.model_copy(update={"home_shards": 1}))

    def step(docs: Sequence[Parsed], first: int) -> None:
        timer.start()
        outcomes = dedup.process(docs, now=1.8e9, records=True)
        timer.lap("plain: process (fingerprint, decide, store)")
        _messages([o.decision for o in outcomes])
        timer.lap("plain: output messages")
        for o in outcomes:
            if o.record is not None:
                o.record.encode()
        timer.lap("plain: changelog records")

    return step


def single_stage(config: DedupConfig, timer: Timer) -> Step:
    fingerprinter = DocumentFingerprinter(config)
    replica = ReplicaVoter(config, list(range(config.home_shards)))
    gatherer = Gatherer(config)

    def step(docs: Sequence[Parsed], first: int) -> None:
        timer.start()
        fb = fingerprinter.batch(docs, [""] * len(docs), np.arange(len(docs)), 1.8e9)
        fb = Envelope.placed(fb, first, 0)
        timer.lap("single: fingerprint")
        voted = replica.vote_and_record(fb)
        timer.lap("single: vote (24 shards)")
        for shard in sorted(voted):
            for change in voted[shard][1]:
                if change.records:
                    change.pack_parts(LIMIT)
        timer.lap("single: shard changelog records")
        decisions, firsts = gatherer.decide_and_record(fb, [voted[s][0] for s in sorted(voted)])
        timer.lap("single: gather decisions")
        _messages(decisions)
        timer.lap("single: output messages")
        for f in firsts:
            f.pack_parts(LIMIT)
        timer.lap("single: gather changelog records")

    return step


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    config = DedupConfig(home_shards=args.shards)
    raw = [json.dumps({"id": d.id, "text": d.text}).encode() for d in corpus(args.docs)]
    docs = [parse_document(r) for r in raw]
    n = len(docs)
    for r in range(args.rounds):
        timer = Timer()
        for make in (plain, single_stage):
            step = make(config, timer)
            gc.collect()
            for k in range(0, n, args.batch):
                step(docs[k : k + args.batch], k)
        us = {part: cpu / n * 1e6 for part, cpu in timer.parts.items()}
        total = {w: sum(v for p, v in us.items() if p.startswith(w)) for w in ("plain", "single")}
        print(f"round {r}: plain {total['plain']:.1f}, single stage {total['single']:.1f} "
              f"(+{total['single'] - total['plain']:.1f}) CPU µs per document")  # fmt: skip
    for part, cost in us.items():
        print(f"  {part:>40} {cost:6.2f}")
    print(json.dumps({"docs": n, "batch": args.batch, "shards": args.shards, "us": us}))


if __name__ == "__main__":
    main()
