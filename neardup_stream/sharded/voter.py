"""One shard: engines (one per dedup domain) that store the shard's home documents and vote.

`ShardVoter.vote` runs a fingerprint batch through the engine of each document's domain:
every document is compared with the documents stored here, and the home documents of this
shard are stored (after their own comparison, so later documents of the batch see them).
Every shard sees every document, so each engine's event-time watermark, and with it
retention by age, is the same on every shard. Retention by count keeps
ceil(max_docs / home_shards) documents per shard and domain, so `max_docs` bounds each domain
across all shards (docs/engine-semantics.md, "max_docs"); likewise each shard keeps
ceil(bucket_cap / home_shards) live entries per bucket key (`DedupConfig.shard_bucket_cap`).

An engine lives only while it stores something: one left empty (a shard votes on every
document of a domain but stores only its home documents; age retention evicts the rest) is
freed, and only its watermark is kept (`idle`, a few bytes a domain), which a new engine of
that domain starts from. An engine's decisions depend on its stored documents and its
watermark only, so this changes no vote. A quiet domain (`sharded.quiet`) is forgotten
altogether, watermark included: its next document starts it afresh.
"""

from __future__ import annotations

import math

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.quiet import Segment, StreamClocks
from neardup_stream.sharded.votes import Votes

_REF_MASK = 0xFFFFFFFF


