"""A group poll the broker cannot serve: told apart from every other failure of a role's poll.

kafka-python 3 raises a refused connection (`KafkaConnectionError`, retriable) out of a
group consumer's poll while the broker restarts: the coordinator lookup gives up at once
instead of waiting. Nothing was read by that poll, so the runner can simply poll again.
A role's poll does more after its group poll (follow the assignment, start restores, read
the log), and a retriable error there may come after records were read and dropped with
the exception: the runner rebuilds and rewinds then, as after a failed transaction.

So each role makes its *first* call, the group consumer's poll, through `group_poll`,
which raises `BrokerGone` for a retriable Kafka error, and the runner retries only that
(`runtime.runner`), for at most `GIVE_UP_S` in a row (a broker that stays away, or a
retriable error that is in fact permanent, such as a failed TLS or SASL bootstrap, then
fails the role, and the replica stops for its orchestrator to restart it, as before).
How long failures have lasted is a `Streak`.
"""

from __future__ import annotations

import time
from typing import Any

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

GIVE_UP_S = 120.0  # retried group polls in a row, in seconds, before the role fails


class BrokerGone(Exception):
    """A group poll failed with a retriable Kafka error (`__cause__`); nothing was read."""


def group_poll(consumer: KafkaConsumer, **poll_args: Any) -> dict[TopicPartition, list[Any]]:
    """`consumer.poll(**poll_args)`, a retriable Kafka error raised as `BrokerGone`."""
    try:
        polled: dict[TopicPartition, list[Any]] = consumer.poll(**poll_args)
    except KafkaError as exc:
        if not exc.retriable:
            raise
        raise BrokerGone(f"the broker could not serve a poll: {exc}") from exc
    return polled


class Streak:
    """Failures in a row, in time. `failed` raises its error once the streak is older than
    `give_up_s`; a streak ends at `ended()` (what proves the failure gone: a poll served,
    a transaction committed) or when no failure came for `give_up_s`."""

    def __init__(self) -> None:
        self.since: float | None = None
        self._last = 0.0

    def failed(self, error: Exception, give_up_s: float) -> None:
        now = time.monotonic()
        if self.since is None or now - self._last > give_up_s:
            self.since = now
        elif now - self.since > give_up_s:
            raise error
        self._last = now

    def ended(self) -> None:
        self.since = None
