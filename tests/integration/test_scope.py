"""A plain worker on a 2-partition input says it compares within partitions only (issue 13).

Against the real broker: one worker alone owns both partitions and logs the WARNING once;
a second worker in the group takes one partition (no warning from either); when it stops,
the first one's assignment grows past one partition again and it warns again.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.integration.faults import wait_for
from tests.integration.harness import Topics, WorkerProcess

pytestmark = pytest.mark.integration
WARNING = "WARNING neardup_stream.worker.scope: this worker consumes 2 partitions of"


def warnings(worker: WorkerProcess) -> list[str]:
    text = worker.log_path.read_text(errors="replace")
    return [line for line in text.splitlines() if WARNING in line]


def owns_one(worker: WorkerProcess) -> bool:
    """The worker's last assignment is a single partition."""
    text = worker.log_path.read_text(errors="replace")
    found = re.findall(r"partitions assigned: (\[[\d, ]*\])", text)
    return bool(found) and len(json.loads(found[-1])) == 1


def test_a_plain_worker_on_two_partitions_warns_at_start_and_when_it_grows_again(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    group = "g-" + topics.input
    flags = ["--partitions", "2"]
    a = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "a.log", "a", flags)
    b = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "b.log", "b", flags)
    try:
        a.start().wait_ready()
        wait_for("a's warning", lambda: len(warnings(a)) == 1, 60)
        line = warnings(a)[0]
        assert f"{topics.input!r} ([0, 1])" in line
        assert "within each partition only" in line and "drop --scope partition" in line

        b.start()
        wait_for("the partitions split between a and b", lambda: owns_one(a) and owns_one(b), 120)
        assert warnings(b) == []
        assert len(warnings(a)) == 1  # shrunk to one partition: nothing to say

        assert b.stop() == 0
        wait_for("a's second warning", lambda: len(warnings(a)) == 2, 120)
        assert "([0, 1])" in warnings(a)[1]
    finally:
        for w in (a, b):
            if w.alive():
                w.stop()
