"""Cluster fault suite: a seeded random schedule of faults on three `--cluster` replicas while
input flows, and still every input decided once, as offline `dedup --home-shards 6` decides it
(one input partition: the input order is the fingerprint log's order).

The other fault tests each stop a replica at one chosen moment. Here faults come at moments
nobody chose, and one after another before the cluster has settled from the last: SIGKILL with
and without a restart; a restart armed with a failpoint (it kills the replica again at its
first or second pass through a transaction, a commit or a restore, if it gets there);
SIGTERM and a restart; SIGSTOP for 1-12 s (the session timeout is 6 s); a replica paused
while another one is replaced (a long enough pause misses a generation of every group and
comes back to an assignment it no longer holds). A replica found dead must have been killed
by the test or by its failpoint. The schedule is a function of the seed; a failure prints
the faults applied and how much input had been fed at each. Where a fault lands in the
replicas' work depends on timing, so each run tries other moments.
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


class Replicas:
    """What the test did to each replica: last started with a failpoint (`armed`), or killed
    and left down (`down`). Any other replica found dead died on its own: a failure."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.armed: set[int] = set()
        self.down: set[int] = set()

    def start(self, i: int, failpoint: str | None = None) -> None:
        self.armed.discard(i)
        self.down.discard(i)
        self.cluster.start(i, failpoint)
        if failpoint is not None:
            self.armed.add(i)

    def kill(self, i: int) -> None:
        worker = self.cluster.workers[i]
        if worker.alive():
            worker.kill()
        else:
            self.check_dead(i)
        self.armed.discard(i)

    def check_dead(self, i: int) -> None:
        """A dead replica was killed by the test or by its failpoint (SIGKILL), nothing else."""
        worker = self.cluster.workers[i]
        assert worker.proc is not None
        code = worker.proc.poll()
        if code is None or i in self.down:
            return
        assert i in self.armed and code == -signal.SIGKILL, (
            f"r{i} died on its own (exit {code}):\n{worker.log()}"
        )

    def up_and_unarmed(self) -> None:
        """Every replica running again, none with a failpoint left to fire."""
        for i, worker in list(self.cluster.workers.items()):
            resume(worker)
            self.check_dead(i)
            if i in self.armed or not worker.alive():
                self.kill(i)
                self.start(i)


def inflict(replicas: Replicas, fault: Fault) -> None:
    """Apply `fault`; a replica found dead (killed and left down, or its failpoint fired) is
    started again instead."""
    i, cluster = fault.replica, replicas.cluster
    worker = cluster.workers[i]
    if not worker.alive():
        replicas.check_dead(i)
        replicas.start(i)
        return
    if fault.kind == "kill":  # it stays down until the next fault on it, or the end
        replicas.kill(i)
        replicas.down.add(i)
    elif fault.kind == "kill_restart":
        replicas.kill(i)
        time.sleep(fault.seconds)
        replicas.start(i)
    elif fault.kind == "armed_restart":
        replicas.kill(i)
        replicas.start(i, fault.failpoint)
    elif fault.kind == "term_restart":
        code = cluster.stop(i, timeout=90)  # a start-up not over yet ends at once (143, -15)
        fired = i in replicas.armed and code == -signal.SIGKILL  # its failpoint, on the way out
        assert code in STOPPED or fired, f"r{i} exited {code} on SIGTERM:\n{worker.log()}"
        replicas.start(i)
    elif fault.kind == "pause":  # an armed replica stays armed
        pause(worker)
        time.sleep(fault.seconds)
        resume(worker)
    else:  # pause_while_replaced: paused while the next replica restarts and every group moves
        other = (i + 1) % cluster.size
        pause(worker)
        replicas.kill(other)
        replicas.start(other)
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
    replicas = Replicas(cluster)
    applied: list[tuple[int, Fault]] = []  # (inputs fed when it was applied, fault)
    try:
        cluster.start_all()
        # ~75 s of input: the faults (1-12 s each) land while it flows
        feeder = Feeder(kafka_bootstrap, topics.input, doc_records(docs), chunks=100, every=0.75)
        feeder.start()
        for fault in faults:
            wait_for(f"{fault.after} inputs fed", lambda f=fault: feeder.sent >= f.after, 300)
            applied.append((feeder.sent, fault))
            inflict(replicas, fault)
        feeder.join(300)
        assert not feeder.is_alive() and feeder.error is None, feeder.error
        replicas.up_and_unarmed()
        decided_like_offline(kafka_bootstrap, topics, docs, timeout=400)
        for i in cluster.workers:
            replicas.check_dead(i)
        assert all(w.alive() for w in cluster.workers.values()), cluster.logs()[-6000:]
    except Exception as exc:
        raise AssertionError(f"faults applied (inputs fed, fault): {applied}: {exc}") from exc
    finally:
        cluster.stop_all()
