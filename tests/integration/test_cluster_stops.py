"""Scale-out roles never skip in silence: a record they cannot apply stops its partition
visibly, and records deleted past a checkpoint are reported as lost."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from neardup_stream.sharded.home import domain_partition
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_scale_out import produce_to, replicas
from tests.integration.test_worker import stream

pytestmark = pytest.mark.integration


def metric(worker: WorkerProcess, name: str, labels: str) -> float | None:
    """A sample of the worker's /metrics (None: absent, or not serving yet)."""
    try:
        text = worker.http("/metrics")[1]
    except OSError:
        return None
    match = re.search(rf"^{re.escape(name)}\{{{re.escape(labels)}\}} (\S+)$", text, re.M)
    return None if match is None else float(match.group(1))


def wait_metric(
    worker: WorkerProcess, name: str, labels: str, ok: object, timeout: float = 120
) -> float | None:
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = metric(worker, name, labels)
        if ok(value):  # type: ignore[operator]
            return value
        time.sleep(0.3)
    raise AssertionError(f"{name}{{{labels}}} = {value}\n{worker.log()}")


def end_offset(bootstrap: str, topic: str, partition: int) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    tp = TopicPartition(topic, partition)
    try:
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def test_a_corrupt_fingerprint_record_stops_its_partition_visibly_and_nothing_passes_it(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(120, seed=81)
    first, second = docs[:60], docs[60:]
    fingerprints = f"{topics.input}.fingerprints"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    [worker] = replicas(kafka_bootstrap, topics, tmp_path / "a", 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 60
        # Another build (or a bit flip) appends a record no role can read.
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        corrupt_at = producer.send(fingerprints, b"XX garbage", partition=0).get(30).offset
        producer.close()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in second])
        for role in ("shard", "gather"):
            wait_metric(worker, "neardup_partitions_stopped", f'role="{role}"', lambda v: v == 1)
        assert worker.http("/healthz")[0] == 503
        # The second half reached the log after the corrupt record: the gather's lag shows
        # it waiting, and not one of those documents was decided.
        wait_metric(worker, "neardup_role_lag_messages", 'partition="0",role="gather"', bool)
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=5)
        assert set(got) == {str(d["id"]) for d in first}
        stops = re.findall(r"STOPPED partition (\S+) at offset (\d+)", worker.log())
        assert stops == [(f"{fingerprints}-0", str(corrupt_at))] * 2, stops
        worker.stop()
        # A restart meets the record again at the same offset: no checkpoint moved past it.
        [worker] = replicas(kafka_bootstrap, topics, tmp_path / "b", 1)
        deadline = time.monotonic() + 120
        while (
            time.monotonic() < deadline
            and metric(worker, "neardup_partitions_stopped", 'role="gather"') != 1
        ):
            time.sleep(0.3)
        again = re.findall(r"STOPPED partition (\S+) at offset (\d+)", worker.log())
        assert (f"{fingerprints}-0", str(corrupt_at)) in again, worker.log()
        assert worker.http("/healthz")[0] == 503
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=5)
        assert set(got) == {str(d["id"]) for d in first}
        assert all(len(v) == 1 for v in got.values())
    finally:
        if worker.alive():
            worker.stop()


def test_an_unreadable_votes_record_stops_its_partition_and_its_commits_stay_before_it(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """A votes record the gather cannot read (a newer build's, mid-upgrade) stops its log
    partition; decisions on another log partition go on and commit, and the stopped
    partition's committed votes offset stays at the record (the consumer had read past it):
    a restart meets it again, so none of the votes after it is lost."""
    sites = {domain_partition(f"site-{i}", 2): f"site-{i}" for i in range(20)}
    stopped_site, live_site = sites[0], sites[1]  # log partitions 0 and 1
    docs = stream(160, seed=83)
    for i, d in enumerate(docs):
        d["site"] = stopped_site if i % 2 else live_site
    first, second = docs[:80], docs[80:]
    votes = f"{topics.input}.votes"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    flags = ["--log-partitions", "2", "--domain-field", "site"]
    # The roles' path: a lone replica in single stage reads no votes (it votes itself), and
    # a real votes record of another build comes from a replica holding shards, which moves
    # the shards group and ends single stage first (docs/design/scale-out.md).
    three = {"NEARDUP_CLUSTER__SINGLE_STAGE": "false"}
    [worker] = replicas(kafka_bootstrap, topics, tmp_path / "a", 1, extra=flags, env_extra=three)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 80
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        record = producer.send(
            votes, b"NV\x09 a format this build does not read", key=b"1", partition=0
        )
        corrupt_at = record.get(30).offset
        producer.close()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in second])
        wait_metric(worker, "neardup_partitions_stopped", 'role="gather"', lambda v: v == 1)
        live = {str(d["id"]) for d in docs if d["site"] == live_site}
        got = decisions(kafka_bootstrap, topics, 80 + len(live) - 40)
        assert live <= set(got), "the other log partition went on deciding (and committing)"
        worker.stop()
        stops = re.findall(r"STOPPED partition (\S+) at offset (\d+)", worker.log())
        assert stops == [(f"{votes}-0", str(corrupt_at))], stops
        # Restarted, the gather reads votes partition 0 from its committed offset: the record
        # again, not past it (the votes after it were read and dropped the first time).
        [worker] = replicas(
            kafka_bootstrap, topics, tmp_path / "b", 1, extra=flags, env_extra=three
        )
        wait_metric(worker, "neardup_partitions_stopped", 'role="gather"', lambda v: v == 1)
        again = re.findall(r"STOPPED partition (\S+) at offset (\d+)", worker.log())
        assert again == [(f"{votes}-0", str(corrupt_at))], worker.log()
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=5)
        held_back = {str(d["id"]) for d in second if d["site"] == stopped_site}
        assert not held_back & set(got), "nothing of log partition 0 passed the record"
        assert all(len(v) == 1 for v in got.values())
    finally:
        if worker.alive():
            worker.stop()


