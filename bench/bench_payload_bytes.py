"""Bytes each replica reads from the internal topics per document, with payloads read once.

    python -m bench.bench_payload_bytes --docs 5000 --replicas 1 3

Runs the edge step (`neardup_stream.worker.cluster.ingest.ingest`, as the edge role does) over a real-text
corpus (`bench.corpus`) into one log partition, and the S home shards' votes on every log
record (`ShardVoter`, as the shard role does), and adds up the bytes of the records each role
reads (record keys and values; Kafka's batch framing and any compression are left out). The
votes are counted as one replica holding every shard writes them (one record per log record;
W replicas write W, a few bytes more in all):

- shard role, on every replica: every fingerprint-log record;
- gather role, on the replica owning the log partition: its fingerprint-log records, its
  payload records and the votes of all S shards on them.

With W replicas one of them gathers the (single) log partition; the others only read
fingerprints. `before` is the previous format (payloads inline in every fingerprint-log
record, read by every shard role and by the gather), packed from the same documents.
The edge's input reads (each input once, cluster-wide) are the same in both and left out.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench.corpus import ensure_corpus, read_jsonl
from neardup_stream.config import DedupConfig
from neardup_stream.mapping import InputMapping
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import pack_record
from neardup_stream.worker.cluster.ingest import LogTopics, ingest
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import PayloadRecord
from neardup_stream.worker.decide import DecideRules, InputRecord, Source

LOG = LogTopics("fp", "pl")
V1_HEAD, V1_DOC = 7, 28  # the previous format's record header and per-document header


def measure(docs: list[dict], shards: int, batch: int) -> dict[str, float]:
    """Bytes per document of each kind of record, over the whole stream."""
    config = DedupConfig(home_shards=shards)
    rules = DecideRules("u", "d", "q", InputMapping(), 1 << 20, 64, 1 << 22)
    fingerprinter = DocumentFingerprinter(config)
    voters = [ShardVoter(config, s) for s in range(shards)]
    raw = [json.dumps(d).encode() for d in docs]
    sizes = {"input": 0, "fingerprints": 0, "payloads": 0, "votes": 0, "before": 0}
    offset = 0
    for k in range(0, len(raw), batch):
        records = [
            InputRecord(Source("in", 0, k + i), None, v, 1_700_000_000_000)
            for i, v in enumerate(raw[k : k + batch])
        ]
        sizes["input"] += sum(len(v) for v in raw[k : k + batch])
        out = ingest(records, rules, fingerprinter, LOG, 1, 1.8e9)
        assert not out.dead, out.dead
        logged = [m.value for m in out.messages if m.topic == LOG.fingerprints]
        payloads = [m.value for m in out.messages if m.topic == LOG.payloads]
        for fp, pl in zip(logged, payloads, strict=True):
            env = Envelope.unpack(fp, config.fingerprint_id, "in", offset, 0)
            passages = PayloadRecord.unpack(pl, "in").passages
            key = str(offset).encode()  # the votes' key, as the shard role writes it
            votes = [v.vote_and_record(env.fingerprints)[0] for v in voters]
            sizes["votes"] += len(pack_record(votes)) + len(key)  # one replica holding all
            sizes["fingerprints"] += len(fp)
            sizes["payloads"] += len(pl)
            packed_fb = len(env.fingerprints.pack())
            inline = sum(V1_DOC + len(p.key or b"") + len(p.value) for p in passages)
            sizes["before"] += V1_HEAD + packed_fb + inline
            offset += 1
    return {k: v / len(docs) for k, v in sizes.items()}


def per_replica(b: dict[str, float], replicas: int) -> list[dict[str, float]]:
    """Bytes per document read by each replica, after and before (replica 0 gathers)."""
    out = []
    for r in range(replicas):
        gathers = r == 0
        after = b["fingerprints"] + (
            b["fingerprints"] + b["payloads"] + b["votes"] if gathers else 0
        )
        before = b["before"] + (b["before"] + b["votes"] if gathers else 0)
        out.append({"replica": r, "gathers": gathers, "after": after, "before": before})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=5000)
    ap.add_argument("--shards", type=int, default=24)
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--corpus", type=Path, default=Path("bench/data/corpus.jsonl"))
    args = ap.parse_args()
    docs = [
        {"id": d["id"], "text": d["text"]}
        for d in read_jsonl(ensure_corpus(args.corpus, args.docs))
    ]
    started = time.monotonic()
    b = measure(docs[: args.docs], args.shards, args.batch)
    print(f"# {args.docs} documents, S = {args.shards}, {time.monotonic() - started:.0f} s")
    print("bytes per document:", {k: round(v, 1) for k, v in b.items()})
    for w in args.replicas:
        rows = per_replica(b, w)
        total_after, total_before = sum(r["after"] for r in rows), sum(r["before"] for r in rows)
        for r in rows:
            print(
                f"W={w} replica {r['replica']}{' (gathers)' if r['gathers'] else ''}: "
                f"{r['after']:,.0f} B/doc (before {r['before']:,.0f})"
            )
        print(f"W={w} all replicas: {total_after:,.0f} B/doc (before {total_before:,.0f})")


if __name__ == "__main__":
    main()
