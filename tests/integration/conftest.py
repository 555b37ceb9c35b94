"""Fixtures for integration tests that need a real Kafka broker.

``kafka_bootstrap`` (session scope) returns the bootstrap address:

* ``$KAFKA_BOOTSTRAP_SERVERS`` if it is set (CI, or a broker you run
  yourself) -- nothing is started or stopped then;
* otherwise it runs ``deploy/local/kafka.sh start`` (a single-node KRaft
  broker on 127.0.0.1; the first run fetches the jars with Maven, later runs
  reuse the cache), uses the address printed on its last stdout line, and runs
  ``deploy/local/kafka.sh stop`` at the end of the session -- but only if this
  session started the broker (a broker that was already running is left up).

Set ``KAFKA_KEEP_RUNNING=1`` to leave a broker started by the session running.

``sasl_ssl_kafka`` (session scope) is a broker of its own with a SASL_SSL (SCRAM-SHA-512)
listener: ``KAFKA_SECURITY=sasl_ssl deploy/local/kafka.sh start`` on a free port pair and a
session temp data dir (throwaway CA, broker certificate and SCRAM user made by the script),
stopped at the end of the session. It returns the worker's settings for it: the
``NEARDUP_KAFKA__*`` variables of the script's ``client.env`` (bootstrap, protocol, mechanism,
user, password, CA file).

``kafka_admin`` is a per-test ``KafkaAdminClient``; ``unique_topic`` is a
factory making collision-free topic names so tests don't see each other's data.

``prometheus`` (session scope) is a real Prometheus started with
``deploy/local/prometheus.sh`` on a free loopback port (see tests/integration/prometheus.py);
``promtool`` is the path of Prometheus' rule-testing tool. Both come from Debian's
``prometheus`` package, which the script installs when it is missing and it runs as root.
When it cannot be installed they fail the tests in CI (``CI=true``) and skip them elsewhere.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

from tests.integration.prometheus import (
    Prometheus,
    PrometheusUnavailable,
    ensure_promtool,
    running_prometheus,
)

if TYPE_CHECKING:
    from kafka import KafkaAdminClient

    from tests.integration.harness import Topics

REPO_ROOT = Path(__file__).resolve().parents[2]
KAFKA_SH = REPO_ROOT / "deploy" / "local" / "kafka.sh"
# First start may download ~45 MB of jars with Maven; be generous.
START_TIMEOUT_S = float(os.environ.get("KAFKA_FIXTURE_START_TIMEOUT", "600"))


def _kafka_sh(
    *args: str, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(KAFKA_SH), *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


WORKER_LOG_TAIL = 80  # lines of each worker log shown with a failed test
# The test process's own clients on a loaded machine: "Task ... ran for 0.107s (>0.100s
# threshold)", by the hundred, crowded the worker logs out of a failure report.
logging.getLogger("kafka.net.selector").setLevel(logging.ERROR)
# kafka-python's own lines, and the settings dump (one line of several kilobytes).
_NOISE = re.compile(r" kafka\.| worker: effective settings: ")
# The per-test part of topic names (`unique_topic`), some 75 characters, shown as `-T`.
_TEST_TOPIC = re.compile(r"-test_[\w-]*?-[0-9a-f]{12}\b")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test shows the tails of the worker logs under its `tmp_path` (the worker's
    own lines, not kafka-python's), so a failure seen once in CI can be read afterwards."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if report.when != "call" or not report.failed or not isinstance(tmp, Path):
        return
    for path in sorted(tmp.rglob("*.log")):
        lines = path.read_text(errors="replace").splitlines()
        kept = [_short(line) for line in lines if not _NOISE.search(line)][-WORKER_LOG_TAIL:]
        report.sections.append((f"worker log {path.relative_to(tmp)}", "\n".join(kept)))


def _short(line: str) -> str:
    """One worker log line as a failure report shows it: test topic names shortened."""
    return _TEST_TOPIC.sub("-T", line)[:400]


@pytest.fixture(scope="session")
def kafka_bootstrap() -> Iterator[str]:
    """Bootstrap servers of a running broker (env var, or one we start)."""
    env_bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env_bootstrap:
        yield env_bootstrap
        return

    was_running = _kafka_sh("status", timeout=30).returncode == 0
    started = _kafka_sh("start", timeout=START_TIMEOUT_S)
    if started.returncode != 0:
        pytest.fail(
            f"{KAFKA_SH} start failed (exit {started.returncode}):\n"
            f"{started.stderr[-4000:]}{started.stdout[-1000:]}",
            pytrace=False,
        )
    lines = started.stdout.strip().splitlines()
    if not lines:
        pytest.fail(
            f"{KAFKA_SH} start printed no address:\n{started.stderr[-4000:]}", pytrace=False
        )
    bootstrap = lines[-1].strip()
    try:
        yield bootstrap
    finally:
        if not was_running and os.environ.get("KAFKA_KEEP_RUNNING") != "1":
            _kafka_sh("stop", timeout=60)


@contextlib.contextmanager
def _broker_of_its_own(
    tmp_path_factory: pytest.TempPathFactory, name: str, port_base: int, env: dict[str, str]
) -> Iterator[tuple[dict[str, str], str]]:
    """A broker of the session's own (`deploy/local/kafka.sh`, settings `env` on top) on a
    free port pair: its environment and its bootstrap servers; stopped at the end."""
    from tests.integration.faults import free_port_pair

    port = free_port_pair(port_base + (os.getpid() % 250) * 2)
    env = {
        **os.environ,
        **env,
        "KAFKA_PORT": str(port),
        "KAFKA_CONTROLLER_PORT": str(port + 1),
        "KAFKA_DATA_DIR": str(tmp_path_factory.mktemp(name)),
        "KAFKA_HEAP_OPTS": os.environ.get("KAFKA_HEAP_OPTS", "-Xms128m -Xmx512m"),
    }
    started = _kafka_sh("start", timeout=START_TIMEOUT_S, env=env)
    try:
        if started.returncode != 0:
            pytest.fail(
                f"{KAFKA_SH} start ({name}) failed (exit {started.returncode}):\n"
                f"{started.stderr[-4000:]}",
                pytrace=False,
            )
        yield env, started.stdout.strip().splitlines()[-1].strip()
    finally:
        _kafka_sh("stop", timeout=60, env=env)


@pytest.fixture(scope="session")
def sasl_ssl_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A SASL_SSL broker of the session's own; its NEARDUP_KAFKA__* client settings."""
    own = {"KAFKA_SECURITY": "sasl_ssl"}
    with _broker_of_its_own(tmp_path_factory, "kafka-sasl-ssl", 29500, own) as (env, bootstrap):
        path = _kafka_sh("client-env", timeout=30, env=env).stdout.strip()
        settings = {}
        for line in Path(path).read_text().splitlines():
            name, sep, value = line.partition("=")
            if sep and name.startswith("NEARDUP_KAFKA__"):
                settings[name] = value
        assert settings["NEARDUP_KAFKA__BOOTSTRAP_SERVERS"] == bootstrap
        yield settings


