"""The worker's settings: the engine's (`EngineSettings`) plus Kafka, topics, loop, metrics.

One frozen object, built once in `main()` from the environment (`NEARDUP_KAFKA__...`,
`NEARDUP_TOPICS__...`, `NEARDUP_WORKER__...`, `NEARDUP_METRICS__...`, and the engine's
`NEARDUP_DEDUP__...` / `NEARDUP_INPUT__...`) with command-line flags on top, and passed down.
Secrets are `SecretStr` and never appear in `redacted()` (what the worker logs at start-up).
"""

from __future__ import annotations

import socket
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

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

    @model_validator(mode="after")
    def _check_sasl(self) -> KafkaSettings:
        if self.security_protocol.startswith("SASL") and not self.sasl_mechanism:
            raise ValueError("sasl_mechanism is required with a SASL security_protocol")
        if self.sasl_mechanism and (self.sasl_username is None or self.sasl_password is None):
            raise ValueError("sasl_username and sasl_password are required with sasl_mechanism")
        return self


class TopicSettings(_Section):
    """Topic names, and how to create them when they are missing.

    The changelog holds one pipeline's index (`worker.changelog`); unless named, it is
    `<group id>.changelog` (`changelog_for`), so pipelines of different groups never share
    one by default; with the default group `neardup` that is `neardup.changelog`, the name
    earlier versions used for every group.
    """

    input: str = "documents"
    unique: str = "documents.unique"
    duplicate: str = "documents.duplicate"
    dlq: str = "documents.dlq"
    changelog: str | None = Field(
        None, min_length=1, description="the index changelog; default <group id>.changelog"
    )
    create: bool = True
    partitions: int = Field(1, ge=1)
    replication_factor: int = Field(1, ge=1)
    changelog_retention_ms: int | None = Field(
        None, ge=1, description="time-based cleanup of the changelog besides compaction"
    )

    @model_validator(mode="after")
    def _changelog_apart(self) -> TopicSettings:
        others = {"input": self.input, "unique": self.unique, "duplicate": self.duplicate}
        others["dlq"] = self.dlq
        for setting, name in others.items():
            if self.changelog == name:
                raise ValueError(
                    f"changelog topic {name!r} is also the {setting} topic; the index changelog "
                    "needs a topic of its own (topics.changelog)"
                )
        return self

    def changelog_for(self, group_id: str) -> str:
        """The changelog topic of the pipeline consuming as `group_id`."""
        return self.changelog if self.changelog is not None else f"{group_id}.changelog"


class WorkerSettings(_Section):
    """The consume -> decide -> produce -> commit loop."""

    group_id: str = "neardup"
    instance_id: str = Field(
        default_factory=socket.gethostname,
        description="stable per worker replica; names its transactional id",
    )
    exactly_once: bool = True
    static_membership: bool = Field(
        True, description="rejoin under instance_id after a restart without a rebalance"
    )
    session_timeout_ms: int = Field(10_000, ge=6000)
    max_batch: int = Field(500, ge=1, le=100_000)
    poll_timeout_ms: int = Field(500, ge=1)
    metadata_max_age_ms: int = Field(
        30_000, ge=1000, description="how soon input partitions added at runtime are seen"
    )
    transaction_timeout_ms: int = Field(60_000, ge=1000)
    max_message_bytes: int = Field(
        8 * 1024 * 1024, ge=1024, le=512 * 1024 * 1024, description="larger inputs go to the DLQ"
    )
    dlq_payload_bytes: int = Field(
        65_536, ge=0, le=1024 * 1024, description="bytes of the original kept in a dead letter"
    )
    retry_backoff_max_s: float = Field(
        30.0, gt=0, description="longest wait between retries of a failing batch"
    )
    snapshot_dir: str | None = Field(None, description="optional local snapshot directory")
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
    """Scale-out: replicas share one sharded index through internal topics (`worker.cluster`)."""

    enabled: bool = Field(False, description="run the edge, shard and gather roles")
    fingerprints: str = "neardup.fingerprints"
    votes: str = "neardup.votes"
    shards: str = "neardup.shards"
    shard_changelog: str = "neardup.shard-changelog"
    gather_changelog: str = "neardup.gather-changelog"
    log_partitions: int = Field(
        1, ge=1, le=1024, description="fingerprint-log partitions; each orders whole domains"
    )
    retention_ms: int | None = Field(
        None, ge=1, description="internal topics' retention (default: the age window + 1 h)"
    )
    max_records: int = Field(100, ge=1, description="fingerprint records per shard transaction")


class MetricsSettings(_Section):
    """The /metrics and /healthz HTTP listener."""

    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(9108, ge=0, le=65535)


class Settings(EngineSettings):
    """Everything the worker can be configured with."""

    kafka: KafkaSettings = KafkaSettings()
    topics: TopicSettings = TopicSettings()
    worker: WorkerSettings = WorkerSettings()
    cluster: ClusterSettings = ClusterSettings()
    metrics: MetricsSettings = MetricsSettings()

    def _keep_secrets(self, data: dict[str, Any]) -> None:
        for key in ("sasl_password", "ssl_password"):
            value = getattr(self.kafka, key)
            if value is not None and data["kafka"][key] == value:
                data["kafka"][key] = value.get_secret_value()
