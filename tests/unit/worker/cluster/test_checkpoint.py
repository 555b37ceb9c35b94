"""Checkpoints in committed-offset metadata: log offsets, and where a gather reads payloads."""

from __future__ import annotations

import json
from typing import Any

from kafka import OffsetAndMetadata, TopicPartition

from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS


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


def test_a_role_is_overtaken_only_when_every_checkpoint_it_holds_is_past_the_record() -> None:
    # A single-stage record at log offset 10 of partition 0: a role whose committed
    # checkpoints are all past it read on a stale view (it rebuilds); one that is not
    # means a checkpoint went back (the partition stops).
    committed = {
        TopicPartition("shards", 0): checkpoint.encode({0: 11, 1: 3}),
        TopicPartition("shards", 1): checkpoint.encode({0: 40}),
        TopicPartition("shards", 2): checkpoint.encode({0: 10}),
        TopicPartition("shards", 3): None,
    }

    class Consumer:
        def committed(self, tp: TopicPartition, **kwargs: Any) -> OffsetAndMetadata | None:
            meta = committed[tp]
            return None if meta is None else OffsetAndMetadata(0, meta, -1)

    def past(*shards: int, p: int = 0) -> bool:
        held = [TopicPartition("shards", s) for s in shards]
        return checkpoint.decided_past(Consumer(), held, p, 10)  # type: ignore[arg-type]

    assert past(0) and past(0, 1)
    assert not past(0, 2)  # shard 2's checkpoint is at the record: not decided past it
    assert not past(0, 3)  # nothing committed for shard 3
    assert not past(0, p=1)  # another log partition
    assert not past()  # holding nothing, nothing says so
    error = checkpoint.Overtaken("log", 0, 10)
    assert error.retriable and "log-0 offset 10 was decided by a single-stage replica" in str(error)
