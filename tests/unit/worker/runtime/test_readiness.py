"""`RoleRunner.unready` and `/healthz`: ready means able to decide, and an unready answer
says why (a role restoring its first assignment, a stopped partition, partitions without a
reader, a stall)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from neardup_stream.worker.loop import Worker
from neardup_stream.worker.metrics import MetricsServer, build_metrics
from neardup_stream.worker.runtime import runner as runner_module
from neardup_stream.worker.runtime.health import RoleHealth, Stop
from neardup_stream.worker.runtime.runner import RoleRunner
from neardup_stream.worker.settings import Settings


class WarmingRole:
    """A role that restores before it decides (`runtime.role.Warming`)."""

    name = "gather"
    consumer = None
    rejections = None
    max_records = 8
    max_bytes = 1 << 30

    def __init__(self, health: RoleHealth) -> None:
        self.role = Settings()
        self.health = health
        self.restored = False

    def warmed(self) -> bool:
        return self.restored


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> tuple[RoleRunner[Any, Any], WarmingRole]:
    monkeypatch.setattr(runner_module, "Publisher", lambda *a, **k: object())
    metrics = build_metrics(CollectorRegistry())
    role = WarmingRole(RoleHealth("gather", metrics))
    return RoleRunner(role, metrics, threading.Event()), role  # type: ignore[arg-type]


def test_a_role_is_unready_until_its_first_assignment_is_restored(
    made: tuple[RoleRunner[Any, Any], WarmingRole],
) -> None:
    runner, role = made
    assert runner.unready() == "gather: restoring its partitions"
    role.restored = True
    assert runner.unready() is None


def test_each_reason_is_named_and_the_first_one_wins(
    made: tuple[RoleRunner[Any, Any], WarmingRole],
) -> None:
    runner, role = made
    role.restored = True
    runner.stall.after_s = 10
    runner.stall.observe("votes of shard 2 on log record 7", now=0.0)
    runner.stall._committed = 0.0  # its last commit: at 0 s
    runner.stall.observe("votes of shard 2 on log record 7", now=11.0)
    assert runner.unready() == "gather: stalled, waiting for votes of shard 2 on log record 7"
    runner.coverage._unread = {"t.votes": [3]}
    assert runner.unready() == "gather: partitions of its topics have no reader"
    role.health.stop(Stop("t.fingerprints", 0, 5, "unreadable"))
    assert runner.unready() is not None and runner.unready().startswith(  # type: ignore[union-attr]
        "gather: a partition stopped"
    )
    role.restored = False
    assert runner.unready() == "gather: restoring its partitions"


def healthz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_healthz_answers_ready_or_why_not() -> None:
    why: list[str | None] = ["shard: restoring its partitions"]
    server = MetricsServer(CollectorRegistry(), lambda: why[0], "127.0.0.1", 0).start()
    try:
        assert healthz(server.port) == (503, "unready: shard: restoring its partitions\n")
        why[0] = None
        assert healthz(server.port) == (200, "ready\n")
    finally:
        server.httpd.shutdown()


def test_a_single_worker_names_its_state_until_ready() -> None:
    worker = Worker(Settings(), build_metrics(CollectorRegistry()))
    assert worker.unready() == "connecting to the broker"
    worker.request_stop()  # so that the refusal returns at once
    worker._refuse(["topic(s) 'c' belong to another pipeline"])
    assert worker.unready() is not None and worker.unready().startswith("refused")  # type: ignore[union-attr]
