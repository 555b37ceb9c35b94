"""A stalled shard owner is visible: the gather's oldest undecided record ages, the gauge names
the shard it waits for, the gather says it is stalled (unready past `worker.stall_timeout_s`),
and the alert expressions fire in a real Prometheus."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest
import yaml

from neardup_stream.sharded.home import domain_partition
from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.prometheus import ALERTS_FILE, JOB, Prometheus
from tests.integration.test_scale_out import SHARDS, produce_to, wait_assigned
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration
SITES = ["news.example", "blog.example", "docs.example", "mail.example"]


def rule_expr(alert: str, threshold: str, lower: str) -> str:
    """The alert's expression from alerts.yml, with its age threshold lowered for a test."""
    groups = yaml.safe_load(ALERTS_FILE.read_text())["groups"]
    (expr,) = [r["expr"] for g in groups for r in g["rules"] if r.get("alert") == alert]
    assert expr.count(threshold) == 1, expr
    return str(expr.replace(threshold, lower))


def shard_series(worker: WorkerProcess) -> set[int]:
    """The shards a replica owns: those it exports a lag for."""
    text = worker.http("/metrics")[1]
    return {
        int(s)
        for s in re.findall(
            r'^neardup_role_lag_messages\{partition="(\d+)",role="shard"\}', text, re.M
        )
    }


def test_a_stalled_shard_owner_shows_in_the_oldest_undecided_age_and_fires_the_alerts(
    kafka_bootstrap: str, prometheus: Prometheus, topics: Topics, tmp_path: Path
) -> None:
    assert {domain_partition(s, 2) for s in SITES} == {0, 1}
    env = {
        **topics.internal_env(),
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
        "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000",
        # The frozen replica keeps its shards while frozen: a stall, not a rebalance.
        "NEARDUP_WORKER__SESSION_TIMEOUT_MS": "90000",
        "NEARDUP_WORKER__STALL_TIMEOUT_S": "5",
    }
    flags = ["--scope", "topic", "--partitions", "2", "--max-batch", "50"]
    flags += ["--log-partitions", "2", "--domain-field", "site"]
    workers = [
        WorkerProcess(
            kafka_bootstrap,
            topics,
            "g-" + topics.input,
            tmp_path / f"r{i}.log",
            f"r{i}",
            flags,
            env,
        ).start()
        for i in range(2)
    ]
    # Each input partition (i % 2) carries every site, so each log partition.
    docs = [{**d, "site": SITES[i // 2 % 4]} for i, d in enumerate(stream(80, seed=101))]
    live, frozen = workers
    try:
        for w in workers:
            w.wait_ready()
        wait_assigned(workers, {"edge": 2, "shard": SHARDS, "gather": 2})
        produce_to(kafka_bootstrap, topics.input, [(i % 2, d) for i, d in enumerate(docs[:20])])
        assert sum(map(len, decisions(kafka_bootstrap, topics, 20).values())) == 20
        stalled = shard_series(frozen)
        assert stalled and not stalled & shard_series(live), (stalled, shard_series(live))
        sel = f'job="{JOB}",instance="127.0.0.1:{live.metrics_port}"'
        prometheus.set_targets([f"127.0.0.1:{w.metrics_port}" for w in workers])
        prometheus.wait_for(f"neardup_ready{{{sel}}}", lambda r: len(r) == 1)

        assert frozen.proc is not None
        os.kill(frozen.proc.pid, signal.SIGSTOP)
        try:
            produce_to(kafka_bootstrap, topics.input, [(i % 2, d) for i, d in enumerate(docs[20:])])
            age = f"neardup_oldest_undecided_seconds{{{sel}}}"
            first = prometheus.wait_for(
                age, lambda r: any(v > 2 for _, v in r), on_timeout=live.log
            )
            older = max(v for _, v in first)
            prometheus.wait_for(
                age, lambda r: any(v > older + 2 for _, v in r), on_timeout=live.log
            )
            prometheus.wait_for(  # the lowest shard the frozen replica owns
                f"neardup_gather_waiting_for_shard{{{sel}}}",
                lambda r: {int(v) for _, v in r} == {min(stalled)},
                on_timeout=live.log,
            )
            # The rules' own expressions, with the age thresholds lowered to seconds.
            for alert, threshold in (
                ("NeardupUndecidedTooOld", "> 300"),
                ("NeardupGatherWaitingForShard", "> 120"),
            ):
                fired = prometheus.wait_for(
                    rule_expr(alert, threshold, "> 5"), bool, on_timeout=live.log
                )
                assert {s["partition"] for s, _ in fired} == {s["partition"] for s, _ in first}
            # Its gather stalled: unready, said once with what it waits for, and alerted.
            wait_for("the live replica to answer 503", lambda: not live.healthy(), 60)
            said = [line for line in live.log(200_000).splitlines() if "gather: STALLED" in line]
            assert len(said) == 1 and "the votes of shards" in said[0], said
            fired = prometheus.wait_for(
                rule_expr("NeardupRoleStalled", "> 0", "> 0"), bool, on_timeout=live.log
            )
            assert {x["role"] for x, _ in fired} == {"gather"}
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        # Thawed, the shard votes again: every document is decided exactly once.
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        assert all(len(v) == 1 for v in got.values()) and len(got) == len(docs)
        prometheus.wait_for(
            f"neardup_gather_waiting_for_shard{{{sel}}}", lambda r: r == [], on_timeout=live.log
        )
        wait_for("the live replica to be ready again", live.healthy, 60)
        assert "gather: no longer stalled" in live.log(200_000)
    finally:
        for w in workers:
            if w.alive():
                w.stop()
        prometheus.set_targets([])
