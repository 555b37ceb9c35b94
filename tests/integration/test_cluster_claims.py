"""Two pipelines given the same explicit internal topics never share them (issue 12).

Against the real broker. Pipeline A runs with explicit internal topic names; then
- pipeline B (another input topic and group, so its own control topic) given A's internal
  topics, and
- pipeline C (another input topic, A's group, its own explicit control topic)
each refuse at start-up, naming the topic and both pipelines (error, unready, metric), and
change nothing in them (no record written; B, with a longer window, raises no retention of
A's) nor create anything (B's own, missing gather changelog stays missing); A decides its input exactly once, like offline dedup.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

from neardup_stream.worker.cluster.internal_topics import RETENTION_MS, describe
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_cluster_settings import assert_refused
from tests.integration.test_scale_out import SHARDS, offline, produce_to
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration
YEAR_S = 365 * 86400


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()}
    finally:
        consumer.close()


def topic_names(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def retention(bootstrap: str, topic: str) -> str | None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return describe(admin, [topic])[topic].configs.get(RETENTION_MS)
    finally:
        admin.close()


def test_pipelines_given_the_same_explicit_internal_topics_are_refused_naming_both(
    kafka_bootstrap: str, unique_topic: object, tmp_path: Path
) -> None:
    a, b, c = (Topics.fresh(unique_topic) for _ in range(3))
    env = {
        **a.internal_env(),  # explicit names, shared by every pipeline below
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
        "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000",
        "NEARDUP_DEDUP__MAX_AGE_SECONDS": str(10 * YEAR_S),  # decides like no window here
    }
    flags = ["--scope", "topic", "--max-batch", "50"]
    ga, gb = "g-" + a.input, "g-" + b.input

    def replica(topics: Topics, group: str, name: str, extra: dict[str, str]) -> WorkerProcess:
        log = tmp_path / f"{name}.log"
        return WorkerProcess(kafka_bootstrap, topics, group, log, name, flags, {**env, **extra})

    one = replica(a, ga, "a0", {})
    own_topic = b.input + ".gather-changelog"  # missing: nobody's, but B is refused first
    b_env = {
        "NEARDUP_DEDUP__MAX_AGE_SECONDS": str(20 * YEAR_S),
        "NEARDUP_CLUSTER__GATHER_CHANGELOG": own_topic,
    }
    other_group = replica(b, gb, "b0", b_env)
    same_group = replica(c, ga, "c0", {"NEARDUP_CLUSTER__CONTROL": c.input + ".control"})
    docs = stream(200, seed=131)
    try:
        one.start().wait_ready()
        fingerprints = a.internal_env()["NEARDUP_CLUSTER__FINGERPRINTS"]
        before = end_offsets(kafka_bootstrap, fingerprints)
        kept = retention(kafka_bootstrap, fingerprints)
        for intruder, theirs, group in ((other_group, b, gb), (same_group, c, ga)):
            intruder.start()
            assert_refused(
                intruder,
                f"{fingerprints!r}",
                f"input topic {a.input!r}, group {ga!r}",  # the owner
                f"input topic {theirs.input!r}, group {group!r}",  # this replica
                "NEARDUP_CLUSTER__FINGERPRINTS",
            )
        assert end_offsets(kafka_bootstrap, fingerprints) == before  # nothing written
        assert retention(kafka_bootstrap, fingerprints) == kept  # nor raised by B's window
        assert own_topic not in topic_names(kafka_bootstrap)  # nor anything created
        produce_to(kafka_bootstrap, b.input, [(0, d) for d in docs[:50]])
        produce_to(kafka_bootstrap, c.input, [(0, d) for d in docs[:50]])
        produce_to(kafka_bootstrap, a.input, [(0, d) for d in docs])
        got = decisions(kafka_bootstrap, a, len(docs), timeout=240)
    finally:
        for w in (one, other_group, same_group):
            if w.alive():
                w.stop()
    assert sum(len(v) for v in got.values()) == len(docs), "not exactly once"
    assert {k: v[0][0] for k, v in got.items()} == {k: v[0] for k, v in offline(docs).items()}
    for t in (b, c):  # the refused pipelines decided nothing
        assert decisions(kafka_bootstrap, t, 0, timeout=5) == {}
