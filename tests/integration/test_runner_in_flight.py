"""`runtime.runner.RoleRunner` driving an in-flight publisher (`role.InFlight`), against the
real broker, with a small role of the test's own: the engine's bisection (a step that raises
on a batch of several inputs halves the next batch until the input causing it is alone, and
that input is then dead-lettered on the replay), the commit of each batch settled before the
next is published, every input answered exactly once, and failures counted by the role.
Broker errors while polling: a group poll refused is polled again; a retriable error after
the poll read records (following the assignment, reading a log) rewinds to the committed
offsets, for this in-flight role and for a synchronous one (`SyncEcho`), so nothing read
and dropped with the error is skipped."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaConnectionError, KafkaTimeoutError
from prometheus_client import CollectorRegistry

from neardup_stream.worker import clients
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.metrics import Metrics, build_metrics
from neardup_stream.worker.partitions import rewind_to_committed
from neardup_stream.worker.records import Source
from neardup_stream.worker.runtime import runner as runner_module
from neardup_stream.worker.runtime.broker_gone import BrokerGone, group_poll
from neardup_stream.worker.runtime.publisher import PublishFailure, Transaction
from neardup_stream.worker.runtime.role import Limits, Output, Verdict
from neardup_stream.worker.runtime.runner import RoleRunner
from neardup_stream.worker.settings import KafkaSettings, Settings, TopicSettings, WorkerSettings
from tests.integration.harness import produce, read_all

pytestmark = pytest.mark.integration
POISON = b"poison"
Polled = list[tuple[Source, bytes]]


class EchoRole:
    """Echoes each input upper-cased to `out`; its step raises on a batch holding POISON
    (until POISON is dead-lettered: then it answers `dead` for it)."""

    name = "echo"
    health = None
    max_bytes = 0
    rejections = None

    def __init__(self, settings: Settings, out: str) -> None:
        self.role, self.out = settings, out
        self.consumer: KafkaConsumer = clients.make_consumer(settings)
        self.max_records = settings.worker.max_batch
        self.dead: set[Source] = set()  # dead-lettered on the replay
        self.failed_batches: list[int] = []  # sizes of the batches whose step raised
        self.committed_batches: list[int] = []
        self.aborts = self.rounds = 0
        self.recovered: list[Polled | None] = []
        self.read_failures = 0  # polls to fail after reading records (the records dropped)
        self.restore_polls = 0  # after a rebuild, polls that hold nothing yet (they succeed)
        self.restoring = 0

    def start(self) -> None:
        self.consumer.subscribe([self.role.topics.input])

    def poll(self, limits: Limits) -> Polled:
        if self.restoring:  # as a rebuilt shard or gather: nothing held, nothing read
            self.restoring -= 1
            return []
        polled = group_poll(self.consumer, timeout_ms=200, max_records=limits.records)
        if self.read_failures and any(polled.values()):
            self.read_failures -= 1  # as a checkpoint read after the group poll times out
            raise KafkaTimeoutError("committed() timed out")
        return [
            (Source(tp.topic, tp.partition, m.offset), m.value)
            for tp, ms in polled.items()
            for m in ms
        ]

    def step(self, polled: Polled, limits: Limits) -> Output[int] | None:
        if not polled:
            return None
        if any(v == POISON and s not in self.dead for s, v in polled):
            raise ValueError("the engine failed on this batch")
        messages = [
            OutMessage(self.out, None, b"dead" if s in self.dead else v.upper()) for s, v in polled
        ]
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for s, _ in polled:
            offsets[TopicPartition(s.topic, s.partition)] = OffsetAndMetadata(s.offset + 1, "", -1)
        sources = [s for s, _ in polled]
        return Output(Transaction(messages, sources, offsets), len(polled))

    def committed(self, carried: int, at: float) -> None:
        raise AssertionError("an in-flight role is counted on the commit thread")

    def rebuild(self) -> None:
        raise AssertionError("an in-flight role recovers through `recover`")

    def close(self) -> None:
        self.consumer.close(autocommit=False)

    # role.InFlight
    def bind(self, settle: Callable[[], PublishFailure[int] | None]) -> None:
        self.settle = settle

    def revoke_failure(self) -> PublishFailure[int] | None:
        return None

    def counted(self, carried: int, committed_at: float) -> None:
        self.committed_batches.append(carried)

    def step_failed(self, polled: Polled, error: Exception) -> Verdict:
        self.failed_batches.append(len(polled))
        if len(polled) == 1:
            self.dead.add(polled[0][0])
            return Verdict.DEAD_LETTERED
        return Verdict.BISECT

    def aborted(self) -> None:
        self.aborts += 1

    def recover(self, carried: int | None, polled: Polled | None) -> None:
        self.recovered.append(polled)
        owned = {tp.partition for tp in self.consumer.assignment()}
        rewind_to_committed(self.consumer, self.role.topics.input, owned)

    def between(self, settled: Callable[[], bool]) -> None:
        self.rounds += 1


class SyncEcho(EchoRole):
    """The echo role run synchronously (as the cluster roles are): counted once committed,
    rewound to the committed offsets by `rebuild`."""

    def committed(self, carried: int, at: float) -> None:
        self.committed_batches.append(carried)

    def rebuild(self) -> None:
        self.recover(None, None)
        self.restoring = self.restore_polls


class Refusing:
    """A consumer whose next `refusals` polls meet a broker that refuses connections, as
    kafka-python 3's coordinator lookup raises while the broker restarts."""

    def __init__(self, consumer: KafkaConsumer, refusals: int) -> None:
        self.consumer, self.refusals, self.polls = consumer, refusals, 0

    def poll(self, **poll_args: Any) -> Any:
        self.polls += 1
        if self.refusals:
            self.refusals -= 1
            raise KafkaConnectionError("111 ECONNREFUSED")
        return self.consumer.poll(**poll_args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.consumer, name)


