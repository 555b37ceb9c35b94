"""Prometheus metrics of the worker, built on an injected registry, and the HTTP listener.

`build_metrics(registry)` creates every metric on the given registry (tests use a fresh
`CollectorRegistry`); `docs/metrics.md` lists them. Both topologies register the same set:
the single worker's metrics (documents, latency, batch time, index size, consumer lag,
restores) keep their meaning in `--cluster` mode, where the roles fill them; the
`neardup_role_*` metrics and the other scale-out ones (stopped partitions, lost records,
the oldest undecided record, the shard waited for, gather buffer) are filled by the cluster
roles only, with a `role` label where one is documented; `neardup_settings_mismatch` by
either when it refuses to run (settings, or topics another pipeline claimed). `account`
counts a committed batch of the single worker, `index_gauges` sets the index sizes summed
over its partition indexes. `neardup_role_cpu_seconds_total` (`role_cpu`) is read from
the threads at each scrape, in both (a single worker's are all `other`). `MetricsServer`
exposes `/metrics` and `/healthz` on a configurable address: 200 once the process is ready
(the single worker: every owned partition restored; a cluster replica: settings agreed,
internal topics claimed and checked, and every role healthy), 503 before and while
unready.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.worker.role_cpu import RoleCpu

if TYPE_CHECKING:
    from neardup_stream.worker.records import BatchOutput

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


@dataclass(frozen=True)
class Metrics:
    """Handles to every metric the worker exports."""

    documents: Counter
    dlq: Counter
    batch_seconds: Histogram
    decision_latency: Histogram
    index_documents: Gauge
    index_entries: Gauge
    index_bytes: Gauge
    domain_engines: Gauge
    consumer_lag: Gauge
    restore_seconds: Gauge
    restored_records: Counter
    restore_skipped: Counter
    snapshots_rejected: Counter
    partitions_restoring: Gauge
    transaction_aborts: Counter
    ready: Gauge
    role_partitions: Gauge
    role_transactions: Counter
    role_failures: Counter
    group_fenced: Counter
    role_lag: Gauge
    partitions_stopped: Gauge
    records_lost: Counter
    oldest_undecided: Gauge
    waiting_for_shard: Gauge
    gather_buffered_bytes: Gauge
    settings_mismatch: Gauge
    single_stage: Gauge
    unread_partitions: Gauge
    role_stalled: Gauge


def build_metrics(registry: CollectorRegistry) -> Metrics:
    """Register the worker's metrics on `registry`."""
    registry.register(RoleCpu())  # neardup_role_cpu_seconds_total{role}
    return Metrics(
        documents=Counter(
            "neardup_documents",
            "Documents decided, by decision and matching method",
            ["decision", "method"],
            registry=registry,
        ),
        dlq=Counter(
            "neardup_dlq_messages",
            "Messages sent to the dead-letter topic, by reason",
            ["reason"],
            registry=registry,
        ),
        batch_seconds=Histogram(
            "neardup_batch_processing_seconds",
            "Time to decide, produce and commit one batch",
            registry=registry,
            buckets=LATENCY_BUCKETS,
        ),
        decision_latency=Histogram(
            "neardup_decision_latency_seconds",
            "From the input record's timestamp to its committed decision",
            registry=registry,
            buckets=LATENCY_BUCKETS,
        ),
        index_documents=Gauge(
            "neardup_index_documents", "Documents in the in-memory index", registry=registry
        ),
        index_entries=Gauge(
            "neardup_index_entries", "LSH and SimHash table entries", registry=registry
        ),
        index_bytes=Gauge(
            "neardup_index_bytes", "Estimated bytes held by the index", registry=registry
        ),
        domain_engines=Gauge(
            "neardup_index_domain_engines",
            "Per-domain engines of the owned home shards (one per shard and domain it stores)",
            registry=registry,
        ),
        consumer_lag=Gauge(
            "neardup_consumer_lag_messages",
            "Messages behind the end of each input partition",
            ["topic", "partition"],
            registry=registry,
        ),
        restore_seconds=Gauge(
            "neardup_restore_seconds",
            "Duration of the last index restore from the changelog",
            registry=registry,
        ),
        restored_records=Counter(
            "neardup_restored_records",
            "Changelog records replayed into the index",
            registry=registry,
        ),
        restore_skipped=Counter(
            "neardup_restore_skipped_records",
            "Changelog records not applied during restore: corrupt, other fingerprint settings, "
            "or another pipeline's (refused: the worker then decides nothing)",
            ["reason"],
            registry=registry,
        ),
        snapshots_rejected=Counter(
            "neardup_snapshots_rejected",
            "Local snapshots not used: corrupt, other topic/config, offsets out of the log",
            ["reason"],
            registry=registry,
        ),
        partitions_restoring=Gauge(
            "neardup_partitions_restoring",
            "Assigned input partitions whose index is being restored (paused meanwhile)",
            registry=registry,
        ),
        transaction_aborts=Counter(
            "neardup_transaction_aborts", "Kafka transactions aborted", registry=registry
        ),
        ready=Gauge(
            "neardup_ready",
            "1 once the index is restored and the worker consumes",
            registry=registry,
        ),
        role_partitions=Gauge(
            "neardup_role_partitions",
            "Partitions each scale-out role of this replica is assigned (edge: input partitions, "
            "shard: home shards, gather: fingerprint-log partitions)",
            ["role"],
            registry=registry,
        ),
        role_transactions=Counter(
            "neardup_role_transactions",
            "Transactions committed by each scale-out role (edge, shard, gather)",
            ["role"],
            registry=registry,
        ),
        role_failures=Counter(
            "neardup_role_failures",
            "Failed transactions of each scale-out role; the role rebuilds and retries",
            ["role"],
            registry=registry,
        ),
        group_fenced=Counter(
            "neardup_group_fenced",
            "Times a role's group fenced its static membership (group.instance.id); it "
            "rejoined. Repeated: another consumer uses the same instance id",
            ["role"],
            registry=registry,
        ),
        role_lag=Gauge(
            "neardup_role_lag_messages",
            "Records each scale-out role is behind: edge per input partition, shard per owned "
            "shard (fingerprint-log records not yet voted on, all log partitions), gather per "
            "log partition (fingerprint-log records not yet decided)",
            ["role", "partition"],
            registry=registry,
        ),
        partitions_stopped=Gauge(
            "neardup_partitions_stopped",
            "Partitions a scale-out role stopped at a record it cannot apply (shard, gather: "
            "fingerprint-log partitions; shard-restore, gather-restore: changelog partitions); "
            "nothing past that record is decided until an operator acts",
            ["role"],
            registry=registry,
        ),
        records_lost=Counter(
            "neardup_records_lost",
            "Records deleted by retention before a role applied them (its checkpoint or "
            "position was older than the log start): input records the worker or edge never "
            "read, fingerprint-log records a shard or gather never applied; their documents "
            "get no decision",
            ["role"],
            registry=registry,
        ),
        oldest_undecided=Gauge(
            "neardup_oldest_undecided_seconds",
            "Age of the oldest fingerprint-log record the gather has not decided yet, per log "
            "partition (0 when nothing waits), from its append time",
            ["partition"],
            registry=registry,
        ),
        waiting_for_shard=Gauge(
            "neardup_gather_waiting_for_shard",
            "The lowest shard whose vote the oldest undecided record of a log partition waits "
            "for (series present only while one is missing)",
            ["partition"],
            registry=registry,
        ),
        gather_buffered_bytes=Gauge(
            "neardup_gather_buffered_bytes",
            "Bytes of fingerprint-log records and votes the gather holds undecided",
            registry=registry,
        ),
        settings_mismatch=Gauge(
            "neardup_settings_mismatch",
            "1 while this scale-out replica refuses to start: its settings or internal topics "
            "differ from its cluster's (the log names each difference)",
            registry=registry,
        ),
        single_stage=Gauge(
            "neardup_single_stage",
            "1 while this scale-out replica is the whole cluster and decides each batch in one "
            "transaction (docs/design/scale-out.md, the single-stage replica)",
            registry=registry,
        ),
        unread_partitions=Gauge(
            "neardup_unread_partitions",
            "Partitions of the topics a role's group reads that no member of the group is "
            "assigned, seen in two descriptions of the Stable group in a row (the role makes "
            "its consumer rejoin)",
            ["role"],
            registry=registry,
        ),
        role_stalled=Gauge(
            "neardup_role_stalled",
            "1 while a role has had work waiting for longer than worker.stall_timeout_s "
            "without a commit (it logs what it waits for; /healthz answers 503)",
            ["role"],
            registry=registry,
        ),
    )


