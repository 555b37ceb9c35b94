"""Rebalances keep the indexes of partitions that stay; partitions added at runtime work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewPartitions

from neardup_stream import Deduplicator, Document
from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_worker import stream
from tests.unit.conftest import mutate

pytestmark = pytest.mark.integration


def produce_to(bootstrap: str, topic: str, placed: list[tuple[int, dict[str, object]]]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    for partition, doc in placed:
        producer.send(topic, value=json.dumps(doc).encode(), partition=partition)
    producer.flush()
    producer.close()


def per_partition_expected(placed: list[tuple[int, dict[str, object]]]) -> dict[str, str]:
    """Offline decisions, one engine per partition, each in its partition's order."""
    out: dict[str, str] = {}
    for p in {p for p, _ in placed}:
        docs = [Document.model_validate(d) for q, d in placed if q == p]
        out.update({d.id: d.decision for d in Deduplicator().check_batch(docs)})
    return out


def full_log(worker: WorkerProcess) -> str:
    """The whole log (`WorkerProcess.log()` keeps only its tail)."""
    return worker.log_path.read_text(errors="replace")


def restores(worker: WorkerProcess) -> list[list[int]]:
    """Every set of partitions the worker started restoring, in order."""
    found = re.findall(r"restoring partitions (\[[\d, ]*\])", full_log(worker))
    return [json.loads(m) for m in found]


def test_a_joining_replica_moves_partitions_without_rebuilding_the_ones_that_stay(
    kafka_bootstrap: str,
    topics: Topics,
    tmp_path: Path,
) -> None:
    group = "g-" + topics.input
    extra = ["--partitions", "4"]
    first = [(i % 4, d) for i, d in enumerate(stream(80, seed=21))]
    copies = [
        (p, {"id": f"copy-{d['id']}", "text": mutate(str(d["text"]), 0.01, 7)})
        for p, d in first[:40]
    ]
    a = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "a.log", "a", extra).start()
    b = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "b.log", "b", extra)
    try:
        a.wait_ready()
        produce_to(kafka_bootstrap, topics.input, first)
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first)
        assert restores(a) == [[0, 1, 2, 3]]
        b.start()
        wait_for("b to own partitions", lambda: restores(b), 60)
        b.wait_ready()
        wait_for("a's rebalance", lambda: full_log(a).count("partitions assigned") >= 2, 60)
        moved = restores(b)[0]
        assert moved and set(moved) < {0, 1, 2, 3}
        # a kept the indexes of the partitions it still owns: no restore after the first
        assert restores(a) == [[0, 1, 2, 3]], a.log()
        produce_to(kafka_bootstrap, topics.input, copies)
        total = len(first) + len(copies)
        got = decisions(kafka_bootstrap, topics, total)
        assert all(len(v) == 1 for v in got.values()) and len(got) == total
        want = per_partition_expected(first + copies)
        assert {k: v[0][0] for k, v in got.items()} == want
        assert all(want[str(d["id"])] == "duplicate" for _, d in copies)
    finally:
        b.stop() if b.proc else None
        a.stop()


def test_input_partitions_added_at_runtime_are_consumed(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    env = {"NEARDUP_WORKER__METADATA_MAX_AGE_MS": "2000"}
    w = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log", env=env)
    w.start()
    try:
        w.wait_ready()
        docs = stream(30, seed=22)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[:10]])
        kafka_admin.create_partitions({topics.input: NewPartitions(3)})
        wait_for(
            "the new partitions",
            lambda: [1, 2] in restores(w) or [0, 1, 2] in restores(w),
            60,
        )
        placed = [(0, d) for d in docs[:10]] + [(1 + i % 2, d) for i, d in enumerate(docs[10:])]
        produce_to(kafka_bootstrap, topics.input, placed[10:])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert {k: v[0][0] for k, v in got.items()} == per_partition_expected(placed)
        meta = kafka_admin.describe_topics([topics.changelog])[0]
        assert len(meta["partitions"]) >= 3
        # the producer waited for the new changelog partitions: no transaction failed on them
        assert "Unrecognized partition" not in w.log_path.read_text(errors="replace")
    finally:
        w.stop()
