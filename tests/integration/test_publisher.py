"""The one publisher (`neardup_stream.worker.runtime.publisher`) against the real broker: messages and offsets
with metadata commit together or not at all, in both modes; a refused message is blamed on
its input; a fenced publisher fails instead of committing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import kafka.producer.sender as kafka_sender
import pytest
from kafka import KafkaAdminClient, KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.admin import NewTopic

from neardup_stream.worker import clients
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.records import Source
from neardup_stream.worker.runtime.publisher import NotAMember, Publisher, Transaction, Written
from neardup_stream.worker.settings import Settings
from tests.integration.harness import read_all

pytestmark = pytest.mark.integration


class Setup:
    """An output topic, a consumed topic whose offsets the transactions commit, a group."""

    def __init__(self, bootstrap: str, unique_topic: Callable[[str], str], eos: bool) -> None:
        self.out, self.consumed, group = unique_topic("out"), unique_topic("in"), unique_topic("g")
        self.settings = Settings().with_overrides(
            {
                "kafka": {"bootstrap_servers": bootstrap},
                "worker": {
                    "group_id": group,
                    "instance_id": "p1",
                    "exactly_once": eos,
                    "scope": "partition",  # the partition-scope worker's publisher
                },
            }
        )
        self.consumer = clients.make_consumer(self.settings)
        self.bootstrap = bootstrap

    def txn(self, values: list[bytes], offset: int, metadata: str = "") -> Transaction:
        messages = [OutMessage(self.out, b"k", v, partition=0) for v in values]
        sources: list[Source | None] = [Source(self.consumed, 0, i) for i in range(len(values))]
        offsets = {TopicPartition(self.consumed, 0): OffsetAndMetadata(offset, metadata, -1)}
        return Transaction(messages, sources, offsets)

    def join(self) -> None:
        """Join the group (a transaction's offsets are fenced by the member's generation)."""
        self.consumer.subscribe([self.consumed])
        deadline = time.monotonic() + 60
        while not self.consumer.assignment():
            assert time.monotonic() < deadline, "the group never assigned the partition"
            self.consumer.poll(timeout_ms=200)

    def committed(self) -> OffsetAndMetadata | None:
        found = self.consumer.committed(TopicPartition(self.consumed, 0), metadata=True)
        return found if isinstance(found, OffsetAndMetadata) else None


@pytest.fixture
def make(
    kafka_bootstrap: str, kafka_admin: KafkaAdminClient, unique_topic: Callable[[str], str]
) -> Iterator[Callable[..., Setup]]:
    made: list[Setup] = []

    def build(eos: bool = True, out_max_bytes: int | None = None, join: bool = True) -> Setup:
        setup = Setup(kafka_bootstrap, unique_topic, eos)
        configs = {} if out_max_bytes is None else {"max.message.bytes": str(out_max_bytes)}
        kafka_admin.create_topics(
            [NewTopic(setup.out, 1, 1, topic_configs=configs), NewTopic(setup.consumed, 1, 1)]
        )
        made.append(setup)
        if join:
            setup.join()
        return setup

    yield build
    for setup in made:
        setup.consumer.close(autocommit=False)


def test_synchronous_mode_commits_messages_and_offsets_with_metadata(
    make: Callable[..., Setup],
) -> None:
    setup = make()
    publisher: Publisher[str] = Publisher(setup.settings, setup.consumer, "edge")
    try:
        assert publisher.publish(setup.txn([b"a", b"b"], 7, '{"v":1}'), "first") is None
        assert publisher.publish(setup.txn([b"c"], 9, '{"v":2}'), "second") is None
    finally:
        publisher.close()
    got = read_all(setup.bootstrap, setup.out, 3)
    assert [m.value for m in got] == [b"a", b"b", b"c"]
    committed = setup.committed()
    assert committed is not None and (committed.offset, committed.metadata) == (9, '{"v":2}')


class RecordedSleeps:
    """kafka-python's sender module's `time`, recording what the sender thread sleeps."""

    def __init__(self) -> None:
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_transaction_begun_while_the_last_completes_retries_after_the_setting(
    make: Callable[..., Setup], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Back to back, a transaction's first request can find the previous one still completing
    (CONCURRENT_TRANSACTIONS). kafka-python's sender then sleeps its `retry_backoff_ms` (100 ms
    by default) before retrying: the producer takes `kafka.producer_retry_backoff_ms`."""
    setup = make()
    setup.settings = setup.settings.with_overrides({"kafka": {"producer_retry_backoff_ms": 7}})
    recorded = RecordedSleeps()
    monkeypatch.setattr(kafka_sender, "time", recorded)
    publisher: Publisher[int] = Publisher(setup.settings, setup.consumer, "edge")
    try:
        for i in range(500):  # until one was retried: most are not
            assert publisher.publish(setup.txn([b"x"], i + 1), i) is None
            if recorded.slept:
                break
    finally:
        publisher.close()
    assert recorded.slept, "500 back-to-back transactions, none retried"
    assert set(recorded.slept) == {0.007}
    committed = setup.committed()
    assert committed is not None and committed.offset == i + 1


