"""A role's progress state: stops are counted and logged once, losses reported, /healthz fed."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.health import RoleHealth, Stop, lost_offsets


def sample(registry: CollectorRegistry, name: str, role: str) -> float | None:
    return registry.get_sample_value(name, {"role": role})


def test_a_stopped_partition_is_counted_logged_once_and_makes_the_role_unhealthy(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    health = RoleHealth("gather", build_metrics(registry))
    assert health.healthy()
    assert sample(registry, "neardup_partitions_stopped", "gather") == 0
    stop = Stop("fp", 2, 41, "not a fingerprint-log record (no 'NE' header)")
    with caplog.at_level(logging.ERROR):
        health.stop(stop)
        health.stop(stop._replace(offset=42))  # the same partition: already stopped
    assert [r.levelno for r in caplog.records] == [logging.ERROR]
    assert "fp-2 at offset 41" in caplog.text and "'NE' header" in caplog.text
    assert sample(registry, "neardup_partitions_stopped", "gather") == 1
    assert not health.healthy() and health.is_stopped("fp", 2) and not health.is_stopped("fp", 1)
    assert health.stopped() == [stop]
    health.release("fp", 2)  # the partition moved to another replica
    assert health.healthy()
    assert sample(registry, "neardup_partitions_stopped", "gather") == 0


def test_a_checkpoint_older_than_the_log_start_is_reported_with_the_offsets_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    health = RoleHealth("shard", build_metrics(registry))
    assert sample(registry, "neardup_records_lost_total", "shard") == 0
    assert health.lost("fp", 0, checkpoint=120, log_start=120) == 0
    assert health.lost("fp", 0, checkpoint=130, log_start=120) == 0
    with caplog.at_level(logging.ERROR):
        assert health.lost("fp", 0, checkpoint=100, log_start=175) == 75
    assert "75 offsets were deleted" in caplog.text
    assert sample(registry, "neardup_records_lost_total", "shard") == 75


def test_repeated_failures_make_a_role_unhealthy_until_one_succeeds() -> None:
    health = RoleHealth("edge", build_metrics(CollectorRegistry()), max_failures=3)
    for _ in range(2):
        health.failed()
    assert health.healthy()
    health.failed()
    assert not health.healthy()
    health.succeeded()
    assert health.healthy()


@pytest.mark.parametrize(("checkpoint", "start", "lost"), [(0, 0, 0), (5, 3, 0), (3, 5, 2)])
def test_lost_offsets(checkpoint: int, start: int, lost: int) -> None:
    assert lost_offsets(checkpoint, start) == lost
