"""Restore from a damaged changelog: corrupt and foreign records are counted and skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from neardup_stream import DedupConfig, Deduplicator, Document
from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs
from tests.integration.test_worker import stream
from worker import changelog

pytestmark = pytest.mark.integration


def metric(text: str, name: str, reason: str) -> float:
    match = re.search(rf'^{name}\{{reason="{reason}"\}} (\S+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_corrupt_and_foreign_changelog_records_are_skipped_not_fatal(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    kafka_admin.create_topics(
        {
            topics.changelog: {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": {"cleanup.policy": "compact"},
            }
        }
    )
    docs = stream(20, seed=31)
    good = Deduplicator().process([Document.model_validate(d) for d in docs[:10]], records=True)
    valid = [o.record.encode() for o in good if o.record is not None]
    foreign = (
        Deduplicator(DedupConfig(shingle_size=4))
        .process([Document(id="f", text="foreign settings " * 20)], records=True)[0]
        .record
    )
    assert foreign is not None
    group = "g-" + topics.input
    ours = changelog.Pipeline(topics.input, group)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    damaged = [
        b"NP\x01\xff\xff\xff\xff",  # a pack claiming records it does not hold
        b"garbage",
        valid[0][:20],  # a truncated bare record
        *changelog.pack([valid[1][:-3]], ours),  # a pack holding a truncated record
        *changelog.pack([foreign.encode()], ours),
        *changelog.pack(valid, ours),
    ]
    for i, value in enumerate(damaged):
        producer.send(topics.changelog, key=f"k{i}".encode(), value=value, partition=0)
    producer.flush()
    producer.close()
    worker = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w.log")
    worker.start()
    try:
        worker.wait_ready()
        body = worker.http("/metrics")[1]
        assert metric(body, "neardup_restore_skipped_records_total", "corrupt") == 4
        assert metric(body, "neardup_restore_skipped_records_total", "other_config") == 1
        assert "restored partitions [0]: 10 records replayed" in worker.log()
        # the ten restored documents are known: their copies are duplicates, the rest unique
        copies = [{"id": f"copy-{d['id']}", "text": d["text"]} for d in docs[:10]]
        produce_docs(kafka_bootstrap, topics.input, copies + docs[10:])
        got = decisions(kafka_bootstrap, topics, 20)
        assert all(got[f"copy-{d['id']}"][0][0] == "duplicate" for d in docs[:10])
        assert worker.alive()
    finally:
        assert worker.stop() == 0, worker.log()
