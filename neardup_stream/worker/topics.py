"""The worker's topics: create what is missing, and check what exists fits what it writes.

Topics the worker creates get `max.message.bytes` = the largest input it accepts plus
headroom (`WorkerSettings.output_max_message_bytes`), so a valid document always passes
through. Existing output topics are checked at start-up: one that is too small is reported
with the exact command that fixes it, and its limit is returned so the worker routes what
would not fit to the dead-letter topic (reason `unpublishable`) instead of failing a batch.
In partition scope, the index changelog gets at least as many partitions as the input (record
of input partition p goes to changelog partition p); `grow_changelog` follows input partitions
added at runtime. Topic scope has no such changelog (its internal topics are
`worker.cluster.layout`'s), so it neither creates nor checks one.

An input topic that does not exist is refused at start-up, with the existing topics whose
names are closest (a mistyped `--input-topic` would otherwise be watched forever), unless
`topics.create_input` asks for it to be created (a demo, a test whose producers start after
the worker).
"""

from __future__ import annotations

import difflib
import logging
import time
from dataclasses import dataclass
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions
from kafka.errors import InvalidPartitionsError, KafkaTimeoutError, TopicAlreadyExistsError

from neardup_stream.worker import changelog
from neardup_stream.worker.admission import DecideRules
from neardup_stream.worker.clients import common_config
from neardup_stream.worker.codec import bare_dead_letter_bytes
from neardup_stream.worker.settings import CLUSTER_TOPICS, Settings

log = logging.getLogger(__name__)
MAX_MESSAGE_BYTES = "max.message.bytes"
CLEANUP_POLICY, RETENTION_MS = "cleanup.policy", "retention.ms"
READ_CONFIGS = (MAX_MESSAGE_BYTES, CLEANUP_POLICY, RETENTION_MS)  # of outputs and changelog


class TopicsUnusable(RuntimeError):
    """The topics as configured cannot be used (a missing one with creation off, a derived
    name Kafka refuses, a changelog too small to grow): configuration, not a broker fault;
    the worker says it once and exits 78, without a traceback."""


@dataclass(frozen=True)
class TopicLayout:
    """What the loop needs to know about its topics after `ensure_topics`."""

    input_partitions: int
    limits: dict[str, int]  # output topic -> effective max.message.bytes

    def decide_rules(self, settings: Settings) -> DecideRules:
        """What the decide step needs, with the limits these topics really have."""
        return DecideRules.of(settings, self.limits)


def _admin(settings: Settings) -> KafkaAdminClient:
    # A broker that cannot be reached fails within one request timeout; callers retry.
    timeout = settings.kafka.request_timeout_ms
    return KafkaAdminClient(**common_config(settings.kafka), bootstrap_timeout_ms=timeout)


def ensure_topics(settings: Settings) -> TopicLayout:
    """Create missing topics, check existing ones; raises `TopicsUnusable` when unusable.

    A broker that is down raises a `KafkaError`; the caller retries.
    """
    topics = settings.topics
    changelog_topic = None
    if settings.topic_scope:
        _check_internal_names(settings)
    else:
        try:
            changelog_topic = changelog.topic_of(settings)
        except ValueError as exc:
            raise TopicsUnusable(str(exc)) from None
        how = "derived from the group id" if settings.is_derived("topics.changelog") else "named"
        log.info("index changelog %s (%s) of %s", changelog_topic, how, _pipeline(settings))
    admin = _admin(settings)
    try:
        existing = set(admin.list_topics())
        limit = str(settings.worker.output_max_message_bytes)
        spec: dict[str, Any] = {
            "num_partitions": topics.partitions,
            "replication_factor": topics.replication_factor,
            "configs": {MAX_MESSAGE_BYTES: limit},
        }
        wanted: dict[str, dict[str, Any]] = {}
        if topics.input not in existing:  # refused here unless it is to be created
            report_missing_input(topics.input, existing, topics.create_input)
            wanted[topics.input] = spec
        for name in (topics.unique, topics.duplicate, topics.dlq):
            if name not in existing and topics.create:
                wanted[name] = spec
        if wanted:
            create(admin, wanted)
        partitions = _partition_count(admin, topics.input, topics.create_input)
        if changelog_topic is not None:
            _ensure_changelog(admin, settings, changelog_topic, partitions, existing, limit)
        outputs = (topics.unique, topics.duplicate, topics.dlq)
        configs = _configs(admin, outputs + ((changelog_topic,) if changelog_topic else ()))
        limits = _limits(configs)
        _report_small(limits, settings)
        if changelog_topic is not None:
            report_uncompacted(configs[changelog_topic], changelog_topic, settings)
        return TopicLayout(partitions, limits)
    finally:
        admin.close()


