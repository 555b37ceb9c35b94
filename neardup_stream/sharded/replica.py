"""The shards one replica holds, probed through one merged candidate table: `ReplicaVoter`.

§3.5a of docs/design/scale-out.md. Each shard keeps its own engine per domain (store, id
registry, positions: the unit of ownership, retention and restore, a `ShardVoter`), but the
band and block keys of all of them live in one table per domain (`merged_kernels`), so a
document costs one probe per replica instead of one per shard. Its votes are exactly those
of the shards' own `ShardVoter`s: entries are tagged with their shard, the bucket cap counts
per (key, shard), and candidates are verified against their shard's store and window.

Shards come and go at runtime (`add`: e.g. just restored from its changelog by a plain
`ShardVoter`, whose table entries then move into the merged table; `remove`: its entries
are dropped). A shard's engine of a domain that stores nothing after a vote is freed
(`ShardVoter.release_if_empty`), and a domain's merged table with it once no held shard has an
engine of that domain: memory follows the domains with documents in the window. `vote_and_record` may let only some held shards vote on a batch (a shard that
restored later resumes at an earlier record than the others).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from numba.typed import List

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.columns import WINDOW
from neardup_stream.index.doc_store import DocStore
from neardup_stream.index.shards import ShardedIndex
from neardup_stream.models import Decision
from neardup_stream.sharded import merged_kernels as mk
from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.voter import Positions, ShardVoter, by_domain
from neardup_stream.sharded.votes import Votes

_MASK32 = 0xFFFFFFFF
_NONE = np.empty(0, dtype=np.int64)  # positions of a change that stored nothing
Engine = tuple[Deduplicator, Positions]  # a shard's engine of one domain, and its positions


class ReplicaVoter:
    """Shards of `config.home_shards` held together (see the module docstring)."""

    def __init__(self, config: DedupConfig, shards: Iterable[int] = ()) -> None:
        self.config = config
        self.bits = 32 - max(1, (config.home_shards - 1).bit_length())
        self._voters: dict[int, ShardVoter] = {}
        self._tables: dict[str, BucketTable] = {}
        self._dead: dict[str, int] = {}  # evictions per domain since its table was compacted
        self._lists: dict[str, tuple[list[int], List]] = {}
        self._bound: dict[str, tuple[tuple[tuple[int, ...], tuple[bool, ...]], np.ndarray]] = {}
        self._slot_of = np.full(config.home_shards, -1, dtype=np.int64)
        template = ShardVoter(config, 0).engine_config
        self._template = Deduplicator(template)  # limits and rules of every shard's engines
        self._empty = DocStore(config.sketch_bits // 64, template.max_age_seconds is not None)
        self._order: list[int] = []
        for s in shards:
            self.add(ShardVoter(config, s))

    @property
    def shards(self) -> list[int]:
        """The shards held, in slot order (ascending)."""
        return list(self._order)

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
        self._voters[voter.shard] = voter
        self._relayout()
        for domain in voter.domains():
            engine, _ = voter.engine(domain)
            keys, refs = engine.index.key_refs()
            st = engine.store
            self._check_room(voter.shard, domain, st.count)
            age = (refs.astype(np.int64) - st.base) & _MASK32
            live = np.flatnonzero(age < st.count)
            order = live[np.argsort(age[live], kind="stable")]  # oldest first, as stored
            table = self._table(domain)
            rows = table.rows
            table.reserve(int(np.bincount(keys[order] % rows, minlength=rows).max(initial=0)))
            mk.merged_insert_all(
                table.arrays,
                np.ascontiguousarray(keys[order]),
                np.ascontiguousarray(refs[order]),
                voter.shard,
                self.config.bucket_cap,
                st.window,
                self.bits,
            )
            engine.index = ShardedIndex(self.config.shards, self.config.bucket_cap)

    def remove(self, shard: int) -> None:
        """Stop holding `shard` (moved to another replica): its entries are dropped."""
        if shard not in self._voters:
            raise ValueError(f"shard {shard} is not held here")
        del self._voters[shard]
        self._relayout()
        if not self._voters:
            self._tables.clear()
            self._lists.clear()
            self._bound.clear()
            return
        for domain, table in list(self._tables.items()):
            mk.merged_compact(table.arrays, self._slot_of, self._windows(domain), self.bits)
            self._dead[domain] = 0
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
        chosen = self._order if shards is None else sorted(set(shards))
        for s in chosen:
            if s not in self._voters:
                raise ValueError(f"shard {s} is not held here")
        voting = np.isin(np.array(self._order, dtype=np.int64), chosen)
        n = len(fb)
        out: dict[int, tuple[Votes, list[ShardChange]]] = {}
        for s in chosen:
            votes = Votes.none(s, n)
            out[s] = (votes, [])
        if not chosen:
            return out
        homes = self._slot_of[fb.homes(self.config.home_shards)]
        homes[homes >= 0] = np.where(voting[homes[homes >= 0]], homes[homes >= 0], -1)
        for domain, rows in by_domain(fb.domains):
            self._vote_domain(fb, domain, rows, homes[rows], voting, record, out)
            self._release_empty(domain)
        return out

    def _release_empty(self, domain: str) -> None:
        """Free the held shards' engines of `domain` that store nothing, and the domain's
        merged table once no held shard has an engine of it."""
        freed = [s for s in self._order if self._voters[s].release_if_empty(domain)]
        if not freed:
            return
        self._bound.pop(domain, None)
        self._lists.pop(domain, None)
        if not any(self._voters[s].holds(domain) for s in self._order):
            self._tables.pop(domain, None)
            self._dead.pop(domain, None)

    def domain_engines(self) -> int:
        """Engines over the held shards and domains (only those storing something)."""
        return sum(len(v.domains()) for v in self._voters.values())

    def _vote_domain(
        self,
        fb: FingerprintBatch,
        domain: str,
        rows: np.ndarray,
        home: np.ndarray,
        voting: np.ndarray,
        record: bool,
        out: dict[int, tuple[Votes, list[ShardChange]]],
    ) -> None:
        m, k = rows.size, len(self._order)
        batch = fb.rows(rows, home >= 0)
        homed: dict[int, list[int]] = {}  # slot -> its home rows
        for j, h in enumerate(home.tolist()):
            if h >= 0:
                homed.setdefault(h, []).append(j)
        engines = self._engines(domain, homed)
        at_home = {slot: held[0] for slot, held in enumerate(engines) if held and slot in homed}
        found: list[int | None] = [None] * m
        for slot, mine in homed.items():  # an id is known only at its home
            engine = at_home[slot]
            refs = engine.registry.find_all([batch.ids[j] for j in mine], engine.store)
            for j, ref in zip(mine, refs, strict=True):
                if ref is not None:
                    found[j] = slot << 32 | ref
        batch.mark_known(
            found, lambda tagged: at_home[tagged >> 32].store.exact_of(tagged & _MASK32)
        )
        docs = batch.docs
        docs.prior[docs.prior >= 0] &= _MASK32  # the home shard's own ref
        known = np.zeros(m, dtype=np.bool_)
        known[list(batch.known)] = True
        repeat = np.zeros(m, dtype=np.bool_)
        repeat[list(batch.repeat_of)] = True
        for engine in at_home.values():
            engine.store.reserve(m)
        stores = self._store_list(domain, engines)
        wins = self._windows(domain, engines)
        if int(wins["count"].max()) + m >= 1 << self.bits:
            fullest = int(wins["count"].argmax())
            self._check_room(self._order[fullest], domain, int(wins["count"][fullest]) + m)
        votes = mk.SlotVotes(
            np.full((m, k), -1, dtype=np.int64),
            np.zeros((m, k), dtype=np.float64),
            np.zeros((m, k), dtype=np.int64),
        )
        order = np.array(self._order, dtype=np.int64)
        run = mk.RunArgs(voting, order, self.bits, self._template._limits, self._template._rules)
        table = self._table(domain)
        width = docs.keys.shape[1]
        decisions = batch.decisions
        kernel_docs = docs._replace(skip=repeat)
        i = 0
        while i < m:
            table.reserve(max(width, (m - i) * width // table.rows) + 64)
            args = (kernel_docs, known, home, decisions, votes, table.arrays)
            i = mk.vote_batch(i, m, *args, stores, wins, self._slot_of, run)
        matched = set(np.flatnonzero((votes.match >= 0).any(axis=0)).tolist())
        seen = (known | repeat).tolist()
        refs, updates = decisions.ref.tolist(), decisions.update.tolist()
        at = fb.positions[rows]
        window = {name: wins[name].tolist() for name in ("base", "count", "watermark", "evicted")}
        for slot, held in enumerate(engines):
            if not voting[slot]:
                continue
            shard_votes, changes = out[self._order[slot]]
            if held is None:  # stores nothing of the domain: only its watermark moved
                self._voters[self._order[slot]].idle[domain] = window["watermark"][slot]
                if record:
                    changes.append(ShardChange(domain, window["watermark"][slot], _NONE, []))
                continue
            engine, positions = held
            st = engine.store
            stored = [j for j in homed.get(slot, ()) if not seen[j]]
            made = []
            for j in stored:
                st.record(refs[j], batch.ids[j], None, None)
                if record:
                    decision = Decision(id=batch.ids[j], decision="unique", update=updates[j])
                    made.append(engine._record(batch, j, decision, None))
            if stored:  # refs of one batch are consecutive
                positions.add(refs[stored[0]], at[stored])
                engine.registry.add([refs[j] for j in stored], [batch.ids[j] for j in stored])
            for j in homed.get(slot, ()):
                shard_votes.seen[rows[j]] = seen[j]
                shard_votes.update[rows[j]] = updates[j]
            if slot in matched:
                for j in np.flatnonzero(votes.match[:, slot] >= 0).tolist():
                    ref, r = int(votes.match[j, slot]), int(rows[j])
                    shard_votes.match_position[r] = positions.get(ref)
                    shard_votes.similarity[r] = votes.similarity[j, slot]
                    shard_votes.method[r] = votes.method[j, slot]
                    shard_votes.match_ids[r] = st.doc_id(ref)
            if window["evicted"][slot]:
                st.trim_blob()
                if window["evicted"][slot] > max(4096, window["count"][slot]):
                    engine.registry.compact(window["base"][slot], window["count"][slot])
                    self._dead[domain] += window["evicted"][slot]
                    wins["evicted"][slot] = 0
                positions.trim(window["base"][slot])
            if record:
                stored_at = at[stored] if stored else _NONE
                changes.append(ShardChange(domain, window["watermark"][slot], stored_at, made))
        if self._dead[domain] > max(4096, sum(window["count"])):
            mk.merged_compact(table.arrays, self._slot_of, wins, self.bits)
            self._dead[domain] = 0

    def _relayout(self) -> None:
        self._lists.clear()
        self._order = sorted(self._voters)
        self._slot_of[:] = -1
        self._slot_of[self._order] = np.arange(len(self._order))

    def _table(self, domain: str) -> BucketTable:
        if domain not in self._tables:
            self._tables[domain] = BucketTable(self.config.bucket_cap, self.config.shards, 16)
            self._dead[domain] = 0
        return self._tables[domain]

    def _engines(self, domain: str, homed: Iterable[int] = ()) -> list[Engine | None]:
        """Per slot, the shard's engine of `domain`; made for the `homed` slots (they store),
        None where a shard stores nothing of the domain (it votes through an empty window)."""
        made = set(homed)
        return [
            v.engine(domain) if slot in made or v.holds(domain) else None
            for slot, v in enumerate(self._voters[s] for s in self._order)
        ]

    def _windows(self, domain: str, engines: list[Engine | None] | None = None) -> np.ndarray:
        """The held shards' store windows of `domain`, one `WINDOW` row per slot: the stores
        read and write their rows in place (rebound when the shards held, or which of them
        have an engine of `domain`, changed). A slot without an engine has an empty window at
        the watermark its shard keeps for the domain."""
        engines = self._engines(domain) if engines is None else engines
        key = (tuple(self._order), tuple(e is None for e in engines))
        bound = self._bound.get(domain)
        if bound is not None and bound[0] == key:
            return bound[1]
        wins = np.zeros(len(engines), dtype=WINDOW)
        for slot, held in enumerate(engines):
            if held is None:
                idle = self._voters[self._order[slot]].idle.get(domain)
                wins[slot]["watermark"] = 0 if idle is None else idle
                continue
            store = held[0].store
            wins[slot] = store.window[0]
            store.window = wins[slot : slot + 1]
        self._bound[domain] = (key, wins)
        return wins

    def _store_list(self, domain: str, engines: list[Engine | None]) -> List:
        """Typed list of the slots' store columns (an empty store where a slot has no engine);
        a slot whose store was reallocated since is replaced alone (boxing a whole list per
        batch would cost more than the probe)."""
        stores_of = [self._empty if e is None else e[0].store for e in engines]
        key = [id(st.exact) for st in stores_of]
        cached = self._lists.get(domain)
        if cached is None or len(cached[0]) != len(key):
            stores = List()
            for st in stores_of:
                stores.append(st.arrays())
            self._lists[domain] = (key, stores)
            return stores
        old, stores = cached
        for slot, st in enumerate(stores_of):
            if old[slot] != key[slot]:
                stores[slot] = st.arrays()
                old[slot] = key[slot]
        return stores

    def _check_room(self, shard: int, domain: str, count: int) -> None:
        if count >= 1 << self.bits:
            raise ValueError(
                f"shard {shard} would hold {count} documents of domain {domain!r}, more than a "
                f"merged table addresses at home_shards = {self.config.home_shards} "
                f"(2**{self.bits}); set max_docs or max_age_seconds"
            )

    def __len__(self) -> int:
        return sum(len(v) for v in self._voters.values())

    def index_bytes(self) -> int:
        tables = sum(t.nbytes for t in self._tables.values())
        return tables + sum(v.index_bytes() for v in self._voters.values())

    def shard_bytes(self) -> dict[int, int]:
        """Per held shard: its own state plus its share of the merged tables (by entries)."""
        out = {s: v.index_bytes() for s, v in self._voters.items()}
        for table in self._tables.values():
            _, refs = table.entries()
            tags = np.bincount(refs >> np.uint32(self.bits), minlength=self.config.home_shards)
            for s in out:
                out[s] += int(table.nbytes * tags[s] / max(1, refs.size))
        return out

    def index_entries(self) -> int:
        """Entries of the merged tables (over all held shards and domains)."""
        return sum(len(t) for t in self._tables.values())
