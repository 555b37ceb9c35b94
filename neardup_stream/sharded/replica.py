"""The shards one replica holds, probed through one merged candidate table: `ReplicaVoter`.

docs/design/scale-out.md, "One merged candidate table per replica". Each shard keeps its
own engine per domain (store, id registry, positions: the unit of ownership, retention and restore, a `ShardVoter`), but the
band and block keys of all of them live in one table per domain (`merged_kernels`), so a
document costs one probe per replica instead of one per shard. Its votes are exactly those
of the shards' own `ShardVoter`s: entries are tagged with their shard, the bucket cap counts
per (key, shard), and candidates are verified against their shard's store and window.

Shards come and go at runtime (`add`: e.g. just restored from its changelog by a plain
`ShardVoter`, whose table entries then move into the merged table; `remove`: its entries
are dropped). A shard's engine of a domain that stores nothing after a vote is freed
(`ShardVoter.release_if_empty`), and a domain's merged table with it once no held shard has an
engine of that domain: memory follows the domains with documents in the window. A quiet
domain (`sharded.quiet`) is forgotten by the voting shards, and its entries leave the table.
`vote_and_record` may let only some held shards vote on a batch (a shard that restored later
resumes at an earlier record than the others).

This module is the facade: which shards are held and who votes. The tables' bookkeeping is
`merged_tables` (`MergedTables`), one domain's vote through them `domain_vote`.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.sharded import merged_kernels as mk
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.domain_vote import MASK32, Voted, vote_domain
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.merged_tables import Engine, MergedTables, engines_of
from neardup_stream.sharded.voter import ShardVoter, by_domain
from neardup_stream.sharded.votes import Votes

__all__ = ["Engine", "ReplicaVoter"]


class ReplicaVoter:
    """Shards of `config.home_shards` held together (see the module docstring)."""

    def __init__(self, config: DedupConfig, shards: Iterable[int] = ()) -> None:
        self.config = config
        self._voters: dict[int, ShardVoter] = {}
        template = ShardVoter(config, 0).engine_config
        self._template = Deduplicator(template)  # limits and rules of every shard's engines
        self._merged = MergedTables(config, template)
        self.bits = self._merged.bits
        for s in shards:
            self.add(ShardVoter(config, s))

    @property
    def shards(self) -> list[int]:
        """The shards held, in slot order (ascending)."""
        return list(self._merged.order)

    def voter(self, shard: int) -> ShardVoter:
        """The held shard's own state (store, registry, positions; its table is merged)."""
        return self._voters[shard]

    def add(self, voter: ShardVoter) -> None:
        """Hold `voter`'s shard from now on; its table entries move into the merged tables,
        so from then on `voter` is this replica's (use it through `voter(shard)` only)."""
        if voter.config != self.config:
            raise ValueError(f"shard {voter.shard} runs under other dedup settings")
        if voter.shard in self._voters:
            raise ValueError(f"shard {voter.shard} is held already")
        voter.sweep()
        self._voters[voter.shard] = voter
        self._merged.relayout(self._voters)
        for domain in voter.domains():
            engine, _ = voter.engine(domain)
            keys, refs = engine.index.key_refs()
            st = engine.store
            self._merged.check_room(voter.shard, domain, st.count)
            age = (refs.astype(np.int64) - st.base) & MASK32
            live = np.flatnonzero(age < st.count)
            order = live[np.argsort(age[live], kind="stable")]  # oldest first, as stored
            table = self._merged.table(domain)
            rows = table.rows
            table.reserve(int(np.bincount(keys[order] % rows, minlength=rows).max(initial=0)))
            mk.merged_insert_all(
                table.arrays,
                np.ascontiguousarray(keys[order]),
                np.ascontiguousarray(refs[order]),
                voter.shard,
                self._merged.cap,
                st.window,
                self.bits,
            )
            engine.index = ShardedIndex(self.config.shards, self._merged.cap)

    def remove(self, shard: int) -> None:
        """Stop holding `shard` (moved to another replica): its entries are dropped."""
        if shard not in self._voters:
            raise ValueError(f"shard {shard} is not held here")
        del self._voters[shard]
        self._merged.relayout(self._voters)
        if not self._voters:
            self._merged.clear()
            return
        for domain in list(self._merged.tables):
            self._merged.compact(domain, self._windows(domain))
            self._release_empty(domain)

    def vote(self, fb: FingerprintBatch) -> dict[int, Votes]:
        """Every held shard's votes on `fb` (whose home documents they then store)."""
        return {s: v for s, (v, _) in self.vote_and_record(fb, record=False).items()}

    def vote_and_record(
        self, fb: FingerprintBatch, record: bool = True, shards: Iterable[int] | None = None
    ) -> dict[int, tuple[Votes, list[ShardChange]]]:
        """Per voting shard (all held, or `shards`): what `ShardVoter.vote_and_record` gives."""
        if fb.config_id != self.config.fingerprint_id:
            raise ValueError(
                f"fingerprints made under config {fb.config_id:#010x}, "
                f"this replica uses {self.config.fingerprint_id:#010x}"
            )
        held = self._merged.order
        chosen = held if shards is None else sorted(set(shards))
        for s in chosen:
            if s not in self._voters:
                raise ValueError(f"shard {s} is not held here")
        voting = np.isin(np.array(held, dtype=np.int64), chosen)
        n = len(fb)
        out: Voted = {}
        for s in chosen:
            votes = Votes.none(s, n)
            out[s] = (votes, [])
        if not chosen:
            return out
        homes = self._merged.slot_of[fb.homes(self.config.home_shards)]
        homes[homes >= 0] = np.where(voting[homes[homes >= 0]], homes[homes >= 0], -1)
        voting_voters = [self._voters[s] for s in chosen]
        lead = voting_voters[0]  # the voting shards are at the same place in the log
        line = lead.clocks.timeline(fb.stream, fb.docs.ts)
        for domain, rows in by_domain(fb.domains):
            for segment in lead.clocks.segments(line, rows, _mark(voting_voters, domain)):
                if segment.reset:
                    self._forget(domain, chosen)
                voters = self._in_slots()
                args = (fb, domain, segment, homes[segment.rows], voting, record, out)
                vote_domain(self._merged, voters, self._template, *args)
                for voter in voting_voters:
                    voter.mark(domain, fb.stream, segment.seen)
                self._release_empty(domain)
        for voter in voting_voters:
            voter.clocks.advance(line)
            for domain in voter.sweep_now_and_then():
                self._refit(domain)
        return out

    def sweep(self) -> None:
        """Forget the quiet domains of every held shard now (`ShardVoter.sweep`)."""
        for voter in self._voters.values():
            for domain in voter.sweep():
                self._refit(domain)

    def _forget(self, domain: str, shards: Iterable[int]) -> None:
        """`shards` forget `domain` (quiet, or unknown to the first of them)."""
        for s in shards:
            self._voters[s].forget(domain)
        self._refit(domain)

    def _refit(self, domain: str) -> None:
        """Some held shard dropped its engine of `domain`: its entries leave the table."""
        self._merged.unbind(domain)
        if domain not in self._merged.tables:
            return
        if any(v.holds(domain) for v in self._voters.values()):
            self._merged.compact(domain, self._windows(domain))
        else:
            self._merged.drop(domain)

    def _release_empty(self, domain: str) -> None:
        """Free the held shards' engines of `domain` that store nothing, and the domain's
        merged table once no held shard has an engine of it."""
        order = self._merged.order
        freed = [s for s in order if self._voters[s].release_if_empty(domain)]
        if not freed:
            return
        self._merged.unbind(domain)
        if not any(self._voters[s].holds(domain) for s in order):
            self._merged.drop(domain)

    def domain_engines(self) -> int:
        """Engines over the held shards and domains (only those storing something)."""
        return sum(len(v.domains()) for v in self._voters.values())

    def _in_slots(self) -> list[ShardVoter]:
        """The held shards, one per slot."""
        return [self._voters[s] for s in self._merged.order]

    def _windows(self, domain: str) -> np.ndarray:
        """The held shards' store windows of `domain` (`MergedTables.windows`)."""
        voters = self._in_slots()
        engines: list[Engine | None] = engines_of(voters, domain)
        return self._merged.windows(domain, engines, lambda slot: voters[slot].idle.get(domain))

    def __len__(self) -> int:
        return sum(len(v) for v in self._voters.values())

    def index_bytes(self) -> int:
        return self._merged.nbytes() + sum(v.index_bytes() for v in self._voters.values())

    def shard_bytes(self) -> dict[int, int]:
        """Per held shard: its own state plus its share of the merged tables (by entries)."""
        shares = self._merged.shares(self._voters)
        return {s: v.index_bytes() + shares[s] for s, v in self._voters.items()}

    def index_entries(self) -> int:
        """Entries of the merged tables (over all held shards and domains)."""
        return self._merged.entries()


def _mark(voters: list[ShardVoter], domain: str) -> int | None:
    """`domain`'s quiet-rule mark among the voting shards that know it (they agree; one
    restored without the domain's records does not make the others forget it)."""
    marks = [v.seen[domain] for v in voters if domain in v.seen]
    return max(marks) if marks else None
