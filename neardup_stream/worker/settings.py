"""The worker's settings: the engine's (`EngineSettings`) plus Kafka, topics, loop, metrics.

One frozen object, built once in `main()` from the environment (`NEARDUP_KAFKA__...`,
`NEARDUP_TOPICS__...`, `NEARDUP_WORKER__...`, `NEARDUP_METRICS__...`, and the engine's
`NEARDUP_DEDUP__...` / `NEARDUP_INPUT__...`) with command-line flags on top, and passed down.
Secrets are `SecretStr` and never appear in `redacted()` (what the worker logs at start-up).
"""

from __future__ import annotations

import json
import socket
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SecretStr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from neardup_stream.config import with_stream_home_shards
from neardup_stream.settings import EngineSettings

# Key (an id of up to 512 characters), decision headers and record-batch overhead.
OUTPUT_HEADROOM_BYTES = 64 * 1024


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Section):
    """How to reach the cluster; security settings pass straight to the Kafka clients."""

    bootstrap_servers: str = "localhost:9092"
    client_id: str = "neardup-stream"
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_password: SecretStr | None = None
    request_timeout_ms: int = Field(30_000, ge=1000)
    give_up_after_s: float | None = Field(
        None,
        gt=0,
        description="seconds a worker starting up keeps retrying a broker it cannot use "
        "before it exits with status 69 (EX_UNAVAILABLE), for orchestrators that should see "
        "a crash loop; unset: it retries until the broker answers",
    )
    producer_retry_backoff_ms: int = Field(
        20,
        ge=1,
        le=10_000,
        description="wait before a producer retries a request the broker refused for now; "
        "a transaction that starts while the previous one completes is refused "
        "(CONCURRENT_TRANSACTIONS) and waits this long",
    )

    @model_validator(mode="after")
    def _check_sasl(self) -> KafkaSettings:
        if self.security_protocol.startswith("SASL") and not self.sasl_mechanism:
            raise ValueError("sasl_mechanism is required with a SASL security_protocol")
        if self.sasl_mechanism and (self.sasl_username is None or self.sasl_password is None):
            raise ValueError("sasl_username and sasl_password are required with sasl_mechanism")
        return self


class TopicSettings(_Section):
    """Topic names, and how to create them when they are missing.

    The changelog holds one pipeline's index (`neardup_stream.worker.changelog`); unless named, `Settings`
    derives it as `<group id>.changelog` (`DERIVED_TOPICS`, like the internal topics), so
    pipelines of different groups never share one by default; with the default group
    `neardup` that is `neardup.changelog`, the name earlier versions used for every group.
    """

    input: str = "documents"
    unique: str = "documents.unique"
    duplicate: str = "documents.duplicate"
    dlq: str = "documents.dlq"
    changelog: str | None = Field(
        None,
        min_length=1,
        description="the index changelog of partition scope (topic scope reads none); default "
        "<group id>.changelog",
    )
    create: bool = True
    create_input: bool = Field(
        False,
        description="create the input topic when it is missing; off, a worker whose input "
        "does not exist is refused at start (exit 78), naming the closest existing topics",
    )
    partitions: int = Field(1, ge=1)
    replication_factor: int = Field(1, ge=1)
    changelog_retention_ms: int | None = Field(
        None,
        ge=1,
        description="time-based cleanup of partition scope's changelog besides compaction",
    )

    @model_validator(mode="after")
    def _topics_apart(self) -> TopicSettings:
        outputs = {"unique": self.unique, "duplicate": self.duplicate, "dlq": self.dlq}
        for setting, name in {"input": self.input, **outputs}.items():
            if self.changelog == name:
                raise ValueError(
                    f"changelog topic {name!r} is also the {setting} topic; the index changelog "
                    "needs a topic of its own (topics.changelog)"
                )
        for setting, name in outputs.items():
            if self.input == name:  # every output would come back as input, for ever
                raise ValueError(
                    f"{setting} topic {name!r} is also the input topic: the worker would read "
                    f"its own outputs again without end; give topics.{setting} another topic"
                )
        return self


