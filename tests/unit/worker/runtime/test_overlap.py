"""`neardup_stream.worker.runtime.overlap`: a cluster role's commit in flight is settled before a revoke or
a park, a failure found there waits for the runner, and what committed is counted on the
role's thread, never on the commit thread."""

from __future__ import annotations

import threading
from typing import Any

from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.health import MAX_FAILURES, RoleHealth
from neardup_stream.worker.runtime.overlap import Overlapped, PendingCommit
from neardup_stream.worker.runtime.publisher import PublishFailure
from neardup_stream.worker.runtime.role import Verdict


class FakeRole:
    """What `Overlapped` uses of a role: its name, health, `committed` and `rebuild`."""

    name = "shard"

    def __init__(self, health: RoleHealth) -> None:
        self.health = health
        self.counted: list[tuple[int, float, threading.Thread]] = []
        self.rebuilds = 0

    def committed(self, carried: int, at: float) -> None:
        self.counted.append((carried, at, threading.current_thread()))

    def rebuild(self) -> None:
        self.rebuilds += 1


def _settles(*results: PublishFailure[Any] | None) -> Any:
    """A publisher's `settle`: these results in turn, then None (nothing in flight)."""
    queue = list(results)
    return lambda: queue.pop(0) if queue else None


def _overlapped() -> tuple[Overlapped[Any, int], FakeRole, CollectorRegistry]:
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    role = FakeRole(RoleHealth("shard", metrics))
    return Overlapped(role, PendingCommit(), metrics), role, registry  # type: ignore[arg-type]


def _sample(registry: CollectorRegistry, name: str) -> float:
    return registry.get_sample_value(name, {"role": "shard"}) or 0.0


def test_without_a_runner_bound_nothing_is_in_flight() -> None:
    pending = PendingCommit()
    assert pending.settle() and pending.take_failure() is None


def test_a_failure_settled_before_a_revoke_waits_for_the_runner_once() -> None:
    pending = PendingCommit()
    failure = PublishFailure(RuntimeError("fenced"), 7)
    pending.bind(_settles(failure))
    pending.before_revoke()  # the listener settles: the commit failed
    assert not pending.settle()  # still failed until recovered: a park must not follow
    assert pending.take_failure() is failure
    assert pending.take_failure() is None
    assert pending.settle()  # recovered, nothing in flight


def test_only_the_first_failure_is_kept_until_taken() -> None:
    pending = PendingCommit()
    first, second = PublishFailure(RuntimeError("a"), 1), PublishFailure(RuntimeError("b"), 2)
    pending.bind(_settles(first, second))
    assert not pending.settle() and not pending.settle()
    assert pending.take_failure() is first


def test_commits_are_counted_on_the_role_thread_between_rounds() -> None:
    overlapped, role, registry = _overlapped()
    commit = threading.Thread(target=lambda: overlapped.counted(5, 123.0))
    commit.start()
    commit.join()
    assert role.counted == [] and _sample(registry, "neardup_role_transactions_total") == 0
    for _ in range(MAX_FAILURES):
        role.health.failed()
    assert not role.health.healthy()
    overlapped.between(lambda: True)
    assert role.counted == [(5, 123.0, threading.current_thread())]
    assert _sample(registry, "neardup_role_transactions_total") == 1
    assert role.health.healthy()  # a commit ends the failure streak
    overlapped.between(lambda: True)
    assert len(role.counted) == 1  # counted once


def test_a_failed_batch_counts_what_committed_before_it_then_rebuilds() -> None:
    overlapped, role, registry = _overlapped()
    overlapped.counted(3, 1.0)
    overlapped.aborted()
    assert _sample(registry, "neardup_role_failures_total") == 1
    overlapped.recover(4, None)
    assert [c for c, _, _ in role.counted] == [3] and role.rebuilds == 1


def test_a_step_that_raises_is_retried_like_a_failed_commit() -> None:
    overlapped, _, _ = _overlapped()
    assert overlapped.step_failed([], ValueError("unreadable")) is Verdict.RETRY
