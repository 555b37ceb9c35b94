"""`policy.blamed`: a rejection is blamed even when the commit fails before the refused record's
future says why (kafka-python sets the producer's error state first)."""

from __future__ import annotations

import threading
import time
from typing import Any

from kafka import errors as kafka_errors

from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.runtime.policy import blamed


class Future:
    """A produce future that ends (refused, or delivered) when `end` is called."""

    def __init__(self) -> None:
        self.is_done, self.exception = False, None
        self._ended = threading.Event()

    def end(self, error: Exception | None = None) -> None:
        self.exception, self.is_done = error, True
        self._ended.set()

    def get(self, timeout: float | None = None) -> Any:
        if not self._ended.wait(timeout):
            raise kafka_errors.KafkaTimeoutError("not done")
        if self.exception is not None:
            raise self.exception
        return None


def messages(n: int) -> list[OutMessage]:
    return [OutMessage("t", b"k%d" % i, b"v" * (i + 1)) for i in range(n)]


IN_ERROR_STATE = kafka_errors.KafkaError("Cannot execute transactional method: error state")


def test_a_refusal_that_reaches_its_future_after_the_commit_failed_is_blamed() -> None:
    futures = [Future(), Future()]
    futures[0].end()
    timer = threading.Timer(0.2, futures[1].end, [kafka_errors.MessageSizeTooLargeError()])
    timer.start()
    try:
        found = blamed(IN_ERROR_STATE, futures, messages(2), time.monotonic() + 30)
    finally:
        timer.cancel()
    assert found is not None and found.position == 1
    assert "MessageSizeTooLargeError" in found.why


def test_a_transient_failure_blames_nothing_and_waits_no_longer_than_until() -> None:
    futures = [Future(), Future()]  # never delivered (the broker is away)
    found = blamed(IN_ERROR_STATE, futures, messages(2), time.monotonic() + 0.1)
    assert found is None
    assert not any(f.is_done for f in futures)


def test_a_failure_already_on_a_future_is_blamed_without_waiting_for_the_others() -> None:
    futures = [Future(), Future()]
    futures[0].end(kafka_errors.MessageSizeTooLargeError())
    # The second never ends: `until` is far, so waiting on it would hang the test.
    found = blamed(IN_ERROR_STATE, futures, messages(2), time.monotonic() + 3600)
    assert found is not None and found.position == 0
