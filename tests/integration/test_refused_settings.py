"""Settings only the broker checks: a worker whose setting the broker refuses exits with
EX_CONFIG and one line naming the setting and the broker's bound, plain or `--cluster`;
never a traceback (`worker.refusals`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.harness import Topics, WorkerProcess
from worker.security_errors import EXIT_CONFIG

pytestmark = pytest.mark.integration
ABOVE_THE_BROKERS_LIMIT = 900_001  # the broker's transaction.max.timeout.ms is 900000


@pytest.mark.parametrize("mode", [[], ["--cluster"]], ids=["plain", "cluster"])
def test_a_transaction_timeout_above_the_brokers_limit_ends_start_up_with_one_clear_error(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, mode: list[str]
) -> None:
    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        extra=mode,
        env={"NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": str(ABOVE_THE_BROKERS_LIMIT)},
    ).start()
    assert worker.wait_exit(120) == EXIT_CONFIG, worker.log()
    log = worker.log()
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if "refuses worker.transaction_timeout_ms" in line]
    assert len(lines) == 1, log
    assert f"= {ABOVE_THE_BROKERS_LIMIT}" in lines[0]
    assert "transaction.max.timeout.ms" in lines[0]
