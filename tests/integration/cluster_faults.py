"""Helpers of the cluster fault suite (test_faults_cluster*.py): a set of `--cluster` replicas
that can be stopped, paused, killed and started again one by one under their instance ids,
their role metrics, and the check that a run decided like offline `dedup --home-shards`."""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.faults import assert_exactly_once, wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import SHARDS, offline


def cluster_env(topics: Topics) -> dict[str, str]:
    """The replicas' environment: per-test internal topics, SHARDS home shards, a short
    transaction timeout (a killed replica's open transaction holds back readers until then)."""
    return {
        **topics.internal_env(),
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
        "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000",
        "PYTHONFAULTHANDLER": "1",  # a replica that hangs dumps its threads on SIGABRT
    }


@dataclass
class Cluster:
    """`size` replicas r0..r{size-1} of one pipeline; `start(i)` (re)starts replica i under its
    instance id, with optional failpoints and extra environment; logs append per replica."""

    bootstrap: str
    topics: Topics
    log_dir: Path
    size: int = 3
    flags: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    workers: dict[int, WorkerProcess] = field(default_factory=dict)

    def start(
        self, i: int, failpoints: str | None = None, env: dict[str, str] | None = None
    ) -> WorkerProcess:
        armed = {"NEARDUP_FAILPOINTS": failpoints} if failpoints else {}
        worker = WorkerProcess(
            self.bootstrap,
            self.topics,
            "g-" + self.topics.input,
            self.log_dir / f"r{i}.log",
            f"r{i}",
            ["--scope", "topic", "--max-batch", "50", *self.flags],
            {**cluster_env(self.topics), **self.env, **(env or {}), **armed},
        ).start()
        self.workers[i] = worker
        return worker

    def start_all(self, failpoints: dict[int, str] | None = None) -> list[WorkerProcess]:
        started = [self.start(i, (failpoints or {}).get(i)) for i in range(self.size)]
        for w in started:
            w.wait_ready()
        return started

    def stop(self, i: int, timeout: float = 60) -> int:
        """SIGTERM replica i and wait for it; one that does not stop in time gets SIGABRT, so
        its log ends with every thread's stack, and the test fails with it."""
        worker = self.workers[i]
        assert worker.proc is not None
        worker.proc.send_signal(signal.SIGTERM)
        try:
            return worker.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            worker.proc.send_signal(signal.SIGABRT)
            worker.proc.wait(30)
            stacks = worker.log_path.read_text(errors="replace")
            raise AssertionError(
                f"r{i} still running {timeout}s after SIGTERM:\n{stacks[-20000:]}"
            ) from None

    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.workers.values() if w.alive()]

    def stop_all(self) -> None:
        """Stop every replica still running, each even if stopping another one failed."""
        errors: list[AssertionError] = []
        for w in self.workers.values():
            if w.proc is not None and w.proc.poll() is None:
                resume(w)  # a stopped process cannot handle SIGTERM
                try:
                    w.stop()
                except AssertionError as exc:
                    errors.append(exc)
        if errors:
            raise errors[0]

    def wait_held(
        self, workers: list[WorkerProcess], role: str, total: int, timeout: float
    ) -> None:
        """Until `workers` together hold `total` partitions of `role` (their groups settled)."""
        wait_for(
            f"{[w.instance for w in workers]} to hold {total} {role} partitions",
            lambda: sum(w.held().get(role, 0) for w in workers) == total,
            timeout,
            every=0.5,
        )

    def wait_formed(self, timeout: float = 120) -> None:
        """Until every replica holds shards and together they hold all: no replica is the
        whole cluster (single stage), so each one's shard role votes."""
        workers = list(self.workers.values())
        wait_for(
            f"{[w.instance for w in workers]} to share the {SHARDS} shards",
            lambda: (
                [w.held().get("shard", 0) > 0 for w in workers] == [True] * len(workers)
                and sum(w.held().get("shard", 0) for w in workers) == SHARDS
            ),
            timeout,
            every=0.5,
        )

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.log_dir.glob("r*.log")))


def pause(worker: WorkerProcess) -> None:
    assert worker.proc is not None
    os.kill(worker.proc.pid, signal.SIGSTOP)


def resume(worker: WorkerProcess) -> None:
    if worker.proc is not None and worker.proc.poll() is None:
        os.kill(worker.proc.pid, signal.SIGCONT)


def decided_like_offline(
    bootstrap: str, topics: Topics, docs: list[dict[str, object]], timeout: float = 300
) -> None:
    """Every document decided exactly once, as offline `dedup --home-shards SHARDS` decides
    the same stream (one input partition: the order is the input's)."""
    got = decisions(bootstrap, topics, len(docs), timeout=timeout)
    assert_exactly_once(got, [str(d["id"]) for d in docs])
    want = offline(docs)
    wrong = {k: (v[0], want[k]) for k, v in got.items() if v[0] != want[k]}
    assert not wrong, f"{len(wrong)} decisions differ from offline, e.g. {list(wrong.items())[:3]}"
