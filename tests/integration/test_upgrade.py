"""Upgrading a 0.2 per-partition deployment to topic scope (docs/operations/upgrading.md).

Against the real broker: a worker of partition scope (0.2's worker without `--cluster`)
decides a 2-partition input under group g1 and stops. Started again as 0.3 runs it (no
flags, topic scope) under g1 it is refused, naming `--scope partition` and the upgrade page.
Started under a new group g2 with `--handover-from g1`, it indexes the retained input
without publishing it again and decides only what came after: every input is decided
exactly once, no dead letter is published twice, and the near-copies of old documents that
arrive after the upgrade are found (the index was rebuilt from the retained input).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.harness import Topics, WorkerProcess, decisions, produce, read_all
from tests.integration.test_pipelines import wait_for_log
from tests.integration.test_worker import stream
from tests.unit.conftest import mutate

pytestmark = pytest.mark.integration


def test_a_partition_scope_generation_hands_over_to_topic_scope_deciding_each_input_once(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    first = stream(120, seed=131)
    copies = [
        {"id": f"copy-{d['id']}", "text": mutate(str(d["text"]), 0.01, i)}
        for i, d in enumerate(first[:30])
    ]
    second = copies + stream(40, seed=132)
    env = {"NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000"}
    g1, g2 = "g1-" + topics.input, "g2-" + topics.input
    flags = ["--partitions", "2", "--max-batch", "50"]
    old = WorkerProcess(
        kafka_bootstrap, topics, g1, tmp_path / "old.log", "a0", flags, env, scope="partition"
    )
    same_group = WorkerProcess(
        kafka_bootstrap, topics, g1, tmp_path / "same.log", "a0", flags, env, scope=None
    )
    new = WorkerProcess(
        kafka_bootstrap,
        topics,
        g2,
        tmp_path / "new.log",
        "b0",
        [*flags, "--handover-from", g1],
        env,
        scope=None,
    )
    try:
        old.start().wait_ready()
        produce(kafka_bootstrap, topics.input, [*(json.dumps(d).encode() for d in first), b"{"])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 120
        assert old.stop() == 0, old.log()

        same_group.start()
        wait_for_log(same_group, "is run in partition scope (--scope partition")
        assert "docs/operations/upgrading.md" in same_group.log_path.read_text()
        assert same_group.http("/healthz")[0] == 503
        assert same_group.stop() == 0, same_group.log()

        new.start().wait_ready(timeout=180)
        assert "handover from generation " + g1 + " of partition scope" in new.log_path.read_text()
        produce(kafka_bootstrap, topics.input, [*(json.dumps(d).encode() for d in second), b"["])
        got = decisions(kafka_bootstrap, topics, len(first) + len(second), timeout=240)
        dead = read_all(kafka_bootstrap, topics.dlq, 2, timeout=30)
    finally:
        for w in (old, same_group, new):
            if w.alive():
                w.stop()
    assert all(len(v) == 1 for v in got.values()), "an input was published twice"
    assert set(got) == {str(d["id"]) for d in first + second}
    assert len(dead) == 2, "a dead letter was published again (or lost)"
    missed = [c["id"] for c in copies if got[str(c["id"])][0][0] != "duplicate"]
    assert not missed, f"copies of pre-upgrade documents decided unique: {missed}"
