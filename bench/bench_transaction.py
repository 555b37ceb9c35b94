"""What one Kafka transaction costs the worker's client, the floor under every role's batch.

    python -m bench.bench_transaction --bootstrap-servers 127.0.0.1:9092 [--transactions 200]

Each role of a replica commits its batch in one transaction (`runtime.publisher`): records,
then the consumer offsets, then the commit. This runs that sequence alone, back to back, with
the worker's own producer settings (`clients.producer_config`), for batches of 1, 10 and 100
small records, and prints per transaction the wall time (p50 / p99) and the CPU of the whole
process (every thread: kafka-python's network threads do most of it). At low input rates a
role's batches are a few documents each, so a paced document's CPU is mostly this figure
times the transactions it passes through (three hops, one transaction per shard replica):
compare it with `bench.bench_cluster_cost`'s paced CPU by role.
"""

from __future__ import annotations

import argparse
import resource
import time

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from bench.kafka_docs import log
from bench.kafka_latency import percentile
from neardup_stream.worker import clients
from neardup_stream.worker.settings import Settings


def cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def run(bootstrap: str, transactions: int, records: int) -> dict[str, float]:
    """`transactions` back-to-back transactions of `records` 200-byte records and one offset
    commit each, on a topic and group of their own: wall p50 / p99 (ms), CPU (ms) each."""
    tag = f"bench-txn-{records}-{int(time.time() * 1000)}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(tag, 1, 1)])
    settings = Settings(
        kafka={"bootstrap_servers": bootstrap, "client_id": tag},
        worker={"group_id": tag, "instance_id": "bench"},
    )
    producer = clients.make_producer(settings)
    consumer = KafkaConsumer(tag, bootstrap_servers=bootstrap, group_id=tag)
    consumer.poll(timeout_ms=5000)  # joined: its group metadata fences the transactions
    tp, payload = TopicPartition(tag, 0), b"x" * 200
    try:
        walls, started = [], cpu_s()
        for i in range(transactions):
            t0 = time.perf_counter()
            producer.begin_transaction()
            for _ in range(records):
                producer.send(tag, payload)
            offsets = {tp: OffsetAndMetadata(i, "", -1)}
            producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
            producer.commit_transaction()
            walls.append(time.perf_counter() - t0)
        used = cpu_s() - started
    finally:
        producer.close(timeout=5)
        consumer.close()
        admin.delete_topics([tag])
        admin.close()
    return {
        "wall_p50_ms": round(percentile(walls, 0.5) * 1000, 1),
        "wall_p99_ms": round(percentile(walls, 0.99) * 1000, 1),
        "cpu_ms": round(used / transactions * 1000, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap-servers", default="127.0.0.1:19092")
    ap.add_argument("--transactions", type=int, default=200)
    args = ap.parse_args()
    log(f"{args.transactions} transactions per batch size, kafka-python, the worker's settings")
    for records in (1, 10, 100):
        figures = run(args.bootstrap_servers, args.transactions, records)
        print(f"{records:>4} records per transaction: {figures}")


if __name__ == "__main__":
    main()
