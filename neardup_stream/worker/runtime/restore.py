"""Background restores per partition, paused until complete, for every role.

A role (the single worker, a shard, a gather) starts a restore for each partition it gains
and takes the results between polls (`finished`), so its loop keeps polling within the poll
interval and its other partitions go on. The partition's input is paused from the start of its
restore (`Pausing`) and resumed only when a complete state is taken; a restore stopped at an
unreadable record, refused or failed leaves it paused (the role stops it, refuses, or starts
again). A partition given up meanwhile (revoked or lost) cancels its restore: the restore is
told to stop (`replay.Interrupted`), and its result is never used, even if the partition
comes back (the state it read may be stale by then; the role starts a fresh one).

One thread and one changelog reader, created on that thread and reused: a restore is a
`RestoreFn(reader, should_stop) -> Restored`. The reader is rebuilt after a failed restore.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.runtime.replay import Interrupted, Unreadable, replay_changes

T = TypeVar("T")
R = TypeVar("R")
S = TypeVar("S")
log = logging.getLogger(__name__)


class Restored(NamedTuple, Generic[T]):
    """What a restore built: a complete state, or where its replay stopped."""

    state: T | None
    stopped: Unreadable | None = None


class Finished(NamedTuple, Generic[T]):
    """A restore that ended: exactly one of a complete `state`, `stopped` or `error`."""

    partition: int
    state: T | None
    stopped: Unreadable | None
    error: BaseException | None


RestoreFn = Callable[[KafkaConsumer, Callable[[], bool]], Restored[T]]


def changelog_restore(
    tp: TopicPartition,
    fresh: Callable[[], S],
    apply: Callable[[S, bytes], object],
    complete: Callable[[S], T],
    metrics: Metrics,
) -> RestoreFn[T]:
    """A cluster role's restore of changelog partition `tp`: a `fresh()` state, every change
    `apply`d in order (`replay.replay_changes`), then `complete(state)`; or where it stopped."""

    def restore(reader: KafkaConsumer, should_stop: Callable[[], bool]) -> Restored[T]:
        state = fresh()
        stopped = replay_changes(reader, tp, lambda data: apply(state, data), should_stop, metrics)
        return Restored(None if stopped else complete(state), stopped)

    return restore


class Pausing(Protocol):
    """Pauses and resumes a partition's input while it is restored."""

    def pause(self, partition: int) -> None: ...
    def resume(self, partition: int) -> None: ...


class PauseTopic:
    """Pauses partitions of `topic` on `consumer`, if it is assigned them."""

    def __init__(self, consumer: KafkaConsumer, topic: str) -> None:
        self.consumer, self.topic = consumer, topic

    def pause(self, partition: int) -> None:
        tp = TopicPartition(self.topic, partition)
        if tp in self.consumer.assignment():
            self.consumer.pause(tp)

    def resume(self, partition: int) -> None:
        tp = TopicPartition(self.topic, partition)
        if tp in self.consumer.assignment():
            self.consumer.resume(tp)


class _Job(NamedTuple, Generic[T]):
    cancelled: threading.Event
    started: float
    future: Future[Restored[T]]


class Restores(Generic[T]):
    """Pending restores by partition (see the module docstring)."""

    def __init__(
        self,
        name: str,
        stop: threading.Event,
        metrics: Metrics,
        make_reader: Callable[[], KafkaConsumer],
        pausing: Pausing | None = None,
    ) -> None:
        self._pool = _RestoreThread(f"{name}-restore")
        self._stop, self._metrics, self._pausing = stop, metrics, pausing
        self._make_reader = make_reader
        self._reader: KafkaConsumer | None = None  # used on the restore thread only
        self._jobs: dict[int, _Job[T]] = {}

    def start(self, partition: int, restore: RestoreFn[T]) -> None:
        """Pause `partition` and run `restore` for it on the restore thread."""
        self.cancel(partition)  # a restore already running for it is stale
        cancelled = threading.Event()

        def should_stop() -> bool:
            return self._stop.is_set() or cancelled.is_set()

        if self._pausing is not None:
            self._pausing.pause(partition)
        future = self._pool.submit(self._run, restore, should_stop)
        self._jobs[partition] = _Job(cancelled, time.monotonic(), future)
        self._gauge()

    def cancel(self, partition: int) -> None:
        """Forget `partition`'s restore; it is told to stop, and its result never taken."""
        job = self._jobs.pop(partition, None)
        if job is not None:
            job.cancelled.set()
        self._gauge()

    def pending(self) -> set[int]:
        return set(self._jobs)

    def finished(self) -> list[Finished[T]]:
        """The restores that ended since the last call, in partition order; the partitions
        of complete ones are resumed."""
        done = sorted((p, job) for p, job in self._jobs.items() if job.future.done())
        out: list[Finished[T]] = []
        for p, job in done:
            del self._jobs[p]
            error = job.future.exception()
            if isinstance(error, Interrupted):
                continue  # stopping: nothing of it is used
            if error is not None:
                out.append(Finished(p, None, None, error))
                continue
            restored = job.future.result()
            out.append(Finished(p, restored.state, restored.stopped, None))
            if restored.stopped is None:
                self._metrics.restore_seconds.set(time.monotonic() - job.started)
                if self._pausing is not None:
                    self._pausing.resume(p)
        if self._pausing is not None:  # a rebalance may have resumed them: paused until complete
            for p in self._jobs:
                self._pausing.pause(p)
        self._gauge()
        return out

    def close(self) -> None:
        """Stop every restore and close the reader; nothing of them is used."""
        for p in list(self._jobs):
            self.cancel(p)  # every restore sees its cancellation
        self._pool.submit(self._close_reader)
        self._pool.shutdown()  # (a stopping replica bounds its close steps: `runtime.shutdown`)

    def _run(self, restore: RestoreFn[T], should_stop: Callable[[], bool]) -> Restored[T]:
        if should_stop():
            raise Interrupted("cancelled before it started")
        if self._reader is None:
            self._reader = self._make_reader()
        try:
            return restore(self._reader, should_stop)
        except Interrupted:
            raise
        except BaseException:
            self._close_reader()  # a fresh reader for the next restore
            raise

    def _close_reader(self) -> None:
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:
                log.exception("closing the restore reader failed")
            self._reader = None

    def _gauge(self) -> None:
        self._metrics.partitions_restoring.set(len(self._jobs))


class _RestoreThread:
    """One daemon thread running submitted calls in order. Not a `ThreadPoolExecutor`: its
    threads are joined at interpreter exit, so a restore stuck on the broker would hold up a
    stopping process."""

    def __init__(self, name: str) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None]
        self._calls = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., R], *args: Any) -> Future[R]:
        future: Future[R] = Future()
        self._calls.put((future, lambda: fn(*args)))
        return future

    def shutdown(self) -> None:
        """Run what was submitted, then end the thread."""
        self._calls.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn = call
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn())
                except BaseException as exc:
                    future.set_exception(exc)
