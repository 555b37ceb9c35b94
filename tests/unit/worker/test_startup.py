"""Start-up against a broker that is not there yet: the worker waits, it does not crash."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from neardup_stream.worker.loop import Worker
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.settings import KafkaSettings, Settings, WorkerSettings


def _unreachable() -> Settings:
    # Port 9 (discard) on loopback: nothing listens, every connection is refused at once.
    return Settings(
        kafka=KafkaSettings(bootstrap_servers="127.0.0.1:9", request_timeout_ms=1000),
        worker=WorkerSettings(retry_backoff_max_s=0.2),
    )


def test_a_broker_that_is_down_at_start_is_waited_for_until_stop() -> None:
    worker = Worker(_unreachable(), build_metrics(CollectorRegistry()))
    attempts: list[int] = []
    real = worker._backoff

    def counting(attempt: int) -> float:
        attempts.append(attempt)
        if attempt >= 3:
            worker.request_stop()
        return real(attempt)

    worker._backoff = counting  # type: ignore[method-assign]
    done = threading.Event()

    def run() -> None:
        worker.run()  # returns (no exception) once stopped
        done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert done.wait(120), "worker did not return after request_stop"
    assert attempts[:3] == [1, 2, 3]
    assert not worker.consuming


def test_configuration_errors_at_start_stay_fatal() -> None:
    worker = Worker(_unreachable(), build_metrics(CollectorRegistry()))

    def misconfigured() -> int:
        raise RuntimeError("topic 'x' does not exist and topic creation is off")

    with pytest.raises(RuntimeError, match="topic creation is off"):
        worker._until_stopped(misconfigured)
