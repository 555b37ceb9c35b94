"""The broker-free driver publishes what a real worker publishes, byte for byte.

The demo sample (460 news documents with near-duplicates, and the 2 malformed messages the
demo produces: invalid JSON and a missing text) goes once through `worker.testing.Driver` and
once through `python -m worker` on the real broker, with the same keys and record timestamps.
Every output topic is compared in order: key, value and headers. The one field that cannot be
equal is a dead letter's `at` (the wall clock when the worker built it); it is checked to be
an ISO time and blanked on both sides, everything else must be identical bytes.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from kafka import KafkaProducer

from tests.integration.harness import REPO_ROOT, Topics, WorkerProcess, read_all
from worker.settings import Settings
from worker.testing import Driver, InputMessage, OutputRecord

pytestmark = pytest.mark.integration

SAMPLE = REPO_ROOT / "deploy" / "local" / "demo" / "sample.jsonl"
BASE_MS = 1_750_000_000_000
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


def settings_for(topics: Topics) -> Settings:
    return Settings().with_overrides(
        {
            "topics": {
                "input": topics.input,
                "unique": topics.unique,
                "duplicate": topics.duplicate,
                "dlq": topics.dlq,
                "changelog": topics.changelog,
            }
        }
    )


def comparable(topic: str, key: bytes | None, value: bytes, headers: object) -> tuple:
    """The record as bytes; a dead letter's wall-clock `at` is checked, then blanked."""
    if topic.endswith(".dlq"):
        found = AT.findall(value)
        assert len(found) == 1, value
        datetime.fromisoformat(found[0].decode().replace("Z", "+00:00"))
        value = AT.sub(b'"at":""', value)
    return topic, key, value, [(k, bytes(v)) for k, v in headers]  # type: ignore[attr-defined]


def test_driver_matches_a_real_worker_byte_for_byte(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    messages = demo_messages()
    driver = Driver(settings_for(topics))
    predicted = driver.send_many(messages)
    assert len(predicted) == len(messages)  # one outcome each
    by_topic: dict[str, list[OutputRecord]] = {}
    for r in predicted:
        by_topic.setdefault(r.topic, []).append(r)
    assert set(by_topic) == {topics.unique, topics.duplicate, topics.dlq}
    assert len(by_topic[topics.dlq]) == 2  # the demo's malformed messages

    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log")
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
