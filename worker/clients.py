"""Construction of the Kafka clients and the topics, from the settings.

Security settings (TLS files, SASL PLAIN/SCRAM credentials) are mapped onto kafka-python's
arguments here and nowhere else; secret values are unwrapped only at this point.
"""

from __future__ import annotations

import logging
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import TopicAlreadyExistsError

from neardup_stream.settings import KafkaSettings, Settings

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


def make_consumer(settings: Settings, **extra: Any) -> KafkaConsumer:
    """The group consumer of the input topic (read_committed, manual commits)."""
    worker = settings.worker
    return KafkaConsumer(
        **common_config(settings.kafka),
        group_id=worker.group_id,
        group_instance_id=worker.instance_id if worker.static_membership else None,
        session_timeout_ms=worker.session_timeout_ms,
        heartbeat_interval_ms=min(3000, worker.session_timeout_ms // 3),
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        max_poll_records=settings.worker.max_batch,
        fetch_max_bytes=max(52_428_800, settings.worker.max_message_bytes),
        max_partition_fetch_bytes=max(1_048_576, settings.worker.max_message_bytes),
        **extra,
    )


def make_reader(settings: Settings) -> KafkaConsumer:
    """A group-less read_committed consumer for replaying the changelog."""
    return KafkaConsumer(
        **common_config(settings.kafka),
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        max_poll_records=10_000,
        fetch_max_bytes=52_428_800,
        max_partition_fetch_bytes=10_485_760,
    )


def make_producer(settings: Settings) -> KafkaProducer:
    """Transactional (exactly-once) or idempotent (at-least-once) producer."""
    cfg: dict[str, Any] = {
        **common_config(settings.kafka),
        "acks": "all",
        "enable_idempotence": True,
        "linger_ms": 5,
        "batch_size": 262_144,
        "max_request_size": settings.worker.max_message_bytes + 65_536,
        "request_timeout_ms": settings.kafka.request_timeout_ms,
    }
    if settings.worker.exactly_once:
        cfg["transactional_id"] = settings.worker.transactional_id
        cfg["transaction_timeout_ms"] = settings.worker.transaction_timeout_ms
    producer = KafkaProducer(**cfg)
    if settings.worker.exactly_once:
        producer.init_transactions()
    return producer


def ensure_topics(settings: Settings) -> int:
    """Create missing topics; returns the input topic's partition count.

    The changelog gets as many partitions as the input (record of input partition p goes to
    changelog partition p) and is compacted.
    """
    topics = settings.topics
    admin = KafkaAdminClient(**common_config(settings.kafka))
    try:
        existing = set(admin.list_topics())
        wanted: dict[str, dict[str, Any]] = {}
        spec = {
            "num_partitions": topics.partitions,
            "replication_factor": topics.replication_factor,
        }
        for name in (topics.input, topics.unique, topics.duplicate, topics.dlq):
            if name not in existing:
                wanted[name] = dict(spec)
        if topics.create and wanted:
            _create(admin, wanted)
        partitions = _partition_count(admin, topics.input)
        if topics.changelog not in existing and topics.create:
            policy = "compact" if topics.changelog_retention_ms is None else "compact,delete"
            configs = {"cleanup.policy": policy}
            if topics.changelog_retention_ms is not None:
                configs["retention.ms"] = str(topics.changelog_retention_ms)
            _create(
                admin,
                {
                    topics.changelog: {
                        "num_partitions": partitions,
                        "replication_factor": topics.replication_factor,
                        "configs": configs,
                    }
                },
            )
        changelog = _partition_count(admin, topics.changelog)
        if changelog < partitions:
            raise RuntimeError(
                f"changelog topic {topics.changelog!r} has {changelog} partitions; "
                f"it needs at least the input's {partitions}"
            )
        return partitions
    finally:
        admin.close()


def _create(admin: KafkaAdminClient, topics: dict[str, dict[str, Any]]) -> None:
    try:
        admin.create_topics(topics, wait_for_metadata=True)
        log.info("created topics %s", sorted(topics))
    except TopicAlreadyExistsError:
        log.info("topics %s already exist", sorted(topics))


def _partition_count(admin: KafkaAdminClient, topic: str) -> int:
    meta = admin.describe_topics([topic])
    if not meta or meta[0].get("error_code", 0) != 0:
        raise RuntimeError(f"topic {topic!r} does not exist and topic creation is off")
    return len(meta[0]["partitions"])
