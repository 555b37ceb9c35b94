"""Restore from a damaged changelog: corrupt and foreign records are counted and skipped; a
snapshot of a changelog deleted and created again is not used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.worker import changelog
from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs
from tests.integration.test_worker import expected, stream

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


def test_a_snapshot_of_a_changelog_deleted_and_created_again_is_not_used(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    """A snapshot covers offsets of one changelog incarnation: once the topic is deleted and
    created again, its offsets start over, and a snapshot "up to offset 2" of the old one
    would stand for the new one's records (and hide them)."""
    group, first, second = "g-" + topics.input, stream(20, seed=71), stream(20, seed=72)
    kept = {"NEARDUP_WORKER__SNAPSHOT_DIR": str(tmp_path / "snapshots")}
    w1 = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w1.log", env=kept).start()
    try:
        w1.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, first)
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first), w1.log()
    finally:
        assert w1.stop() == 0, w1.log()
    assert "snapshots of partitions [0] saved" in w1.log()
    kafka_admin.delete_topics([topics.changelog])
    wait_for("the changelog deleted", lambda: topics.changelog not in kafka_admin.list_topics(), 60)
    w2 = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w2.log").start()
    try:  # no snapshots: the second part's records go to the new changelog
        w2.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, second)
        want = len(first) + len(second)
        assert sum(map(len, decisions(kafka_bootstrap, topics, want).values())) == want
    finally:
        assert w2.stop() == 0, w2.log()
    copies = [{"id": f"copy-{d['id']}", "text": d["text"]} for d in second]
    w3 = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w3.log", env=kept).start()
    try:
        w3.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, copies)
        got = decisions(kafka_bootstrap, topics, len(first) + len(second) + len(copies))
        log = w3.log()
    finally:
        assert w3.stop() == 0, w3.log()
    assert "snapshot not used" in log and "deleted and created again" in log, log
    # the new changelog's records were replayed: the copies are decided against the second
    # part, as offline over it (no copy is unique, which a stale snapshot made them)
    want = {k: v for k, v in expected(second + copies).items() if k.startswith("copy-")}
    assert {k: v[0] for k, v in got.items() if k.startswith("copy-")} == want, log
    assert {d for d, _ in want.values()} == {"duplicate"}


def test_an_index_without_the_groups_offsets_is_warned_about(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    """The input topic deleted and created again: the broker drops the group's offsets for
    it, the changelog keeps the index. The worker says what reading the input again means."""
    group, docs = "g-" + topics.input, stream(10, seed=73)
    w1 = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w1.log").start()
    try:
        w1.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs)
        assert len(decisions(kafka_bootstrap, topics, len(docs))) == len(docs), w1.log()
        assert "has no committed input offset" not in w1.log()
    finally:
        assert w1.stop() == 0, w1.log()
    kafka_admin.delete_topics([topics.input])
    wait_for("the input deleted", lambda: topics.input not in kafka_admin.list_topics(), 60)
    w2 = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "w2.log").start()
    try:
        w2.wait_ready()
        wait_for("the warning", lambda: "has no committed input offset" in w2.log(), 60)
        assert f"changelog topic {topics.changelog} holds index records for partition 0" in (
            w2.log()
        )
    finally:
        assert w2.stop() == 0, w2.log()
