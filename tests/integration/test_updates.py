"""Updates and empty texts through the worker and a real broker, across a restart.

An id seen again with other content is decided afresh (never against its own earlier
version) and says so; its replay repeats that decision; a blank text is a dead letter. The
worker restarts in between, so the index the updates are decided against was restored from
the changelog.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs, read_all
from tests.unit.conftest import mutate, random_text

pytestmark = pytest.mark.integration


def test_updates_and_blank_texts_reach_the_output_after_a_restore(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    v1 = random_text(41, 200)
    v2 = mutate(v1, 0.02, 42)  # a near-copy of v1: x's own earlier version
    other = random_text(43, 200)
    group, log = "g-" + topics.input, tmp_path / "w.log"
    worker = WorkerProcess(kafka_bootstrap, topics, group, log).start()
    try:
        worker.wait_ready()
        produce_docs(
            kafka_bootstrap, topics.input, [{"id": "x", "text": v1}, {"id": "y", "text": other}]
        )
        assert len(decisions(kafka_bootstrap, topics, 2)) == 2, worker.log()
    finally:
        assert worker.stop() == 0, worker.log()

    worker = WorkerProcess(kafka_bootstrap, topics, group, log).start()
    try:
        worker.wait_ready()
        assert "restored partitions [0]: 2 records replayed" in worker.log()
        later = [
            {"id": "x", "text": v2},  # update: unique, although a near-copy of x's v1
            {"id": "x", "text": v2},  # replay of the update
            {"id": "x", "text": other},  # update: an exact copy of y
            {"id": "e", "text": " \n "},  # blank: a dead letter
        ]
        produce_docs(kafka_bootstrap, topics.input, later)
        uniques = read_all(kafka_bootstrap, topics.unique, 4)
        dups = read_all(kafka_bootstrap, topics.duplicate, 1)
        dead = read_all(kafka_bootstrap, topics.dlq, 1)
        assert sorted(m.key for m in uniques) == [b"x", b"x", b"x", b"y"], worker.log()
        xs = [m for m in uniques if m.key == b"x"]  # one key, one partition: in order
        assert [dict(m.headers).get("neardup.update") for m in xs] == [None, b"true", b"true"]
        assert xs[1].value == xs[2].value == json.dumps(later[0]).encode()
        (dup,) = (json.loads(m.value) for m in dups)
        assert (dup["id"], dup["duplicate_of"], dup["method"], dup["update"]) == (
            "x",
            "y",
            "exact",
            True,
        )
        assert [json.loads(m.value)["reason"] for m in dead] == ["empty_text"]
    finally:
        assert worker.stop() == 0, worker.log()
