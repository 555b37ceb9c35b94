"""Per-role CPU cost of the scale-out path, and the throughput model it gives.

    python -m bench.bench_scale_cpu --docs 20000 --shards 24 --replicas 1 3 [--prefill N]

Runs each role's pure work in this process on one core, in fingerprint-log records of
`--batch` documents, as the roles do, and times it (process CPU), one variant after the
other (so no variant's tables evict another's from the caches while it is timed):

- edge: parse + fingerprint + pack the log record (once per document, cluster-wide);
- shard: unpack the record (once per replica) + the votes of one replica holding S/W shards
  (shards s with s mod W == 0): `separate`, a `ShardVoter` per shard (one probe per shard),
  and `merged`, one `ReplicaVoter` (one probe of one merged table per replica);
- gather: decide from S votes + build the outputs (once per document);
- one engine: a plain `Deduplicator` deciding and storing the same fingerprints.

`--prefill N` first puts N other documents into every variant's index, untimed, so the costs
are those of an index of N + docs documents.

Model, W replicas of one core each: a replica spends per document of the stream
edge/W + unpack + shard(W) + gather/W, and the cluster decides 1 / that documents/s.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

import numpy as np

from bench.bench_scale_memory import corpus
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.parsing import parse_document
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.worker import codec


def log_records(config: DedupConfig, n: int, batch: int) -> tuple[list[bytes], float]:
    """The packed fingerprint-log records of n documents, and the edge CPU they took."""
    raw = [json.dumps({"id": d.id, "text": d.text}).encode() for d in corpus(n)]
    fingerprinter = DocumentFingerprinter(config)
    fingerprinter.batch([parse_document(raw[0])], [""], np.arange(1), 1.8e9)  # type: ignore[list-item]
    records, cost = [], 0.0
    for k in range(0, n, batch):
        t = time.process_time()
        docs = [parse_document(r) for r in raw[k : k + batch]]
        fb = fingerprinter.batch(docs, [""] * len(docs), np.arange(k, k + len(docs)), 1.8e9)  # type: ignore[arg-type]
        records.append(fb.pack())
        cost += time.process_time() - t
    return records, cost


def run(config: DedupConfig, records: list[bytes], timed_from: int, vote: Callable) -> float:
    """CPU seconds `vote(fb)` takes on the records from `timed_from` on (earlier: prefill)."""
    cost = 0.0
    for r, data in enumerate(records):
        fb = FingerprintBatch.unpack(data, config.fingerprint_id)
        t = time.process_time()
        vote(fb)
        if r >= timed_from:
            cost += time.process_time() - t
    return cost


def merged(
    config: DedupConfig, records: list[bytes], timed_from: int, held: list[int]
) -> tuple[float, float]:
    """CPU seconds of one `ReplicaVoter` holding `held`, and (when it holds every shard, so
    every vote is here) of the gather step and its outputs, over the timed records."""
    replica, gatherer = ReplicaVoter(config, held), Gatherer(config)
    gather = [0.0]
    timed_at = timed_from * (len(FingerprintBatch.unpack(records[0], config.fingerprint_id)))

    def vote(fb: FingerprintBatch) -> None:
        votes = replica.vote_and_record(fb)
        if len(held) == config.home_shards:
            t = time.process_time()
            for d in gatherer.decide(fb, [v for v, _ in votes.values()]):
                if d.is_duplicate:
                    codec.duplicate_message("d", d)
                else:
                    codec.unique_message("u", d, b"")
            if fb.positions[0] >= timed_at:
                gather[0] += time.process_time() - t

    cost = run(config, records, timed_from, vote)
    return cost - gather[0], gather[0]


def one_engine(config: DedupConfig) -> Callable[[FingerprintBatch], None]:
    """A plain `Deduplicator` deciding and storing each record's documents."""
    engine = Deduplicator(config.model_copy(update={"home_shards": 1}))

    def vote(fb: FingerprintBatch) -> None:
        engine.vote(fb.rows(np.arange(len(fb)), np.ones(len(fb), dtype=np.bool_)), True)

    return vote


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--prefill", type=int, default=0)
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--variants", nargs="+", default=["merged", "separate", "engine"])
    args = ap.parse_args()
    config = DedupConfig(home_shards=args.shards)
    total = args.prefill + args.docs
    records, edge = log_records(config, total, args.batch)
    timed_from = args.prefill // args.batch
    n = total - timed_from * args.batch
    us: dict[str, float] = {"edge": edge / total * 1e6}
    t = time.process_time()
    for data in records:
        FingerprintBatch.unpack(data, config.fingerprint_id)
    us["unpack"] = (time.process_time() - t) / total * 1e6
    # Untimed warm-up: the first call of each kernel loads it from numba's cache (or
    # compiles it), ~0.5 s that would otherwise be billed to whichever variant runs first.
    warm = records[:2]
    merged(config, warm, len(warm), list(range(args.shards)))
    run(config, warm, len(warm), ShardVoter(config, 0).vote_and_record)
    run(config, warm, len(warm), one_engine(config))
    if "engine" in args.variants:
        us["engine"] = run(config, records, timed_from, one_engine(config)) / n * 1e6
    for w in args.replicas:
        held = [s for s in range(args.shards) if s % w == 0]
        if "separate" in args.variants:
            voters = [ShardVoter(config, s) for s in held]

            def separate(fb: FingerprintBatch, voters: list[ShardVoter] = voters) -> None:
                for v in voters:
                    v.vote_and_record(fb)

            us[f"separate W={w}"] = run(config, records, timed_from, separate) / n * 1e6
            del voters
        if "merged" in args.variants:
            cost, gather = merged(config, records, timed_from, held)
            us[f"merged W={w}"] = cost / n * 1e6
            if gather:
                us["gather"] = gather / n * 1e6
    print(f"{n} documents timed after {args.prefill} prefilled, S = {args.shards}, "
          f"{args.batch} per log record; CPU µs per document of the stream:")  # fmt: skip
    for role, cost in us.items():
        print(f"  {role:>14} {cost:8.1f}")
    gather = us.get("gather", 0.0)
    print("  W | variant | shard µs per stream doc per replica | replica µs/doc | cluster docs/s")
    for w in args.replicas:
        for variant in ("separate", "merged"):
            if f"{variant} W={w}" in us:
                shard = us["unpack"] + us[f"{variant} W={w}"]
                per = us["edge"] / w + shard + gather / w
                print(f"  {w} | {variant} | {shard:.1f} | {per:.1f} | {1e6 / per:,.0f}")
    print(json.dumps({"docs": n, "prefill": args.prefill, "shards": args.shards, "us": us}))


if __name__ == "__main__":
    main()
