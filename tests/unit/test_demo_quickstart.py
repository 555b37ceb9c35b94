"""The quick start's rough edges: `make demo ARGS=...`, the port the demo suggests, and the
throughput line saying what it measures."""

from __future__ import annotations

import importlib.util
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _demo() -> ModuleType:
    path = ROOT / "deploy" / "local" / "demo" / "demo.py"
    spec = importlib.util.spec_from_file_location("neardup_demo_quickstart", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


demo = _demo()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_demo_passes_args_to_the_demo() -> None:
    out = subprocess.run(
        ["make", "-n", "demo", "ARGS=--metrics-port 9200 --stop-broker"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "deploy/local/demo/run.sh --metrics-port 9200 --stop-broker" in out
    stop = subprocess.run(
        ["make", "-n", "kafka-stop", "KAFKA_PORT=9192"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert "KAFKA_PORT=9192 deploy/local/kafka.sh stop" in stop


def test_the_suggested_port_is_free_and_never_the_test_suites() -> None:
    assert demo.free_port_pair(demo.TEST_KAFKA_PORT) not in (19091, 19092)
    assert demo.free_port_pair(19091) not in (19091, 19092)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        suggested = demo.free_port_pair(port)
        assert suggested not in (port, port - 1)
        assert not demo.port_open(suggested) and not demo.port_open(suggested + 1)


def test_the_throughput_line_says_what_it_measures() -> None:
    decision = {"id": "a", "decision": "unique", "duplicate_of": None, "method": None}
    text = demo.summarize([decision], {"a": {"text": "x", "lang": "en"}}, 2.0, [])
    assert "1 messages in 2.00 s" in text
    assert "not capacity" in text and "docs/benchmarks.md" in text
