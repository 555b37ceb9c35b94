"""Cluster fault suite (issue 12): an outage longer than the internal topics' retention, with
`max_age` set. What retention deleted before the roles applied it is REPORTED (an error log
naming the offsets, `neardup_records_lost_total{role}`), never lost in silence: every input
has at most one outcome, and the inputs without one are exactly those in the reported offsets.

The outage: three replicas each die (SIGKILL) at their first shard transaction, so the edge's
committed fingerprint records wait, unread by any shard or gather, while no replica runs. The
fingerprint log's retention is then lowered to one second, and the broker's own retention run
deletes the log (the real mechanism, on the broker's 30 s check interval). The replicas
restart (raising the retention back, as for any too short retention) and go on.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType

from neardup_stream.config import DedupConfig
from neardup_stream.worker.cluster.log_record import Envelope, is_decided
from tests.integration.cluster_faults import Cluster
from tests.integration.faults import (
    assert_exactly_once,
    doc_records,
    long_range_stream,
    send_records,
    topic_config,
    wait_for,
)
from tests.integration.harness import Topics, decisions
from tests.integration.test_cluster_stops import metric
from tests.integration.test_scale_out import SHARDS, offline

pytestmark = [pytest.mark.integration, pytest.mark.faults]
MAX_AGE_S = 86_400
LOST = re.compile(r"(\w+): (\S+)-(\d+): checkpoint at offset (\d+) but the log starts at (\d+)")


def log_records(bootstrap: str, topics: Topics) -> dict[int, list[str]]:
    """Fingerprint-log offset -> ids of the documents that record carries (committed ones)."""
    tp = TopicPartition(f"{topics.input}.fingerprints", 0)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, isolation_level="read_committed"
    )
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    config_id = DedupConfig(home_shards=SHARDS).fingerprint_id
    out: dict[int, list[str]] = {}
    while consumer.position(tp) < end:
        for rec in consumer.poll(timeout_ms=1000).get(tp, []):
            if is_decided(rec.value):  # a single-stage replica's: decided as it was written
                continue
            env = Envelope.unpack(rec.value, config_id, topics.input, rec.offset, tp.partition)
            out[rec.offset] = list(env.fingerprints.ids)
    consumer.close()
    return out


def log_bounds(bootstrap: str, topic: str) -> tuple[int, int]:
    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    try:
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def set_retention(bootstrap: str, topic: str, ms: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.TOPIC, topic, {"retention.ms": str(ms)})
        admin.alter_configs([resource])
    finally:
        admin.close()


def lost(carried: dict[int, list[str]], reported: list[tuple[str, ...]]) -> set[str]:
    """Ids of the documents in the fingerprint records of the reported offset ranges."""
    return {
        doc_id
        for _, topic, _, checkpoint, log_start in reported
        if topic.endswith(".fingerprints")
        for offset, ids in carried.items()
        if int(checkpoint) <= offset < int(log_start)
        for doc_id in ids
    }


def test_an_outage_longer_than_the_retention_reports_exactly_what_it_lost(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = long_range_stream(600, seed=113)
    before, during, after = docs[:200], docs[200:450], docs[450:]
    fingerprints, payloads = f"{topics.input}.fingerprints", f"{topics.input}.payloads"
    env = {"NEARDUP_DEDUP__MAX_AGE_SECONDS": str(MAX_AGE_S)}
    cluster = Cluster(kafka_bootstrap, topics, tmp_path, env=env)
    try:
        cluster.start_all()
        send_records(kafka_bootstrap, topics.input, doc_records(before))
        got = decisions(kafka_bootstrap, topics, len(before))
        assert_exactly_once(got, [str(d["id"]) for d in before])
        retention = int(topic_config(kafka_bootstrap, fingerprints)["retention.ms"])
        assert retention >= MAX_AGE_S * 1000  # the floor the settings derive
        cluster.stop_all()

        # The outage: the edge commits fingerprint records no shard ever applies.
        cluster.start_all(failpoints={i: "shard_produced=kill@1" for i in range(3)})
        cluster.wait_formed()  # a replica alone decides in single stage: no shard would vote
        send_records(kafka_bootstrap, topics.input, doc_records(during))
        for w in cluster.workers.values():
            assert w.wait_exit(180) != 0, "the failpoint did not fire"
        carried = log_records(kafka_bootstrap, topics)
        start, end = log_bounds(kafka_bootstrap, fingerprints)
        assert start == 0 and end > 0
        payloads_end = log_bounds(kafka_bootstrap, payloads)[1]
        set_retention(kafka_bootstrap, fingerprints, 1000)
        set_retention(kafka_bootstrap, payloads, 1000)
        # Everything there at the outage deleted. An edge killed inside a transaction left it
        # open: its coordinator aborts it after the transaction timeout, appending a marker
        # past `end`, and retention may delete that marker too (the log then starts past it).
        wait_for(
            "the broker's retention to delete the fingerprint log and the payloads",
            lambda: (
                log_bounds(kafka_bootstrap, fingerprints)[0] >= end
                and log_bounds(kafka_bootstrap, payloads)[0] >= payloads_end
            ),
            timeout=120,
            every=1,
        )

        cluster.log_dir = tmp_path / "after"  # the reports of this start only
        cluster.log_dir.mkdir()
        cluster.start_all()
        # Raised back at start, as any retention shorter than the settings need.
        assert int(topic_config(kafka_bootstrap, fingerprints)["retention.ms"]) == retention
        send_records(kafka_bootstrap, topics.input, doc_records(after))
        wait_for("the loss reported", lambda: LOST.findall(cluster.logs()), 120)
        lost_ids = lost(carried, LOST.findall(cluster.logs()))
        assert lost_ids, (LOST.findall(cluster.logs()), sorted(carried))
        kept = [d for d in docs if str(d["id"]) not in lost_ids]
        got = decisions(kafka_bootstrap, topics, len(kept), timeout=300)
        # At most one outcome each, and none exactly for the reported ones.
        assert_exactly_once(got, [str(d["id"]) for d in kept])
        assert {k: v[0] for k, v in got.items()} == offline(kept)
        reported = LOST.findall(cluster.logs())  # every role's report is in by now
        assert lost(carried, reported) == lost_ids
        for role in {r[0] for r in reported}:
            counted = sum(
                metric(w, "neardup_records_lost_total", f'role="{role}"') or 0
                for w in cluster.workers.values()
            )
            logged = sum(int(r[4]) - int(r[3]) for r in reported if r[0] == role)
            assert counted == logged, (role, counted, logged)
        assert {r[1] for r in reported} == {fingerprints, payloads}
        assert {r[0] for r in reported if r[1] == payloads} == {"gather"}  # only it reads them
        assert {r[0] for r in reported} >= {"gather"}
        assert all(w.http("/healthz")[0] == 200 for w in cluster.workers.values())
    finally:
        cluster.stop_all()


PAYLOADS_LOST = re.compile(r"log partition (\d+), record (\d+): its payloads were deleted")


def test_payloads_deleted_under_a_kept_log_are_decided_without_output_and_reported(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """Only the payloads are deleted by retention, not the fingerprint log. The log records
    whose payloads are gone are still decided (the shards stored them, so the gather's state must
    hold them too) but publish nothing, each reported; later documents are decided as
    offline dedup over the whole stream decides them (the lost ones are in the index)."""
    docs = long_range_stream(450, seed=127)
    before, during, after = docs[:150], docs[150:300], docs[300:]
    payloads = f"{topics.input}.payloads"
    env = {"NEARDUP_DEDUP__MAX_AGE_SECONDS": str(MAX_AGE_S)}
    cluster = Cluster(kafka_bootstrap, topics, tmp_path, env=env)
    try:
        cluster.start_all()
        send_records(kafka_bootstrap, topics.input, doc_records(before))
        assert_exactly_once(
            decisions(kafka_bootstrap, topics, len(before)), [str(d["id"]) for d in before]
        )
        cluster.stop_all()

        # The outage: the edge commits log and payload records no shard or gather applies.
        cluster.start_all(failpoints={i: "shard_produced=kill@1" for i in range(3)})
        cluster.wait_formed()  # a replica alone decides in single stage: no shard would vote
        send_records(kafka_bootstrap, topics.input, doc_records(during))
        for w in cluster.workers.values():
            assert w.wait_exit(180) != 0, "the failpoint did not fire"
        carried = log_records(kafka_bootstrap, topics)
        end = log_bounds(kafka_bootstrap, payloads)[1]
        set_retention(kafka_bootstrap, payloads, 1000)
        wait_for(
            "the broker's retention to delete the payloads",
            lambda: log_bounds(kafka_bootstrap, payloads)[0] == end,
            timeout=120,
            every=1,
        )
        assert log_bounds(kafka_bootstrap, f"{topics.input}.fingerprints")[0] == 0  # kept

        cluster.log_dir = tmp_path / "after"
        cluster.log_dir.mkdir()
        cluster.start_all()
        send_records(kafka_bootstrap, topics.input, doc_records(after))
        first = {str(d["id"]) for d in before}
        lost_ids = {i for ids in carried.values() for i in ids} - first
        assert lost_ids, sorted(carried)
        kept = [d for d in docs if str(d["id"]) not in lost_ids]
        got = decisions(kafka_bootstrap, topics, len(kept), timeout=300)
        assert_exactly_once(got, [str(d["id"]) for d in kept])
        whole = offline(docs)  # the lost documents were indexed all the same
        assert {k: v[0] for k, v in got.items()} == {
            str(d["id"]): whole[str(d["id"])] for d in kept
        }
        logs = cluster.logs()
        records = {int(o) for _, o in PAYLOADS_LOST.findall(logs)}
        assert {i for o in records for i in carried[o]} == lost_ids
        reported = [r for r in LOST.findall(logs) if r[1] == payloads]
        assert reported and {r[0] for r in reported} == {"gather"}
        counted = sum(
            metric(w, "neardup_records_lost_total", 'role="gather"') or 0
            for w in cluster.workers.values()
        )
        assert counted == len(records) + sum(int(r[4]) - int(r[3]) for r in reported)
        assert all(w.http("/healthz")[0] == 200 for w in cluster.workers.values())
    finally:
        cluster.stop_all()