class WorkerSettings(_Section):
    """The consume -> decide -> produce -> commit loop."""

    group_id: str = Field(
        "neardup",
        min_length=1,
        description="consumer group; names the pipeline's derived topics and its transactional ids",
    )
    instance_id: str = Field(
        default_factory=socket.gethostname,
        min_length=1,
        description="stable per worker replica; names its transactional id",
    )
    scope: Literal["topic", "partition"] = Field(
        "topic",
        description="what one index covers: topic, every partition of the input (one "
        "replica decides in single stage, more replicas of the same group shard the index); "
        "partition, each input partition deduplicated on its own, by one consumer of the group",
    )
    exactly_once: bool = True
    static_membership: bool = Field(
        True, description="rejoin under instance_id after a restart without a rebalance"
    )
    session_timeout_ms: int = Field(10_000, ge=6000)
    max_batch: int = Field(
        2000,
        ge=1,
        le=100_000,
        description="input records per poll and transaction; a cluster replica's transaction "
        "carries fixed work (three groups' offsets, one changelog partition per held shard) "
        "that a larger batch spreads over more documents",
    )
    poll_timeout_ms: int = Field(500, ge=1)
    metadata_max_age_ms: int = Field(
        30_000, ge=1000, description="how soon input partitions added at runtime are seen"
    )
    stall_timeout_s: float = Field(
        300.0,
        gt=0,
        description="how long a role may have work waiting without a commit before it says "
        "it is stalled (/healthz 503, neardup_role_stalled)",
    )
    transaction_timeout_ms: int = Field(
        60_000,
        ge=1000,
        description="transaction timeout; at most the broker's transaction.max.timeout.ms "
        "(900000 unless set), or the worker exits at start-up saying so",
    )
    max_message_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, le=512 * 1024 * 1024, description="larger inputs go to the DLQ"
    )
    dlq_payload_bytes: int = Field(
        65_536, ge=0, le=1024 * 1024, description="bytes of the original kept in a dead letter"
    )
    retry_backoff_max_s: float = Field(
        30.0, gt=0, description="longest wait between retries of a failing batch"
    )
    shutdown_timeout_s: float = Field(
        20.0,
        gt=0,
        le=3600,
        description="topic scope: how long a stopping replica waits for its roles' current "
        "steps, then closes each client with at least 1 s more; what is cut short is "
        "replayed on the next start",
    )
    snapshot_dir: str | None = Field(
        None, description="partition scope: local index snapshot directory (faster restores)"
    )
    snapshot_every_s: float = Field(300.0, gt=0)

    @property
    def transactional_id(self) -> str:
        return f"{self.group_id}-{self.instance_id}"

    @property
    def output_max_message_bytes(self) -> int:
        """`max.message.bytes` for the topics the worker creates: the largest input it
        passes through, plus its key, the decision headers and the record overhead."""
        return self.max_message_bytes + OUTPUT_HEADROOM_BYTES


class ClusterSettings(_Section):
    """Topic scope: replicas share one sharded index through internal topics (`neardup_stream.worker.cluster`).

    The internal topics' names default to `<group>.<suffix>` (`DERIVED_TOPICS`), so two
    pipelines with different group ids never share them; with the default group `neardup`
    they are `neardup.fingerprints`, ... Names given explicitly win.
    """

    fingerprints: str = "neardup.fingerprints"
    payloads: str = "neardup.payloads"
    votes: str = "neardup.votes"
    shards: str = "neardup.shards"
    shard_changelog: str = "neardup.shard-changelog"
    gather_changelog: str = "neardup.gather-changelog"
    control: str = Field(
        "neardup.control",
        description="compacted topic holding the cluster's settings record (`cluster.control`)",
    )
    positions: str = Field(
        "neardup.positions",
        description="compacted topic keeping every position the roles commit, so that group "
        "offsets expired while the cluster was down are restored (`runtime.positions`)",
    )
    claims: str = Field(
        "neardup.claims",
        min_length=1,
        description="topic shared by every pipeline on the broker: which pipeline owns each "
        "changelog and internal topic (`neardup_stream.worker.claims`), for the single worker too; not "
        "derived from the group id",
    )
    log_partitions: int = Field(
        1, ge=1, le=1024, description="fingerprint-log partitions; each orders whole domains"
    )
    retention_ms: int | None = Field(
        None,
        ge=1,
        description="internal topics' retention (default: the age window + the future-skew "
        "clamp + a margin of 1 h); an explicit value may not be smaller than that",
    )
    max_records: int = Field(100, ge=1, description="fingerprint records per shard transaction")
    gather_buffer_bytes: int = Field(
        64 << 20,
        ge=4096,
        description="per log partition, the undecided fingerprint-log records (and, apart, the "
        "payloads read ahead) the gather holds before it stops reading them; votes on records "
        "not read yet are kept up to a quarter of it and read again beyond",
    )
    single_stage: bool = Field(
        True,
        description="while this replica is the whole cluster (every input partition, shard "
        "and log partition), decide each batch in one transaction, with no payload or votes "
        "records; decisions are the same either way",
    )
    overlap_commits: bool = Field(
        True,
        description="the shard and gather roles commit each transaction while they read and "
        "step the next batch (`runtime.overlap`), as the single worker does; false: each "
        "commit ends before the next poll",
    )
    start_hold_s: float = Field(
        60.0,
        ge=0,
        description="at start, how long the edge reads no input at most while this replica's "
        "shard and gather roles are assigned and restore, so that a replica that is the whole "
        "cluster decides its first batch in single stage; then it appends for the three stages",
    )
    handover_from: str | None = Field(
        None,
        min_length=1,
        description="group id of this pipeline's previous, stopped generation: index its "
        "retained inputs again without publishing what it decided (settings change)",
    )


