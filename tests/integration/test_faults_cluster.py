"""Cluster fault suite (issue 12): three `--cluster` replicas against the real broker, faulted
while input flows, still give every input exactly one decision, the one offline
`neardup-stream dedup --home-shards 6` gives the same stream (one input partition, so the
input order is the order of the fingerprint log).

Here: a replica paused (SIGSTOP) past its session timeout and resumed; a rolling restart;
SIGKILL at `gather_committed`, at `edge_committed` and in the middle of a changelog replay.
Elsewhere: seeded random schedules of these faults (test_faults_cluster_chaos.py), the outage
longer than the internal retention (test_faults_cluster_retention.py),
the poison storm with a domain field (test_faults_cluster_storm.py). Covered before, not
repeated: SIGKILL at `edge_produced`, `shard_produced`, `shard_committed`, `gather_produced`
and a replica killed mid-stream (test_scale_out.py); a stalled shard owner's metrics and
alerts (test_cluster_stalls.py); corrupt records, unreadable changelogs and checkpoints behind
the log start (test_cluster_stops.py); settings refused or changed (test_cluster_settings.py);
the broker itself paused and restarted (test_faults_broker.py, one replica and three).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.integration.cluster_faults import Cluster, decided_like_offline, pause, resume
from tests.integration.faults import Feeder, doc_records, long_range_stream, wait_for
from tests.integration.harness import Topics, decisions
from tests.integration.test_scale_out import SHARDS

pytestmark = [pytest.mark.integration, pytest.mark.faults]
SESSION_MS = 6000  # the least the worker accepts: the pause outlasts it sooner


def feed(
    bootstrap: str, topics: Topics, docs: list[dict[str, object]], chunks: int, every: float = 0.5
) -> Feeder:
    feeder = Feeder(bootstrap, topics.input, doc_records(docs), chunks=chunks, every=every)
    feeder.start()
    return feeder


def fed(feeder: Feeder) -> None:
    feeder.join(300)
    assert not feeder.is_alive() and feeder.error is None, feeder.error


def test_a_replica_paused_past_its_session_timeout_then_resumed(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = long_range_stream(600, seed=101)
    cluster = Cluster(
        kafka_bootstrap,
        topics,
        tmp_path,
        env={"NEARDUP_WORKER__SESSION_TIMEOUT_MS": str(SESSION_MS)},
    )
    try:
        workers = cluster.start_all()
        cluster.wait_held(workers, "shard", SHARDS, 120)
        cluster.wait_held(workers, "edge", 1, 120)
        # Pause the replica holding the one input partition: its edge, shards and gather.
        [edge] = [w for w in workers if w.held().get("edge", 0) >= 1]
        others = [w for w in workers if w is not edge]
        feeder = feed(kafka_bootstrap, topics, docs, chunks=30)
        wait_for("a first part fed", lambda: feeder.sent >= 100, 120)
        pause(edge)
        # The others take over every partition once its session expired...
        cluster.wait_held(others, "edge", 1, 120)
        cluster.wait_held(others, "shard", SHARDS, 120)
        wait_for("more input fed while paused", lambda: feeder.sent >= 300, 120)
        resume(edge)
        # ...and the resumed one, fenced out of its old transactions, joins again.
        cluster.wait_held(workers, "shard", SHARDS, 120)
        fed(feeder)
        decided_like_offline(kafka_bootstrap, topics, docs)
        assert all(w.alive() and w.http("/healthz")[0] == 200 for w in workers), cluster.logs()
    finally:
        cluster.stop_all()


def test_one_of_two_replicas_paused_while_the_other_decides_alone_resumes_without_a_stop(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """While r1 is paused past its session, r0 is the whole cluster and decides in single
    stage: its log records hold no fingerprints, and its checkpoints are past them. r1's
    readers, resumed, read such records on a view that is no longer theirs: they rebuild
    from their committed checkpoints, not stop the partition (a false "STOPPED ... until
    the replica restarts" before)."""
    docs = long_range_stream(500, seed=103)
    env = {"NEARDUP_WORKER__SESSION_TIMEOUT_MS": str(SESSION_MS)}
    cluster = Cluster(kafka_bootstrap, topics, tmp_path, size=2, env=env)
    try:
        workers = cluster.start_all()
        cluster.wait_held(workers, "shard", SHARDS, 120)
        cluster.wait_held(workers, "gather", 1, 120)
        # r1: the one gathering the log partition (its reader meets the records first)
        [r1] = [w for w in workers if w.held().get("gather", 0) >= 1]
        [r0] = [w for w in workers if w is not r1]
        feeder = feed(kafka_bootstrap, topics, docs[:100], chunks=5)
        fed(feeder)
        decisions(kafka_bootstrap, topics, 100)
        pause(r1)  # idle: no commit in flight to tell it first
        wait_for("r0 alone in single stage", lambda: r0.gauge("neardup_single_stage") == 1, 120)
        feeder = feed(kafka_bootstrap, topics, docs[100:], chunks=20)
        wait_for("r0 deciding alone", lambda: len(decisions(kafka_bootstrap, topics, 0)) > 300, 120)
        resume(r1)
        cluster.wait_held(workers, "shard", SHARDS, 120)
        fed(feeder)
        decided_like_offline(kafka_bootstrap, topics, docs)
        wait_for("both ready", lambda: all(w.http("/healthz")[0] == 200 for w in workers), 60)
        assert all(w.alive() for w in workers), cluster.logs()
        assert "STOPPED partition" not in cluster.logs(), cluster.logs()
    finally:
        cluster.stop_all()


def test_a_rolling_restart_while_input_flows(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = long_range_stream(600, seed=103)
    cluster = Cluster(kafka_bootstrap, topics, tmp_path)
    try:
        cluster.start_all()
        feeder = feed(kafka_bootstrap, topics, docs, chunks=60, every=1.0)  # 60 s or more
        for i in range(cluster.size):
            # r0, r1, r2 go down at a quarter, half, three quarters of the input: with more
            # to come each time, so each restart meets input flowing.
            part = (i + 1) * len(docs) // (cluster.size + 1)
            wait_for(
                f"{part} inputs fed before r{i} restarts", lambda p=part: feeder.sent >= p, 120
            )
            assert cluster.stop(i) == 0, cluster.workers[i].log()
            cluster.start(i).wait_ready()
        fed(feeder)
        decided_like_offline(kafka_bootstrap, topics, docs)
        restarted = list(cluster.workers.values())
        assert all(w.alive() and w.http("/healthz")[0] == 200 for w in restarted)
    finally:
        cluster.stop_all()


@pytest.mark.parametrize("failpoint", ["gather_committed=kill@2", "edge_committed=kill@2"])
def test_replicas_killed_after_a_commit_and_restarted_decide_each_input_once(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, failpoint: str
) -> None:
    docs = long_range_stream(500, seed=107)
    cluster = Cluster(kafka_bootstrap, topics, tmp_path)
    kills = []

    def restart_the_killed() -> bool:
        """Restart (unarmed) every replica its failpoint killed; true once none is down."""
        for i, w in list(cluster.workers.items()):
            if not w.alive():
                assert w.proc is not None and w.proc.returncode == -signal.SIGKILL, w.log()
                kills.append(i)
                cluster.start(i).wait_ready()
        return not kills or all(w.alive() for w in cluster.workers.values())

    try:
        # Every replica armed: whichever holds the role dies at its second commit, and so does
        # the one that takes the role over from it; each comes back unarmed.
        cluster.start_all(failpoints={i: failpoint for i in range(cluster.size)})
        feeder = feed(kafka_bootstrap, topics, docs, chunks=20)
        wait_for(
            "a replica killed at its failpoint", lambda: kills or not restart_the_killed(), 180
        )
        restart_the_killed()
        fed(feeder)
        wait_for(
            "every input decided, the killed replicas back",
            lambda: (
                restart_the_killed()
                and sum(map(len, decisions(kafka_bootstrap, topics, len(docs), 0).values()))
                >= len(docs)
            ),
            300,
            every=1,
        )
        assert kills, "the failpoint did not fire"
        decided_like_offline(kafka_bootstrap, topics, docs)
    finally:
        cluster.stop_all()


def test_a_replica_killed_during_its_changelog_replay_restores_again(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = long_range_stream(600, seed=109)
    first, second = docs[:400], docs[400:]
    cluster = Cluster(kafka_bootstrap, topics, tmp_path, size=1)
    try:
        [worker] = cluster.start_all()
        feed(kafka_bootstrap, topics, first, chunks=4).join(120)
        decided_like_offline(kafka_bootstrap, topics, first)
        assert worker.stop() == 0
        # Restarted, it replays the shard and gather changelogs: killed after a batch of one.
        killed = cluster.start(0, failpoints="restore_batch=kill@2")
        assert killed.wait_exit(180) != 0, "the failpoint did not fire"
        cluster.size = 3
        cluster.start_all()
        fed(feed(kafka_bootstrap, topics, second, chunks=4))
        decided_like_offline(kafka_bootstrap, topics, docs)
        replays = cluster.logs().count("replayed ")
        assert replays >= SHARDS + 1, f"{replays} changelog replays"
    finally:
        cluster.stop_all()
