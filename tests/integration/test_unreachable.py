"""A wrong bootstrap address: the worker says once, first, which address it cannot reach, and
keeps retrying without kafka-python repeating every connection error; a SIGTERM then ends it at
once, saying so."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.harness import Topics, WorkerProcess, free_port


def test_a_wrong_bootstrap_address_is_named_once_then_retried_quietly(
    unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    worker = WorkerProcess(
        address,
        Topics.fresh(unique_topic),
        unique_topic("g"),
        tmp_path / "worker.log",
        env={"NEARDUP_KAFKA__REQUEST_TIMEOUT_MS": "1000"},  # start-up attempts fail fast
    ).start()
    try:
        deadline = time.monotonic() + 120
        while worker.log().count("broker not usable yet") < 4:  # four failed start-ups
            assert worker.alive(), worker.log()
            if time.monotonic() > deadline:
                pytest.fail(f"the worker did not retry:\n{worker.log()}")
            time.sleep(0.2)
        assert worker.alive()  # it keeps retrying: a broker may come up later
    finally:
        code = worker.stop()
    assert code == 128 + signal.SIGTERM, worker.log()  # still starting: nothing to finish
    assert "SIGTERM while starting: nothing to finish, exiting" in worker.log()
    lines = (tmp_path / "worker.log").read_text().splitlines()
    said = [i for i, line in enumerate(lines) if "cannot reach the Kafka bootstrap" in line]
    assert len(said) == 1 and address in lines[said[0]] and "keeps retrying" in lines[said[0]]
    kafka = [(i, line) for i, line in enumerate(lines) if " kafka." in line]
    assert kafka and said[0] < kafka[0][0]  # the clear message comes first
    templates = [re.sub(r"\d+(\.\d+)?", "N", line.split(" ", 2)[2]) for _, line in kafka]
    assert len(templates) == len(set(templates)), "\n".join(line for _, line in kafka)


@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_a_broker_never_reached_ends_start_up_after_the_give_up_deadline(
    mode: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    """For orchestrators that should see a crash loop: `--give-up-after` bounds the retries,
    then the worker exits 69 (EX_UNAVAILABLE) with one error line naming the setting."""
    address = f"127.0.0.1:{free_port()}"
    worker = WorkerProcess(
        address,
        Topics.fresh(unique_topic),
        unique_topic("g"),
        tmp_path / "worker.log",
        extra=["--give-up-after", "3", *(["--scope", "topic"] if mode == "cluster" else [])],
        env={"NEARDUP_KAFKA__REQUEST_TIMEOUT_MS": "1000"},
    ).start()
    code = worker.wait_exit(120)
    assert code == 69, worker.log()
    errors = [line for line in worker.log().splitlines() if " ERROR neardup_stream." in line]
    assert len(errors) == 1, worker.log()
    assert "giving up after kafka.give_up_after_s=3" in errors[0]
    assert "Traceback" not in worker.log()
