"""Checkpoints in committed-offset metadata: log offsets, and where a gather reads payloads."""

from __future__ import annotations

import json
from typing import Any

from kafka import OffsetAndMetadata, TopicPartition

from worker.cluster import checkpoint
from worker.cluster.payloads import PayloadCheckpoint
from worker.partitions import COMMITTED_TIMEOUT_MS


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


def test_reading_a_checkpoint_waits_for_the_coordinator_a_bounded_time() -> None:
    # kafka-python's `committed` without a timeout waits forever for an absent coordinator
    # (a restore set-up would hold the loop, and a stop with it); with one, it raises
    # KafkaTimeoutError, which the follower retries later.
    asked: list[dict[str, Any]] = []

    class Consumer:
        def committed(self, tp: TopicPartition, **kwargs: Any) -> OffsetAndMetadata:
            asked.append(kwargs)
            return OffsetAndMetadata(7, checkpoint.encode({3: 12}), -1)

    assert checkpoint.read(Consumer(), TopicPartition("shards", 3)) == {3: 12}  # type: ignore[arg-type]
    assert asked == [{"metadata": True, "timeout_ms": COMMITTED_TIMEOUT_MS}]
