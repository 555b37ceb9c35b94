"""Whether a role has had work waiting for longer than `worker.stall_timeout_s` without a
commit: a role that cannot make progress says so instead of answering ready.

A role that can tell what it has to do (`Waits`: the edge and the single worker, input
behind the end of a partition; the shard, fingerprint-log records it has not voted on; the
gather, a record undecided) says each round what it waits
for, or None when nothing waits. `Stall` times the wait from the later of its start and the
role's last commit; past the timeout the role is stalled: one WARNING names the role and what
it waits for, `neardup_role_stalled{role}` is 1 and `/healthz` answers 503, until a commit
(or nothing waiting any more) ends it. A backlog that is being worked off commits all along,
so only a role that stopped deciding is stalled.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol, runtime_checkable

from neardup_stream.worker.metrics import Metrics

log = logging.getLogger(__name__)


@runtime_checkable
class Waits(Protocol):
    """A role that says what it has to do and waits for (None: nothing waits)."""

    def waiting_for(self) -> str | None: ...


class Stall:
    """One role's wait without progress (see the module docstring)."""

    def __init__(self, name: str, metrics: Metrics, after_s: float) -> None:
        self.name, self.metrics, self.after_s = name, metrics, after_s
        self._since: float | None = None  # when work started to wait
        self._committed = time.monotonic()  # set on the commit thread: one float, atomic
        self._stalled = False
        self.waiting: str | None = None  # what it waits for while stalled
        metrics.role_stalled.labels(name).set(0)

    def progressed(self) -> None:
        """A transaction of the role committed (any thread)."""
        self._committed = time.monotonic()

    def observe(self, waiting: str | None, now: float | None = None) -> None:
        """What the role waits for this round (None: nothing)."""
        now = time.monotonic() if now is None else now
        if waiting is None:
            self._since = None
            self._end("nothing waits any more")
            return
        if self._since is None:
            self._since = now
        waited = now - max(self._since, self._committed)
        if waited <= self.after_s:
            self._end("it committed")
            return
        self.waiting = waiting
        if not self._stalled:
            self._stalled = True
            self.metrics.role_stalled.labels(self.name).set(1)
            log.warning(
                "%s: STALLED: no progress for %.0f s while it waits for %s; /healthz "
                "answers 503 until it commits (worker.stall_timeout_s=%g)",
                self.name,
                waited,
                waiting,
                self.after_s,
            )

    def _end(self, why: str) -> None:
        if self._stalled:
            self._stalled = False
            self.metrics.role_stalled.labels(self.name).set(0)
            log.info("%s: no longer stalled: %s", self.name, why)

    def stalled(self) -> str | None:
        """What the stalled role waits for (None: not stalled)."""
        return self.waiting if self._stalled else None