def test_in_flight_mode_counts_what_committed_once_settled(make: Callable[..., Setup]) -> None:
    setup = make()
    counted: list[str] = []
    publisher: Publisher[str] = Publisher(
        setup.settings,
        setup.consumer,
        "batch",
        in_flight=True,
        on_committed=lambda c, _: counted.append(c),
    )
    try:
        for i in range(3):
            assert publisher.publish(setup.txn([b"x%d" % i], i + 1), f"batch {i}") is None
            assert publisher.settle() is None
        assert publisher.settle() is None  # nothing in flight
    finally:
        publisher.close()
    assert counted == ["batch 0", "batch 1", "batch 2"]
    assert [m.value for m in read_all(setup.bootstrap, setup.out, 3)] == [b"x0", b"x1", b"x2"]
    committed = setup.committed()
    assert committed is not None and committed.offset == 3


@pytest.mark.parametrize("in_flight", [False, True], ids=["synchronous", "in-flight"])
def test_a_publisher_commits_on_one_thread_until_a_reset_gives_it_another(
    make: Callable[..., Setup], in_flight: bool
) -> None:
    """No thread is started per transaction (`runtime.committer`); a reset, which follows
    every failure and may leave a commit that never returns, moves commits to a new one."""
    setup = make()
    threads: list[threading.Thread] = []
    publisher: Publisher[int] = Publisher(
        setup.settings,
        setup.consumer,
        "batch",
        in_flight=in_flight,
        on_committed=lambda *_: threads.append(threading.current_thread()),
    )
    try:
        for i in range(4):
            if i == 2:
                publisher.reset()
            assert publisher.publish(setup.txn([b"x%d" % i], i + 1), i) is None
            assert publisher.settle() is None
    finally:
        publisher.close()
    assert len(threads) == 4
    assert threads[0] is threads[1] and threads[2] is threads[3]
    assert threads[1] is not threads[2]
    assert {t.name for t in threads} == {"batch-commit"}
    threads[0].join(timeout=10)  # stopped by the reset, once its last commit returned
    assert not threads[0].is_alive()
    values = [m.value for m in read_all(setup.bootstrap, setup.out, 4)]
    assert values == [b"x%d" % i for i in range(4)]


@pytest.mark.parametrize("in_flight", [False, True], ids=["synchronous", "in-flight"])
def test_a_refused_message_is_blamed_on_its_input_and_nothing_commits(
    make: Callable[..., Setup], in_flight: bool
) -> None:
    setup = make(out_max_bytes=20_000)
    publisher: Publisher[str] = Publisher(setup.settings, setup.consumer, "gather", in_flight)
    try:
        failure = publisher.publish(setup.txn([b"ok", b"y" * 50_000, b"ok too"], 3), "doomed")
        if in_flight and failure is None:
            failure = publisher.settle()
        assert failure is not None and failure.carried == "doomed"
        rejected = failure.rejected
        assert rejected is not None and rejected.source == Source(setup.consumed, 0, 1)
        assert "MessageSizeTooLargeError" in rejected.why
        publisher.reset()  # fences and aborts the open transaction
        assert setup.committed() is None
        # the replay, without the refused message, commits
        assert publisher.publish(setup.txn([b"ok", b"ok too"], 3), "replay") is None
        assert publisher.settle() is None
    finally:
        publisher.close()
    assert [m.value for m in read_all(setup.bootstrap, setup.out, 2)] == [b"ok", b"ok too"]
    committed = setup.committed()
    assert committed is not None and committed.offset == 3


