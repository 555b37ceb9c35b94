"""Fault injection: the broker paused (SIGSTOP) for longer than the worker's session timeout,
and then restarted, mid-stream, under the default worker alone (one replica, single stage)
and under three replicas. No decision is lost or repeated.

This test runs a broker of its own (deploy/local/kafka.sh on the first free port pair from
$KAFKA_FAULT_PORT, default 29092, with a data dir under the test's tmp dir), so the shared
broker is never disturbed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.integration.cluster_faults import Cluster, decided_like_offline
from tests.integration.faults import (
    Broker,
    Feeder,
    assert_exactly_once,
    create_topic,
    doc_records,
    free_port_pair,
    long_range_stream,
    wait_committed,
    wait_for,
)
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decisions,
)
from tests.integration.test_worker import expected

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # `make test-faults`

SESSION_TIMEOUT_S = 10  # the worker's default session.timeout.ms
PAUSE_S = SESSION_TIMEOUT_S + 6


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    port = free_port_pair(int(os.environ.get("KAFKA_FAULT_PORT", "29092")))
    own = Broker(port, tmp_path_factory.mktemp(f"kafka-{port}"))
    own.start()
    try:
        yield own
    finally:
        own.stop()


def _hold(seconds: float, *workers: WorkerProcess) -> None:
    """Keep a fault in place for `seconds` (its length is the point), the workers staying up."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        for worker in workers:
            assert worker.alive(), f"worker exited during a broker fault:\n{worker.log()}"
        time.sleep(0.5)


def test_broker_paused_then_restarted_mid_stream(
    broker: Broker, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    docs = long_range_stream(8000, seed=51)
    topics = Topics.fresh(unique_topic)
    create_topic(broker.address, topics.input)
    group = "g-" + topics.input
    worker = WorkerProcess(
        broker.address, topics, group, tmp_path / "w.log", extra=["--max-batch", "100"], scope=None
    ).start()
    feeder = Feeder(broker.address, topics.input, doc_records(docs), chunks=40, every=1.0)
    try:
        worker.wait_ready()
        feeder.start()
        before = wait_committed(broker.address, topics.input, 800, worker, timeout=120)
        broker.pause()
        try:
            _hold(PAUSE_S, worker)
        finally:
            broker.resume()
        after = wait_committed(broker.address, topics.input, before + 1000, worker, timeout=180)
        assert after < len(docs), "the input was finished before the restart"
        broker.stop()
        broker.start()
        done = wait_committed(broker.address, topics.input, len(docs), worker, timeout=300)
        feeder.join(timeout=60)
        assert feeder.error is None, f"the test's producer failed: {feeder.error!r}"
        got = decisions(broker.address, topics, len(docs), timeout=60)
        assert worker.alive(), worker.log()
        assert done == len(docs)
    finally:
        code = worker.stop()
    assert code == 0, worker.log()
    assert_exactly_once(got, [str(d["id"]) for d in docs])
    want = expected(docs)
    assert {i: v[0] for i, v in got.items()} == want


def test_three_replicas_through_a_broker_paused_then_restarted_decide_like_offline(
    broker: Broker, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    """The broker paused past the replicas' session timeout and their transaction timeout
    (their memberships expire; open transactions may be aborted under them), then restarted,
    while input flows to three `--cluster` replicas: every input decided once, as offline."""
    docs = long_range_stream(800, seed=53)
    topics = Topics.fresh(unique_topic)
    create_topic(broker.address, topics.input)
    cluster = Cluster(broker.address, topics, tmp_path)
    feeder = Feeder(broker.address, topics.input, doc_records(docs), chunks=80, every=0.5)
    try:
        workers = cluster.start_all()
        feeder.start()
        wait_for("a first part fed", lambda: feeder.sent >= 200, 120)
        broker.pause()
        try:
            _hold(PAUSE_S, *workers)
        finally:
            broker.resume()
        wait_for("more fed after the pause", lambda: feeder.sent >= 500, 180)
        assert feeder.sent < len(docs), "the input was all fed before the restart"
        broker.stop()
        broker.start()
        feeder.join(timeout=300)
        assert feeder.error is None, f"the test's producer failed: {feeder.error!r}"
        decided_like_offline(broker.address, topics, docs, timeout=400)
        for w in workers:
            wait_for(f"{w.instance} healthy", lambda w=w: w.alive() and w.healthy(), 60)
    finally:
        cluster.stop_all()
