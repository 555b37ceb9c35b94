"""A changelog whose max.message.bytes is too small for a batch's pack: the batch shrinks,
without backing off, until its records fit; an input whose record alone does not fit is
dead-lettered as unpublishable; an output kafka-python aborted unsent (larger than the refused
record) is not blamed for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def decide_through_a_small_changelog(
    bootstrap: str, admin: KafkaAdminClient, topics: Topics, log: Path, docs: list[dict]
) -> str:
    """Every document decided by a worker whose changelog takes records of 6,000 bytes at
    most (a batch of more than a few documents does not fit); the worker's log."""
    configs = {"cleanup.policy": "compact", "max.message.bytes": "6000"}
    spec = {"num_partitions": 1, "replication_factor": 1, "configs": configs}
    admin.create_topics({topics.changelog: spec})
    worker = WorkerProcess(bootstrap, topics, "g-" + topics.input, log)
    worker.start()
    try:
        worker.wait_ready()
        produce_docs(bootstrap, topics.input, docs)
        got = decisions(bootstrap, topics, len(docs))
        assert set(got) == {str(d["id"]) for d in docs}, worker.log()[-3000:]
    finally:
        assert worker.stop() == 0, worker.log()
    assert "retrying with half the batch" in worker.log()
    return worker.log()


def test_a_changelog_too_small_for_a_batch_shrinks_it_until_every_input_has_an_outcome(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    docs = stream(40, seed=7)
    log = decide_through_a_small_changelog(
        kafka_bootstrap, kafka_admin, topics, tmp_path / "w.log", docs
    )
    # A changelog record's size is its batch's: the replay halves the batch at once; waiting
    # would not make the same record fit (before, each halving backed off, 0.5 s to 16 s).
    assert "a batch failed; retrying in" not in log


def test_outputs_larger_than_the_refused_changelog_record_are_not_blamed_for_it(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    # Each output (its document's 30 KB text) is larger than a changelog record. Once the
    # broker refuses a changelog record, kafka-python aborts the batches it has not sent yet
    # with the same exception: an output among them must not be blamed, and its input not
    # dead-lettered; every document fits alone, so every one is decided.
    docs = [{"id": d["id"], "text": str(d["text"]) * 40} for d in stream(120, seed=11)]
    decide_through_a_small_changelog(kafka_bootstrap, kafka_admin, topics, tmp_path / "w.log", docs)
