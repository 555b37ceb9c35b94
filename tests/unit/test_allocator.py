"""`keep_freed_memory`: glibc's thresholds raised by the commands, unless the user set them."""

import os
import platform
import subprocess
import sys

import pytest

from neardup_stream import allocator
from neardup_stream.allocator import USER_VARIABLES, keep_freed_memory

_GLIBC = platform.libc_ver()[0] == "glibc"


class _Mallopt:
    """Records the calls a real `mallopt` would get (this test process keeps its own)."""

    def __init__(self, answer: int = 1) -> None:
        self.calls: list[tuple[int, int]] = []
        self.answer = answer

    def __call__(self, option: int, value: int) -> int:
        self.calls.append((option, value))
        return self.answer


@pytest.fixture
def mallopt(monkeypatch: pytest.MonkeyPatch) -> _Mallopt:
    fake = _Mallopt()
    monkeypatch.setattr(allocator, "_mallopt", lambda: fake)
    return fake


def test_both_thresholds_are_set(mallopt: _Mallopt) -> None:
    assert keep_freed_memory({}) is True
    assert mallopt.calls == [
        (allocator.M_MMAP_THRESHOLD, allocator.MMAP_THRESHOLD),
        (allocator.M_TRIM_THRESHOLD, allocator.TRIM_THRESHOLD),
    ]


@pytest.mark.parametrize(
    "environ",
    [{name: "131072"} for name in USER_VARIABLES]
    + [
        {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"},
        {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=65536"},
    ],
)
def test_the_users_own_tuning_wins(mallopt: _Mallopt, environ: dict[str, str]) -> None:
    assert keep_freed_memory(environ) is False
    assert mallopt.calls == []


def test_other_tunables_are_not_the_users_thresholds(mallopt: _Mallopt) -> None:
    assert keep_freed_memory({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) is True


def test_a_refused_value_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_mallopt", lambda: _Mallopt(answer=0))
    assert keep_freed_memory({}) is False


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoMallopt:
        def __init__(self, _name: object) -> None:
            pass

        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    monkeypatch.setattr(allocator.ctypes, "CDLL", NoMallopt)
    assert allocator._mallopt() is None
    assert keep_freed_memory({}) is False


_BATCHES = """
import resource, sys
import numpy as np
from neardup_stream.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def batch():
    blocks = [np.ones(1 << 20) for _ in range(3)]  # 8 MiB each, written
    del blocks
for _ in range(3):  # warm: glibc has adjusted its thresholds
    batch()
before = faults()
for _ in range(10):
    batch()
print(faults() - before)
"""


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
def test_freed_blocks_stay_mapped_for_the_next_batch() -> None:
    """Three 8 MiB blocks of a batch, freed, come back to the next batch without faulting
    their pages in again. With glibc's own thresholds (raised to 8 MiB by the first free, the
    trim threshold to 16 MiB) part of the 24 MiB freed at the heap's top goes back to the
    system and faults in again: ~1,000 pages every batch here. Both in fresh processes,
    without any allocator tuning of the environment's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in USER_VARIABLES and k not in ("GLIBC_TUNABLES", "LD_PRELOAD")
    }

    def faults(mode: str) -> int:
        run = [sys.executable, "-c", _BATCHES, mode]
        return int(subprocess.check_output(run, text=True, env=env))

    assert faults("keep") < 100
    assert faults("default") > 10 * 250  # the default really hands it back (else: no proof)
