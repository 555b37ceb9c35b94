"""A kafka-python defect worked around: a group join that completes while no poll waits
for it is thrown away.

kafka-python 3.0.x runs each JoinGroup + SyncGroup round as a task on the consumer's I/O
thread; `poll` waits for it up to its timeout and leaves it running when the time is up.
When the task completes between two polls (the thread was committing a transaction, or
anything else outside `poll`), the next poll sees a finished task and starts another one
instead of applying its assignment. The consumer keeps its old assignment, and a group
leader's new JoinGroup starts another rebalance for every member ("Leader ... re-joining
group during Stable" in the broker log). When the completions keep falling outside the
polls, this repeats every heartbeat interval: a replica's edge was seen to hold all three
input partitions for minutes while the two other replicas held one each.

`install()` wraps `BaseCoordinator.join_group_async`: a join that completed with an
assignment is applied as kafka-python applies one it waited for. A join that failed is
retried by kafka-python as before. It also wraps `BaseCoordinator.need_rejoin`, so that such
a join makes the next poll join at all: a leader's join that started because the metadata
changed (its assignment snapshot no longer matched) makes the snapshots match again when
it completes, and `need_rejoin` was then False, so no poll ever applied it: the member
stayed `REBALANCING` with its old assignment and its heartbeats off (seen in
`test_kafka_join.py`). `install` is idempotent and leaves a kafka-python
whose coordinator does not have this shape unpatched (a later release may fix it).
"""

from __future__ import annotations

import logging
from typing import Any

from kafka.coordinator.base import BaseCoordinator, MemberState

log = logging.getLogger(__name__)
_PATCHED = "_neardup_applies_finished_joins"


def install() -> bool:
    """Patch kafka-python's coordinator (once). False: its shape is not the one this fixes."""
    if getattr(BaseCoordinator, _PATCHED, False):
        return True
    original = getattr(BaseCoordinator, "join_group_async", None)
    needed = ("_on_join_complete_async", "_enable_heartbeat", "need_rejoin")
    if original is None or not all(hasattr(BaseCoordinator, n) for n in needed):
        log.warning("kafka-python's group coordinator changed: the join workaround is off")
        return False

    async def join_group_async(self: Any, timeout_ms: int | None = None) -> bool:
        if await apply_finished_join(self):
            return True
        return bool(await original(self, timeout_ms=timeout_ms))

    original_need_rejoin = BaseCoordinator.need_rejoin

    def need_rejoin(self: Any) -> bool:
        return bool(original_need_rejoin(self)) or finished_join(self)

    BaseCoordinator.join_group_async = join_group_async
    BaseCoordinator.need_rejoin = need_rejoin
    setattr(BaseCoordinator, _PATCHED, True)
    return True


def finished_join(coordinator: Any) -> bool:
    """Whether a join completed with an assignment that no poll has applied yet."""
    task = getattr(coordinator, "_join_task", None)
    return task is not None and bool(task.is_done) and bool(task.succeeded())


async def apply_finished_join(coordinator: Any) -> bool:
    """Apply the assignment of a join that completed while no poll waited (True), as
    kafka-python's own `join_group_async` does after waiting for it."""
    if not finished_join(coordinator):
        return False
    task = coordinator._join_task
    generation = coordinator._generation
    coordinator._join_task = None
    if generation.generation_id < 0:  # the membership was lost since: join again
        return False
    with coordinator._lock:
        coordinator.rejoining = False
        coordinator.rejoin_needed = False
        coordinator.state = MemberState.STABLE
        coordinator._enable_heartbeat()
    log.info(
        "group %s: applying generation %d, whose join completed between two polls",
        coordinator.group_id,
        generation.generation_id,
    )
    await coordinator._on_join_complete_async(
        generation.generation_id, generation.member_id, generation.protocol, task.value
    )
    return True
