"""Checkpoints in committed-offset metadata: log offsets, and where a gather reads payloads."""

from __future__ import annotations

import json

from worker.cluster import checkpoint
from worker.cluster.payloads import PayloadCheckpoint


def test_a_gather_checkpoint_carries_where_it_resumes_reading_payloads() -> None:
    meta = checkpoint.encode({2: 41}, {2: PayloadCheckpoint(37, (39, 40))})
    assert checkpoint.decode(meta) == {2: 41}
    assert checkpoint.decode_payloads(meta) == {2: PayloadCheckpoint(37, (39, 40))}


def test_a_shard_checkpoint_has_no_payloads_and_reads_as_before() -> None:
    meta = checkpoint.encode({0: 5, 1: 9})
    assert checkpoint.decode(meta) == {0: 5, 1: 9}
    assert checkpoint.decode_payloads(meta) == {}
    spaced = json.dumps({"v": 1, "next": {"0": 5}})  # as the previous release wrote it
    assert checkpoint.decode(spaced) == {0: 5} and checkpoint.decode_payloads(spaced) == {}


def test_an_unreadable_payload_checkpoint_means_reading_payloads_from_the_start() -> None:
    assert checkpoint.decode_payloads(None) == {}
    assert checkpoint.decode_payloads('{"v": 1, "next": {}, "payloads": {"0": 7}}') == {}
