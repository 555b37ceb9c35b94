import gc
import logging

import kafka.producer.kafka as kafka_producer
import pytest
from kafka import KafkaProducer

from worker.clients import Producer

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
