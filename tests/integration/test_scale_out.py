"""Scale-out: replicas share one sharded index; decisions are those of offline `dedup`."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from neardup_stream.sharded.home import domain_partition
from tests.integration.harness import Topics, WorkerProcess, decisions
from tests.integration.test_worker import stream
from tests.unit.conftest import mutate

pytestmark = pytest.mark.integration
SHARDS = 6


def replicas(
    bootstrap: str,
    topics: Topics,
    tmp_path: Path,
    n: int,
    partitions: int = 1,
    failpoints: dict[int, str] | None = None,
    extra: list[str] | None = None,
    first: int = 0,
    env_extra: dict[str, str] | None = None,
) -> list[WorkerProcess]:
    """`n` replicas, instances `r<first>` on (`env_extra`: more settings, as environment)."""
    env = {
        **(env_extra or {}),
        **topics.internal_env(),
        "NEARDUP_DEDUP__HOME_SHARDS": str(SHARDS),
        # A killed replica's open transactions hold back readers until the broker aborts them.
        "NEARDUP_WORKER__TRANSACTION_TIMEOUT_MS": "10000",
    }
    flags = [
        "--scope",
        "topic",
        "--partitions",
        str(partitions),
        "--max-batch",
        "50",
        *(extra or []),
    ]
    armed = failpoints or {}
    return [
        WorkerProcess(
            bootstrap,
            topics,
            "g-" + topics.input,
            tmp_path / f"r{i}.log",
            f"r{i}",
            flags,
            {**env, **({"NEARDUP_FAILPOINTS": armed[i]} if i in armed else {})},
        ).start()
        for i in range(first, first + n)
    ]


def wait_assigned(
    workers: list[WorkerProcess], roles: dict[str, int], timeout: float = 120
) -> None:
    """Until the groups of `roles` (role -> partitions of its topic) have settled: every
    replica holds at least one partition of each role, and the replicas hold each partition
    once between them. A replica still in a generation the others have left reports its old
    assignment: counted with theirs, the partitions come out more than once."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        held = [w.held() for w in workers]
        if all(
            all(h.get(r, 0) >= 1 for h in held) and sum(h.get(r, 0) for h in held) == n
            for r, n in roles.items()
        ):
            return
        time.sleep(0.5)
    for w in workers:
        w.dump_stacks()
    raise AssertionError(f"roles not settled on the replicas ({roles}): {held}")


def offline(docs: list[dict[str, object]]) -> dict[str, tuple[str, str | None]]:
    dedup = ShardedDeduplicator(DedupConfig(home_shards=SHARDS))
    out = dedup.process([Document.model_validate(d) for d in docs])
    return {d.id: (d.decision, d.duplicate_of) for d in out}


def produce_to(bootstrap: str, topic: str, placed: list[tuple[int, dict[str, object]]]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks="all")
    for partition, doc in placed:
        producer.send(topic, value=json.dumps(doc).encode(), partition=partition)
    producer.flush()
    producer.close()


def run(
    bootstrap: str,
    topics: Topics,
    tmp_path: Path,
    n: int,
    docs: list[dict[str, object]],
    env_extra: dict[str, str] | None = None,
) -> dict[str, list[tuple[str, str | None]]]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    workers = replicas(bootstrap, topics, tmp_path, n, env_extra=env_extra)
    try:
        for w in workers:
            w.wait_ready()
        produce_to(bootstrap, topics.input, [(0, d) for d in docs])
        got = decisions(bootstrap, topics, len(docs), timeout=240)
    finally:
        for w in workers:
            w.stop()
    return got


def test_one_and_three_replicas_decide_exactly_like_offline_dedup(
    kafka_bootstrap: str, unique_topic: object, tmp_path: Path
) -> None:
    docs = stream(240, seed=31)
    docs += [dict(docs[5]), dict(docs[17])]  # replayed ids: their first decision again
    want = offline(docs)
    assert sum(v[0] == "duplicate" for v in want.values()) > 50
    for n in (1, 3):
        topics = Topics.fresh(unique_topic)
        got = run(kafka_bootstrap, topics, tmp_path / f"w{n}", n, docs)
        assert {k: v[0] for k, v in got.items()} == want, f"W = {n}"
        assert sum(len(v) for v in got.values()) == len(docs), f"W = {n}: not exactly once"


def test_three_replicas_committing_synchronously_decide_the_same(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """`cluster.overlap_commits=false`: the shard and gather roles end each commit before
    their next poll (the default overlaps them, `runtime.overlap`); decisions are offline's."""
    docs = stream(150, seed=37)
    want = offline(docs)
    sync = {"NEARDUP_CLUSTER__OVERLAP_COMMITS": "false"}
    got = run(kafka_bootstrap, topics, tmp_path / "sync", 3, docs, env_extra=sync)
    assert {k: v[0] for k, v in got.items()} == want
    assert sum(len(v) for v in got.values()) == len(docs), "not exactly once"


@pytest.mark.faults  # a kill: with the fault scenarios (`make test-faults`)
def test_pairs_split_across_partitions_are_caught_and_a_killed_replica_loses_nothing(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    originals = [d for d in stream(180, seed=41) if not str(d["text"]).startswith("~")]
    copies = [
        {"id": f"copy-{d['id']}", "text": mutate(str(d["text"]), 0.01, i)}
        for i, d in enumerate(originals[:60])
    ]
    (tmp_path / "w").mkdir()
    workers = replicas(kafka_bootstrap, topics, tmp_path / "w", 3, partitions=6)
    try:
        for w in workers:
            w.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(i % 6, d) for i, d in enumerate(originals)])
        first = decisions(kafka_bootstrap, topics, len(originals), timeout=240)
        assert sum(len(v) for v in first.values()) == len(originals)
        workers[1].kill()  # mid-stream: the others take over its shards and partitions
        produce_to(kafka_bootstrap, topics.input, [((i + 3) % 6, d) for i, d in enumerate(copies)])
        got = decisions(kafka_bootstrap, topics, len(originals) + len(copies), timeout=300)
    finally:
        for w in workers:
            if w.alive():
                w.stop()
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"
    assert set(got) == {str(d["id"]) for d in originals + copies}
    for c in copies:
        (decision, of) = got[str(c["id"])][0]
        assert decision == "duplicate", (c["id"], got[str(c["id"])])
        assert of is not None and not of.startswith("copy-")


