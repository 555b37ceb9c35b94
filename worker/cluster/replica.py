"""One scale-out replica: the edge, shard and gather roles in threads of one process."""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

from kafka import KafkaAdminClient

from worker import clients, retry, security_errors, topics
from worker.cluster.edge import EdgeRole
from worker.cluster.gather import GatherRole
from worker.cluster.shard import ShardRole
from worker.metrics import Metrics
from worker.settings import Settings

log = logging.getLogger(__name__)
RETENTION_ALLOWANCE_MS = 3_600_000


def internal_retention_ms(settings: Settings) -> int:
    """The internal topics keep the dedup window plus an hour; everything without a window."""
    c, age = settings.cluster, settings.dedup.max_age_seconds
    if c.retention_ms is not None:
        return c.retention_ms
    return -1 if age is None else int(age * 1000) + RETENTION_ALLOWANCE_MS


def ensure_internal_topics(settings: Settings) -> None:
    """Create the fingerprints, votes, shards and changelog topics when missing.

    All but the shards topic (which holds no records, only offsets) delete by time: the dedup
    window plus an allowance, so a restore never reads more than the window's history.
    """
    c, t = settings.cluster, settings.topics
    configs = {
        "max.message.bytes": str(settings.worker.output_max_message_bytes),
        "retention.ms": str(internal_retention_ms(settings)),
    }
    rf = t.replication_factor
    wanted: dict[str, dict[str, Any]] = {
        c.fingerprints: {
            "num_partitions": c.log_partitions,
            "replication_factor": rf,
            "configs": configs,
        },
        c.votes: {"num_partitions": c.log_partitions, "replication_factor": rf, "configs": configs},
        c.shards: {"num_partitions": settings.dedup.home_shards, "replication_factor": rf},
        c.shard_changelog: {
            "num_partitions": settings.dedup.home_shards,
            "replication_factor": rf,
            "configs": configs,
        },
        c.gather_changelog: {
            "num_partitions": c.log_partitions,
            "replication_factor": rf,
            "configs": configs,
        },
    }
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        existing = set(admin.list_topics())
        missing = {name: spec for name, spec in wanted.items() if name not in existing}
        if missing:
            topics.create(admin, missing)
    finally:
        admin.close()


def _ensure_all_topics(settings: Settings) -> topics.TopicLayout:
    layout = topics.ensure_topics(settings)
    ensure_internal_topics(settings)
    return layout


class Replica:
    """Same interface as `loop.Worker`: `run()` blocks until `request_stop()`."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self.ready = threading.Event()
        self.consuming = False
        self._stop = threading.Event()
        self._failed: list[str] = []

    def request_stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        s = self.settings
        delay = functools.partial(retry.backoff_s, s.worker.retry_backoff_max_s)
        ensure = security_errors.checked(s.kafka, lambda: _ensure_all_topics(s))
        layout = retry.until_stopped(self._stop, delay, ensure)
        if layout is None:
            return
        rules = layout.decide_rules(s)
        roles: list[Any] = [
            EdgeRole(s, self.metrics, self._stop, rules),
            ShardRole(s, self.metrics, self._stop),
            GatherRole(s, self.metrics, self._stop),
        ]
        threads = [threading.Thread(target=self._guard, args=(r,), daemon=True) for r in roles]
        self.consuming = True
        self.ready.set()
        self.metrics.ready.set(1)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in roles:
            try:
                r.close()
            except Exception:
                log.exception("closing %s failed", type(r).__name__)
        if self._failed:
            raise RuntimeError(f"scale-out role(s) failed: {', '.join(self._failed)}")

    def _guard(self, role: Any) -> None:
        """A role that dies takes the replica down (the orchestrator restarts it)."""
        try:
            role.run()
        except BaseException:
            log.exception("%s failed; stopping the replica", type(role).__name__)
            self._failed.append(type(role).__name__)
            self._stop.set()
