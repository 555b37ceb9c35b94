"""Section `restore`: rebuilding a ``--restore-docs`` index (default 1,000,000) from the changelog.

A pool of corpus texts (``--pool-size``, default 20,000) is fingerprinted once with
``Deduplicator().process(..., records=True)``; copy ``c`` of the pool is written with ids
``r<c>-<id>`` (``duplicate_of``/``representative`` renamed alike) and its bucket keys and
exact hash XOR-ed with a per-copy constant. The 1M records are then 50 disjoint corpora, each
with the corpus's key sharing, rather than 50 identical copies piling into the same buckets.
They go to a fresh compacted 1-partition topic through a plain (non-transactional) producer,
packed as the worker packs them (``neardup_stream.worker.changelog``: the records of each ``--max-batch``
inputs in messages of up to 512 KiB).

A worker is started with that changelog and an empty input topic; reported are the restore
time from its log line ``restored partitions [0]: N records replayed in X s`` (goal < 60 s),
records/s, the time from process spawn to ``/healthz`` 200 (includes interpreter start,
imports, JIT and the group join) and its RSS. Then, in this process,
``neardup_stream.worker.restore.restore_index`` is timed on the same topic, and separately its parts:
Kafka fetch alone, record decoding, index insertion (``Deduplicator.apply_records`` in
10,000-record chunks, like the reader's polls).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import re
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka import TopicPartition
from prometheus_client import CollectorRegistry, generate_latest

from bench.kafka_broker import REPO_ROOT, Topics, produce_bulk, worker_settings
from bench.kafka_docs import BenchError, DocSource, log
from bench.kafka_metrics import metric_values
from bench.kafka_variants import variants, warm
from bench.kafka_worker import WorkerProcess, WorkerTopics, read_cpu_seconds
from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Document
from neardup_stream.records import FingerprintRecord
from neardup_stream.worker import changelog, clients
from neardup_stream.worker.changelog import pipeline_of
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.restore import restore_index

RESTORED_RE = re.compile(r"restored partitions \[([\d, ]*)\]: (\d+) records replayed in ([\d.]+) s")


def fingerprint_pool(src: DocSource, size: int) -> list[FingerprintRecord]:
    """Records of the first `size` texts, made by the engine itself (1,000 per call)."""
    dedup = Deduplicator()
    pool: list[FingerprintRecord] = []
    for start in range(0, size, 1000):
        docs = [
            Document(id=f"p{i:06d}", text=src.text(i).text)
            for i in range(start, min(size, start + 1000))
        ]
        pool.extend(o.record for o in dedup.process(docs, records=True) if o.record is not None)
    return pool


def _renamed(doc_id: str | None, copy: int) -> str | None:
    return None if doc_id is None else f"r{copy}-{doc_id}"


def changelog_messages(
    pool: list[FingerprintRecord], n: int, batch: int
) -> Iterator[tuple[bytes, bytes]]:
    """`n` records as the worker writes them: per `batch` inputs, packed (`neardup_stream.worker.changelog`)
    into messages keyed `<partition>:<first offset>:<i>`."""
    records = (value for _, value in changelog_records(pool, n))
    for first in range(0, n, batch):
        chunk = list(itertools.islice(records, batch))
        for i, value in enumerate(changelog.pack(chunk)):
            yield f"0:{first}:{i}".encode(), value


def changelog_records(pool: list[FingerprintRecord], n: int) -> Iterator[tuple[bytes, bytes]]:
    """`n` (key, value) changelog records: copy c of the pool, ids and bucket keys varied by c."""
    for i in range(n):
        c, j = divmod(i, len(pool))
        p = pool[j]
        x = zlib.crc32(c.to_bytes(4, "little")) if c else 0
        rec = dataclasses.replace(
            p,
            doc_id=f"r{c}-{p.doc_id}",
            duplicate_of=_renamed(p.duplicate_of, c),
            representative=_renamed(p.representative, c),
            exact=(int(p.exact[0]) ^ (x | x << 32), int(p.exact[1])),
            lsh_keys=p.lsh_keys ^ x,
            simhash_keys=p.simhash_keys ^ x,
        )
        yield rec.doc_id.encode(), rec.encode()


def inprocess_restore(
    bootstrap: str, topic: str, expected: int, pool: list[FingerprintRecord]
) -> dict:
    """`restore_index` in this process, then its parts: fetch, decode, insert."""
    settings = worker_settings(bootstrap, "unused", "bench", 500, False)
    config = DedupConfig()
    Deduplicator(config).apply_records(pool[:100])  # compile the replay kernels first
    tp = TopicPartition(topic, 0)

    reader = clients.make_reader(settings)
    started, cpu_started = time.perf_counter(), time.process_time()
    registry = CollectorRegistry()
    restored = restore_index(
        reader,
        lambda: False,
        topic=topic,
        partition=0,
        config=config,
        pipeline=pipeline_of(settings),
        metrics=build_metrics(registry),
    )
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    reader.close(autocommit=False)
    dedup = restored.state
    assert dedup is not None
    text = generate_latest(registry).decode()
    replayed = int(sum(metric_values(text, "neardup_restored_records_total").values()))
    skipped = sum(metric_values(text, "neardup_restore_skipped_records_total").values())
    index_bytes = dedup.index_bytes()
    del dedup

    reader = clients.make_reader(settings)
    reader.assign([tp])
    reader.seek_to_beginning(tp)
    end = reader.end_offsets([tp])[tp]
    values: list[bytes] = []
    started = time.perf_counter()
    while reader.position(tp) < end:
        for msgs in reader.poll(timeout_ms=500).values():
            values.extend(r for m in msgs if m.value is not None for r in changelog.unpack(m.value))
    fetch = time.perf_counter() - started
    reader.close(autocommit=False)

    dedup = Deduplicator(config)
    decode = insert = 0.0
    for start in range(0, len(values), 10_000):
        t0 = time.perf_counter()
        records = [FingerprintRecord.decode(v) for v in values[start : start + 10_000]]
        t1 = time.perf_counter()
        dedup.apply_records(records)
        t2 = time.perf_counter()
        decode += t1 - t0
        insert += t2 - t1
    if replayed != expected or len(values) != expected:
        log(f"  warning: replayed {replayed:,}, fetched {len(values):,}, expected {expected:,}")
    return {
        "restore_partitions_seconds": round(total, 2),
        "restore_partitions_cpu_seconds": round(cpu, 2),
        "skipped": skipped,
        "records_per_s": round(replayed / total, 1),
        "records": replayed,
        "index_bytes": index_bytes,
        "fetch_only_seconds": round(fetch, 2),
        "decode_seconds": round(decode, 2),
        "insert_seconds": round(insert, 2),
    }


def worker_restore(
    bootstrap: str,
    topics: Topics,
    changelog: str,
    name: str,
    args: argparse.Namespace,
    cwd: Path = REPO_ROOT,
) -> dict[str, Any]:
    """A worker (of checkout `cwd`) restoring `changelog`: its log line, time to ready, RSS."""
    wt = WorkerTopics.fresh(topics, name, topics.create(f"{name}.input"), changelog)
    group = f"{topics.tag}-{name}"
    w = WorkerProcess(bootstrap, wt, group, args.log_dir / f"{group}.log", args.max_batch, cwd=cwd)
    try:
        w.start()
        ready = w.wait_ready(args.timeout)
        cpu = read_cpu_seconds(w.pid)
        rss = w.rss_bytes()
        _, metrics = w.http("/metrics")
    finally:
        w.stop()
    m = RESTORED_RE.search(w.log_text())
    if m is None:
        raise BenchError(f"no 'restored N records' line in the worker log:\n{w.log_tail()}")
    records, seconds = int(m[2]), float(m[3])
    gauge = metric_values(metrics, "neardup_restore_seconds").get("")
    log(f"  -> {records:,} records in {seconds:.1f}s ({records / max(seconds, 1e-9):,.0f}/s)")
    return {
        "records_restored": records,
        "restore_seconds": seconds,
        "restore_seconds_metric": gauge,
        "records_per_s": round(records / seconds, 1) if seconds else None,
        "spawn_to_ready_seconds": round(ready - w.spawned_at, 2),
        "cpu_seconds_spawn_to_ready": None if cpu is None else round(cpu, 2),
        "rss_bytes_after_restore": rss,
    }


def section_restore(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict:
    n = args.restore_docs
    pool_size = min(args.pool_size, n)
    log(f"fingerprinting a pool of {pool_size:,} texts")
    started = time.perf_counter()
    pool = fingerprint_pool(src, pool_size)
    fp_seconds = time.perf_counter() - started
    changelog = topics.create("restore.changelog", compact=True)
    log(f"writing {n:,} changelog records to {changelog}, packed per {args.max_batch} inputs")
    produced = produce_bulk(bootstrap, changelog, changelog_messages(pool, n, args.max_batch))
    log(
        f"  {n:,} records in {produced['records']:,} messages, "
        f"{produced['bytes'] / 1e6:,.0f} MB in {produced['seconds']:.1f}s"
    )
    warm(REPO_ROOT)  # the start-up caches, as `make install` leaves them
    others = variants(args)
    log("worker restore")
    worker = worker_restore(bootstrap, topics, changelog, "restore", args)
    out: dict[str, Any] = {
        "records_written": n,
        "messages_written": produced["records"],
        "changelog_bytes": produced["bytes"],
        "record_bytes_mean": round(produced["bytes"] / max(1, n), 1),
        "pool_size": len(pool),
        "pool_fingerprint_seconds": round(fp_seconds, 2),
        "produce": produced,
        "worker": worker,
        "variants": {},
    }
    for name, path in others.items():
        log(f"worker restore, variant {name} ({path})")
        out["variants"][name] = worker_restore(
            bootstrap, topics, changelog, f"restore-{name}", args, path
        )
    if not args.skip_inprocess:
        log("in-process restore_partitions and its parts")
        out["in_process"] = inprocess_restore(bootstrap, changelog, n, pool)
    return out
