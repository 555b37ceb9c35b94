"""Publishing one batch: its messages and its input offsets (with metadata), all or nothing.

One class for the single worker and the cluster roles. `publish` opens a transaction, sends
the messages of a `Transaction` and adds its offsets through `send_offsets_to_transaction`
with the consumer's group metadata, so a member that lost its partitions in a rebalance is
fenced (KIP-447) and its transaction aborts. Offsets carry metadata: the shard's and the
gather's checkpoints ride in them. A keyed message without a partition goes where the
default partitioner puts it, found for all of a batch's keys at once (`neardup_stream.worker.partitioning`).

Two modes. Synchronous (`in_flight=False`, the roles): `publish` returns once the commit
ended. In flight (the single worker): `publish` returns once the offsets are added, the
commit finishes on the publisher's commit thread (`runtime.committer`) while the loop polls
and steps the next batch (the kernels release the GIL), and `settle` waits for it. Either
way everything after the sends runs under one deadline (`kafka.request_timeout_ms`):
kafka-python's `send_offsets_to_transaction` and `commit_transaction` have no timeout and
can wait forever (a record of the transaction failed, or the group rebalances, which only the
loop's next poll would complete). A commit that cannot complete is abandoned; the caller
then `reset`s the producer (the new one's `init_transactions` fences the old and aborts what
it left open) and rewinds.

A cluster role's transaction also writes a copy of each offset it commits to the pipeline's
positions topic (`runtime.positions`), so that offsets the broker expires can be restored.

A failure names the one message the broker refused for a deterministic reason, if any
(`runtime.policy.blame`), and the input it answers for: the loop dead-letters that input on
the replay, so the same rejection never repeats. At-least-once mode (`exactly_once=False`)
sends, flushes and commits the offsets synchronously, without a transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar

from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition
from kafka.errors import AuthorizationError

from neardup_stream.worker import clients, failpoints
from neardup_stream.worker.authorization import denial_among
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.partitioning import placed
from neardup_stream.worker.records import Source
from neardup_stream.worker.runtime import positions
from neardup_stream.worker.runtime.committer import Committer
from neardup_stream.worker.runtime.policy import Blame, blamed
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")
COMMIT_POLL_S = 0.05
# How long a failure waits for its records' deliveries to end before blaming one of them.
BLAME_GRACE_S = 1.0


class Transaction(NamedTuple):
    """What one transaction publishes: messages, the input each answers for (None: it answers
    for none, e.g. a changelog record), and the next input offsets with their metadata.

    A single-stage replica's transaction commits offsets of several groups (`groups`: the
    group metadata per offsets topic; a topic not named commits in the publisher's consumer's
    group). It decided its log records where the log ended, before writing them: `verify`
    gets where the messages were written (`Written`), before the commit, and raises if one
    is not where it was decided (the transaction then aborts)."""

    messages: Sequence[OutMessage]
    sources: Sequence[Source | None]
    offsets: Mapping[TopicPartition, OffsetAndMetadata]
    groups: Mapping[str, Any] | None = None
    verify: Callable[[Written], None] | None = None


class Written:
    """Where a transaction's messages were written, by position in it: `written[n]` waits
    for message n's delivery (until the deadline) and gives its offset, or raises its
    failure. Only the messages asked for are waited for: a single-stage `verify` reads its
    few log records, not every output of the batch (a delivered future's offset costs a few
    µs, some thousands a batch). The others are delivered by the commit, which fails if one
    was not."""

    def __init__(self, futures: Sequence[Any], deadline: float) -> None:
        self._futures, self._deadline = futures, deadline

    def __getitem__(self, position: int) -> int:
        return int(_delivery(self._futures[position], self._deadline).offset)

    def __len__(self) -> int:
        return len(self._futures)


class NotAMember(RuntimeError):
    """The role's consumer is out of its group: its offsets would not be fenced."""


class CommitAbandoned(RuntimeError):
    """The commit did not complete: a record failed under it, or it outlived the deadline."""


class UndeliveredCommit(RuntimeError):
    """The commit returned, but a record of the transaction was not delivered: the
    transaction did not commit as sent (`_check_delivered`)."""


class RejectedInput(NamedTuple):
    """An input whose output the broker refuses for good: dead-letter it on the replay."""

    source: Source
    why: str


