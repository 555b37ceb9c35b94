"""Section `throughput`: the worker against the bare transactional pipe, in one run.

An input topic (1 partition) is pre-loaded with ``--docs`` documents (`bench.kafka_docs`).
The same topic is then consumed three times, each by its own consumer group, and timed from
the moment the first batch has been fetched (for the worker: the first ``/healthz`` 200,
right after its first poll and its restore) to the moment all ``N`` input offsets are
committed:

* ``worker``: ``python -m neardup_stream.worker`` with default settings and ``--max-batch``, its own group,
  output topics and changelog. It runs first because the pipes replay its output (below);
* ``pipe, plain``: a bare consume -> produce loop with the worker's own client settings
  (``neardup_stream.worker.clients``): read_committed group consumer, idempotent producer, per batch of
  ``--max-batch`` records: send, flush, commit the offsets (the at-least-once path minus
  parsing and deduplication);
* ``pipe, transactional``: the same loop with the worker's transactional producer: per batch
  begin, send, ``send_offsets_to_transaction``, commit (the exactly-once path minus parsing
  and deduplication; its commit is synchronous, the worker overlaps its own with the next
  batch).

The pipes send, per input record, the very messages the worker sent for it (read back from
its duplicate and changelog topics; unique documents are the input bytes plus the worker's
decision header), and per batch its changelog records packed as the worker packs them: same topics, sizes and headers, so the only difference left is the
worker's own work. ``--repeat k`` runs the three k times, interleaved, and reports medians.
``--variant NAME=PATH`` (repeatable) runs the worker of another checkout (e.g. a proposed
change) in each round too, on the same input, reported beside this one's worker and pipes.
With ``--profile`` one more worker run is sampled by py-spy (`bench.kafka_profile`); it is
not part of the figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import OffsetAndMetadata, TopicPartition

from bench.kafka_broker import REPO_ROOT, Topics, produce_bulk, read_committed, worker_settings
from bench.kafka_docs import BenchError, DocSource, log
from bench.kafka_metrics import decision_counts, histogram_quantiles
from bench.kafka_profile import py_spy, py_spy_wrapper, summarize
from bench.kafka_variants import variants, warm
from bench.kafka_worker import WorkerProcess, WorkerTopics, run_until_committed
from neardup_stream.records import FingerprintRecord
from neardup_stream.worker import changelog, clients

UNIQUE_HEADERS = [("neardup.decision", b"unique")]  # what the worker adds to unique documents


@dataclass(frozen=True)
class Mirror:
    """The worker's messages per document id, so the pipes send the same bytes undecided."""

    duplicates: dict[bytes, tuple[bytes, list[tuple[str, bytes]]]]  # key -> (value, headers)
    records: dict[bytes, bytes]  # document id -> its changelog record

    @classmethod
    def read(cls, bootstrap: str, wt: WorkerTopics) -> Mirror:
        dups = {m.key: (m.value, list(m.headers)) for m in read_committed(bootstrap, wt.duplicate)}
        records = {}
        for m in read_committed(bootstrap, wt.changelog):
            for raw in changelog.unpack(m.value):
                records[FingerprintRecord.decode(raw).doc_id.encode()] = raw
        return cls(dups, records)

    def changelog_messages(self, keys: list[bytes], partition: int, first: int) -> list:
        """The changelog messages the worker wrote for a batch: its records, packed."""
        stored = [self.records[k] for k in keys if k in self.records]
        return [
            (f"{partition}:{first}:{i}".encode(), value)
            for i, value in enumerate(changelog.pack(stored))
        ]