# Every topic whose default name is derived from the group id: "section.field" -> suffix of
# its default name, `<group>.<suffix>`. One mechanism for the single worker's changelog and
# the cluster's internal topics; a name given explicitly wins.
DERIVED_TOPICS = {
    "topics.changelog": "changelog",
    "cluster.fingerprints": "fingerprints",
    "cluster.payloads": "payloads",
    "cluster.votes": "votes",
    "cluster.shards": "shards",
    "cluster.shard_changelog": "shard-changelog",
    "cluster.gather_changelog": "gather-changelog",
    "cluster.control": "control",
    "cluster.positions": "positions",
}
# The `ClusterSettings` fields naming the scale-out roles' internal topics.
CLUSTER_TOPICS = tuple(k.split(".", 1)[1] for k in DERIVED_TOPICS if k.startswith("cluster."))
# What the internal topics keep beyond the age window and the future-skew clamp.
RETENTION_MARGIN_MS = 3_600_000


class MetricsSettings(_Section):
    """The /metrics and /healthz HTTP listener."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(9108, ge=0, le=65535)


class Settings(EngineSettings):
    """Everything the worker can be configured with.

    Derived at construction, and derived again after `with_overrides` (so a flag such as
    `--group-id` or `--scope` moves them along): the changelog and internal topic names
    nobody set (`<group>.<suffix>`, `DERIVED_TOPICS`), and in topic scope `dedup.home_shards`
    = `STREAM_HOME_SHARDS` when it is not set (`config.with_stream_home_shards`).

    `cluster.enabled` (`--cluster`, `NEARDUP_CLUSTER__ENABLED`) of 0.2 is read once more:
    true is the default now and is noted in `deprecated`; false, the per-partition worker of
    0.2, is refused naming `worker.scope=partition`.
    """

    kafka: KafkaSettings = KafkaSettings()
    topics: TopicSettings = TopicSettings()
    worker: WorkerSettings = WorkerSettings()
    cluster: ClusterSettings = ClusterSettings()
    metrics: MetricsSettings = MetricsSettings()
    _derived: frozenset[str] = PrivateAttr(default=frozenset())
    _deprecated: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _derive(cls, data: Any, handler: ModelWrapValidatorHandler[Settings]) -> Settings:
        derived: set[str] = set()
        deprecated: tuple[str, ...] = ()
        if isinstance(data, dict):
            data = dict(data)
            deprecated = _legacy_cluster_switch(data)
            group = _given(data.get("worker"), "group_id") or WorkerSettings().group_id
            sections = {name: _given_fields(data.get(name)) for name in ("topics", "cluster")}
            for path, suffix in DERIVED_TOPICS.items():
                section, name = path.split(".")
                if sections[section].get(name) is None:
                    sections[section][name] = f"{group}.{suffix}"
                    derived.add(path)
            data.update(sections)
        settings = handler(data)
        if settings.topic_scope:
            sharded = with_stream_home_shards(settings.dedup)
            if sharded is not settings.dedup:
                object.__setattr__(settings, "dedup", sharded)
                derived.add("dedup.home_shards")
        # BaseSettings validates again inside `handler` (its __init__): keep what that
        # inner pass derived (home shards set there look given out here)
        settings._derived = frozenset(derived) | settings._derived
        settings._deprecated = tuple(dict.fromkeys(deprecated + settings._deprecated))
        settings._check_scope()
        return settings

    @property
    def topic_scope(self) -> bool:
        """Whether one index covers the whole input topic (the edge, shard and gather roles
        of `neardup_stream.worker.cluster`), rather than one index per input partition."""
        return self.worker.scope == "topic"

    @property
    def deprecated(self) -> tuple[str, ...]:
        """What the settings gave that is read for now and will go (the worker logs each)."""
        return self._deprecated

    @property
    def unused(self) -> tuple[str, ...]:
        """What the settings gave that this scope does not read (the worker logs each): in
        topic scope, the partition scope's index changelog (the shards keep theirs in
        `cluster.shard_changelog`), which it neither creates nor checks."""
        if not self.topic_scope:
            return ()
        given = []
        if self.topics.changelog is not None and not self.is_derived("topics.changelog"):
            given.append(f"topics.changelog = {self.topics.changelog!r}")
        if self.topics.changelog_retention_ms is not None:
            given.append(f"topics.changelog_retention_ms = {self.topics.changelog_retention_ms!r}")
        if not given:
            return ()
        return (
            f"{' and '.join(given)} (--changelog-topic, NEARDUP_TOPICS__CHANGELOG*): the index "
            "changelog of worker.scope=partition, not read in topic scope, the default (its "
            f"shards keep their index in {self.cluster.shard_changelog!r}); the topic is "
            "neither created nor checked: drop the setting",
        )

    def _check_scope(self) -> None:
        if not self.topic_scope:
            self._check_no_domains()
            return
        partition_only = {
            "worker.exactly_once = false (--at-least-once)": (
                not self.worker.exactly_once,
                "the roles exchange votes and decisions in transactions",
            ),
            "dedup.precise (--precise)": (
                self.dedup.precise,
                "the shards keep no shingle sets",
            ),
            "dedup.longest_sentences": (
                bool(self.dedup.longest_sentences),
                "the shards keep no sentence signatures",
            ),
            "worker.snapshot_dir (--snapshot-dir)": (
                self.worker.snapshot_dir is not None,
                "the shards restore from their changelog, with no local snapshot",
            ),
        }
        for what, (on, why) in partition_only.items():
            if on:
                raise ValueError(
                    f"{what} works with worker.scope=partition only ({why} in topic scope, "
                    "the default): add --scope partition (NEARDUP_WORKER__SCOPE=partition), "
                    "or drop the setting"
                )
        floor = self.min_retention_ms
        given = self.cluster.retention_ms
        if floor is not None and given is not None and given < floor:
            raise ValueError(
                f"cluster.retention_ms = {given} is below {floor}: the internal topics must "
                f"keep dedup.max_age_seconds ({self.dedup.max_age_seconds}) + "
                f"dedup.max_future_skew_seconds ({self.dedup.max_future_skew_seconds}) + a "
                f"margin of {RETENTION_MARGIN_MS} ms, or a restore misses documents"
            )

    def _check_no_domains(self) -> None:
        """Partition scope keeps one index per input partition and compares every document
        of it: a dedup domain setting would be silently ignored, so it is refused."""
        for name in ("domain_field", "domain_header", "domain_key_separator"):
            if getattr(self.input, name) is not None:
                flag = "--" + name.replace("_", "-")
                raise ValueError(
                    f"input.{name} ({flag}) needs worker.scope=topic (the default): only "
                    "topic scope compares documents within their domain; worker.scope="
                    "partition would ignore it. Drop --scope partition, or drop the setting"
                )

    @property
    def input_settings(self) -> dict[str, Any]:
        """The input mapping flattened to `input.field`, as JSON reads it back (lists, not
        tuples): what the fingerprints in an index were computed from."""
        flat = {f"input.{k}": v for k, v in self.input.model_dump(mode="json").items()}
        loaded: dict[str, Any] = json.loads(json.dumps(flat))
        return loaded

    @property
    def index_settings(self) -> dict[str, Any]:
        """What a single worker's index was built with beyond the fingerprint settings its
        changelog records carry: the input mapping, and whether duplicates are indexed.
        Named in the claim of its changelog (`neardup_stream.worker.claims`)."""
        return {**self.input_settings, "dedup.index_duplicates": self.dedup.index_duplicates}

    def is_derived(self, path: str) -> bool:
        """Whether the setting at "section.field" was derived rather than given."""
        return path in self._derived

    @property
    def min_retention_ms(self) -> int | None:
        """The least the internal topics may keep (None: no age window, keep everything)."""
        age = self.dedup.max_age_seconds
        if age is None:
            return None
        return int((age + self.dedup.max_future_skew_seconds) * 1000) + RETENTION_MARGIN_MS

    @property
    def internal_retention_ms(self) -> int:
        """`retention.ms` of the internal topics: explicit, or the floor (-1: forever)."""
        if self.cluster.retention_ms is not None:
            return self.cluster.retention_ms
        floor = self.min_retention_ms
        return -1 if floor is None else floor

    def with_overrides(self, overrides: dict[str, dict[str, Any]]) -> Settings:
        """As `EngineSettings.with_overrides`, but derived values are derived again from the
        overridden settings rather than kept (a flag like `--group-id` moves them along)."""
        data = self.model_dump()
        for path in self._derived:
            section, name = path.split(".")
            data[section].pop(name, None)
        if "home_shards" not in self.dedup.model_fields_set:
            data["dedup"].pop("home_shards", None)
        for section, given in given_overrides(overrides).items():
            if not isinstance(data.get(section), dict):
                raise ValueError(f"unknown settings section {section!r}")
            data[section].update(given)
        self._keep_secrets(data)
        settings = type(self).model_validate(data)
        settings._deprecated = tuple(dict.fromkeys(self._deprecated + settings._deprecated))
        return settings

    def _keep_secrets(self, data: dict[str, Any]) -> None:
        for key in ("sasl_password", "ssl_password"):
            value = getattr(self.kafka, key)
            if value is not None and data["kafka"][key] == value:
                data["kafka"][key] = value.get_secret_value()


def given_overrides(overrides: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The values of `overrides` that were given (None: a flag not given), by section; a
    section with none left out."""
    given: dict[str, dict[str, Any]] = {}
    for section, values in overrides.items():
        set_here = {k: v for k, v in values.items() if v is not None}
        if set_here:
            given[section] = set_here
    return given


