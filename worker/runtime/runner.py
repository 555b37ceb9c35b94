"""The role loop: one loop runs every cluster role (edge, shard, gather) on a `Role`.

Per round (`docs/design/runtime.md`, "The role interface"):

1. `Limits` from the failure policy: the role's batch in records and bytes, halved per
   consecutive failure (a batch that keeps failing is bisected to the input causing it);
2. `role.poll(limits)`: poll its consumer, follow the assignment (release what left, cancel
   and start background restores through the role's restore code, take on finished ones,
   rewind records of partitions not restored yet) and read its inputs;
3. `role.step(polled, limits)`: the transaction to publish, from what was read; an
   exception there fails the batch like a failed transaction;
4. publish it (`runtime.publisher`: messages + offsets with metadata, one transaction, one
   deadline, fenced by the role consumer's group metadata);
5. committed: `role.committed`, the policy and the role's health reset; failed: the
   producer is replaced, an input the broker refused for good is dead-lettered on the
   replay (no backoff), anything else counts a failure and backs off; either way
   `role.rebuild()` drops the state that ran ahead of the commit and rewinds.

The role owns its state and what it reads; the runner owns the publisher, the policy and
the order of these steps, so each fix to them is written once.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar

from kafka import KafkaConsumer

from worker.cluster.health import RoleHealth
from worker.metrics import Metrics
from worker.rejections import Rejections
from worker.runtime.policy import FailurePolicy
from worker.runtime.publisher import Publisher, PublishFailure, Transaction
from worker.settings import Settings

log = logging.getLogger(__name__)
Polled = TypeVar("Polled")
Carried = TypeVar("Carried")
MIN_TXN_BYTES = 1 << 20  # the byte cap never shrinks below this


class Limits(NamedTuple):
    """How much one batch may hold: records read, bytes published."""

    records: int
    bytes: int


@dataclass
class Output(Generic[Carried]):
    """What a step publishes, and what the role counts once it committed."""

    transaction: Transaction
    carried: Carried


class Role(Protocol[Polled, Carried]):
    """A role the runner runs (see the module docstring)."""

    name: str  # "edge", "shard", "gather": failpoints `<name>_produced`, metric labels
    role: Settings  # the role's settings: its group and transactional id
    consumer: KafkaConsumer  # its group member: the transaction's offsets are its group's
    health: RoleHealth
    max_records: int
    max_bytes: int

    @property
    def rejections(self) -> Rejections | None: ...  # refused inputs; None: it has no inputs

    def start(self) -> None: ...  # subscribe
    def poll(self, limits: Limits) -> Polled: ...
    def step(self, polled: Polled, limits: Limits) -> Output[Carried] | None: ...
    def committed(self, carried: Carried) -> None: ...
    def rebuild(self) -> None: ...  # its state ran ahead of the commit: drop it, rewind
    def close(self) -> None: ...


class RoleRunner(Generic[Polled, Carried]):
    """Runs one role until `stop` is set; `close` closes its publisher and the role."""

    def __init__(
        self, role: Role[Polled, Carried], metrics: Metrics, stop: threading.Event
    ) -> None:
        self.role, self.metrics, self._stop = role, metrics, stop
        self.publisher: Publisher[Carried] = Publisher(role.role, role.consumer, role.name)
        self.policy = FailurePolicy(role.role.worker.retry_backoff_max_s)

    def healthy(self) -> bool:
        return self.role.health.healthy()

    def run(self) -> None:
        role, policy = self.role, self.policy
        role.start()
        while not self._stop.is_set():
            limits = Limits(
                policy.shrunk(role.max_records),
                policy.shrunk(role.max_bytes, floor=min(role.max_bytes, MIN_TXN_BYTES)),
            )
            polled = role.poll(limits)
            try:
                output = role.step(polled, limits)
            except Exception as exc:  # the step failed: as if its transaction had
                self._failed(PublishFailure(exc, None))
                continue
            if output is None:
                continue
            failure = self.publisher.publish(output.transaction, output.carried)
            if failure is not None:
                self.publisher.reset()  # a new producer fences and settles the old one
                self._failed(failure)
                continue
            policy.succeeded()
            role.health.succeeded()
            self.metrics.role_transactions.labels(role.name).inc()
            role.committed(output.carried)

    def _failed(self, failure: PublishFailure[Carried] | PublishFailure[None]) -> None:
        """Blame, or count a failure and back off; then the role rebuilds and rewinds."""
        role = self.role
        self.metrics.role_failures.labels(role.name).inc()
        rejected = failure.rejected
        delay = 0.0
        if rejected is not None and role.rejections is not None:
            # the replay dead-letters it (smaller each time): no backoff
            role.rejections.unpublishable(rejected.source, rejected.why)
        else:
            delay = self.policy.failed()
            role.health.failed()
            what = "" if failure.blamed is None else f" (refused: {failure.blamed.why})"
            log.error(
                "%s transaction failed%s; rebuilding and replaying from the committed offsets "
                "in %.1f s",
                role.name,
                what,
                delay,
                exc_info=failure.error,
            )
        role.rebuild()
        if delay:
            self._stop.wait(delay)

    def close(self) -> None:
        try:
            self.publisher.close()
        finally:
            self.role.close()
