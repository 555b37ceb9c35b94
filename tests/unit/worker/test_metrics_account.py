"""Counting a committed batch (`neardup_stream.worker.metrics.account`): a scrape that sees a document counted
sees its latency too, so latency taken between two scrapes (e.g. of paced documents after a
backlog, `bench.bench_cluster_cost`) never mixes in earlier documents."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import account, build_metrics
from neardup_stream.worker.records import BatchOutput


def latency_count(registry: CollectorRegistry) -> float:
    return registry.get_sample_value("neardup_decision_latency_seconds_count") or 0.0


def test_every_document_counted_has_its_latency_observed_already() -> None:
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    seen: list[float] = []
    counter = metrics.documents.labels("unique", "none")
    inc = counter.inc

    def inc_and_look(amount: float = 1) -> None:  # what a scrape at this moment would see
        seen.append(latency_count(registry))
        inc(amount)

    counter.inc = inc_and_look  # type: ignore[method-assign]
    now_ms = int(time.time() * 1000)
    output = BatchOutput(decided=[("unique", "none")] * 3, timestamps_ms=[now_ms] * 3)
    account(metrics, output, time.time())
    assert seen and all(count == 3.0 for count in seen)  # every increment came after all three
    assert (
        registry.get_sample_value(
            "neardup_documents_total", {"decision": "unique", "method": "none"}
        )
        == 3.0
    )