def _legacy_cluster_switch(data: dict[str, Any]) -> tuple[str, ...]:
    """Takes 0.2's `cluster.enabled` out of `data`: true is topic scope, the default now
    (a deprecation to log); false, or true beside worker.scope=partition, is refused."""
    cluster = data.get("cluster")
    if not isinstance(cluster, dict) or "enabled" not in cluster:
        return ()
    cluster = dict(cluster)
    value = cluster.pop("enabled")
    data["cluster"] = cluster
    try:
        enabled = TypeAdapter(bool).validate_python(value)
    except ValidationError:
        enabled = False
    scope = _given(data.get("worker"), "scope")
    if not enabled or scope == "partition":
        raise ValueError(
            f"cluster.enabled = {value!r} was removed in 0.3: a worker deduplicates every "
            "partition of its input (worker.scope=topic, the default); to deduplicate each "
            "partition on its own, as 0.2's worker without --cluster did, set "
            "worker.scope=partition (--scope partition, NEARDUP_WORKER__SCOPE=partition) and "
            "drop cluster.enabled; see docs/operations/upgrading.md"
        )
    return (
        "cluster.enabled (--cluster, NEARDUP_CLUSTER__ENABLED) is the default since 0.3 "
        "(worker.scope=topic) and will be removed; drop it",
    )


def _given(section: object, name: str) -> Any:
    """The value of `name` in a section given as a dict or a model, if it was given."""
    return _given_fields(section).get(name)


def _given_fields(section: object) -> dict[str, Any]:
    if isinstance(section, BaseModel):
        return {k: getattr(section, k) for k in section.model_fields_set}
    return dict(section) if isinstance(section, dict) else {}
