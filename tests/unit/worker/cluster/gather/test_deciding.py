"""The gather's pure halves (`neardup_stream.worker.cluster.gather.deciding`): batch assembly, commits, progress."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neardup_stream.sharded.join import Joined, Pending, VoteJoin
from neardup_stream.sharded.votes import Votes
from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.gather.deciding import assemble, commits, progress
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint

SHARDS = 2


def join_with(offsets: list[int], voted: set[int], start: int = 0) -> VoteJoin[str]:
    """A join holding log records `offsets`; those in `voted` have every shard's vote."""
    join: VoteJoin[str] = VoteJoin(SHARDS, start)
    for o in offsets:
        join.add_record(Pending(o, f"doc@{o}", 1_000 + o, 10))
    at = 100
    for o in offsets:
        if o in voted:
            for s in range(SHARDS):
                join.add_votes(o, Votes.none(s, 1), at, 5)
                at += 1
    return join


def test_a_partition_is_decided_in_log_order_up_to_its_first_record_without_votes() -> None:
    joins = {0: join_with([0, 1, 2, 3], {0, 1, 3}), 1: join_with([5, 6], {5, 6})}
    seen: list[tuple[int, int]] = []
    n = assemble(joins, 100, 1 << 20, lambda: 0, lambda p, r: seen.append((p, r.offset)) or True)
    assert n == 4 and seen == [(0, 0), (0, 1), (1, 5), (1, 6)]
    assert joins[0].next == 2 and [r.offset for r in joins[0].records] == [2, 3]


def test_a_record_decide_cannot_take_yet_stops_its_partition_and_stays_held() -> None:
    joins = {0: join_with([0, 1, 2], {0, 1, 2}), 1: join_with([5], {5})}
    seen: list[tuple[int, int]] = []

    def decide(p: int, ready: Joined[str]) -> bool:
        if (p, ready.offset) == (0, 1):
            return False  # e.g. its payloads are not read yet
        seen.append((p, ready.offset))
        return True

    assert assemble(joins, 100, 1 << 20, lambda: 0, decide) == 2
    assert seen == [(0, 0), (1, 5)]
    assert joins[0].next == 1 and [r.offset for r in joins[0].records] == [1, 2]


def test_the_record_that_crosses_the_byte_cap_is_the_last_of_the_batch() -> None:
    joins = {0: join_with(list(range(10)), set(range(10)))}
    size = [0]

    def decide(p: int, ready: Joined[str]) -> bool:
        size[0] += 40
        return True

    assert assemble(joins, 100, 100, lambda: size[0], decide) == 3  # 40, 80, 120 >= 100


@given(
    layout=st.dictionaries(
        st.integers(0, 5),
        st.tuples(st.integers(0, 12), st.sets(st.integers(0, 11))),
        max_size=4,
    ),
    max_records=st.integers(1, 30),
)
def test_assembly_never_skips_a_record_nor_passes_the_record_cap(
    layout: dict[int, tuple[int, set[int]]], max_records: int
) -> None:
    joins = {p: join_with(list(range(n)), voted) for p, (n, voted) in layout.items()}
    seen: dict[int, list[int]] = {}
    n = assemble(
        joins,
        max_records,
        1 << 30,
        lambda: 0,
        lambda p, r: seen.setdefault(p, []).append(r.offset) or True,
    )
    assert n == sum(len(v) for v in seen.values()) <= max_records
    for p, offsets in seen.items():
        assert offsets == list(range(len(offsets)))  # a prefix of the log: nothing skipped
        assert all(o in layout[p][1] for o in offsets)  # only records every shard voted on
        assert joins[p].next == len(offsets)
    if n < max_records:  # not capped: every partition stopped at a record without votes
        for p, (count, voted) in layout.items():
            decided = len(seen.get(p, []))
            assert decided == count or decided not in voted


@given(
    count=st.integers(0, 10),
    voted=st.sets(st.integers(0, 9)),
    unread=st.integers(0, 100),
)
def test_the_commit_keeps_every_vote_still_needed_and_the_checkpoint_is_the_next_record(
    count: int, voted: set[int], unread: int
) -> None:
    join = join_with(list(range(count)), voted)
    # The votes consumer's position is past every vote it read (they sit at 100, 101, ...).
    position = 100 + SHARDS * len(voted & set(range(count))) + unread
    assemble({3: join}, 100, 1 << 30, lambda: 0, lambda p, r: True)
    resume = PayloadCheckpoint(7, (9, 11))
    (commit,) = commits({3: join}, {3: position}, {3: resume}).values()
    assert checkpoint.decode(commit.metadata) == {3: join.next}
    assert checkpoint.decode_payloads(commit.metadata) == {3: resume}
    held = [at for o, at in join.votes_at.items() if o >= join.next]
    assert commit.offset == min([*held, position])  # a restart reads every held vote again


def test_progress_counts_held_and_unread_records_and_names_the_shard_waited_for() -> None:
    join = join_with([4, 5, 6], {4}, start=4)
    join.add_votes(5, Votes.none(1, 1), 200, 5)  # shard 0 has not voted on 5 yet
    assemble({0: join}, 10, 1 << 20, lambda: 0, lambda p, r: True)
    found = progress(join, end=20, position=7, stopped=False, now_ms=1_005_000)
    assert found.lag == 2 + 13 and found.waiting_for == 0
    assert found.oldest_age_s == (1_005_000 - 1_005) / 1000
    stopped = progress(join, end=20, position=7, stopped=True, now_ms=1_005_000)
    assert stopped.lag == 20 - 5  # from the next record to decide: the reader ran ahead
    empty = progress(join_with([], set()), end=None, position=None, stopped=False, now_ms=0)
    assert empty == (0, 0.0, None)
