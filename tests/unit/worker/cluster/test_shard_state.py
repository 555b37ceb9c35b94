"""The shard role's state (`neardup_stream.worker.cluster.shard_state`): whatever shards come, go, are cleared
and vote, every vote and change equals that of the shard's own `ShardVoter`."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from neardup_stream.config import DedupConfig
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.worker.cluster.shard_state import RestoredShard, ShardState
from tests.unit.sharded.test_replica import batches
from tests.unit.sharded.test_sharded import corpus

SHARDS = 4
CONFIGS = [
    DedupConfig(home_shards=SHARDS, max_age_seconds=2000),
    DedupConfig(home_shards=SHARDS, max_docs=200),
]


@cache
def log(which: int) -> list[FingerprintBatch]:
    """One fingerprint log (two domains, near-copies, replays), one batch per record."""
    docs = corpus(1200, seed=41, replays=0.08, timed=True, jitter=200)
    return batches(CONFIGS[which], docs, size=30)


class Reference:
    """Separate voters, one per shard, each voting on every record in order: the truth."""

    def __init__(self, config: DedupConfig, records: list[FingerprintBatch]) -> None:
        self.config, self.records = config, records
        self.voters = {s: ShardVoter(config, s) for s in range(SHARDS)}
        self.packed: dict[int, list[tuple[bytes, list[bytes]]]] = {s: [] for s in range(SHARDS)}
        self.changes: dict[int, list[bytes]] = {s: [] for s in range(SHARDS)}

    def upto(self, shard: int, offset: int) -> None:
        """Shard `shard` has voted on every record before `offset`."""
        while len(self.packed[shard]) < offset:
            votes, changes = self.voters[shard].vote_and_record(
                self.records[len(self.packed[shard])]
            )
            packed = [c.pack() for c in changes]
            self.packed[shard].append((votes.pack(), packed))
            self.changes[shard] += packed

    def restored(self, shard: int, offset: int) -> RestoredShard:
        """Shard `shard` rebuilt from its changes of the records before `offset`."""
        self.upto(shard, offset)
        voter = ShardVoter(self.config, shard)
        for _, changes in self.packed[shard][:offset]:
            for data in changes:
                voter.apply(ShardChange.unpack(data))
        return RestoredShard(voter, {0: offset})


step = st.one_of(
    st.tuples(st.just("add"), st.integers(0, SHARDS - 1), st.integers(0, 10)),
    st.tuples(st.just("drop"), st.integers(0, SHARDS - 1)),
    st.tuples(st.just("clear")),
    st.tuples(st.just("vote"), st.integers(1, 6)),
)


@pytest.mark.parametrize("which", range(len(CONFIGS)))
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=14))
def test_votes_equal_separate_voters_after_any_adds_drops_clears_and_votes(
    which: int, steps: list[tuple]
) -> None:
    config, records = CONFIGS[which], log(which)
    ref = Reference(config, records)
    state = ShardState(config)
    at = 0  # the reader's next record
    for s in steps:
        if s[0] == "add" and s[1] not in state:
            # a shard restores to its committed checkpoint, which is at most where the reader is
            offset = min(s[2], at)
            state.add(ref.restored(s[1], offset))
            at = min(at, state.resume_at(0))  # the role seeks the log back to the laggard
        elif s[0] == "drop":
            state.drop(s[1])
        elif s[0] == "clear":
            state.clear()
        elif s[0] == "vote":
            for _ in range(s[1]):
                if at >= len(records):
                    break
                for shard, votes, changes in state.vote(0, at, records[at]):
                    ref.upto(shard, at + 1)
                    assert (votes.pack(), [c.pack() for c in changes]) == ref.packed[shard][at]
                assert all(state.next(shard)[0] >= at + 1 for shard in state)
                at += 1
    for shard in state:  # what each shard stores is what its own voter stores at that point
        assert state.documents(shard) == len(ref.restored(shard, state.next(shard)[0]).voter)


def test_a_late_shard_votes_alone_until_it_catches_up_and_the_state_reports_it() -> None:
    config, records = CONFIGS[0], log(0)
    ref = Reference(config, records)
    state = ShardState(config)
    for s in (0, 2):
        state.add(ref.restored(s, 6))
    state.add(ref.restored(1, 3))
    assert list(state) == [0, 1, 2] and len(state) == 3 and state.resume_at(0) == 3
    voted = [[v.shard for v in state.vote(0, k, records[k])] for k in range(3, 8)]
    assert voted == [[1], [1], [1], [0, 1, 2], [0, 1, 2]]
    ref.upto(1, 8)
    assert state.documents(1) == len(ref.voters[1]) and state.documents() > 0
    assert state.index_entries() > 0 and state.index_bytes() > 0 and state.domain_engines() == 6
    state.skip_to(0, 20)
    assert state.resume_at(0) == 20 and state.vote(0, 10, records[10]) == []
    state.drop(1)
    state.drop(3)  # not owned: nothing happens
    assert list(state) == [0, 2]
    state.clear()
    assert len(state) == 0 and state.documents() == 0 and state.resume_at(0) == 0
