"""A fenced static membership rejoins, and a fencing that repeats is a conflict."""

from __future__ import annotations

import threading

import pytest
from kafka.errors import (
    CommitFailedError,
    FencedInstanceIdError,
    IllegalGenerationError,
    KafkaTimeoutError,
    ProducerFencedError,
)
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime.membership import (
    CONFLICT_FENCES,
    CONFLICT_WINDOW_S,
    InstanceConflict,
    Membership,
    is_fencing,
    rebalanced,
)
from tests.unit.clock import Clock


class Coordinator:
    """What `Membership` reads of kafka-python's coordinator (the real one is checked in
    `test_the_real_coordinator_fenced_in_a_heartbeat_is_told`)."""

    def __init__(self) -> None:
        self.resets = 0
        self._lock = threading.Lock()
        self._heartbeat_closed = self.rejoining = False
        self.joined()

    def joined(self) -> None:  # a join completed: stable, heartbeating
        self.state, self._heartbeat_enabled = "stable", True

    def stable(self) -> bool:
        return self.state == "stable"

    def reset_generation(self) -> None:
        self.resets += 1
        self.state, self._heartbeat_enabled = "unjoined", False


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
        rejoined(found, consumer)
        clock.now += CONFLICT_WINDOW_S / CONFLICT_FENCES
    with pytest.raises(
        InstanceConflict,
        match=r"instance id 'w1' \(its membership of group 'g-edge'.*--instance-id",
    ):
        found.fenced(FencedInstanceIdError())
    assert consumer._coordinator.resets == CONFLICT_FENCES - 1


def rejoined(found: Membership, consumer: Consumer) -> None:
    consumer._coordinator.joined()
    found.check_heartbeat()  # sees a stable member again


def test_a_membership_lost_is_counted_once_however_often_it_is_told() -> None:
    # the heartbeat says it first, then the transaction in flight's offsets fail with it
    found, consumer, _, registry = membership()
    consumer._coordinator._heartbeat_enabled = False  # the heartbeat thread was fenced
    with pytest.raises(FencedInstanceIdError, match="instance id 'w1' is fenced"):
        found.check_heartbeat()
    assert found.fenced(FencedInstanceIdError())
    for _ in range(2 * CONFLICT_FENCES):  # still the same membership: rejoin, no count
        stale = CommitFailedError("metadata mismatch: UnknownMemberIdError")
        assert found.fenced(stale)
        found.check_heartbeat()  # not stable yet (rejoining): nothing to say
    assert fenced_total(registry) == 1 and consumer._coordinator.resets == 1 + 2 * CONFLICT_FENCES
    rejoined(found, consumer)
    assert found.fenced(FencedInstanceIdError())  # a new membership lost: counted
    assert fenced_total(registry) == 2


def test_a_join_in_progress_or_a_group_left_is_no_fencing() -> None:
    found, consumer, _, _ = membership()
    coordinator = consumer._coordinator
    coordinator._heartbeat_enabled, coordinator.rejoining = False, True  # joining
    found.check_heartbeat()
    coordinator.rejoining, coordinator.state = False, "unjoined"  # left, or not joined yet
    found.check_heartbeat()
    coordinator.state, coordinator._heartbeat_closed = "stable", True  # closed
    found.check_heartbeat()
    membership(instance=None)[0].check_heartbeat()  # dynamic members: kafka-python's own


def test_the_real_coordinator_fenced_in_a_heartbeat_is_told() -> None:
    # the private state it reads is kafka-python's own, as its heartbeat thread leaves it
    # when fenced (`_disable_heartbeat` with the member stable); no broker is contacted
    from kafka import KafkaConsumer
    from kafka.coordinator.base import MemberState

    consumer = KafkaConsumer(
        bootstrap_servers="127.0.0.1:1", group_id="g", group_instance_id="w1", api_version=(3, 9)
    )
    try:
        found = Membership(consumer, "edge", "g", "w1", build_metrics(CollectorRegistry()))
        found.check_heartbeat()  # not joined
        coordinator = consumer._coordinator
        with coordinator._lock:
            coordinator.state = MemberState.STABLE
            coordinator._enable_heartbeat()
        found.check_heartbeat()  # a member, heartbeating
        coordinator._disable_heartbeat()
        with pytest.raises(FencedInstanceIdError):
            found.check_heartbeat()
    finally:
        consumer.close(timeout_ms=0)


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
        rejoined(found, consumer)
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
