"""A real Prometheus scrapes a real worker: throughput, dead letters and lag read through its API.

The worker is `python -m neardup_stream.worker` on its CLI flags only; Prometheus is Debian's, started by the
`prometheus` fixture. Kafka's output topics are the ground truth the series are checked
against: every count read from Prometheus must equal what was produced and decided.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.integration.harness import Topics, WorkerProcess, decisions, read_all
from tests.integration.prometheus import JOB, Prometheus, Sample, alert_names
from tests.unit.conftest import mutate, random_text

pytestmark = pytest.mark.integration

PARTITIONS = 2
BURST = 500  # valid documents per burst; bursts follow until Prometheus has seen a lag
MAX_BURSTS = 60
# Malformed messages in every burst, by the DLQ reason they must get.
MALFORMED: dict[str, list[bytes | None]] = {
    "invalid_json": [b"{not json", b'{"id": "x", "text": ', b"\x7b\x7b"],
    "tombstone": [None, None],
}


def burst(n: int, seed: int) -> list[bytes | None]:
    """n valid documents (every 5th a near-copy of an earlier one) with malformed ones mixed in."""
    texts: list[str] = []
    for i in range(n):
        if i >= 5 and i % 5 == 4:
            texts.append(mutate(texts[i - 3], 0.02, seed * 100_000 + i))
        else:
            texts.append(random_text(seed * 100_000 + i, 60))
    values: list[bytes | None] = [
        json.dumps({"id": f"p{seed}-{i}", "text": t}).encode() for i, t in enumerate(texts)
    ]
    bad = [v for vs in MALFORMED.values() for v in vs]
    step = n // len(bad)
    for j, v in enumerate(bad):  # spread through the burst, back to front keeps the positions
        values.insert(n - j * step, v)
    return values


class Sent:
    """Bursts sent to the input topic, and how many valid and malformed messages they held."""

    def __init__(self, producer: KafkaProducer, topic: str) -> None:
        self.producer, self.topic = producer, topic
        self.valid, self.bad = 0, Counter[str]()

    def total(self) -> int:
        return self.valid + self.bad.total()

    def burst(self, seed: int) -> None:
        for i, value in enumerate(burst(BURST, seed)):
            self.producer.send(self.topic, key=f"k{seed}-{i}".encode(), value=value)
        self.producer.flush()  # delivered, so the lag Prometheus reports can only trail it
        self.valid += BURST
        self.bad.update({reason: len(values) for reason, values in MALFORMED.items()})


def by_label(samples: list[Sample], label: str) -> dict[str, float]:
    return {s[0][label]: s[1] for s in samples}


def test_prometheus_reads_throughput_dlq_and_lag_of_a_worker(
    kafka_bootstrap: str,
    prometheus: Prometheus,
    unique_topic: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topics = Topics.fresh(unique_topic)
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        extra=["--partitions", str(PARTITIONS), "--max-batch", "100"],
    ).start()
    target = f"127.0.0.1:{worker.metrics_port}"
    sel = f'job="{JOB}",instance="{target}"'
    lag = f'neardup_consumer_lag_messages{{{sel},topic="{topics.input}"}}'
    prometheus.set_targets([target])
    try:
        worker.wait_ready()
        prometheus.wait_for(f"neardup_ready{{{sel}}}", lambda r: by_label(r, "job") == {JOB: 1})

        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, linger_ms=5, acks="all")
        sent = Sent(producer, topics.input)
        try:
            # A first burst warms the worker up; its counts are exact once it is committed.
            sent.burst(0)
            prometheus.wait_for(
                f"sum(neardup_documents_total{{{sel}}})",
                lambda r: [v for _, v in r] == [sent.valid],
                on_timeout=worker.log,
            )
            # Then bursts without pause, faster than exactly-once processing consumes them,
            # until a scrape has caught a backlog: a condition, whatever the machine's speed.
            seen_lag = 0.0
            for seed in range(1, MAX_BURSTS + 1):
                sent.burst(seed)
                peaks = prometheus.query(f"max_over_time({lag}[10m])")
                seen_lag = sum(v for _, v in peaks)
                assert 0 <= seen_lag <= sent.total(), peaks  # never more than was sent
                if seen_lag > 0:
                    break
        finally:
            producer.close()
        assert seen_lag > 0, f"no scrape saw a backlog in {MAX_BURSTS} bursts\n{worker.log()}"

        # Throughput: Prometheus saw a positive decision rate while the input was worked off.
        prometheus.wait_for(
            f"max_over_time(sum(rate(neardup_documents_total{{{sel}}}[5s]))[10m:1s])",
            lambda r: len(r) == 1 and r[0][1] > 0,
            on_timeout=worker.log,
        )

        # Ground truth from Kafka: every valid document decided once, every bad one dead-lettered.
        got = decisions(kafka_bootstrap, topics, sent.valid)
        assert sum(len(v) for v in got.values()) == sent.valid, worker.log()
        dlq = read_all(kafka_bootstrap, topics.dlq, sent.bad.total())
        assert Counter(json.loads(m.value)["reason"] for m in dlq) == sent.bad
        per_decision = Counter(d for v in got.values() for d, _ in v)
        assert per_decision["duplicate"] > 0 and per_decision["unique"] > 0

        # Prometheus' counters agree exactly once every decision has landed; lag drains to 0.
        prometheus.wait_for(
            f"sum by (decision) (neardup_documents_total{{{sel}}})",
            lambda r: by_label(r, "decision") == dict(per_decision),
            on_timeout=worker.log,
        )
        prometheus.wait_for(
            f"sum by (reason) (neardup_dlq_messages_total{{{sel}}})",
            lambda r: by_label(r, "reason") == dict(sent.bad),
            on_timeout=worker.log,
        )
        drained = prometheus.wait_for(
            lag,
            lambda r: len(r) == PARTITIONS and all(v == 0 for _, v in r),
            on_timeout=worker.log,
        )
        assert {s[0]["partition"] for s in drained} == {str(p) for p in range(PARTITIONS)}
        assert prometheus.scalar(f"sum(neardup_documents_total{{{sel}}})") == sent.valid
    finally:
        prometheus.set_targets([])
        assert worker.stop() == 0, worker.log()


def test_prometheus_evaluates_every_alert_rule(prometheus: Prometheus) -> None:
    """The script's Prometheus loads deploy/prometheus/alerts.yml and evaluates every rule."""
    deadline = time.monotonic() + 60
    while True:
        groups = prometheus.api("rules", type="alert")["groups"]
        health = {r["name"]: r["health"] for g in groups for r in g["rules"]}
        if set(health) == alert_names() and set(health.values()) == {"ok"}:
            return
        assert time.monotonic() < deadline, f"alert rules not all evaluated: {groups}"
        time.sleep(0.25)
