"""Settings only the broker checks: a worker whose setting the broker refuses exits with
EX_CONFIG and one line naming the setting and the broker's bound, plain or `--cluster`;
never a traceback (`neardup_stream.worker.refusals`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neardup_stream.worker.security_errors import EXIT_CONFIG
from tests.integration.harness import Topics, WorkerProcess

pytestmark = pytest.mark.integration
# each above the broker's default limit: transaction.max.timeout.ms, group.max.session.timeout.ms
REFUSED = {"transaction_timeout_ms": 900_001, "session_timeout_ms": 1_800_001}


@pytest.mark.parametrize("setting", sorted(REFUSED))
@pytest.mark.parametrize("mode", [[], ["--scope", "topic"]], ids=["plain", "cluster"])
def test_a_timeout_above_the_brokers_limit_ends_start_up_with_one_clear_error(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: list[str], setting: str
) -> None:
    value = REFUSED[setting]
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        extra=mode,
        env={f"NEARDUP_WORKER__{setting.upper()}": str(value)},
    ).start()
    assert worker.wait_exit(120) == EXIT_CONFIG, worker.log()
    log = worker.log()
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if f"refuses worker.{setting} = {value}" in line]
    assert len(lines) == 1, log
    assert "timeout.ms" in lines[0].split("):")[1]  # the broker's bound