def run_pipe(
    bootstrap: str,
    topics: Topics,
    input_topic: str,
    n: int,
    transactional: bool,
    mirror: Mirror,
    args: argparse.Namespace,
    name: str,
) -> dict:
    """Consume `n` records and send the worker's messages for them, committing per batch."""
    kind = "eos" if transactional else "plain"
    max_batch, timeout = args.max_batch, args.timeout
    unique_topic = topics.create(f"{name}.unique")
    duplicate_topic = topics.create(f"{name}.duplicate")
    cl_topic = topics.create(f"{name}.changelog", compact=True)
    settings = worker_settings(bootstrap, f"{topics.tag}-{name}", "bench", max_batch, transactional)
    consumer = clients.make_consumer(settings)
    producer = clients.make_producer(settings)
    committed = batches = 0
    positions: dict[TopicPartition, int] = {}
    first = None
    cpu_first = 0.0
    deadline = time.monotonic() + timeout
    try:
        consumer.subscribe([input_topic])
        last_log = time.monotonic()
        while committed < n:
            if time.monotonic() > deadline:
                raise BenchError(f"pipe ({kind}) committed {committed:,}/{n:,} in {timeout:.0f}s")
            batch = consumer.poll(timeout_ms=500, max_records=max_batch)
            if not batch:
                continue
            if first is None:
                first = time.monotonic()
                cpu_first = time.process_time()
            offsets: dict[TopicPartition, OffsetAndMetadata] = {}
            records = [m for msgs in batch.values() for m in msgs]
            if transactional:
                producer.begin_transaction()
            futures = []
            for m in records:
                offsets[TopicPartition(m.topic, m.partition)] = OffsetAndMetadata(
                    m.offset + 1, "", -1
                )
                dup = mirror.duplicates.get(m.key)
                if dup is None:
                    f = producer.send(
                        unique_topic, key=m.key, value=m.value, headers=UNIQUE_HEADERS
                    )
                else:
                    f = producer.send(duplicate_topic, key=m.key, value=dup[0], headers=dup[1])
                futures.append(f)
            head = records[0]
            packs = mirror.changelog_messages([m.key for m in records], head.partition, head.offset)
            for key, value in packs:
                futures.append(producer.send(cl_topic, key=key, value=value, partition=0))
            if transactional:
                producer.send_offsets_to_transaction(offsets, consumer.group_metadata())
                producer.commit_transaction()
            else:
                producer.flush()
                for f in futures:
                    f.get(timeout=30)
                consumer.commit(offsets)
            positions.update({tp: o.offset for tp, o in offsets.items()})
            committed = sum(positions.values())
            batches += 1
            if time.monotonic() - last_log > 10:
                last_log = time.monotonic()
                rate = committed / (last_log - first)
                log(f"  pipe ({kind}): {committed:,}/{n:,} committed ({rate:,.0f} docs/s)")
        seconds = time.monotonic() - (first or time.monotonic())
        cpu = time.process_time() - cpu_first
    finally:
        consumer.close(autocommit=False)
        producer.close(timeout=10)
    return {
        "docs": committed,
        "batches": batches,
        "seconds": round(seconds, 2),
        "docs_per_s": round(committed / seconds, 1),
        "cpu_seconds": round(cpu, 2),
        "docs_per_cpu_s": round(committed / cpu, 1) if cpu > 0 else None,
    }


def run_worker(
    bootstrap: str,
    wt: WorkerTopics,
    group: str,
    n: int,
    args: argparse.Namespace,
    cwd: Path = REPO_ROOT,
) -> dict:
    """Time a worker (of the checkout `cwd`) from ready to all `n` input offsets committed."""
    w = WorkerProcess(bootstrap, wt, group, args.log_dir / f"{group}.log", args.max_batch, cwd=cwd)
    run = run_until_committed(w, n, args.timeout)
    return {
        "docs": run.docs,
        "seconds": round(run.seconds, 2),
        "docs_per_s": round(run.docs_per_s, 1),
        "startup_seconds": round(run.startup_seconds, 2),
        "cpu_seconds": None if run.cpu_seconds is None else round(run.cpu_seconds, 2),
        "docs_per_cpu_s": None if run.docs_per_cpu_s is None else round(run.docs_per_cpu_s, 1),
        "batch_seconds_p50_p99": histogram_quantiles(
            run.metrics, "neardup_batch_processing_seconds", (0.5, 0.99)
        ),
        "decisions": decision_counts(run.metrics),
    }