@dataclass
class Running:
    """A runner thread driving an `EchoRole`, and what it raised (as the replica's guard would
    see it)."""

    role: EchoRole
    runner: RoleRunner
    thread: threading.Thread
    stop: threading.Event
    metrics: Metrics
    errors: list[BaseException]

    def wait_committed(self, count: int) -> None:
        """Until `count` inputs are committed (polling a condition), the runner alive."""
        deadline = time.monotonic() + 120
        while sum(self.role.committed_batches) < count and time.monotonic() < deadline:
            assert self.thread.is_alive(), f"the runner died: {self.errors}"
            time.sleep(0.1)
        assert sum(self.role.committed_batches) == count, self.role.committed_batches

    def fails(self, timeout: float, why: str) -> list[BaseException]:
        """Until the runner ends by itself (`why` if it does not within `timeout`); what it
        raised."""
        try:
            self.thread.join(timeout)
            assert not self.thread.is_alive(), why
        finally:
            self.stop.set()
            self.runner.close()
        return self.errors

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60)
        self.runner.publisher.settle()
        self.runner.close()


def start_echo(
    bootstrap: str,
    topic: str,
    out: str,
    backoff_s: float,
    refusals: int = 0,
    read_failures: int = 0,
    synchronous: bool = False,
    restore_polls: int = 0,
) -> Running:
    """An `EchoRole` of `topic` run by a `RoleRunner` on a thread (a `SyncEcho` if
    `synchronous`); its consumer's first `refusals` polls refused (`Refusing`), its first
    `read_failures` polls that read records failing after the read."""
    settings = Settings(
        kafka=KafkaSettings(bootstrap_servers=bootstrap),
        topics=TopicSettings(input=topic),
        worker=WorkerSettings(group_id="g-" + topic, max_batch=8, retry_backoff_max_s=backoff_s),
    )
    role = (SyncEcho if synchronous else EchoRole)(settings, out)
    role.read_failures, role.restore_polls = read_failures, restore_polls
    if refusals:
        role.consumer = Refusing(role.consumer, refusals)  # type: ignore[assignment]
    stop, metrics = threading.Event(), build_metrics(CollectorRegistry())
    runner = RoleRunner(role, metrics, stop, in_flight=None if synchronous else role)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            runner.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return Running(role, runner, thread, stop, metrics, errors)


def echo_past_a_poison(
    bootstrap: str, topic: str, at: int, backoff_s: float, synchronous: bool = False
) -> Running:
    """20 inputs, POISON at `at`, echoed by a runner until all are committed; each output
    checked: the echo, or `dead` for the poison."""
    out = topic + "-out"
    values = [f"doc-{i}".encode() for i in range(20)]
    values[at] = POISON
    produce(bootstrap, topic, values, keys=False)
    echo = start_echo(bootstrap, topic, out, backoff_s=backoff_s, synchronous=synchronous)
    try:
        echo.wait_committed(len(values))
    finally:
        echo.finish()
    got = [m.value for m in read_all(bootstrap, out, len(values))]
    assert got == [b"dead" if v == POISON else v.upper() for v in values]
    return echo


