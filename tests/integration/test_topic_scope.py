"""One topology: `neardup-stream worker` with no flags deduplicates its whole input topic.

Against the real broker, on a 6-partition input where every near-copy lands on another
partition than its original: the worker at its defaults (topic scope, one replica, single
stage) finds every copy, each a duplicate of its own original; `--scope partition` keeps one
index per partition and so finds none of them, as it says it would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer

from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.unit.conftest import mutate, random_text

pytestmark = pytest.mark.integration
PARTITIONS = 6
PAIRS = 24


ORIGINALS = [random_text(7_000 + i, 120) for i in range(PAIRS)]


def produce(bootstrap: str, topic: str, kind: str) -> None:
    """The `PAIRS` originals (on partition i mod 6) or their near-copies (on the next one)."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for i, text in enumerate(ORIGINALS):
        body = text if kind == "orig" else mutate(text, 0.02, i)
        value = json.dumps({"id": f"{kind}-{i}", "text": body}).encode()
        partition = (i + (kind == "copy")) % PARTITIONS
        producer.send(topic, value=value, key=f"{kind}-{i}".encode(), partition=partition)
    producer.flush()
    producer.close()


def run(bootstrap: str, topics: Topics, tmp_path: Path, scope: str | None) -> dict:
    worker = WorkerProcess(
        bootstrap,
        topics,
        f"g-{scope or 'default'}-{topics.input}",
        tmp_path / f"{scope or 'default'}.log",
        extra=["--partitions", str(PARTITIONS)],
        scope=scope,
    ).start()
    try:
        worker.wait_ready()
        # Across partitions the worker decides in the order it reads, not the order produced:
        # the copies go in once every original is decided, so each has its original to match.
        produce(bootstrap, topics.input, "orig")
        assert len(decisions(bootstrap, topics, PAIRS)) == PAIRS, worker.log()
        produce(bootstrap, topics.input, "copy")
        got = decisions(bootstrap, topics, 2 * PAIRS)
        assert sum(len(v) for v in got.values()) == 2 * PAIRS, worker.log()
        return got
    finally:
        assert worker.stop() == 0, worker.log()


def test_the_default_worker_finds_the_copies_on_other_partitions(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    got = run(kafka_bootstrap, topics, tmp_path, None)
    assert all(len(v) == 1 for v in got.values()), got  # each input decided once
    for i in range(PAIRS):
        assert got[f"orig-{i}"] == [("unique", None)]
        assert got[f"copy-{i}"] == [("duplicate", f"orig-{i}")]


def test_partition_scope_compares_within_each_partition_only(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    got = run(kafka_bootstrap, topics, tmp_path, "partition")
    assert all(v == [("unique", None)] for v in got.values()), got


def test_the_default_worker_creates_no_partition_changelog_and_says_a_named_one_is_unused(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, kafka_admin: KafkaAdminClient
) -> None:
    group = f"g-changelog-{topics.input}"
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        group,
        tmp_path / "w.log",
        extra=["--partitions", str(PARTITIONS), "--changelog-topic", topics.changelog],
        scope=None,
    ).start()
    try:
        worker.wait_ready()
        produce(kafka_bootstrap, topics.input, "orig")
        assert len(decisions(kafka_bootstrap, topics, PAIRS)) == PAIRS, worker.log()
        said = [line for line in worker.log_path.read_text().splitlines() if " WARNING " in line]
        assert any(
            f"topics.changelog = {topics.changelog!r}" in line and "not read in topic scope" in line
            for line in said
        ), said
        existing = set(kafka_admin.list_topics())
        assert f"{group}.shard-changelog" in existing  # where its index is
        assert topics.changelog not in existing and f"{group}.changelog" not in existing
    finally:
        assert worker.stop() == 0, worker.log()
