"""Following an assignment (`neardup_stream.worker.runtime.follower`), with the real rebalance listener and
background restores, and a holder that records what it was told: nothing moves between a
revocation and its assignment, a restore of a partition gone is never installed, a failed
restore (or one whose set-up met a broker error) is started again later without holding up
the loop, a stopped one is not."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from kafka import TopicPartition
from kafka.errors import IllegalStateError, KafkaTimeoutError
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.partitions import Assignment
from neardup_stream.worker.runtime import follower as follower_module
from neardup_stream.worker.runtime.follower import Followed, Follower
from neardup_stream.worker.runtime.replay import Skipped, Unreadable
from neardup_stream.worker.runtime.restore import Restored, RestoreFn, Restores
from tests.unit.clock import frozen

Stop = Callable[[], bool]
TOPIC = "t"


class Reader:
    def close(self) -> None:
        pass


class Holder:
    """Holds a string per partition; restores wait for `release` unless told how to end."""

    def __init__(self) -> None:
        self.state: dict[int, str] = {}
        self.stops: set[int] = set()
        self.released: list[int] = []
        self.started: list[int] = []
        self.failed: list[int] = []
        self.go = threading.Event()
        self.outcome: dict[int, str] = {}  # partition -> "fail" | "stop"
        self.setup_errors: list[Exception] = []  # raised by the next `restore` calls

    def held(self) -> set[int]:
        return set(self.state)

    def stopped(self) -> set[int]:
        return set(self.stops)

    def release(self, partition: int) -> None:
        self.released.append(partition)
        self.state.pop(partition, None)

    def restore(self, partition: int) -> RestoreFn[str]:
        if self.setup_errors:  # reading its checkpoint failed
            raise self.setup_errors.pop(0)
        self.started.append(partition)
        outcome = self.outcome.get(partition)

        def run(reader: Reader, should_stop: Stop) -> Restored[str]:
            self.go.wait(30)
            if outcome == "fail":
                raise RuntimeError("broker went away")
            if outcome == "stop":
                at = Unreadable("c", partition, 7, Skipped("corrupt", "bad bytes"))
                return Restored(None, at)
            return Restored(f"state-{partition}")

        return run  # type: ignore[return-value]

    def install(self, partition: int, state: str) -> None:
        self.state[partition] = state

    def restore_stopped(self, partition: int, where: Unreadable) -> None:
        self.stops.add(partition)

    def restore_failed(self, partition: int, error: BaseException | None) -> None:
        self.failed.append(partition)


def setup(generation: list[int] | None = None) -> tuple[Assignment, Holder, Follower[str]]:
    """`generation`: a one-item list holding the consumer's group generation (None: none)."""
    metrics = build_metrics(CollectorRegistry())
    joined = None if generation is None else (lambda: generation[0])
    assignment = Assignment(TOPIC, metrics, lambda: None, generation=joined)
    stop = threading.Event()
    restores: Restores[str] = Restores("follower", stop, metrics, Reader)  # type: ignore[arg-type]
    holder = Holder()
    return assignment, holder, Follower(assignment, restores, holder, stop)


def tps(*partitions: int) -> list[TopicPartition]:
    return [TopicPartition(TOPIC, p) for p in partitions]


def until_gained(f: Follower[str]) -> Followed:
    while True:
        followed = f.follow()
        if followed is not None and followed.gained:
            return followed


def until_all_gained(f: Follower[str], n: int) -> set[int]:
    """Follow until `n` partitions were taken on, in one follow or more."""
    gained = until_gained(f).gained
    while len(gained) < n:
        followed = f.follow()
        assert followed is not None
        gained |= followed.gained
    return gained


def test_gained_partitions_are_restored_in_order_and_installed() -> None:
    assignment, holder, f = setup()
    assignment.on_partitions_assigned(tps(2, 0))
    assert f.follow() == Followed({0, 2}, set())
    assert holder.started == [0, 2] and f.restores.pending() == {0, 2}
    holder.go.set()
    until_all_gained(f, 2)
    assert holder.state == {0: "state-0", 2: "state-2"} and holder.started == [0, 2]
    f.close()


def test_nothing_moves_between_a_revocation_and_its_assignment() -> None:
    assignment, holder, f = setup()
    assignment.on_partitions_assigned(tps(0, 1))
    holder.go.set()
    f.follow()
    until_gained(f)
    while len(holder.state) < 2:
        f.follow()
    assignment.on_partitions_revoked(tps(0, 1))
    assert f.follow() is None  # what stays is not known yet: nothing released
    assert holder.released == [] and set(holder.state) == {0, 1}
    assignment.on_partitions_assigned(tps(1))  # 0 went elsewhere, 1 stayed
    assert f.follow() == Followed({1}, set())
    assert holder.released == [0] and holder.state == {1: "state-1"}
    assert holder.started == [0, 1]  # 1 was never restored again
    f.close()


