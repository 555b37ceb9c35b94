"""`Written`: where a transaction's messages were written, each waited for only when read."""

from __future__ import annotations

import time
from typing import Any, NamedTuple

import pytest

from neardup_stream.worker.runtime.publisher import Written


class Metadata(NamedTuple):
    offset: int


class Future:
    """A produce future: delivered at `offset`, refused (`error`), or never delivered."""

    def __init__(self, offset: int | None = None, error: Exception | None = None) -> None:
        self.offset, self.error, self.waited = offset, error, 0

    def get(self, timeout: float | None = None) -> Any:
        self.waited += 1
        if self.error is not None:
            raise self.error
        if self.offset is None:
            raise TimeoutError(f"not delivered within {timeout} s")
        return Metadata(self.offset)


def test_only_the_messages_read_are_waited_for() -> None:
    futures = [Future(7), Future(8), Future(None), Future(9)]  # the third never delivered
    written = Written(futures, time.monotonic() + 30)
    assert len(written) == 4
    assert written[1] == 8 and written[3] == 9
    assert [f.waited for f in futures] == [0, 1, 0, 1]


def test_a_message_refused_raises_its_failure_when_read() -> None:
    written = Written([Future(1), Future(error=ValueError("too large"))], time.monotonic() + 30)
    assert written[0] == 1
    with pytest.raises(ValueError, match="too large"):
        written[1]


def test_past_the_deadline_a_read_waits_no_more() -> None:
    timeouts: list[float | None] = []

    class Late(Future):
        def get(self, timeout: float | None = None) -> Any:
            timeouts.append(timeout)
            return super().get(timeout)

    written = Written([Late(None)], time.monotonic() - 1)
    with pytest.raises(TimeoutError):
        written[0]
    assert timeouts == [0.0]
