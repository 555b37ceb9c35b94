"""A single worker restarted with another input mapping never mixes it into its index.

The changelog's claim names the input mapping its index was built with (`neardup_stream.worker.claims`).
A worker of the same pipeline restarted with `--text-fields title,text` over an index of
`text` alone is refused: one error naming the difference, unready, `neardup_settings_mismatch
1`, nothing published, nothing acknowledged. Started with a changelog of its own
(`--changelog-topic`), the new mapping runs: its index starts empty and the group's
committed input offsets are kept, so no input is decided twice. Against the real broker.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.faults import wait_for
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decide_then_stop,
    decisions,
    produce_docs,
    read_all,
)
from tests.integration.test_pipelines import decided, wait_for_log
from tests.unit.conftest import random_text

pytestmark = pytest.mark.integration

TITLED = ["--text-fields", "title,text"]


def articles(n: int, seed: int) -> list[dict[str, object]]:
    """Documents with a title and a body, each unlike the others."""
    return [
        {
            "id": f"doc-{seed}-{i}",
            "title": random_text(seed * 1000 + i, 8),
            "text": random_text(seed * 100_000 + i, 120),
        }
        for i in range(n)
    ]


def mismatch(worker: WorkerProcess) -> float:
    body = worker.http("/metrics")[1]
    match = re.search(r"^neardup_settings_mismatch (\S+)$", body, re.MULTILINE)
    return float(match.group(1)) if match else -1.0


def test_a_restart_with_another_mapping_is_refused_and_a_changelog_of_its_own_runs_it(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    topics, group = Topics.fresh(unique_topic), unique_topic("g")
    first = articles(20, seed=61)
    decide_then_stop(kafka_bootstrap, topics, group, tmp_path / "w1.log", first)
    later = articles(5, seed=62)
    produce_docs(kafka_bootstrap, topics.input, later)

    refused = WorkerProcess(
        kafka_bootstrap, topics, group, tmp_path / "w2.log", extra=TITLED
    ).start()
    try:
        wait_for_log(refused, "refusing the changelog")
        log = refused.log()
        assert f"topic {topics.changelog!r} holds this pipeline's index" in log, log
        assert 'input.text_fields: index ["text"], this worker ["title", "text"]' in log, log
        assert "--changelog-topic / NEARDUP_TOPICS__CHANGELOG" in log
        assert refused.http("/healthz")[0] == 503
        assert mismatch(refused) == 1
        outputs = len(read_all(kafka_bootstrap, topics.unique, 0, timeout=5))
        assert outputs == len(first)  # the refused worker published nothing
    finally:
        assert refused.stop() == 0, refused.log()

    own = dataclasses.replace(topics, changelog=topics.changelog + ".titled")
    worker = WorkerProcess(kafka_bootstrap, own, group, tmp_path / "w3.log", extra=TITLED).start()
    try:
        worker.wait_ready()
        left = lambda: len(read_all(kafka_bootstrap, own.unique, 0, timeout=2)) >= 25  # noqa: E731
        wait_for("the inputs left undecided", left, 120)
        again = [dict(d, id=f"again-{d['id']}") for d in first[:3] + later[:1]]
        produce_docs(kafka_bootstrap, own.input, again)
        got = decided(decisions(kafka_bootstrap, own, len(first) + len(later) + len(again)))
        assert "refusing" not in worker.log()
        assert mismatch(worker) == 0
    finally:
        assert worker.stop() == 0, worker.log()
    # One outcome per input: the first worker's 20, the 5 left undecided, and copies. The
    # new index knows the 5 only: copies of the first worker's documents are new to it.
    assert set(got) == {str(d["id"]) for d in first + later + again}
    copy_of_later = f"again-{later[0]['id']}"
    assert got.pop(copy_of_later) == ("duplicate", later[0]["id"])
    assert {d for d, _ in got.values()} == {"unique"}


def test_a_restart_that_changes_whether_duplicates_are_indexed_is_refused(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    """`dedup.index_duplicates` decides which documents the index holds: a restart with the
    other value is refused like another input mapping (a cluster's control topic refuses it
    too), instead of applied without a word."""
    topics, group = Topics.fresh(unique_topic), unique_topic("g")
    decide_then_stop(kafka_bootstrap, topics, group, tmp_path / "w1.log", articles(10, seed=63))
    refused = WorkerProcess(
        kafka_bootstrap,
        topics,
        group,
        tmp_path / "w2.log",
        env={"NEARDUP_DEDUP__INDEX_DUPLICATES": "false"},
    ).start()
    try:
        wait_for_log(refused, "refusing the changelog")
        assert "dedup.index_duplicates: index true, this worker false" in refused.log()
        assert refused.http("/healthz")[0] == 503 and mismatch(refused) == 1
    finally:
        assert refused.stop() == 0, refused.log()