def profile_worker(
    bootstrap: str, topics: Topics, input_topic: str, n: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One more worker run under py-spy; returns the summary (and where the raw data is)."""
    exe = py_spy()
    if exe is None:
        log("  py-spy not found (pip install py-spy): no profile")
        return {"skipped": "py-spy not installed"}
    raw = args.log_dir / "worker-profile.txt"
    wt = WorkerTopics.fresh(topics, "profiled", input_topic)
    group = f"{topics.tag}-profiled"
    w = WorkerProcess(
        bootstrap,
        wt,
        group,
        args.log_dir / f"{group}.log",
        args.max_batch,
        wrapper=py_spy_wrapper(exe, raw, args.profile_rate),
    )
    run = run_until_committed(w, n, args.timeout)
    assert w.proc is not None
    w.proc.wait(60)  # py-spy writes its file when the worker has exited
    out = summarize(raw)
    out.update(
        raw_samples=str(raw),
        docs_per_s_under_profiler=round(run.docs_per_s, 1),
        rate_hz=args.profile_rate,
        includes="start-up and the whole run of the worker process, every thread",
    )
    return out


def section_throughput(
    bootstrap: str, topics: Topics, src: DocSource, args: argparse.Namespace
) -> dict:
    n = args.docs
    input_topic = topics.create("input")
    log(f"pre-loading {n:,} documents into {input_topic}")
    preload = produce_bulk(bootstrap, input_topic, (src.doc(i, "d") for i in range(n)))
    log(
        f"  {preload['records']:,} docs, {preload['bytes'] / 1e6:,.0f} MB "
        f"in {preload['seconds']:.1f}s"
    )
    warm(REPO_ROOT)  # the start-up caches, as `make install` leaves them
    out: dict[str, Any] = {"preload": preload, "input_bytes_per_doc": preload["bytes"] / n}
    others = variants(args)
    runs: dict[str, list[dict]] = {"worker": [], "pipe_plain": [], "pipe_transactional": []}
    runs.update({f"variant_{name}": [] for name in others})
    mirror: Mirror | None = None
    for r in range(args.repeat):
        sfx = str(r + 1) if args.repeat > 1 else ""
        log(f"worker{f' (round {sfx})' if sfx else ''}")
        wt = WorkerTopics.fresh(topics, f"worker{sfx}", input_topic)
        runs["worker"].append(run_worker(bootstrap, wt, f"{topics.tag}-worker{sfx}", n, args))
        log(f"  -> {runs['worker'][-1]['docs_per_s']:,.0f} docs/s")
        for name, path in others.items():
            log(f"worker variant {name} ({path})")
            vt = WorkerTopics.fresh(topics, f"variant-{name}{sfx}", input_topic)
            group = f"{topics.tag}-variant-{name}{sfx}"
            runs[f"variant_{name}"].append(run_worker(bootstrap, vt, group, n, args, path))
            log(f"  -> {runs[f'variant_{name}'][-1]['docs_per_s']:,.0f} docs/s")
        if mirror is None:
            mirror = Mirror.read(bootstrap, wt)
            out["mirror"] = {
                "duplicates": len(mirror.duplicates),
                "changelog_records": len(mirror.records),
            }
        for transactional in (False, True):
            kind = "transactional" if transactional else "plain"
            log(f"bare pipe, {kind}")
            runs[f"pipe_{kind}"].append(
                run_pipe(
                    bootstrap,
                    topics,
                    input_topic,
                    n,
                    transactional,
                    mirror,
                    args,
                    f"pipe-{kind}{sfx}",
                )
            )
            log(f"  -> {runs[f'pipe_{kind}'][-1]['docs_per_s']:,.0f} docs/s")
    for key, rounds in runs.items():
        rates = [r["docs_per_s"] for r in rounds]
        per_cpu = [r["docs_per_cpu_s"] for r in rounds if r.get("docs_per_cpu_s")]
        out[key] = {
            "docs_per_s": statistics.median(rates),
            "docs_per_cpu_s": statistics.median(per_cpu) if per_cpu else None,
            "runs": rounds,
        }
    for pipe in ("transactional", "plain"):
        out[f"ratio_worker_vs_{pipe}_pipe"] = round(
            out["worker"]["docs_per_s"] / out[f"pipe_{pipe}"]["docs_per_s"], 3
        )
    if out["worker"]["docs_per_cpu_s"] and out["pipe_transactional"]["docs_per_cpu_s"]:
        out["cpu_ratio_worker_vs_transactional_pipe"] = round(
            out["worker"]["docs_per_cpu_s"] / out["pipe_transactional"]["docs_per_cpu_s"], 3
        )
    out["variants"] = {
        name: {
            "path": str(path),
            "docs_per_s": out[f"variant_{name}"]["docs_per_s"],
            "ratio_vs_transactional_pipe": round(
                out[f"variant_{name}"]["docs_per_s"] / out["pipe_transactional"]["docs_per_s"], 3
            ),
            "ratio_per_round": [
                round(v["docs_per_s"] / p["docs_per_s"], 3)
                for v, p in zip(runs[f"variant_{name}"], runs["pipe_transactional"], strict=True)
            ],
        }
        for name, path in others.items()
    }
    out["ratio_per_round"] = [
        round(w["docs_per_s"] / p["docs_per_s"], 3)
        for w, p in zip(runs["worker"], runs["pipe_transactional"], strict=True)
    ]
    if args.profile:
        log("worker under py-spy (not part of the figures)")
        out["profile"] = profile_worker(bootstrap, topics, input_topic, n, args)
    return out
