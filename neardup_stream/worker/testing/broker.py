"""A real worker in the test process against a real broker, with its own topics and group.

`BrokerWorker.start(settings)` embeds a worker (`neardup_stream.worker.embedded.EmbeddedWorker`) on the
topics and group `settings` name, waits until it is ready, and gives a test what it needs:
`send` / `send_documents` to produce to its input topic, `wait_for(n)` to block until `n`
outcomes (decisions and dead letters, read committed) arrived or fail after a timeout, and
`close()`, which stops the worker cleanly and deletes its topics and consumer group.
`fresh_settings` names everything after the test, plus a random suffix, so tests sharing one
broker never see each other's records. This module imports the Kafka client; the pytest
plugin imports it only when a broker fixture is used.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from neardup_stream.worker import changelog
from neardup_stream.worker.clients import Producer, common_config
from neardup_stream.worker.embedded import EmbeddedWorker
from neardup_stream.worker.settings import CLUSTER_TOPICS, Settings

log = logging.getLogger(__name__)
# The scale-out roles' consumer-group suffixes.
CLUSTER_ROLES = ("edge", "shards", "gather")


class Outcome(NamedTuple):
    """One committed outcome: a decision (unique or duplicate) or a dead letter."""

    kind: str  # "unique", "duplicate" or "dead_letter"
    topic: str
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]

    @property
    def id(self) -> str | None:
        """The document id (the message key), when there is one."""
        return None if self.key is None else self.key.decode(errors="replace")

    def json(self) -> Any:
        """The value parsed as JSON (a duplicate's decision, a dead letter's error record,
        or a unique document as it was sent)."""
        return json.loads(self.value)


def fresh_settings(base: Settings, bootstrap: str, name: str) -> Settings:
    """`base` with topics, group and instance named after `name` plus a random suffix, and
    the metrics listener on a free port."""
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)[:60]
    prefix = f"nd-{safe}-{uuid.uuid4().hex[:10]}"
    topics = {
        "input": prefix,
        "create_input": True,  # the kit owns the topics of its test
        "unique": f"{prefix}.unique",
        "duplicate": f"{prefix}.duplicate",
        "dlq": f"{prefix}.dlq",
    }
    if not base.topic_scope:  # (topic scope has no index changelog of this kind)
        topics["changelog"] = f"{prefix}.changelog"
    return base.with_overrides(
        {
            "kafka": {"bootstrap_servers": bootstrap},
            "topics": topics,
            "worker": {"group_id": f"{prefix}-group", "instance_id": "kit"},
            "cluster": {name: f"{prefix}.{name}" for name in CLUSTER_TOPICS},
            "metrics": {"port": 0},
        }
    )


class BrokerWorker:
    """An embedded worker on its own topics, with helpers to feed it and read its outcomes."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.embedded = EmbeddedWorker(settings)
        self.outcomes: list[Outcome] = []
        self._producer: KafkaProducer | None = None
        self._consumer: KafkaConsumer | None = None

    @classmethod
    def start(cls, settings: Settings, ready_timeout: float = 60.0) -> BrokerWorker:
        w = cls(settings)
        try:
            w.embedded.start().wait_ready(ready_timeout)  # its topics exist once it is ready
            conn = common_config(settings.kafka)
            w._producer = Producer(**conn, acks="all", linger_ms=2)
            w._consumer = KafkaConsumer(
                **conn,
                isolation_level="read_committed",
                enable_auto_commit=False,
                group_id=None,
                auto_offset_reset="earliest",
            )
            t = settings.topics
            tps = [
                TopicPartition(topic, p)
                for topic in (t.unique, t.duplicate, t.dlq)
                for p in range(t.partitions)
            ]
            w._consumer.assign(tps)
            w._consumer.seek_to_beginning(*tps)
        except BaseException:
            w.close()
            raise
        return w

    def send(
        self,
        value: bytes | None,
        key: bytes | None = None,
        headers: Sequence[tuple[str, bytes]] = (),
        timestamp_ms: int | None = None,
        partition: int | None = None,
    ) -> None:
        """Produce one message to the worker's input topic (sent before this returns)."""
        assert self._producer is not None
        self._producer.send(
            self.settings.topics.input,
            value=value,
            key=key,
            headers=list(headers),
            timestamp_ms=timestamp_ms,
            partition=partition,
        )
        self._producer.flush()

    def send_documents(self, docs: Iterable[dict[str, Any]]) -> int:
        """Produce documents as JSON, keyed by their `id`; returns how many were sent."""
        assert self._producer is not None
        n = 0
        for doc in docs:
            n += 1
            key = None if doc.get("id") is None else str(doc["id"]).encode()
            self._producer.send(self.settings.topics.input, value=json.dumps(doc).encode(), key=key)
        self._producer.flush()
        return n

    def wait_for(self, n: int, timeout: float = 60.0) -> list[Outcome]:
        """Every outcome so far, once at least `n` arrived; AssertionError after `timeout`."""
        assert self._consumer is not None
        t = self.settings.topics
        kinds = {t.unique: "unique", t.duplicate: "duplicate", t.dlq: "dead_letter"}
        deadline = time.monotonic() + timeout
        while len(self.outcomes) < n:
            health = self.embedded.health()
            if time.monotonic() > deadline or not health.running:
                raise AssertionError(
                    f"{len(self.outcomes)} of {n} outcomes after {timeout} s; worker {health}"
                )
            for tp, records in self._consumer.poll(timeout_ms=100).items():
                self.outcomes += [
                    Outcome(kinds[tp.topic], tp.topic, r.key, r.value, tuple(r.headers or ()))
                    for r in records
                ]
        return list(self.outcomes)

    def close(self) -> None:
        """Stop the worker (its batch in flight commits), then delete its topics and group."""
        try:
            if self._producer is not None:
                self._producer.close()
            if self._consumer is not None:
                self._consumer.close()
        finally:
            self.embedded.stop()
            delete_everything(self.settings)


def delete_everything(settings: Settings) -> None:
    """Delete the topics and consumer groups of `settings` (those that exist), the scale-out
    roles' too in topic scope."""
    t, group = settings.topics, settings.worker.group_id
    names = {t.input, t.unique, t.duplicate, t.dlq}
    groups = [group]
    if settings.topic_scope:  # (a changelog named there is not the test's: never deleted)
        names |= {getattr(settings.cluster, name) for name in CLUSTER_TOPICS}
        groups += [f"{group}-{role}" for role in CLUSTER_ROLES]
    else:
        names.add(changelog.topic_of(settings))
    admin = KafkaAdminClient(**common_config(settings.kafka))
    try:
        existing = names & set(admin.list_topics())
        if existing:
            admin.delete_topics(sorted(existing))
        for g in groups:
            try:
                admin.delete_consumer_groups([g])
            except Exception as exc:  # e.g. the group never formed; nothing to clean up
                log.info("consumer group %s not deleted: %r", g, exc)
    finally:
        admin.close()