@dataclass
class PublishFailure(Generic[T]):
    """Why a batch did not commit (nothing of it did), and what the broker refused for good."""

    error: BaseException
    carried: T  # what the caller published it with (`publish(..., carried)`)
    blamed: Blame | None = None  # the message refused for a deterministic reason
    source: Source | None = None  # the input that message answers for, if any
    denied: AuthorizationError | None = None  # an ACL refused it: no retry can succeed

    @property
    def rejected(self) -> RejectedInput | None:
        """The input to dead-letter as `unpublishable`, if the blamed message has one."""
        if self.blamed is None or self.source is None:
            return None
        return RejectedInput(self.source, self.blamed.why)


@dataclass
class _Sent(Generic[T]):
    """A batch whose transaction is open or committing."""

    txn: Transaction
    carried: T
    deadline: float
    futures: list[Any] = field(default_factory=list)  # FutureRecordMetadata per message sent
    offsets_added: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None

    def doomed(self) -> bool:
        """A record of the transaction failed: its commit can no longer succeed."""
        return any(f.is_done and f.exception is not None for f in self.futures)


class Publisher(Generic[T]):
    """Owns one producer (transactional id from `settings`); at most one commit at a time."""

    def __init__(
        self,
        settings: Settings,
        consumer: KafkaConsumer,
        name: str,
        in_flight: bool = False,
        on_committed: Callable[[T, float], None] | None = None,
    ) -> None:
        self.settings, self.consumer, self.name = settings, consumer, name
        self.in_flight, self.on_committed = in_flight, on_committed
        self.producer: KafkaProducer = clients.make_producer(settings)
        # A replica's roles keep a copy of each offset they commit (`runtime.positions`).
        self.positions = settings.cluster.positions if settings.topic_scope else None
        self._sent: _Sent[T] | None = None
        self._lock = threading.Lock()
        self._committer = Committer(f"{name}-commit")

    def publish(self, txn: Transaction, carried: T) -> PublishFailure[T] | None:
        """Send `txn` and commit it (in flight: start its commit; `settle` ends it)."""
        deadline = time.monotonic() + self.settings.kafka.request_timeout_ms / 1000
        sent: _Sent[T] = _Sent(txn, carried, deadline)
        p, exactly_once = self.producer, self.settings.worker.exactly_once
        try:
            if exactly_once:
                p.begin_transaction()
                commits = self._commits(txn)
            else:
                commits = [(self.consumer.group_metadata(), dict(txn.offsets))]
            if self.positions is not None:  # at the end: the messages keep their positions
                kept = positions.messages(self.positions, [(m.group_id, o) for m, o in commits])
                sent.txn = txn = txn._replace(
                    messages=[*txn.messages, *kept], sources=[*txn.sources, *[None] * len(kept)]
                )
            self._send(sent, txn.messages)
            if not exactly_once:
                _delivered(sent.futures, deadline)
                self.consumer.commit(dict(txn.offsets))
                self._count(carried)
                return None
        except BaseException as exc:
            return self._failure(sent, exc)
        self._committer.submit(lambda: self._finish(sent, p, commits))
        with self._lock:
            self._sent = sent
        if not self.in_flight:
            return self.settle()
        if not self._wait(sent, sent.offsets_added):
            return self.settle()  # the offsets were not added: the failure, now
        failpoints.hit("commit_inflight")
        return None

    def _send(self, sent: _Sent[T], messages: Sequence[OutMessage]) -> None:
        p = self.producer
        explicit: dict[str, set[int]] = {}
        for m in messages:
            if m.partition is not None:
                explicit.setdefault(m.topic, set()).add(m.partition)
        clients.await_partitions(p, explicit, max(0.0, sent.deadline - time.monotonic()))
        for m, partition in zip(messages, placed(messages, p.partitions_for), strict=True):
            sent.futures.append(
                p.send(m.topic, value=m.value, key=m.key, partition=partition, headers=m.headers)
            )

    def _commits(self, txn: Transaction) -> list[tuple[Any, dict[TopicPartition, Any]]]:
        """The offsets of `txn` by group, with each group's metadata."""
        own = self.consumer.group_metadata()
        by_group: dict[str, tuple[Any, dict[TopicPartition, Any]]] = {own.group_id: (own, {})}
        for tp, offset in txn.offsets.items():
            metadata = (txn.groups or {}).get(tp.topic, own)
            by_group.setdefault(metadata.group_id, (metadata, {}))[1][tp] = offset
        for metadata, _ in by_group.values():
            if metadata.generation_id < 0 or not metadata.member_id:
                # Out of the group (evicted): without static membership the broker would
                # take these offsets unchecked, beside the new owner's.
                raise NotAMember(f"{self.name}: not a member of group {metadata.group_id}")
        return list(by_group.values())

    def _finish(
        self,
        sent: _Sent[T],
        producer: KafkaProducer,
        commits: list[tuple[Any, dict[TopicPartition, Any]]],
    ) -> None:
        """On the commit thread: add the offsets, then commit, then count what committed."""
        try:
            for metadata, offsets in commits:
                producer.send_offsets_to_transaction(offsets, metadata)
            failpoints.hit(f"{self.name}_produced")
            sent.offsets_added.set()
            if sent.txn.verify is not None:  # before the commit
                sent.txn.verify(Written(sent.futures, sent.deadline))
            elif not self.in_flight:
                _delivered(sent.futures, sent.deadline)
            producer.commit_transaction()
            _check_delivered(sent.futures)
            failpoints.hit(f"{self.name}_committed")
            self._count(sent.carried)
        except BaseException as exc:
            sent.error = exc
        finally:
            sent.offsets_added.set()
            sent.done.set()

    def _count(self, carried: T) -> None:
        if self.on_committed is not None:
            self.on_committed(carried, time.time())

    def _wait(self, sent: _Sent[T], event: threading.Event) -> bool:
        """Wait for `event` until the deadline, or until the commit is doomed."""
        while not event.wait(COMMIT_POLL_S):
            if sent.done.is_set():
                return event.is_set()
            if sent.doomed() or time.monotonic() > sent.deadline:
                return False
        return sent.error is None

    def settle(self) -> PublishFailure[T] | None:
        """Wait for the commit in flight (if any); safe from the rebalance listener."""
        with self._lock:
            sent, self._sent = self._sent, None
        if sent is None:
            return None
        if not self._wait(sent, sent.done) and not sent.done.is_set():
            log.warning("%s: giving up on a commit that cannot complete", self.name)
            return self._failure(sent, sent.error or CommitAbandoned("commit abandoned"))
        return None if sent.error is None else self._failure(sent, sent.error)

    def _failure(self, sent: _Sent[T], error: BaseException) -> PublishFailure[T]:
        """The failure, naming the one message a deterministic rejection is blamed on."""
        failure = PublishFailure(error, sent.carried)
        until = min(sent.deadline, time.monotonic() + BLAME_GRACE_S)
        found = blamed(error, sent.futures, sent.txn.messages, until)
        failure.denied = denial_among(error, sent.futures)
        if found is not None:
            failure.blamed, failure.source = found, sent.txn.sources[found.position]
        return failure

    def reset(self) -> None:
        """Replace the producer: the new one's init_transactions aborts what is open. The
        commit thread too: an abandoned commit may never return (`runtime.committer`)."""
        self._committer.stop()
        self._committer = Committer(f"{self.name}-commit")
        clients.close_producer(self.producer, timeout=5)
        self.producer = clients.make_producer(self.settings)

    def close(self) -> None:
        self._committer.stop()
        clients.close_producer(self.producer, timeout=10)


