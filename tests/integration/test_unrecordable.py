"""The engine's failure on a batch, through the single worker's role loop: an input whose
index record the changelog cannot take (`decide.Unrecordable`, precise mode) fails the step
of the batch it is in; the worker rebuilds that partition's index, dead-letters the input as
`unpublishable` on the replay and decides everything else exactly once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs, read_all
from tests.integration.test_unpublishable import big_doc
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def test_an_input_the_changelog_cannot_record_is_dead_lettered_and_the_rest_decided(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    topics: Topics,
    tmp_path: Path,
) -> None:
    configs = {"cleanup.policy": "compact", "max.message.bytes": "150000"}
    spec = {"num_partitions": 1, "replication_factor": 1, "configs": configs}
    kafka_admin.create_topics({topics.changelog: spec})
    docs = stream(10, seed=43)
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        env={"NEARDUP_DEDUP__PRECISE": "true"},
    )
    worker.start()
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, [*docs[:5], big_doc(2), *docs[5:]])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert set(got) == {str(d["id"]) for d in docs}
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "unpublishable" and letter["source"]["offset"] == 5
        assert "changelog" in letter["message"]
        status, text = worker.http("/metrics")
        aborts = [
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("neardup_transaction_aborts_total ")
        ]
        assert status == 200 and aborts and aborts[0] >= 1
    finally:
        assert worker.stop() == 0, worker.log()
