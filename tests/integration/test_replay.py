"""`runtime.replay.replay` against the real broker: a reader reused across restores.

The restore thread keeps one reader for every restore. A replay that stops a partition at an
unreadable record pauses it there; a later replay of the same partition on the same reader
(the partition was revoked and assigned again, or the record was fixed by compaction) must
read it again, not spin on a paused partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from prometheus_client import CollectorRegistry

from neardup_stream.worker import clients
from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.replay import ROLE_POLICY, Interrupted, each, replay
from neardup_stream.worker.settings import Settings

pytestmark = pytest.mark.integration
HANG_GUARD_S = 60  # a replay of three records that has not returned by then never will


def test_a_partition_stopped_by_one_replay_is_read_again_by_the_next_on_the_same_reader(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("changelog")
    kafka_admin.create_topics([NewTopic(topic, 1, 1)])
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    for value in (b"ok-1", b"bad", b"ok-2"):
        producer.send(topic, value, partition=0).get(30)
    producer.close()
    settings = Settings().with_overrides({"kafka": {"bootstrap_servers": kafka_bootstrap}})
    reader = clients.make_reader(settings)
    metrics = build_metrics(CollectorRegistry())
    tp = TopicPartition(topic, 0)
    seen: list[bytes] = []

    def strict(value: bytes) -> None:
        if value == b"bad":
            raise ValueError("unreadable")
        seen.append(value)

    def lenient(value: bytes) -> None:
        seen.append(value)

    def guard() -> Callable[[], bool]:
        deadline = time.monotonic() + HANG_GUARD_S
        return lambda: time.monotonic() > deadline

    try:
        first = replay(reader, {tp: None}, each(strict), ROLE_POLICY, guard(), metrics)
        assert first.stopped[0].offset == 1 and seen == [b"ok-1"]
        seen.clear()
        try:
            second = replay(reader, {tp: None}, each(lenient), ROLE_POLICY, guard(), metrics)
        except Interrupted:
            pytest.fail("the second replay never read the partition the first one paused")
        assert second.stopped == {} and seen == [b"ok-1", b"bad", b"ok-2"]
    finally:
        reader.close()
