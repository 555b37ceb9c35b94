"""A role consumer's static group membership: noticing it was fenced, and taking it back.

With static membership (`worker.static_membership`, on by default) the consumer joins as
`group.instance.id` = the instance id, and the broker fences the member of that instance
whenever a consumer joins under the same id. kafka-python takes a fencing as the end of the
member: a refused join raises `FencedInstanceIdError` out of `poll`, and a fenced heartbeat
only stops the heartbeats, so the member never rejoins and every later transaction's offsets
are refused (`CommitFailedError ... UnknownMemberIdError`, or `FencedInstanceIdError`). The
worker would die, or stall for good.

A fencing is not always another process. After the broker was paused, the member's own
retried join can replace its first one, which the broker then fences. So `Membership.fenced`
rejoins: the consumer forgets its member id and its next poll joins as the instance's new
member (the partitions it held are lost and restored, as after any lost membership). A
fencing is counted (`neardup_group_fenced_total{role}`) and logged with what it means, once
per membership lost however many of its commits and heartbeats say so (until the consumer
is a stable member again); fenced `CONFLICT_FENCES` times within `CONFLICT_WINDOW_S`, the
instance id is in use by another live consumer, and the role stops with `InstanceConflict`
instead of taking turns with it.

A fencing can also arrive in a heartbeat's answer. kafka-python then only stops heartbeating:
the consumer keeps its assignment and its group state, so an idle worker would go on saying
it is ready while another process (a second worker started with the same instance id, e.g.
the default host name twice on one host) holds its partitions. `Membership.check_heartbeat`
notices that state before each poll and raises it as the fencing it is.

The role's transactional id derives from the instance id too, so a second process with the
same id also fences the role's producer (`ProducerFencedError`) each time either replaces
its producer: the two take turns, and nothing is committed. Those fencings count towards
the same conflict (no rejoin: the producer is replaced by the publisher).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable

from kafka import KafkaConsumer
from kafka.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalGenerationError,
    ProducerFencedError,
    RebalanceInProgressError,
)

from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.security_errors import raised_from

log = logging.getLogger(__name__)
CONFLICT_FENCES = 3
CONFLICT_WINDOW_S = 600.0


class InstanceConflict(RuntimeError):
    """Another live consumer of the group uses this instance id: a configuration error."""


def is_fencing(error: BaseException) -> bool:
    """Whether `error` says this member's membership is gone for good (rejoin to go on):
    fenced, or its member id no longer known to the group (kafka-python wraps that one, from
    a transaction's offsets, in a CommitFailedError naming it)."""
    if isinstance(error, FencedInstanceIdError):
        return True
    return isinstance(error, CommitFailedError) and "UnknownMemberIdError" in str(error)


def rebalanced(error: BaseException) -> bool:
    """Whether `error` says only that the group rebalanced under a transaction (a replica
    joined or left): its offsets are refused, the batch is replayed by the partitions' owner,
    and nothing is wrong (logged as a warning, without a traceback)."""
    for e in raised_from(error):
        if isinstance(e, (IllegalGenerationError, RebalanceInProgressError)):
            return True
        if isinstance(e, CommitFailedError) and any(
            name in str(e) for name in ("IllegalGenerationError", "RebalanceInProgressError")
        ):
            return True
    return False


class Membership:
    """The static membership of one role's group consumer (module docstring)."""

    def __init__(
        self,
        consumer: KafkaConsumer,
        role: str,
        group_id: str,
        instance_id: str | None,
        metrics: Metrics,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.consumer, self.role, self.group_id = consumer, role, group_id
        self.instance_id, self.metrics, self._clock = instance_id, metrics, clock
        self._fences: deque[float] = deque()
        # a fencing was counted and the consumer has not been a stable member since: what
        # else says it lost that membership (a commit of it, its heartbeat) is not counted
        self._awaiting_join = False
        metrics.group_fenced.labels(role)  # the series exists before the first fencing

    def fenced(self, error: BaseException) -> bool:
        """If `error` is a fencing (`is_fencing`): count it, and make the consumer rejoin on
        its next poll (True). A fenced producer is counted too (False: no rejoin). Raises
        `InstanceConflict` when fencings repeat."""
        if self.instance_id is None:
            return False
        if any(isinstance(e, ProducerFencedError) for e in raised_from(error)):
            self._count()
            log.warning(
                "%s: the transactional id of instance id %r was fenced: another producer "
                "took it; if it repeats, another worker uses this instance id",
                self.role,
                self.instance_id,
            )
            return False
        if not is_fencing(error):
            return False
        if self._awaiting_join:  # the same lost membership, told again (a commit of it)
            self._rejoin()
            return True
        self._awaiting_join = True
        self._count()
        log.warning(
            "%s: group %r fenced instance id %r (%s: %s); rejoining as its new member. "
            "After a broker pause this was our own retried join; if it repeats, another "
            "consumer uses this instance id",
            self.role,
            self.group_id,
            self.instance_id,
            type(error).__name__,
            error,
        )
        self._rejoin()
        return True

    def check_heartbeat(self) -> None:
        """Raise `FencedInstanceIdError` if the group fenced this member in a heartbeat's
        answer (module docstring): kafka-python's coordinator then stays in its stable state
        with its heartbeat disabled, which it is in no other case (a join in progress
        disables it with `rejoining` set, a group left is not stable). A stable member with
        its heartbeat on has rejoined: the next fencing is counted again."""
        if self.instance_id is None:
            return
        coordinator = getattr(self.consumer, "_coordinator", None)
        if coordinator is None:
            return
        with coordinator._lock:
            stable = coordinator.stable()
            heartbeat = coordinator._heartbeat_enabled
            fenced = stable and not heartbeat and not coordinator._heartbeat_closed
            fenced = fenced and not coordinator.rejoining
        if stable and heartbeat:
            self._awaiting_join = False
        if fenced:
            raise FencedInstanceIdError(
                f"group {self.group_id!r} answered a heartbeat: instance id "
                f"{self.instance_id!r} is fenced"
            )

    def _count(self) -> None:
        """Count a fencing; raise `InstanceConflict` when they repeat."""
        now = self._clock()
        self._fences.append(now)
        while self._fences and self._fences[0] < now - CONFLICT_WINDOW_S:
            self._fences.popleft()
        self.metrics.group_fenced.labels(self.role).inc()
        if len(self._fences) >= CONFLICT_FENCES:
            raise InstanceConflict(
                f"{self.role}: instance id {self.instance_id!r} (its membership of group "
                f"{self.group_id!r}, or its transactional id) was fenced {len(self._fences)} "
                f"times in {CONFLICT_WINDOW_S:.0f} s: another live worker uses this instance "
                "id. Give every worker its own --instance-id (NEARDUP_WORKER__INSTANCE_ID)"
            )

    def _rejoin(self) -> None:
        # kafka-python has no public call for this: its coordinator's reset_generation()
        # is what it does itself on an unknown member id (member id forgotten, rejoin).
        coordinator = getattr(self.consumer, "_coordinator", None)
        reset = getattr(coordinator, "reset_generation", None)
        if reset is None:
            raise RuntimeError("this kafka-python has no coordinator.reset_generation()")
        reset()
