"""The merged tables' bookkeeping (`neardup_stream.sharded.merged_tables`): the slot layout,
the bound windows and store lists, the room check and the accounting."""

from __future__ import annotations

import numpy as np
import pytest

from neardup_stream.config import DedupConfig
from neardup_stream.models import Document
from neardup_stream.sharded.merged_tables import MergedTables, engines_of
from neardup_stream.sharded.replica import ReplicaVoter
from neardup_stream.sharded.voter import ShardVoter
from tests.unit.sharded.test_replica import batches

CONFIG = DedupConfig(home_shards=4)


def tables() -> MergedTables:
    return MergedTables(CONFIG, ShardVoter(CONFIG, 0).engine_config)


def test_held_shards_get_one_slot_each_in_ascending_order() -> None:
    merged = tables()
    merged.relayout([3, 1])
    assert merged.order == [1, 3] and merged.slot_of.tolist() == [-1, 0, -1, 1]
    merged.relayout([2])
    assert merged.order == [2] and merged.slot_of.tolist() == [-1, -1, 0, -1]
    assert merged.bits == 30  # 4 home shards: 2 bits of the 32-bit ref tag the shard


def test_a_shard_over_the_addressable_documents_is_refused_naming_the_settings() -> None:
    merged = tables()
    merged.check_room(1, "a", (1 << merged.bits) - 1)
    with pytest.raises(ValueError, match=r"shard 1 would hold .* 'a'.*set max_docs"):
        merged.check_room(1, "a", 1 << merged.bits)


def test_windows_are_bound_once_per_layout_and_rebound_when_an_engine_appears() -> None:
    merged, voters = tables(), [ShardVoter(CONFIG, 0), ShardVoter(CONFIG, 1)]
    merged.relayout([0, 1])
    voters[1].idle["a"] = 77  # its engine of "a" was freed at that watermark
    engines = engines_of(voters, "a", homed=[0])
    assert engines[0] is not None and engines[1] is None
    wins = merged.windows("a", engines, lambda slot: voters[slot].idle.get("a"))
    assert wins["watermark"].tolist() == [0, 77]
    assert engines[0][0].store.window.base is wins  # the store writes its row in place
    assert merged.windows("a", engines, lambda slot: None) is wins  # bound: not rebuilt
    again = engines_of(voters, "a", homed=[0, 1])
    assert merged.windows("a", again, lambda slot: None) is not wins
    merged.unbind("a")
    assert merged.windows("a", again, lambda slot: None) is not wins


def test_store_lists_are_reused_and_a_slot_is_replaced_only_when_its_store_moved() -> None:
    merged, voters = tables(), [ShardVoter(CONFIG, 0), ShardVoter(CONFIG, 1)]
    merged.relayout([0, 1])
    engines = engines_of(voters, "a", homed=[0])
    first = merged.store_list("a", engines)
    assert len(first) == 2 and merged.store_list("a", engines) is first
    store = engines[0][0].store
    before = store.exact
    store.reserve(10 * len(before) + 1_000)  # reallocates its columns
    assert store.exact is not before
    assert merged.store_list("a", engines) is first  # the same list, its slot 0 replaced
    assert np.shares_memory(first[0][0], store.arrays()[0])
    assert not np.shares_memory(first[0][0], before)


def test_tables_account_entries_and_each_shards_share() -> None:
    merged = tables()
    assert merged.entries() == 0 and merged.nbytes() == 0 and merged.shares([0, 1]) == {0: 0, 1: 0}
    table = merged.table("a")
    assert merged.table("a") is table and merged.dead == {"a": 0}
    merged.drop("a")
    assert merged.tables == {} and merged.dead == {}
    replica = ReplicaVoter(CONFIG, [0, 2])
    docs = [Document(id=f"d{i}", text=f"document number {i} " * 8) for i in range(120)]
    for fb in batches(CONFIG, docs):
        replica.vote(fb)
    per_shard = replica.shard_bytes()
    assert replica.index_entries() > 0 and set(per_shard) == {0, 2}
    own = sum(replica.voter(s).index_bytes() for s in (0, 2))
    shared = sum(per_shard.values()) - own
    assert 0 < shared <= replica.index_bytes() - own  # the tables' bytes, split by entries
