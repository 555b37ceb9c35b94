"""The cycle collector and what a process builds before its first batch: `freeze_start_up`.

CPython's cycle collector traverses every tracked container in each full collection. Before
its first batch a worker has imported kafka-python, pydantic and prometheus-client (a
scale-out replica also numba's compiler, for its merged-table kernels) and built its
settings and kernels: ~70,000 tracked objects in a plain worker and ~150,000 in a replica
(counted at exit, 2026-11-27), none of which ever becomes garbage. Every full collection
traversed them again. Measured with a collector probe on `bench.bench_cluster_cost`
(60,000 documents): full collections took 0.30-0.39 s of CPU in a plain worker and 1.18 s
in a replica whose gather window was already untracked (`sharded.gather`); frozen, 0.14 and
0.61 s.

`freeze_start_up` collects once and moves everything that survived to the permanent
generation (`gc.freeze`), which collections skip; what is made afterwards (the index, the
clients, every batch) is collected as before. The price: a frozen object that later becomes
part of an unreachable cycle is never freed. The worker therefore freezes once, after
start-up's own throwaway work and before it builds the Kafka clients it may replace. Like
`allocator.keep_freed_memory`, only the commands call it; importing the package never does.
"""

from __future__ import annotations

import gc


def freeze_start_up() -> int:
    """Collect, then freeze what survived; returns how many objects are frozen now."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
