"""Restores of gained partitions on one background thread, so a role's loop never waits.

A role starts a restore per gained partition (shard or log partition) and takes on each
result between polls. A partition given up meanwhile (revoked or lost) cancels its restore:
the restore is told to stop, and its result is never used, even if the partition comes back
(the state it read may be stale by then; the role starts a fresh one). One thread: the
restore reader is one consumer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, NamedTuple, TypeVar

T = TypeVar("T")


class _Job(NamedTuple, Generic[T]):
    token: object
    future: Future[T]


class Restores(Generic[T]):
    """Pending restores by partition (see the module docstring)."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"{name}-restore")
        self._stop = stop
        self._jobs: dict[int, _Job[T]] = {}

    def start(self, partition: int, restore: Callable[[Callable[[], bool]], T]) -> None:
        """Run `restore(should_stop)` for `partition` on the restore thread."""
        token = object()

        def should_stop() -> bool:
            job = self._jobs.get(partition)
            return self._stop.is_set() or job is None or job.token is not token

        self._jobs[partition] = _Job(token, self._pool.submit(restore, should_stop))

    def cancel(self, partition: int) -> None:
        self._jobs.pop(partition, None)

    def pending(self) -> set[int]:
        return set(self._jobs)

    def finished(self) -> list[tuple[int, T]]:
        """Results of the restores that ended since the last call (a failed one raises)."""
        done = [(p, job) for p, job in self._jobs.items() if job.future.done()]
        for p, _ in done:
            del self._jobs[p]
        return [(p, job.future.result()) for p, job in done]

    def close(self) -> None:
        self._jobs.clear()  # every restore sees its cancellation
        self._pool.shutdown(wait=True)