def _check_internal_names(settings: Settings) -> None:
    """Topic scope's internal topic names are valid Kafka topic names (a broker refuses
    others, which the worker would retry for ever); raises `TopicsUnusable` naming the fix."""
    for field in CLUSTER_TOPICS:
        name = getattr(settings.cluster, field)
        if changelog.TOPIC_NAME.fullmatch(name):
            continue
        variable = f"NEARDUP_CLUSTER__{field.upper()}"
        if settings.is_derived(f"cluster.{field}"):
            raise TopicsUnusable(
                f"the internal topic {name!r} (cluster.{field}), derived from group id "
                f"{settings.worker.group_id!r}, is not a valid Kafka topic name (letters, "
                "digits, '.', '_', '-'): give --group-id such a name, or name the topic with "
                f"{variable}"
            )
        raise TopicsUnusable(
            f"cluster.{field} = {name!r} ({variable}) is not a valid Kafka topic name "
            "(letters, digits, '.', '_', '-', at most 249)"
        )


def _ensure_changelog(
    admin: KafkaAdminClient,
    settings: Settings,
    name: str,
    partitions: int,
    existing: set[str],
    limit: str,
) -> None:
    """Partition scope's index changelog: created compacted if missing (and creation is on,
    `max.message.bytes` = `limit`), with at least the input's partitions."""
    topics = settings.topics
    if name not in existing and topics.create:
        policy = "compact" if topics.changelog_retention_ms is None else "compact,delete"
        made = {CLEANUP_POLICY: policy, MAX_MESSAGE_BYTES: limit}
        if topics.changelog_retention_ms is not None:
            made[RETENTION_MS] = str(topics.changelog_retention_ms)
        spec = {"num_partitions": partitions, "replication_factor": topics.replication_factor}
        create(admin, {name: {**spec, "configs": made}})
    grow_changelog(admin, settings, partitions)


def grow_changelog(admin: KafkaAdminClient, settings: Settings, input_partitions: int) -> None:
    """Give the changelog at least `input_partitions` partitions (inputs can grow)."""
    name = changelog.topic_of(settings)
    have = _partition_count(admin, name, settings.topics.create)
    if have >= input_partitions:
        return
    if not settings.topics.create:
        raise TopicsUnusable(
            f"changelog topic {name!r} has {have} partitions; it needs at least the "
            f"input's {input_partitions} (topic creation is off: add partitions to it)"
        )
    try:
        admin.create_partitions({name: NewPartitions(input_partitions)})
        log.info("changelog %s grown to %d partitions", name, input_partitions)
    except InvalidPartitionsError:
        log.info("changelog %s was grown by another worker", name)


def report_missing_input(name: str, existing: set[str], create: bool) -> list[str]:
    """A missing input topic: refused (`TopicsUnusable`) with the closest existing names, a
    mistyped `--input-topic` being the usual cause; with `create` (`topics.create_input`)
    said once and created. Returns the closest names."""
    candidates = [t for t in existing if not t.startswith("__")]
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(repr(t) for t in close)}?" if close else "."
    if not create:
        raise TopicsUnusable(
            f"input topic {name!r} does not exist{hint} Set the input with --input-topic / "
            "NEARDUP_TOPICS__INPUT, or let the worker create it with --create-input-topic / "
            "NEARDUP_TOPICS__CREATE_INPUT=true."
        )
    log.warning("input topic %r does not exist (creating it)%s", name, hint)
    return close


def _pipeline(settings: Settings) -> str:
    return changelog.pipeline_of(settings).describe()


def grow_changelog_for(settings: Settings, input_partitions: int) -> None:
    """`grow_changelog` with a short-lived admin client (runtime partition growth)."""
    admin = _admin(settings)
    try:
        grow_changelog(admin, settings, input_partitions)
    finally:
        admin.close()


