"""Scale-out replicas agree on their settings, or the odd one out refuses (real broker)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from neardup_stream import Document
from neardup_stream.config import STREAM_HOME_SHARDS, DedupConfig
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from tests.integration.harness import Topics, WorkerProcess, decisions, produce, read_all
from tests.integration.test_scale_out import SHARDS, offline, produce_to, replicas, wait_assigned
from tests.integration.test_worker import stream
from tests.unit.conftest import mutate

pytestmark = pytest.mark.integration
REFUSAL = "settings mismatch, this replica does not start its roles"


def gauge(worker: WorkerProcess, name: str) -> float | None:
    """The value of an unlabelled gauge on the replica's /metrics (None: not reachable)."""
    try:
        text = worker.http("/metrics")[1]
    except OSError:
        return None
    found = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(found.group(1)) if found else None


def wait_refused(worker: WorkerProcess, timeout: float = 120) -> str:
    """Until the replica exports the mismatch; its log then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert worker.alive(), f"the refused replica exited:\n{worker.log()}"
        if gauge(worker, "neardup_settings_mismatch") == 1:
            return worker.log_path.read_text(errors="replace")
        time.sleep(0.3)
    raise AssertionError(f"no settings mismatch reported:\n{worker.log()}")


def assert_refused(worker: WorkerProcess, *phrases: str) -> None:
    log = wait_refused(worker)
    errors = [line for line in log.splitlines() if REFUSAL in line]
    assert len(errors) == 1, errors  # one clear error, not a loop of them
    for phrase in phrases:
        assert phrase in errors[0], (phrase, errors[0])
    assert worker.http("/healthz")[0] == 503
    assert gauge(worker, "neardup_ready") == 0
    assert not re.search(r"role_partitions\{[^}]*\} [1-9]", worker.http("/metrics")[1])


def test_a_replica_restarted_with_another_threshold_refuses_and_the_others_decide_all(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(240, seed=81)
    want = offline(docs)
    assert sum(v[0] == "duplicate" for v in want.values()) > 50
    workers = replicas(kafka_bootstrap, topics, tmp_path, 3, partitions=6)
    odd = None
    try:
        for w in workers:
            w.wait_ready()
        workers[2].stop()
        odd = WorkerProcess(
            kafka_bootstrap,
            topics,
            workers[2].group,
            tmp_path / "r2-restarted.log",
            "r2",
            workers[2].extra,
            {**workers[2].env, "NEARDUP_DEDUP__THRESHOLD": "0.7"},
        ).start()
        assert_refused(odd, "dedup.threshold: cluster 0.8, this replica 0.7")
        wait_assigned(workers[:2], {"edge": 6, "shard": SHARDS})
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        assert gauge(odd, "neardup_settings_mismatch") == 1 and odd.alive()
    finally:
        for w in [*workers, *([odd] if odd else [])]:
            if w.alive():
                w.stop()
    assert sum(len(v) for v in got.values()) == len(docs), "not exactly once"
    assert {k: v[0] for k, v in got.items()} == want


def test_home_shards_changed_between_restarts_is_refused_naming_setting_and_values(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    [first] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    try:
        first.wait_ready()
    finally:
        first.stop()
    changed = WorkerProcess(
        kafka_bootstrap,
        topics,
        first.group,
        tmp_path / "changed.log",
        "r0",
        first.extra,
        {**first.env, "NEARDUP_DEDUP__HOME_SHARDS": str(2 * SHARDS)},
    ).start()
    try:
        assert_refused(changed, f"dedup.home_shards: cluster {SHARDS}, this replica {2 * SHARDS}")
    finally:
        changed.stop()


def test_internal_topics_that_do_not_fit_the_settings_are_refused_naming_topic_and_values(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    """Topics left by a deployment before the control topic existed: the check still holds."""
    shards_topic = f"{topics.input}.shards"
    kafka_admin.create_topics([NewTopic(shards_topic, 4, 1)])
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    try:
        assert_refused(
            worker, f"topic {shards_topic}: 4 partitions, expected {SHARDS} from dedup.home_shards"
        )
    finally:
        worker.stop()


def test_cluster_defaults_on_three_replicas_spread_the_index(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(300, seed=91)
    group = "g-" + topics.input
    flags = ["--scope", "topic", "--partitions", "3", "--max-batch", "50"]
    env = {"NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000"}
    workers = [
        WorkerProcess(kafka_bootstrap, topics, group, tmp_path / f"r{i}.log", f"r{i}", flags, env)
        for i in range(3)
    ]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.wait_ready()
        wait_assigned(workers, {"edge": 3, "shard": STREAM_HOME_SHARDS})
        produce_to(kafka_bootstrap, topics.input, [(i % 3, d) for i, d in enumerate(docs)])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        assert sum(len(v) for v in got.values()) == len(docs)
        held = wait_index_total(workers, len(docs))
    finally:
        for w in workers:
            if w.alive():
                w.stop()
    assert all(h <= 0.55 * len(docs) for h in held), held
    [shards] = kafka_admin.describe_topics([f"{group}.shards"])  # named after the group
    assert len(shards["partitions"]) == 24


def wait_index_total(workers: list[WorkerProcess], total: int, timeout: float = 120) -> list[float]:
    """Until the replicas' index gauges add up to `total` documents; each one's share."""
    deadline = time.monotonic() + timeout
    held: list[float] = []
    while time.monotonic() < deadline:
        held = [gauge(w, "neardup_index_documents") or 0.0 for w in workers]
        if sum(held) >= total:
            return held
        time.sleep(0.5)
    raise AssertionError(f"index gauges {held} never added up to {total}")


def test_two_pipelines_on_one_broker_with_default_internal_topics_do_not_cross_talk(
    kafka_bootstrap: str, unique_topic: object, tmp_path: Path
) -> None:
    a, b = Topics.fresh(unique_topic), Topics.fresh(unique_topic)
    docs_a, docs_b = stream(200, seed=101), stream(200, seed=102)
    # The same ids in both pipelines: any cross-talk shows up as a replay or a duplicate.
    docs_b = [{**d, "id": f"doc-101-{i}"} for i, d in enumerate(docs_b)]
    flags = ["--scope", "topic", "--max-batch", "50"]
    env = {"NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000"}
    one = WorkerProcess(kafka_bootstrap, a, "g-" + a.input, tmp_path / "a.log", "a0", flags, env)
    two = WorkerProcess(kafka_bootstrap, b, "g-" + b.input, tmp_path / "b.log", "b0", flags, env)
    # A third pipeline (input c) that reuses a's group, and so a's internal topics: refused.
    c = Topics.fresh(unique_topic)
    intruder = WorkerProcess(
        kafka_bootstrap, c, "g-" + a.input, tmp_path / "c.log", "c0", flags, env
    )
    try:
        for w in (one, two):
            w.start()
        for w in (one, two):
            w.wait_ready()
        intruder.start()
        assert_refused(intruder, "another pipeline", f"'{a.input}'", "--group-id")
        produce_to(kafka_bootstrap, a.input, [(0, d) for d in docs_a])
        produce_to(kafka_bootstrap, b.input, [(0, d) for d in docs_b])
        got_a = decisions(kafka_bootstrap, a, len(docs_a), timeout=240)
        got_b = decisions(kafka_bootstrap, b, len(docs_b), timeout=240)
    finally:
        for w in (one, two, intruder):
            if w.alive():
                w.stop()
    for docs, got in ((docs_a, got_a), (docs_b, got_b)):
        dedup = ShardedDeduplicator(DedupConfig(home_shards=24))
        want = {d.id: d.decision for d in dedup.process([Document.model_validate(x) for x in docs])}
        assert sum(len(v) for v in got.values()) == len(docs), "not exactly once"
        assert {k: v[0][0] for k, v in got.items()} == want


def test_a_new_generation_with_other_settings_reindexes_the_window_and_publishes_only_new_inputs(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """docs/operations/settings-change.md: stop generation 1, hand over to generation 2."""
    first = stream(150, seed=111)
    copies = [
        {"id": f"copy-{d['id']}", "text": mutate(str(d["text"]), 0.01, i)}
        for i, d in enumerate(first[:40])
    ]
    second = copies + stream(60, seed=112)
    env = {
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
        "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000",
    }
    flags = ["--scope", "topic", "--max-batch", "50"]
    g1, g2 = "g1-" + topics.input, "g2-" + topics.input
    old = WorkerProcess(kafka_bootstrap, topics, g1, tmp_path / "g1.log", "a0", flags, env)
    new = WorkerProcess(
        kafka_bootstrap,
        topics,
        g2,
        tmp_path / "g2.log",
        "b0",
        flags,
        {**env, "NEARDUP_DEDUP__THRESHOLD": "0.7", "NEARDUP_CLUSTER__HANDOVER_FROM": g1},
    )
    try:
        old.start().wait_ready()
        produce(kafka_bootstrap, topics.input, [*(json.dumps(d).encode() for d in first), b"{"])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 150
        old.stop()
        new.start().wait_ready(timeout=180)
        produce(kafka_bootstrap, topics.input, [*(json.dumps(d).encode() for d in second), b"["])
        got = decisions(kafka_bootstrap, topics, len(first) + len(second), timeout=240)
        dead = read_all(kafka_bootstrap, topics.dlq, 2, timeout=30)
    finally:
        for w in (old, new):
            if w.alive():
                w.stop()
    assert all(len(v) == 1 for v in got.values()), "an input was published twice"
    assert set(got) == {str(d["id"]) for d in first + second}
    assert len(dead) == 2, "a dead letter was published again (or lost)"
    parsed = [Document.model_validate(d) for d in first + second]
    old_config, new_config = (DedupConfig(home_shards=SHARDS, threshold=t) for t in (0.8, 0.7))
    want_old = {d.id: d.decision for d in ShardedDeduplicator(old_config).process(parsed[:150])}
    want_new = {d.id: d.decision for d in ShardedDeduplicator(new_config).process(parsed)}
    assert {k: got[k][0][0] for k in want_old} == want_old
    assert {str(d["id"]): got[str(d["id"])][0][0] for d in second} == {
        str(d["id"]): want_new[str(d["id"])] for d in second
    }
    assert all(got[str(c["id"])][0][0] == "duplicate" for c in copies)  # the window re-indexed


def test_replicas_starting_together_with_different_settings_agree_on_one_winner(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    group = "g-" + topics.input
    flags = ["--scope", "topic", "--home-shards", str(SHARDS)]
    workers = [
        WorkerProcess(
            kafka_bootstrap,
            topics,
            group,
            tmp_path / f"r{i}.log",
            f"r{i}",
            flags,
            {"NEARDUP_DEDUP__THRESHOLD": threshold},
        )
        for i, threshold in enumerate(("0.8", "0.7"))
    ]
    try:
        for w in workers:
            w.start()
        deadline = time.monotonic() + 120
        states: list[tuple[float, float]] = []
        while time.monotonic() < deadline:
            states = [
                (gauge(w, "neardup_ready") or 0.0, gauge(w, "neardup_settings_mismatch") or 0.0)
                for w in workers
            ]
            if sorted(states) == [(0, 1), (1, 0)]:
                break
            time.sleep(0.3)
        assert sorted(states) == [(0, 1), (1, 0)], states  # one winner, one refused
        loser = workers[[s[1] for s in states].index(1)]
        winner_threshold = "0.7" if loser is workers[0] else "0.8"
        assert_refused(loser, f"dedup.threshold: cluster {winner_threshold}")
    finally:
        for w in workers:
            w.stop()


def test_an_internal_topic_with_too_short_retention_is_raised_not_refused(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    votes = f"{topics.input}.votes"
    configs = {"retention.ms": "60000", "max.message.bytes": str(16 * 1024 * 1024)}
    kafka_admin.create_topics([NewTopic(votes, 1, 1, topic_configs=configs)])
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1, extra=["--max-age", "3600"])
    try:
        worker.wait_ready()
    finally:
        worker.stop()
    resource = ConfigResource(ConfigResourceType.TOPIC, votes, {"retention.ms": None})
    described = kafka_admin.describe_configs([resource], config_filter="all")["topic"][votes]
    assert described["retention.ms"]["value"] == str((3600 + 3600) * 1000 + 3_600_000)
    assert "raised retention.ms from 60000" in worker.log_path.read_text()
