"""`neardup_stream.worker.runtime.runner`: what a failed transaction costs before the replay. A record the
broker refused for good that answers for the whole batch (no input of its own: a changelog
record too large for its topic) halves the replay at once, with no backoff, until the batch
is one input; anything else backs off."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from kafka.errors import (
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    TopicAuthorizationFailedError,
)
from prometheus_client import CollectorRegistry

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.runtime import runner as runner_module
from neardup_stream.worker.runtime.health import RoleHealth
from neardup_stream.worker.runtime.overlap import Overlapped, PendingCommit
from neardup_stream.worker.runtime.policy import Blame
from neardup_stream.worker.runtime.publisher import PublishFailure
from neardup_stream.worker.runtime.runner import RoleRunner
from neardup_stream.worker.settings import Settings


class FakeRole:
    """What the synchronous runner's failure handling uses of a role."""

    name = "shard"
    consumer = None
    rejections = None  # its records answer for no input
    max_records = 8
    max_bytes = 1 << 30

    def __init__(self, health: RoleHealth) -> None:
        self.role = Settings()
        self.health = health
        self.rebuilds = 0
        self.raising: list[Exception] = []  # raised by the next rebuilds, in turn

    def rebuild(self) -> None:
        self.rebuilds += 1
        if self.raising:
            raise self.raising.pop(0)

    def close(self) -> None:
        pass


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> tuple[RoleRunner[Any, Any], FakeRole, list[float]]:
    """A runner on a fake role, its producer never made, its backoff pauses recorded."""
    monkeypatch.setattr(runner_module, "Publisher", lambda *a, **k: object())
    pauses: list[float] = []
    monkeypatch.setattr(runner_module.shutdown, "pause", lambda stop, s: pauses.append(s))
    metrics = build_metrics(CollectorRegistry())
    role = FakeRole(RoleHealth("shard", metrics))
    return RoleRunner(role, metrics, threading.Event()), role, pauses  # type: ignore[arg-type]


def _too_large() -> PublishFailure[None]:
    error = MessageSizeTooLargeError("the changelog record")
    return PublishFailure(error, None, Blame(3, "the broker rejected the output: too large"))


def test_a_record_refused_for_the_whole_batch_halves_it_without_backoff(
    runner: tuple[RoleRunner[Any, Any], FakeRole, list[float]],
) -> None:
    r, role, pauses = runner
    limits = []
    for _ in range(3):  # 8 -> 4 -> 2 -> 1 records
        r._failed(_too_large())
        limits.append(r.policy.shrunk(role.max_records))
    assert limits == [4, 2, 1]
    assert pauses == []
    assert role.rebuilds == 3
    # One input and still refused with no input to blame: a failure like any other.
    r._failed(_too_large())
    assert len(pauses) == 1 and pauses[0] > 0
    assert role.rebuilds == 4


def test_a_transient_failure_still_backs_off(
    runner: tuple[RoleRunner[Any, Any], FakeRole, list[float]],
) -> None:
    r, role, pauses = runner
    r._failed(PublishFailure(KafkaTimeoutError("no answer"), None))
    assert len(pauses) == 1 and pauses[0] > 0
    assert r.policy.shrunk(role.max_records) == 4


def test_a_role_that_holds_no_partition_ends_its_failure_streak(
    runner: tuple[RoleRunner[Any, Any], FakeRole, list[float]],
) -> None:
    r, role, _ = runner
    for _ in range(role.health.max_failures):
        r._failed(PublishFailure(KafkaTimeoutError("the commit"), None))
    assert not role.health.healthy()
    held = {"partitions": {("in", 0)}}
    role.consumer = type("Consumer", (), {"assignment": lambda self: held["partitions"]})()
    r._holding_nothing()
    assert not role.health.healthy()  # it still holds what failed
    held["partitions"] = set()  # the partition moved to another replica
    r._holding_nothing()
    assert role.health.healthy()


