"""Overlapped commits for the cluster's shard and gather roles: the `InFlight` of a role that
was written synchronously.

A role's transaction is mostly waiting on the broker: five requests in series (add the
partitions, produce, add the offsets, commit them, end the transaction). Committed
synchronously, a record that arrives during a commit waits for it, then for a poll and a
step, then for its own commit. Overlapped (`cluster.overlap_commits`), the commit of batch N
finishes on the publisher's commit thread while the role polls and steps batch N+1; the
runner settles N before it publishes N+1, so at most one transaction is open and they
commit in order (`runtime.runner`, "In flight").

What stays correct, and where:

* **State ahead of the commit.** Batch N+1 is stepped on state that includes N. If N fails,
  N+1 is never published: the runner settles first, then `recover` rebuilds the role from
  its changelogs (`Role.rebuild`, as after any failed transaction) and rewinds.
* **Before a revoke.** The role's rebalance listener settles the commit (`PendingCommit`),
  so what it decided on partitions it is losing commits while they are still its own
  (eager rebalancing: every member revokes before any is assigned). A failure found there
  is recovered by the runner after the poll.
* **Before parking for single stage.** The role settles before it checks it is caught up:
  the single-stage edge builds on the parked role's state, which must be what committed.
* **Counting.** `committed` runs on the role's thread in `between` (never on the commit
  thread: the roles' state is single-threaded), with the time the commit returned.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.runtime.publisher import PublishFailure
from neardup_stream.worker.runtime.role import Carried, Polled, Role, Verdict
from neardup_stream.worker.runtime.runner import count_commit


class PendingCommit(Generic[Carried]):
    """A role's handle on its commit in flight: settled before a revoke or a park. Without
    a runner bound (synchronous commits) nothing is ever in flight."""

    def __init__(self) -> None:
        self._settle: Callable[[], PublishFailure[Carried] | None] | None = None
        self._failure: PublishFailure[Carried] | None = None

    def bind(self, settle: Callable[[], PublishFailure[Carried] | None]) -> None:
        self._settle = settle

    def settle(self) -> bool:
        """Wait for the commit in flight. True: it committed, or nothing was in flight and
        no failure is waiting to be recovered (`take_failure`)."""
        if self._settle is not None:
            failure = self._settle()
            if failure is not None and self._failure is None:
                self._failure = failure
        return self._failure is None

    def before_revoke(self) -> None:
        """The rebalance listener's hook (`partitions.Assignment`)."""
        self.settle()

    def take_failure(self) -> PublishFailure[Carried] | None:
        failure, self._failure = self._failure, None
        return failure


@dataclass(frozen=True)
class Committed(Generic[Carried]):
    """A transaction that committed, waiting to be counted on the role's thread."""

    carried: Carried
    at: float  # wall time the commit returned


class Overlapped(Generic[Polled, Carried]):
    """`runtime.role.InFlight` for a synchronous role that owns a `PendingCommit`."""

    def __init__(
        self, role: Role[Polled, Carried], pending: PendingCommit[Carried], metrics: Metrics
    ) -> None:
        self.role, self.pending, self.metrics = role, pending, metrics
        self._committed: queue.SimpleQueue[Committed[Carried]] = queue.SimpleQueue()

    def bind(self, settle: Callable[[], PublishFailure[Carried] | None]) -> None:
        self.pending.bind(settle)

    def revoke_failure(self) -> PublishFailure[Carried] | None:
        return self.pending.take_failure()

    def counted(self, carried: Carried, committed_at: float) -> None:
        self._committed.put(Committed(carried, committed_at))  # on the commit thread

    def step_failed(self, polled: Polled, error: Exception) -> Verdict:
        return Verdict.RETRY  # a role's step raising fails the batch, as its commit would

    def aborted(self) -> None:
        """Commits before the failure are counted first: they must not end the failure
        streak the runner then counts in the role's health (`RoleRunner._failed`)."""
        self._count()
        self.metrics.role_failures.labels(self.role.name).inc()

    def recover(self, carried: Carried | None, polled: Polled | None) -> None:
        self._count()  # what committed before a failed read (counted without `aborted`)
        self.role.rebuild()

    def between(self, settled: Callable[[], bool]) -> None:
        self._count()

    def _count(self) -> None:
        """What committed since the last round, counted on the role's thread."""
        while True:
            try:
                done = self._committed.get_nowait()
            except queue.Empty:
                return
            count_commit(self.role, self.metrics, done.carried, done.at)
