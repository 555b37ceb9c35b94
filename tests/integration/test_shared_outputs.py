"""Two pipelines writing the same output topics: the second is refused at start, naming the
topics and both pipelines, and writes nothing to them (issue 50). Another input's decisions
would mix with the first pipeline's, each against another index; the same input under
another group would decide every input a second time. (A new generation that hands over
from the first is the one exception: `test_cluster_settings`.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import SHARDS, produce_to
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def pipeline(
    mode: str, bootstrap: str, topics: Topics, group: str, log: Path, prefix: str
) -> WorkerProcess:
    """A worker (or `--cluster` replica) of `group` on `topics`, its own changelog and
    internal topics (named after `prefix`)."""
    own = dataclasses.replace(topics, changelog=f"{prefix}.changelog")
    flags, env = [], {}
    if mode == "cluster":
        flags = ["--scope", "topic", "--max-batch", "50"]
        names = ("fingerprints", "payloads", "votes", "shards", "shard-changelog")
        env = {f"NEARDUP_CLUSTER__{n.upper().replace('-', '_')}": f"{prefix}.{n}" for n in names}
        env["NEARDUP_CLUSTER__GATHER_CHANGELOG"] = f"{prefix}.gather-changelog"
        env["NEARDUP_DEDUP__HOME_SHARDS"] = str(SHARDS)
    return WorkerProcess(bootstrap, own, group, log, "a0", flags, env).start()


@pytest.mark.parametrize("case", ["another input", "the same input, another group"])
@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_second_pipeline_on_the_same_outputs_is_refused_and_writes_nothing(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: str, case: str
) -> None:
    docs, others = stream(30, seed=121), stream(20, seed=122)
    first = pipeline(
        mode, kafka_bootstrap, topics, "ga-" + topics.input, tmp_path / "a.log", f"{topics.input}-a"
    )
    second_topics = (
        topics
        if case.startswith("the same")
        else dataclasses.replace(topics, input=topics.input + "-b")
    )
    second = None
    try:
        first.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        assert len(decisions(kafka_bootstrap, topics, len(docs))) == len(docs)
        second = pipeline(
            mode,
            kafka_bootstrap,
            second_topics,
            "gb-" + topics.input,
            tmp_path / "b.log",
            f"{topics.input}-b",
        )
        wait_for(
            "the refusal", lambda: "are written by another pipeline" in second.log(50_000), 120
        )
        line = next(
            x for x in second.log(50_000).splitlines() if "written by another pipeline" in x
        )
        assert repr(topics.unique) in line and repr(topics.dlq) in line
        assert ("a second time" in line) == case.startswith("the same")
        assert second.alive() and second.http("/healthz")[0] == 503
        if second_topics.input != topics.input:
            produce_to(kafka_bootstrap, second_topics.input, [(0, d) for d in others])
        # Only the first pipeline's decisions, once each.
        got = decisions(kafka_bootstrap, topics, len(docs) + 1, timeout=10)
        assert sorted(got) == sorted(str(d["id"]) for d in docs)
        assert all(len(v) == 1 for v in got.values())
    finally:
        for w in (first, second):
            if w is not None and w.alive():
                w.stop()
