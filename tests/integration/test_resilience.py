"""Exactly-once under SIGKILL of the default worker (topic scope), and surviving a broker
restart mid-stream."""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import KAFKA_SH
from tests.integration.harness import Topics, WorkerProcess, decisions, produce_docs, read_all
from tests.integration.test_worker import expected, stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # `make test-faults`


def _feed(
    bootstrap: str, topic: str, docs: list[dict[str, object]], seconds: float
) -> threading.Thread:
    """Produce `docs` spread over about `seconds`, in a background thread."""
    chunks = 20

    def run() -> None:
        size = -(-len(docs) // chunks)
        for start in range(0, len(docs), size):
            produce_docs(bootstrap, topic, docs[start : start + size])
            time.sleep(seconds / chunks)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _assert_exactly_once(got: dict, docs: list[dict[str, object]]) -> None:
    ids = [str(d["id"]) for d in docs]
    missing = [i for i in ids if i not in got]
    repeated = {i: v for i, v in got.items() if len(v) != 1}
    assert not missing, f"{len(missing)} documents without a decision, e.g. {missing[:5]}"
    assert not repeated, (
        f"{len(repeated)} documents decided more than once: {list(repeated.items())[:3]}"
    )
    assert set(got) == set(ids)


def test_hard_kills_leave_exactly_one_decision_per_document(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    docs = stream(10_000, seed=11)
    topics = Topics.fresh(unique_topic)
    group = "g-" + topics.input
    log = tmp_path / "killed.log"
    feeder = _feed(kafka_bootstrap, topics.input, docs, seconds=40)
    rng = random.Random(5)
    kills = 0
    worker = WorkerProcess(
        kafka_bootstrap, topics, group, log, extra=["--max-batch", "100"], scope=None
    ).start()
    try:
        while kills < 4:
            worker.wait_ready(timeout=180)
            time.sleep(rng.uniform(1.0, 4.0))
            worker.kill()
            kills += 1
            worker = WorkerProcess(
                kafka_bootstrap, topics, group, log, extra=["--max-batch", "100"], scope=None
            ).start()
        feeder.join()
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=300)
        # keep draining a little to catch late duplicates
        time.sleep(3)
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=10)
    finally:
        worker.stop()
    assert log.read_text().count("restored") >= kills
    _assert_exactly_once(got, docs)
    assert read_all(kafka_bootstrap, topics.dlq, 0, timeout=3) == []

    # an uninterrupted worker run over the same input decides the same unique set
    clean = Topics(topics.input, *(f"{unique_topic('clean')}.{s}" for s in ("u", "d", "q", "c")))
    reference = WorkerProcess(
        kafka_bootstrap, clean, group + "-clean", tmp_path / "clean.log", scope=None
    )
    reference.start()
    try:
        reference.wait_ready()
        ref = decisions(kafka_bootstrap, clean, len(docs), timeout=300)
    finally:
        reference.stop()
    _assert_exactly_once(ref, docs)
    uniques = {i for i, v in got.items() if v[0][0] == "unique"}
    assert uniques == {i for i, v in ref.items() if v[0][0] == "unique"}
    assert uniques == {i for i, (d, _) in expected(docs).items() if d == "unique"}


def _broker_is_ours() -> bool:
    return subprocess.run(["bash", str(KAFKA_SH), "status"], capture_output=True).returncode == 0


def test_worker_survives_a_broker_restart(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    if not _broker_is_ours():
        pytest.skip("the broker at KAFKA_BOOTSTRAP_SERVERS is not managed by deploy/local/kafka.sh")
    docs = stream(3_000, seed=12)
    topics = Topics.fresh(unique_topic)
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        extra=["--max-batch", "100"],
        scope=None,
    ).start()
    try:
        worker.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, docs[:1500])
        time.sleep(1.0)
        restart = subprocess.run(
            ["bash", str(KAFKA_SH), "restart"],
            capture_output=True,
            text=True,
            timeout=300,
            env=os.environ,
        )
        assert restart.returncode == 0, restart.stderr[-3000:]
        produce_docs(kafka_bootstrap, topics.input, docs[1500:])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=300)
        assert worker.proc is not None and worker.proc.poll() is None, worker.log()
    finally:
        code = worker.stop()
    assert code == 0, worker.log()
    _assert_exactly_once(got, docs)