def test_a_checkpoint_older_than_the_log_start_is_reported_as_lost(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(80, seed=91)
    first, later = docs[:40], docs[40:]
    fingerprints = f"{topics.input}.fingerprints"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    [worker] = replicas(kafka_bootstrap, topics, tmp_path / "a", 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 40
        worker.stop()
        # While no replica runs, records reach the log and retention deletes them unread.
        consumer = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id=None)
        tp = TopicPartition(fingerprints, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        copies = [r.value for r in consumer.poll(timeout_ms=5000, max_records=3).get(tp, [])]
        consumer.close()
        assert copies
        before = end_offset(kafka_bootstrap, fingerprints, 0)
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        for value in copies:
            producer.send(fingerprints, value, partition=0)
        producer.flush()
        producer.close()
        log_start = end_offset(kafka_bootstrap, fingerprints, 0)
        assert log_start == before + len(copies)
        # Inputs too: the edge's committed offset falls before the input's log start.
        gone = stream(5, seed=92)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in gone])
        input_tp = TopicPartition(topics.input, 0)
        input_start = end_offset(kafka_bootstrap, topics.input, 0)
        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        admin.delete_records({tp: log_start, input_tp: input_start})
        admin.close()
        [worker] = replicas(kafka_bootstrap, topics, tmp_path / "b", 1)
        worker.wait_ready()
        # Both stateful roles had decided everything before `before` (its last offset is the
        # edge's commit marker); the copies and that marker are the offsets lost.
        for role in ("shard", "gather"):
            lost = wait_metric(worker, "neardup_records_lost_total", f'role="{role}"', bool)
            assert lost == len(copies) + 1, (role, lost)
        lost = wait_metric(worker, "neardup_records_lost_total", 'role="edge"', bool)
        assert lost == len(gone), lost  # plain inputs: no transaction markers among them
        assert re.search(
            rf"{re.escape(fingerprints)}-0: checkpoint at offset {before - 1} but the log starts "
            rf"at {log_start}: {len(copies) + 1} offsets were deleted",
            worker.log(),
        ), worker.log()
        assert worker.http("/healthz")[0] == 200  # reported, then going on
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in later])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=120)
        assert set(got) == {str(d["id"]) for d in docs}
        assert all(len(v) == 1 for v in got.values())
    finally:
        if worker.alive():
            worker.stop()


def test_an_unreadable_changelog_record_stops_the_restore_of_its_partition(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(60, seed=97)
    first, second = docs[:30], docs[30:]
    changelog = f"{topics.input}.gather-changelog"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    [worker] = replicas(kafka_bootstrap, topics, tmp_path / "a", 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 30
        worker.stop()
        producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
        bad_at = producer.send(changelog, b"NG\x01 cut short", partition=0).get(30).offset
        producer.close()
        # The restarted replica cannot rebuild the gather's state: it decides nothing rather
        # than decide from a state with a hole (a replayed id would be decided afresh).
        [worker] = replicas(kafka_bootstrap, topics, tmp_path / "b", 1)
        wait_metric(worker, "neardup_partitions_stopped", 'role="gather"', lambda v: v == 1)
        assert worker.http("/healthz")[0] == 503
        fingerprints = f"{topics.input}.fingerprints"
        appended = end_offset(kafka_bootstrap, fingerprints, 0)
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in second])
        deadline = time.monotonic() + 120  # the edge goes on: the second half is in the log
        while end_offset(kafka_bootstrap, fingerprints, 0) == appended:
            assert time.monotonic() < deadline, worker.log()
            time.sleep(0.3)
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=5)
        assert set(got) == {str(d["id"]) for d in first}
        stops = re.findall(r"STOPPED partition (\S+) at offset (\d+): (.*)", worker.log())
        assert [(s[0], s[1]) for s in stops] == [(f"{changelog}-0", str(bad_at))], stops
        assert "unreadable changelog record" in stops[0][2]
    finally:
        if worker.alive():
            worker.stop()
