"""Stall: work waiting past the timeout without a commit is said, exported and unready."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.stall import Stall


def stall(after_s: float = 60) -> tuple[Stall, CollectorRegistry]:
    registry = CollectorRegistry()
    return Stall("gather", build_metrics(registry), after_s), registry


def gauge(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("neardup_role_stalled", {"role": "gather"})


def test_work_waiting_past_the_timeout_without_a_commit_stalls_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    s, registry = stall()
    s._committed = 0.0
    caplog.set_level(logging.WARNING)
    s.observe("the votes of shards [3] on log partition 0, record 7", now=100.0)
    s.observe("the votes of shards [3] on log partition 0, record 7", now=160.0)
    assert not s.stalled() and gauge(registry) == 0  # waited 60 s: not past the timeout
    s.observe("the votes of shards [3] on log partition 0, record 7", now=161.0)
    s.observe("the votes of shards [3] on log partition 0, record 7", now=200.0)
    assert s.stalled() and gauge(registry) == 1
    stalls = [r for r in caplog.records if "STALLED" in r.getMessage()]
    assert len(stalls) == 1 and "votes of shards [3]" in stalls[0].getMessage()


def test_a_commit_or_nothing_waiting_ends_a_stall() -> None:
    s, registry = stall(10)
    s._committed = 0.0
    s.observe("x", now=100.0)
    s.observe("x", now=111.0)
    assert s.stalled()
    s._committed = 112.0  # what `progressed` records
    s.observe("x", now=113.0)
    assert not s.stalled() and gauge(registry) == 0
    s.observe("x", now=123.0)  # 11 s since that commit
    assert s.stalled()
    s.observe(None, now=124.0)
    assert not s.stalled()
    s.observe("x", now=125.0)  # waits afresh: from now, not from the old wait
    s.observe("x", now=134.0)
    assert not s.stalled()


def test_a_backlog_that_commits_all_along_never_stalls() -> None:
    s, _ = stall(10)
    for t in range(0, 1000, 5):
        s._committed = float(t)
        s.observe("input behind the end of docs partitions [0] (5000 records)", now=t + 4.0)
        assert not s.stalled()
