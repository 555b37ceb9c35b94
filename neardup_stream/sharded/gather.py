"""The gather step: S votes per document -> its decision, in position order.

The best vote wins: an exact copy first (the earliest one), otherwise the highest
similarity, ties going to the earliest position. That is the rule one engine applies to its
own candidates, so one shard (S = 1) decides exactly like `Deduplicator`. Votes only name
earlier documents, so `duplicate_of` always points back in the log and two documents are never
duplicates of each other.

The gather step keeps the first decision of each document (per domain) for two things: a
document whose home shard has seen its id before with the same content gets that first
decision again, and a duplicate's `representative` is its match's representative. An id its
home shard holds with other content is an update: decided afresh (marked `update`), and its
decision replaces the id's first decision. These entries expire by the
engine's retention rules (age from the event-time watermark, then count); a replay whose first
decision has expired here is decided afresh. A quiet domain (`sharded.quiet`) is forgotten
here as on the shards, with the same clock: that of the fingerprint-log partition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.index.columns import EXACT, UNIQUE
from neardup_stream.models import METHODS, Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.decision_window import DecisionWindow
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.quiet import StreamClocks
from neardup_stream.sharded.votes import Votes


class _Part(NamedTuple):
    """One domain's first decisions in a batch, made without forgetting it between."""

    domain: str
    state: DecisionWindow
    reset: bool
    entries: list[tuple[int, Decision]]


class Gatherer:
    """Decides documents from the votes of all `config.home_shards` shards."""

    def __init__(self, config: DedupConfig) -> None:
        self.config = config
        self._domains: dict[str, DecisionWindow] = {}
        self.clocks = StreamClocks(config)

    def decide(self, fb: FingerprintBatch, votes: Sequence[Votes]) -> list[Decision]:
        """Decisions of `fb`'s documents; `votes` holds one `Votes` of `fb` per shard."""
        return self.decide_and_record(fb, votes)[0]

    def decide_and_record(
        self, fb: FingerprintBatch, votes: Sequence[Votes]
    ) -> tuple[list[Decision], list[FirstDecisions]]:
        """`decide`, plus the changes that replay its state (`apply`), one per domain."""
        shards = self.config.home_shards
        by_shard = sorted(votes, key=lambda v: v.shard)
        if [v.shard for v in by_shard] != list(range(shards)):
            raise ValueError(
                f"need one vote per shard 0..{shards - 1}, got {[v.shard for v in votes]}"
            )
        if any(v.match_position.size != len(fb) for v in by_shard):
            raise ValueError("votes do not cover the fingerprint batch")
        out: list[Decision] = []
        parts: list[_Part] = []
        part_of: dict[str, _Part] = {}
        homes = fb.homes(shards)
        won = winners(by_shard)
        line = self.clocks.timeline(fb.stream, fb.docs.ts)
        before, after = line.before.tolist(), line.after.tolist()
        # per document, as Python values once (numpy scalars one by one cost more than this)
        rows = np.arange(len(fb))
        at_home = (homes, rows)
        seen = np.stack([v.seen for v in by_shard])[at_home].tolist()
        update = np.stack([v.update for v in by_shard])[at_home].tolist()
        stamps = fb.docs.ts.tolist()
        picked = _Picked(won.shard.tolist(), won.method.tolist(), won.similarity.tolist())
        for i, (doc_id, domain) in enumerate(zip(fb.ids, fb.domains, strict=True)):
            state = self._domains.get(domain)
            fresh = state is None or self.clocks.quiet_at(state.seen, before[i])
            if state is None or fresh:
                state = self._domains[domain] = DecisionWindow(fb.stream)
            if fresh or domain not in part_of:
                part_of[domain] = _Part(domain, state, fresh, [])
                parts.append(part_of[domain])
            made = part_of[domain].entries
            ts = stamps[i]
            if ts > state.watermark:
                state.watermark = ts
            state.seen = after[i]
            again = state.decision(doc_id) if seen[i] else None
            if again is not None:
                out.append(again)
                continue
            decision = self._fresh(doc_id, i, by_shard, picked, state, update[i])
            state.remember(ts, decision, self.config)
            made.append((ts, decision))
            out.append(decision)
        self.clocks.advance(line)
        self._sweep_now_and_then()
        return out, [
            FirstDecisions(p.domain, p.state.watermark, p.entries, fb.stream, p.state.seen, p.reset)
            for p in parts
        ]

    def apply(self, change: FirstDecisions) -> None:
        """Replay one recorded change (a restore from the gather changelog)."""
        state = self._domains.get(change.domain)
        if state is None or change.reset:
            state = self._domains[change.domain] = DecisionWindow(change.stream)
        for ts, decision in change.entries:
            state.watermark = max(state.watermark, ts)
            state.remember(ts, decision, self.config)
        state.watermark = max(state.watermark, change.watermark)
        state.seen = max(state.seen, change.seen)
        if change.stream is not None:
            state.stream = change.stream
        self.clocks.advance_to(change.stream, change.seen)
        state.expire(self.config)
        # no sweep here (see `ShardVoter.apply`): `swept` once the restore is complete

    def swept(self) -> Gatherer:
        """This gatherer, its quiet domains forgotten (a restore's last step)."""
        self.sweep()
        return self

    def sweep(self) -> int:
        """Forget the quiet domains (`sharded.quiet`); how many there were."""
        quiet = [d for d, s in self._domains.items() if self.clocks.quiet(s.stream, s.seen)]
        for domain in quiet:
            del self._domains[domain]
        self.clocks.swept()
        return len(quiet)

    def _sweep_now_and_then(self) -> None:
        if self.clocks.sweep_due():
            self.sweep()

    def domains(self) -> int:
        """The domains it keeps state for."""
        return len(self._domains)

    @staticmethod
    def _fresh(
        doc_id: str, i: int, votes: list[Votes], won: _Picked, state: DecisionWindow, update: bool
    ) -> Decision:
        shard, method = won.shard[i], won.method[i]
        if shard < 0 or method == UNIQUE:
            return Decision(id=doc_id, decision="unique", update=update)
        match = votes[shard].match_ids[i]
        assert match is not None
        return Decision(
            id=doc_id,
            decision="duplicate",
            duplicate_of=match,
            representative=state.representative(match),
            similarity=round(float(np.float32(won.similarity[i])), 6),  # as one engine rounds
            method=METHODS[method - 1],
            update=update,
        )

    def __len__(self) -> int:
        return sum(len(d) for d in self._domains.values())


