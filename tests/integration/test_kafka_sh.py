"""deploy/local/kafka.sh keys its broker by checkout: another checkout's broker on the same
port is named and left alone, never reused or stopped (a real broker, two checkouts)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration.faults import free_port_pair
from tests.integration.harness import REPO_ROOT

pytestmark = pytest.mark.integration


def kafka_sh(checkout: Path, port: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`kafka.sh` of `checkout` on `port`, with its default (checkout-keyed) data dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
    env.update(
        KAFKA_PORT=str(port),
        KAFKA_HEAP_OPTS="-Xms128m -Xmx384m",
        TMPDIR=str(checkout.parent / "tmp"),  # data dirs of this test only
    )
    for name in ("KAFKA_CACHE_DIR", "KAFKA_VERSION"):  # same jars as the other brokers
        if name in os.environ:
            env[name] = os.environ[name]
    return subprocess.run(
        ["bash", str(checkout / "deploy" / "local" / "kafka.sh"), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_a_checkout_never_reuses_or_stops_another_checkouts_broker(tmp_path: Path) -> None:
    other = tmp_path / "other-checkout"
    shutil.copytree(REPO_ROOT / "deploy" / "local", other / "deploy" / "local")
    (tmp_path / "tmp").mkdir()
    port = free_port_pair(29700 + (os.getpid() % 100) * 2)
    started = kafka_sh(other, port, "start")
    assert started.returncode == 0, started.stderr
    try:
        ours = kafka_sh(REPO_ROOT, port, "start")
        assert ours.returncode == 1, ours.stderr
        assert f"port 127.0.0.1:{port} is served by a Kafka broker" in ours.stderr
        assert f"of the checkout {other.resolve()}" in ours.stderr, ours.stderr
        assert ours.stdout == ""  # no bootstrap address: the broker is not offered for reuse

        assert kafka_sh(REPO_ROOT, port, "status").stdout.strip() == "stopped"
        stopped = kafka_sh(REPO_ROOT, port, "stop")
        assert stopped.returncode == 0 and "not running" in stopped.stderr
        assert kafka_sh(other, port, "status").stdout.strip() == "running"
    finally:
        assert kafka_sh(other, port, "stop").returncode == 0
    assert kafka_sh(other, port, "status").stdout.strip() == "stopped"