class Positions:
    """Position of every document an engine stores, by ref (refs are consecutive)."""

    def __init__(self) -> None:
        self.first = 0  # ref of positions[0]
        self.values = np.empty(0, dtype=np.int64)
        self.size = 0

    def add(self, first_ref: int, positions: np.ndarray) -> None:
        if self.size == 0:
            self.first = first_ref
        need = self.size + positions.size
        if need > self.values.size:
            grown = np.empty(max(need, self.values.size * 3 // 2, 1024), dtype=np.int64)
            grown[: self.size] = self.values[: self.size]
            self.values = grown
        self.values[self.size : need] = positions
        self.size = need

    def get(self, ref: int) -> int:
        return int(self.values[(ref - self.first) & _REF_MASK])

    def trim(self, base: int) -> None:
        """Forget positions of refs before `base` once they are half the array."""
        dead = (base - self.first) & _REF_MASK
        if dead > self.size:  # everything evicted
            dead = self.size
        if dead and dead * 2 >= self.size:
            self.values = self.values[dead : self.size].copy()
            self.size -= dead
            self.first = base

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


class ShardVoter:
    """Shard `shard` of `config.home_shards` (see the module docstring)."""

    def __init__(self, config: DedupConfig, shard: int) -> None:
        if not 0 <= shard < config.home_shards:
            raise ValueError(f"shard {shard} is not in 0..{config.home_shards - 1}")
        self.config, self.shard = config, shard
        per_shard = None
        if config.max_docs is not None:
            per_shard = math.ceil(config.max_docs / config.home_shards)
        self.engine_config = config.model_copy(
            update={"max_docs": per_shard, "bucket_cap": config.shard_bucket_cap}
        )
        self._engines: dict[str, tuple[Deduplicator, Positions]] = {}
        self.idle: dict[str, int] = {}  # watermark of each domain whose engine was freed
        self.clocks = StreamClocks(config)
        self.seen: dict[str, int] = {}  # every domain known here: its quiet-rule mark
        self.stream_of: dict[str, int | None] = {}  # and its stream

    def vote(self, fb: FingerprintBatch) -> Votes:
        """This shard's votes on `fb`, whose home documents it then stores."""
        return self.vote_and_record(fb, record=False)[0]

    def vote_and_record(
        self, fb: FingerprintBatch, record: bool = True
    ) -> tuple[Votes, list[ShardChange]]:
        """`vote`, plus (with `record`) the changes that replay what it stored (`apply`)."""
        if fb.config_id != self.config.fingerprint_id:
            raise ValueError(
                f"fingerprints made under config {fb.config_id:#010x}, "
                f"this shard uses {self.config.fingerprint_id:#010x}"
            )
        n, shards = len(fb), self.config.home_shards
        home = fb.homes(shards) == self.shard
        votes = Votes.none(self.shard, n)
        changes = []
        line = self.clocks.timeline(fb.stream, fb.docs.ts)
        for domain, rows in by_domain(fb.domains):
            for segment in self.clocks.segments(line, rows, self.seen.get(domain)):
                if segment.reset:
                    self.forget(domain)
                change = self._vote_domain(fb, domain, segment, home[segment.rows], votes, record)
                if change is not None:
                    changes.append(change)
                self.mark(domain, fb.stream, segment.seen)
                self.release_if_empty(domain)
        self.clocks.advance(line)
        self.sweep_now_and_then()
        return votes, changes

    def mark(self, domain: str, stream: int | None, seen: int) -> None:
        """`domain` (of `stream`; None: as before) was just seen at its stream's clock `seen`."""
        self.seen[domain] = seen
        if stream is not None or domain not in self.stream_of:
            self.stream_of[domain] = stream

    def forget(self, domain: str) -> None:
        """Drop everything of `domain` here (it went quiet), watermark included."""
        self._engines.pop(domain, None)
        self.idle.pop(domain, None)
        self.seen.pop(domain, None)
        self.stream_of.pop(domain, None)

    def sweep(self) -> list[str]:
        """Forget the quiet domains; which they were."""
        quiet = [d for d, at in self.seen.items() if self.clocks.quiet(self.stream_of[d], at)]
        for domain in quiet:
            self.forget(domain)
        self.clocks.swept()
        return quiet

    def sweep_now_and_then(self) -> list[str]:
        """`sweep` when `StreamClocks.sweep_due` (memory only: decisions never need it)."""
        return self.sweep() if self.clocks.sweep_due() else []

    def apply(self, change: ShardChange) -> None:
        """Replay one recorded change (a restore from the shard's changelog)."""
        if change.reset:
            self.forget(change.domain)
        engine, positions = self._engine(change.domain)
        first = (engine.store.base + engine.store.count) & _REF_MASK  # refs are consecutive
        if engine.apply_records(change.records) != len(change.records):
            raise ValueError(f"shard change of domain {change.domain!r} repeats stored ids")
        if change.records:
            positions.add(first, change.positions)
        engine.advance_to(change.watermark)
        positions.trim(engine.store.base)
        self.mark(change.domain, change.stream, max(change.seen, self.seen.get(change.domain, 0)))
        self.clocks.advance_to(change.stream, change.seen)
        self.release_if_empty(change.domain)
        # no sweep here: inside a record's changes the clock runs ahead of the live one (a
        # change carries its domain's last mark); `ReplicaVoter.add` sweeps once restored

    def engine(self, domain: str) -> tuple[Deduplicator, Positions]:
        """The engine of `domain` here and the positions of what it stores (made if new)."""
        return self._engine(domain)

    def holds(self, domain: str) -> bool:
        """Whether this shard has an engine for `domain` (it stores something of it)."""
        return domain in self._engines

    def domains(self) -> list[str]:
        """The domains this shard has an engine for, in the order they first came."""
        return list(self._engines)

    def release_if_empty(self, domain: str) -> bool:
        """Free `domain`'s engine if it stores nothing (keeping its watermark); whether it did."""
        held = self._engines.get(domain)
        if held is None or len(held[0]):
            return False
        self.idle[domain] = held[0].watermark
        del self._engines[domain]
        return True

    def _engine(self, domain: str) -> tuple[Deduplicator, Positions]:
        if domain not in self._engines:
            engine = Deduplicator(self.engine_config)
            watermark = self.idle.pop(domain, None)
            if watermark is not None:
                engine.advance_to(watermark)
            self._engines[domain] = (engine, Positions())
        return self._engines[domain]

    def _vote_domain(
        self,
        fb: FingerprintBatch,
        domain: str,
        segment: Segment,
        home: np.ndarray,
        votes: Votes,
        record: bool,
    ) -> ShardChange | None:
        rows = segment.rows
        engine, positions = self._engine(domain)
        batch = fb.rows(rows, home)
        vote = engine.vote(batch, records=record)
        out, stored = batch.decisions, batch.stored()
        if stored:  # refs of one batch are consecutive
            positions.add(int(out.ref[stored[0]]), fb.positions[rows[stored]])
        skip = batch.docs.skip
        votes.seen[rows] = skip & home
        votes.update[rows] = out.update & home
        for j in np.flatnonzero((out.match >= 0) & ~skip).tolist():
            r = int(rows[j])
            votes.match_position[r] = positions.get(int(out.match[j]))
            votes.similarity[r] = out.similarity[j]
            votes.method[r] = out.method[j]
            votes.match_ids[r] = vote.match_ids[j]
        positions.trim(engine.store.base)
        if not record:
            return None
        stored_at = fb.positions[rows[stored]]
        mark = (fb.stream, segment.seen, segment.reset)
        return ShardChange(domain, engine.watermark, stored_at, vote.records, *mark)

    def __len__(self) -> int:
        return sum(len(engine) for engine, _ in self._engines.values())

    def index_bytes(self) -> int:
        return sum(e.index_bytes() + p.nbytes for e, p in self._engines.values())

    def index_entries(self) -> int:
        """LSH and SimHash table entries over this shard's domains."""
        return sum(int(e.index.entries) for e, _ in self._engines.values())


def by_domain(domains: list[str]) -> list[tuple[str, np.ndarray]]:
    """Rows of each domain, in order; one group without copying when there is one domain."""
    first = domains[0] if domains else ""
    if all(d == first for d in domains):
        return [(first, np.arange(len(domains)))] if domains else []
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(domains):
        groups.setdefault(d, []).append(i)
    return [(d, np.array(rows, dtype=np.int64)) for d, rows in groups.items()]
