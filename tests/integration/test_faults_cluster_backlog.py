"""Cluster fault suite (issue 50): a backlog through a gather whose buffers are small
(`cluster.gather_buffer_bytes`), so that its records and the votes it reads ahead are both over
their budgets, as 64 MiB are under a backlog of short documents. One replica (neither the
edge nor the gather) is paused while the backlog is produced, then the gather's replica while
the late shard votes: the gather reads the other shards' votes, far ahead of the records it
can hold, before the late shard's, which come before the records they are on are read. Every document is decided exactly once, as offline
`dedup --home-shards` decides the same stream, and every replica stays ready.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.cluster_faults import Cluster, decided_like_offline, pause, resume
from tests.integration.faults import create_topic, wait_for
from tests.integration.harness import Topics, WorkerProcess, produce
from tests.integration.test_cluster_stops import metric
from tests.integration.test_scale_out import SHARDS
from tests.integration.test_worker import stream

pytestmark = [pytest.mark.integration, pytest.mark.faults]
LAG = "neardup_role_lag_messages"
SHARD_LAG = re.compile(rf'^{LAG}\{{partition="\d+",role="shard"\}} (\S+)$', re.M)


def voted(voting: list[WorkerProcess], edge: list[WorkerProcess] | None = None) -> bool:
    """The shards of `voting` caught up with the log (and, given the replicas that may hold
    the edge, the input all appended to it)."""
    if edge is not None:
        lags = [metric(w, LAG, 'partition="0",role="edge"') for w in edge]
        if not any(lag == 0 for lag in lags):
            return False
    lags = [float(v) for w in voting for v in SHARD_LAG.findall(w.http("/metrics")[1])]
    return bool(lags) and all(lag <= 1 for lag in lags)  # 1: the last commit marker


def test_a_backlog_through_full_gather_buffers_is_decided_exactly_once(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(3000, seed=50)
    create_topic(kafka_bootstrap, topics.input)
    cluster = Cluster(
        kafka_bootstrap,
        topics,
        tmp_path,
        env={
            "NEARDUP_CLUSTER__GATHER_BUFFER_BYTES": "262144",
            "NEARDUP_WORKER__SESSION_TIMEOUT_MS": "90000",  # paused, it keeps its shards
        },
    )
    try:
        workers = cluster.start_all()
        cluster.wait_held(workers, "edge", 1, 60)
        cluster.wait_held(workers, "gather", 1, 60)
        wait_for(
            "every replica to hold its shards",
            lambda: all(w.held().get("shard") == SHARDS / 3 for w in workers),
            60,
        )
        quiet = [w for w in workers if not w.held().get("edge") and not w.held().get("gather")]
        late = quiet[0]  # a shard that votes after the others
        gather = next(w for w in workers if w.held().get("gather"))
        pause(late)
        produce(kafka_bootstrap, topics.input, (json.dumps(d).encode() for d in docs))
        others = [w for w in workers if w is not late]
        wait_for("the other shards to vote on the backlog", lambda: voted(others, others), 60)
        pause(gather)  # the votes pile up before the gather reads them
        resume(late)
        wait_for("the late shard to vote on it", lambda: voted([late]), 60)
        resume(gather)  # reads the others' votes far ahead first, then the late shard's
        decided_like_offline(kafka_bootstrap, topics, docs, timeout=300)
        for w in workers:
            assert w.alive() and w.http("/healthz")[0] == 200, w.log()
    finally:
        cluster.stop_all()
