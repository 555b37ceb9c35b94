"""The worker against a real Kafka broker: decisions, dead letters, restarts, metrics."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from neardup_stream import Deduplicator, Document
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
    produce,
    produce_docs,
    read_all,
)
from tests.unit.conftest import mutate, random_text

pytestmark = pytest.mark.integration


def stream(n: int, seed: int = 0) -> list[dict[str, object]]:
    """n documents where every 4th is a near-duplicate and every 10th an exact copy."""
    docs: list[dict[str, object]] = []
    for i in range(n):
        if i >= 10 and i % 10 == 0:
            text = str(docs[i - 7]["text"])
        elif i >= 4 and i % 4 == 3:
            text = mutate(str(docs[i - 3]["text"]), 0.01, seed + i)
        else:
            text = random_text(seed * 100_000 + i, 120)
        docs.append({"id": f"doc-{seed}-{i}", "text": text})
    return docs


def expected(docs: list[dict[str, object]]) -> dict[str, tuple[str, str | None]]:
    """What an uninterrupted offline run decides for the same stream."""
    out = Deduplicator().check_batch([Document.model_validate(d) for d in docs])
    return {d.id: (d.decision, d.duplicate_of) for d in out}


def test_decisions_land_on_the_right_topics(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(200)
    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log").start()
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs)
        got = decisions(kafka_bootstrap, topics, len(docs))
        want = expected(docs)
        assert {k: v[0] for k, v in got.items()} == want, worker.log()
        uniques = read_all(kafka_bootstrap, topics.unique, 1)
        first = uniques[0]
        assert json.loads(first.value) == docs[0]  # passed through unchanged
        headers = dict(first.headers)
        assert headers["neardup.decision"] == b"unique"
        dup = json.loads(read_all(kafka_bootstrap, topics.duplicate, 1)[0].value)
        assert dup["method"] in {"exact", "simhash", "minhash"} and 0.8 <= dup["similarity"] <= 1
        status, body = worker.http("/metrics")
        assert status == 200
        assert 'neardup_documents_total{decision="duplicate"' in body
        assert "neardup_restore_seconds" in body and "neardup_consumer_lag_messages" in body
    finally:
        assert worker.stop() == 0, worker.log()


def test_bad_input_goes_to_the_dead_letter_topic(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    bad: list[tuple[bytes | None, str]] = [
        (b"{not json", "invalid_json"),
        (b"[1,2,3]", "not_an_object"),
        (b'{"text": "no id"}', "missing_id"),
        (b'{"id": "", "text": "x"}', "invalid_id"),
        (b'{"id": "x1", "text": 42}', "invalid_field"),
        (b'{"id": "x2"}', "missing_text"),
        (b"\xff\xfe\xfd", "invalid_utf8"),
        (None, "tombstone"),
        (json.dumps({"id": "big", "text": "x" * 20_000}).encode(), "too_large"),
    ]
    good = [json.dumps(d).encode() for d in stream(5, seed=3)]
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        extra=["--max-message-bytes", "16384"],
    ).start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.input, [v for v, _ in bad] + good)
        dlq = read_all(kafka_bootstrap, topics.dlq, len(bad))
        assert len(dlq) == len(bad), worker.log()
        records = sorted((json.loads(m.value) for m in dlq), key=lambda r: r["source"]["offset"])
        for record, (raw, reason) in zip(records, bad, strict=False):
            assert record["reason"] == reason
            assert record["message"]
            assert base64.b64decode(record["raw_base64"]) == (raw or b"")
            assert record["source"]["topic"] == topics.input
        assert [r["source"]["offset"] for r in records] == list(range(len(bad)))
        assert len(decisions(kafka_bootstrap, topics, len(good))) == len(good)
    finally:
        assert worker.stop() == 0, worker.log()


@pytest.mark.parametrize("snapshot", [False, True], ids=["changelog", "snapshot"])
def test_restart_restores_the_index_from_the_changelog(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, snapshot: bool
) -> None:
    first, later = stream(60, seed=5), stream(60, seed=6)
    log = tmp_path / "w.log"
    group = "g-" + topics.input
    extra = ["--snapshot-dir", str(tmp_path / "snap")] if snapshot else []
    worker = WorkerProcess(kafka_bootstrap, topics, group, log, extra=extra).start()
    worker.wait_ready()
    produce_docs(kafka_bootstrap, topics.input, first)
    assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first)
    assert worker.stop() == 0, worker.log()

    copies = [{"id": f"copy-{d['id']}", "text": d["text"]} for d in first[:10]]
    replay = [first[3]]  # an id the index already knows
    worker = WorkerProcess(kafka_bootstrap, topics, group, log, extra=extra).start()
    try:
        worker.wait_ready()
        if snapshot:
            assert "partition 0: snapshot of 60 documents" in worker.log()
            assert "restored partitions [0]: 0 records replayed" in worker.log()
        else:
            assert "restored partitions [0]: 60 records replayed" in worker.log()
        produce_docs(kafka_bootstrap, topics.input, copies + replay + later)
        total = len(first) + len(copies) + len(replay) + len(later)
        got = decisions(kafka_bootstrap, topics, total)
        want = expected(first + copies + later)
        assert {k: v[0] for k, v in got.items()} == want, worker.log()
        original = got[str(first[3]["id"])]
        assert len(original) == 2 and original[0] == original[1]
    finally:
        assert worker.stop() == 0, worker.log()
