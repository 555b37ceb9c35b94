"""An id seen again: the same content is a replay, other content an update.

A replay keeps its first decision; an update is decided afresh against the other documents
(never its own earlier version, which it supersedes), says so (`Decision.update`), and its
replays keep the update's decision. The same after a changelog replay, a snapshot, and in
the sharded path.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from neardup_stream import DedupConfig, Deduplicator, Document, FingerprintRecord
from neardup_stream.index.columns import WINDOW
from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.deduplicator import ShardedDeduplicator
from neardup_stream.sharded.votes import Votes
from neardup_stream.snapshot import load_snapshot, save_snapshot
from tests.unit.conftest import mutate, random_text

NOW = 1_800_000_000.0
V1 = random_text(31)
V2 = mutate(V1, 0.02, 32)  # a light edit: a near-duplicate of V1
OTHER = random_text(33)

# x arrives, is edited (V2 ~ V1: must not match itself), re-fetched as edited (a replay),
# then changed to a copy of y, then replayed again.
STREAM = [
    ("x", V1),
    ("y", OTHER),
    ("x", V2),
    ("x", V2),
    ("z", V1),
    ("x", OTHER),
    ("x", OTHER),
]


def _docs(stream: list[tuple[str, str]]) -> list[Document]:
    return [Document(id=i, text=t) for i, t in stream]


def _decide(dedup: Deduplicator, per_batch: int) -> list[Decision]:
    docs = _docs(STREAM)
    return [
        d
        for k in range(0, len(docs), per_batch)
        for d in dedup.check_batch(docs[k : k + per_batch], NOW)
    ]


def _check_stream(out: list[Decision]) -> None:
    x1, y, x2, x2_again, z, x3, x3_again = out
    assert not x1.update and x1.decision == "unique"
    # the edit is decided afresh: unique, although it is a near-copy of x's first version
    assert x2.update and x2.decision == "unique" and x2.duplicate_of is None
    assert x2_again == x2  # a replay of the update keeps the update's decision
    # x's first version is superseded: z (its content) matches x's current version instead
    assert not z.update and z.duplicate_of == "x" and z.method in {"simhash", "minhash"}
    assert x3.update and x3.duplicate_of == "y" and x3.method == "exact"
    assert x3_again == x3
    assert y.decision == "unique"


@pytest.mark.parametrize("precise", [False, True])
@pytest.mark.parametrize("per_batch", [1, 2, 7])
def test_updates_are_decided_afresh_and_replays_keep_their_decision(
    precise: bool, per_batch: int
) -> None:
    dedup = Deduplicator(DedupConfig(precise=precise))
    _check_stream(_decide(dedup, per_batch))
    assert dedup.lookup("x") == _decide(Deduplicator(DedupConfig(precise=precise)), 7)[5]


def test_an_exact_copy_stays_findable_when_its_original_is_updated() -> None:
    dedup = Deduplicator()
    out = dedup.check_batch(_docs([("a", V1), ("c", V1), ("a", OTHER), ("d", V1)]), NOW)
    assert out[1].method == "exact" and out[2].update
    assert out[3].duplicate_of == "c" and out[3].method == "exact"


def test_an_id_whose_version_left_the_window_is_new_again() -> None:
    dedup = Deduplicator(DedupConfig(max_docs=1))
    out = dedup.check_batch(_docs([("x", V1), ("y", OTHER), ("x", V2)]), NOW)
    assert not out[2].update and out[2].decision == "unique"


def test_a_changelog_replay_keeps_updates_and_supersessions() -> None:
    live = Deduplicator()
    outcomes = live.process(_docs(STREAM[:3]), now=NOW, records=True)
    records = [o.record for o in outcomes if o.record is not None]
    assert [r.update for r in records] == [False, False, True]
    decoded = [FingerprintRecord.decode(r.encode()) for r in records]
    assert [r.update for r in decoded] == [False, False, True]
    replayed = Deduplicator()
    assert replayed.apply_records(decoded) == 3
    assert replayed.apply_records(decoded[2:]) == 0  # x's latest content again: applied
    rest = _docs(STREAM[3:])
    assert replayed.check_batch(rest, NOW) == live.check_batch(rest, NOW)
    assert replayed.lookup("x") == live.lookup("x")


def test_records_of_format_3_are_read_as_no_updates() -> None:
    record = Deduplicator().process(_docs([("x", V1)]), now=NOW, records=True)[0].record
    assert record is not None
    data = bytearray(record.encode())
    data[2] = 3  # version 3: the same layout, never an update bit
    assert FingerprintRecord.decode(bytes(data)).update is False


def test_a_snapshot_keeps_updates_and_one_of_format_2_loads(tmp_path: Path) -> None:
    live = Deduplicator()
    live.check_batch(_docs(STREAM[:3]), NOW)
    restored = load_snapshot(save_snapshot(live, tmp_path / "s"))
    rest = _docs(STREAM[3:])
    assert restored.check_batch(rest, NOW) == live.check_batch(rest, NOW)
    # format 2 had no flag columns: every document is current and no update
    old = Deduplicator()
    old.check_batch(_docs(STREAM[:2]), NOW)
    path = save_snapshot(old, tmp_path / "v2")
    meta = json.loads((path / "meta.json").read_text())
    (path / "meta.json").write_text(json.dumps({**meta, "format_version": 2}))
    with np.load(path / "state.npz") as npz:
        arrays = {k: npz[k] for k in npz.files if k not in {"store_update", "store_superseded"}}
    window = arrays["store_window"]  # format 2 kept the window as five int64 values
    arrays["store_window"] = np.array([int(window[name][0]) for name in WINDOW.names or ()])
    np.savez(path / "state.npz", **arrays)  # type: ignore[arg-type]
    loaded = load_snapshot(path)
    assert loaded.lookup("x") == old.lookup("x") and loaded.lookup("x") is not None
    assert loaded.store.window.tolist() == old.store.window.tolist()
    assert loaded.check(Document(id="x", text=V2), NOW).update
    (path / "meta.json").write_text(json.dumps({**meta, "format_version": 1}))
    with pytest.raises(ValueError, match="snapshot format 1 is not one this engine reads"):
        load_snapshot(path)


@pytest.mark.parametrize("shards", [1, 4])
@pytest.mark.parametrize("per_batch", [1, 3, 7])
def test_the_sharded_path_decides_updates_like_one_engine(shards: int, per_batch: int) -> None:
    sharded = ShardedDeduplicator(DedupConfig(home_shards=shards))
    docs = _docs(STREAM)
    out = [d for k in range(0, 7, per_batch) for d in sharded.process(docs[k : k + per_batch])]
    _check_stream(out)
    assert out == _decide(Deduplicator(), per_batch)


def test_packed_votes_and_first_decisions_carry_the_update_flag() -> None:
    n = 3
    votes = Votes(
        2,
        np.array([-1, 4, -1]),
        np.zeros(n),
        np.zeros(n, dtype=np.int8),
        np.array([False, False, True]),
        [None, "a", None],
        np.array([True, False, False]),
    )
    back = Votes.unpack(votes.pack())
    assert back.update.tolist() == [True, False, False] and back.seen.tolist() == [0, 0, 1]
    assert back.match_ids == [None, "a", None]  # (older formats: tests/unit/sharded/test_votes.py)
    first = FirstDecisions(
        "d", 5, [(5, Decision(id="x", decision="unique", update=True))], 3, 9, True
    )
    assert FirstDecisions.unpack(first.pack()).entries[0][1].update
    body = json.dumps(["d", 5, [[5, "x", None, None, None, None]]]).encode()
    v1_first = b"NG\x01" + len(body).to_bytes(4, "little") + body
    assert FirstDecisions.unpack(v1_first).entries[0][1] == Decision(id="x", decision="unique")
    assert FirstDecisions.unpack(v1_first).stream is None  # as the shards' v1 changes
    assert FirstDecisions.unpack(first.pack()).stream == 3


def _reused_ids(seed: int, n: int = 120) -> list[Document]:
    """A stream that reuses a few ids, with copies, edits and new texts, one a second apart."""
    rng = np.random.default_rng(seed)
    texts = [random_text(100 + seed * 7 + k) for k in range(6)]
    docs = []
    for k in range(n):
        doc_id = f"id{rng.integers(0, 8)}"
        base = texts[int(rng.integers(0, len(texts)))]
        text = base if rng.random() < 0.6 else mutate(base, 0.03, int(rng.integers(1 << 30)))
        docs.append(Document(id=doc_id, text=text, timestamp=NOW + k + 17 * (k % 3)))
    return docs


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "config",
    [
        DedupConfig(max_docs=5),
        DedupConfig(max_age_seconds=9),
        DedupConfig(max_docs=7, precise=True),
        DedupConfig(max_age_seconds=12, longest_sentences=2),
    ],
    ids=["max_docs", "max_age", "precise", "sentences"],
)
def test_a_replay_whose_version_left_the_window_in_its_batch_is_decided_as_alone(
    seed: int, config: DedupConfig
) -> None:
    # An id comes back after rows of its own batch evicted its stored version: it is a new
    # document, as in a batch of its own (it kept the evicted version's decision before).
    docs = _reused_ids(seed)
    alone = Deduplicator(config)
    expected = [alone.check(d, NOW) for d in docs]
    for per_batch in (4, 33, len(docs)):
        engine = Deduplicator(config)
        outcomes = [
            o
            for k in range(0, len(docs), per_batch)
            for o in engine.process(docs[k : k + per_batch], now=NOW, records=True)
        ]
        assert [o.decision for o in outcomes] == expected, per_batch
        # the changelog's records rebuild the same state, replayed in one batch
        replayed = Deduplicator(config)
        replayed.apply_records([o.record for o in outcomes if o.record is not None])
        assert (replayed.store.base, replayed.store.count) == (
            engine.store.base,
            engine.store.count,
        )
        assert [replayed.lookup(f"id{k}") for k in range(8)] == [
            engine.lookup(f"id{k}") for k in range(8)
        ]
        probe = _reused_ids(seed + 10, 20)
        assert replayed.check_batch(probe, NOW) == engine.check_batch(probe, NOW)
