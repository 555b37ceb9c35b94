"""A paused partition delivers again once resumed, whatever its consumer's other partitions
do (`clients.resumable`), against the real broker.

The sequence that stopped the gather for good under a backlog: partition B holds fetched
records when it is paused (kafka-python parks them), partition A's next records are read to
the end, A is paused (its buffer is full) and B resumed. kafka-python 3.0.12 alone then
returns nothing for B, for ever (measured: 0 records in 30 polls, position unchanged). Both
consumers the roles use, the group consumer and the reader, are built resumable.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from neardup_stream.worker import clients
from neardup_stream.worker.settings import Settings
from tests.integration.faults import create_topic, wait_for

pytestmark = pytest.mark.integration


def _poll_until(consumer: KafkaConsumer, done: Callable[[], bool], timeout: float) -> int:
    """Records returned by polls until `done()` (or the timeout)."""
    got, deadline = 0, time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        got += sum(len(v) for v in consumer.poll(100, max_records=500).values())
    return got


@pytest.mark.parametrize("make", ["reader", "consumer"])
def test_a_partition_resumed_after_its_records_were_parked_delivers_them(
    make: str, kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("parked")
    create_topic(kafka_bootstrap, topic, partitions=2)
    a, b = TopicPartition(topic, 0), TopicPartition(topic, 1)
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap)
    for _ in range(50):
        producer.send(topic, b"b", partition=1)
    producer.flush()
    settings = Settings.model_validate(
        {"kafka": {"bootstrap_servers": kafka_bootstrap}, "worker": {"group_id": topic}}
    )
    consumer = (
        clients.make_reader(settings) if make == "reader" else clients.make_consumer(settings)
    )
    try:
        consumer.assign([a, b])
        consumer.seek(a, 0)
        consumer.seek(b, 0)
        wait_for("B's first records", lambda: consumer.poll(200, max_records=5) or None, 30)
        taken = consumer.position(b)
        assert 0 < taken < 50  # B holds fetched records it has not returned yet
        consumer.pause(b)
        for _ in range(20):
            producer.send(topic, b"a", partition=0)
        producer.flush()
        _poll_until(consumer, lambda: consumer.position(a) >= 20, 30)
        assert consumer.position(a) == 20  # A read to its end while B was paused
        consumer.pause(a)
        consumer.resume(b)
        got = _poll_until(consumer, lambda: consumer.position(b) >= 50, 30)
        assert consumer.position(b) == 50 and got == 50 - taken
    finally:
        consumer.close()
        producer.close()
