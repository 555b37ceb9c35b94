"""A real Prometheus for the integration tests: started, pointed at targets, queried.

`running_prometheus(data_dir)` runs ``deploy/local/prometheus.sh start`` (Debian's
`prometheus`, installed by the script when missing and run as root) on a free loopback port
with its own data dir, scraping every second the targets of a file_sd file, and stops it at
the end. `Prometheus` writes that file and reads results through the HTTP API
(/api/v1/query), waiting on conditions rather than sleeping.

`ensure_promtool()` makes sure `promtool` is installed (same script) and returns its path.
Both raise `PrometheusUnavailable` when the package is missing and cannot be installed here;
the fixtures in conftest.py fail on that in CI and skip locally.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.integration.harness import REPO_ROOT, free_port

PROMETHEUS_SH = REPO_ROOT / "deploy" / "local" / "prometheus.sh"
ALERTS_FILE = REPO_ROOT / "deploy" / "prometheus" / "alerts.yml"
JOB = "neardup-worker"
# prometheus.sh's exit status when the package is missing and cannot be installed.
EXIT_NOT_INSTALLED = 4
# apt-get may have to install the package first.
START_TIMEOUT_S = float(os.environ.get("PROM_FIXTURE_START_TIMEOUT", "600"))

Sample = tuple[dict[str, str], float]  # labels, value


class PrometheusUnavailable(RuntimeError):
    """Debian's prometheus package is not installed and cannot be installed here."""


def _script(*args: str, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        ["bash", str(PROMETHEUS_SH), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )
    if done.returncode == EXIT_NOT_INSTALLED:
        raise PrometheusUnavailable(done.stderr.strip())
    return done


@dataclass
class Prometheus:
    """A running Prometheus: its base URL and the file_sd file it scrapes."""

    url: str
    targets_file: Path

    def set_targets(self, targets: list[str]) -> None:
        """Scrape exactly `targets` (host:port) from now on; atomic, no restart."""
        tmp = self.targets_file.with_suffix(".tmp")
        tmp.write_text(json.dumps([{"targets": targets}] if targets else []))
        tmp.replace(self.targets_file)

    def api(self, path: str, **params: str) -> Any:
        """GET /api/v1/<path>; returns `data` of a successful answer."""
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[Sample]:
        """An instant vector query: (labels, value) per series."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", data
        return [(s["metric"], float(s["value"][1])) for s in data["result"]]

    def scalar(self, expr: str) -> float | None:
        """The value of a query that yields at most one series (None when it yields none)."""
        result = self.query(expr)
        assert len(result) <= 1, f"{expr} has {len(result)} series: {result}"
        return result[0][1] if result else None

    def wait_for(
        self,
        expr: str,
        condition: Callable[[list[Sample]], bool],
        timeout: float = 120,
        on_timeout: Callable[[], str] = str,
    ) -> list[Sample]:
        """Poll `expr` until `condition(result)` holds; the last result."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if condition(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{expr} -> {result} after {timeout}s\n{on_timeout()}")
            time.sleep(0.25)


def alert_names() -> set[str]:
    """Every alert defined in deploy/prometheus/alerts.yml."""
    groups = yaml.safe_load(ALERTS_FILE.read_text())["groups"]
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


@contextmanager
def running_prometheus(data_dir: Path) -> Iterator[Prometheus]:
    """Prometheus on a free loopback port with its data in `data_dir`, stopped afterwards."""
    targets = data_dir / "targets.json"
    env = {
        "PROM_HOST": "127.0.0.1",
        "PROM_PORT": str(free_port()),
        "PROM_DATA_DIR": str(data_dir),
        "PROM_TARGETS_FILE": str(targets),
        "PROM_SCRAPE_INTERVAL": "1s",
        "PROM_JOB": JOB,
    }
    started = _script("start", env=env, timeout=START_TIMEOUT_S)
    lines = started.stdout.strip().splitlines()
    if started.returncode != 0 or not lines:
        raise RuntimeError(
            f"{PROMETHEUS_SH} start failed (exit {started.returncode}):\n"
            f"{started.stderr[-4000:]}{started.stdout[-1000:]}"
        )
    try:
        yield Prometheus(lines[-1].strip(), targets)
    finally:
        _script("stop", env=env, timeout=60)


def ensure_promtool() -> str:
    """Path of `promtool`, installing Debian's prometheus package first if needed."""
    done = _script("install", env={}, timeout=START_TIMEOUT_S)
    if done.returncode != 0:
        raise RuntimeError(f"{PROMETHEUS_SH} install failed:\n{done.stderr[-4000:]}")
    path = shutil.which(os.environ.get("PROMTOOL", "promtool"))
    if path is None:
        raise PrometheusUnavailable("promtool is not on PATH after installing prometheus")
    return path
