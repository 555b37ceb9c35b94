"""The docs' Python blocks that need a broker (`<!-- doc-test: broker -->`) run as written
against the real one, each in a fresh interpreter from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.unit.doc_blocks import ROOT, Block, all_blocks

pytestmark = pytest.mark.integration

BROKER_BLOCKS = [b for b in all_blocks() if b.lang == "python" and b.mark == "broker"]


def test_there_are_blocks_that_need_a_broker() -> None:
    assert BROKER_BLOCKS


@pytest.mark.parametrize("block", BROKER_BLOCKS, ids=lambda b: b.name)
def test_a_block_that_needs_a_broker_runs_as_written(block: Block, kafka_bootstrap: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["KAFKA_BOOTSTRAP_SERVERS"] = kafka_bootstrap
    proc = subprocess.run(
        [sys.executable, "-c", block.body], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, f"{block.name}:\n{proc.stdout}\n{proc.stderr[-4000:]}"
