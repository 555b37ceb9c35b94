"""Restore time of one home shard from its changelog, through a real broker.

    python -m bench.bench_shard_restore --docs 1000000 --bootstrap 127.0.0.1:19092

Builds a shard of N documents (every document homed on it: S = 1), publishes its recorded
changes to a fresh changelog topic exactly as the shard role does, then times what a replica
that gains the shard does: read the partition to its last stable offset and apply every
change. Printed next to the time the same documents took to vote on, as a ratio.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid

import numpy as np
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from prometheus_client import CollectorRegistry

from neardup_stream.config import DedupConfig
from neardup_stream.models import Document
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.worker import clients
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.replay import ROLE_POLICY, each, replay
from neardup_stream.worker.settings import KafkaSettings, Settings


def texts(n: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    words = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(6)) for _ in range(50000)
    ]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(40, 120))) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--bootstrap", default="127.0.0.1:19092")
    args = ap.parse_args()
    config = DedupConfig(home_shards=1)
    fingerprinter = DocumentFingerprinter(config)
    voter = ShardVoter(config, 0)
    topic = f"bench-shard-changelog-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=args.bootstrap)
    admin.create_topics({topic: {"num_partitions": 1, "replication_factor": 1,
                                 "configs": {"max.message.bytes": "16777216"}}})  # fmt: skip
    admin.close()
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap, max_request_size=16777216, linger_ms=20, acks="all"
    )
    all_texts, voted, size = texts(args.docs), 0.0, 0
    for k in range(0, args.docs, 2000):
        docs = [Document(id=f"d{k + i}", text=t) for i, t in enumerate(all_texts[k : k + 2000])]
        fb = fingerprinter.batch(docs, [""] * len(docs), np.arange(k, k + len(docs)), 1.8e9)
        t0 = time.perf_counter()
        _, changes = voter.vote_and_record(fb)
        voted += time.perf_counter() - t0
        for ch in changes:
            data = ch.pack()
            size += len(data)
            producer.send(topic, data, partition=0)
    producer.flush()
    producer.close()
    restored = ShardVoter(config, 0)
    reader = clients.make_reader(Settings(kafka=KafkaSettings(bootstrap_servers=args.bootstrap)))
    t0 = time.perf_counter()
    registry = CollectorRegistry()
    replay(
        reader,
        {TopicPartition(topic, 0): None},
        each(lambda d: restored.apply(ShardChange.unpack(d))),
        ROLE_POLICY,
        lambda: False,
        build_metrics(registry),
    )
    applied = int(registry.get_sample_value("neardup_restored_records_total") or 0)
    skipped = registry.get_sample_value(
        "neardup_restore_skipped_records_total", {"reason": "corrupt"}
    )
    took = time.perf_counter() - t0
    reader.close()
    assert len(restored) == len(voter) == args.docs and not skipped
    print(f"shard of {args.docs} documents, changelog {size / 2**20:.0f} MiB in {applied} records")
    print(f"restore (read + apply): {took:.1f} s = {args.docs / took:,.0f} docs/s")
    print(f"voting the same documents: {voted:.1f} s; restore / vote = {took / voted:.2f}")


if __name__ == "__main__":
    main()
