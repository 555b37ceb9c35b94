"""The optional n-longest-sentences method through the worker and a real broker, across a
restart: the index the wrapped copy is decided against was restored from the changelog, so
the original's sentence signature travelled in its changelog record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs, read_all
from tests.unit.test_sentences import BODY, WRAPPED

pytestmark = pytest.mark.integration


def test_a_wrapped_copy_matches_by_its_sentences_after_a_restore(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    group, log = "g-" + topics.input, tmp_path / "w.log"
    env = {"NEARDUP_DEDUP__LONGEST_SENTENCES": "3"}
    worker = WorkerProcess(kafka_bootstrap, topics, group, log, env=env).start()
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, [{"id": "a", "text": BODY}])
        assert len(decisions(kafka_bootstrap, topics, 1)) == 1, worker.log()
    finally:
        assert worker.stop() == 0, worker.log()

    worker = WorkerProcess(kafka_bootstrap, topics, group, log, env=env).start()
    try:
        worker.wait_ready()
        assert "restored partitions [0]: 1 records replayed" in worker.log()
        produce_docs(kafka_bootstrap, topics.input, [{"id": "b", "text": WRAPPED}])
        (dup,) = (json.loads(m.value) for m in read_all(kafka_bootstrap, topics.duplicate, 1))
        assert (dup["id"], dup["duplicate_of"], dup["method"]) == ("b", "a", "sentences")
        assert dup["similarity"] < 0.8  # by Jaccard it is not a near-duplicate
    finally:
        assert worker.stop() == 0, worker.log()
