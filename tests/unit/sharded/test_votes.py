"""Votes records: the votes of any set of shards on one batch, sparse, and the older formats.

A record round-trips every field of every shard's votes exactly, whatever the mix of
matches, `seen` and `update` flags; `pack_records` splits only between shards, under its
limit; v1 and v2 records (one shard, dense) written by earlier versions are still read; and
a record cut short, inconsistent or of an unknown version is refused, never misread.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from neardup_stream.sharded.votes import (
    MAX_DOCUMENTS,
    NO_MATCH,
    Votes,
    pack_record,
    pack_records,
    unpack_record,
)


def _votes(shard: int, n: int, seed: int, rate: float = 0.2) -> Votes:
    rng = np.random.default_rng(seed)
    v = Votes.none(shard, n)
    matched = rng.random(n) < rate
    v.match_position[matched] = rng.integers(0, 1 << 40, int(matched.sum()))
    v.similarity[matched] = rng.random(int(matched.sum()))
    v.method[matched] = rng.integers(1, 4, int(matched.sum()))
    v.seen[rng.random(n) < rate / 2] = True
    v.update[rng.random(n) < rate / 4] = True
    for i in np.flatnonzero(matched).tolist():
        v.match_ids[i] = f"doc-{i}-\u00e9\u4e2d" + ("\udc80" if i % 7 == 0 else "")
    return v


def _same(a: Votes, b: Votes) -> bool:
    arrays = ("match_position", "similarity", "method", "seen", "update")
    return (
        a.shard == b.shard
        and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in arrays)
        and a.match_ids == b.match_ids
    )


def _pack_v2(v: Votes, version: int = 2) -> bytes:
    """A record as v1 (no `update` column) and v2 wrote it: one shard, every document."""
    n = v.match_position.size
    ids = [m.encode("utf-8", "surrogatepass") if m is not None else b"" for m in v.match_ids]
    columns = [
        struct.pack("<2sBII", b"NV", version, v.shard, n),
        v.match_position.astype("<i8").tobytes(),
        v.similarity.astype("<f8").tobytes(),
        v.method.astype("i1").tobytes(),
        v.seen.astype("u1").tobytes(),
    ]
    if version == 2:
        columns.append(v.update.astype("u1").tobytes())
    return b"".join([*columns, np.array([len(b) for b in ids], dtype="<u4").tobytes(), *ids])


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.3, 1.0])
def test_a_record_of_many_shards_round_trips_every_field(rate: float) -> None:
    votes = [_votes(s, 300, seed=s, rate=rate) for s in (0, 3, 5, 23)]
    back = unpack_record(pack_record(votes))
    assert len(back) == len(votes)
    assert all(_same(a, b) for a, b in zip(votes, back, strict=True))


def test_a_record_carries_only_the_votes_that_are_not_the_default() -> None:
    quiet = [Votes.none(s, 500) for s in range(24)]
    one = Votes.none(7, 500)
    one.match_position[42], one.similarity[42], one.method[42] = 9, 0.93, 3
    one.match_ids[42] = "x"
    assert len(pack_record([*quiet[:7], one, *quiet[8:]])) < 24 * 16 + 64  # not per document
    back = unpack_record(pack_record([one]))[0]
    assert _same(back, one)


def test_records_split_between_shards_under_the_limit() -> None:
    votes = [_votes(s, 200, seed=s, rate=0.5) for s in range(10)]
    alone = [len(pack_record([v])) for v in votes]
    limit = 3 * max(alone)
    records = pack_records(votes, limit)
    assert len(records) > 1 and all(len(r) <= limit for r in records)
    back = [v for r in records for v in unpack_record(r)]
    assert all(_same(a, b) for a, b in zip(votes, back, strict=True))
    # one shard's votes are never split, even past the limit
    assert [len(r) for r in pack_records(votes[:1], 10)] == [alone[0]]


@pytest.mark.parametrize("version", [1, 2])
def test_records_of_earlier_versions_are_read(version: int) -> None:
    v = _votes(4, 120, seed=9)
    (back,) = unpack_record(_pack_v2(v, version))
    expected = v if version == 2 else v._replace(update=np.zeros(120, dtype=np.bool_))
    assert _same(back, expected)
    assert Votes.unpack(_pack_v2(v, version)).shard == 4


def test_damaged_or_unknown_records_are_refused() -> None:
    data = pack_record([_votes(s, 80, seed=s) for s in range(3)])
    for cut in range(len(data)):
        with pytest.raises(ValueError):
            unpack_record(data[:cut])
    with pytest.raises(ValueError, match="past its last shard"):
        unpack_record(data + b"\0")
    with pytest.raises(ValueError, match="no 'NV' header"):
        unpack_record(b"NX" + data[2:])
    with pytest.raises(ValueError, match="votes format 9"):
        unpack_record(data[:2] + b"\x09" + data[3:])
    twice = pack_record([_votes(1, 50, seed=1), _votes(1, 50, seed=2)])
    with pytest.raises(ValueError, match="one shard twice"):
        unpack_record(twice)
    with pytest.raises(ValueError, match="past its batch"):  # a document index beyond n
        unpack_record(data[:3] + struct.pack("<I", 10) + data[7:])
    with pytest.raises(ValueError, match="different sizes"):
        pack_record([Votes.none(0, 5), Votes.none(1, 6)])
    with pytest.raises(ValueError, match="one expected"):
        Votes.unpack(pack_record([Votes.none(0, 5), Votes.none(1, 5)]))


def test_an_empty_vote_is_no_match() -> None:
    (back,) = unpack_record(pack_record([Votes.none(2, 10)]))
    assert back.match_position.tolist() == [NO_MATCH] * 10 and back.match_ids == [None] * 10


def test_a_record_claiming_more_documents_than_a_log_record_holds_is_refused() -> None:
    data = pack_record([Votes.none(0, 3)])
    claims = data[:3] + struct.pack("<I", MAX_DOCUMENTS + 1) + data[7:]
    with pytest.raises(ValueError, match="at most"):  # refused before anything is allocated
        unpack_record(claims)


def test_flags_are_read_as_truth_values() -> None:
    v = Votes.none(0, 3)
    seen = np.array([0, 2, 1], dtype=np.uint8)  # a truth value that is not 1
    (back,) = unpack_record(pack_record([v._replace(seen=seen)]))
    assert back.seen.tolist() == [False, True, True] and not back.update.any()


def test_votes_count_their_size_in_memory_not_on_the_wire() -> None:
    v = Votes.none(5, 450)
    v.match_position[7], v.match_ids[7] = 3, "abc"
    assert v.nbytes == 450 * (8 + 8 + 1 + 1 + 1 + 8) + 3
    assert len(pack_record([v])) < v.nbytes // 100  # why the join charges the former