def _check_delivered(futures: Sequence[Any]) -> None:
    """Raise `UndeliveredCommit` unless every record of a committed transaction was
    delivered. kafka-python can report a commit that the broker aborted: a produce refused
    with OutOfOrderSequenceNumber, UnknownProducerId or InvalidProducerEpoch while the
    commit waits makes its sender bump the producer's epoch, which aborts the transaction
    on the broker, and the EndTxn then waiting completes without error and unsent
    (`TransactionManager.next_request_handler`: "no partitions or offsets were added").
    Counted as committed, the batch's inputs would be skipped by the next commit's offsets.
    The commit sends EndTxn only once every batch completed, so every future is done here:
    a look at each, not a wait (~0.1 µs a record)."""
    for position, f in enumerate(futures):
        if not f.is_done or f.exception is not None:
            why = "not done" if not f.is_done else repr(f.exception)
            raise UndeliveredCommit(
                f"the commit returned, but record {position} of the transaction was not "
                f"delivered ({why}): the transaction may not have committed as sent"
            )


def _delivered(futures: Sequence[Any], deadline: float) -> None:
    """Wait for every delivery until `deadline`, or raise the first failure. (Not `flush`:
    once the broker refused a batch, kafka-python splits it and `flush` fails on the old
    batch.)"""
    for f in futures:
        _delivery(f, deadline)


def _delivery(future: Any, deadline: float) -> Any:
    """`future`'s record metadata once delivered (waiting until `deadline`), or its failure."""
    return future.get(timeout=max(0.0, deadline - time.monotonic()))
