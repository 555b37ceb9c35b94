"""Inputs deleted by retention before the single worker read them are reported, never lost in
silence: the worker's consumer does not reset on its own (`neardup_stream/worker/input_start.py`)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, TopicPartition

from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decide_then_stop,
    decisions,
    produce_docs,
)
from tests.integration.test_cluster_stops import end_offset, wait_metric
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def test_inputs_retention_deleted_before_the_worker_read_them_are_reported_as_lost(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(60, seed=71)
    first, gone, later = docs[:20], docs[20:35], docs[35:]
    group = "g-" + topics.input
    decide_then_stop(kafka_bootstrap, topics, group, tmp_path / "a.log", first)
    committed = end_offset(kafka_bootstrap, topics.input, 0)
    produce_docs(kafka_bootstrap, topics.input, gone)
    log_start = end_offset(kafka_bootstrap, topics.input, 0)
    assert log_start == committed + len(gone)
    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    admin.delete_records({TopicPartition(topics.input, 0): log_start})
    admin.close()
    produce_docs(kafka_bootstrap, topics.input, later)

    worker = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "b.log").start()
    try:
        worker.wait_ready()
        lost = wait_metric(worker, "neardup_records_lost_total", 'role="worker"', bool)
        assert lost == len(gone), worker.log()
        assert re.search(
            rf"worker: {re.escape(topics.input)}-0: checkpoint at offset {committed} but the "
            rf"log starts at {log_start}: {len(gone)} offsets were deleted by retention",
            worker.log(),
        ), worker.log()
        got = decisions(kafka_bootstrap, topics, len(first) + len(later))
        assert set(got) == {str(d["id"]) for d in first + later}, worker.log()
        assert all(len(v) == 1 for v in got.values())
        assert worker.http("/healthz")[0] == 200  # reported, then going on
    finally:
        assert worker.stop() == 0, worker.log()
