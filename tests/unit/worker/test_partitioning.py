"""Keyed records land where kafka-python's (and the Java client's) default partitioner puts
them, computed for a whole batch at once."""

from __future__ import annotations

import random

import pytest
from kafka.partitioner.default import DefaultPartitioner
from kafka.partitioner.default import murmur2 as kafka_murmur2

from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.partitioning import key_partitions, murmur2, placed


def _keys(seed: int, count: int) -> list[bytes]:
    rnd = random.Random(seed)
    keys = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 70))) for _ in range(count)]
    return [*keys, b"", b"a", b"ab", b"abc", b"abcd", "近似重复".encode(), b"doc-000123456"]


class _Cluster:
    """What the default partitioner reads of the producer's metadata."""

    def __init__(self, partitions: int) -> None:
        self.partitions = set(range(partitions))

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions


def test_murmur2_of_a_batch_equals_kafka_pythons_key_by_key() -> None:
    keys = _keys(1, 3000)
    assert murmur2(keys).tolist() == [kafka_murmur2(k) for k in keys]
    assert murmur2([]).tolist() == []


@pytest.mark.parametrize("count", [1, 2, 3, 6, 7, 24, 100])
def test_keys_go_to_the_default_partitioners_partition(count: int) -> None:
    keys = _keys(count, 500)
    partitioner, cluster = DefaultPartitioner(), _Cluster(count)
    expected = [partitioner.partition("t", None, k, None, None, cluster) for k in keys]
    assert key_partitions(keys, range(count)) == expected


def test_only_keyed_messages_without_a_partition_are_placed() -> None:
    messages = [
        OutMessage("u", b"doc-1", b"v"),
        OutMessage("u", None, b"v"),  # no key: the producer chooses
        OutMessage("log", None, b"v", partition=2),
        OutMessage("u", b"doc-2", b"v", partition=0),  # named: kept
        OutMessage("d", b"doc-3", b"v"),
    ]
    asked: list[str] = []

    def partitions_for(topic: str) -> set[int]:
        asked.append(topic)
        return {0, 1, 2, 3, 4, 5} if topic == "u" else {0, 1}

    found = placed(messages, partitions_for)
    assert found[1:4] == [None, 2, 0]
    assert found[0] == key_partitions([b"doc-1"], range(6))[0]
    assert found[4] == key_partitions([b"doc-3"], range(2))[0]
    assert sorted(asked) == ["d", "u"]  # once per topic with keyed messages
    with pytest.raises(ValueError, match="without partitions"):
        placed(messages[:1], lambda topic: set())
