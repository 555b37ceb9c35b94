"""Following an assignment, for every role: the group's rebalance listener
(`partitions.Assignment`), the background restores (`runtime.restore.Restores`) and the rule
between them (`runtime.following`), run one way for the single worker, the shard and the
gather. What differs per role is what it holds and how a partition is restored: its `Holder`.

A role calls `follow()` after each poll of its group consumer (the listener runs inside that
poll). Between a revocation and the assignment that follows it nothing moves: what stays is
not known yet, and releasing everything there would restore it all again. Otherwise:

1. partitions no longer assigned, lost, or stopped and no longer assigned are released, and
   restores no longer wanted are cancelled (`following.leaving`);
2. finished restores are taken: a complete state of a partition still assigned is installed,
   one stopped at an unreadable changelog record is reported to the holder (it is not
   restored again while assigned), and a failed one is started again after `RETRY_S`,
   without holding up the loop (the other partitions go on);
3. restores start for assigned partitions neither held, restoring nor stopped, in partition
   order, unless the holder says not now (`restore` returns None). A retriable Kafka error
   while the holder sets one up (reading its checkpoint) is the same "not now", tried again
   after `RETRY_S`: a broker pause there must not stop the role.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Set
from typing import Generic, NamedTuple, Protocol, TypeVar

from kafka.errors import KafkaError

from neardup_stream.worker.partitions import Assignment
from neardup_stream.worker.runtime import following
from neardup_stream.worker.runtime.replay import Unreadable
from neardup_stream.worker.runtime.restore import RestoreFn, Restores

T = TypeVar("T")
log = logging.getLogger(__name__)
RETRY_S = 1.0  # a failed restore is started again after this long


class Followed(NamedTuple):
    """The assignment after a `follow`, and the partitions whose state it installed."""

    assigned: set[int]
    gained: set[int]


class Holder(Protocol[T]):
    """What a role holds per partition, and how it restores one (see the module docstring)."""

    def held(self) -> Set[int]: ...  # partitions whose complete state the role holds
    def stopped(self) -> Set[int]: ...  # stopped at their changelog: not restored while assigned
    def release(self, partition: int) -> None: ...  # drop its state, stops and series
    def restore(self, partition: int) -> RestoreFn[T] | None: ...  # None: not now
    def install(self, partition: int, state: T) -> None: ...
    def restore_stopped(self, partition: int, where: Unreadable) -> None: ...
    def restore_failed(self, partition: int, error: BaseException | None) -> None: ...


class Follower(Generic[T]):
    """Brings a `Holder` in line with its group assignment (see the module docstring)."""

    def __init__(
        self,
        assignment: Assignment,
        restores: Restores[T],
        holder: Holder[T],
        stop: threading.Event,
        restoring: str = "partitions",
        source: str = "its changelog",
    ) -> None:
        self.assignment, self.restores, self.holder = assignment, restores, holder
        self._restoring, self._source = restoring, source  # for the log: what, from which topic
        self._stop = stop
        self._retry_after = 0.0  # monotonic time before which no restore is started

    def follow(self) -> Followed | None:
        """One step towards the assignment; None while a rebalance is under way."""
        if self.assignment.rebalancing:
            return None
        assigned, dropped = self.assignment.take()
        holder, restores = self.holder, self.restores
        gone = following.leaving(
            holder.held(), restores.pending(), assigned, dropped, holder.stopped()
        )
        for p in sorted(gone.release):
            holder.release(p)
        for p in gone.cancel:
            restores.cancel(p)
        gained: set[int] = set()
        for done in restores.finished():
            p = done.partition
            if done.stopped is not None:
                holder.restore_stopped(p, done.stopped)
            elif done.state is None:
                holder.restore_failed(p, done.error)
                self.retry_later()
            elif p in assigned:
                holder.install(p, done.state)
                gained.add(p)
        if not self._stop.is_set() and time.monotonic() >= self._retry_after:
            todo = following.to_restore(
                assigned, holder.held(), restores.pending(), holder.stopped()
            )
            started = []
            for p in todo:
                try:
                    restore = holder.restore(p)  # reads its checkpoint from the broker
                except KafkaError as exc:
                    if not exc.retriable:
                        raise
                    log.warning("restoring %s %d: %r; trying again later", self._restoring, p, exc)
                    self.retry_later()
                    break
                if restore is None:
                    break
                restores.start(p, restore)
                started.append(p)
            if started:
                log.info("restoring %s %s from %s", self._restoring, started, self._source)
        return Followed(assigned, gained)

    def retry_later(self, seconds: float = RETRY_S) -> None:
        """Start no restore for `seconds` (a restore or its set-up failed)."""
        self._retry_after = time.monotonic() + seconds

    def cancel_all(self) -> None:
        """Cancel every restore in progress; nothing of them is used."""
        for p in self.restores.pending():
            self.restores.cancel(p)

    def close(self) -> None:
        self.restores.close()
