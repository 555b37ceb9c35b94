"""A fenced static membership rejoins, and a fencing that repeats is a conflict."""

from __future__ import annotations

import pytest
from kafka.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaTimeoutError,
    ProducerFencedError,
)
from prometheus_client import CollectorRegistry

from tests.unit.clock import Clock
from worker.metrics import build_metrics
from worker.runtime.membership import (
    CONFLICT_FENCES,
    CONFLICT_WINDOW_S,
    InstanceConflict,
    Membership,
    is_fencing,
    rebalanced,
)


class Coordinator:
    def __init__(self) -> None:
        self.resets = 0

    def reset_generation(self) -> None:
        self.resets += 1


class Consumer:
    def __init__(self) -> None:
        self._coordinator = Coordinator()


def membership(
    instance: str | None = "w1",
) -> tuple[Membership, Consumer, Clock, CollectorRegistry]:
    registry, consumer, clock = CollectorRegistry(), Consumer(), Clock()
    found = Membership(consumer, "edge", "g-edge", instance, build_metrics(registry), clock)  # type: ignore[arg-type]
    return found, consumer, clock, registry


def fenced_total(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("neardup_group_fenced_total", {"role": "edge"})


def test_what_counts_as_a_fencing() -> None:
    assert is_fencing(FencedInstanceIdError())
    unknown = "Transaction offset commit failed due to consumer group metadata mismatch: "
    assert is_fencing(CommitFailedError(unknown + "UnknownMemberIdError"))
    # a stale generation is a rebalance kafka-python rejoins on by itself; a producer fenced
    # is the transactional id, not the group membership
    assert not is_fencing(CommitFailedError(unknown + "IllegalGenerationError"))
    assert not is_fencing(CommitFailedError())
    assert not is_fencing(ProducerFencedError())
    assert not is_fencing(RuntimeError("FencedInstanceIdError"))


def test_a_fencing_makes_the_consumer_rejoin_and_is_counted() -> None:
    found, consumer, _, registry = membership()
    assert fenced_total(registry) == 0  # the series exists before the first fencing
    assert found.fenced(FencedInstanceIdError())
    assert consumer._coordinator.resets == 1
    assert fenced_total(registry) == 1
    # a fenced producer: counted towards a conflict, no rejoin (the producer is replaced)
    assert not found.fenced(ProducerFencedError())
    assert consumer._coordinator.resets == 1 and fenced_total(registry) == 2


def test_fencings_that_repeat_within_the_window_are_a_conflict() -> None:
    found, consumer, clock, _ = membership()
    for _ in range(CONFLICT_FENCES - 1):
        assert found.fenced(FencedInstanceIdError())
        clock.now += CONFLICT_WINDOW_S / CONFLICT_FENCES
    with pytest.raises(
        InstanceConflict,
        match=r"instance id 'w1' \(its membership of group 'g-edge'.*--instance-id",
    ):
        found.fenced(FencedInstanceIdError())
    assert consumer._coordinator.resets == CONFLICT_FENCES - 1


def test_a_producer_fenced_again_and_again_is_a_conflict_too() -> None:
    # Two processes with one instance id share its transactional id: each new producer of
    # one fences the other's, and neither commits again (the group may not say so at all).
    found, consumer, clock, _ = membership()
    for _ in range(CONFLICT_FENCES - 1):
        wrapped = RuntimeError("the commit failed")
        wrapped.__cause__ = ProducerFencedError()
        assert not found.fenced(wrapped)
        clock.now += 1
    with pytest.raises(InstanceConflict, match="its transactional id"):
        found.fenced(ProducerFencedError())
    assert consumer._coordinator.resets == 0


def test_fencings_spread_wider_than_the_window_each_rejoin() -> None:
    found, consumer, clock, _ = membership()
    for _ in range(3 * CONFLICT_FENCES):
        assert found.fenced(FencedInstanceIdError())
        clock.now += CONFLICT_WINDOW_S / (CONFLICT_FENCES - 1) + 1
    assert consumer._coordinator.resets == 3 * CONFLICT_FENCES


def test_a_dynamic_member_is_left_to_kafka_python() -> None:
    found, consumer, _, registry = membership(instance=None)
    assert not found.fenced(FencedInstanceIdError())
    assert consumer._coordinator.resets == 0 and fenced_total(registry) == 0


def test_a_rebalance_under_a_transaction_is_told_from_a_failure() -> None:
    # as kafka-python words a transaction's offsets refused after a replica joined
    stale = "Transaction offset commit failed due to consumer group metadata mismatch: "
    assert rebalanced(CommitFailedError(stale + "IllegalGenerationError"))
    assert rebalanced(IllegalGenerationError())
    wrapped = RuntimeError("the commit failed")
    wrapped.__cause__ = CommitFailedError(stale + "RebalanceInProgressError")
    assert rebalanced(wrapped)
    assert not rebalanced(CommitFailedError(stale + "UnknownMemberIdError"))  # fenced
    assert not rebalanced(KafkaTimeoutError())
    assert not rebalanced(ProducerFencedError())
