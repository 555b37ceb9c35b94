"""Section `latency`: decision latency at half the worker's maximum rate.

A fresh worker (fresh topics, empty index) is started and waited for, and decides 50 warm-up
documents (JIT cache loads, first fetches; excluded everywhere); then documents are produced
at a steady ``0.5 x`` the worker's measured docs/s for ``--latency-seconds`` (default 25 s).
Each record's timestamp is its send time; a read_committed consumer of the unique and
duplicate topics (in a thread, fetch wait capped at 100 ms) notes the wall-clock time each
document id first becomes visible. Latency = visible - sent; p50/p99 over all documents. As a
cross-check, p50/p99 of the worker's own ``neardup_decision_latency_seconds`` histogram
(record timestamp -> transaction committed, interpolated within Prometheus buckets, warm-up
counts subtracted) are reported too.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Sequence

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from bench.kafka_broker import Topics
from bench.kafka_docs import BenchError, DocSource, log
from bench.kafka_metrics import histogram_quantiles
from bench.kafka_worker import WorkerProcess, WorkerTopics

LATENCY_METRIC = "neardup_decision_latency_seconds"
WARMUP_DOCS = 50  # decided before the timed stream: JIT cache loads, first fetches


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 1]."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


class VisibilityRecorder:
    """A read_committed consumer thread noting when each key first becomes visible."""

    def __init__(self, bootstrap: str, topic_names: Sequence[str]) -> None:
        self.seen: dict[str, float] = {}
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
            fetch_max_wait_ms=100,
            check_crcs=False,  # a measuring client; spare the shared CPU
            max_partition_fetch_bytes=10 * 1024 * 1024,
        )
        tps = [TopicPartition(t, 0) for t in topic_names]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)
        for tp in tps:
            self.consumer.position(tp)  # resolve now, not while documents flow
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="visibility", daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = self.consumer.poll(timeout_ms=100)
                now = time.time()
                for msgs in batch.values():
                    for m in msgs:
                        if m.key is not None:
                            self.seen.setdefault(m.key.decode(), now)
        except BaseException as exc:
            self.error = exc

    def start(self) -> VisibilityRecorder:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.consumer.close(autocommit=False)


def wait_visible(
    recorder: VisibilityRecorder, w: WorkerProcess, count: int, timeout: float
) -> None:
    """Until `count` keys are visible or `timeout` passes (then the caller reports a shortfall)."""
    deadline = time.monotonic() + timeout
    while len(recorder.seen) < count and time.monotonic() < deadline:
        if recorder.error is not None:
            raise BenchError(f"visibility consumer failed: {recorder.error!r}")
        w.check_alive()
        time.sleep(0.1)


def section_latency(
    bootstrap: str, topics: Topics, src: DocSource, rate: float, args: argparse.Namespace
) -> dict:
    count = max(1, round(rate * args.latency_seconds))
    wt = WorkerTopics.fresh(topics, "lat", topics.create("lat.input"))
    docs = [src.doc(i, "lat-") for i in range(count)]
    warmup = [src.doc(i, "warm-") for i in range(count, count + WARMUP_DOCS)]
    w = WorkerProcess(
        bootstrap, wt, f"{topics.tag}-lat", args.log_dir / "worker-latency.log", args.max_batch
    )
    recorder: VisibilityRecorder | None = None
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    sent: dict[str, float] = {}
    try:
        w.start()
        w.wait_ready(args.timeout)
        recorder = VisibilityRecorder(bootstrap, [wt.unique, wt.duplicate]).start()
        for key, value in warmup:
            producer.send(wt.input, key=key, value=value)
        producer.flush()
        wait_visible(recorder, w, len(warmup), 120.0)
        if len(recorder.seen) < len(warmup):
            raise BenchError(f"warm-up documents not decided in 120 s:\n{w.log_tail()}")
        recorder.seen.clear()
        _, warm_metrics = w.http("/metrics")
        log(f"producing {count:,} docs at {rate:,.1f} docs/s for {args.latency_seconds:.0f}s")
        t0 = time.monotonic()
        for i, (key, value) in enumerate(docs):
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.time()
            producer.send(wt.input, key=key, value=value, timestamp_ms=int(now * 1000))
            sent[key.decode()] = now
        send_seconds = time.monotonic() - t0
        producer.flush()
        wait_visible(recorder, w, count, max(60.0, args.latency_seconds))
        _, metrics = w.http("/metrics")
    finally:
        producer.close(timeout=10)
        if recorder is not None:
            recorder.stop()
        w.stop()
    latencies = [recorder.seen[k] - t for k, t in sent.items() if k in recorder.seen]
    if len(latencies) < count:
        log(f"  warning: only {len(latencies):,}/{count:,} decisions became visible")
    hist = histogram_quantiles(metrics, LATENCY_METRIC, (0.5, 0.99), before=warm_metrics)
    return {
        "target_docs_per_s": round(rate, 1),
        "achieved_docs_per_s": round(count / send_seconds, 1) if send_seconds > 0 else None,
        "docs_sent": count,
        "docs_visible": len(latencies),
        "p50_s": round(percentile(latencies, 0.5), 4),
        "p99_s": round(percentile(latencies, 0.99), 4),
        "mean_s": round(statistics.fmean(latencies), 4) if latencies else None,
        "max_s": round(max(latencies), 4) if latencies else None,
        "worker_histogram_p50_s": hist[0],
        "worker_histogram_p99_s": hist[1],
        "batch_seconds_p50_p99": histogram_quantiles(
            metrics, "neardup_batch_processing_seconds", (0.5, 0.99), before=warm_metrics
        ),
    }
