"""Construction of the Kafka clients from the settings.

Security settings (TLS files, SASL PLAIN/SCRAM credentials) are mapped onto kafka-python's
arguments here and nowhere else; secret values are unwrapped only at this point.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from kafka import KafkaConsumer, KafkaProducer
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.errors import KafkaTimeoutError

from neardup_stream.worker import kafka_join
from neardup_stream.worker.settings import KafkaSettings, Settings

log = logging.getLogger(__name__)


def common_config(kafka: KafkaSettings) -> dict[str, Any]:
    """Connection and security arguments shared by every client."""
    cfg: dict[str, Any] = {
        "bootstrap_servers": [s.strip() for s in kafka.bootstrap_servers.split(",") if s.strip()],
        "client_id": kafka.client_id,
        "security_protocol": kafka.security_protocol,
    }
    if kafka.sasl_mechanism:
        cfg["sasl_mechanism"] = kafka.sasl_mechanism
        cfg["sasl_plain_username"] = kafka.sasl_username
        if kafka.sasl_password is not None:
            cfg["sasl_plain_password"] = kafka.sasl_password.get_secret_value()
    for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
        if getattr(kafka, name):
            cfg[name] = getattr(kafka, name)
    if kafka.ssl_password is not None:
        cfg["ssl_password"] = kafka.ssl_password.get_secret_value()
    return cfg


def make_consumer(settings: Settings, reset: str = "earliest", **extra: Any) -> KafkaConsumer:
    """The group consumer of the input topic (read_committed, manual commits).

    The sticky assignor keeps partitions where they are across rebalances, so a worker keeps
    the index of every partition that stays. read_committed also makes committed-offset
    look-ups wait for pending transactional commits (KIP-447 `require_stable`). `reset`
    "none" leaves a missing or out-of-range position to the caller (`input_start`). A join
    that completes between two polls is applied, not dropped (`kafka_join`). It never creates
    a topic it reads: an input deleted while it runs is not made again with the broker's
    defaults behind the operator's back (`topics` creates what the worker needs at start).
    """
    kafka_join.install()
    worker = settings.worker
    consumer = KafkaConsumer(
        **common_config(settings.kafka),
        group_id=worker.group_id,
        group_instance_id=worker.instance_id if worker.static_membership else None,
        session_timeout_ms=worker.session_timeout_ms,
        heartbeat_interval_ms=min(3000, worker.session_timeout_ms // 3),
        enable_auto_commit=False,
        auto_offset_reset=reset,
        isolation_level="read_committed",
        max_poll_records=settings.worker.max_batch,
        partition_assignment_strategy=(StickyPartitionAssignor,),
        metadata_max_age_ms=worker.metadata_max_age_ms,
        fetch_max_bytes=max(52_428_800, settings.worker.output_max_message_bytes),
        max_partition_fetch_bytes=max(1_048_576, settings.worker.output_max_message_bytes),
        **extra,
    )
    return resumable(no_auto_create(consumer))


def make_reader(settings: Settings) -> KafkaConsumer:
    """A group-less read_committed consumer for replaying the changelog, up to the last
    stable offset; `earliest`, so an offset compaction removed never skips records."""
    reader = KafkaConsumer(
        **common_config(settings.kafka),
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        isolation_level="read_committed",
        max_poll_records=10_000,
        fetch_max_bytes=52_428_800,
        max_partition_fetch_bytes=10_485_760,
    )
    return resumable(no_auto_create(reader))


def no_auto_create(consumer: KafkaConsumer) -> KafkaConsumer:
    """`consumer`, its metadata requests asking the broker not to create the topics they
    name. kafka-python 3.0.12 takes `allow_auto_create_topics` but does not pass it to its
    cluster metadata, which asks for creation by default: a topic deleted while the worker
    reads it came back at once, made by the broker with its defaults."""
    cluster = getattr(getattr(consumer, "_client", None), "cluster", None)
    if cluster is not None:
        cluster.config["allow_auto_create_topics"] = False
    return consumer


def resumable(consumer: KafkaConsumer) -> KafkaConsumer:
    """`consumer`, whose paused partitions deliver again once resumed. kafka-python 3.0.12
    parks the records a partition holds when it is paused (KAFKA-7548) and hands them back
    on a poll only while no other partition's records are next in line, testing that slot
    with `is None`; but a drained slot keeps its empty records object, and a parked partition
    is never fetched again. With every other partition paused nothing refills the slot, so
    the resumed partition read nothing, for ever: the gather, its fingerprint log paused
    while its buffer was full, waited for payloads parked on its resumed payloads partition
    (decisions stopped for good under a backlog). Here a drained slot is emptied before each
    poll takes records, as the library means it to be."""
    fetcher: Any = getattr(consumer, "_fetcher", None)
    take = getattr(fetcher, "fetched_records", None)
    if take is None or not hasattr(fetcher, "_paused_partition_records"):
        return consumer  # another kafka-python: nothing to correct

    def fetched_records(*args: Any, **kwargs: Any) -> Any:
        slot = fetcher._next_partition_records
        if slot is not None and not slot:  # drained (its records iterator is gone)
            fetcher._next_partition_records = None
        return take(*args, **kwargs)

    fetcher.fetched_records = fetched_records
    return consumer


class Producer(KafkaProducer):
    """kafka-python's producer without one side effect of its `__del__`: collecting any
    producer, even one closed long before, swapped the logger of `kafka.producer.kafka` for a
    null logger for the whole process (kafka-python PR #2043, meant for interpreter exit), so
    every producer's own warnings and errors went silent from the first one collected on.
    Here the logger is only nulled at interpreter exit; an unclosed producer collected at run
    time is still closed."""

    def __del__(self) -> None:
        if sys.is_finalizing():
            super().__del__()
        elif not getattr(self, "_closed", True):
            self.close(timeout=1)


def close_producer(producer: KafkaProducer, timeout: float) -> None:
    """Close `producer`, waiting `timeout` seconds at most for what it still sends. kafka-python's
    `close` flushes first and raises when a delivery does not complete in time (a paused or
    gone broker) before it stops the producer's network thread: that thread, its sockets
    and its retries would outlive every producer the worker replaces. Stopped here instead
    (`Sender.force_close`: its pending deliveries fail), and the producer counts as closed."""
    try:
        producer.close(timeout=timeout)
    except Exception:
        log.warning("closing a producer raised; stopping its network thread", exc_info=True)
        sender = getattr(producer, "_sender", None)
        if sender is not None and sender.is_alive():
            sender.force_close()
            sender.join(timeout)
        producer._closed = True  # `__del__` closes it no more


def await_partitions(
    producer: KafkaProducer, wanted: Mapping[str, set[int]], timeout_s: float
) -> None:
    """Wait until the producer's metadata shows every partition of `wanted`. A partition
    added a moment ago (input partitions added at runtime, and the changelog partitions
    that follow them) is refused by `send` ("Unrecognized partition", failing the
    transaction) until the producer's metadata, refreshed every `metadata.max.age.ms`,
    shows it: a refresh is asked for at once, as kafka-python's own wait for an unknown
    topic does. Raises `KafkaTimeoutError` (retriable) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        missing = {
            topic: sorted(wanted[topic] - set(producer.partitions_for(topic) or ()))
            for topic in wanted
        }
        missing = {topic: ps for topic, ps in missing.items() if ps}
        left = deadline - time.monotonic()
        if not missing:
            return
        if left <= 0:
            raise KafkaTimeoutError(f"partitions {missing} do not show in the metadata")
        refreshed = threading.Event()
        producer._metadata.request_update().add_both(lambda event, *_: event.set(), refreshed)
        producer._sender.wakeup()
        refreshed.wait(min(left, 1.0))


LINGER_MS = 5
DELIVERY_TIMEOUT_MS = 120_000  # kafka-python's default


def producer_config(settings: Settings) -> dict[str, Any]:
    """The producer's arguments. A record's delivery may take as long as a request may
    (`kafka.request_timeout_ms` is also the publisher's deadline for a whole commit): with
    kafka-python's fixed 120 s, a larger request timeout let a record expire unsent inside a
    transaction still waiting for its commit."""
    request_timeout_ms = settings.kafka.request_timeout_ms
    cfg: dict[str, Any] = {
        **common_config(settings.kafka),
        "acks": "all",
        "enable_idempotence": True,
        "linger_ms": LINGER_MS,
        "delivery_timeout_ms": max(DELIVERY_TIMEOUT_MS, request_timeout_ms + LINGER_MS),
        "batch_size": 262_144,
        "max_request_size": settings.worker.output_max_message_bytes,
        "request_timeout_ms": request_timeout_ms,
        # kafka-python's sender sleeps this before every retried transactional request (its
        # 20 ms override for AddPartitionsToTxn is never read). Back to back, a transaction's
        # AddOffsetsToTxn is often refused while the previous one completes
        # (CONCURRENT_TRANSACTIONS); at the default of 100 ms that was most of a commit.
        "retry_backoff_ms": settings.kafka.producer_retry_backoff_ms,
    }
    if settings.worker.exactly_once:
        cfg["transactional_id"] = settings.worker.transactional_id
        cfg["transaction_timeout_ms"] = settings.worker.transaction_timeout_ms
    return cfg


def make_producer(settings: Settings) -> KafkaProducer:
    """Transactional (exactly-once) or idempotent (at-least-once) producer."""
    producer = Producer(**producer_config(settings))
    if settings.worker.exactly_once:
        try:
            producer.init_transactions()
        except BaseException:  # the caller retries with a new producer: close this one
            producer.close(timeout=0)
            raise
    return producer