def _configs(admin: KafkaAdminClient, names: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The configs start-up checks (`READ_CONFIGS`) of each topic, in one request."""
    wanted = dict.fromkeys(READ_CONFIGS)
    resources = [ConfigResource(ConfigResourceType.TOPIC, n, wanted) for n in names]
    described = admin.describe_configs(resources, config_filter="all").get("topic", {})
    return {
        name: {k: str(e["value"]) for k, e in described.get(name, {}).items() if e is not None}
        for name in names
    }


def _limits(configs: dict[str, dict[str, str]]) -> dict[str, int]:
    limits = {}
    for name, found in configs.items():
        if MAX_MESSAGE_BYTES not in found:
            raise RuntimeError(f"could not read {MAX_MESSAGE_BYTES} of topic {name!r}")
        limits[name] = int(found[MAX_MESSAGE_BYTES])
    return limits


def _fix(settings: Settings, name: str, config: str) -> str:
    """The command that sets `config` (`key=value`) on topic `name`."""
    return (
        f"kafka-configs.sh --bootstrap-server {settings.kafka.bootstrap_servers} --alter "
        f"--entity-type topics --entity-name {name} --add-config {config}"
    )


def report_uncompacted(found: dict[str, str], name: str, settings: Settings) -> None:
    """Say so when the changelog `name` (its configs `found`) is not compacted (a topic made
    by hand, or auto-created with the broker's defaults): deleted by time, it forgets
    documents still in the window, and a restore decides them again as new; never deleted,
    it grows without bound."""
    policy = found.get(CLEANUP_POLICY)
    if policy is None or "compact" in policy.split(","):
        return
    retention = int(found.get(RETENTION_MS) or -1)
    age = settings.dedup.max_age_seconds
    fix = _fix(settings, name, f"{CLEANUP_POLICY}=compact")
    if retention < 0:
        log.warning(
            "changelog topic %s has cleanup.policy=%s, not compact: replaced and evicted "
            "documents' records are never removed, so it grows without bound and every restore "
            "replays all of them. To fix it run: %s",
            name,
            policy,
            fix,
        )
    elif age is None or retention < age * 1000:
        log.error(
            "changelog topic %s has cleanup.policy=%s with retention.ms=%d: index records "
            "older than that are deleted while their documents are still in the window (%s), "
            "so after a restart those documents are forgotten and their copies decided unique. "
            "To fix it run: %s",
            name,
            policy,
            retention,
            "kept without an age limit" if age is None else f"max_age_seconds={age}",
            fix,
        )


def _report_small(limits: dict[str, int], settings: Settings) -> None:
    """An output topic smaller than what the worker may write to it: said at start. A
    dead-letter topic too small even for a dead letter without payload is unusable: whatever
    is refused could not be published, so the worker does not start (`TopicsUnusable`)."""
    need = settings.worker.output_max_message_bytes
    dlq, bare = settings.topics.dlq, bare_dead_letter_bytes()
    if limits.get(dlq, bare) < bare:
        raise TopicsUnusable(
            f"dead-letter topic {dlq!r} has {MAX_MESSAGE_BYTES}={limits[dlq]}, below the "
            f"{bare} bytes a dead letter without its payload may take: an input refused "
            "could not be published anywhere, so the worker does not start. To fix it run: "
            + _fix(settings, dlq, f"{MAX_MESSAGE_BYTES}={need}")
        )
    for name, have in limits.items():
        if have >= need:
            continue
        log.error(
            "topic %s has %s=%d, below the %d bytes the worker may write to it; %s. To fix "
            "it run: %s",
            name,
            MAX_MESSAGE_BYTES,
            have,
            need,
            "dead letters that do not fit are written without their payload"
            if name == dlq
            else "outputs that do not fit go to the dead-letter topic as 'unpublishable'",
            _fix(settings, name, f"{MAX_MESSAGE_BYTES}={need}"),
        )


def create(admin: KafkaAdminClient, topics: dict[str, dict[str, Any]]) -> None:
    try:
        admin.create_topics(topics, wait_for_metadata=True)
        log.info("created topics %s", sorted(topics))
    except TopicAlreadyExistsError:
        log.info("topics %s already exist", sorted(topics))


def _partition_count(
    admin: KafkaAdminClient, topic: str, create: bool, wait_s: float = 15.0
) -> int:
    """Partitions of `topic`; waits a little for one another worker is just creating. Still
    not described then: a configuration error if it does not exist and creation is off, else
    a slow broker (a freshly started one under load took longer): `KafkaTimeoutError`, which
    start-up retries."""
    deadline = time.monotonic() + wait_s
    while True:
        meta = admin.describe_topics([topic])
        if meta and meta[0].get("error_code", 0) == 0 and meta[0]["partitions"]:
            return len(meta[0]["partitions"])
        if time.monotonic() > deadline:
            if not create and topic not in admin.list_topics():
                raise TopicsUnusable(
                    f"topic {topic!r} does not exist and topic creation is off "
                    "(NEARDUP_TOPICS__CREATE=false): create the topic, or let the worker do so"
                )
            raise KafkaTimeoutError(
                f"topic {topic!r}: the broker has not described its partitions after {wait_s:.0f} s"
            )
        time.sleep(0.5)
