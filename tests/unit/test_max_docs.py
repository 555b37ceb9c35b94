"""Retention by count: a document is compared with the `max_docs` most recent stored ones.

The same in one batch and across batches, in precise mode, in the sharded path, and after a
changelog replay (which must rebuild the same window).
"""

from __future__ import annotations

import pytest

from neardup_stream import DedupConfig, Deduplicator, Document
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from tests.unit.conftest import random_text

NOW = 1_800_000_000.0


def _docs(texts: list[str]) -> list[Document]:
    return [Document(id=f"d{i}", text=t) for i, t in enumerate(texts)]


@pytest.mark.parametrize("precise", [False, True])
@pytest.mark.parametrize("per_batch", [1, 3])
def test_max_docs_1_compares_with_the_last_stored_document(precise: bool, per_batch: int) -> None:
    dedup = Deduplicator(DedupConfig(max_docs=1, precise=precise))
    docs = _docs([random_text(1)] * 3)
    out = [
        d for k in range(0, 3, per_batch) for d in dedup.check_batch(docs[k : k + per_batch], NOW)
    ]
    assert [d.decision for d in out] == ["unique", "duplicate", "duplicate"]
    assert [d.duplicate_of for d in out] == [None, "d0", "d1"]
    assert [d.representative for d in out] == [None, "d0", "d0"]
    assert len(dedup) == 1 and dedup.lookup("d2") is not None and dedup.lookup("d1") is None


def test_max_docs_2_sees_two_back_but_not_three() -> None:
    a, b, c = random_text(1), random_text(2), random_text(3)
    out = Deduplicator(DedupConfig(max_docs=2)).check_batch(
        _docs([a, b, a, c, b, a]), NOW
    )  # d2 sees d0 (two back); d4 sees d2, d3 but not d1; d5 sees d3, d4 but not d2
    assert [d.decision for d in out] == [
        "unique",
        "unique",
        "duplicate",
        "unique",
        "unique",
        "unique",
    ]
    assert out[2].duplicate_of == "d0"


@pytest.mark.parametrize("max_docs", [1, 2, 5])
def test_a_changelog_replay_rebuilds_the_same_window(max_docs: int) -> None:
    config = DedupConfig(max_docs=max_docs)
    texts = [random_text(i, 200) for i in range(12)]
    outcomes = Deduplicator(config).process(_docs(texts), now=NOW, records=True)
    records = [o.record for o in outcomes if o.record is not None]

    def replayed() -> Deduplicator:
        engine = Deduplicator(config)
        engine.apply_records(records)
        return engine

    assert len(replayed()) == max_docs
    oldest_kept = replayed().check(Document(id="p", text=texts[-max_docs]), NOW)
    assert oldest_kept.duplicate_of == f"d{12 - max_docs}"
    assert not replayed().check(Document(id="p", text=texts[-max_docs - 1]), NOW).is_duplicate


@pytest.mark.parametrize("shards", [1, 3])
@pytest.mark.parametrize("max_docs", [1, 2])
def test_the_sharded_path_sees_at_least_the_most_recent_documents(
    shards: int, max_docs: int
) -> None:
    config = DedupConfig(max_docs=max_docs, home_shards=shards)
    docs = _docs([random_text(7)] * 5)
    out = ShardedDeduplicator(config).process(docs, now=NOW)
    assert [d.decision for d in out] == ["unique"] + ["duplicate"] * 4
    if shards == 1:  # one shard is one engine
        assert out == Deduplicator(config).check_batch(docs, NOW)
