"""`InputStart`: a missing or out-of-range input position is placed at the log start, and what
that skips is reported once; after a rebalance, a position kept from an earlier assignment is
moved to the committed offset (a stand-in consumer raising what kafka-python raises)."""

from __future__ import annotations

import logging
import uuid
from typing import Any, NamedTuple

import pytest
from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import KafkaTimeoutError, NoOffsetForPartitionError, OffsetOutOfRangeError
from prometheus_client import CollectorRegistry

from neardup_stream.worker.input_start import InputStart
from neardup_stream.worker.metrics import build_metrics

TP0, TP1 = TopicPartition("in", 0), TopicPartition("in", 1)


class Record(NamedTuple):
    offset: int


class Metadata(NamedTuple):
    generation_id: int


class Cluster:
    def __init__(self) -> None:
        self.ids: dict[str, uuid.UUID] = {}

    def topic_id(self, topic: str) -> uuid.UUID | None:
        return self.ids.get(topic)


class Client:
    def __init__(self) -> None:
        self.cluster = Cluster()


class Consumer:
    """Raises the queued errors from `poll`, then returns `records`; a member of generation
    `generation` owning `assigned`, whose group committed `commits`."""

    def __init__(self, starts: dict[TopicPartition, int], ends: dict[TopicPartition, int]) -> None:
        self.starts, self.ends = starts, ends
        self.errors: list[Exception] = []
        self.records: dict[TopicPartition, list[Any]] = {TP0: ["r"]}
        self.sought: list[tuple[TopicPartition, ...]] = []
        self.generation, self.assigned = 1, set[TopicPartition]()
        self.commits: dict[TopicPartition, int] = {}
        self.commit_metadata: dict[TopicPartition, str] = {}
        self._client = Client()  # its cluster metadata: the topics' ids
        self.positions: dict[TopicPartition, int] = {}
        self.unreadable = False  # `committed` times out

    def poll(self, **_: Any) -> dict[TopicPartition, list[Any]]:
        if self.errors:
            raise self.errors.pop(0)
        return dict(self.records)

    def group_metadata(self) -> Metadata:
        return Metadata(self.generation)

    def assignment(self) -> set[TopicPartition]:
        return self.assigned

    def committed(
        self, tp: TopicPartition, metadata: bool = False, timeout_ms: int | None = None
    ) -> Any:
        if self.unreadable:
            raise KafkaTimeoutError("no answer")
        found = self.commits.get(tp)
        if found is None or not metadata:
            return found
        return OffsetAndMetadata(found, self.commit_metadata.get(tp, ""), -1)

    def position(self, tp: TopicPartition, timeout_ms: int | None = None) -> int:
        return self.positions[tp]

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.starts[tp] for tp in tps}

    def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.ends[tp] for tp in tps}

    def seek_to_beginning(self, *tps: TopicPartition) -> None:
        self.sought.append(tps)


def lost(registry: CollectorRegistry) -> float | None:
    return registry.get_sample_value("neardup_records_lost_total", {"role": "worker"})


def reading(
    starts: dict[TopicPartition, int], ends: dict[TopicPartition, int], *errors: Exception
) -> tuple[Consumer, InputStart, CollectorRegistry]:
    """A stand-in consumer whose next polls raise `errors`, and its `InputStart`."""
    consumer, registry = Consumer(starts, ends), CollectorRegistry()
    consumer.errors = list(errors)
    start = InputStart(consumer, "worker", build_metrics(registry))  # type: ignore[arg-type]
    return consumer, start, registry


def test_records_pass_through_and_the_lost_series_exists_before_any_loss() -> None:
    _, start, registry = reading({}, {})
    assert start.poll(timeout_ms=1) == {TP0: ["r"]}
    assert lost(registry) == 0


def test_offsets_deleted_before_reading_are_reported_once_and_reading_goes_on_at_the_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer, start, registry = reading(
        {TP0: 120, TP1: 0}, {TP0: 200, TP1: 50}, OffsetOutOfRangeError({TP0: 100})
    )
    with caplog.at_level(logging.ERROR):
        assert start.poll() == {}
    assert lost(registry) == 20
    assert consumer.sought == [(TP0,)]
    assert "in-0: checkpoint at offset 100 but the log starts at 120: 20 offsets" in caplog.text
    # A rewind to the same committed offset (a failed transaction) reports only what is new.
    consumer.starts[TP0] = 130
    consumer.errors = [OffsetOutOfRangeError({TP0: 100})]
    start.poll()
    assert lost(registry) == 30
    consumer.errors = [OffsetOutOfRangeError({TP0: 100})]
    start.poll()
    assert lost(registry) == 30
    assert start.poll() == {TP0: ["r"]}


def test_a_position_past_the_log_end_starts_over_without_a_loss(
    caplog: pytest.LogCaptureFixture,
) -> None:
    consumer, start, registry = reading({TP1: 0}, {TP1: 5}, OffsetOutOfRangeError({TP1: 40}))
    with caplog.at_level(logging.ERROR):
        assert start.poll() == {}
    assert lost(registry) == 0
    assert consumer.sought == [(TP1,)]
    assert "reading at offset 40 but the log ends at 5" in caplog.text


def test_partitions_without_a_committed_offset_start_at_the_log_start() -> None:
    consumer, start, registry = reading({}, {}, NoOffsetForPartitionError({TP1, TP0}))
    assert start.poll() == {}
    assert consumer.sought == [(TP0, TP1)]
    assert lost(registry) == 0