def count_decisions(
    metrics: Metrics,
    timestamps_ms: Sequence[int],
    decided: Iterable[tuple[str, str]],
    committed_at: float,
) -> None:
    """Count a batch's decisions, right after its transaction committed (never before): the
    latency of each from its input record's time (`timestamps_ms`, -1 when unknown), then
    `neardup_documents_total` once per (decision, method) seen. Latencies go first: a scrape
    that sees a document counted sees its latency too."""
    for ts in timestamps_ms:
        if ts >= 0:
            metrics.decision_latency.observe(max(0.0, committed_at - ts / 1000))
    for (decision, method), n in collections.Counter(decided).items():
        metrics.documents.labels(decision, method).inc(n)


def account(metrics: Metrics, output: BatchOutput, committed_at: float) -> None:
    """Count a batch, called right after its transaction committed (never before)."""
    count_decisions(metrics, output.timestamps_ms, output.decided, committed_at)
    for reason in output.dead:
        metrics.dlq.labels(reason).inc()
    if output.started:
        metrics.batch_seconds.observe(time.perf_counter() - output.started)


def index_gauges(metrics: Metrics, indexes: Mapping[int, Deduplicator]) -> None:
    """Documents, table entries and bytes held by all of this worker's partition indexes."""
    stats = [d.stats() for d in indexes.values()]
    metrics.index_documents.set(sum(st["documents"] for st in stats))
    metrics.index_entries.set(sum(st["index_entries"] for st in stats))
    metrics.index_bytes.set(sum(st["index_bytes"] for st in stats))


class MetricsServer:
    """A small threaded HTTP server for /metrics and /healthz."""

    def __init__(
        self,
        registry: CollectorRegistry,
        unready: Callable[[], str | None],
        host: str,
        port: int,
    ) -> None:
        """`unready` says why the worker cannot decide now (None: it can): /healthz answers
        200 `ready`, or 503 `unready: <why>`."""
        registry_ = registry

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.startswith("/metrics"):
                    body, status, ctype = generate_latest(registry_), 200, CONTENT_TYPE_LATEST
                elif self.path.startswith("/healthz"):
                    why = unready()
                    body = b"ready\n" if why is None else f"unready: {why}\n".encode()
                    status, ctype = (200 if why is None else 503), "text/plain"
                else:
                    body, status, ctype = b"not found\n", 404, "text/plain"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
