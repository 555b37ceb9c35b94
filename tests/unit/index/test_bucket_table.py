from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup_stream.index.bucket_table import BucketTable

# Keys that repeat, keys that share a bucket (equal low bits), and arbitrary keys.
KEYS = st.one_of(
    st.integers(0, 20),
    st.integers(0, 20).map(lambda k: (k << 20) | 5),
    st.integers(0, 2**32 - 1),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(KEYS, max_size=3000), st.integers(1, 5))
def test_probe_returns_exactly_what_was_inserted(keys: list[int], rows: int) -> None:
    table = BucketTable(cap=10**6, rows=rows)
    model: dict[int, list[int]] = defaultdict(list)
    for ref, key in enumerate(keys):
        table.insert(np.array([key], dtype=np.uint32), np.array([ref], dtype=np.uint32))
        model[key].append(ref)
    assert len(table) == len(keys)
    for key, refs in model.items():
        got = table.probe(np.array([key], dtype=np.uint32))
        assert sorted(got.tolist()) == refs
    absent = next(k for k in range(10**6) if k not in model)
    assert table.probe(np.array([absent], dtype=np.uint32)).size == 0


def test_growth_keeps_entries() -> None:
    table = BucketTable(cap=4)
    keys = np.arange(100_000, dtype=np.uint32) * np.uint32(2654435761)
    for ref, key in enumerate(keys):
        table.insert(np.array([key]), np.array([ref], dtype=np.uint32))
    assert len(table) == 100_000
    assert table.arrays.heads.size * 4 >= len(table)
    assert table.probe(keys[12345:12346]).tolist() == [12345]


def test_bucket_cap_bounds_hot_keys_keeping_the_newest_refs() -> None:
    table = BucketTable(cap=3)
    for ref in range(10):
        table.insert(np.array([7], dtype=np.uint32), np.array([ref], dtype=np.uint32))
    assert len(table) == 3
    assert sorted(table.probe(np.array([7], dtype=np.uint32)).tolist()) == [7, 8, 9]


def test_compact_drops_refs_outside_the_window_and_cap_counts_live_only() -> None:
    table = BucketTable(cap=2)
    for ref in range(2):
        table.insert(np.array([5], dtype=np.uint32), np.array([ref], dtype=np.uint32), 0, ref + 1)
    table.insert(np.array([5], dtype=np.uint32), np.array([2], dtype=np.uint32), 2, 1)
    assert sorted(table.probe(np.array([5], dtype=np.uint32)).tolist()) == [0, 1, 2]
    table.compact(base=2, count=1)
    assert table.probe(np.array([5], dtype=np.uint32)).tolist() == [2]


def test_from_entries_round_trip() -> None:
    table = BucketTable(cap=8)
    for ref in range(500):
        table.insert(
            np.array([ref % 37, ref % 11 + 1000], dtype=np.uint32),
            np.array([ref, ref], dtype=np.uint32),
        )
    keys, refs = table.entries()
    again = BucketTable.from_entries(8, 1, keys, refs)
    for key in (3, 1005):
        q = np.array([key], dtype=np.uint32)
        assert sorted(again.probe(q).tolist()) == sorted(table.probe(q).tolist())
