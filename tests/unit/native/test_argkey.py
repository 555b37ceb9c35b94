"""Argument keys tell apart every argument type an export could misread."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neardup_stream.native.argkey import call_key, from_json, to_json, value_key


class Pair(NamedTuple):
    a: np.ndarray
    n: int


class Other(NamedTuple):
    a: np.ndarray
    n: int


def test_arrays_differ_by_dtype_dimensions_layout_and_writability() -> None:
    a = np.zeros((4, 4), dtype=np.uint64)
    readonly = a.copy()
    readonly.flags.writeable = False
    record = np.zeros(1, dtype=[("base", "<i8"), ("count", "<i8")])
    variants = [
        a,
        a.astype(np.int64),
        a.ravel(),
        np.asfortranarray(a),
        a[:, ::2],
        readonly,
        record,
        np.zeros(1, dtype=[("base", "<i8"), ("start", "<i8")]),
    ]
    keys = [value_key(v) for v in variants]
    assert None not in keys
    assert len(set(keys)) == len(keys)
    assert value_key(a.copy()) == value_key(a)


def test_scalars_and_tuples() -> None:
    assert value_key(True) != value_key(1) != value_key(1.0)
    assert value_key(np.uint64(1)) != value_key(np.int64(1))
    x = np.zeros(3)
    assert value_key(Pair(x, 1)) != value_key(Other(x, 1)) != value_key((x, 1))
    assert value_key(Pair(x, 1)) == value_key(Pair(np.ones(3), 7))


def test_what_has_no_key_has_no_export() -> None:
    for value in (None, [1, 2], {"a": 1}, 1 << 70, "text", (np.zeros(2), None)):
        assert value_key(value) is None
    assert call_key((np.zeros(2), [1])) is None
    assert call_key((np.zeros(2), 1)) is not None


def test_keys_survive_the_manifest() -> None:
    key = call_key((Pair(np.zeros((2, 3), dtype=np.uint32), 1), np.zeros(1, dtype=[("b", "<i8")])))
    assert from_json(to_json(key)) == key
