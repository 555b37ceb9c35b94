"""The internal topics of a cluster: what they must look like, creating them, checking them.

`internal_specs` derives each internal topic's partition count, `retention.ms` and
`max.message.bytes` from the settings (and names the setting each comes from). Missing
topics are created so; existing ones are checked at start-up (`check_internal_topics`), and
every difference becomes one refusal line: a `HOME_SHARDS` changed between restarts meets a
shards topic with the old partition count and is refused, never run against it. A retention
shorter than needed (topics made before the margin over the future-skew clamp existed) is
raised instead when topic creation is on; longer retention or larger messages are fine.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from neardup_stream.worker import clients, topics
from neardup_stream.worker.runtime import positions
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
RETENTION_MS = "retention.ms"
MAX_MESSAGE_BYTES = "max.message.bytes"


class TopicSpec(NamedTuple):
    """One internal topic as the settings want it; `configs` empty for the shards topic,
    which holds no records (its partitions are ownership tokens, with offsets)."""

    name: str
    partitions: int
    partitions_setting: str
    configs: dict[str, str]


class TopicState(NamedTuple):
    """An existing topic as the broker describes it."""

    partitions: int
    configs: dict[str, str]


def internal_specs(settings: Settings) -> list[TopicSpec]:
    c, home = settings.cluster, settings.dedup.home_shards
    configs = {
        MAX_MESSAGE_BYTES: str(settings.worker.output_max_message_bytes),
        RETENTION_MS: str(settings.internal_retention_ms),
    }
    log_p, shards = "cluster.log_partitions", "dedup.home_shards"
    return [
        TopicSpec(c.fingerprints, c.log_partitions, log_p, configs),
        TopicSpec(c.payloads, c.log_partitions, log_p, configs),
        TopicSpec(c.votes, c.log_partitions, log_p, configs),
        TopicSpec(c.gather_changelog, c.log_partitions, log_p, configs),
        TopicSpec(c.shards, home, shards, {}),
        TopicSpec(c.shard_changelog, home, shards, configs),
    ]


def _config_setting(name: str) -> str:
    if name == RETENTION_MS:
        return "cluster.retention_ms (default: dedup.max_age_seconds + max_future_skew + 1 h)"
    return "worker.max_message_bytes + headroom"


def mismatches(specs: list[TopicSpec], actual: dict[str, TopicState]) -> list[str]:
    """One line per difference: topic, setting, expected and actual value.

    A larger `max.message.bytes` or a longer retention than needed is fine (an operator may
    raise them); less is refused: records would not fit, or a restore would miss documents.
    """
    problems = []
    for spec in specs:
        have = actual.get(spec.name)
        if have is None:
            problems.append(f"topic {spec.name}: missing")
            continue
        if have.partitions != spec.partitions:
            problems.append(
                f"topic {spec.name}: {have.partitions} partitions, expected {spec.partitions} "
                f"from {spec.partitions_setting} = {spec.partitions}"
            )
        for key, want in spec.configs.items():
            got = have.configs.get(key)
            if got is None or _smaller(got, want, forever=key == RETENTION_MS):
                problems.append(
                    f"topic {spec.name}: {key} = {got}, expected {want} from {_config_setting(key)}"
                )
    return problems


def _smaller(got: str, want: str, forever: bool) -> bool:
    """`got` < `want`, where -1 means unlimited for retention."""
    g, w = int(got), int(want)
    if forever:
        g, w = (g if g >= 0 else 2**63), (w if w >= 0 else 2**63)
    return g < w


def describe(admin: KafkaAdminClient, names: list[str]) -> dict[str, TopicState]:
    """Partition counts and the checked configs of those of `names` that exist."""
    existing = set(admin.list_topics())
    names = [n for n in names if n in existing]
    if not names:
        return {}
    counts = {
        m["name"]: len(m["partitions"])
        for m in admin.describe_topics(names)
        if m.get("error_code", 0) == 0
    }
    keys = {RETENTION_MS: None, MAX_MESSAGE_BYTES: None}
    resources = [ConfigResource(ConfigResourceType.TOPIC, n, dict(keys)) for n in counts]
    described = admin.describe_configs(resources, config_filter="all").get("topic", {})
    return {
        name: TopicState(
            count,
            {k: str(v["value"]) for k, v in described.get(name, {}).items() if k in keys},
        )
        for name, count in counts.items()
    }


def short_retention(specs: list[TopicSpec], actual: dict[str, TopicState]) -> dict[str, str]:
    """Existing topics whose retention is below what the settings need -> the retention."""
    short = {}
    for spec in specs:
        have, want = actual.get(spec.name), spec.configs.get(RETENTION_MS)
        got = None if have is None else have.configs.get(RETENTION_MS)
        if want is not None and got is not None and _smaller(got, want, forever=True):
            short[spec.name] = want
    return short


def _raise_retention(
    admin: KafkaAdminClient, specs: list[TopicSpec], actual: dict[str, TopicState]
) -> bool:
    """Raise a too short retention (e.g. made before the margin existed) rather than refuse:
    a longer retention only makes restores read more. Returns whether anything changed."""
    short = short_retention(specs, actual)
    if not short:
        return False
    resources = [
        ConfigResource(ConfigResourceType.TOPIC, name, {RETENTION_MS: value})
        for name, value in short.items()
    ]
    admin.alter_configs(resources, incremental=True)
    for name, value in short.items():
        log.warning(
            "topic %s: raised %s from %s to %s (dedup window + future-skew clamp + margin)",
            name,
            RETENTION_MS,
            actual[name].configs.get(RETENTION_MS),
            value,
        )
    return True


def _describe_when(
    admin: KafkaAdminClient,
    names: list[str],
    settings: Settings,
    settled: Callable[[dict[str, TopicState]], bool],
) -> dict[str, TopicState]:
    """Describe until `settled` holds: a broker answers from its metadata, which may not yet
    show a topic just created (by this replica or another one starting at the same time) or a
    retention just raised. Bounded by the request timeout; what is still off then is refused
    like any other mismatch."""
    deadline = time.monotonic() + settings.kafka.request_timeout_ms / 1000
    while True:
        actual = describe(admin, names)
        if settled(actual) or time.monotonic() >= deadline:
            return actual
        time.sleep(0.1)


def create_internal_topics(settings: Settings) -> None:
    """Create the missing internal topics and wait until the broker shows them (a claim
    names a topic's id). Nothing existing is touched: that waits for `check_internal_topics`,
    after the claims, so a replica refused as another pipeline's changes none of its topics."""
    specs = internal_specs(settings)
    rf = settings.topics.replication_factor
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        existing = set(admin.list_topics())
        missing: dict[str, dict[str, Any]] = {
            s.name: {"num_partitions": s.partitions, "replication_factor": rf, "configs": s.configs}
            for s in specs
            if s.name not in existing
        }
        if missing:
            topics.create(admin, missing)
            _describe_when(admin, list(missing), settings, lambda got: set(missing) <= set(got))
        positions.ensure_topic(admin, settings.cluster.positions, rf)
    finally:
        admin.close()


def check_internal_topics(settings: Settings) -> list[str]:
    """Raise short retentions (when topic creation is on), then check every internal topic
    against the settings: the refusal lines."""
    specs = internal_specs(settings)
    names = [s.name for s in specs]
    admin = KafkaAdminClient(**clients.common_config(settings.kafka))
    try:
        actual = _describe_when(admin, names, settings, lambda got: set(names) <= set(got))
        if settings.topics.create and _raise_retention(admin, specs, actual):
            actual = _describe_when(
                admin, names, settings, lambda got: not short_retention(specs, got)
            )
        return mismatches(specs, actual)
    finally:
        admin.close()
