"""Two pipelines on one broker never share an index (issue 12), against the real broker.

(a) a worker with a mistyped input topic and another group, default changelog settings,
decides a copy of a document of the first pipeline as unique; (b) pipeline B, with its own
input, outputs and group and default changelog settings, decides copies of pipeline A's
1,000 documents exactly like offline dedup over B's input alone; (c) two pipelines configured
with one changelog: the second refuses it (error, unready, metric) and writes nothing, and
the first still decides correctly after a restart; the second is refused by the claims at
start-up, or (claims of another claims topic) by its restore, and (d) of two such pipelines
started at once on a new changelog exactly one is refused. Also: a group whose changelog is new
after it decided input is warned about, and records of earlier versions (no pipeline named)
restore as the reading pipeline's own.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from neardup_stream import Deduplicator, Document
from neardup_stream.worker import changelog
from tests.integration.faults import wait_for
from tests.integration.harness import (
    Topics,
    WorkerProcess,
    decide_then_stop,
    decisions,
    produce_docs,
    read_all,
)
from tests.integration.test_worker import expected, stream

pytestmark = pytest.mark.integration


class DefaultChangelog(Topics):
    """Topics of a worker started without `--changelog-topic`: `changelog` is the name the
    worker is expected to derive, `<group id>.changelog`."""

    def args(self, changelog: bool = True) -> list[str]:
        return super().args(changelog=False)


def default_changelog(make: Callable[[str], str], group: str, input_topic: str = "") -> Topics:
    base = Topics.fresh(make)
    return DefaultChangelog(
        input_topic or base.input, base.unique, base.duplicate, base.dlq, f"{group}.changelog"
    )


def copies(docs: list[dict[str, object]], prefix: str) -> list[dict[str, object]]:
    return [{"id": f"{prefix}{d['id']}", "text": d["text"]} for d in docs]


def decided(got: dict[str, list[tuple[str, str | None]]]) -> dict[str, tuple[str, str | None]]:
    """One decision per id (asserting there is exactly one)."""
    assert all(len(v) == 1 for v in got.values()), {k: v for k, v in got.items() if len(v) > 1}
    return {k: v[0] for k, v in got.items()}


def skipped(worker: WorkerProcess, reason: str) -> float:
    body = worker.http("/metrics")[1]
    pattern = rf'^neardup_restore_skipped_records_total\{{reason="{reason}"\}} (\S+)$'
    match = re.search(pattern, body, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def wait_for_log(worker: WorkerProcess, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in worker.log_path.read_text(errors="replace"):
        assert worker.alive(), worker.log()
        assert time.monotonic() < deadline, f"{text!r} not logged:\n{worker.log()}"
        time.sleep(0.2)


def typo_of(name: str) -> str:
    """`name` with two neighbouring letters swapped, as a hurried hand types it."""
    i = name.index("-") + 2
    return name[:i] + name[i + 1] + name[i] + name[i + 2 :]


def test_a_mistyped_input_and_group_with_default_changelog_is_its_own_pipeline(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    unique_topic: Callable[[str], str],
    tmp_path: Path,
) -> None:
    docs = stream(10, seed=41)
    group_a, group_b = unique_topic("g"), unique_topic("typo")
    a = default_changelog(unique_topic, group_a)
    b = default_changelog(unique_topic, group_b, typo_of(a.input))
    decide_then_stop(kafka_bootstrap, a, group_a, tmp_path / "a.log", docs)
    worker_b = WorkerProcess(kafka_bootstrap, b, group_b, tmp_path / "b.log").start()
    try:
        worker_b.wait_ready()
        assert f"input topic {b.input!r} does not exist" in worker_b.log()
        assert f"did you mean {a.input!r}" in worker_b.log()
        copy = copies(docs[:1], "copy-")
        produce_docs(kafka_bootstrap, b.input, copy)
        got = decided(decisions(kafka_bootstrap, b, 1))
        assert got == {"copy-doc-41-0": ("unique", None)} == expected(copy), worker_b.log()
        assert "refusing" not in worker_b.log()
    finally:
        assert worker_b.stop() == 0, worker_b.log()
    existing = set(kafka_admin.list_topics())
    assert {f"{group_a}.changelog", f"{group_b}.changelog"} <= existing


def test_a_mistyped_input_is_refused_at_start_naming_the_topic_it_was_likely_meant_to_be(
    kafka_bootstrap: str,
    kafka_admin: KafkaAdminClient,
    unique_topic: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """Without `--create-input-topic`, a missing input is a configuration error: exit 78,
    one line with the nearest existing topic, and no topic created for the typo."""
    a = Topics.fresh(unique_topic)
    kafka_admin.create_topics([NewTopic(a.input, 1, 1)])
    wait_for("the input topic", lambda: a.input in kafka_admin.list_topics(), 30)
    b = dataclasses.replace(a, input=typo_of(a.input))
    worker = WorkerProcess(
        kafka_bootstrap, b, unique_topic("typo"), tmp_path / "w.log", create_input=False
    ).start()
    assert worker.wait_exit(120) == 78, worker.log()
    errors = [line for line in worker.log().splitlines() if " ERROR " in line]
    assert len(errors) == 1, worker.log()
    # (on a reused broker, a leftover topic of an earlier run may be named as well)
    hint = errors[0].split("; did you mean ", 1)
    assert hint[0].endswith(f"input topic {b.input!r} does not exist"), errors[0]
    assert len(hint) == 2 and repr(a.input) in hint[1].split("?")[0], errors[0]
    assert "--create-input-topic" in errors[0]
    assert b.input not in kafka_admin.list_topics()


def test_pipeline_b_with_default_changelog_decides_copies_like_offline_on_its_input_alone(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    docs = stream(1000, seed=43)
    group_a, group_b = unique_topic("ga"), unique_topic("gb")
    a, b = default_changelog(unique_topic, group_a), default_changelog(unique_topic, group_b)
    worker_a = WorkerProcess(kafka_bootstrap, a, group_a, tmp_path / "a.log").start()
    try:
        worker_a.wait_ready()
        produce_docs(kafka_bootstrap, a.input, docs)
        assert decided(decisions(kafka_bootstrap, a, len(docs))) == expected(docs)
    finally:
        assert worker_a.stop() == 0, worker_a.log()
    b_docs = copies(docs, "b-")
    want = expected(b_docs)
    worker_b = WorkerProcess(kafka_bootstrap, b, group_b, tmp_path / "b.log").start()
    try:
        worker_b.wait_ready()
        produce_docs(kafka_bootstrap, b.input, b_docs)
        got = decided(decisions(kafka_bootstrap, b, len(b_docs)))
        assert got == want, worker_b.log()
        uniques = sum(1 for d, _ in got.values() if d == "unique")
        assert 0 < uniques < len(b_docs)  # B's own duplicates found, none against A's
    finally:
        assert worker_b.stop() == 0, worker_b.log()


def test_a_second_pipeline_on_the_same_changelog_refuses_it_and_the_first_stays_correct(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    first, later, b_docs = stream(60, seed=47), stream(40, seed=48), stream(20, seed=49)
    group_a, group_b = unique_topic("ga"), unique_topic("gb")
    a = Topics.fresh(unique_topic)
    shared = dataclasses.replace(Topics.fresh(unique_topic), changelog=a.changelog)
    worker_a = WorkerProcess(kafka_bootstrap, a, group_a, tmp_path / "a.log").start()
    try:
        worker_a.wait_ready()
        produce_docs(kafka_bootstrap, a.input, first)
        assert len(decisions(kafka_bootstrap, a, len(first))) == len(first), worker_a.log()
        produce_docs(kafka_bootstrap, shared.input, b_docs)
        # Its own claims topic, as a worker of an earlier version (or of another claims
        # topic) would have: the claims cannot see pipeline A, its restore meets A's records.
        own_claims = {"NEARDUP_CLUSTER__CLAIMS": shared.input + ".claims"}
        worker_b = WorkerProcess(
            kafka_bootstrap, shared, group_b, tmp_path / "b.log", env=own_claims
        ).start()
        try:
            wait_for_log(worker_b, "refusing the changelog")
            log = worker_b.log()
            for name in (a.input, group_a, shared.input, group_b, a.changelog):
                assert repr(name) in log, log
            assert "--changelog-topic / NEARDUP_TOPICS__CHANGELOG" in log
            assert worker_b.http("/healthz")[0] == 503
            assert skipped(worker_b, "other_pipeline") > 0
            assert read_all(kafka_bootstrap, shared.unique, 0, timeout=5) == []
            assert read_all(kafka_bootstrap, shared.duplicate, 0, timeout=5) == []
        finally:
            assert worker_b.stop() == 0, worker_b.log()
    finally:
        assert worker_a.stop() == 0, worker_a.log()
    ours = changelog.Pipeline(a.input, group_a)
    packs = read_all(kafka_bootstrap, a.changelog, 1)
    assert packs and all(changelog.unpack(m.value).pipeline == ours for m in packs)
    worker_a = WorkerProcess(kafka_bootstrap, a, group_a, tmp_path / "a2.log").start()
    try:
        worker_a.wait_ready()
        produce_docs(kafka_bootstrap, a.input, later + copies(first, "again-"))
        total = len(first) + len(later) + len(first)
        got = decided(decisions(kafka_bootstrap, a, total))
        assert got == expected(first + later + copies(first, "again-")), worker_a.log()
        assert "refusing" not in worker_a.log()
    finally:
        assert worker_a.stop() == 0, worker_a.log()


def test_a_new_changelog_for_a_group_that_decided_input_is_warned_about(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(10, seed=53)
    group = "g-" + topics.input
    decide_then_stop(kafka_bootstrap, topics, group, tmp_path / "w1.log", docs)
    moved = dataclasses.replace(topics, changelog=topics.changelog + ".renamed")
    worker = WorkerProcess(kafka_bootstrap, moved, group, tmp_path / "w2.log").start()
    try:
        worker.wait_ready()
        log = worker.log()
        assert f"changelog topic {moved.changelog} holds no records for partitions [0]" in log
        assert "committed input offsets {0: 10}" in log
        assert "--changelog-topic / NEARDUP_TOPICS__CHANGELOG" in log
    finally:
        assert worker.stop() == 0, worker.log()


def test_records_written_before_pipelines_were_named_restore_as_the_pipelines_own(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(12, seed=59)
    outcomes = Deduplicator().process([Document.model_validate(d) for d in docs], records=True)
    stored = [o.record.encode() for o in outcomes if o.record is not None]
    spec = {"num_partitions": 1, "replication_factor": 1, "configs": {"cleanup.policy": "compact"}}
    kafka_admin.create_topics({topics.changelog: spec})
    legacy = [stored[0]]  # a bare record, as the first versions wrote
    body = b"".join(len(r).to_bytes(4, "little") + r for r in stored[1:])
    legacy.append(b"NP\x01" + len(stored[1:]).to_bytes(4, "little") + body)  # a version-1 pack
    producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    for i, value in enumerate(legacy):
        producer.send(topics.changelog, key=f"0:{i}:0".encode(), value=value, partition=0)
    producer.flush()
    producer.close()
    worker = WorkerProcess(kafka_bootstrap, topics, "g-" + topics.input, tmp_path / "w.log")
    worker.start()
    try:
        worker.wait_ready()
        assert f"{len(stored)} changelog records of {topics.changelog} name no pipeline" in (
            worker.log()
        )
        assert "this group has committed no input offsets yet" in worker.log()
        again = copies(docs, "again-")
        produce_docs(kafka_bootstrap, topics.input, again)
        got = decided(decisions(kafka_bootstrap, topics, len(again)))
        want = {k: v for k, v in expected(docs + again).items() if k.startswith("again-")}
        assert got == want, worker.log()
        assert all(d == "duplicate" for d, _ in got.values())
    finally:
        assert worker.stop() == 0, worker.log()


def test_two_pipelines_started_at_once_on_one_new_changelog_one_is_refused_by_the_claims(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    a = Topics.fresh(unique_topic)
    b = dataclasses.replace(Topics.fresh(unique_topic), changelog=a.changelog)
    ga, gb = "g-" + a.input, "g-" + b.input
    workers = {
        "a": WorkerProcess(kafka_bootstrap, a, ga, tmp_path / "a.log", "wa").start(),
        "b": WorkerProcess(kafka_bootstrap, b, gb, tmp_path / "b.log", "wb").start(),
    }
    try:

        def settled() -> dict[str, str]:
            """Per worker: 'ready', 'refused' or '' (not yet)."""
            out = {}
            for name, w in workers.items():
                assert w.alive(), w.log()
                refused = "refusing the changelog" in w.log_path.read_text(errors="replace")
                out[name] = "refused" if refused else "ready" if w.healthy() else ""
            return out

        wait_for("both workers to settle", lambda: all(settled().values()), 120)
        state = settled()
        assert sorted(state.values()) == ["ready", "refused"], state
        winner = next(n for n, v in state.items() if v == "ready")
        loser = "b" if winner == "a" else "a"
        (mine, theirs) = (a, b) if winner == "a" else (b, a)
        log = workers[loser].log()
        assert f"topic(s) {a.changelog!r} belong to another pipeline" in log
        assert repr(mine.input) in log and repr(theirs.input) in log
        assert workers[loser].http("/healthz")[0] == 503
        docs = stream(40, seed=53)
        produce_docs(kafka_bootstrap, a.input, docs)
        produce_docs(kafka_bootstrap, b.input, docs)
        got = decided(decisions(kafka_bootstrap, mine, len(docs)))
        assert got == expected(docs)
        assert read_all(kafka_bootstrap, theirs.unique, 0, timeout=5) == []
    finally:
        for w in workers.values():
            assert w.stop() == 0, w.log()
    packs = read_all(kafka_bootstrap, a.changelog, 1)
    owner = changelog.Pipeline(mine.input, "g-" + mine.input)
    assert packs and all(changelog.unpack(m.value).pipeline == owner for m in packs)


def test_a_pipeline_runs_in_one_mode_and_its_group_is_its_own(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], tmp_path: Path
) -> None:
    """A single worker deciding a pipeline's input, then a `--cluster` replica of the same
    pipeline (each would decide every input: twice), then a worker of another input with the
    same group id (its partitions would never be assigned): both refused, the first goes on."""
    topics, group = Topics.fresh(unique_topic), unique_topic("g")
    first, later = stream(20, seed=57), stream(10, seed=58)
    single = WorkerProcess(kafka_bootstrap, topics, group, tmp_path / "single.log").start()
    try:
        single.wait_ready()
        produce_docs(kafka_bootstrap, topics.input, first)
        assert len(decisions(kafka_bootstrap, topics, len(first))) == len(first)
        replica = WorkerProcess(
            kafka_bootstrap,
            topics,
            group,
            tmp_path / "replica.log",
            "r0",
            ["--scope", "topic"],
            topics.internal_env(),
        ).start()
        other = dataclasses.replace(Topics.fresh(unique_topic), changelog=topics.changelog + "2")
        stranger = WorkerProcess(kafka_bootstrap, other, group, tmp_path / "other.log", "o1")
        stranger.start()
        try:
            wait_for_log(replica, "is run in partition scope (--scope partition")
            wait_for_log(stranger, f"consumer group {group!r} belongs to another pipeline")
            for refused in (replica, stranger):
                assert refused.http("/healthz")[0] == 503
                assert refused.gauge("neardup_settings_mismatch") == 1
            produce_docs(kafka_bootstrap, topics.input, later)
            got = decided(decisions(kafka_bootstrap, topics, len(first) + len(later)))
            assert got == expected(first + later), single.log()  # each input once
        finally:
            assert replica.stop() == 0, replica.log()
            assert stranger.stop() == 0, stranger.log()
    finally:
        assert single.stop() == 0, single.log()
