"""Fault suite: one replica (the default worker), alone and so in single stage, killed again
and again on a backlog with poison messages among the documents, at every point of its
transaction and its restore, and at moments nobody chose; every document is still decided
exactly once, as offline `dedup` decides it, and every malformed message is dead-lettered
exactly once with its reason.

`test_single_stage.py` kills it once, inside its second transaction. Here the kills follow
one another on the same state, each start restoring what the previous one left: produced and
not committed, committed and not yet accounted, in the middle of a restore, in the first
transaction after one; then SIGKILL and SIGTERM at times the test does not choose.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.integration.harness import Topics, WorkerProcess, decisions, read_all
from tests.integration.test_faults_storm import REASONS, _malformed
from tests.integration.test_scale_out import replicas
from tests.integration.test_single_stage import check, wait_stage
from tests.integration.test_worker import stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]
DOCS = 1500  # 900 first, then 200 before each unchosen fault, then the rest
STEPS = (  # each start dies at its failpoint; the next start restores what it left
    "edge_produced=kill@3",  # the third transaction produced, not committed
    "edge_committed=kill@2",  # committed, not yet accounted in memory
    "restore_batch=kill@1",  # restoring the shards and log partitions
    "edge_produced=kill@1",  # the first transaction after a restore
    "edge_committed=kill@1",
)


POISON = [kind for kind in REASONS if kind != "oversized"]  # every kind the storm has


def with_poison(docs: list[dict[str, object]], seed: int) -> list[tuple[str, bytes | None]]:
    """(kind, value) for `docs` with one malformed message of each kind spread among them."""
    bad = [(kind, _malformed(kind, seed)) for kind in POISON]
    out: list[tuple[str, bytes | None]] = []
    for i, doc in enumerate(docs):
        out.append(("doc", json.dumps(doc).encode()))
        out.extend(bad[i * len(bad) // len(docs) : (i + 1) * len(bad) // len(docs)])
    return out


def produce(bootstrap: str, topic: str, records: list[tuple[str, bytes | None]]) -> dict[int, str]:
    """Into partition 0 in order (a tombstone keyed, as a record needs a key or a value);
    the malformed messages' offsets and kinds."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    sent = [
        (kind, producer.send(topic, key=b"t" if value is None else None, value=value, partition=0))
        for kind, value in records
    ]
    producer.flush()
    bad = {future.get(30).offset: kind for kind, future in sent if kind != "doc"}
    producer.close()
    return bad


def decided(bootstrap: str, topics: Topics) -> int:
    return sum(len(v) for v in decisions(bootstrap, topics, 0, timeout=0).values())


def wait_decided(bootstrap: str, topics: Topics, worker: WorkerProcess, at_least: int) -> int:
    """Until at least `at_least` decisions are out (the replica must stay alive meanwhile)."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        n = decided(bootstrap, topics)
        if n >= at_least:
            return n
        assert worker.alive(), f"the replica exited:\n{worker.log()}"
        time.sleep(0.5)
    raise AssertionError(f"fewer than {at_least} decisions:\n{worker.log()}")


def test_a_lone_replica_killed_at_every_point_of_its_transaction_decides_each_input_once(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(DOCS, seed=66)
    more = (docs[900:1100], docs[1100:1300])  # fed before the SIGKILL and the SIGTERM
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1, failpoints={0: STEPS[0]})
    try:
        worker.wait_ready()
        wait_stage(worker, True)
        bad = produce(kafka_bootstrap, topics.input, with_poison(docs[:900], 1))
        progress = []
        for i, spec in enumerate(STEPS):
            if i:
                worker.env["NEARDUP_FAILPOINTS"] = spec
                worker.start()
            assert worker.wait_exit(180) == -signal.SIGKILL, f"{spec} did not fire"
            progress.append((spec, decided(kafka_bootstrap, topics)))
        worker.env.pop("NEARDUP_FAILPOINTS")
        # unarmed, fed more, then SIGKILL (a crash) and SIGTERM (a stop) once it has decided
        # 100 more: wherever it is then
        for n, fault in enumerate(("SIGKILL", "SIGTERM")):
            worker.start()
            worker.wait_ready()
            bad |= produce(kafka_bootstrap, topics.input, with_poison(more[n], 2 + n))
            before = wait_decided(
                kafka_bootstrap, topics, worker, decided(kafka_bootstrap, topics) + 100
            )
            if fault == "SIGKILL":
                assert worker.proc is not None
                worker.proc.kill()
                worker.proc.wait(30)
            else:
                assert worker.stop() == 0
            progress.append((fault, before))
        assert before < DOCS, f"the input was finished before the last fault: {progress}"
        worker.start()
        bad |= produce(kafka_bootstrap, topics.input, with_poison(docs[1300:], 4))
        got = decisions(kafka_bootstrap, topics, DOCS, timeout=300)
        dlq = read_all(kafka_bootstrap, topics.dlq, len(bad), timeout=60)
    finally:
        if worker.alive():
            worker.stop()
    assert {str(d["id"]) for d in docs} == set(got), progress
    check(got, docs)
    letters = [json.loads(m.value) for m in dlq]
    counted = Counter(letter["source"]["offset"] for letter in letters)
    assert {o: n for o, n in counted.items() if n != 1} == {}, "dead-lettered twice"
    assert set(counted) == set(bad), "a malformed message without its one dead letter"
    reasons = {letter["source"]["offset"]: letter["reason"] for letter in letters}
    assert reasons == {offset: REASONS[kind] for offset, kind in bad.items()}
