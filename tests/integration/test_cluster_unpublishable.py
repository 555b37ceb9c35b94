"""Scale-out: an output the broker rejects for good dead-letters its input (gather and edge)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from tests.integration.harness import Topics, decisions, read_all
from tests.integration.test_cluster_stops import wait_metric
from tests.integration.test_scale_out import produce_to, replicas
from tests.integration.test_unpublishable import big_doc
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def test_a_pass_through_the_broker_rejects_is_dead_lettered_once_by_the_gather(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(12, seed=43)
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[:4]])
        assert len(decisions(kafka_bootstrap, topics, 4)) == 4
        # An operator shrinks the unique topic while the replica runs: the edge's check of
        # the topic's limit is stale, so only the broker can refuse the pass-through.
        resource = ConfigResource(
            ConfigResourceType.TOPIC, topics.unique, {"max.message.bytes": "40000"}
        )
        kafka_admin.alter_configs([resource])
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in [*docs[4:8], big_doc(3)]])
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[8:]])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=180)
        assert set(got) == {str(d["id"]) for d in docs}
        assert all(len(v) == 1 for v in got.values())
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "unpublishable" and letter["source"]["offset"] == 8
        assert "rejected" in letter["message"]
        wait_metric(
            worker, "neardup_dlq_messages_total", 'reason="unpublishable"', lambda v: v == 1
        )
        assert worker.alive() and worker.http("/healthz")[0] == 200
    finally:
        assert worker.stop() == 0, worker.log()


def test_a_dead_letter_the_broker_rejects_is_dead_lettered_again_without_payload_by_the_edge(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(12, seed=44)
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[:4]])
        assert len(decisions(kafka_bootstrap, topics, 4)) == 4
        # The dead-letter topic is shrunk under the running replica: the dead letter of a
        # large malformed input (its payload kept) no longer fits; only the broker refuses it.
        resource = ConfigResource(
            ConfigResourceType.TOPIC, topics.dlq, {"max.message.bytes": "4000"}
        )
        kafka_admin.alter_configs([resource])
        malformed = {"id": "no-text", "body": "y" * 20_000}
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in [*docs[4:8], malformed]])
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs[8:]])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=180)
        assert set(got) == {str(d["id"]) for d in docs}
        assert all(len(v) == 1 for v in got.values())
        (letter,) = [json.loads(m.value) for m in read_all(kafka_bootstrap, topics.dlq, 1)]
        assert letter["reason"] == "unpublishable" and letter["source"]["offset"] == 8
        assert "rejected" in letter["message"] and letter["raw_base64"] == ""
        wait_metric(
            worker, "neardup_dlq_messages_total", 'reason="unpublishable"', lambda v: v == 1
        )
        assert worker.alive() and worker.http("/healthz")[0] == 200
    finally:
        assert worker.stop() == 0, worker.log()


def test_a_document_as_large_as_allowed_with_a_large_key_is_decided_through_three_stages(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    """The edge's payload record carried the input key: a value at the limit with a key
    larger than the record headroom made it larger than any record the producer may send,
    blamed on no input, and the edge retried that batch for good. A key the gather never
    uses (only a dead letter's short key is kept) is no longer carried."""
    limit = 200_000
    docs = stream(6, seed=45)
    text = " ".join(f"w{j}" for j in range(limit // 4))
    big = {"id": "big-key", "text": text[: limit - 100]}
    value = json.dumps(big).encode()
    assert limit - 200 < len(value) <= limit
    env = {
        "NEARDUP_CLUSTER__SINGLE_STAGE": "false",
        "NEARDUP_WORKER__MAX_MESSAGE_BYTES": str(limit),
    }
    # an input topic of the user's, taking records larger than the worker's limit
    config = {"max.message.bytes": str(1 << 20)}
    kafka_admin.create_topics([NewTopic(topics.input, 1, 1, topic_configs=config)])
    [worker] = replicas(kafka_bootstrap, topics, tmp_path, 1, env_extra=env)
    try:
        worker.wait_ready()
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        sent = [producer.send(topics.input, key=b"K" * 70_000, value=value, partition=0)]
        for d in docs:
            sent.append(producer.send(topics.input, value=json.dumps(d).encode(), partition=0))
        for f in sent:
            f.get(timeout=30)
        producer.close()
        got = decisions(kafka_bootstrap, topics, len(docs) + 1, timeout=180)
        assert set(got) == {"big-key", *(str(d["id"]) for d in docs)}
        assert all(len(v) == 1 for v in got.values())
        assert worker.alive() and "refused a record of the batch" not in worker.log()
    finally:
        assert worker.stop() == 0, worker.log()
