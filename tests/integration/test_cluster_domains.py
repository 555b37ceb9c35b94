"""Many dedup domains in `--cluster`: memory follows the documents in the window and the
domains still publishing, decisions stay those of offline `dedup`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from neardup_stream import Document
from neardup_stream.config import DedupConfig
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from tests.integration.harness import Topics, decisions
from tests.integration.test_scale_out import SHARDS, produce_to, replicas
from tests.unit.conftest import mutate, random_text

pytestmark = pytest.mark.integration
SITES = 200
MAX_AGE = 3600
SKEW = 3600  # dedup.max_future_skew_seconds, the default
QUIET = 12


def gauge(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
    assert found, f"{name} not exported"
    return float(found.group(1))


def test_engines_of_many_domains_are_freed_once_their_documents_leave_the_window(
    kafka_bootstrap: str, topics: Topics, tmp_path: Path
) -> None:
    """Every site gets a page, then (past the window) a new version of it, and every other
    site a near-copy of that: the first pages expire, and with them their shards' engines.
    Then the replica restarts (restoring from its changelogs) and one site alone publishes,
    until the others went quiet: they are forgotten."""
    t0 = datetime.now(UTC) - timedelta(days=10)
    first = [
        {"id": f"a{i}", "site": f"site{i}.example", "text": random_text(900 + i, 80),
         "timestamp": (t0 + timedelta(seconds=i)).isoformat()}
        for i in range(SITES)
    ]  # fmt: skip
    later = []
    for i in range(SITES):
        at = t0 + timedelta(seconds=3 * MAX_AGE + 2 * i)
        text = mutate(str(first[i]["text"]), 0.02, i)  # a copy of a page that has expired
        later.append({"id": f"b{i}", "site": first[i]["site"], "text": text,
                      "timestamp": at.isoformat()})  # fmt: skip
        if i % 2 == 0:
            later.append({"id": f"c{i}", "site": first[i]["site"], "text": mutate(text, 0.02, -i),
                          "timestamp": (at + timedelta(seconds=1)).isoformat()})  # fmt: skip
    # then one site alone, long enough after that every other site has gone quiet
    quiet_at = t0 + timedelta(seconds=3 * MAX_AGE + 2 * SITES + MAX_AGE + SKEW + 60)
    final = [
        {"id": f"q{i}", "site": "live.example", "text": random_text(5000 + i, 60),
         "timestamp": (quiet_at + timedelta(seconds=i)).isoformat()}
        for i in range(QUIET)
    ]  # fmt: skip
    docs = first + later
    dedup = ShardedDeduplicator(DedupConfig(home_shards=SHARDS, max_age_seconds=MAX_AGE))
    parsed = [Document.model_validate(d) for d in docs]
    want = {d.id: d.decision for d in dedup.process(parsed, [str(d["site"]) for d in docs])}
    assert sum(v == "duplicate" for v in want.values()) == SITES // 2  # each c, never a b
    engines_offline = dedup.replica.domain_engines()
    parsed = [Document.model_validate(d) for d in final]
    want |= {d.id: d.decision for d in dedup.process(parsed, ["live.example"] * QUIET)}

    flags = ["--domain-field", "site", "--max-age", str(MAX_AGE)]
    workers = replicas(kafka_bootstrap, topics, tmp_path, 1, extra=flags)
    try:
        workers[0].wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in docs])
        decisions(kafka_bootstrap, topics, len(docs), timeout=240)
        metrics = workers[0].http("/metrics")[1]
        workers[0].stop()  # the next replica restores shards and gather from the changelogs
        (tmp_path / "restarted").mkdir()
        workers = replicas(kafka_bootstrap, topics, tmp_path / "restarted", 1, extra=flags)
        workers[0].wait_ready()
        produce_to(kafka_bootstrap, topics.input, [(0, d) for d in final])
        got = decisions(kafka_bootstrap, topics, len(docs) + QUIET, timeout=240)
        after = workers[0].http("/metrics")[1]
    finally:
        workers[0].stop()
    assert all(len(v) == 1 for v in got.values()), "a document was decided twice"
    assert {k: v[0][0] for k, v in got.items()} == want
    live = SITES + SITES // 2  # the b and c pages; every a page has left the window
    assert gauge(metrics, "neardup_index_documents") == live
    for role in ("edge", "shard", "gather"):  # each role's threads and Kafka clients
        assert gauge(metrics, f'neardup_role_cpu_seconds_total{{role="{role}"}}') > 0
    engines = gauge(metrics, "neardup_index_domain_engines")
    assert engines == engines_offline
    assert SITES <= engines <= live < SHARDS * SITES  # SHARDS * SITES: an engine per shard and site
    # every site but the live one went quiet: forgotten, by the restored replica as offline
    assert gauge(after, "neardup_index_documents") == QUIET
    assert gauge(after, "neardup_index_domain_engines") == dedup.replica.domain_engines() <= QUIET
