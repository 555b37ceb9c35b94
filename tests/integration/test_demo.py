"""The quick start end to end (`deploy/local/demo/run.sh`, what `make demo` runs), on the test
broker: the worker decides all 462 bundled messages, and the summary adds up: every message
is counted once, and the end-to-end time is at least the mean decision latency it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.integration.harness import REPO_ROOT, free_port

pytestmark = pytest.mark.integration


def test_the_demo_decides_the_sample_and_its_summary_adds_up(kafka_bootstrap: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["PYTHON"] = sys.executable
    args = ["--bootstrap-servers", kafka_bootstrap, "--metrics-port", str(free_port())]
    proc = subprocess.run(
        ["bash", str(REPO_ROOT / "deploy/local/demo/run.sh"), *args],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    head = re.search(
        r"== neardup-stream demo: (\d+) messages = (\d+) documents .* \+ (\d+) malformed", out
    )
    assert head is not None, out[-3000:]
    messages, documents, malformed = map(int, head.groups())
    counts = {k: int(v) for k, v in re.findall(r"^(unique|duplicate)\s+(\d+)", out, re.M)}
    dead = int(re.search(r"^dead letters\s+(\d+)", out, re.M).group(1))  # type: ignore[union-attr]
    assert counts["unique"] + counts["duplicate"] == documents and dead == malformed
    through = re.search(r"throughput\s+(\d+) messages in ([\d.]+) s", out)
    assert through is not None and int(through.group(1)) == messages
    latency = re.search(r"neardup_decision_latency_seconds\s+mean ([\d.]+) s", out)
    assert latency is not None and float(latency.group(1)) <= float(through.group(2)) + 0.01, out
