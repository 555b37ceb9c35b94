"""`/healthz` ready means able to decide: a worker or a replica started again on retained state
answers 503, naming what it restores, until its state is restored (a rolling update that
waits for readiness does not move on while a replica still restores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import produce_to, replicas
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def started(
    mode: str, bootstrap: str, topics: Topics, log_dir: Path, failpoints: str | None = None
) -> WorkerProcess:
    """One worker (`single`) or one `--cluster` replica, its log in `log_dir`."""
    log_dir.mkdir()
    if mode == "cluster":
        armed = {0: failpoints} if failpoints else None
        return replicas(bootstrap, topics, log_dir, 1, failpoints=armed)[0]
    env = {"NEARDUP_FAILPOINTS": failpoints} if failpoints else {}
    return WorkerProcess(bootstrap, topics, "g-" + topics.input, log_dir / "w.log", env=env).start()


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_restart_is_unready_until_its_state_is_restored(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: str
) -> None:
    docs = stream(160, seed=211)
    first, second = docs[:100], docs[100:]
    worker = started(mode, kafka_bootstrap, topics, tmp_path / "a")
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first)
        worker.stop()

        # Started again, its restore hangs on the first batch of changelog records.
        worker = started(mode, kafka_bootstrap, topics, tmp_path / "b", "restore_batch=stall@1")
        wait_for(
            "the restore to hang",
            lambda: "failpoint restore_batch stalls this thread" in worker.log(),
            120,
        )
        answers = []
        for _ in range(20):  # the broker answers each round: not ready, and why
            status, body = worker.http("/healthz")
            answers.append((status, body))
            worker.held()  # /metrics too: it serves while it restores
        assert all(status == 503 and "restoring" in body for status, body in answers), answers
        worker.stop()

        # Without the hang it restores, turns ready and decides the rest against the first.
        worker = started(mode, kafka_bootstrap, topics, tmp_path / "c")
        worker.wait_ready()
        assert worker.http("/healthz") == (200, "ready\n")
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in second])
        got = decisions(kafka_bootstrap, topics, len(docs))
        assert sorted(got) == sorted(str(d["id"]) for d in docs)
        assert all(len(v) == 1 for v in got.values())
    finally:
        if worker.alive():
            worker.stop()
