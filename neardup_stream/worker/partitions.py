"""Which input partitions this worker owns, as the group protocol changes it.

The rebalance listener runs on the Kafka client's I/O thread and only records what changed;
the loop acts on it between polls, and not while a revocation waits for its assignment. With the (eager) sticky assignor every rebalance revokes all
partitions and assigns the new set, mostly the same one: a partition revoked and assigned
back in the same rebalance never belonged to anyone else, so its index stays. A partition
that was absent from any assignment in between is `dropped`: its index must be rebuilt. So
is every partition kept across generations this member never applied: when its SyncGroup
fails, kafka-python keeps the old assignment, and the group may have given those partitions
to another member, which moved them on, while this member rejoined. The listener tells
this case by the group generation (`generation`): it rose by more than one since the last
assignment.
Before partitions are given up, `on_revoke` settles the commit in flight, while the offsets
can still be committed under the current generation.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
from kafka.errors import KafkaTimeoutError

from neardup_stream.worker import topic_ids
from neardup_stream.worker.metrics import Metrics

log = logging.getLogger(__name__)
# How long one committed-offset look-up may block (kafka-python's has no limit: a broker
# away, or a transaction whose offsets are still pending, would hold it, and a stop request
# with it). Not answered in time, it raises KafkaTimeoutError and the caller tries again.
COMMITTED_TIMEOUT_MS = 10_000


class Assignment(ConsumerRebalanceListener):
    """The current assignment and the partitions lost since the loop last looked."""

    def __init__(
        self,
        topic: str,
        metrics: Metrics,
        on_revoke: Callable[[], None],
        on_assigned: Callable[[set[int]], object] | None = None,
        generation: Callable[[], int] | None = None,
    ) -> None:
        self.topic = topic
        self._generation = generation  # the consumer's group generation, now
        self._assigned_in: int | None = None  # the generation of the last assignment
        self.metrics = metrics
        self._on_revoke = on_revoke
        self._on_assigned = on_assigned  # e.g. `scope.WithinPartitionWarning.observe`
        self._lock = threading.Lock()
        self._owned: set[int] = set()
        self._before_revoke: set[int] = set()
        self._dropped: set[int] = set()
        self._rebalancing = False
        self.seen_assignment = False

    def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        self._on_revoke()
        with self._lock:
            self._before_revoke |= self._owned
            self._owned -= {tp.partition for tp in revoked}
            self._rebalancing = True

    def on_partitions_lost(self, lost: list[TopicPartition]) -> None:
        with self._lock:
            gone = {tp.partition for tp in lost}
            self._owned -= gone
            self._dropped |= gone
        log.warning("partitions lost (membership expired): %s", sorted(gone))

    def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        generation = None if self._generation is None else self._generation()
        with self._lock:
            kept = self._before_revoke & {tp.partition for tp in assigned}
            if self._missed(generation) and kept:
                log.warning(
                    "partitions %s (topic %s) kept across group generations %d..%d, which "
                    "this member missed: another member may have moved them on; rebuilt",
                    sorted(kept),
                    self.topic,
                    (self._assigned_in or 0) + 1,
                    (generation or 0) - 1,
                )
                self._dropped |= kept
            self._assigned_in = generation
            self._owned |= {tp.partition for tp in assigned}
            self._dropped |= self._before_revoke - self._owned
            for p in self._before_revoke - self._owned:
                with contextlib.suppress(KeyError):
                    self.metrics.consumer_lag.remove(self.topic, str(p))
            self._before_revoke = set()
            self._rebalancing = False
            self.seen_assignment = True
            owned = sorted(self._owned)
        log.info("partitions assigned: %s (topic %s)", owned, self.topic)
        if self._on_assigned is not None:
            self._on_assigned(set(owned))

    def _missed(self, generation: int | None) -> bool:
        """Whether generations passed between the last assignment and this one."""
        last = self._assigned_in
        return generation is not None and last is not None and generation > last + 1

    @property
    def rebalancing(self) -> bool:
        """Between a revocation and the assignment that follows it: the listener runs on the
        client's I/O thread, so the loop can look in between and must wait for the pair."""
        with self._lock:
            return self._rebalancing

    def owned(self) -> set[int]:
        with self._lock:
            return set(self._owned)

    def take(self) -> tuple[set[int], set[int]]:
        """(owned now, dropped since the last call)."""
        with self._lock:
            dropped, self._dropped = self._dropped, set()
            return set(self._owned), dropped


def generation_of(consumer: KafkaConsumer) -> Callable[[], int]:
    """The consumer's group generation, now (-1 out of the group): `Assignment`'s `generation`."""
    return lambda: int(consumer.group_metadata().generation_id)


def position(consumer: KafkaConsumer, tp: TopicPartition) -> int:
    """The group consumer's position on `tp`, waiting `COMMITTED_TIMEOUT_MS` at most.
    kafka-python's `position` first fetches the committed offsets of *every* assigned
    partition without a position yet (one just assigned), from the group coordinator, and
    without a timeout waits for it forever while the coordinator is away. Raises
    `KafkaTimeoutError` (retriable: the caller's batch fails and is replayed) if `tp` has no
    position in time."""
    at = consumer.position(tp, timeout_ms=COMMITTED_TIMEOUT_MS)
    if at is None:
        raise KafkaTimeoutError(f"no position for {tp.topic}[{tp.partition}] in time")
    return int(at)


def rewind_to_committed(consumer: KafkaConsumer, topic: str, partitions: set[int]) -> None:
    """Seek partitions back to their committed offsets (or the beginning if none, or if they
    name another incarnation of the topic: `topic_ids`). Each look-up waits
    `COMMITTED_TIMEOUT_MS` at most: the callers retry (`retry.until_done`), looking at their
    stop between attempts."""
    now = topic_ids.current(consumer, topic)
    for p in partitions:
        tp = TopicPartition(topic, p)
        committed = consumer.committed(tp, metadata=True, timeout_ms=COMMITTED_TIMEOUT_MS)
        named = None if committed is None else topic_ids.from_metadata(committed.metadata)
        if committed is None or (named is not None and now is not None and named != now):
            consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, committed.offset)


def update_lag(
    consumer: KafkaConsumer, topic: str, partitions: set[int], metrics: Metrics
) -> dict[int, int]:
    """Export end-minus-position per partition, from what the fetcher already knows; returns
    the lags it knows."""
    lags: dict[int, int] = {}
    assigned = consumer.assignment()  # a partition its topic lost is gone before its state
    for p in partitions:
        tp = TopicPartition(topic, p)
        if tp not in assigned:
            continue
        high = consumer.highwater(tp)
        if high is None:
            continue
        with contextlib.suppress(Exception):  # not yet positioned after an assignment
            lags[p] = lag = max(0, high - consumer.position(tp, timeout_ms=0))
            metrics.consumer_lag.labels(topic, str(p)).set(lag)
    return lags


def behind(topic: str, lags: dict[int, int]) -> str | None:
    """`Waits.waiting_for` of a role reading `topic`: the partitions with input behind
    their end (None: none)."""
    late = sorted(p for p, lag in lags.items() if lag > 0)
    if not late:
        return None
    return f"input behind the end of {topic} partitions {late} ({sum(lags.values())} records)"
