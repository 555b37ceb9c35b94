"""The gather's vote join: log order, every shard's vote, bytes held; split first decisions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import Pending, VoteJoin
from neardup_stream.sharded.votes import Votes


def votes(shard: int, n: int = 1) -> Votes:
    return Votes(
        shard,
        np.full(n, -1, dtype=np.int64),
        np.zeros(n),
        np.zeros(n, dtype=np.int8),
        np.zeros(n, dtype=np.bool_),
        [None] * n,
        np.zeros(n, dtype=np.bool_),
    )


@settings(max_examples=200, deadline=None)
@given(
    shards=st.integers(1, 4),
    records=st.integers(1, 8),
    data=st.data(),
)
def test_records_are_released_in_log_order_only_once_every_shard_voted(
    shards: int, records: int, data: st.DataObject
) -> None:
    offsets = sorted(data.draw(st.sets(st.integers(0, 100), min_size=records, max_size=records)))
    arrivals = [("record", o, -1) for o in offsets] + [
        ("vote", o, s) for o in offsets for s in range(shards)
    ]
    # Records arrive in log order, votes in any order, interleaved with the records.
    order = data.draw(st.permutations(arrivals))
    recs = iter(sorted(a for a in order if a[0] == "record"))
    order = [next(recs) if a[0] == "record" else a for a in order]
    join: VoteJoin[str] = VoteJoin(shards, 0)
    released: list[int] = []
    at = 0
    for kind, offset, shard in order:
        if kind == "record":
            join.add_record(Pending(offset, f"r{offset}", 1000 + offset, 10))
        else:
            join.add_votes(offset, votes(shard), at, 5)
            at += 1
        while (ready := join.ready()) is not None:
            assert [v.shard for v in ready.votes] == list(range(shards))
            assert ready.payload == f"r{ready.offset}"
            released.append(ready.offset)
            join.pop()
    assert released == offsets  # all of them, each once, in order
    assert join.held_bytes == 0 and join.next == offsets[-1] + 1
    assert join.oldest_ms() is None and join.waiting_for() == []


def test_the_oldest_record_names_the_shards_it_waits_for_and_its_age() -> None:
    join: VoteJoin[str] = VoteJoin(3, 10)
    join.add_record(Pending(12, "a", 5000, 100))
    join.add_record(Pending(15, "b", 6000, 50))
    join.add_votes(12, votes(1), 7, 8)
    join.add_votes(15, votes(0), 8, 8)
    assert join.waiting_for() == [0, 2]
    assert join.oldest_ms() == 5000
    assert join.held_bytes == 166
    assert join.first_needed(99) == 7
    join.add_votes(12, votes(0), 9, 8)
    join.add_votes(12, votes(2), 10, 8)
    join.add_votes(12, votes(2), 11, 8)  # the same vote again counts once
    ready = join.ready()
    assert ready is not None and ready.offset == 12
    join.pop()
    assert join.waiting_for() == [1, 2] and join.oldest_ms() == 6000
    assert join.first_needed(99) == 8
    assert join.held_bytes == 58


def test_decided_records_and_their_late_votes_are_ignored() -> None:
    join: VoteJoin[str] = VoteJoin(1, 20)
    join.add_record(Pending(19, "old", 0, 10))
    join.add_votes(19, votes(0), 0, 5)
    assert join.ready() is None and join.held_bytes == 0
    join.add_record(Pending(21, "x", 0, 10))
    join.add_record(Pending(21, "x again", 0, 10))
    assert len(join.records) == 1


def decisions(n: int, id_len: int) -> FirstDecisions:
    entries = [
        (
            1000 + i,
            Decision(
                id=f"{i:0{id_len}d}",
                decision="duplicate",
                duplicate_of="o" * id_len,
                representative="r" * id_len,
                similarity=0.9,
                method="minhash",
            ),
        )
        for i in range(n)
    ]
    return FirstDecisions("site", 5000, entries, 1, 5000, True)


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 300), id_len=st.integers(1, 400), limit=st.integers(2000, 100_000))
def test_split_first_decisions_stay_under_the_limit_and_replay_to_the_same_state(
    n: int, id_len: int, limit: int
) -> None:
    change = decisions(n, id_len)
    packed = change.pack_parts(limit)
    parts = [FirstDecisions.unpack(p) for p in packed]
    assert [e for p in parts for e in p.entries] == change.entries
    assert parts[-1].watermark == change.watermark
    assert [p.reset for p in parts] == [True] + [False] * (len(parts) - 1)
    for p, data in zip(parts, packed, strict=True):
        assert len(data) <= limit or len(p.entries) == 1
    config = DedupConfig(home_shards=2, max_age_seconds=3850)  # keeps ts >= 1150
    whole, split = Gatherer(config), Gatherer(config)
    whole.apply(FirstDecisions.unpack(change.pack()))
    for p in parts:
        split.apply(p)
    assert len(whole) == len(split)


def test_five_hundred_duplicates_with_long_ids_exceed_one_message_and_are_split() -> None:
    change = decisions(500, 2000)  # ~6 MB as one record
    limit = 1_048_576
    assert len(change.pack()) > limit
    parts = change.pack_parts(limit)
    assert len(parts) > 1 and all(len(p) <= limit for p in parts)


@settings(max_examples=300, deadline=None)
@given(
    shards=st.integers(1, 6), records=st.integers(1, 12), budget=st.integers(5, 40), data=st.data()
)
def test_votes_ahead_of_the_records_stay_within_their_budget_and_are_read_again(
    shards: int, records: int, budget: int, data: st.DataObject
) -> None:
    """The votes topic holds, per record, one votes record per replica with the votes of the
    shards it holds (`pack_records`; one shard each is the case of one per shard). The gather
    adds each shard's votes with the record's offset, so over the budget a record can be
    kept in part; read again, the shards already held are ignored."""
    owner = data.draw(st.lists(st.integers(0, shards - 1), min_size=shards, max_size=shards))
    groups = [[s for s in range(shards) if owner[s] == r] for r in range(shards)]
    log = data.draw(st.permutations([(o, g) for o in range(records) for g in groups if g]))
    join: VoteJoin[int] = VoteJoin(shards, 0, ahead_budget=budget)
    read_records = read_votes = 0
    released: list[int] = []
    choices = iter(data.draw(st.lists(st.booleans(), max_size=200)))
    for _ in range(10_000):
        if len(released) == records:
            break
        take_record = next(choices, read_records <= read_votes)  # then alternate
        if take_record and read_records < records:
            join.add_record(Pending(read_records, read_records, 0, 1))
            read_records += 1
        elif read_votes < len(log):
            offset, group = log[read_votes]
            for shard in group:
                join.add_votes(offset, votes(shard), read_votes, 5)
            read_votes += 1
        assert join.ahead_bytes() <= budget
        while (ready := join.ready()) is not None:
            assert [v.shard for v in ready.votes] == list(range(shards))
            released.append(ready.offset)
            join.pop()
        assert join.first_needed(read_votes) <= read_votes
        again = join.rewind()
        if again is not None:
            read_votes = again  # the role seeks the votes consumer back
    assert released == list(range(records))


@pytest.mark.parametrize(
    "doc_id", ["plain", "近似重复", 'quote " and \\ slash', "lone \udc80 surrogate"]
)
def test_first_decisions_round_trip_every_id_json_allows(doc_id: str) -> None:
    """Every id a document can have (JSON allows a lone surrogate) reads back as it was,
    whole and split."""
    d = Decision(id=doc_id, decision="duplicate", duplicate_of=doc_id + "0", similarity=0.85)
    change = FirstDecisions("dom\udc81", 7, [(5, d), (6, d)], None, 7, False)
    assert FirstDecisions.unpack(change.pack()) == change
    parts = [FirstDecisions.unpack(p) for p in change.pack_parts(100)]
    assert [p.entries for p in parts] == [[(5, d)], [(6, d)]]
    assert [p.watermark for p in parts] == [5, 7]
    assert all(p.domain == change.domain for p in parts)


def test_a_record_decided_without_the_join_moves_its_next_past_it() -> None:
    join: VoteJoin[str] = VoteJoin(2, 5)
    join.decided(7)  # markers and others' aborted records may lie between
    assert join.next == 8
    join.add_record(Pending(7, "again", 0, 1))  # read again later: already decided
    assert not join.records
    with pytest.raises(ValueError, match="out of order"):
        join.decided(6)
    join.add_record(Pending(9, "held", 0, 1))
    with pytest.raises(ValueError, match="out of order"):
        join.decided(10)  # record 9 is undecided


def test_after_a_rewind_the_votes_commit_is_where_reading_starts_again() -> None:
    """Votes kept past a dropped votes record (on a record read meanwhile) must not move the
    commit past the record read again: a restart would skip the dropped votes."""
    join: VoteJoin[int] = VoteJoin(1, 0, ahead_budget=10)
    join.add_votes(3, votes(0), 0, 8)  # ahead of the records: kept
    join.add_votes(4, votes(0), 1, 8)  # over the budget: dropped, read again from 1
    join.add_record(Pending(3, 3, 0, 1))
    join.add_record(Pending(4, 4, 0, 1))
    join.add_votes(5, votes(0), 2, 4)  # kept
    ready = join.ready()
    assert ready is not None and ready.offset == 3
    join.pop()
    assert join.rewind() == 1  # the role seeks the votes consumer back to 1
    assert join.first_needed(1) == 1  # not 2, the first votes record still held


@settings(max_examples=400, deadline=None)
@given(
    shards=st.integers(2, 4),
    records=st.integers(4, 30),
    record_budget=st.integers(1, 6),
    votes_budget=st.integers(5, 30),
    data=st.data(),
)
def test_both_budgets_full_never_wait_on_each_other(
    shards: int, records: int, record_budget: int, votes_budget: int, data: st.DataObject
) -> None:
    """The role stops reading records while `record_bytes` is over its budget; each shard
    votes in log order at its own pace, so one shard's votes far ahead can fill the votes
    budget while another's, on the records read next, are dropped. Every record is still
    decided, each once, in order, with nothing read but what is there to read."""
    # The votes partition: each shard's votes in log order, the shards interleaved at will.
    turns = data.draw(
        st.permutations([s for s in range(shards) for _ in range(records)]), label="turns"
    )
    made = [0] * shards
    log: list[tuple[int, int]] = []
    for s in turns:
        log.append((made[s], s))
        made[s] += 1
    join: VoteJoin[int] = VoteJoin(shards, 0, ahead_budget=votes_budget)
    read_records = read_votes = 0
    released: list[int] = []
    choices = iter(data.draw(st.lists(st.booleans(), max_size=400), label="reads"))
    for _ in range(2 * records * len(log) + 100):  # at worst a pass over the votes a record
        if len(released) == records:
            break
        can_record = read_records < records and join.record_bytes < record_budget
        can_vote = read_votes < len(log)
        assert can_record or can_vote, f"stuck: released {released}, waiting {join.waiting_for()}"
        if can_record and (not can_vote or next(choices, True)):
            join.add_record(Pending(read_records, read_records, 0, 1))
            read_records += 1
        else:
            offset, shard = log[read_votes]
            join.add_votes(offset, votes(shard), read_votes, 5)
            read_votes += 1
        last = join.last_read
        assert join.ahead_bytes() == sum(b for o, b in join.vote_bytes.items() if o > last)
        assert join.ahead_bytes() <= votes_budget
        while (ready := join.ready()) is not None:
            released.append(ready.offset)
            join.pop()
        again = join.rewind()
        if again is not None:
            read_votes = again
    assert released == list(range(records))
