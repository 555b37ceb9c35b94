"""Restores of gained partitions on one background thread, so a role's loop never waits.

A role starts a restore per gained partition (shard or log partition) and takes on each
result between polls. A partition given up meanwhile (revoked or lost) cancels its restore:
the restore is told to stop, and its result is never used, even if the partition comes back
(the state it read may be stale by then; the role starts a fresh one). One thread: the
restore reader is one consumer. It is a daemon thread (a `ThreadPoolExecutor`'s is joined
at interpreter exit), so a restore stuck on the broker never holds up a stopping replica.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, NamedTuple, TypeVar

T = TypeVar("T")


class _Job(NamedTuple, Generic[T]):
    token: object
    future: Future[T]


class Restores(Generic[T]):
    """Pending restores by partition (see the module docstring)."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None]
        self._calls = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=f"{name}-restore", daemon=True)
        self._thread.start()
        self._stop = stop
        self._jobs: dict[int, _Job[T]] = {}

    def start(self, partition: int, restore: Callable[[Callable[[], bool]], T]) -> None:
        """Run `restore(should_stop)` for `partition` on the restore thread."""
        token = object()

        def should_stop() -> bool:
            job = self._jobs.get(partition)
            return self._stop.is_set() or job is None or job.token is not token

        future: Future[T] = Future()
        self._jobs[partition] = _Job(token, future)  # before it runs: should_stop looks here
        self._calls.put((future, lambda: restore(should_stop)))

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
        self._calls.put(None)
        self._thread.join()  # (a stopping replica bounds its close steps: `runtime.shutdown`)

    def _serve(self) -> None:
        """The restore thread: run the restores in the order started, until closed."""
        while (call := self._calls.get()) is not None:
            future, restore = call
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(restore())
                except BaseException as exc:
                    future.set_exception(exc)
