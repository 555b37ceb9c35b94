import gc
import logging
import threading
import time
import types
from typing import Any

import kafka.producer.kafka as kafka_producer
import pytest
from kafka import KafkaProducer, TopicPartition
from kafka.errors import KafkaTimeoutError
from kafka.future import Future

from neardup_stream.worker import clients
from neardup_stream.worker.clients import Producer, close_producer, producer_config
from neardup_stream.worker.settings import Settings

UNREACHABLE = {"bootstrap_servers": "127.0.0.1:9", "api_version": (3, 0, 0)}


@pytest.fixture
def producer_logger():
    """kafka-python's producer-module logger, real for the test (a producer an earlier test
    of this process collected may have nulled it), put back afterwards."""
    before = kafka_producer.log
    kafka_producer.log = logging.getLogger(kafka_producer.__name__)
    yield kafka_producer.log
    kafka_producer.log = before


@pytest.mark.parametrize("closed", [True, False])
def test_collecting_a_producer_leaves_kafka_pythons_logger_alone(producer_logger, closed):
    producer = Producer(**UNREACHABLE)
    if closed:
        producer.close(timeout=0)
    del producer
    gc.collect()
    assert kafka_producer.log is producer_logger
    assert isinstance(kafka_producer.log, logging.Logger)


def test_kafka_pythons_own_producer_nulls_that_logger_when_collected(producer_logger):
    """What `Producer` is for: the upstream class swaps the module's logger for good."""
    producer = KafkaProducer(**UNREACHABLE)
    producer.close(timeout=0)
    del producer
    gc.collect()
    assert not isinstance(kafka_producer.log, logging.Logger)


def _sender_threads() -> list:
    return [t for t in threading.enumerate() if type(t).__name__ == "Sender" and t.is_alive()]


def test_a_producer_whose_records_never_leave_is_closed_with_its_network_thread() -> None:
    """kafka-python's `close` flushes first and raises when a record is not delivered in
    time, leaving the producer's network thread running; `close_producer` stops it."""
    before = set(_sender_threads())
    producer = Producer(**UNREACHABLE)
    # a record batch with no broker to take it (the public `send` would first wait for
    # metadata that never comes)
    producer._accumulator.append(TopicPartition("t", 0), 0, None, b"value", [])
    with pytest.raises(KafkaTimeoutError):
        producer.flush(timeout=0.2)  # what `close` meets first
    close_producer(producer, timeout=0.2)
    # stopped: gone within seconds (on a loaded machine the 0.2 s join may end first);
    # without close_producer it runs until the process ends
    deadline = time.monotonic() + 10
    while set(_sender_threads()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert set(_sender_threads()) - before == set()
    assert producer._closed


@pytest.mark.parametrize("request_timeout_ms", [30_000, 300_000])
def test_a_record_may_take_as_long_to_deliver_as_a_request(request_timeout_ms: int) -> None:
    """A request timeout above kafka-python's fixed 120 s delivery timeout let a record
    expire unsent inside a transaction still waiting for its commit."""
    settings = Settings.model_validate({"kafka": {"request_timeout_ms": request_timeout_ms}})
    cfg = producer_config(settings)
    assert cfg["request_timeout_ms"] == request_timeout_ms
    assert cfg["delivery_timeout_ms"] >= max(120_000, request_timeout_ms + cfg["linger_ms"])


class _Metadata:
    """A producer's metadata that shows partitions added since after each refresh."""

    def __init__(self, known: dict[str, set[int]], later: dict[str, set[int]]) -> None:
        self.known, self.later, self.refreshes = known, later, 0

    def request_update(self) -> Any:
        self.refreshes += 1
        self.known = {t: self.known.get(t, set()) | ps for t, ps in self.later.items()}
        done = Future()
        done.success(None)
        return done


class _Producer:
    def __init__(self, metadata: _Metadata) -> None:
        self._metadata = metadata
        self._sender = types.SimpleNamespace(wakeup=lambda: None)

    def partitions_for(self, topic: str) -> set[int]:
        return self._metadata.known.get(topic, set())


def test_partitions_added_a_moment_ago_are_waited_for_with_a_refresh() -> None:
    # kafka-python's send refuses a partition its metadata does not show yet ("Unrecognized
    # partition", failing the transaction) until the periodic refresh: asked for at once.
    meta = _Metadata({"log": {0}}, {"log": {0, 1, 2}})
    producer = _Producer(meta)
    clients.await_partitions(producer, {"log": {0}}, 5)  # type: ignore[arg-type]
    assert meta.refreshes == 0  # known: no refresh
    clients.await_partitions(producer, {"log": {0, 2}}, 5)  # type: ignore[arg-type]
    assert meta.refreshes == 1


def test_partitions_that_never_show_time_out_retriably() -> None:
    producer = _Producer(_Metadata({"log": {0}}, {"log": {0}}))
    with pytest.raises(KafkaTimeoutError, match=r"partitions \{'log': \[3\]\} do not show"):
        clients.await_partitions(producer, {"log": {3}}, 0.05)  # type: ignore[arg-type]
    assert KafkaTimeoutError.retriable