def test_a_retriable_error_while_the_role_rebuilds_is_retried_not_a_failed_role(
    runner: tuple[RoleRunner[Any, Any], FakeRole, list[float]],
) -> None:
    """A committed-offset look-up inside the rebuild times out (a broker pause): the rebuild
    runs again after a backoff, and the role goes on."""
    r, role, pauses = runner
    role.raising = [KafkaTimeoutError("committed offsets"), KafkaTimeoutError("again")]
    r._failed(PublishFailure(KafkaTimeoutError("the commit"), None))
    assert role.rebuilds == 3 and len(pauses) == 3  # the failure's backoff, two retries
    role.raising = [ValueError("a bug")]  # not a broker error: it fails the role
    with pytest.raises(ValueError):
        r._failed(PublishFailure(KafkaTimeoutError("the commit"), None))


# The one failure path (`RoleRunner._failed`) in both modes: synchronous (the edge, and the
# shard and gather without overlapped commits) and in flight (`runtime.overlap`).


class FakePublisher:
    """The runner's publisher, never connected: counts the producers it replaced."""

    def __init__(self) -> None:
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def settle(self) -> None:
        return None


class FakeRoleInFlight(FakeRole):
    """The fake role run with its commits in flight: what `Overlapped` uses of it."""

    def __init__(self, health: RoleHealth) -> None:
        super().__init__(health)
        self.counted: list[Any] = []

    def committed(self, carried: Any, at: float) -> None:
        self.counted.append(carried)


def _runner_in(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[RoleRunner[Any, Any], FakeRoleInFlight, FakePublisher, CollectorRegistry]:
    publisher = FakePublisher()
    monkeypatch.setattr(runner_module, "Publisher", lambda *a, **k: publisher)
    monkeypatch.setattr(runner_module.shutdown, "pause", lambda stop, s: None)
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    role = FakeRoleInFlight(RoleHealth("shard", metrics))
    in_flight = Overlapped(role, PendingCommit(), metrics) if mode == "in-flight" else None  # type: ignore[arg-type]
    r = RoleRunner(role, metrics, threading.Event(), in_flight)  # type: ignore[arg-type]
    return r, role, publisher, registry


MODES = ["synchronous", "in-flight"]


def _denied() -> PublishFailure[None]:
    error = TopicAuthorizationFailedError("WRITE on the output topic")
    return PublishFailure(error, None, denied=error)


@pytest.mark.parametrize("mode", MODES)
def test_a_denial_fails_the_role_at_once_in_every_mode(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ACL revoked mid-run: no replay can succeed, so the role stops (before, only a role
    in flight raised; the edge retried a denied transaction for ever, looking alive)."""
    r, role, publisher, _ = _runner_in(mode, monkeypatch)
    with pytest.raises(TopicAuthorizationFailedError):
        r._failed(_denied(), published=True)
    assert role.rebuilds == 0 and publisher.resets == 0


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_transaction_is_counted_once_and_replaces_the_producer(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, role, publisher, registry = _runner_in(mode, monkeypatch)
    r._failed(PublishFailure(KafkaTimeoutError("the commit"), None), published=True)
    assert registry.get_sample_value("neardup_role_failures_total", {"role": "shard"}) == 1
    assert role.health._failures == 1
    assert publisher.resets == 1 and role.rebuilds == 1


@pytest.mark.parametrize("mode", MODES)
def test_a_failed_step_keeps_the_producer_and_a_judged_one_does_not_back_off(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    r, role, publisher, _ = _runner_in(mode, monkeypatch)
    r._failed(PublishFailure(ValueError("the engine"), None), backoff=False)
    assert publisher.resets == 0 and role.rebuilds == 1
    assert r.policy.shrunk(role.max_records) == role.max_records  # judged: no failure streak


def test_commits_settled_before_a_failure_do_not_end_its_streak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In flight, a commit the commit thread finished before the failure is counted first:
    counted after it, it would reset the health the failure just counted."""
    r, role, _, _ = _runner_in("in-flight", monkeypatch)
    assert r.in_flight is not None
    r.in_flight.counted(3, 1.0)  # committed, then every later batch failed
    for _ in range(role.health.max_failures):
        r._failed(PublishFailure(KafkaTimeoutError("the commit"), None), published=True)
    assert role.counted == [3]
    assert not role.health.healthy()


def test_a_read_that_failed_in_flight_aborts_nothing_of_the_role(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r, role, publisher, registry = _runner_in("in-flight", monkeypatch)
    r._read_failed(KafkaTimeoutError("a fetch"))
    assert registry.get_sample_value("neardup_role_failures_total", {"role": "shard"}) == 1
    assert publisher.resets == 0 and role.rebuilds == 1
