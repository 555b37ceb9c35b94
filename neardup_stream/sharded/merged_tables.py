"""The bookkeeping of a replica's merged candidate tables: `MergedTables`.

docs/design/scale-out.md, "One merged candidate table per replica". It owns what the
merged tables of the held shards need besides the shards' own engines: the slot layout (the held shards in ascending order, and
`slot_of[shard]`, -1 where not held), one `BucketTable` per domain and the evictions since
it was compacted, the shards' store windows of a domain bound into one `WINDOW` array the
kernels read and write in place, the typed list of their store columns (rebuilt per slot
only when a store was reallocated), the room check (a shard holds fewer than 2**bits
documents of a domain) and the accounting of the tables' bytes and entries.
`neardup_stream.sharded.replica.ReplicaVoter` drives it; `merged_kernels` holds the kernels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
from numba.typed import List

from neardup_stream.config import DedupConfig
from neardup_stream.deduplicator import Deduplicator
from neardup_stream.index.bucket_table import BucketTable
from neardup_stream.index.columns import WINDOW
from neardup_stream.index.doc_store import DocStore
from neardup_stream.sharded import merged_kernels as mk
from neardup_stream.sharded.voter import Positions, ShardVoter

Engine = tuple[Deduplicator, Positions]  # a shard's engine of one domain, and its positions
_Bound = tuple[tuple[tuple[int, ...], tuple[bool, ...]], np.ndarray]  # layout key, windows


def engines_of(
    voters: list[ShardVoter], domain: str, homed: Iterable[int] = ()
) -> list[Engine | None]:
    """Per slot (`voters` in slot order), the shard's engine of `domain`; made for the
    `homed` slots (they store), None where a shard stores nothing of the domain (it votes
    through an empty window)."""
    made = set(homed)
    return [
        v.engine(domain) if slot in made or v.holds(domain) else None
        for slot, v in enumerate(voters)
    ]


class MergedTables:
    """The merged tables of the held shards and their slot layout (module docstring)."""

    def __init__(self, config: DedupConfig, template: DedupConfig) -> None:
        self.config = config
        self.cap = template.bucket_cap  # each shard's cap per key (`shard_bucket_cap`)
        self.bits = 32 - max(1, (config.home_shards - 1).bit_length())
        self.tables: dict[str, BucketTable] = {}
        self.dead: dict[str, int] = {}  # evictions per domain since its table was compacted
        self.order: list[int] = []  # the held shards, one per slot, ascending
        self.slot_of = np.full(config.home_shards, -1, dtype=np.int64)
        self._lists: dict[str, tuple[list[int], List]] = {}
        self._bound: dict[str, _Bound] = {}
        self._empty = DocStore(config.sketch_bits // 64, template.max_age_seconds is not None)

    def relayout(self, shards: Iterable[int]) -> None:
        """The held shards changed: one slot per shard, in ascending order."""
        self._lists.clear()
        self.order = sorted(shards)
        self.slot_of[:] = -1
        self.slot_of[self.order] = np.arange(len(self.order))

    def clear(self) -> None:
        """No shard is held any more: every table goes."""
        self.tables.clear()
        self._lists.clear()
        self._bound.clear()

    def unbind(self, domain: str) -> None:
        """Some engine of `domain` was freed: its windows and store list are bound again."""
        self._bound.pop(domain, None)
        self._lists.pop(domain, None)

    def drop(self, domain: str) -> None:
        """No held shard has an engine of `domain` any more: its table goes."""
        self.tables.pop(domain, None)
        self.dead.pop(domain, None)

    def table(self, domain: str) -> BucketTable:
        if domain not in self.tables:
            self.tables[domain] = BucketTable(self.cap, self.config.shards, 16)
            self.dead[domain] = 0
        return self.tables[domain]

    def compact(self, domain: str, wins: np.ndarray) -> None:
        """Drop the entries of `domain`'s table no held shard's window keeps."""
        mk.merged_compact(self.tables[domain].arrays, self.slot_of, wins, self.bits)
        self.dead[domain] = 0

    def windows(
        self, domain: str, engines: list[Engine | None], idle: Callable[[int], int | None]
    ) -> np.ndarray:
        """The held shards' store windows of `domain`, one `WINDOW` row per slot: the stores
        read and write their rows in place (rebound when the shards held, or which of them
        have an engine of `domain`, changed). A slot without an engine has an empty window at
        the watermark its shard keeps for the domain (`idle(slot)`)."""
        key = (tuple(self.order), tuple(e is None for e in engines))
        bound = self._bound.get(domain)
        if bound is not None and bound[0] == key:
            return bound[1]
        wins = np.zeros(len(engines), dtype=WINDOW)
        for slot, held in enumerate(engines):
            if held is None:
                watermark = idle(slot)
                wins[slot]["watermark"] = 0 if watermark is None else watermark
                continue
            store = held[0].store
            wins[slot] = store.window[0]
            store.window = wins[slot : slot + 1]
        self._bound[domain] = (key, wins)
        return wins

    def store_list(self, domain: str, engines: list[Engine | None]) -> List:
        """Typed list of the slots' store columns (an empty store where a slot has no engine);
        a slot whose store was reallocated since is replaced alone (boxing a whole list per
        batch would cost more than the probe)."""
        stores_of = [self._empty if e is None else e[0].store for e in engines]
        key = [id(st.exact) for st in stores_of]
        cached = self._lists.get(domain)
        if cached is None or len(cached[0]) != len(key):
            stores = mk.new_store_list(stores_of[0].arrays())
            for st in stores_of[1:]:
                mk.append_store(stores, st.arrays())
            self._lists[domain] = (key, stores)
            return stores
        old, stores = cached
        for slot, st in enumerate(stores_of):
            if old[slot] != key[slot]:
                mk.set_store(stores, slot, st.arrays())
                old[slot] = key[slot]
        return stores

    def check_room(self, shard: int, domain: str, count: int) -> None:
        if count >= 1 << self.bits:
            raise ValueError(
                f"shard {shard} would hold {count} documents of domain {domain!r}, more than a "
                f"merged table addresses at home_shards = {self.config.home_shards} "
                f"(2**{self.bits}); set max_docs or max_age_seconds"
            )

    def nbytes(self) -> int:
        return sum(t.nbytes for t in self.tables.values())

    def entries(self) -> int:
        """Entries over all domains."""
        return sum(len(t) for t in self.tables.values())

    def shares(self, shards: Iterable[int]) -> dict[int, int]:
        """Per shard: its share of the tables' bytes (by entries)."""
        out = dict.fromkeys(shards, 0)
        for table in self.tables.values():
            _, refs = table.entries()
            tags = np.bincount(refs >> np.uint32(self.bits), minlength=self.config.home_shards)
            for s in out:
                out[s] += int(table.nbytes * tags[s] / max(1, refs.size))
        return out