def test_a_batch_the_step_fails_on_is_bisected_to_its_input_which_is_dead_lettered_once(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic = unique_topic("in")
    role = echo_past_a_poison(kafka_bootstrap, topic, at=10, backoff_s=1.0).role
    tp = TopicPartition(topic, 0)
    # halved per consecutive failure until the poison is alone, then dead-lettered once
    # the full batch fails first; consecutive failures halve it until the poison is alone,
    # which is dead-lettered once (a commit in between may reset the halving once)
    assert role.failed_batches[0] == 8 and role.failed_batches[-3:] == [4, 2, 1]
    assert all(n > 1 for n in role.failed_batches[:-1]) and len(role.dead) == 1
    assert role.aborts == len(role.failed_batches)
    assert all(p is not None for p in role.recovered)  # the failed batch's inputs rebuilt
    committed = KafkaConsumer(bootstrap_servers=kafka_bootstrap, group_id="g-" + topic)
    try:
        assert committed.committed(tp) == 20
    finally:
        committed.close()


def test_a_synchronous_role_that_judges_its_step_bisects_and_dead_letters_the_input_once(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    """`role.Judging` (the cluster's edge): the same bisection without a commit in flight;
    before, a synchronous role's failed step was retried as it was, for good."""
    topic = unique_topic("in")
    echo = echo_past_a_poison(kafka_bootstrap, topic, at=13, backoff_s=30.0, synchronous=True)
    role = echo.role
    assert role.failed_batches[0] == 8 and role.failed_batches[-1] == 1
    assert all(n > 1 for n in role.failed_batches[:-1]) and len(role.dead) == 1
    failures = echo.metrics.role_failures.labels("echo")._value.get()
    assert failures == len(role.failed_batches)


def test_group_polls_the_broker_refuses_are_retried_and_the_role_keeps_running(
    kafka_bootstrap: str, unique_topic: Callable[[str], str]
) -> None:
    topic, out = unique_topic("in"), unique_topic("out")
    values = [f"doc-{i}".encode() for i in range(12)]
    produce(kafka_bootstrap, topic, values, keys=False)
    echo = start_echo(kafka_bootstrap, topic, out, backoff_s=0.5, refusals=3)
    role, metrics, errors = echo.role, echo.metrics, echo.errors
    try:
        echo.wait_committed(len(values))
    finally:
        echo.finish()
    assert role.consumer.refusals == 0 and not errors
    assert role.failed_batches == [] and role.aborts == 0
    assert metrics.role_failures.labels("echo")._value.get() == 3
    got = [m.value for m in read_all(kafka_bootstrap, out, len(values))]
    assert got == [v.upper() for v in values]


def test_a_broker_that_stays_away_fails_the_role_after_a_while(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner_module, "GIVE_UP_S", 1.0)
    topic = unique_topic("in")
    produce(kafka_bootstrap, topic, [b"x"], keys=False)
    echo = start_echo(kafka_bootstrap, topic, topic + "-o", backoff_s=0.5, refusals=10**6)
    role = echo.role
    errors = echo.fails(60, "the runner kept polling a broker that stays away")
    assert len(errors) == 1 and isinstance(errors[0], BrokerGone)
    assert isinstance(errors[0].__cause__, KafkaConnectionError) and role.consumer.polls > 2


@pytest.mark.parametrize("synchronous", [False, True], ids=["in-flight", "synchronous"])
def test_a_retriable_error_after_the_poll_read_rewinds_and_nothing_read_is_skipped(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], synchronous: bool
) -> None:
    topic, out = unique_topic("in"), unique_topic("out")
    values = [f"doc-{i}".encode() for i in range(30)]
    produce(kafka_bootstrap, topic, values, keys=False)
    echo = start_echo(
        kafka_bootstrap, topic, out, backoff_s=0.5, read_failures=3, synchronous=synchronous
    )
    role, metrics = echo.role, echo.metrics
    try:
        echo.wait_committed(len(values))
    finally:
        echo.finish()
    assert role.read_failures == 0 and not echo.errors
    assert metrics.role_failures.labels("echo")._value.get() == 3
    assert role.aborts == 0 and role.failed_batches == []  # nothing committed was rolled back
    got = [m.value for m in read_all(kafka_bootstrap, out, len(values))]
    assert got == [v.upper() for v in values]  # every input once, in order: none skipped


def test_reading_that_keeps_failing_fails_the_role_though_polls_between_succeed(
    kafka_bootstrap: str, unique_topic: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After each rewind some polls come back empty (they succeed), then the records are read
    again and the error comes back: with no commit between the failures it is one streak."""
    monkeypatch.setattr(runner_module, "GIVE_UP_S", 2.0)
    topic = unique_topic("in")
    produce(kafka_bootstrap, topic, [b"x", b"y"], keys=False)
    echo = start_echo(
        kafka_bootstrap,
        topic,
        topic + "-o",
        backoff_s=0.5,
        read_failures=10**6,
        synchronous=True,
        restore_polls=3,
    )
    echo.fails(90, "the runner kept rebuilding a read that keeps failing")
    assert len(echo.errors) == 1 and isinstance(echo.errors[0], KafkaTimeoutError)
    assert echo.role.committed_batches == [] and 10**6 - echo.role.read_failures > 2
