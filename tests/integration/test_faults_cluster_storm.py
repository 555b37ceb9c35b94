"""Cluster fault suite (issue 12): a poison storm into three `--cluster` replicas with
`--domain-field site` over three log partitions. Malformed messages of every kind the single
worker's storm has (test_faults_storm.py), ids of about 500 characters, a 1 MB domain value
(and a near-copy in that same domain), a valid 2 MB document: every malformed message is
dead-lettered exactly once with its reason, every valid document decided exactly once as
offline `dedup --home-shards 6` with the same domains decides, and no partition stops.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from tests.integration.cluster_faults import Cluster
from tests.integration.faults import assert_exactly_once, create_topic, send_records
from tests.integration.harness import Topics, decisions, read_all
from tests.integration.test_cluster_stops import metric
from tests.integration.test_faults_storm import REASONS, _malformed
from tests.integration.test_scale_out import SHARDS
from tests.integration.test_worker import stream
from tests.unit.conftest import mutate, random_text

pytestmark = [pytest.mark.integration, pytest.mark.faults]
SITES = ["news.example", "blog.example", "docs.example", "mail.example"]
BIG_SITE = "site-" + "w" * 1_000_000  # a 1 MB domain value


def valid_docs() -> list[dict[str, object]]:
    docs: list[dict[str, object]] = [
        {**d, "site": SITES[i // 10 % 4]} for i, d in enumerate(stream(200, seed=127))
    ]
    for i in range(20):  # ids of about 500 characters (the limit is 512), some near-copies
        text = mutate(str(docs[i * 7]["text"]), 0.01, i) if i % 2 else random_text(900 + i, 80)
        docs.append({"id": f"long-{i}-" + "i" * 490, "text": text, "site": docs[i * 7]["site"]})
    docs.append({"id": "big-domain", "text": random_text(990, 100), "site": BIG_SITE})
    near = mutate(str(docs[-1]["text"]), 0.01, 3)
    docs.append({"id": "big-domain-copy", "text": near, "site": BIG_SITE})
    docs.append({"id": "doc-2mb", "text": random_text(991, 330_000)[:1_990_000], "site": SITES[1]})
    return docs


def storm() -> list[tuple[str, bytes | None]]:
    """(kind, value) in input order, the malformed messages spread among the documents."""
    bad = [
        (kind, _malformed(kind, n))
        for kind in REASONS
        if kind != "oversized"
        for n in range(3 if "deep" in kind else 12)
    ]
    docs = valid_docs()
    out: list[tuple[str, bytes | None]] = []
    for i, doc in enumerate(docs):
        out.append(("doc", json.dumps(doc).encode()))
        out.extend(bad[i * len(bad) // len(docs) : (i + 1) * len(bad) // len(docs)])
    return out


def key(i: int, kind: str, raw: bytes | None) -> bytes | None:
    """Documents are keyed by id, tombstones by a key of their own (a record needs one of
    key and value); other malformed messages carry none."""
    if kind == "doc" and raw is not None:
        return str(json.loads(raw)["id"]).encode()
    return f"tombstone-{i}".encode() if raw is None else None


def test_a_poison_storm_with_a_domain_field_dead_letters_each_malformed_message_once(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    items = storm()
    valid = valid_docs()
    bad_count = sum(kind != "doc" for kind, _ in items)
    assert bad_count > 200 and len({k for k, _ in items}) == len(REASONS)  # every kind, + doc
    create_topic(kafka_bootstrap, topics.input, configs={"max.message.bytes": "4194304"})
    cluster = Cluster(
        kafka_bootstrap, topics, tmp_path, flags=["--log-partitions", "3", "--domain-field", "site"]
    )
    try:
        workers = cluster.start_all()
        records = [(key(i, kind, raw), raw, None) for i, (kind, raw) in enumerate(items)]
        offsets = send_records(
            kafka_bootstrap, topics.input, records, max_request_size=4 * 1024 * 1024
        )
        got = decisions(kafka_bootstrap, topics, len(valid), timeout=300)
        dlq = read_all(kafka_bootstrap, topics.dlq, bad_count, timeout=120)
        for w in workers:
            assert w.alive() and w.http("/healthz")[0] == 200, w.log()
            for role in ("edge", "shard", "gather"):
                stopped = metric(w, "neardup_partitions_stopped", f'role="{role}"')
                assert stopped == 0, (w.instance, role, w.log())
    finally:
        cluster.stop_all()

    kinds = {off: kind for off, (kind, _) in zip(offsets, items, strict=True)}
    seen = Counter(json.loads(m.value)["source"]["offset"] for m in dlq)
    assert {o: c for o, c in seen.items() if c != 1} == {}, "dead-lettered twice"
    bad = {o for o, k in kinds.items() if k != "doc"}
    assert set(seen) == bad, (len(set(seen) - bad), len(bad - set(seen)))
    letters = [json.loads(m.value) for m in dlq]
    wrong = [
        (kinds[r["source"]["offset"]], r["reason"])
        for r in letters
        if r["reason"] != REASONS[kinds[r["source"]["offset"]]]
    ]
    assert not wrong, Counter(wrong)

    assert_exactly_once(got, [str(d["id"]) for d in valid])
    dedup = ShardedDeduplicator(DedupConfig(home_shards=SHARDS))
    parsed = [Document.model_validate(d) for d in valid]
    want = {d.id: d.decision for d in dedup.process(parsed, [str(d["site"]) for d in valid])}
    assert {k: v[0][0] for k, v in got.items()} == want
    assert got["big-domain-copy"] == [("duplicate", "big-domain")]
    assert got["doc-2mb"][0][0] == "unique"
