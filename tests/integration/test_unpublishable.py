"""Outputs the broker refuses become `unpublishable` dead letters; the rest commits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
    produce,
    produce_docs,
    read_all,
)
from tests.integration.test_scale_out import replicas
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def big_doc(i: int) -> dict[str, object]:
    return {"id": f"big-{i}", "text": " ".join(f"w{i}x{j}" for j in range(12_000))}  # ~100 KB


def test_a_small_existing_unique_topic_is_reported_and_what_does_not_fit_is_dead_lettered(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    spec = {"num_partitions": 1, "replication_factor": 1}
    kafka_admin.create_topics({topics.unique: {**spec, "configs": {"max.message.bytes": "50000"}}})
    docs = stream(10, seed=41)
    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log")
    worker.start()
    try:
        worker.wait_ready()
        assert f"--entity-name {topics.unique} --add-config max.message.bytes=" in worker.log()
        produce_docs(kafka_bootstrap, topics.input, [*docs[:5], big_doc(1), *docs[5:]])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert set(got) == {str(d["id"]) for d in docs}
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "unpublishable" and letter["source"]["offset"] == 5
        assert "max.message.bytes" in letter["message"]
    finally:
        assert worker.stop() == 0, worker.log()


def test_an_output_the_broker_rejects_at_runtime_is_dead_lettered_once(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    docs = stream(12, seed=42)
    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log")
    worker.start()
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs[:4])
        assert len(decisions(kafka_bootstrap, topics, 4)) == 4
        # an operator shrinks the topic while the worker runs: its start-up check is stale
        resource = ConfigResource(
            ConfigResourceType.TOPIC, topics.unique, {"max.message.bytes": "40000"}
        )
        kafka_admin.alter_configs([resource])
        produce_docs(kafka_bootstrap, topics.input, [*docs[4:8], big_doc(2), *docs[8:]])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert set(got) == {str(d["id"]) for d in docs}
        assert all(len(v) == 1 for v in got.values())
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "unpublishable" and letter["source"]["offset"] == 8
        assert "rejected" in letter["message"]
        assert worker.alive()
    finally:
        assert worker.stop() == 0, worker.log()


def worker_in(mode: str, bootstrap: str, topics: Topics, log_dir: Path) -> WorkerProcess:
    """One single worker or one `--cluster` replica, started, its log in `log_dir`."""
    log_dir.mkdir()
    if mode == "cluster":
        return replicas(bootstrap, topics, log_dir, 1)[0]
    return WorkerProcess(bootstrap, topics, "g-" + topics.input, log_dir / "w.log").start()


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_dead_letter_topic_too_small_for_a_bare_dead_letter_is_refused_at_start(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path, mode: str
) -> None:
    spec = {"num_partitions": 1, "replication_factor": 1}
    kafka_admin.create_topics({topics.dlq: {**spec, "configs": {"max.message.bytes": "2000"}}})
    worker = worker_in(mode, kafka_bootstrap, topics, tmp_path / "w")
    assert worker.wait_exit(120) == 78, worker.log()
    said = [line for line in worker.log(50_000).splitlines() if " ERROR " in line]
    assert len(said) == 1, said
    assert f"dead-letter topic {topics.dlq!r} has max.message.bytes=2000" in said[0]
    assert f"--entity-name {topics.dlq} --add-config max.message.bytes=" in said[0]
    assert "Traceback" not in worker.log(50_000)


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_dead_letter_nothing_can_publish_stops_the_worker_in_one_line_and_loses_no_input(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path, mode: str
) -> None:
    docs = stream(6, seed=43)
    worker = worker_in(mode, kafka_bootstrap, topics, tmp_path / "a")
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs[:3])
        assert len(decisions(kafka_bootstrap, topics, 3)) == 3
        # Shrunk under the running worker (its start-up check is stale), then a bad input.
        shrink = ConfigResource(ConfigResourceType.TOPIC, topics.dlq, {"max.message.bytes": "100"})
        kafka_admin.alter_configs([shrink])
        produce(kafka_bootstrap, topics.input, [b"{not json"])
        assert worker.wait_exit(120) == 78, worker.log()
        log = worker.log(100_000)
        assert "even a dead letter without payload" in log and topics.dlq in log
        assert "Traceback" not in log
    finally:
        if worker.alive():
            worker.stop()
    # Fixed, started again: the bad input gets its dead letter, the rest its decisions.
    grow = ConfigResource(ConfigResourceType.TOPIC, topics.dlq, {"max.message.bytes": "1048588"})
    kafka_admin.alter_configs([grow])
    worker = worker_in(mode, kafka_bootstrap, topics, tmp_path / "b")
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs[3:])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert set(got) == {str(d["id"]) for d in docs}
        assert all(len(v) == 1 for v in got.values())
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "invalid_json" and letter["source"]["offset"] == 3
    finally:
        assert worker.stop() == 0, worker.log()
