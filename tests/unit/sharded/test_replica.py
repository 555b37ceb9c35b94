"""A replica's merged candidate table votes exactly like its shards' own voters."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.models import Decision, Document
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.deduplicator import DocumentFingerprinter, ShardedDeduplicator
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter
from tests.unit.sharded.test_sharded import corpus, in_batches

RETENTION = [
    {},
    {"max_age_seconds": 2000},
    {"max_docs": 300},
    {"max_age_seconds": 1500, "max_docs": 400},
]


def batches(config: DedupConfig, docs: list[Document], size: int = 40) -> list[FingerprintBatch]:
    """Fingerprint batches of `size` documents in two domains, as the log carries them."""
    fingerprinter = DocumentFingerprinter(config)
    out = []
    for k in range(0, len(docs), size):
        chunk = docs[k : k + size]
        domains = [str(i % 2) for i in range(k, k + len(chunk))]
        positions = np.arange(k, k + len(chunk), dtype=np.int64)
        fb = fingerprinter.batch(chunk, domains, positions, 1.8e9).pack()
        out.append(FingerprintBatch.unpack(fb, config.fingerprint_id))
    return out


def restored(config: DedupConfig, shard: int, log: list[bytes]) -> ShardVoter:
    voter = ShardVoter(config, shard)
    for data in log:
        voter.apply(ShardChange.unpack(data))
    return voter


def compare(config: DedupConfig, docs: list[Document], held: list[int], events: dict) -> int:
    """Run separate voters for `held` and one replica side by side, batch by batch; at batch
    b, `events[b]` is ("restore",) to rebuild the replica from the recorded changes,
    ("remove", s) / ("add", s) to move shard s out of or back into the replica (restored
    from its changes), or ("late", s) to let s miss that batch and vote on it after the
    next one. Asserts identical packed votes and changes; returns how many votes found a
    match (so the comparison is not one of empty votes)."""
    separate = {s: ShardVoter(config, s) for s in held}
    replica = ReplicaVoter(config, held)
    logs: dict[int, list[bytes]] = {s: [] for s in held}
    compared = 0
    late: list[tuple[int, FingerprintBatch]] = []
    for b, fb in enumerate(batches(config, docs)):
        event = events.get(b, ())
        if event == ("restore",):
            replica = ReplicaVoter(config)
            for s in held:
                replica.add(restored(config, s, logs[s]))
        elif event and event[0] == "remove":
            replica.remove(event[1])
        elif event and event[0] == "add":
            replica.add(restored(config, event[1], logs[event[1]]))
        voting = [s for s in replica.shards if not (event and event[0] == "late" and s == event[1])]
        got = replica.vote_and_record(fb, shards=voting)
        for s in voting:
            want_votes, want_changes = separate[s].vote_and_record(fb)
            votes, changes = got[s]
            assert votes.pack() == want_votes.pack(), (b, s)
            assert [c.pack() for c in changes] == [c.pack() for c in want_changes], (b, s)
            logs[s] += [c.pack() for c in changes]
            compared += int((votes.match_position >= 0).sum())
        for s in [s for s in held if s not in replica.shards]:  # moved away: others vote
            logs[s] += [c.pack() for c in separate[s].vote_and_record(fb)[1]]
        for s, missed in late:
            votes, changes = replica.vote_and_record(missed, shards=[s])[s]
            assert votes.pack() == separate[s].vote_and_record(missed)[0].pack()
        late = []
        if event and event[0] == "late":
            late.append((event[1], fb))
    return compared


@pytest.mark.parametrize("retention", RETENTION)
def test_one_merged_table_votes_like_separate_voters_under_retention(retention: dict) -> None:
    config = DedupConfig(home_shards=6, **retention)
    docs = corpus(2400, seed=21, replays=0.08, timed=True, jitter=300)
    assert compare(config, docs, [0, 2, 3, 5], {}) > 40


@pytest.mark.parametrize("retention", RETENTION)
def test_a_replica_restored_from_recorded_changes_votes_as_if_never_stopped(
    retention: dict,
) -> None:
    config = DedupConfig(home_shards=4, **retention)
    docs = corpus(2000, seed=23, replays=0.08, timed=True)
    assert compare(config, docs, [0, 1, 2, 3], {25: ("restore",)}) > 40


@pytest.mark.parametrize("retention", RETENTION)
def test_shards_moved_out_and_back_in_at_runtime_vote_like_separate_voters(
    retention: dict,
) -> None:
    config = DedupConfig(home_shards=5, **retention)
    docs = corpus(2400, seed=29, replays=0.08, timed=True)
    events = {10: ("remove", 1), 22: ("add", 1), 30: ("remove", 4), 31: ("late", 0)}
    events |= {40: ("add", 4), 45: ("late", 4)}
    assert compare(config, docs, [0, 1, 4], events) > 40


def test_saturated_buckets_are_capped_per_shard_as_in_separate_tables() -> None:
    config = DedupConfig(home_shards=3, bucket_cap=2, max_docs=500)
    docs = corpus(1600, seed=31, replays=0.05)  # many near-copies: keys past their cap
    events = {15: ("restore",), 25: ("remove", 2), 30: ("add", 2)}
    assert compare(config, docs, [0, 1, 2], events) > 40


def test_one_replica_holding_every_shard_decides_like_the_offline_deduplicator() -> None:
    config = DedupConfig(home_shards=24, max_age_seconds=2500)
    docs = corpus(2000, seed=37, replays=0.06, timed=True)
    replica, gatherer = ReplicaVoter(config, range(24)), Gatherer(config)
    out: list[Decision] = []
    fingerprinter = DocumentFingerprinter(config)
    for k in range(0, len(docs), 50):
        chunk = docs[k : k + 50]
        positions = np.arange(k, k + len(chunk), dtype=np.int64)
        fb = fingerprinter.batch(chunk, [""] * len(chunk), positions, 1.8e9)
        out += gatherer.decide(fb, list(replica.vote(fb).values()))
    assert sum(d.is_duplicate for d in out) > 150
    assert out == in_batches(ShardedDeduplicator(config), docs, 50)


def test_settings_and_shards_are_checked() -> None:
    config = DedupConfig(home_shards=4)
    replica = ReplicaVoter(config, [0, 1])
    with pytest.raises(ValueError, match="held already"):
        replica.add(ShardVoter(config, 1))
    with pytest.raises(ValueError, match="other dedup settings"):
        replica.add(ShardVoter(DedupConfig(home_shards=4, bucket_cap=3), 2))
    with pytest.raises(ValueError, match="shard 3 is not held"):
        replica.remove(3)
    fb = batches(config, corpus(10))[0]
    with pytest.raises(ValueError, match="shard 2 is not held"):
        replica.vote_and_record(fb, shards=[2])


def test_a_crowded_key_keeps_bucket_cap_entries_over_all_shards_as_one_engine_does() -> None:
    config = DedupConfig(home_shards=4, bucket_cap=8)
    assert config.shard_bucket_cap == 2  # ceil(8 / 4): each shard's share of a key
    text = " ".join(f"token{i % 97}x{i % 13}" for i in range(400))
    docs = [Document(id=f"copy-{i}", text=text) for i in range(120)]  # every key crowded
    voters = [ShardVoter(config, s) for s in range(4)]
    replica = ReplicaVoter(config, range(4))
    for fb in batches(config, docs):
        got = replica.vote_and_record(fb)
        for v in voters:
            assert got[v.shard][0].pack() == v.vote_and_record(fb)[0].pack()
    for domain in ("0", "1"):
        per_key: dict[int, int] = {}
        for v in voters:
            engine, _ = v.engine(domain)
            keys, refs = engine.index.key_refs()
            st = engine.store
            live = ((refs.astype(np.int64) - st.base) & 0xFFFFFFFF) < st.count
            counts = np.unique(keys[live], return_counts=True)
            assert counts[1].max() == config.shard_bucket_cap  # capped per shard
            for key, n in zip(*(c.tolist() for c in counts), strict=True):
                per_key[key] = per_key.get(key, 0) + n
        assert set(per_key.values()) == {config.bucket_cap}  # all shards: one engine's cap


def test_the_shard_cap_splits_bucket_cap_over_the_home_shards() -> None:
    assert DedupConfig(bucket_cap=64).shard_bucket_cap == 64  # one engine: unchanged
    assert DedupConfig(bucket_cap=64, home_shards=24).shard_bucket_cap == 3
    assert DedupConfig(bucket_cap=1, home_shards=24).shard_bucket_cap == 1
    assert ShardVoter(DedupConfig(home_shards=24), 5).engine_config.bucket_cap == 3