def test_a_transaction_whose_verify_refuses_where_it_was_written_commits_nothing(
    make: Callable[..., Setup],
) -> None:
    """`Transaction.verify` gets where each message was written, before the commit; if it
    raises, the transaction fails and nothing of it commits (the single stage's log check)."""
    setup = make()
    publisher: Publisher[str] = Publisher(setup.settings, setup.consumer, "edge")
    written: list[list[int]] = []

    def refuse(offsets: Written) -> None:
        written.append([offsets[n] for n in range(len(offsets))])
        raise RuntimeError("not where it was decided")

    try:
        failure = publisher.publish(setup.txn([b"a", b"b"], 2)._replace(verify=refuse), "no")
        assert failure is not None and "not where it was decided" in str(failure.error)
        assert written == [[0, 1]] and failure.rejected is None
        publisher.reset()  # aborts what it left open
        assert setup.committed() is None
        txn = setup.txn([b"c"], 3)._replace(verify=lambda w: written.append([w[0]]))
        assert publisher.publish(txn, "yes") is None
    finally:
        publisher.close()
    assert len(written) == 2 and written[1][0] > 1  # after the aborted records
    assert [m.value for m in read_all(setup.bootstrap, setup.out, 1)] == [b"c"]
    committed = setup.committed()
    assert committed is not None and committed.offset == 3


def test_a_fenced_publisher_fails_and_commits_nothing(make: Callable[..., Setup]) -> None:
    setup = make()
    old: Publisher[str] = Publisher(setup.settings, setup.consumer, "shard")
    new: Publisher[str] = Publisher(setup.settings, setup.consumer, "shard")  # same id: fences
    try:
        failure = old.publish(setup.txn([b"stale"], 5), "stale")
        assert failure is not None and failure.rejected is None  # not blamed on an input
        assert setup.committed() is None
        assert new.publish(setup.txn([b"fresh"], 5), "fresh") is None
    finally:
        old.close()
        new.close()
    assert [m.value for m in read_all(setup.bootstrap, setup.out, 1)] == [b"fresh"]


def test_a_publisher_out_of_its_group_fails_and_commits_nothing(
    make: Callable[..., Setup],
) -> None:
    """Not a member (never joined, or evicted): the broker would take its offsets unfenced."""
    setup = make(join=False)
    publisher: Publisher[str] = Publisher(setup.settings, setup.consumer, "gather")
    try:
        failure = publisher.publish(setup.txn([b"unfenced"], 3), "unfenced")
    finally:
        publisher.close()
    assert failure is not None and isinstance(failure.error, NotAMember)
    assert setup.committed() is None
    assert read_all(setup.bootstrap, setup.out, 0, timeout=3) == []


def test_at_least_once_mode_commits_offsets_without_a_transaction(
    make: Callable[..., Setup],
) -> None:
    setup = make(eos=False)
    counted = threading.Event()
    publisher: Publisher[str] = Publisher(
        setup.settings, setup.consumer, "batch", True, lambda *_: counted.set()
    )
    try:
        assert publisher.publish(setup.txn([b"a"], 1, "meta"), "one") is None
        assert counted.is_set()  # committed before publish returned
    finally:
        publisher.close()
    committed = setup.committed()
    assert committed is not None and (committed.offset, committed.metadata) == (1, "meta")
    plain = KafkaConsumer(bootstrap_servers=setup.bootstrap, group_id=None)
    try:
        assert plain.end_offsets([TopicPartition(setup.out, 0)])[TopicPartition(setup.out, 0)] == 1
    finally:
        plain.close()