class Winners(NamedTuple):
    """Per document of a batch: the shard whose vote wins (-1: no vote names a match), and
    that vote's similarity and method."""

    shard: np.ndarray  # int64[n]
    similarity: np.ndarray  # float64[n]
    method: np.ndarray  # int64[n]


class _Picked(NamedTuple):
    """`Winners` as Python lists, read document by document."""

    shard: list[int]
    method: list[int]
    similarity: list[float]


def winners(votes: Sequence[Votes]) -> Winners:
    """The vote one engine would have chosen among all shards' candidates, for every
    document at once: an exact copy first (the earliest), otherwise the highest similarity,
    ties going to the earliest position; the first shard keeps a full tie."""
    n = votes[0].match_position.size if votes else 0
    shard = np.full(n, -1, dtype=np.int64)
    sim = np.zeros(n, dtype=np.float64)
    method = np.zeros(n, dtype=np.int64)
    pos = np.zeros(n, dtype=np.int64)
    for v in votes:
        cand = v.match_position >= 0
        v_exact = v.method == EXACT
        same = v_exact == (method == EXACT)  # as exact as the best so far
        earlier = v.match_position < pos
        closer = (v.similarity > sim) | ((v.similarity == sim) & earlier)
        better = (shard < 0) | np.where(same, np.where(v_exact, earlier, closer), v_exact)
        take = cand & better
        shard[take] = v.shard
        sim[take] = v.similarity[take]
        method[take] = v.method[take]
        pos[take] = v.match_position[take]
    return Winners(shard, sim, method)
