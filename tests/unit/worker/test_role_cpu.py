"""`neardup_role_cpu_seconds_total`: threads attributed to roles by name, counters that never
go back when threads end."""

from __future__ import annotations

import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from neardup_stream.worker.role_cpu import RoleCpu, role_of
from neardup_stream.worker.runtime.role import role_settings
from neardup_stream.worker.settings import Settings


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("edge-role", "edge"),
        ("gather-commit", "gather"),
        ("shard-restore", "shard"),
        ("kafka-io-neardup-stream-edge", "edge"),  # a consumer's I/O thread
        ("neardup-stream-shards-network-thread", "shard"),  # a producer's sender
        ("kafka-io-shard-cluster-7-gather", "gather"),  # a client id naming another role
        ("MainThread", "other"),
        ("Thread-3 (serve_forever)", "other"),
        ("kafka-io-neardup-stream", "other"),  # the single worker's clients
    ],
)
def test_a_thread_belongs_to_the_last_role_its_name_gives(name: str, role: str) -> None:
    assert role_of(name) == role


def test_each_role_s_kafka_clients_carry_the_role_in_their_client_id() -> None:
    settings = Settings()
    assert role_settings(settings, "edge").kafka.client_id == "neardup-stream-edge"
    assert role_of(f"kafka-io-{role_settings(settings, 'shards').kafka.client_id}") == "shard"
    assert settings.kafka.client_id == "neardup-stream"  # the worker's own is unchanged


def _burn(seconds: float, done: threading.Event) -> None:
    """Spend `seconds` of this thread's CPU, then wait for `done`."""
    while time.thread_time() < seconds:
        sum(range(1000))
    done.wait()


def test_a_role_s_cpu_is_counted_while_its_thread_runs_and_kept_once_it_ended() -> None:
    collector = RoleCpu()
    done = threading.Event()
    burner = threading.Thread(target=_burn, args=(0.3, done), name="edge-role")
    burner.start()
    try:
        while burner.native_id is None or collector.totals().get("edge", 0.0) < 0.25:
            assert burner.is_alive()
            time.sleep(0.01)
        during = collector.totals()["edge"]
    finally:
        done.set()
        burner.join()
    assert during >= 0.25
    assert collector.totals()["edge"] >= during  # ended, still counted
    assert "shard" not in collector.totals()


def test_the_collector_exports_a_counter_by_role() -> None:
    registry = CollectorRegistry()
    registry.register(RoleCpu())
    text = generate_latest(registry).decode()
    assert "# TYPE neardup_role_cpu_seconds_total counter" in text
    assert 'neardup_role_cpu_seconds_total{role="other"}' in text  # this test's main thread
