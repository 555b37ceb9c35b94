"""Agreeing on the cluster's settings through the control topic (the Kafka side of `control`).

Before any role joins a group, a replica reads the control topic (one partition, compacted)
to its end. The first settings record in log order is the cluster's. If there is none, the
replica appends its own and reads again, so replicas that start together with different
settings all see the same first record and agree on one winner. The control topic is never
cleaned by time, and records of different settings have different keys (`control.encode`),
so compaction never removes the first record.
"""

from __future__ import annotations

import logging
import time
from typing import NamedTuple

from kafka import KafkaAdminClient, TopicPartition
from kafka.errors import KafkaTimeoutError

from neardup_stream.worker import clients, topics
from neardup_stream.worker.cluster import control
from neardup_stream.worker.cluster import handover as handover_
from neardup_stream.worker.cluster.control import Comparison, SettingsRecord
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
READ_TIMEOUT_S = 60.0


class Agreement(NamedTuple):
    """The cluster's record, this replica's, and how they compare."""

    cluster: SettingsRecord
    mine: SettingsRecord
    comparison: Comparison

    @property
    def handover(self) -> Handover:
        """What the cluster's previous generation decided (nothing: publish everything).

        The winner's: replicas started later need not set `cluster.handover_from`."""
        return Handover.from_json(self.cluster.handover)

    def explain(self, control_topic: str) -> str:
        return control.explain(self.comparison, self.cluster, self.mine, control_topic)


def ensure_control_topic(settings: Settings) -> None:
    """Create the control topic when missing: one partition, compacted, kept forever."""
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        if settings.cluster.control not in set(admin.list_topics()):
            spec = {
                "num_partitions": 1,
                "replication_factor": settings.topics.replication_factor,
                "configs": {"cleanup.policy": "compact"},
            }
            topics.create(admin, {settings.cluster.control: spec})
    finally:
        admin.close()


def read_values(settings: Settings, topic: str | None = None) -> list[bytes | None]:
    """Every value of the control topic (or another one-partition `topic`, e.g. the claims),
    in log order, up to its end when called."""
    reader = clients.make_reader(settings)
    tp = TopicPartition(topic or settings.cluster.control, 0)
    try:
        reader.assign([tp])
        reader.seek_to_beginning(tp)
        end = reader.end_offsets([tp])[tp]
        values: list[bytes | None] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while reader.position(tp) < end:
            if time.monotonic() > deadline:
                raise KafkaTimeoutError(f"reading control topic {tp.topic!r} to offset {end}")
            for batch in reader.poll(timeout_ms=500).values():
                values.extend(m.value for m in batch)
        return values
    finally:
        reader.close()


def append(settings: Settings, record: SettingsRecord) -> None:
    """Write `record` to the control topic and wait until the broker has it."""
    key, value = control.encode(record)
    write(settings, settings.cluster.control, key, value)


def write(settings: Settings, topic: str, key: bytes | None, value: bytes) -> None:
    """Append one record to partition 0 of `topic` and wait until the broker has it."""
    producer = clients.Producer(
        **clients.common_config(settings.kafka), acks="all", enable_idempotence=True
    )
    timeout = settings.kafka.request_timeout_ms / 1000
    try:
        producer.send(topic, key=key, value=value, partition=0).get(timeout=timeout)
    finally:
        clients.close_producer(producer, timeout)


def agree(settings: Settings) -> Agreement:
    """The cluster's settings (written now if there were none) compared with this replica's.

    A broker that is not usable raises a `KafkaError`; the caller retries.
    """
    mine = control.settings_record(settings)
    ensure_control_topic(settings)
    cluster = control.winner(read_values(settings))
    if cluster is None:
        if settings.cluster.handover_from is not None:
            handover = handover_.compute(settings)
            mine = mine._replace(handover=handover.to_json())
            _check_size(mine, handover)
        append(settings, mine)
        cluster = control.winner(read_values(settings))
        if cluster is None:
            raise RuntimeError(f"control topic {settings.cluster.control!r} lost our record")
        if cluster.instance == mine.instance:
            log.info("wrote the cluster's settings to %s", settings.cluster.control)
    found = control.compare(cluster, mine)
    wanted = settings.cluster.handover_from
    if wanted is not None:  # a replica's own handover must be the cluster's, not ignored
        taken = None if not cluster.handover else cluster.handover.get("old_group")
        if taken != wanted:
            difference = control.Difference("cluster.handover_from", taken, wanted)
            found = found._replace(differences=[*found.differences, difference])
    return Agreement(cluster, mine, found)


def _check_size(mine: SettingsRecord, handover: Handover) -> None:
    """Refuse `handover` if `mine`, the record carrying it, would not fit the control topic
    (the producer would refuse it on every retry)."""
    size = len(control.encode(mine)[1])
    if size > handover_.MAX_RECORD_BYTES:
        raise handover_.HandoverRefused(
            f"cluster.handover_from = {handover.old_group!r}: the old generation left inputs "
            f"taken in but not decided in too many runs for one control record ({size} bytes, "
            f"at most {handover_.MAX_RECORD_BYTES}; {handover.summary()}). Start the old "
            "generation again until its gather catches up, stop it, then hand over"
        )
