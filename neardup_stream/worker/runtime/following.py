"""Following an assignment with background restores: which partitions a role lets go, which
restores it cancels and which it starts. Pure (sets in, sets out), so the single worker, the
shard and the gather follow their assignments by one rule, and it is tested without a broker
(each restores its partitions one by one in the background: `neardup_stream.worker.runtime.restore`).

A role holds state for some partitions (`held`) and restores others in the background
(`restoring`). Given what the group now assigns it and what it lost (`dropped`: absent from an
assignment in between, or lost with the membership, so their state may be stale), it:

* lets go of state of partitions no longer assigned, lost, or stopped and no longer assigned
  (a stop belongs to the partition's owner: the next one meets the record again);
* cancels restores of partitions no longer assigned or lost;
* once finished restores are taken on, starts restores of assigned partitions it neither holds
  nor restores, in partition order, except stopped ones (they are not rebuilt while assigned).
"""

from __future__ import annotations

from collections.abc import Set
from typing import NamedTuple


class Leaving(NamedTuple):
    """What a role gives up when the assignment changes."""

    release: set[int]  # partitions whose state (and stop) the role drops
    cancel: set[int]  # restores in progress no longer wanted


def leaving(
    held: Set[int],
    restoring: Set[int],
    assigned: Set[int],
    dropped: Set[int],
    stopped: Set[int] = frozenset(),
) -> Leaving:
    """The partitions to release and the restores to cancel (see the module docstring)."""
    release = (set(held) - assigned) | set(dropped) | (set(stopped) - assigned)
    cancel = (set(restoring) - assigned) | set(dropped)
    return Leaving(release, cancel)


def to_restore(
    assigned: Set[int], held: Set[int], restoring: Set[int], stopped: Set[int] = frozenset()
) -> list[int]:
    """Assigned partitions to start restoring, in order: neither held, restoring nor stopped."""
    return sorted(set(assigned) - held - restoring - stopped)
