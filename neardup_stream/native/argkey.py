"""The key of a kernel call's argument types: what an ahead-of-time export is valid for.

An export built with pycc unboxes its arguments as the types it was compiled for, without
checking them (an int64 array passed where float64 was compiled is misread, not refused).
So a call takes an export only when the key of its arguments equals the export's key, which
names what numba's `typeof` distinguishes: an array's dtype (fields included), dimensions,
layout and writability; scalars' types; tuples and NamedTuples (by class) item by item.
Anything else (None, lists, typed containers) has no key: such a call goes to the JIT.

Keys are nested tuples of strings, ints and bools, stored in the build's manifest as JSON
(`to_json` / `from_json`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

Key = tuple[Any, ...]
_INT64 = (-(1 << 63), 1 << 63)


@functools.lru_cache(maxsize=512)
def _dtype(dtype: np.dtype[Any]) -> str:
    """A dtype's name in keys (a record dtype's `repr(descr)` takes ~6 us: kept per dtype)."""
    return repr(dtype.descr) if dtype.fields else dtype.str


def value_key(value: object) -> Any:
    """The key of one argument, or None when it has none."""
    t = type(value)
    if t is np.ndarray:
        a: np.ndarray = value  # type: ignore[assignment]
        flags = a.flags
        layout = "C" if flags.c_contiguous else "F" if flags.f_contiguous else "A"
        return ("array", _dtype(a.dtype), a.ndim, layout, bool(flags.writeable))
    if t is bool:
        return ("bool",)
    if t is int:
        return ("int",) if _INT64[0] <= value < _INT64[1] else None  # type: ignore[operator]
    if t is float:
        return ("float",)
    if isinstance(value, np.generic) and not isinstance(value, np.void):
        return ("scalar", value.dtype.str)
    if isinstance(value, tuple):
        items = tuple(value_key(v) for v in value)
        if any(i is None for i in items):
            return None
        name = "" if t is tuple else f"{t.__module__}.{t.__qualname__}"
        return ("tuple", name, items)
    return None


def call_key(args: tuple[Any, ...]) -> Key | None:
    """The key of a call's positional arguments, or None when one of them has none."""
    items = tuple(value_key(a) for a in args)
    return None if any(i is None for i in items) else items


def to_json(key: Any) -> Any:
    """Lists for tuples (JSON has no tuples)."""
    return [to_json(k) for k in key] if isinstance(key, tuple) else key


def from_json(data: Any) -> Any:
    """The key `to_json` wrote, as nested tuples again."""
    return tuple(from_json(d) for d in data) if isinstance(data, list) else data
