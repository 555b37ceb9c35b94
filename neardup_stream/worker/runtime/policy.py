"""One failure policy for every loop (single worker, edge, shard, gather).

A batch whose transaction failed is replayed: transient failures (broker down, timeouts,
fencing) back off, doubling up to `worker.retry_backoff_max_s`, and shrink the next batch,
halved per consecutive failure (so a batch that keeps failing is bisected down to the one
input that causes it); a success resets both. A batch halved because one of its records (a
changelog or log record, whose size is the batch's) was too large for its topic keeps all but
one of those halvings after its commit, and the batch doubles back one commit at a time: the
next batch, sent at the size that failed, would fail the same way (a changelog with a small
`max.message.bytes` cost every commit ~log2(max_batch) refused transactions, now about one).
A failure the broker causes for a deterministic
reason (too large, invalid record) is blamed on exactly one output (`blame`): the loop
dead-letters its input on the replay instead of sending it again, so the rejection never
repeats. Written once here; the loops differ only in what they rebuild and where they rewind.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from kafka import errors as kafka_errors

from neardup_stream.worker import retry
from neardup_stream.worker.codec import OutMessage

# Broker or client rejections that repeat whenever the same record is sent again.
DETERMINISTIC = (
    kafka_errors.MessageSizeTooLargeError,
    kafka_errors.RecordListTooLargeError,
    kafka_errors.InvalidRecordError,
    kafka_errors.CorruptRecordError,
    kafka_errors.InvalidTimestampError,
)

# Consecutive failures that still shrink the batch: 2**16 = 65,536 is above any max_batch.
MAX_HALVINGS = 16


class Blame(NamedTuple):
    """The output a deterministic rejection is blamed on, and why (for its dead letter)."""

    position: int  # into the messages sent
    why: str


@dataclass
class FailurePolicy:
    """Consecutive failures of one loop, and what they imply for the next attempt."""

    backoff_max_s: float
    failures: int = 0
    kept: int = 0  # halvings kept from batches too large for a topic, one undone per commit
    too_large_now: int = 0  # of the current failures, those for a batch too large

    def shrunk(self, limit: int, floor: int = 1) -> int:
        """`limit` halved per consecutive failure and kept halving, never below `floor`."""
        return max(floor, limit >> min(self.kept + self.failures, MAX_HALVINGS))

    def failed(self) -> float:
        """Count a failure; the seconds to back off before the replay (0.5 s doubling)."""
        self.failures += 1
        return retry.backoff_s(self.backoff_max_s, self.failures - 1)

    def bisect(self) -> None:
        """Count a failure that only shrinks the next batch (no backoff: nothing transient)."""
        self.failures += 1

    def too_large(self) -> None:
        """Count a failure of a batch a record of which was too large for its topic: it only
        shrinks the next batch, and the halving outlives the commit (module docstring)."""
        self.failures += 1
        self.too_large_now += 1

    def succeeded(self) -> None:
        self.kept = max(0, min(self.kept + self.too_large_now, MAX_HALVINGS) - 1)
        self.failures = self.too_large_now = 0


def describe(error: BaseException) -> str:
    """A rejection as it goes into the input's dead letter (bounded)."""
    return f"the broker rejected the output: {type(error).__name__}: {error}"[:1000]


def blame(
    error: BaseException, futures: Sequence[Any], messages: Sequence[OutMessage]
) -> Blame | None:
    """Which message the broker (or the client, before sending) refused for good, if any:
    the one `send` raised on (futures stop there), else the largest whose delivery failed
    that way (not a record kafka-python aborted unsent: `aborted`). A rejection fails the
    other records of its broker batch too, so only one is blamed per round; a replay that
    fails again blames the next."""
    if isinstance(error, DETERMINISTIC) and len(futures) < len(messages):
        return Blame(len(futures), describe(error))
    failed = [
        i
        for i, f in enumerate(futures)
        if f.is_done and isinstance(f.exception, DETERMINISTIC) and not aborted(f)
    ]
    if not failed:
        return None
    i = max(failed, key=lambda j: len(messages[j].value) + len(messages[j].key or b""))
    return Blame(i, describe(futures[i].exception))


def aborted(future: Any) -> bool:
    """Whether kafka-python aborted the record's batch unsent instead of the broker refusing
    it. Once a transaction has failed, the sender aborts every batch not yet sent with the
    producer's last error, the very exception the refused record carries (kafka-python
    3.x: `RecordAccumulator.abort_undrained_batches`), so the exception cannot tell them
    apart; an aborted batch completes its produce future at offset -1, a refused one at
    None (`ProducerBatch.abort`, `done`). Private: if it ever changes, nothing reads as
    aborted, as before (pinned by `tests/unit/worker/runtime/test_policy.py`)."""
    produce = getattr(future, "_produce_future", None)
    value = getattr(produce, "value", None)
    return isinstance(value, tuple) and len(value) > 0 and value[0] == -1


def blamed(
    error: BaseException, futures: Sequence[Any], messages: Sequence[OutMessage], until: float
) -> Blame | None:
    """`blame`, once the deliveries still pending have ended (waiting until `until`, a
    monotonic time). kafka-python's sender puts the producer in its error state before it
    fails the refused record's future: a commit can raise "in an error state" while the
    future that says why is not yet done, and the rejection would pass for a transient
    failure (backing off, and never dead-lettering the input it answers for)."""
    found = blame(error, futures, messages)
    if found is not None:
        return found
    pending = [f for f in futures if not f.is_done]
    for f in pending:
        with contextlib.suppress(Exception):  # a failure is read from the future below
            f.get(timeout=max(0.0, until - time.monotonic()))
    return blame(error, futures, messages) if pending else None
