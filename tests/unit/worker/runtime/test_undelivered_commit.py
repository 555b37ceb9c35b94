"""A commit that returns while a record of its transaction failed is a failure, not a
commit: kafka-python reports success for a transaction its epoch bump aborted."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from kafka import OffsetAndMetadata, TopicPartition
from kafka.errors import OutOfOrderSequenceNumberError

from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.runtime import publisher as publisher_module
from neardup_stream.worker.runtime.publisher import Publisher, Transaction, UndeliveredCommit
from neardup_stream.worker.settings import Settings


class Future:
    def __init__(self, error: Exception | None) -> None:
        self.is_done, self.exception = True, error


class GroupMetadata(NamedTuple):
    group_id: str = "g"
    generation_id: int = 1
    member_id: str = "m-1"


class Consumer:
    def group_metadata(self) -> GroupMetadata:
        return GroupMetadata()


class Producer:
    """Delivers every record but the one at `refused`; its commit always returns."""

    def __init__(self, refused: int | None) -> None:
        self.refused, self.sent, self.commits = refused, 0, 0

    def begin_transaction(self) -> None:
        pass

    def partitions_for(self, topic: str) -> set[int]:
        return {0}

    def send(self, topic: str, **kwargs: Any) -> Future:
        error = OutOfOrderSequenceNumberError() if self.sent == self.refused else None
        self.sent += 1
        return Future(error)

    def send_offsets_to_transaction(self, offsets: Any, metadata: Any) -> None:
        pass

    def commit_transaction(self) -> None:
        self.commits += 1

    def close(self, timeout: float | None = None) -> None:
        pass


def publish(monkeypatch: pytest.MonkeyPatch, refused: int | None) -> tuple[Any, list[str]]:
    monkeypatch.setattr(publisher_module.clients, "make_producer", lambda s: Producer(refused))
    counted: list[str] = []
    publisher: Publisher[str] = Publisher(
        Settings(),
        Consumer(),
        "batch",
        in_flight=True,  # type: ignore[arg-type]
        on_committed=lambda carried, at: counted.append(carried),
    )
    try:
        messages = [OutMessage("out", b"k%d" % i, b"v") for i in range(3)]
        offsets = {TopicPartition("in", 0): OffsetAndMetadata(3, "", -1)}
        txn = Transaction(messages, [None] * 3, offsets)
        started = publisher.publish(txn, "batch-1")
        return started or publisher.settle(), counted
    finally:
        publisher.close()


def test_a_record_that_failed_under_a_returned_commit_fails_the_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    failure, counted = publish(monkeypatch, refused=1)
    assert failure is not None and isinstance(failure.error, UndeliveredCommit)
    assert "record 1" in str(failure.error) and "OutOfOrderSequenceNumber" in str(failure.error)
    assert failure.blamed is None  # not the input's fault: replayed, not dead-lettered
    assert counted == []


def test_a_commit_with_every_record_delivered_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    failure, counted = publish(monkeypatch, refused=None)
    assert failure is None
    assert counted == ["batch-1"]
