"""Static membership fenced: another consumer joins the group under the worker's instance id.

Once (as the worker's own retried join does after a broker pause): the worker rejoins and
decides every document exactly once. Again and again (a second process configured with the
same instance id): the worker stops with exit code 78 and says why, instead of taking turns.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaConsumer
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from neardup_stream.worker.security_errors import EXIT_CONFIG
from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs
from tests.integration.test_cluster_stops import metric
from tests.integration.test_worker import expected, stream

pytestmark = pytest.mark.integration


def take_instance(bootstrap: str, group: str, topic: str, instance: str) -> None:
    """Join `group` as static member `instance` (fencing whoever held it), then close."""
    intruder = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=group,
        group_instance_id=instance,
        partition_assignment_strategy=(StickyPartitionAssignor,),
        enable_auto_commit=False,
    )
    try:
        intruder.subscribe([topic])
        wait_for(
            "the intruder's assignment", lambda: intruder.poll(200) or intruder.assignment(), 60
        )
    finally:
        intruder.close()


@pytest.fixture
def worker(kafka_bootstrap: str, topics: Topics, tmp_path: Path) -> Iterator[WorkerProcess]:
    """A started worker of group `group(topics)`, stopped after the test."""
    started = WorkerProcess(kafka_bootstrap, topics, group(topics), tmp_path / "w.log").start()
    yield started
    started.stop()


def group(topics: Topics) -> str:
    return "g-" + topics.input


def test_a_fenced_worker_rejoins_and_decides_every_document_once(
    kafka_bootstrap: str, topics: Topics, worker: WorkerProcess
) -> None:
    docs = stream(200, seed=5)
    worker.wait_ready()
    produce_docs(kafka_bootstrap, topics.input, docs[:100])
    assert len(decisions(kafka_bootstrap, topics, 100)) == 100
    take_instance(kafka_bootstrap, group(topics), topics.input, worker.instance)
    produce_docs(kafka_bootstrap, topics.input, docs[100:])
    got = decisions(kafka_bootstrap, topics, len(docs))
    assert all(len(v) == 1 for v in got.values()), "a document decided twice"
    assert {k: v[0] for k, v in got.items()} == expected(docs)
    assert worker.alive(), worker.log()
    assert "fenced instance id 'w1'" in worker.log_path.read_text()
    assert (metric(worker, "neardup_group_fenced_total", 'role="batch"') or 0) >= 1


def test_a_worker_whose_instance_id_another_consumer_keeps_taking_stops_and_says_why(
    kafka_bootstrap: str, topics: Topics, worker: WorkerProcess
) -> None:
    done = threading.Event()

    def intrude() -> None:  # a second process with the same instance id, joining again
        while not done.is_set() and worker.alive():
            take_instance(kafka_bootstrap, group(topics), topics.input, worker.instance)
            produce_docs(kafka_bootstrap, topics.input, stream(20, seed=len(worker.log())))
            done.wait(2.0)

    intruder = threading.Thread(target=intrude, daemon=True)
    try:
        worker.wait_ready()
        intruder.start()
        assert worker.wait_exit(timeout=240) == EXIT_CONFIG
        log = worker.log_path.read_text()
        assert "another live worker uses this instance id" in log, log[-4000:]
        assert log.count("another live worker uses this instance id") == 1  # said once
    finally:
        done.set()
        intruder.join(60)


def test_two_workers_started_with_one_instance_id_one_stops_and_the_other_decides(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    # As a user starting a second worker on the same host gets by default (both take the
    # host name): the second's join fences the first's membership in a heartbeat's answer,
    # with no input to commit. The first must not go on saying it is ready.
    first = WorkerProcess(kafka_bootstrap, topics, group(topics), tmp_path / "a.log").start()
    second = WorkerProcess(kafka_bootstrap, topics, group(topics), tmp_path / "b.log")
    try:
        first.wait_ready()
        second.start()
        wait_for("one of the two to stop", lambda: not (first.alive() and second.alive()), 120)
        stopped, running = (first, second) if not first.alive() else (second, first)
        assert stopped.wait_exit(timeout=10) == EXIT_CONFIG, stopped.log()
        assert "another live worker uses this instance id" in stopped.log_path.read_text()
        running.wait_ready()
        docs = stream(150, seed=11)
        produce_docs(kafka_bootstrap, topics.input, docs)
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert all(len(v) == 1 for v in got.values()), "a document decided twice"
        assert {k: v[0] for k, v in got.items()} == expected(docs)
        assert running.alive(), running.log()
    finally:
        for w in (first, second):
            if w.proc is not None:
                w.stop()
