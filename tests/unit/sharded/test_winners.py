"""The gather's choice among the shards' votes, for a whole batch at once, against the
rule one engine applies to its candidates, written out one document at a time."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.index.columns import EXACT, MINHASH, SIMHASH, UNIQUE
from neardup_stream.sharded.gather import winners
from neardup_stream.sharded.votes import Votes


def _rule(votes: list[Votes], i: int) -> tuple[int, float, int] | None:
    """An exact copy beats any estimate, the earliest exact copy wins; otherwise the
    highest similarity, a tie going to the earliest position; a full tie to the first
    shard. None when no vote names a match."""
    found = [
        (v.shard, float(v.similarity[i]), int(v.method[i]), int(v.match_position[i]))
        for v in votes
        if v.match_position[i] >= 0
    ]
    if not found:
        return None
    exact = [f for f in found if f[2] == EXACT]
    if exact:
        best = min(exact, key=lambda f: (f[3], f[0]))
    else:
        best = min(found, key=lambda f: (-f[1], f[3], f[0]))
    return best[0], best[1], best[2]


_vote = st.tuples(
    st.integers(-1, 12),  # match position (-1: no match)
    st.sampled_from([0.5, 0.75, 0.8, 0.9, 1.0]),  # few values: ties are common
    st.sampled_from([EXACT, SIMHASH, MINHASH, UNIQUE]),
)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6).flatmap(lambda s: st.lists(
    st.lists(_vote, min_size=s, max_size=s), min_size=0, max_size=8)))  # fmt: skip
def test_the_winner_of_every_document_is_the_one_engine_would_choose(
    rows: list[list[tuple[int, float, int]]],
) -> None:
    shards = len(rows[0]) if rows else 1
    votes = [Votes.none(s, len(rows)) for s in range(shards)]
    for i, row in enumerate(rows):
        for s, (pos, sim, method) in enumerate(row):
            votes[s].match_position[i], votes[s].similarity[i] = pos, sim
            votes[s].method[i] = method
    won = winners(votes)
    for i in range(len(rows)):
        expected = _rule(votes, i)
        got = None if won.shard[i] < 0 else (int(won.shard[i]), won.similarity[i], won.method[i])
        assert got == expected, (i, rows[i])
