"""What the runtime knows of a role: the interface the role loop (`runtime.runner`) runs.

A `Role` polls, steps (an `Output`: one `Transaction` and what it carries until committed),
counts what committed and rebuilds what ran ahead of a failed commit, within the `Limits` the
failure policy sets. A role whose commit stays in flight (the single worker; the shard and
gather roles through `runtime.overlap`) adds `InFlight` and judges a step that raises with a
`Verdict`; a synchronous role whose step reads inputs (the edge) judges it through
`Judging`. Each cluster role has its own group (`role_settings`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

from kafka import KafkaConsumer

from neardup_stream.worker.records import Source
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.runtime.health import RoleHealth
from neardup_stream.worker.runtime.publisher import PublishFailure, Transaction
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
Polled = TypeVar("Polled")
Carried = TypeVar("Carried")
PolledIn = TypeVar("PolledIn", contravariant=True)


def role_settings(settings: Settings, role: str) -> Settings:
    """The role's group is `<group>-<role>`: its members, offsets and transactional ids are
    its own (transactional id `<group>-<role>-<instance>`). Its Kafka clients identify as
    `<client_id>-<role>`, as Kafka Streams suffixes its threads' clients: the broker's
    request metrics and quotas, and the clients' thread names (`role_cpu`), tell the roles
    apart."""
    worker = settings.worker.model_copy(update={"group_id": f"{settings.worker.group_id}-{role}"})
    kafka = settings.kafka.model_copy(update={"client_id": f"{settings.kafka.client_id}-{role}"})
    return settings.model_copy(update={"worker": worker, "kafka": kafka})


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
    max_records: int
    max_bytes: int

    @property
    def health(self) -> RoleHealth | None: ...  # None: none of its own (partition scope)

    @property
    def rejections(self) -> Rejections | None: ...  # refused inputs; None: it has no inputs

    def start(self) -> None: ...  # subscribe
    def poll(self, limits: Limits) -> Polled: ...
    def step(self, polled: Polled, limits: Limits) -> Output[Carried] | None: ...
    def committed(self, carried: Carried, at: float) -> None: ...  # at: when it committed
    def rebuild(self) -> None: ...  # its state ran ahead of the commit: drop it, rewind
    def close(self) -> None: ...


class Verdict(Enum):
    """What a role makes of its step raising on a batch (`InFlight.step_failed`)."""

    RETRY = "retry"  # count a failure and back off
    BISECT = "bisect"  # shrink the next batch without backoff, down to the input causing it
    DEAD_LETTERED = "dead_lettered"  # the input is dead-lettered on the replay: no backoff


def isolate(
    sources: Sequence[Source], error: Exception, rejections: Rejections, doing: str
) -> Verdict:
    """The verdict on a step the engine failed on, for the inputs `sources` of its batch:
    one alone is dead-lettered on the replay (`internal_error`, `Rejections.undecidable`), a
    larger batch bisected down to it (the single worker's and the edge's `step_failed`)."""
    if len(sources) == 1:
        rejections.undecidable(sources[0], error)
        return Verdict.DEAD_LETTERED
    log.error("%s %d records failed; retrying smaller", doing, len(sources), exc_info=error)
    return Verdict.BISECT


@runtime_checkable
class Warming(Protocol):
    """A role that restores state before it can decide (the shard and the gather): not ready
    until its first assignment is restored. Later restores (partitions taken over from a
    replica that left) do not make it unready again: it decides on what it holds meanwhile,
    and a role that stops deciding is caught as a stall (`runtime.stall`)."""

    def warmed(self) -> bool: ...


@runtime_checkable
class Judging(Protocol[PolledIn]):
    """A synchronous role that judges its step raising on a batch (the edge: an input its
    engine fails on is bisected down to and dead-lettered, as in the single worker); the
    others' failed steps are retried (`Verdict.RETRY`)."""

    def step_failed(self, polled: PolledIn, error: Exception) -> Verdict: ...


class InFlight(Protocol[PolledIn, Carried]):
    """What a role whose commit stays in flight adds to `Role` (the single worker, and the
    shard and gather roles through `runtime.overlap.Overlapped`)."""

    def bind(self, settle: Callable[[], PublishFailure[Carried] | None]) -> None: ...
    def revoke_failure(self) -> PublishFailure[Carried] | None: ...  # settled before a revoke
    def counted(self, carried: Carried, committed_at: float) -> None: ...  # commit thread
    def step_failed(self, polled: PolledIn, error: Exception) -> Verdict: ...
    def aborted(self) -> None: ...  # count a failed batch (its own metric)
    def recover(self, carried: Carried | None, polled: PolledIn | None) -> None: ...
    def between(self, settled: Callable[[], bool]) -> None: ...  # snapshots, gauges