@pytest.mark.faults  # kills: with the fault scenarios (`make test-faults`)
@pytest.mark.parametrize(
    "failpoint", ["edge_produced=kill@1", "shard_produced=kill@1", "shard_committed=kill@1"]
)
def test_a_replica_killed_inside_a_transaction_leaves_exactly_one_decision_per_document(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path, failpoint: str
) -> None:
    docs = stream(300, seed=51)
    workers = replicas(
        kafka_bootstrap, topics, tmp_path, 3, partitions=3, failpoints={0: failpoint}
    )
    try:
        for w in workers:
            w.wait_ready()
        wait_assigned(workers, {"edge": 3, "shard": SHARDS})
        produce_to(kafka_bootstrap, topics.input, [(i % 3, d) for i, d in enumerate(docs)])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=300)
        assert workers[0].wait_exit(60) != 0, "the failpoint did not fire"
    finally:
        for w in workers:
            if w.alive():
                w.stop()
    assert {str(d["id"]) for d in docs} == set(got)
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"
    for doc_id, [(decision, of)] in got.items():  # chains point back, never at themselves
        assert decision == "unique" or (of is not None and of != doc_id)


def test_an_edge_whose_rewind_fails_after_a_failed_transaction_loses_no_input(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """A failed edge transaction must be replayed: if the rewind to the committed input
    offsets fails (a broker error while the group rebalances), the edge may not go on from
    where it was, or the next commit would move past inputs that were never logged."""
    docs = stream(200, seed=52)
    [worker] = replicas(
        kafka_bootstrap,
        topics,
        tmp_path,
        1,
        partitions=3,
        failpoints={0: "edge_produced=raise@1,edge_rewind=raise@1"},
    )
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(i % 3, d) for i, d in enumerate(docs)])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
    finally:
        worker.stop()
    assert "failpoint edge_rewind fired" in worker.log_path.read_text(errors="replace")
    assert {str(d["id"]) for d in docs} == set(got)
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"


@pytest.mark.faults  # a kill: with the fault scenarios (`make test-faults`)
def test_a_killed_and_restarted_replica_restores_its_shards_from_their_changelogs(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    docs = stream(300, seed=61)
    docs += [dict(docs[3]), dict(docs[250])]  # replays after the restart: first decisions
    want = offline(docs)
    first, second = docs[:150], docs[150:]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    [worker] = replicas(kafka_bootstrap, topics, tmp_path / "a", 1)
    try:
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in first])
        assert sum(map(len, decisions(kafka_bootstrap, topics, len(first)).values())) == 150
        worker.kill()
        [worker] = replicas(kafka_bootstrap, topics, tmp_path / "b", 1)
        worker.wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in second])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=240)
    finally:
        if worker.alive():
            worker.stop()
    assert {k: v[0] for k, v in got.items()} == want
    assert sum(len(v) for v in got.values()) == len(docs)
    restored = re.findall(r"shard \d+: (\d+) documents, resuming", worker.log_path.read_text())
    assert len(restored) == SHARDS and sum(map(int, restored)) >= 140  # from the changelogs


@pytest.mark.faults  # a kill: with the fault scenarios (`make test-faults`)
def test_domains_over_three_log_partitions_survive_a_gather_kill_and_match_offline(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    sites = ["news.example", "blog.example", "docs.example", "mail.example"]
    assert {domain_partition(s, 3) for s in sites} == {0, 1, 2}  # every gather partition used
    docs = [{**d, "site": sites[i // 10 % 4]} for i, d in enumerate(stream(240, seed=71))]
    docs += [{**docs[12], "id": "cross-site", "site": sites[0]}]  # docs[12] is blog's
    dedup = ShardedDeduplicator(DedupConfig(home_shards=SHARDS))
    parsed = [Document.model_validate(d) for d in docs]
    want = {d.id: d.decision for d in dedup.process(parsed, [str(d["site"]) for d in docs])}
    assert want["cross-site"] == "unique"
    assert sum(v == "duplicate" for v in want.values()) > 40
    workers = replicas(
        kafka_bootstrap,
        topics,
        tmp_path,
        3,
        failpoints={0: "gather_produced=kill@1"},
        extra=["--log-partitions", "3", "--domain-field", "site"],
    )
    try:
        for w in workers:
            w.wait_ready()
        wait_assigned(workers, {"shard": SHARDS, "gather": 3})  # one input partition
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        got = decisions(kafka_bootstrap, topics, len(docs), timeout=300)
        assert workers[0].wait_exit(60) != 0, "the failpoint did not fire"
    finally:
        for w in workers:
            if w.alive():
                w.stop()
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"
    assert {k: v[0][0] for k, v in got.items()} == want
