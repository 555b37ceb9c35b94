"""The single-stage replica (`neardup_stream.worker.cluster.single_stage`): while one replica is the whole
cluster it decides each batch in one transaction, with no payload or votes records, and
decides exactly like offline `dedup`; it leaves when a second replica joins and enters again
when it leaves; a kill inside its transaction loses and repeats nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from neardup_stream.worker.cluster.log_record import is_decided, sources_of
from tests.integration.harness import Topics, WorkerProcess, decisions, read_all
from tests.integration.test_scale_out import offline, produce_to, replicas, wait_assigned
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def wait_stage(worker: WorkerProcess, on: bool, timeout: float = 90) -> None:
    """Until the replica says it is (or is not) in single stage (`neardup_single_stage`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert worker.alive(), f"the replica exited:\n{worker.log()}"
        if worker.gauge("neardup_single_stage") == float(on):
            return
        time.sleep(0.2)
    raise AssertionError(f"single stage never {'on' if on else 'off'}:\n{worker.log()}")


def check(got: dict, docs: list[dict[str, object]]) -> None:
    """Exactly one decision per document, each the offline `dedup`'s (same home shards)."""
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"
    want = offline(docs)
    assert {k: v[0] for k, v in got.items()} == want


def test_one_replica_decides_in_one_transaction_a_batch_like_offline_dedup(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(300, seed=61)
    docs += [dict(docs[7]), dict(docs[40])]  # replayed ids: their first decision again
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1, partitions=3)
    try:
        worker.wait_ready()
        wait_stage(worker, True)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        assert worker.gauge("neardup_single_stage") == 1.0  # it never left
    finally:
        worker.stop()
    assert sum(len(v) for v in got.values()) == len(docs)  # a replay decided again, the same
    assert {k: v[0] for k, v in got.items()} == offline(docs)
    assert all(len(set(v)) == 1 for v in got.values())
    # nothing went through the roles' hops: no payload and no votes records
    for hop in ("payloads", "votes"):
        assert read_all(kafka_bootstrap, f"{topics.input}.{hop}", 0, timeout=5) == []
    # and the log records are decided ones: every input once, no fingerprints
    log = read_all(kafka_bootstrap, f"{topics.input}.fingerprints", 1, timeout=30)
    assert log and all(is_decided(r.value) for r in log)
    logged = [s for r in log for s in sources_of(r.value, topics.input)]
    assert len(logged) == len(set(logged)) == len(docs)


def test_a_replica_started_on_a_backlog_decides_it_all_in_single_stage(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, kafka_admin: KafkaAdminClient
) -> None:
    """Documents waiting when the replica starts: its edge appends nothing until the shard
    and gather roles settled, so the first batch is already single stage (no payload or
    votes record: nothing went through the three stages and a hand-over)."""
    kafka_admin.create_topics([NewTopic(topics.input, 1, 1)])
    docs = stream(400, seed=65)
    produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    try:
        worker.wait_ready()
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        assert worker.gauge("neardup_single_stage") == 1.0
    finally:
        worker.stop()
    check(got, docs)
    for hop in ("payloads", "votes"):
        assert read_all(kafka_bootstrap, f"{topics.input}.{hop}", 0, timeout=5) == []
    log = read_all(kafka_bootstrap, f"{topics.input}.fingerprints", 1, timeout=30)
    assert log and all(is_decided(r.value) for r in log)


def test_a_second_replica_joining_and_leaving_hands_over_without_a_difference(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(360, seed=62)
    parts = [docs[:120], docs[120:240], docs[240:]]
    [r0] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    r1: WorkerProcess | None = None
    try:
        r0.wait_ready()
        wait_stage(r0, True)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in parts[0]])
        decisions(kafka_bootstrap, topics, len(parts[0]), timeout=120)
        [r1] = replicas(kafka_bootstrap, topics, tmp_path, 1, first=1)
        r1.wait_ready()
        wait_stage(r0, False)
        wait_assigned([r0, r1], {"shard": 6})
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in parts[1]])
        decisions(kafka_bootstrap, topics, len(parts[0]) + len(parts[1]), timeout=180)
        assert r1.stop() == 0
        r1 = None
        wait_stage(r0, True, timeout=180)  # the whole cluster again: single stage again
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in parts[2]])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=180)
    finally:
        for w in (r0, r1):
            if w is not None and w.alive():
                w.stop()
    assert {str(d["id"]) for d in docs} == set(got)
    check(got, docs)


def test_a_kill_inside_a_single_stage_transaction_loses_and_repeats_nothing(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(240, seed=63)
    [worker] = replicas(
        kafka_bootstrap, topics, tmp_path, 1, failpoints={0: "edge_produced=kill@2"}
    )
    try:
        worker.wait_ready()
        wait_stage(worker, True)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        assert worker.wait_exit(120) != 0, "the failpoint did not fire"
        worker.env.pop("NEARDUP_FAILPOINTS")
        worker.start()
        worker.wait_ready()
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
    finally:
        if worker.alive():
            worker.stop()
    assert {str(d["id"]) for d in docs} == set(got)
    check(got, docs)


def test_two_replicas_joining_a_single_stage_replica_settle_every_group(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """Scaling one replica to three: the first leaves single stage and every group settles
    over the three (its edge keeps its membership while it asks, parks and leaves). One
    input partition carries the documents: offline `dedup` reads them in the same order."""
    docs = stream(240, seed=64)
    [r0] = replicas(kafka_bootstrap, topics, tmp_path, 1, partitions=3)
    others: list[WorkerProcess] = []
    try:
        r0.wait_ready()
        wait_stage(r0, True)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[:120]])
        others = replicas(kafka_bootstrap, topics, tmp_path, 2, partitions=3, first=1)
        for w in others:
            w.wait_ready()
        wait_assigned([r0, *others], {"edge": 3, "shard": 6})
        wait_stage(r0, False)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[120:]])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
    finally:
        for w in (r0, *others):
            if w.alive():
                w.stop()
    assert {str(d["id"]) for d in docs} == set(got)
    check(got, docs)
