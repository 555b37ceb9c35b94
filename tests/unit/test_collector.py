"""`freeze_start_up`: what exists is frozen (full collections skip it); what comes later is not."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from neardup_stream.collector import freeze_start_up


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the test process goes on collecting as before


class _Node:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def test_what_start_up_built_is_frozen_and_what_comes_later_is_collected(unfrozen: None) -> None:
    built = [_Node() for _ in range(100)]
    frozen = freeze_start_up()
    # other threads of the test process (clients left by earlier tests) may free frozen
    # objects meanwhile: the count can only fall
    assert frozen >= 100 and 100 <= gc.get_freeze_count() <= frozen
    tracked = {id(o) for o in gc.get_objects()}  # the generations a collection traverses
    assert not any(id(node) in tracked for node in built)

    later = _Node()
    assert id(later) in {id(o) for o in gc.get_objects()}
    gone = weakref.ref(later)
    del later
    gc.collect()
    assert gone() is None  # a cycle made after the freeze is still freed


def test_garbage_of_start_up_is_collected_before_freezing(unfrozen: None) -> None:
    gone = weakref.ref(_Node())  # unreachable at once: only a collection frees the cycle
    assert gone() is not None
    freeze_start_up()
    assert gone() is None  # freed, not frozen for the life of the process
