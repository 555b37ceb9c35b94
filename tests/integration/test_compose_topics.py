"""docker-compose.yml's topic-init creates topics the worker accepts as they are: created with
its exact configs on a real broker, they pass the worker's start-up check (no topic reported
as too small), with topic creation off as in compose."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest
from kafka.admin import NewTopic

from neardup_stream.worker.topics import ensure_topics
from tests.integration.faults import wait_for
from tests.unit.test_deploy import created_topics, env_of, interpolate, service, settings_from_env

if TYPE_CHECKING:
    from kafka import KafkaAdminClient


def test_compose_topics_pass_the_workers_check(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    unique_topic: Callable[[str], str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    env = {k: interpolate(v) for k, v in env_of(service("worker")).items()}
    compose = settings_from_env(monkeypatch, env)
    prefix = unique_topic("compose")
    renamed = {name: f"{prefix}.{name}" for name in created_topics()}
    kafka_admin.create_topics(
        [
            NewTopic(
                renamed[name],
                num_partitions=int(spec["partitions"]),
                replication_factor=1,
                topic_configs=spec["configs"],
            )
            for name, spec in created_topics().items()
        ]
    )
    # The worker starts long after topic-init; here the broker may not list them yet.
    wait_for(
        "the compose topics to be listed",
        lambda: set(renamed.values()) <= set(kafka_admin.list_topics()),
        timeout=30,
    )
    t = compose.topics
    settings = compose.with_overrides(
        {
            "kafka": {"bootstrap_servers": kafka_bootstrap},
            "topics": {
                "input": renamed[t.input],
                "unique": renamed[t.unique],
                "duplicate": renamed[t.duplicate],
                "dlq": renamed[t.dlq],
            },
        }
    )
    assert settings.topics.create is False
    with caplog.at_level(logging.ERROR, logger="neardup_stream.worker.topics"):
        layout = ensure_topics(settings)
    complaints = [r.getMessage() for r in caplog.records if r.name.startswith("worker")]
    assert complaints == []  # (kafka-python's own warnings, e.g. a slow event loop, are not ours)
    need = settings.worker.output_max_message_bytes
    assert layout.input_partitions == int(created_topics()[t.input]["partitions"])
    assert all(limit >= need for limit in layout.limits.values()), layout.limits