def test_a_restore_of_a_partition_gone_is_cancelled_and_never_installed() -> None:
    assignment, holder, f = setup()
    assignment.on_partitions_assigned(tps(0))
    f.follow()
    assignment.on_partitions_lost(tps(0))
    assert f.follow() == Followed(set(), set())
    assert f.restores.pending() == set()
    holder.go.set()
    assignment.on_partitions_assigned(tps(0))  # back: a fresh restore, not the stale one
    until_gained(f)
    assert holder.started == [0, 0] and holder.state == {0: "state-0"}
    f.close()


def test_a_failed_restore_starts_again_later_without_holding_up_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = frozen(monkeypatch, follower_module)
    assignment, holder, f = setup()
    holder.outcome[0] = "fail"
    holder.go.set()
    assignment.on_partitions_assigned(tps(0))
    f.follow()
    while not holder.failed:
        assert f.follow() is not None
    assert f.restores.pending() == set() and holder.started == [0]  # not at once
    clock.now += follower_module.RETRY_S
    holder.outcome.clear()
    until_gained(f)
    assert holder.started == [0, 0] and holder.state == {0: "state-0"}
    f.close()


def test_a_retriable_broker_error_setting_up_a_restore_is_tried_again_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = frozen(monkeypatch, follower_module)
    assignment, holder, f = setup()
    holder.setup_errors = [KafkaTimeoutError("committed() timed out")]
    holder.go.set()
    assignment.on_partitions_assigned(tps(0, 1))
    assert f.follow() == Followed({0, 1}, set())  # the role goes on
    assert holder.started == [] and f.restores.pending() == set()
    assert f.follow() == Followed({0, 1}, set()) and holder.started == []  # not at once
    clock.now += follower_module.RETRY_S
    until_all_gained(f, 2)
    assert holder.started == [0, 1] and holder.state == {0: "state-0", 1: "state-1"}
    f.close()


def test_any_other_error_setting_up_a_restore_fails_the_role() -> None:
    assignment, holder, f = setup()
    holder.setup_errors = [IllegalStateError("a bug, not the broker")]
    assignment.on_partitions_assigned(tps(0))
    with pytest.raises(IllegalStateError):
        f.follow()
    f.close()


def test_a_restore_stopped_at_an_unreadable_record_is_not_restored_while_assigned() -> None:
    assignment, holder, f = setup()
    holder.outcome[0] = "stop"
    holder.go.set()
    assignment.on_partitions_assigned(tps(0, 1))
    while 0 not in holder.stops or 1 not in holder.state:
        f.follow()
    for _ in range(5):
        f.follow()
    assert holder.started == [0, 1] and 0 not in holder.state
    assignment.on_partitions_revoked(tps(0, 1))
    assignment.on_partitions_assigned(tps(1))  # the stop belongs to the next owner
    f.follow()
    assert 0 in holder.released
    f.close()


def restored(assignment: Assignment, holder: Holder, f: Follower[str], *partitions: int) -> None:
    assignment.on_partitions_assigned(tps(*partitions))
    holder.go.set()
    while len(holder.state) < len(partitions):
        f.follow()


def test_partitions_kept_across_generations_this_member_missed_are_rebuilt() -> None:
    """kafka-python keeps the old assignment when a SyncGroup fails; the group meanwhile
    completed generation 2 without this member, and may have moved 0 and 1 on."""
    generation = [1]
    assignment, holder, f = setup(generation)
    restored(assignment, holder, f, 0, 1)
    assignment.on_partitions_revoked(tps(0, 1))  # joining generation 2: its sync fails
    assignment.on_partitions_revoked(tps(0, 1))  # joining again
    generation[0] = 3
    assignment.on_partitions_assigned(tps(0, 1))
    followed = f.follow()
    assert followed is not None and followed.assigned == {0, 1}
    assert sorted(holder.released) == [0, 1]  # the stale states are gone
    assert holder.started == [0, 1, 0, 1]  # and restored again
    f.close()


def test_partitions_kept_into_the_next_generation_are_not_rebuilt() -> None:
    generation = [4]
    assignment, holder, f = setup(generation)
    restored(assignment, holder, f, 0, 1)
    assignment.on_partitions_revoked(tps(0, 1))
    generation[0] = 5
    assignment.on_partitions_assigned(tps(0, 1))
    assert f.follow() == Followed({0, 1}, set())
    assert holder.released == [] and holder.started == [0, 1]
    f.close()
