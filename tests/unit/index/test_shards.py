import numpy as np

from neardup_stream import Deduplicator, Document
from neardup_stream.index.shards import ShardedIndex
from tests.unit.conftest import mutate, random_text


def test_keys_route_to_their_shard_and_probe_returns_inserted_refs() -> None:
    index = ShardedIndex(shards=3, bucket_cap=8)
    keys = np.array([0, 1, 2, 3, 4, 5, 3_000_000_001], dtype=np.uint32)
    index.insert(keys, ref=42, base=0, count=100)
    for shard in index.shards:
        mine = keys[index.owner(keys) == shard.shard_id]
        assert len(shard) == mine.size
        assert sorted(shard.probe(mine).tolist()) == [42] * mine.size
    assert sorted(index.probe(keys[:2]).tolist()) == [42, 42]
    assert index.probe(np.array([7], dtype=np.uint32)).size == 0


def test_a_shard_answers_for_the_deduplicators_keys() -> None:
    dedup = Deduplicator()
    base = random_text(3)
    dedup.check_batch([Document(id="a", text=base)])
    fps = dedup.fingerprinter.batch([mutate(base, 0.01, 4)])
    keys = np.concatenate((fps.simhash_keys[0], fps.lsh_keys[0]))
    assert 0 in dedup.index.probe(keys).tolist()
    stored = dedup.fingerprinter.batch([base])
    shared = np.intersect1d(keys, np.concatenate((stored.simhash_keys[0], stored.lsh_keys[0])))
    assert 0 < shared.size < keys.size  # a near-copy shares some keys, not all
    owner = dedup.index.owner(keys)
    answering = {s.shard_id for s in dedup.index.shards if s.probe(keys[owner == s.shard_id]).size}
    assert answering == set(dedup.index.owner(shared).tolist())  # exactly the shared keys' owners
