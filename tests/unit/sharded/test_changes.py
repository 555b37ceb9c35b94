"""Shards and the gather step rebuilt from their recorded changes decide as if never stopped."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.models import Decision, Document
from neardup_stream.sharded.changes import FirstDecisions, ShardChange
from neardup_stream.sharded.deduplicator import DocumentFingerprinter
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.voter import ShardVoter
from tests.unit.sharded.test_sharded import corpus


def run(
    config: DedupConfig, docs: list[Document], stop_at: int | None, limit: int | None = None
) -> tuple[list[Decision], int]:
    """Decide `docs` in batches of 40; at batch `stop_at`, rebuild every shard and the gather
    step from the packed changes recorded so far (each shard change in records of about
    `limit` bytes, when given). Returns decisions and change records replayed."""
    fingerprinter = DocumentFingerprinter(config)
    voters = [ShardVoter(config, s) for s in range(config.home_shards)]
    gatherer = Gatherer(config)
    shard_log: list[list[bytes]] = [[] for _ in voters]
    gather_log: list[bytes] = []
    out: list[Decision] = []
    replayed = 0
    for b, k in enumerate(range(0, len(docs), 40)):
        if b == stop_at:
            voters = [ShardVoter(config, s) for s in range(config.home_shards)]
            gatherer = Gatherer(config)
            for voter, log in zip(voters, shard_log, strict=True):
                for data in log:
                    voter.apply(ShardChange.unpack(data))
                    replayed += 1
            for data in gather_log:
                gatherer.apply(FirstDecisions.unpack(data))
        chunk = docs[k : k + 40]
        positions = np.arange(k, k + len(chunk), dtype=np.int64)
        fb = fingerprinter.batch(
            chunk, [str(i % 2) for i in range(k, k + len(chunk))], positions, 1.8e9
        )
        votes = []
        for voter, log in zip(voters, shard_log, strict=True):
            v, changes = voter.vote_and_record(fb)
            votes.append(v)
            for c in changes:
                log.extend([c.pack()] if limit is None else c.pack_parts(limit))
        decisions, firsts = gatherer.decide_and_record(fb, votes)
        gather_log.extend(f.pack() for f in firsts)
        out += decisions
    return out, replayed


@pytest.mark.parametrize(
    "retention",
    [{}, {"max_age_seconds": 2000}, {"max_docs": 300}, {"max_age_seconds": 1500, "max_docs": 400}],
)
def test_a_restore_from_recorded_changes_decides_as_if_never_stopped(retention: dict) -> None:
    config = DedupConfig(home_shards=4, **retention)
    docs = corpus(1600, seed=23, replays=0.08, timed=True, jitter=300)
    straight, _ = run(config, docs, None)
    assert sum(d.is_duplicate for d in straight) > 60  # two domains split the copies
    for stop_at in (7, 23):
        restored, replayed = run(config, docs, stop_at)
        assert replayed > 0
        assert restored == straight, f"stopped at batch {stop_at}"


@pytest.mark.parametrize(
    "retention", [{}, {"max_age_seconds": 1500}, {"max_docs": 300}, {"max_docs": 200}]
)
def test_shard_changes_split_into_parts_restore_the_same_state(retention: dict) -> None:
    config = DedupConfig(home_shards=3, **retention)
    docs = corpus(1600, seed=29, replays=0.08, timed=True, jitter=300)
    straight, _ = run(config, docs, None)
    _, whole = run(config, docs, 23)
    restored, parts = run(config, docs, 23, limit=2500)  # a few records a part
    assert parts > whole * 3 // 2  # split, and replayed part by part
    assert restored == straight


def test_a_shard_change_that_fits_is_one_record_and_parts_carry_their_own_watermark() -> None:
    config = DedupConfig(home_shards=1)
    fingerprinter = DocumentFingerprinter(config)
    docs = corpus(30, seed=5, timed=True)
    fb = fingerprinter.batch(docs, [""] * 30, np.arange(30, dtype=np.int64), 1.8e9)
    [change] = ShardVoter(config, 0).vote_and_record(fb)[1]
    assert change.pack_parts(1 << 30) == [change.pack()]
    parts = [ShardChange.unpack(p) for p in change.pack_parts(3000)]
    assert len(parts) > 2 and [p.reset for p in parts] == [change.reset] + [False] * (
        len(parts) - 1
    )
    assert [r.encode() for p in parts for r in p.records] == [r.encode() for r in change.records]
    assert np.array_equal(np.concatenate([p.positions for p in parts]), change.positions)
    for p in parts[:-1]:
        assert p.watermark == max(r.ts for r in p.records) <= change.watermark
    assert parts[-1].watermark == change.watermark
    assert {(p.stream, p.seen) for p in parts} == {(change.stream, change.seen)}


def test_recorded_changes_that_are_cut_short_are_refused() -> None:
    config = DedupConfig(home_shards=2)
    fb = DocumentFingerprinter(config).batch(corpus(20), [""] * 20, np.arange(20), 1e9)
    _, changes = ShardVoter(config, 0).vote_and_record(fb)
    data = changes[0].pack()
    with pytest.raises(ValueError, match="truncated"):
        ShardChange.unpack(data[:-5])
    with pytest.raises(ValueError, match="not a shard change"):
        ShardChange.unpack(b"XX" + data[2:])
    _, firsts = Gatherer(config).decide_and_record(
        fb, [ShardVoter(config, s).vote(fb) for s in range(2)]
    )
    with pytest.raises(ValueError, match="truncated"):
        FirstDecisions.unpack(firsts[0].pack()[:-1])


def test_changes_of_the_format_before_streams_are_read_without_a_mark() -> None:
    """Shard changes of format 1 had no stream, mark or reset: read with no stream and
    seen at the watermark."""
    change = ShardChange("site", 1234, np.empty(0, dtype=np.int64), [], 2, 1500, True)
    back = ShardChange.unpack(change.pack())
    assert (back.stream, back.seen, back.reset, back.domain) == (2, 1500, True, "site")
    v2 = change.pack()
    v1 = v2[:2] + b"\x01" + v2[3:19] + v2[19 + 13 :]  # header, then no mark
    old = ShardChange.unpack(v1)
    assert (old.stream, old.seen, old.reset, old.domain) == (None, 1234, False, "site")
    with pytest.raises(ValueError, match="format 3"):
        ShardChange.unpack(v2[:2] + b"\x03" + v2[3:])
