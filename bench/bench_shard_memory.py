"""Scale-out inputs: index bytes per replica and per-document CPU of each role, measured here.

Compares, on the same synthetic stream, in one run (figures side by side):

* **document-partitioned** shards (home shard = id hash mod S, each shard a full engine over
  its own documents; every shard is probed by every document),
* **term-partitioned** shards (band/block key mod S; every shard that owns one of a
  document's keys also needs that document's verification data: exact hash, SimHash, sketch),

and reports index bytes per replica for W = 1, 2, 3 (S shards spread evenly), the cost of one
probe of one shard, and the per-document CPU of the roles of docs/design/scale-out.md:
fingerprinting (ingest), single-process decide (probe + store), fingerprint-record
encode/decode, and, with --bootstrap-servers, kafka-python's cost to produce and consume one
small record against a real broker. Store bytes of term shards are the measured bytes per
stored row times the rows a shard must keep; table bytes are real tables.

    python -m bench.bench_shard_memory --docs 50000 --shards 24 [--bootstrap-servers HOST:PORT]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections.abc import Callable

import numpy as np
from numba import njit

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.batch import Batch
from neardup_stream.fingerprint.hashing import id_key
from neardup_stream.index import kernels as _k
from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.columns import BatchColumns, Rules, StoreColumns, TableArrays
from neardup_stream.parsing import parse_document
from neardup_stream.records import FingerprintRecord

BATCH = 500


def corpus(n: int, words: int, dup_rate: float, seed: int = 11) -> list[Document]:
    """`n` documents of `words` words; a `dup_rate` share are 3%-edited copies of earlier ones."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = np.array(["".join(rng.choice(letters, k)) for k in rng.integers(2, 10, 30_000)])
    rows: list[np.ndarray] = []
    docs = []
    for i in range(n):
        if rows and rng.random() < dup_rate:
            row = rows[int(rng.integers(0, len(rows)))].copy()
            edits = rng.integers(0, words, max(1, words * 3 // 100))
            row[edits] = rng.integers(0, vocab.size, edits.size)
        else:
            row = rng.integers(0, vocab.size, words)
        rows.append(row)
        docs.append(Document(id=f"site-{i % 97}/doc-{i:09d}", text=" ".join(vocab[row])))
    return docs


def _timed(fn: Callable[[], object]) -> float:
    """CPU seconds of `fn` (this process; the machine's other load does not count)."""
    started = time.process_time()
    fn()
    return time.process_time() - started


@njit(cache=True, nogil=True)
def _probe_all(
    docs: BatchColumns,
    tables: TableArrays,
    store: StoreColumns,
    window: np.ndarray,
    threshold: float,
    rules: Rules,
) -> int:
    """Probe every document of `docs` against one shard (no store); returns candidates seen."""
    seen = 0
    for i in range(docs.skip.size):
        seen += _k.probe_verify(i, docs, tables, store, window, threshold, rules).refs.size
    return seen


def _query_batch(dedup: Deduplicator, records: list[FingerprintRecord]) -> Batch:
    """Column arrays of `records` as a batch the kernels can probe with."""
    return Batch.from_records(records, dedup.fingerprinter.bands)


def probe_seconds(shard: Deduplicator, query: Batch, threshold: float) -> float:
    """Seconds to probe and verify every query document against one shard (nothing stored)."""
    args = (
        shard.index.arrays,
        shard.store.arrays(),
        shard.store.window.copy(),
        threshold,
        shard.rules,
    )
    _probe_all(query.docs, *args)  # compile / warm
    return min(_timed(lambda: _probe_all(query.docs, *args)) for _ in range(3))


def role_costs(docs: list[Document], config: DedupConfig) -> tuple[dict, list]:
    """CPU µs/doc of fingerprinting and of single-process decide; the fingerprint records."""
    dedup = Deduplicator(config)
    dedup.process(docs[:BATCH], records=True)  # compile
    dedup = Deduplicator(config)
    texts = [d.text for d in docs]
    fp_s = min(
        _timed(
            lambda: [
                dedup.fingerprinter.batch(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)
            ]
        )
        for _ in range(2)
    )
    records: list[FingerprintRecord] = []
    started = time.process_time()
    for i in range(0, len(docs), BATCH):
        outcomes = dedup.process(docs[i : i + BATCH], now=1.8e9, records=True)
        records += [o.record for o in outcomes if o.record is not None]
    total_s = time.process_time() - started
    encoded = [r.encode() for r in records]
    enc_s = _timed(lambda: [r.encode() for r in records])
    dec_s = _timed(lambda: [FingerprintRecord.decode(b) for b in encoded])
    Deduplicator(config).apply_records(records[:BATCH])  # compile
    replay = Deduplicator(config)
    replay_s = _timed(
        lambda: [
            replay.apply_records(records[i : i + BATCH]) for i in range(0, len(records), BATCH)
        ]
    )
    kernel = Deduplicator(config)
    batches = [_query_batch(kernel, records[i : i + BATCH]) for i in range(0, len(records), BATCH)]

    def store_all() -> None:
        for b in batches:
            kernel.store.reserve(len(b))
            kernel._run(b, decide=False)

    kernel_s = _timed(store_all)
    raw = [json.dumps({"id": d.id, "text": d.text}).encode() for d in docs]
    parse_s = _timed(lambda: [parse_document(r) for r in raw])
    n = len(docs)
    costs = {
        "json_bytes_per_doc": sum(map(len, raw)) / n,
        "parse_us": 1e6 * parse_s / n,
        "docs": n,
        "text_bytes_per_doc": sum(len(t.encode()) for t in texts) / n,
        "fingerprint_us": 1e6 * fp_s / n,
        "process_us": 1e6 * total_s / n,
        "decide_us": 1e6 * max(total_s - fp_s, 0.0) / n,
        "record_encode_us": 1e6 * enc_s / len(records),
        "record_decode_us": 1e6 * dec_s / len(records),
        "replay_store_us": 1e6 * replay_s / len(records),
        "store_kernel_us": 1e6 * kernel_s / len(records),
        "record_bytes": sum(map(len, encoded)) / len(encoded),
        "id_bytes": sum(len(r.doc_id.encode()) for r in records) / len(records),
        "duplicates": sum(r.method != 0 for r in records),
        "single_index_bytes_per_doc": dedup.index_bytes() / len(dedup),
        "single_store_bytes_per_row": dedup.store.nbytes / len(dedup),
    }
    return costs, records


def document_partitioned(
    records: list, config: DedupConfig, shards: int, query: list, fresh: list
) -> dict:
    """Each shard a full engine over its home documents (id hash mod S).

    Probed with `query` (the stream's continuation: copies of earlier documents included) and
    with `fresh` (documents matching nothing: the bare lookup cost of a probe).
    """
    one = config.model_copy(update={"shards": 1})
    engines = [Deduplicator(one) for _ in range(shards)]
    homes = [id_key(r.doc_id) % shards for r in records]
    for s, engine in enumerate(engines):
        mine = [r for r, h in zip(records, homes, strict=True) if h == s]
        for i in range(0, len(mine), BATCH):
            engine.apply_records(mine[i : i + BATCH])
    qbatch = _query_batch(engines[0], query)
    probe_s = [probe_seconds(e, qbatch, config.threshold) for e in engines]
    fbatch = _query_batch(engines[0], fresh)
    fresh_s = [probe_seconds(e, fbatch, config.threshold) for e in engines]
    return {
        "shard_bytes": [e.index_bytes() for e in engines],
        "shard_docs": [len(e) for e in engines],
        "probe_us_per_shard": 1e6 * float(np.mean(probe_s)) / len(query),
        "probe_us_per_doc_all_shards": 1e6 * float(np.sum(probe_s)) / len(query),
        "fresh_probe_us_per_shard": 1e6 * float(np.mean(fresh_s)) / len(fresh),
        "fresh_probe_us_per_doc_all_shards": 1e6 * float(np.sum(fresh_s)) / len(fresh),
    }


def term_partitioned(records: list, config: DedupConfig, shards: int, row_bytes: float) -> dict:
    """Shard s keeps keys with key mod S == s and the store rows of every document they name."""
    tables = [BucketTable(config.bucket_cap) for _ in range(shards)]
    rows = np.zeros(shards, dtype=np.int64)
    for ref, r in enumerate(records):
        keys = np.concatenate((r.simhash_keys, r.lsh_keys)) if r.indexed else r.simhash_keys[:0]
        owners = keys % np.uint32(shards)
        for s in np.unique(owners):
            mine = keys[owners == s]
            tables[int(s)].insert(mine, np.full(mine.size, ref, dtype=np.uint32))
            rows[int(s)] += 1
    registry = 12  # id registry entry per stored row (home shard only in practice)
    shard_bytes = [
        int(t.nbytes + n * row_bytes + n * registry) for t, n in zip(tables, rows, strict=True)
    ]
    return {
        "shard_bytes": shard_bytes,
        "rows_per_doc": float(rows.sum()) / len(records),
    }


def per_replica(shard_bytes: list[int], replicas: int) -> list[int]:
    """Bytes held by each of `replicas` replicas when shard s lives on replica s mod W."""
    out = [0] * replicas
    for s, b in enumerate(shard_bytes):
        out[s % replicas] += b
    return out


def _pipe(bootstrap: str, value: bytes, n: int) -> tuple[float, float, float, float]:
    """Wall and client-CPU seconds to produce `n` records of `value` (acks=all), to consume them.

    CPU is this process's (kafka-python's I/O thread included), not the broker's.
    """
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    topic = f"bench-shard-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1, topic_configs={"max.message.bytes": "8388608"})])
    try:
        producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            batch_size=1 << 20,
            max_request_size=8 << 20,
        )
        started, cpu = time.perf_counter(), time.process_time()
        for i in range(n):
            producer.send(topic, key=i.to_bytes(8, "big"), value=value)
        producer.flush()
        produce_s, produce_cpu = time.perf_counter() - started, time.process_time() - cpu
        producer.close()
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            isolation_level="read_committed",
            max_poll_records=5000,
            fetch_max_bytes=64 << 20,
            max_partition_fetch_bytes=64 << 20,
        )
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        consumer.position(tp)  # connected and positioned before the clock starts
        seen = 0
        started, cpu = time.perf_counter(), time.process_time()
        while seen < n:
            for msgs in consumer.poll(timeout_ms=1000).values():
                seen += len(msgs)
        consume_s, consume_cpu = time.perf_counter() - started, time.process_time() - cpu
        consumer.close()
    finally:
        admin.delete_topics([topic])
        admin.close()
    return produce_s, consume_s, produce_cpu, consume_cpu


