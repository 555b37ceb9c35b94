"""`keep_freed_memory`: glibc's thresholds raised by the commands, unless the user set them."""

import ctypes
import platform
import subprocess
import sys

import pytest

from neardup_stream.allocator import USER_VARIABLES, keep_freed_memory

_GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.parametrize("name", USER_VARIABLES)
def test_the_users_own_tuning_wins(name: str) -> None:
    assert keep_freed_memory({name: "131072"}) is False


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
def test_glibc_takes_the_thresholds() -> None:
    assert keep_freed_memory({}) is True


@pytest.mark.skipif(not _GLIBC, reason="mallopt is glibc's")
def test_freed_blocks_stay_mapped_for_the_next_batch() -> None:
    """Three 8 MiB blocks of a batch, freed, come back to the next batch without faulting
    their pages in again. With glibc's own thresholds (raised to 8 MiB by the first free, the
    trim threshold to 16 MiB) part of the 24 MiB freed at the heap's top goes back to the
    system and faults in again: ~1,000 pages every batch here."""
    code = """
import resource, sys
import numpy as np
from neardup_stream.allocator import keep_freed_memory
if sys.argv[1] == "keep":
    keep_freed_memory({})
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
    kept = int(subprocess.check_output([sys.executable, "-c", code, "keep"], text=True))
    default = int(subprocess.check_output([sys.executable, "-c", code, "default"], text=True))
    assert kept < 100
    assert default > 10 * 250  # the default really returns it (else this proves nothing)


def test_a_c_library_without_mallopt_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoMallopt:
        def __init__(self, _name: object) -> None:
            pass

        def __getattr__(self, name: str) -> object:
            raise AttributeError(name)

    monkeypatch.setattr(ctypes, "CDLL", NoMallopt)
    assert keep_freed_memory({}) is False
