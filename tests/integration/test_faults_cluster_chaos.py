"""Cluster fault suite: a seeded random schedule of faults on three `--cluster` replicas while
input flows, and still every input decided once, as offline `dedup --home-shards 6` decides it
(one input partition: the input order is the fingerprint log's order).

The other fault tests each stop a replica at one chosen moment. Here faults come at moments
nobody chose, and one after another before the cluster has settled from the last: SIGKILL with
and without a restart, a restart armed with a failpoint (so the next kill lands inside a
transaction, a commit or a restore), SIGTERM and a restart, SIGSTOP past the session timeout,
and a replica paused while another one is replaced (it misses a generation of every group
and comes back to an assignment it no longer holds). The schedule is a function of the seed,
printed with any failure; where a fault lands in the replicas' work depends on timing, so
each run tries other moments.
"""

from __future__ import annotations

import random
import signal
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.integration.cluster_faults import Cluster, decided_like_offline, pause, resume
from tests.integration.faults import Feeder, doc_records, long_range_stream, wait_for
from tests.integration.harness import Topics

pytestmark = [pytest.mark.integration, pytest.mark.faults]
SESSION_MS = 6000  # the least the worker accepts: pauses outlast it sooner
STOPPED = (0, 128 + signal.SIGTERM, -signal.SIGTERM)  # stopped, or stopped while starting
KINDS = ("kill", "kill_restart", "armed_restart", "term_restart", "pause", "pause_while_replaced")
ARMED = (  # a restarted replica dies again at its first or second pass through one of these
    "edge_produced=kill@1",
    "edge_committed=kill@2",
    "shard_produced=kill@1",
    "shard_committed=kill@2",
    "gather_produced=kill@1",
    "gather_committed=kill@2",
    "restore_batch=kill@1",
)


class Fault(NamedTuple):
    """One fault: once `after` inputs were fed, `kind` on replica `replica`."""

    after: int
    kind: str
    replica: int
    seconds: float  # how long a pause lasts, or a killed replica stays down
    failpoint: str


def schedule(seed: int, docs: int, faults: int, replicas: int) -> list[Fault]:
    rnd = random.Random(seed)
    moments = sorted(rnd.randrange(docs // 10, docs * 9 // 10) for _ in range(faults))
    return [
        Fault(at, rnd.choice(KINDS), rnd.randrange(replicas), rnd.uniform(1, 12), rnd.choice(ARMED))
        for at in moments
    ]


def inflict(cluster: Cluster, fault: Fault, armed: set[int]) -> None:
    """Apply `fault`; a replica found dead (a failpoint fired) is started again instead.
    `armed` holds the replicas last started with a failpoint."""
    i, worker = fault.replica, cluster.workers[fault.replica]
    was_armed = i in armed  # its failpoint may fire on the way out
    armed.discard(i)
    if not worker.alive():
        cluster.start(i)
        return
    if fault.kind == "kill":  # it stays down until the next fault on it, or the end
        worker.kill()
    elif fault.kind == "kill_restart":
        worker.kill()
        time.sleep(fault.seconds)
        cluster.start(i)
    elif fault.kind == "armed_restart":
        worker.kill()
        cluster.start(i, fault.failpoint)
        armed.add(i)
    elif fault.kind == "term_restart":
        code = cluster.stop(i, timeout=90)  # a start-up not over yet ends at once (143, -15)
        assert code in STOPPED or was_armed, f"r{i} exited {code} on SIGTERM:\n{worker.log()}"
        cluster.start(i)
    elif fault.kind == "pause":
        pause(worker)
        time.sleep(fault.seconds)
        resume(worker)
    else:  # pause_while_replaced: paused while the next replica restarts and every group moves
        other = (i + 1) % cluster.size
        pause(worker)
        if cluster.workers[other].alive():
            cluster.workers[other].kill()
        armed.discard(other)
        cluster.start(other)
        time.sleep(fault.seconds)
        resume(worker)


@pytest.mark.parametrize("seed", [1, 2])
def test_a_random_schedule_of_kills_pauses_and_restarts_decides_like_offline(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, seed: int
) -> None:
    docs = long_range_stream(600, seed=200 + seed)
    faults = schedule(seed, len(docs), faults=8, replicas=3)
    cluster = Cluster(
        kafka_bootstrap,
        topics,
        tmp_path,
        env={"NEARDUP_WORKER__SESSION_TIMEOUT_MS": str(SESSION_MS)},
    )
    armed: set[int] = set()
    try:
        cluster.start_all()
        feeder = Feeder(kafka_bootstrap, topics.input, doc_records(docs), chunks=40, every=0.5)
        feeder.start()
        for fault in faults:
            wait_for(f"{fault.after} inputs fed", lambda f=fault: feeder.sent >= f.after, 300)
            inflict(cluster, fault, armed)
        feeder.join(300)
        assert not feeder.is_alive() and feeder.error is None, feeder.error
        for i, worker in list(cluster.workers.items()):  # every replica up again, none armed
            if i in armed and worker.alive():
                worker.kill()
            if not worker.alive():
                cluster.start(i)
        decided_like_offline(kafka_bootstrap, topics, docs, timeout=400)
    except AssertionError as exc:
        raise AssertionError(f"schedule {faults}: {exc}") from exc
    finally:
        cluster.stop_all()