@pytest.mark.parametrize("error", [NoOffsetForPartitionError(set()), OffsetOutOfRangeError({})])
def test_an_error_naming_no_partition_is_raised_not_turned_into_a_seek_of_everything(
    error: Exception,
) -> None:
    consumer, start, _ = reading({}, {}, error)
    with pytest.raises(type(error)):
        start.poll()
    assert consumer.sought == []


def test_after_a_rebalance_a_position_kept_from_an_earlier_assignment_moves_to_the_commit(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """kafka-python kept TP0 at offset 0 from generation 1; in generations this member
    missed, another one read it and committed 100. TP1 reads at its committed offset."""
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0, TP1}
    consumer.records = {TP0: [Record(0), Record(1)], TP1: [Record(7)]}
    consumer.commits = {TP0: 100, TP1: 7}
    consumer.generation = 3
    with caplog.at_level(logging.WARNING):
        assert start.poll(timeout_ms=1) == {TP1: [Record(7)]}
    assert consumer.positions[TP0] == 100 and TP1 not in consumer.positions
    assert "in-0: reading at offset 0, kept from an earlier assignment" in caplog.text
    assert "committed offset is 100" in caplog.text
    # within one generation, positions run ahead of the commit (in-flight batches): untouched
    consumer.records = {TP0: [Record(200)]}
    assert start.poll(timeout_ms=1) == {TP0: [Record(200)]}


def test_a_partition_without_records_is_checked_at_its_position_and_none_committed_is_left() -> (
    None
):
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0, TP1}
    consumer.records = {}
    consumer.positions = {TP0: 5}
    consumer.commits = {TP0: 9}  # TP1: nothing committed, the log start is InputStart's
    assert start.poll(timeout_ms=1) == {}
    assert consumer.positions == {TP0: 9}
    consumer.positions[TP0] = 12
    assert start.poll(timeout_ms=1) == {}
    assert consumer.positions[TP0] == 12  # same generation: no check
    consumer.generation = -1  # out of the group, rejoining: checked once it is back in
    assert start.poll(timeout_ms=1) == {}
    assert consumer.positions[TP0] == 12
    consumer.generation = 4
    assert start.poll(timeout_ms=1) == {}
    assert consumer.positions[TP0] == 9


def test_committed_offsets_not_readable_after_a_rebalance_read_the_records_again_later() -> None:
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0}
    consumer.records = {TP0: [Record(40), Record(41)]}
    consumer.commits = {TP0: 40}
    consumer.unreadable = True
    assert start.poll(timeout_ms=1) == {}  # nothing decided from an unchecked position
    assert consumer.positions == {TP0: 40}  # its records are fetched again
    consumer.unreadable = False
    assert start.poll(timeout_ms=1) == {TP0: [Record(40), Record(41)]}  # checked now


OLD, NEW = uuid.UUID(int=1), uuid.UUID(int=2)


def test_a_commit_of_another_incarnation_of_the_topic_reads_it_again_from_its_start(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The committed offset 100 names the old topic: its new incarnation (already longer)
    is read from the log start, said once; the next commits name the new id."""
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0, TP1}
    consumer.records = {TP0: [Record(100)], TP1: [Record(3)]}
    consumer.commits = {TP0: 100, TP1: 3}
    consumer.commit_metadata = {TP0: f"topic-id={OLD}", TP1: f"topic-id={OLD}"}
    consumer._client.cluster.ids = {"in": NEW}
    with caplog.at_level(logging.ERROR):
        assert start.poll(timeout_ms=1) == {}
    assert consumer.sought == [(TP0, TP1)]
    said = [r.message for r in caplog.records if "deleted and created again" in r.message]
    assert said == [
        f"worker: input topic in was deleted and created again (topic id {OLD}, now {NEW}): "
        "its committed offsets belong to the old topic; reading partitions [0, 1] of the new "
        "one from their log start"
    ]
    assert start.offsets({("in", 0): 7})[TP0].metadata == f"topic-id={NEW}"
    consumer.records = {TP0: [Record(0)]}
    assert start.poll(timeout_ms=1) == {TP0: [Record(0)]}  # said once, read on
    assert len(consumer.sought) == 1


def test_a_topic_recreated_while_read_is_read_again_from_its_start() -> None:
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0}
    consumer.records = {TP0: [Record(5)]}
    consumer._client.cluster.ids = {"in": OLD}
    assert start.poll(timeout_ms=1) == {TP0: [Record(5)]}  # no commit yet: the id it reads
    assert start.offsets({("in", 0): 6})[TP0].metadata == f"topic-id={OLD}"
    consumer._client.cluster.ids = {"in": NEW}  # deleted and made again under the worker
    assert start.poll(timeout_ms=1) == {}
    assert consumer.sought == [(TP0,)]


def test_commits_without_an_id_and_unknown_ids_are_taken_as_they_are() -> None:
    consumer, start, _ = reading({}, {})
    consumer.assigned = {TP0}
    consumer.records = {TP0: [Record(9)]}
    consumer.commits = {TP0: 9}  # an earlier version committed "" (or another format)
    assert start.poll(timeout_ms=1) == {TP0: [Record(9)]}  # the broker names no id yet
    assert start.offsets({("in", 0): 10})[TP0].metadata == ""
    consumer._client.cluster.ids = {"in": NEW}
    assert start.poll(timeout_ms=1) == {TP0: [Record(9)]}
    assert start.offsets({("in", 0): 10})[TP0].metadata == f"topic-id={NEW}"
    assert consumer.sought == []
