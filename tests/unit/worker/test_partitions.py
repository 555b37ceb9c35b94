"""`partitions.rewind_to_committed`: each partition back to its committed offset, and a
look-up that cannot hang (kafka-python's `committed` without a timeout waits forever while
the coordinator is away; the recovery retries it and looks at its stop in between)."""

from __future__ import annotations

import threading
import uuid
from types import SimpleNamespace

import pytest
from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import IllegalStateError, KafkaTimeoutError

from neardup_stream.worker import retry
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS, position, rewind_to_committed
from neardup_stream.worker.topic_ids import current as topic_id


class Consumer:
    """Committed offsets per partition; `answers` False: every look-up times out."""

    def __init__(self, committed: dict[int, int | None], answers: bool = True) -> None:
        self._committed, self.answers = committed, answers
        self.timeouts: list[int | None] = []
        self.seeks: dict[int, int | str] = {}
        self.metadata = ""  # of every commit

    def committed(
        self, tp: TopicPartition, metadata: bool = False, timeout_ms: int | None = None
    ) -> OffsetAndMetadata | None:
        self.timeouts.append(timeout_ms)
        if not self.answers:
            raise KafkaTimeoutError(f"no answer within {timeout_ms} ms")
        found = self._committed[tp.partition]
        return None if found is None else OffsetAndMetadata(found, self.metadata, -1)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.seeks[tp.partition] = offset

    def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.seeks[tp.partition] = "beginning"


def test_each_partition_goes_back_to_its_committed_offset_or_the_beginning() -> None:
    consumer = Consumer({0: 17, 1: None})
    rewind_to_committed(consumer, "in", {0, 1})  # type: ignore[arg-type]
    assert consumer.seeks == {0: 17, 1: "beginning"}
    assert consumer.timeouts == [COMMITTED_TIMEOUT_MS] * 2


def test_a_commit_naming_another_incarnation_of_the_topic_goes_back_to_the_beginning() -> None:
    consumer = Consumer({0: 17})
    consumer.metadata = f"topic-id={uuid.UUID(int=1)}"
    consumer._client = SimpleNamespace(cluster=SimpleNamespace(topic_id={}.get))  # type: ignore[attr-defined]
    rewind_to_committed(consumer, "in", {0})  # type: ignore[arg-type]
    assert consumer.seeks == {0: 17}  # the id now is not known: taken as it is
    consumer._client.cluster.topic_id = {"in": uuid.UUID(int=1)}.get  # type: ignore[attr-defined]
    rewind_to_committed(consumer, "in", {0})  # type: ignore[arg-type]
    assert consumer.seeks == {0: 17}
    consumer._client.cluster.topic_id = {"in": uuid.UUID(int=2)}.get  # type: ignore[attr-defined]
    rewind_to_committed(consumer, "in", {0})  # type: ignore[arg-type]
    assert consumer.seeks == {0: "beginning"}


def test_a_coordinator_that_never_answers_leaves_the_recovery_stoppable() -> None:
    consumer, stop = Consumer({0: 5}, answers=False), threading.Event()
    timer = threading.Timer(0.3, stop.set)
    timer.start()
    try:
        retry.until_done(stop, 0.1, lambda: rewind_to_committed(consumer, "in", {0}))  # type: ignore[arg-type]
    finally:
        timer.cancel()
    assert stop.is_set() and consumer.seeks == {}
    assert consumer.timeouts and all(t == COMMITTED_TIMEOUT_MS for t in consumer.timeouts)


class Positioned:
    """A group consumer whose position on a partition is `at` (None: not found in time)."""

    def __init__(self, at: int | None) -> None:
        self.at, self.timeouts = at, []

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int | None:
        self.timeouts.append(timeout_ms)
        return self.at


def test_a_position_is_looked_up_within_the_timeout() -> None:
    consumer = Positioned(42)
    assert position(consumer, TopicPartition("votes", 0)) == 42  # type: ignore[arg-type]
    assert consumer.timeouts == [COMMITTED_TIMEOUT_MS]


def test_no_position_in_time_is_a_retriable_timeout_not_a_type_error() -> None:
    with pytest.raises(KafkaTimeoutError) as raised:
        position(Positioned(None), TopicPartition("votes", 3))  # type: ignore[arg-type]
    assert raised.value.retriable and "votes[3]" in str(raised.value)


def test_a_topic_id_is_read_from_the_consumers_metadata_and_none_when_unknown() -> None:
    known = {"cl": uuid.UUID("46674105-9769-453b-adfe-3cbb0605f32f"), "old": uuid.UUID(int=0)}
    cluster = SimpleNamespace(topic_id=known.get)
    consumer = SimpleNamespace(_client=SimpleNamespace(cluster=cluster))
    assert topic_id(consumer, "cl") == "46674105-9769-453b-adfe-3cbb0605f32f"  # type: ignore[arg-type]
    assert topic_id(consumer, "old") is None  # type: ignore[arg-type]  # (no ids)
    assert topic_id(consumer, "absent") is None  # type: ignore[arg-type]
    assert topic_id(SimpleNamespace(), "cl") is None  # type: ignore[arg-type]


class Lagging:
    """A consumer assigned `assigned` whose highwater refuses any other partition, as
    kafka-python's does (`IllegalStateError`)."""

    def __init__(self, assigned: set[TopicPartition]) -> None:
        self.assigned = assigned

    def assignment(self) -> set[TopicPartition]:
        return self.assigned

    def highwater(self, tp: TopicPartition) -> int:
        if tp not in self.assigned:
            raise IllegalStateError("Partition is not assigned")
        return 10

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int:
        return 4


def test_the_lag_skips_a_partition_held_but_no_longer_assigned() -> None:
    """The input topic was deleted under the worker: its assignment emptied before the
    partition's state was released; the lag export must not fail the round."""
    from prometheus_client import CollectorRegistry

    from neardup_stream.worker.metrics import build_metrics
    from neardup_stream.worker.partitions import update_lag

    metrics = build_metrics(CollectorRegistry())
    consumer = Lagging({TopicPartition("in", 1)})
    assert update_lag(consumer, "in", {0, 1}, metrics) == {1: 6}  # type: ignore[arg-type]
