"""The broker-free driver publishes what a real worker publishes, byte for byte.

The demo sample (460 news documents with near-duplicates, and the 2 malformed messages the
demo produces: invalid JSON and a missing text) goes once through `neardup_stream.worker.testing.Driver` and
once through `python -m neardup_stream.worker` on the real broker, with the same keys and record timestamps;
once in partition scope (`--scope partition`: each partition its own index), once in topic
scope (the default, here with 6 home shards). Both bound the index to 30 documents, which the
sharded index applies per shard: the two scopes then decide differently (checked), so each
comparison shows the driver took its scope's path.
Every output topic is compared in order: key, value and headers. The one field that cannot be
equal is a dead letter's `at` (the wall clock when the worker built it); it is checked to be
an ISO time and blanked on both sides, everything else must be identical bytes.
"""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path

import pytest
from kafka import KafkaProducer

from neardup_stream.worker.settings import Settings
from neardup_stream.worker.testing import Driver, InputMessage, OutputRecord
from tests.integration.harness import REPO_ROOT, Topics, WorkerProcess, read_all

pytestmark = pytest.mark.integration

SAMPLE = REPO_ROOT / "deploy" / "local" / "demo" / "sample.jsonl"
# Record times an hour back: within the input topic's retention (7 days by default) and
# behind the skew clamp. A fixed date fell out of the retention as time went on, and the
# broker deleted the input under the worker (seen in CI: the log started at 462, and the
# worker had decided a prefix only).
BASE_MS = int(time.time() * 1000) - 3_600_000
AT = re.compile(rb'"at":"([^"]*)"')


def demo_messages() -> list[InputMessage]:
    """The sample as the demo produces it: key = the document id, else `line-<n>`."""
    lines = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    out = []
    for n, line in enumerate(lines, 1):
        try:
            key = str(json.loads(line)["id"]).encode()
        except (ValueError, KeyError, TypeError):
            key = f"line-{n}".encode()
        out.append(InputMessage(line, key, timestamp_ms=BASE_MS + n))
    return out


SHARDS = 6
MAX_DOCS = 30  # a bound the single and the sharded index apply differently (per shard)


def cluster_env(topics: Topics) -> dict[str, str]:
    """A scale-out worker's internal topics (fresh) and home shards, as its environment."""
    return {
        **topics.internal_env(),
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
    }


def settings_for(topics: Topics, cluster: bool) -> Settings:
    overrides: dict[str, dict[str, object]] = {
        "topics": {
            "input": topics.input,
            "unique": topics.unique,
            "duplicate": topics.duplicate,
            "dlq": topics.dlq,
            "changelog": topics.changelog,
        },
        "dedup": {"max_docs": MAX_DOCS},
        "worker": {"scope": "topic" if cluster else "partition"},
    }
    if cluster:  # the driver needs no internal topics; the same settings as the worker's
        env = cluster_env(topics)
        overrides["cluster"] = {}
        for name in (
            "fingerprints",
            "payloads",
            "votes",
            "shards",
            "shard_changelog",
            "gather_changelog",
        ):
            overrides["cluster"][name] = env[f"NEARDUP_CLUSTER__{name.upper()}"]
        overrides["dedup"]["home_shards"] = SHARDS
    return Settings().with_overrides(overrides)


def comparable(topic: str, key: bytes | None, value: bytes, headers: object) -> tuple:
    """The record as bytes; a dead letter's wall-clock `at` is checked, then blanked."""
    if topic.endswith(".dlq"):
        found = AT.findall(value)
        assert len(found) == 1, value
        datetime.fromisoformat(found[0].decode().replace("Z", "+00:00"))
        value = AT.sub(b'"at":""', value)
    return topic, key, value, [(k, bytes(v)) for k, v in headers]  # type: ignore[attr-defined]


@pytest.mark.parametrize("cluster", [False, True], ids=["single", "cluster"])
def test_driver_matches_a_real_worker_byte_for_byte(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, cluster: bool
) -> None:
    messages = demo_messages()
    driver = Driver(settings_for(topics, cluster))
    predicted = driver.send_many(messages)
    assert len(predicted) == len(messages)  # one outcome each
    by_topic: dict[str, list[OutputRecord]] = {}
    for r in predicted:
        by_topic.setdefault(r.topic, []).append(r)
    assert set(by_topic) == {topics.unique, topics.duplicate, topics.dlq}
    assert len(by_topic[topics.dlq]) == 2  # the demo's malformed messages
    other_mode = Driver(settings_for(topics, not cluster)).send_many(messages)
    differ = sum(
        (a.topic, a.headers) != (b.topic, b.headers)
        for a, b in zip(predicted, other_mode, strict=True)
    )
    assert differ > 0, "both modes decide alike here: the comparison would not tell them apart"

    worker = WorkerProcess(
        kafka_bootstrap,
        topics,
        "g-" + topics.input,
        tmp_path / "w.log",
        scope="topic" if cluster else "partition",
        env={"NEARDUP_DEDUP__MAX_DOCS": str(MAX_DOCS), **(cluster_env(topics) if cluster else {})},
    )
    worker.start()
    try:
        worker.wait_ready()
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", linger_ms=5)
        for m in messages:
            producer.send(topics.input, m.value, m.key, timestamp_ms=m.timestamp_ms)
        producer.flush()
        producer.close()
        for topic, want in by_topic.items():
            got = read_all(kafka_bootstrap, topic, len(want))
            assert [comparable(topic, g.key, g.value, g.headers) for g in got] == [
                comparable(topic, w.key, w.value, w.headers) for w in want
            ], f"{topic}\n{worker.log()}"
    finally:
        assert worker.stop() == 0, worker.log()
