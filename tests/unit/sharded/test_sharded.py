"""Document-partitioned shards decide like one engine, whatever holds which shard."""

from __future__ import annotations

import gc
import random
from datetime import UTC, datetime

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.models import Decision, Document
from neardup_stream.sharded.deduplicator import DocumentFingerprinter, ShardedDeduplicator
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import Votes


def corpus(
    n: int, seed: int = 7, replays: float = 0.03, timed: bool = False, jitter: int = 0
) -> list[Document]:
    """Random texts, near-copies with word edits (chains included) and replayed ids."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(5)) for _ in range(3000)]
    docs: list[Document] = []
    for i in range(n):
        if docs and rng.random() < 0.4:
            tokens = rng.choice(docs).text.split()
            for _ in range(rng.randint(0, max(1, len(tokens) // 8))):
                tokens[rng.randrange(len(tokens))] = rng.choice(words)
            text = " ".join(tokens)
        else:
            text = " ".join(rng.choice(words) for _ in range(rng.randint(3, 300)))
        doc_id = f"d{i}"
        if docs and rng.random() < replays:  # an id seen before: as it was, or changed
            earlier = rng.choice(docs)
            doc_id, text = earlier.id, earlier.text if rng.random() < 0.5 else text
        ts = datetime.fromtimestamp(1_700_000_000 + i * 10 + rng.randint(-jitter, jitter), UTC)
        docs.append(Document(id=doc_id, text=text, timestamp=ts if timed else None))
    return docs


def in_batches(dedup: ShardedDeduplicator, docs: list[Document], size: int) -> list[Decision]:
    out: list[Decision] = []
    for k in range(0, len(docs), size):
        out += dedup.process(docs[k : k + size], now=1_800_000_000)
    return out


@pytest.mark.parametrize("shards", [1, 3, 24])
def test_any_shard_count_decides_like_one_engine(shards: int) -> None:
    docs = corpus(2500)
    config = DedupConfig()
    plain = Deduplicator(config).check_batch(docs, now=1_800_000_000)
    sharded = in_batches(
        ShardedDeduplicator(config.model_copy(update={"home_shards": shards})), docs, 97
    )
    assert sum(d.is_duplicate for d in plain) > 500
    assert sharded == plain


def test_age_retention_is_the_same_on_every_shard() -> None:
    """With times in log order; out of order, eviction (oldest first in log order) is per
    shard, so shard counts may differ there: see the test after this one."""
    docs = corpus(2500, seed=3, timed=True)
    config = DedupConfig(max_age_seconds=3000)
    engine = Deduplicator(config)  # in the same batches: an id replayed within its batch
    plain = [d for k in range(0, 2500, 50) for d in engine.check_batch(docs[k : k + 50], 1.8e9)]
    sharded = in_batches(
        ShardedDeduplicator(config.model_copy(update={"home_shards": 8})), docs, 50
    )
    assert sharded == plain


def through_the_log(
    config: DedupConfig, docs: list[Document], replicas: list[list[int]]
) -> list[Decision]:
    """What the worker does: fingerprint batches and votes cross process boundaries as bytes;
    each replica holds the shards listed for it."""
    fingerprinter = DocumentFingerprinter(config)
    voters = [[ShardVoter(config, s) for s in shards] for shards in replicas]
    gatherer = Gatherer(config)
    out: list[Decision] = []
    for k in range(0, len(docs), 64):
        chunk = docs[k : k + 64]
        positions = (np.arange(len(chunk)) + (k // 64 << 16)).astype(np.int64)
        record = fingerprinter.batch(chunk, [""] * len(chunk), positions, now=1_800_000_000).pack()
        votes = [
            Votes.unpack(v.vote(FingerprintBatch.unpack(record, config.fingerprint_id)).pack())
            for replica in voters
            for v in replica
        ]
        out += gatherer.decide(FingerprintBatch.unpack(record, config.fingerprint_id), votes)
    return out


def test_one_replica_and_three_replicas_decide_identically_through_packed_records() -> None:
    config = DedupConfig(home_shards=6)
    docs = corpus(1500, seed=11)
    one = through_the_log(config, docs, [list(range(6))])
    three = through_the_log(config, docs, [[0, 3], [1, 4], [2, 5]])
    offline = in_batches(ShardedDeduplicator(config), docs, 1000)
    assert one == three == offline


def test_documents_near_the_odd_sketch_limit_decide_the_same_through_the_log() -> None:
    # sizes around the odd sketch's limit (5,316 shingles at 0.7): odd and 1-bit sketches
    # compared both ways, the `other` sketches carried by the packed records
    rng = random.Random(5)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(5)) for _ in range(3000)]
    docs: list[Document] = []
    for i in range(160):
        if docs and rng.random() < 0.6:
            tokens = rng.choice(docs).text.split()[: rng.randint(800, 1200)]
            for _ in range(rng.randint(0, 40)):
                tokens[rng.randrange(len(tokens))] = rng.choice(words)
        else:
            tokens = [rng.choice(words) for _ in range(rng.randint(800, 1200))]
        docs.append(Document(id=f"d{i}", text=" ".join(tokens)))
    config = DedupConfig(home_shards=4, threshold=0.7)
    one = through_the_log(config, docs, [list(range(4))])
    three = through_the_log(config, docs, [[0, 3], [1], [2]])
    plain = Deduplicator(DedupConfig(threshold=0.7)).check_batch(docs, now=1_800_000_000)
    assert one == three == plain
    assert sum(d.is_duplicate and d.method == "minhash" for d in plain) > 40


def test_out_of_order_times_decide_the_same_whatever_the_replicas_hold() -> None:
    config = DedupConfig(home_shards=6, max_age_seconds=3000)
    docs = corpus(1500, seed=17, timed=True, jitter=400)
    one = through_the_log(config, docs, [list(range(6))])
    three = through_the_log(config, docs, [[5, 0], [1, 4], [3, 2]])
    assert one == three == in_batches(ShardedDeduplicator(config), docs, 333)


def test_each_shard_stores_only_its_home_documents() -> None:
    config = DedupConfig(home_shards=4)
    dedup = ShardedDeduplicator(config)
    docs = corpus(4000, seed=5, replays=0)
    dedup.process(docs, now=1_800_000_000)
    sizes = [len(v) for v in dedup.voters]
    assert sum(sizes) == len(docs)
    assert max(sizes) < 1.15 * len(docs) / 4


def test_duplicates_point_back_never_at_each_other_and_replays_get_their_first_decision() -> None:
    docs = corpus(2000, seed=13, replays=0.1)
    decisions = ShardedDeduplicator(DedupConfig(home_shards=5)).process(docs, now=1_800_000_000)
    first: dict[str, tuple[str, Decision]] = {}  # id -> (text, decision) of its latest version
    seen: set[str] = set()
    replays = updates = 0
    for doc, d in zip(docs, decisions, strict=True):
        if doc.id in first and first[doc.id][0] == doc.text:
            assert d == first[doc.id][1]  # a replay: its first decision, never a later one
            replays += 1
            continue
        assert d.update == (doc.id in first)  # other content under a known id: an update
        updates += d.update
        if d.is_duplicate:
            assert d.duplicate_of in seen and d.duplicate_of != d.id
        first[doc.id] = (doc.text, d)
        seen.add(doc.id)
    assert replays > 20 and updates > 20


def test_domains_compare_only_within_themselves() -> None:
    text = "the same crawl page text appears on two different sites " * 5
    docs = [Document(id=f"x{i}", text=text) for i in range(4)]
    decisions = ShardedDeduplicator(DedupConfig(home_shards=3)).process(
        docs, ["site-a", "site-b", "site-a", "site-b"], now=1_800_000_000
    )
    assert [d.decision for d in decisions] == ["unique", "unique", "duplicate", "duplicate"]
    assert [d.duplicate_of for d in decisions[2:]] == ["x0", "x1"]


def test_packed_records_from_another_config_or_cut_short_are_refused() -> None:
    config = DedupConfig()
    fb = DocumentFingerprinter(config).batch(corpus(5), [""] * 5, np.arange(5), now=1e9)
    data = fb.pack()
    with pytest.raises(ValueError, match="fingerprint config"):
        FingerprintBatch.unpack(data, DedupConfig(shingle_size=4).fingerprint_id)
    with pytest.raises(ValueError, match="truncated"):
        FingerprintBatch.unpack(data[:-3], config.fingerprint_id)
    with pytest.raises(ValueError, match="not a fingerprint batch"):
        FingerprintBatch.unpack(b"ND" + data[2:], config.fingerprint_id)
    with pytest.raises(ValueError, match="fingerprint batch format 1, this build reads 2"):
        FingerprintBatch.unpack(data[:2] + b"\x01" + data[3:], config.fingerprint_id)
    votes = ShardVoter(config, 0).vote(fb).pack()
    with pytest.raises(ValueError, match="truncated"):
        Votes.unpack(votes[:-1])


def test_packed_records_carry_the_other_sketches_of_documents_near_the_odd_limit() -> None:
    config = DedupConfig(threshold=0.7)
    rng = random.Random(2)
    texts = [" ".join(f"w{rng.randrange(10**6)}" for _ in range(n)) for n in (50, 800, 900, 3000)]
    docs = [Document(id=f"x{i}", text=t) for i, t in enumerate(texts)]
    fb = DocumentFingerprinter(config).batch(docs, [""] * 4, np.arange(4), now=1e9)
    assert fb.docs.other.any(axis=1).tolist() == [False, True, True, False]
    back = FingerprintBatch.unpack(fb.pack(), config.fingerprint_id)
    for name in ("sketch", "other", "nfeat", "feats", "feat_offsets", "keys"):
        assert (getattr(back.docs, name) == getattr(fb.docs, name)).all(), name
    assert (back.rows(np.array([2, 1]), np.ones(2, bool)).docs.other == fb.docs.other[[2, 1]]).all()
    data = fb.pack()
    rows = np.array([2], "<i8").tobytes() + np.array([1, 2], "<i8").tobytes()
    assert data.count(rows) == 1
    swapped = data.replace(rows, np.array([2], "<i8").tobytes() + np.array([2, 1], "<i8").tobytes())
    with pytest.raises(ValueError, match="not in increasing order"):
        FingerprintBatch.unpack(swapped, config.fingerprint_id)


def test_settings_that_cannot_shard_are_refused() -> None:
    with pytest.raises(ValueError, match="precise mode needs home_shards = 1"):
        DedupConfig(precise=True, home_shards=2)
    with pytest.raises(ValueError, match=r"shard 3 is not in 0\.\.2"):
        ShardVoter(DedupConfig(home_shards=3), 3)


def test_the_gather_window_holds_nothing_the_cycle_collector_must_traverse() -> None:
    """A tracked object per live document, or a tracked container of them, made every full
    collection grow with the index: from the gather step's first decisions (`DecisionWindow`)
    the collector must visit a few objects whatever their number."""
    dedup = ShardedDeduplicator(DedupConfig(home_shards=3))
    decisions = in_batches(dedup, corpus(600, seed=5, replays=0.1), 100)
    assert sum(d.is_duplicate for d in decisions) > 100
    windows = list(dedup.gatherer._domains.values())
    assert sum(len(w) for w in windows) == len(dedup.gatherer) > 400
    for w in windows:  # what a full collection visits from a window: not one per document
        visited = [gc.get_referents(v) for v in vars(w).values() if gc.is_tracked(v)]
        assert sum(len(r) for r in visited) <= len(vars(w)), visited
        assert w.decision(next(iter(w.first))) is not None
