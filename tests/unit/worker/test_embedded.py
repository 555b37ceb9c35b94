"""The embedded worker's life cycle without a broker: a thread, no signal handlers, no
collisions. (Deciding with a real broker: tests/integration/test_kit_embedded.py.)"""

from __future__ import annotations

import signal
import threading
import urllib.request

import pytest

from neardup_stream.worker.embedded import EmbeddedWorker
from neardup_stream.worker.settings import Settings

UNREACHABLE = "127.0.0.1:9"  # discard port: connections are refused at once


def settings(instance: str, **metrics: object) -> Settings:
    return Settings().with_overrides(
        {
            "kafka": {"bootstrap_servers": UNREACHABLE, "request_timeout_ms": 1000},
            "worker": {"group_id": "embedded-unit", "instance_id": instance},
            "metrics": {"port": 0, **metrics},
        }
    )


def test_a_worker_waiting_for_its_broker_runs_in_a_thread_and_stops_cleanly() -> None:
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    worker = EmbeddedWorker(settings("a")).start()
    try:
        assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
        names = [t.name for t in threading.enumerate()]
        assert "neardup-worker-embedded-unit-a" in names
        health = worker.health()
        assert health.running and not health.ready and health.error is None
        with pytest.raises(TimeoutError):
            worker.wait_ready(timeout=0.2)
        assert worker.metrics_port is not None
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{worker.metrics_port}/healthz", timeout=5)
            raise AssertionError("/healthz answered 200 before the worker was ready")
        except urllib.error.HTTPError as exc:
            assert exc.code == 503
    finally:
        worker.stop(timeout=30)
    assert not worker.health().running


def test_two_workers_have_their_own_registries_and_one_transactional_id_each() -> None:
    one = EmbeddedWorker(settings("one", enabled=False)).start()
    two = EmbeddedWorker(settings("two", enabled=False)).start()
    try:
        assert one.registry is not two.registry
        assert one.metrics_port is None  # metrics.enabled=false: no listener
        with pytest.raises(ValueError, match=r"worker\.instance_id='one'"):
            EmbeddedWorker(settings("one", enabled=False)).start()
    finally:
        one.stop(timeout=30)
        two.stop(timeout=30)
    again = EmbeddedWorker(settings("one", enabled=False)).start()  # released by stop()
    again.stop(timeout=30)


def test_a_port_in_use_is_refused_by_its_setting() -> None:
    first = EmbeddedWorker(settings("p1")).start()
    try:
        port = first.metrics_port
        with pytest.raises(ValueError, match=f"metrics.port={port}"):
            EmbeddedWorker(settings("p2", port=port)).start()
        EmbeddedWorker(settings("p2", enabled=False)).start().stop(timeout=30)  # not held
    finally:
        first.stop(timeout=30)