@pytest.fixture(scope="session")
def short_offsets_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker of the session's own whose group offsets expire one minute after their
    group was left empty (checked every second): its bootstrap servers."""
    short = "offsets.retention.minutes=1\noffsets.retention.check.interval.ms=1000"
    own = {"KAFKA_EXTRA_PROPERTIES": short}
    with _broker_of_its_own(tmp_path_factory, "kafka-short-offsets", 28500, own) as (_, bootstrap):
        yield bootstrap


@pytest.fixture
def kafka_admin(kafka_bootstrap: str) -> Iterator[KafkaAdminClient]:
    """A KafkaAdminClient connected to ``kafka_bootstrap``, one per test.

    Not session-wide: kafka-python's admin client fails a request at once
    (``NodeNotReadyError``) while the connection it had to the controller is in
    reconnect backoff, which an idle or restarted connection leaves it in.
    """
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap, client_id="neardup-tests-admin")
    try:
        yield admin
    finally:
        admin.close()


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Iterator[Callable[[str], str]]:
    """Factory: ``unique_topic("docs")`` -> ``"docs-test_x-1a2b3c4d5e6f"``.

    Names are unique per call (uuid4), so tests never share topics. Topics are
    not created here: create them with ``kafka_admin.create_topics(...)`` or
    let the broker auto-create them (auto.create.topics.enable=true locally).
    """

    test_name = "".join(c if c.isalnum() or c in "-_" else "_" for c in request.node.name)[:60]

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{test_name}-{uuid.uuid4().hex[:12]}"

    yield make


def _unavailable(exc: PrometheusUnavailable) -> NoReturn:
    """Missing Prometheus: a failure in CI (it must be installable there), a skip elsewhere."""
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"Prometheus is required in CI: {exc}", pytrace=False)
    pytest.skip(f"Debian's prometheus package is not installed: {exc}")


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    """A real Prometheus scraping (every second) the targets a test sets."""
    try:
        with running_prometheus(tmp_path_factory.mktemp("prometheus")) as prom:
            yield prom
    except PrometheusUnavailable as exc:
        _unavailable(exc)


@pytest.fixture(scope="session")
def promtool() -> str:
    """Path of `promtool` (Debian's prometheus package)."""
    try:
        return ensure_promtool()
    except PrometheusUnavailable as exc:
        _unavailable(exc)


@pytest.fixture
def topics(unique_topic: Callable[[str], str]) -> Topics:
    """A fresh set of input/output/changelog topic names for one test."""
    from tests.integration.harness import Topics

    return Topics.fresh(unique_topic)
