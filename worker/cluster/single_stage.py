"""The single-stage replica: while one replica is the whole cluster, one transaction a batch.

A replica whose edge owns every input partition, whose shard role holds all S shards and
whose gather role holds every log partition, with everything appended to the log decided,
needs no internal hop but the log: the edge thread appends the batch's fingerprint-log
records, reads their offsets inside the transaction, votes with the shard role's
`ShardState`, decides with the gather role's `Gatherer`s, and commits outputs, dead letters,
shard and gather changelog records and the offsets of all three groups (input offsets; each
shard's checkpoint; each log partition's votes commit with its next log offset) in one
transaction. No payload and no votes records, and the log records are decided ones (their
documents' input coordinates, no fingerprints: `envelope.decided_record`): nothing would read
more, since every checkpoint moves past them in the same transaction. The fingerprints are
voted on from memory (`LogAppend.fingerprints`). Outcomes and state are what the three roles
would have committed, so restores and a later hand-over to the roles' ordinary path change
nothing (docs/design/scale-out.md, "a single-stage replica").

Handing over between the threads (`SingleStage`, shared by the three roles):

* **Entering.** The edge asks (`ask`) once it owns every input partition and the others hold
  everything; it appends nothing more until they answer (its input paused, its membership
  kept), and stops asking if a group moves. The shard and gather threads park
  (`park`) at the start of a round once caught up with the log's last stable offset and
  holding nothing undecided, taking their group metadata then (on their own threads: a
  consumer is not shared); parked, they only poll their groups. The edge enters with that
  metadata (`groups`) and the log's ends (`ends`).
  It asks only while both roles could park (everything held, nothing restoring or
  stopped). If they do not park within `ASK_S` (a backlog too long), the edge gives up and
  asks again after `RETRY_S`, doubled each time up to `MAX_RETRY_S`.
* **Safety.** Every single-stage transaction commits the shard and gather offsets with the
  metadata taken when entering: after any rebalance of those groups the broker refuses them
  (KIP-447), and the transaction aborts. Each log record must be written where the log ended
  (`ends`): a record another producer appended in between fails the transaction. A failed
  transaction rebuilds all three roles' state (as three failed role transactions would) and
  leaves.
* **Leaving.** A parked role whose group moved (a rebalance began, or records arrived for
  it: they are rewound) asks to leave (`moved`); the edge leaves at its next round, as it
  does when it no longer owns every input partition: it seeks the shard's and gather's log
  readers past what it decided, and unparks them. They go on from committed state.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from neardup_stream.sharded.fingerprints import FingerprintBatch
from worker.cluster.envelope import Envelope
from worker.cluster.ingest import Ingested
from worker.cluster.outcomes import Outcomes
from worker.codec import OutMessage
from worker.metrics import Metrics
from worker.records import Source
from worker.runtime.publisher import Transaction
from worker.settings import Settings

log = logging.getLogger(__name__)
ASK_S = 60.0  # how long the edge waits for the shard and gather roles to catch up and park
RETRY_S = 10.0  # after giving up (or leaving on a failure), before asking again
MAX_RETRY_S = 300.0  # giving up again and again waits longer each time, up to this
ROLES = ("shard", "gather")


def moved(consumer: KafkaConsumer, parked_as: Any) -> bool:
    """Whether a parked role's group moved since it parked: another generation, or another
    member id (a static member that rejoined keeps the generation)."""
    now = consumer.group_metadata()
    return (now.generation_id, now.member_id) != (parked_as.generation_id, parked_as.member_id)


def read_to_end(reader: KafkaConsumer, tps: list[TopicPartition]) -> bool:
    """Whether `reader` (read_committed) read `tps` up to their last stable offsets."""
    try:
        ends = reader.end_offsets(tps)
        return all(reader.position(tp) >= ends[tp] for tp in tps)
    except Exception:  # not positioned yet, or the broker did not answer: not now
        return False


class LogMoved(RuntimeError):
    """A log record was not written where the log ended: another producer appended."""


@dataclass
class Staged:
    """What one single-stage transaction counts once committed."""

    ingested: Ingested
    outcomes: Outcomes
    ends: dict[int, int] = field(default_factory=dict)  # log partition -> its end after it


class SingleStage:
    """Shared by the edge, shard and gather roles of one replica (see the module docstring)."""

    def __init__(self, settings: Settings, metrics: Metrics) -> None:
        self.settings, self.metrics = settings, metrics
        self._lock = threading.Lock()
        self.on = False
        self.asking = False
        self._parked: set[str] = set()
        self._moved = False
        self._asked_at = 0.0
        self._next_try = 0.0
        self._backoff = RETRY_S  # after giving up: doubles up to MAX_RETRY_S, reset on entering
        self.groups: dict[str, Any] = {}  # offsets topic -> group metadata taken when entering
        self.ends: dict[int, int] = {}  # log partition -> offset its next record must have

    # the shard and gather threads

    def parked(self, role: str) -> bool:
        with self._lock:
            return role in self._parked

    def park(self, role: str) -> None:
        with self._lock:
            if self.asking:
                self._parked.add(role)

    def moved(self, role: str) -> None:
        """A parked role's group moved, or records came for it: the edge leaves."""
        with self._lock:
            if role in self._parked:
                self._moved = True

    # the edge thread

    def may_ask(self) -> bool:
        return not self.on and not self.asking and time.monotonic() >= self._next_try

    def ask(self) -> None:
        with self._lock:
            self.asking, self._asked_at = True, time.monotonic()

    def answered(self) -> bool:
        """Whether both roles parked; gives up (unparking them) after `ASK_S`."""
        with self._lock:
            if self._moved:  # a group moved while parked: not now
                self._unpark(RETRY_S)
                return False
            if self._parked == set(ROLES):
                return True
            if time.monotonic() - self._asked_at > ASK_S:
                self._unpark(self._backoff)  # again later, and later each time
                self._backoff = min(self._backoff * 2, MAX_RETRY_S)
            return False

    def enter(self, groups: dict[str, Any], ends: dict[int, int]) -> None:
        with self._lock:
            self.groups, self.ends = groups, ends
            self.on, self.asking = True, False  # a move since `answered` shows in `must_leave`
            self._backoff = RETRY_S
        self.metrics.single_stage.set(1)
        log.info("single stage: this replica is the whole cluster; one transaction a batch")

    def must_leave(self) -> bool:
        with self._lock:
            return self._moved

    def leave(self, retry_after_s: float = 0.0) -> None:
        with self._lock:
            was_on = self.on
            self._unpark(retry_after_s)
        if was_on:
            self.metrics.single_stage.set(0)
            log.info("single stage: left; the roles go on from the committed state")

    def _unpark(self, retry_after_s: float) -> None:
        self.on = self.asking = self._moved = False
        self._parked.clear()
        self._next_try = time.monotonic() + retry_after_s

    def transaction(
        self,
        ingested: Ingested,
        edge_offsets: dict[TopicPartition, OffsetAndMetadata],
        shard: Any,
        gather: Any,
    ) -> tuple[Transaction, Staged]:
        """The batch's transaction: its log records and dead letters first, the rest once
        the log records' offsets are known (`Transaction.then`)."""
        c = self.settings.cluster
        first = [i for i, m in enumerate(ingested.messages) if m.topic != c.payloads]
        where = {at: n for n, at in enumerate(first)}  # message -> its place in `first`
        staged = Staged(ingested, Outcomes(self.settings, gather.rejections, gather.handover))

        def then(written: list[int]) -> Transaction:
            messages = self._decide(
                ingested, [written[where[a.at]] for a in ingested.appends], shard, gather, staged
            )
            offsets = {**shard.checkpoints(), **gather.checkpoints(gather.parked_at)}
            groups = {c.shards: self.groups["shard"], c.votes: self.groups["gather"]}
            sources: list[Source | None] = [None] * len(messages)
            return Transaction(
                [*messages, *staged.outcomes.messages],
                [*sources, *staged.outcomes.sources],
                offsets,
                groups,
            )

        txn = Transaction(
            [ingested.messages[i] for i in first],
            [ingested.sources[i] for i in first],
            edge_offsets,
            then=then,
        )
        return txn, staged

    def _decide(
        self, ingested: Ingested, offsets: list[int], shard: Any, gather: Any, staged: Staged
    ) -> list[OutMessage]:
        """Vote and decide each log record where it was written; the shard changelog records."""
        s = self.settings
        changelog: list[OutMessage] = []
        expect = dict(self.ends)
        for append, offset in zip(ingested.appends, offsets, strict=True):
            message = ingested.messages[append.at]
            p = message.partition
            assert p is not None
            if offset != expect.get(p):
                raise LogMoved(
                    f"log partition {p}: a record was written at {offset}, the log ended at "
                    f"{expect.get(p)}: another producer appended"
                )
            expect[p] = offset + 1
            fb = FingerprintBatch.unpack(append.fingerprints, s.dedup.fingerprint_id)
            fb = Envelope.placed(fb, offset, p)
            voted = shard.owned.vote(p, offset, fb)
            if [v.shard for v in voted] != list(range(s.dedup.home_shards)):
                raise RuntimeError(f"single stage: shards {[v.shard for v in voted]} voted")
            changelog += shard.changelog(offset, voted)
            part = gather.parts[p]
            decisions, firsts = part.gatherer.decide_and_record(fb, [v.votes for v in voted])
            part.join.decided(offset)
            staged.outcomes.add_record(p, offset, decisions, append.passages, firsts)
            staged.ends[p] = offset + 2  # after its transaction's commit marker
        return changelog

    def committed(self, staged: Staged) -> None:
        """Where the log ends now, for the next transaction's check."""
        self.ends.update(staged.ends)
