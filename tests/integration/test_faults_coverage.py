"""Partitions added to the input while the workers run or are down are read (issue 50).

A static member that rejoins a Stable group gets its previous assignment, and no member then
compares the partition count with it (`neardup_stream.worker.runtime.coverage`): without the coverage check
the partitions added while the workers were down had no reader, for good, every worker ready.
Each scenario counts every input's outcome on the output topics.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewPartitions

from tests.integration.cluster_faults import Cluster
from tests.integration.faults import assert_exactly_once, create_topic, wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import produce_to
from tests.integration.test_worker import stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]
REJOINED = "partitions no member of group"


def grow(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_partitions({topic: NewPartitions(total_count=partitions)})
    finally:
        admin.close()


def spread(docs: list[dict[str, object]], partitions: int) -> list[tuple[int, dict[str, object]]]:
    return [(i % partitions, d) for i, d in enumerate(docs)]


def test_partitions_added_while_the_worker_is_down_are_read_after_its_restart(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=1)
    first, then = stream(200, seed=61), stream(600, seed=62)
    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log")
    worker.start().wait_ready()
    produce_to(kafka_bootstrap, topics.input, spread(first, 1))
    assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first), worker.log()
    assert worker.stop() == 0, worker.log()
    grow(kafka_bootstrap, topics.input, 3)
    worker.start()
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, spread(then, 3))
        got = decisions(kafka_bootstrap, topics, len(first) + len(then), timeout=180)
        assert_exactly_once(got, [str(d["id"]) for d in first + then])
        assert REJOINED in worker.log(50_000)
        wait_for("the worker to be ready again", worker.healthy, 60)
    finally:
        assert worker.stop() == 0, worker.log()


def test_partitions_added_while_the_worker_runs_are_read(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=1)
    first, then = stream(100, seed=63), stream(300, seed=64)
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        env={"NEARDUP_WORKER__METADATA_MAX_AGE_MS": "2000"},
    )
    worker.start()
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, spread(first, 1))
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first), worker.log()
        grow(kafka_bootstrap, topics.input, 3)
        produce_to(kafka_bootstrap, topics.input, spread(then, 3))
        got = decisions(kafka_bootstrap, topics, len(first) + len(then), timeout=180)
        assert_exactly_once(got, [str(d["id"]) for d in first + then])
    finally:
        assert worker.stop() == 0, worker.log()


def test_partitions_added_while_every_replica_is_down_are_read_after_they_restart(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=3)
    first, then = stream(300, seed=65), stream(600, seed=66)
    cluster = Cluster(kafka_bootstrap, topics, tmp_path)
    try:
        cluster.start_all()
        produce_to(kafka_bootstrap, topics.input, spread(first, 3))
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first), cluster.logs()
        for i in range(cluster.size):
            assert cluster.stop(i) == 0, cluster.workers[i].log()
        grow(kafka_bootstrap, topics.input, 6)
        workers = cluster.start_all()
        produce_to(kafka_bootstrap, topics.input, spread(then, 6))
        got = decisions(kafka_bootstrap, topics, len(first) + len(then), timeout=300)
        assert_exactly_once(got, [str(d["id"]) for d in first + then])
        cluster.wait_held(workers, "edge", 6, 60)
        wait_for("every replica to be ready", lambda: all(w.healthy() for w in workers), 60)
    finally:
        cluster.stop_all()


def test_partitions_added_while_the_replicas_run_are_read(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    create_topic(kafka_bootstrap, topics.input, partitions=3)
    first, then = stream(150, seed=67), stream(450, seed=68)
    cluster = Cluster(
        kafka_bootstrap, topics, tmp_path, env={"NEARDUP_WORKER__METADATA_MAX_AGE_MS": "2000"}
    )
    try:
        workers = cluster.start_all()
        produce_to(kafka_bootstrap, topics.input, spread(first, 3))
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first), cluster.logs()
        grow(kafka_bootstrap, topics.input, 6)
        produce_to(kafka_bootstrap, topics.input, spread(then, 6))
        got = decisions(kafka_bootstrap, topics, len(first) + len(then), timeout=300)
        assert_exactly_once(got, [str(d["id"]) for d in first + then])
        cluster.wait_held(workers, "edge", 6, 60)
    finally:
        cluster.stop_all()
