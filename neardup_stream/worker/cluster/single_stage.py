"""The single-stage replica: while one replica is the whole cluster, one transaction a batch.

A replica whose edge owns every input partition, whose shard role holds all S shards and
whose gather role holds every log partition, with everything appended to the log decided,
needs no internal hop but the log: the edge thread places the batch's fingerprint-log
records where the log ends (`ends`; the transaction checks, before its commit, that they
were written there), votes with the shard role's `ShardState`, decides with the gather
role's `Gatherer`s, and commits outputs, dead letters,
shard and gather changelog records and the offsets of all three groups (input offsets; each
shard's checkpoint; each log partition's votes commit with its next log offset) in one
transaction. No payload and no votes records, and the log records are decided ones (their
documents' input coordinates, no fingerprints: `log_record.decided_record`): nothing would read
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
  (`ends`): a record another producer appended in between fails the transaction before its
  commit (`Transaction.verify`), so the votes and decisions made there never commit. A failed
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
from kafka.structs import ConsumerGroupMetadata

from neardup_stream.worker.cluster.ingest import Ingested
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.outcomes import Outcomes
from neardup_stream.worker.cluster.parked import ParkedGather, ParkedShard
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import Assignment
from neardup_stream.worker.records import Source
from neardup_stream.worker.runtime.publisher import Transaction, Written
from neardup_stream.worker.runtime.restore import Restores
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
ASK_S = 60.0  # how long the edge waits for the shard and gather roles to catch up and park
RETRY_S = 10.0  # after giving up (or leaving on a failure), before asking again
MAX_RETRY_S = 300.0  # giving up again and again waits longer each time, up to this
ROLES = ("shard", "gather")


def moved(consumer: KafkaConsumer, parked_as: ConsumerGroupMetadata | None) -> bool:
    """Whether a parked role's group moved since it parked: another generation, or another
    member id (a static member that rejoined keeps the generation)."""
    if parked_as is None:
        return True
    now = consumer.group_metadata()
    return (now.generation_id, now.member_id) != (parked_as.generation_id, parked_as.member_id)


def settled(assignment: Assignment, restores: Restores[Any], followed: bool) -> bool:
    """Whether a shard or gather role's group assigned it partitions, is not rebalancing
    (`followed`) and nothing assigned is restoring: at start, the edge appends nothing until
    both roles are (`EdgeRole`), so that a replica that is the whole cluster decides its
    first batch in single stage. Set on the role's thread each round, read as a hint."""
    return followed and assignment.seen_assignment and not restores.pending()


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

    def __init__(
        self, settings: Settings, metrics: Metrics, shard: ParkedShard, gather: ParkedGather
    ) -> None:
        self.settings, self.metrics = settings, metrics
        self.shard, self.gather = shard, gather  # parked while it is on (`parked`)
        shard.stage = gather.stage = self
        self._lock = threading.Lock()
        self.on = False
        self.asking = False
        self._parked: set[str] = set()
        self._moved = False
        self._asked_at = 0.0
        self._next_try = 0.0
        self._backoff = RETRY_S  # after giving up: doubles up to MAX_RETRY_S, reset on entering
        self.groups: dict[str, ConsumerGroupMetadata] = {}  # offsets topic -> its group's, entering
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

    def log_ends(self) -> dict[int, int] | None:
        """Where each log partition ends: both parked roles read it up to there (None: they
        disagree, or a reader is not positioned)."""
        ends: dict[int, int] = {}
        for p in range(self.settings.cluster.log_partitions):
            try:
                shard_at = self.shard.log_position(p)
                gather_at = self.gather.log_position(p)
            except Exception:
                return None
            if shard_at != gather_at:
                return None
            ends[p] = shard_at
        return ends

    def enter(self, ends: dict[int, int]) -> None:
        """On, with the parked roles' group metadata and the log's `ends`."""
        shard_as, gather_as = self.shard.parked_as, self.gather.parked_as
        if shard_as is None or gather_as is None:
            raise RuntimeError("single stage: entered before both roles parked")
        c = self.settings.cluster
        with self._lock:
            self.groups, self.ends = {c.shards: shard_as, c.votes: gather_as}, ends
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
    ) -> tuple[Transaction, Staged]:
        """The batch's transaction, its log records decided where the log ends (`ends`):
        `verify` fails it if one was written elsewhere (`LogMoved`), before the commit."""
        shard, gather = self.shard, self.gather
        first = self._first(ingested)
        staged = Staged(ingested, Outcomes(self.settings, gather.rejections, gather.handover))
        placed = self.placements(ingested)
        messages = self._decide(ingested, placed, staged)
        edge = [ingested.messages[i] for i in first]
        sources: list[Source | None] = [ingested.sources[i] for i in first]
        return Transaction(
            [*edge, *messages, *staged.outcomes.messages],
            [*sources, *([None] * len(messages)), *staged.outcomes.sources],
            {**edge_offsets, **shard.checkpoints(), **gather.parked_checkpoints()},
            self.groups,
            self.check(ingested, placed),
        ), staged

    def check(self, ingested: Ingested, placed: list[int]) -> Callable[[Written], None]:
        """The transaction's `verify`: each log record was written where it was `placed`
        (its place in the transaction: after the edge's messages before it)."""
        where = {at: n for n, at in enumerate(self._first(ingested))}  # -> place in it
        expected = [
            (where[a.at], ingested.messages[a.at].partition, offset)
            for a, offset in zip(ingested.appends, placed, strict=True)
        ]

        def verify(written: Written) -> None:
            for n, p, offset in expected:
                if written[n] != offset:
                    raise LogMoved(
                        f"log partition {p}: a record was written at {written[n]}, the log "
                        f"ended at {offset}: another producer appended"
                    )

        return verify

    def _first(self, ingested: Ingested) -> list[int]:
        """The edge's messages the transaction begins with (all but payload records)."""
        payloads = self.settings.cluster.payloads
        return [i for i, m in enumerate(ingested.messages) if m.topic != payloads]

    def placements(self, ingested: Ingested) -> list[int]:
        """Where each of the batch's log records will be, if nothing else appends first: its
        log partition's end (`ends`), one after another within the batch."""
        expect, placed = dict(self.ends), []
        for append in ingested.appends:
            p = ingested.messages[append.at].partition
            if p not in expect:
                raise LogMoved(f"log partition {p}: where it ends is not known")
            placed.append(expect[p])
            expect[p] += 1
        return placed

    def _decide(self, ingested: Ingested, offsets: list[int], staged: Staged) -> list[OutMessage]:
        """Vote and decide each log record where it will be written; the shard changelog
        records."""
        s = self.settings
        changelog: list[OutMessage] = []
        for append, offset in zip(ingested.appends, offsets, strict=True):
            p = ingested.messages[append.at].partition
            assert p is not None
            fb = Envelope.placed(append.fingerprints, offset, p)
            voted = self.shard.vote_in_place(p, offset, fb)
            if [v.shard for v in voted] != list(range(s.dedup.home_shards)):
                raise RuntimeError(f"single stage: shards {[v.shard for v in voted]} voted")
            changelog += self.shard.changelog(offset, voted)
            votes = [v.votes for v in voted]
            decisions, firsts = self.gather.decide_in_place(p, offset, fb, votes)
            staged.outcomes.add_record(p, offset, decisions, append.passages, firsts)
            staged.ends[p] = offset + 2  # after its transaction's commit marker
        return changelog

    def committed(self, staged: Staged, at: float) -> None:
        """A single-stage transaction committed at `at`: count its outcomes and the shards'
        gauges; where the log ends now, for the next transaction's check."""
        self.ends.update(staged.ends)
        staged.outcomes.account(self.metrics, at)
        self.shard.committed(None, at)
