"""Named crash points for fault-injection tests, off unless `NEARDUP_FAILPOINTS` is set.

The worker calls `hit(name)` at the state transitions that matter (a batch produced but not
committed, a commit in flight, a restore half done, ...). A test starts a worker with e.g.

    NEARDUP_FAILPOINTS="batch_produced=kill@3,restore_batch=term@1"

and the worker SIGKILLs itself on the third time it reaches `batch_produced`, or sends itself
SIGTERM the first time it reaches `restore_batch`, so a test can stop a real process at an exact
line instead of guessing with timers. Actions: `kill` (SIGKILL, nothing runs after it), `term`
(SIGTERM, the normal graceful-stop path), `raise` (an exception at that line), `stall` (logs
`failpoint <name> stalls this thread`, then that thread never returns: a broker call that
hangs). Without the variable `hit` is a dictionary lookup and nothing else.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from dataclasses import dataclass

ENV = "NEARDUP_FAILPOINTS"
POINTS = frozenset(
    {
        "batch_produced",  # every output sent and offsets added; the commit not started
        "commit_inflight",  # the commit runs on the commit thread; the loop goes on (the
        # single worker; in a replica, the shard or gather role whose commit is first in flight)
        "batch_committed",  # the commit returned, before the loop accounts for it
        "restore_batch",  # one batch of changelog records applied during a restore
        "snapshot_saved",  # a snapshot was renamed into place
        # cluster roles: their transaction's records and offsets sent, or the commit returned
        "edge_produced",
        "edge_committed",
        "edge_rewind",  # the edge rewinds to its committed input offsets (a failed batch)
        "shard_produced",
        "shard_committed",
        "gather_produced",
        "gather_committed",
    }
)
ACTIONS = frozenset({"kill", "term", "raise", "stall"})


class FailpointError(RuntimeError):
    """Raised at a failpoint whose action is `raise`."""


@dataclass
class _Point:
    action: str
    at: int
    hits: int = 0


def parse(spec: str) -> dict[str, _Point]:
    """`name=action[@n],...` -> points; raises ValueError naming what is wrong."""
    points: dict[str, _Point] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, rest = item.partition("=")
        action, _, count = rest.partition("@")
        if name not in POINTS:
            raise ValueError(f"unknown failpoint {name!r}; known: {sorted(POINTS)}")
        if action not in ACTIONS:
            raise ValueError(f"unknown failpoint action {action!r}; known: {sorted(ACTIONS)}")
        if count and (not count.isdigit() or int(count) < 1):
            raise ValueError(f"failpoint count must be a positive integer, got {count!r}")
        points[name] = _Point(action, int(count or 1))
    return points


_points = parse(os.environ.get(ENV, ""))
_lock = threading.Lock()


def hit(name: str) -> None:
    """Reaching failpoint `name`: act if it is armed and this is its n-th hit."""
    if not _points:
        return
    point = _points.get(name)
    if point is None:
        return
    with _lock:
        point.hits += 1
        fire = point.hits == point.at
    if not fire:
        return
    if point.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif point.action == "term":
        os.kill(os.getpid(), signal.SIGTERM)
    elif point.action == "stall":
        logging.getLogger(__name__).warning("failpoint %s stalls this thread", name)
        threading.Event().wait()
    else:
        raise FailpointError(f"failpoint {name} fired")
