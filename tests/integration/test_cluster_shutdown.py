"""A --cluster replica stops in time on SIGTERM, whatever it is doing, and loses nothing.

Against the real broker, one replica on one input partition. It decides a first part of the
input and stops; it starts again with a failpoint that stalls one thread for good (a broker
call that never returns) while it restores its changelog, while a transaction is in flight,
or both; then gets SIGTERM. It must exit 0 before a generous timeout: every step of its stop
is bounded by `worker.shutdown_timeout_s` (5 s here; the request timeout, which bounds a
commit, is raised to 100 s so only the shutdown deadline can end the wait). Started again
unarmed, it decides every input exactly once, like offline dedup.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.cluster_faults import Cluster, decided_like_offline
from tests.integration.faults import long_range_stream, wait_for
from tests.integration.harness import Topics, produce_docs

pytestmark = pytest.mark.integration
GENEROUS_S = 60  # the harness dumps every thread's stack if the replica is still running then
SLOW_BROKER = {
    "NEARDUP_KAFKA__REQUEST_TIMEOUT_MS": "100000",
    "NEARDUP_WORKER__SHUTDOWN_TIMEOUT_S": "5",
}


def stalled(cluster: Cluster, point: str) -> bool:
    return f"failpoint {point} stalls this thread" in cluster.logs()


@pytest.mark.faults  # a stall, then SIGTERM: with the fault scenarios (`make test-faults`)
@pytest.mark.parametrize(
    "points",
    [("restore_batch",), ("shard_produced",), ("restore_batch", "edge_produced")],
    ids=["restoring", "shard-transaction-in-flight", "restoring-and-edge-transaction"],
)
def test_a_replica_stalled_in_a_step_exits_promptly_on_sigterm_and_loses_nothing(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, points: tuple[str, ...]
) -> None:
    docs = long_range_stream(300, seed=141)
    first, second = docs[:200], docs[200:]
    cluster = Cluster(kafka_bootstrap, topics, tmp_path, size=1)
    try:
        cluster.start_all()
        produce_docs(kafka_bootstrap, topics.input, first)
        decided_like_offline(kafka_bootstrap, topics, first)
        assert cluster.stop(0) == 0

        armed = ",".join(f"{p}=stall" for p in points)
        # A lone replica decides in single stage (its shard role parked from the start, no
        # shard transaction): the roles' path, as in a larger cluster, is what stalls there.
        roles = {"NEARDUP_CLUSTER__SINGLE_STAGE": "false"} if "shard_produced" in points else {}
        # With a restore stalled, the edge appends (and reaches its transaction) only once it
        # stops waiting for the roles to settle: after `cluster.start_hold_s`, 60 s by default.
        hold = {"NEARDUP_CLUSTER__START_HOLD_S": "5"} if "edge_produced" in points else {}
        cluster.start(0, failpoints=armed, env={**SLOW_BROKER, **roles, **hold})
        produce_docs(kafka_bootstrap, topics.input, second)
        for p in points:
            wait_for(f"{p} to stall", lambda p=p: stalled(cluster, p), 180)
        if hold:
            assert "the groups did not settle in 5 s" in cluster.logs()
        assert cluster.stop(0, timeout=GENEROUS_S) == 0
        assert "not waiting for" in cluster.logs()  # the deadline ended the wait

        cluster.start(0).wait_ready()
        decided_like_offline(kafka_bootstrap, topics, docs)
    finally:
        cluster.stop_all()