def kafka_costs(bootstrap: str, record_bytes: int, n: int, pack: int, doc_bytes: int) -> dict:
    """kafka-python µs per fingerprint (one per Kafka record, `pack` per record) and per doc."""
    out: dict = {"fingerprints": n, "record_bytes": record_bytes, "pack": pack}
    seconds = _pipe(bootstrap, bytes(doc_bytes), n // 5)
    keys = ("produce_wall", "consume_wall", "produce_cpu", "consume_cpu")
    out["document"] = {
        f"{k}_us_per_record": 5e6 * v / n for k, v in zip(keys, seconds, strict=True)
    }
    out["document"]["record_bytes"] = doc_bytes
    for name, per in (("single", 1), ("packed", pack)):
        seconds = _pipe(bootstrap, bytes(record_bytes * per), n // per)
        keys = ("produce_wall", "consume_wall", "produce_cpu", "consume_cpu")
        out[name] = {
            f"{k}_us_per_fingerprint": 1e6 * v / n for k, v in zip(keys, seconds, strict=True)
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--words", type=int, default=800, help="~5.5 KB of text per document")
    parser.add_argument("--dup-rate", type=float, default=0.25)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 6, 24])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--bootstrap-servers", help="also measure kafka-python per-record cost")
    parser.add_argument("--kafka-records", type=int, default=50_000)
    parser.add_argument("--kafka-pack", type=int, default=100, help="fingerprints per record")
    parser.add_argument("--json", help="write results to this file")
    args = parser.parse_args()

    config = DedupConfig()
    docs = corpus(args.docs + args.queries, args.words, args.dup_rate)
    costs, records = role_costs(docs[: args.docs], config)
    _, query = role_costs(docs[args.docs :], config)
    _, fresh = role_costs(corpus(args.queries, args.words, 0.0, seed=99), config)
    n = len(records)
    out: dict = {"roles": costs, "layouts": {}}
    print(
        f"{args.docs} docs of {costs['text_bytes_per_doc']:.0f} B, {costs['duplicates']} copies; "
        f"CPU µs/doc: parse {costs['parse_us']:.1f}, fingerprint {costs['fingerprint_us']:.1f}, decide (probe+store, 1 process) "
        f"{costs['decide_us']:.1f}, record encode {costs['record_encode_us']:.1f} / decode "
        f"{costs['record_decode_us']:.1f}, store-only replay {costs['replay_store_us']:.1f} "
        f"(of which the store/index kernel {costs['store_kernel_us']:.1f}); "
        f"record {costs['record_bytes']:.0f} B"
    )
    print(
        f"{'S':>3} {'layout':>9} {'B/doc':>7} {'W=1 MB':>8} {'W=2 MB':>8} {'W=3 MB':>8} "
        f"{'max/mean':>8} {'probe µs/shard':>14} {'probe µs/doc':>12}   (no-match probes)"
    )
    for s in args.shards:
        doc = document_partitioned(records, config, s, query, fresh)
        term = term_partitioned(records, config, s, costs["single_store_bytes_per_row"])
        out["layouts"][s] = {"document": doc, "term": term}
        for name, lay in (("document", doc), ("term", term)):
            reps = {w: per_replica(lay["shard_bytes"], w) for w in (1, 2, 3)}
            lay["replica_bytes"] = reps
            probe = (
                f"{lay['probe_us_per_shard']:>14.2f} {lay['probe_us_per_doc_all_shards']:>12.1f}"
                f"   ({lay['fresh_probe_us_per_shard']:.2f} / "
                f"{lay['fresh_probe_us_per_doc_all_shards']:.1f})"
                if "probe_us_per_shard" in lay
                else f"{'-':>14} {'-':>12}"
            )
            spread = max(lay["shard_bytes"]) / float(np.mean(lay["shard_bytes"]))
            print(
                f"{s:>3} {name:>9} {sum(lay['shard_bytes']) / n:>7.0f} "
                + " ".join(f"{max(reps[w]) / 2**20:>8.1f}" for w in (1, 2, 3))
                + f" {spread:>8.3f} {probe}"
            )
        print(f"    term-partitioned keeps {term['rows_per_doc']:.2f} store rows per document")
    if args.bootstrap_servers:
        kc = kafka_costs(
            args.bootstrap_servers,
            int(costs["record_bytes"]),
            args.kafka_records,
            args.kafka_pack,
            int(costs["json_bytes_per_doc"]),
        )
        out["kafka"] = kc
        d = kc["document"]
        print(
            f"kafka-python, {d['record_bytes']} B documents, µs per record (wall / client CPU): "
            f"produce {d['produce_wall_us_per_record']:.1f} / {d['produce_cpu_us_per_record']:.1f}"
            f", consume {d['consume_wall_us_per_record']:.1f} / "
            f"{d['consume_cpu_us_per_record']:.1f}"
        )
        for name in ("single", "packed"):
            per = 1 if name == "single" else kc["pack"]
            print(
                f"kafka-python, {kc['record_bytes']} B fingerprints, {per} per record, µs per "
                f"fingerprint (wall / client CPU): produce "
                f"{kc[name]['produce_wall_us_per_fingerprint']:.1f} / "
                f"{kc[name]['produce_cpu_us_per_fingerprint']:.1f}, consume "
                f"{kc[name]['consume_wall_us_per_fingerprint']:.1f} / "
                f"{kc[name]['consume_cpu_us_per_fingerprint']:.1f}"
            )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
