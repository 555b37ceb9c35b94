"""The pytest plugin of neardup-stream, installed with the package (entry point `pytest11`).

Fixtures (see docs/testing.md for a complete example):

* `neardup_settings`: the `neardup_stream.worker.settings.Settings` the other fixtures start from
  (`Settings()`: defaults plus `NEARDUP_...` environment); override it in a conftest.py to
  test with your own mapping, thresholds, ...;
* `neardup_driver`: a factory, `neardup_driver(settings=None, **driver_args)` -> a
  broker-free `neardup_stream.worker.testing.Driver`;
* `neardup_bootstrap` (session): the broker of the user's session, from `--neardup-bootstrap`
  or `$KAFKA_BOOTSTRAP_SERVERS`; override it to hand over e.g. a testcontainers broker;
* `neardup_worker`: a real worker started in-process (`neardup_stream.worker.testing.broker.BrokerWorker`)
  on topics and a group of its own for this test, ready when the test starts; teardown stops
  it cleanly and deletes its topics and group.

This module imports only pytest: the engine is imported when `neardup_settings` or
`neardup_driver` is used, the Kafka client only when `neardup_worker` is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from neardup_stream.worker.settings import Settings
    from neardup_stream.worker.testing.broker import BrokerWorker
    from neardup_stream.worker.testing.driver import Driver

BOOTSTRAP_ENV = "KAFKA_BOOTSTRAP_SERVERS"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neardup-stream")
    group.addoption(
        "--neardup-bootstrap",
        default=None,
        help=f"Kafka bootstrap servers for the neardup_worker fixture (default ${BOOTSTRAP_ENV})",
    )
    group.addoption(
        "--neardup-ready-timeout",
        type=float,
        default=60.0,
        help="seconds neardup_worker waits for its worker to be ready (default 60)",
    )


# kafka-python 3.0.12 loads its protocol schemas with `importlib.resources.read_text`,
# deprecated since Python 3.11: a user's run of the kit's broker fixtures would show one
# warning per schema (~200), none of them the user's to act on.
KAFKA_CLIENT_WARNINGS = (
    "ignore:read_text is deprecated:DeprecationWarning:kafka",
    # read_text's own call of open_text, which warns from inside importlib
    "ignore:open_text is deprecated:DeprecationWarning:importlib.resources._legacy",
)


def pytest_configure(config: pytest.Config) -> None:
    for line in KAFKA_CLIENT_WARNINGS:
        config.addinivalue_line("filterwarnings", line)


@pytest.fixture
def neardup_settings() -> Settings:
    """The settings the kit's fixtures start from; override to configure the engine."""
    from neardup_stream.worker.settings import Settings

    return Settings()


@pytest.fixture
def neardup_driver(neardup_settings: Settings) -> Callable[..., Driver]:
    """Factory of broker-free drivers: `neardup_driver(settings=None, **driver_args)`."""
    from neardup_stream.worker.testing.driver import Driver

    def make(settings: Settings | None = None, **driver_args: Any) -> Driver:
        return Driver(neardup_settings if settings is None else settings, **driver_args)

    return make


@pytest.fixture(scope="session")
def neardup_bootstrap(pytestconfig: pytest.Config) -> str:
    """Bootstrap servers of the broker this session provides."""
    given = pytestconfig.getoption("--neardup-bootstrap") or os.environ.get(BOOTSTRAP_ENV, "")
    if not given.strip():
        pytest.fail(
            f"neardup_worker needs a broker: pass --neardup-bootstrap HOST:PORT, set "
            f"${BOOTSTRAP_ENV}, or override the neardup_bootstrap fixture",
            pytrace=False,
        )
    return given.strip()


@pytest.fixture
def neardup_worker(
    request: pytest.FixtureRequest, neardup_settings: Settings, neardup_bootstrap: str
) -> Iterator[BrokerWorker]:
    """A real worker in this process, on topics and a group of this test only."""
    from neardup_stream.worker.testing.broker import BrokerWorker, fresh_settings

    settings = fresh_settings(neardup_settings, neardup_bootstrap, request.node.name)
    timeout = request.config.getoption("--neardup-ready-timeout")
    worker = BrokerWorker.start(settings, ready_timeout=timeout)
    try:
        yield worker
    finally:
        worker.close()
