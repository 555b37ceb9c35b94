"""The gather role: owning partition p of the votes topic means deciding log partition p.

It reads the fingerprint log partition, its payloads partition (the only role that does:
`PayloadJoin` matches each log record with its payload record) and the votes of all S
shards for it (`gather.reading`); a log record is decided, with `Gatherer`, once every shard
has voted on it and its payloads are read, in log order (`VoteJoin`; one `LogPartition` per
owned log partition, `gather.state`). One transaction per batch (capped in records and
bytes, halved after each consecutive failure) publishes the decisions and pass-throughs,
the first decisions (gather changelog, partition p, split under the message limit) and the
checkpoint: the next log offset to decide and where to resume reading payloads, in the
metadata of the committed offset of votes partition p, which is the first votes record
still needed. A log partition it gains is rebuilt from its gather changelog on a restore
thread, while the other partitions go on, and resumes at the checkpoint (`gather.following`);
a failed transaction rebuilds every owned partition that way. Lost partitions (membership
expired) drop their state.

Nothing is skipped: an unreadable fingerprint or votes record, or changelog record, stops
its log partition there (`RoleHealth`). A log record whose payloads were deleted (read up
to the high watermark after it, not found) is decided, so the state matches the shards',
but publishes nothing; it is logged and counted lost. This module owns the decide step
and the progress export. Metrics: latency from the input record times, batch time, lag
and the oldest undecided record per log partition, and the shard it waits for.
"""

from __future__ import annotations

import logging
import threading
import time

from kafka import OffsetAndMetadata, TopicPartition
from kafka.structs import ConsumerGroupMetadata

from neardup_stream.models import Decision
from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.join import Joined
from neardup_stream.sharded.votes import Votes
from neardup_stream.worker.cluster.gather import deciding
from neardup_stream.worker.cluster.gather.following import GatherFollow
from neardup_stream.worker.cluster.gather.reading import GatherInputs
from neardup_stream.worker.cluster.gather.state import PayloadMismatch
from neardup_stream.worker.cluster.handover import Handover
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.outcomes import Outcomes
from neardup_stream.worker.cluster.single_stage import SingleStage, moved, read_to_end, settled
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import Assignment, generation_of
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.runtime.broker_gone import group_poll
from neardup_stream.worker.runtime.health import RoleHealth, Stop, forget_series
from neardup_stream.worker.runtime.overlap import PendingCommit
from neardup_stream.worker.runtime.publisher import Transaction
from neardup_stream.worker.runtime.role import Limits, Output
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)
TXN_BYTES = 32 << 20  # outputs per gather transaction (halved after each failure)


class GatherRole:
    """Decisions of the log partitions this replica owns (see the module docstring)."""

    name = "gather"
    max_bytes = TXN_BYTES

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        handover: Handover | None = None,
    ) -> None:
        self.settings, self.metrics = settings, metrics
        # Inputs a previous generation decided: decided and indexed again, not published.
        self.handover = handover or Handover("", {})
        self.health = RoleHealth("gather", metrics)
        self.inputs = GatherInputs(settings, self.health)
        self.role, self.consumer = self.inputs.role, self.inputs.consumer  # for the runner
        self.parts = self.inputs.parts  # the owned log partitions
        # settled before a revoke or a park (`runtime.overlap`)
        self.pending: PendingCommit[Outcomes] = PendingCommit()
        self.assignment = Assignment(
            settings.cluster.votes,
            metrics,
            self.pending.before_revoke,
            generation=generation_of(self.consumer),
        )
        self.follow = GatherFollow(
            settings, metrics, stop, self.health, self.inputs, self.assignment
        )
        self.rejections = Rejections(settings.topics.dlq)
        self.max_records = settings.worker.max_batch
        self.stage: SingleStage | None = None  # set by the replica: parks for single stage
        self.parked_as: ConsumerGroupMetadata | None = None  # its group metadata when parked
        self.parkable = False  # every log partition held, none restoring or stopped
        self.settled = False  # assigned, nothing restoring (`single_stage.settled`)
        self._warmed = False  # settled once since start (`runtime.role.Warming`)
        self.parked_at: dict[int, int] = {}  # its votes positions then (they do not move)

    def start(self) -> None:
        self.consumer.subscribe([self.settings.cluster.votes], listener=self.assignment)

    def poll(self, limits: Limits) -> bool:
        """Read votes, follow the assignment, read the fingerprint log into the joins (waiting
        for it when votes are ahead of it). False while a rebalance is under way: the
        partitions held may be revoked, so nothing is decided until it ends (what was read
        stays in the joins)."""
        w = self.settings.worker
        if self.stage is not None and self._single_stage(w.poll_timeout_ms):
            return False  # parked: the edge decides for the log partitions
        polled = group_poll(self.consumer, timeout_ms=w.poll_timeout_ms, max_records=w.max_batch)
        followed = self.follow.follow()
        self.parkable = followed is not None and self._whole()
        restores = self.follow.follower.restores
        self.settled = settled(self.assignment, restores, followed is not None)
        self._warmed = self._warmed or self.settled
        fresh = followed or set()
        self.metrics.role_partitions.labels("gather").set(len(self.parts))
        for tp, recs in polled.items():
            if tp.partition in fresh or tp.partition not in self.parts:
                continue  # fetched before its rewind: read again
            for rec in recs:
                self.inputs.add_votes(tp.partition, rec.offset, rec.key, rec.value)
        # Votes usually come after their record was read; when they came first (the reader's
        # last fetch ended before the record committed), wait on the reader, which answers
        # as soon as the record is in, not on the next votes or the poll's timeout.
        waits = any(
            part.waits_for_reader()
            for p, part in self.parts.items()
            if p not in fresh and not self.inputs.is_stopped(p)
        )
        self.inputs.read_log(w.poll_timeout_ms if waits else 0)
        return followed is not None

    def step(self, polled: bool, limits: Limits) -> Output[Outcomes] | None:
        """Decide what the joins hold, within `limits`; the checkpoints ride in the offsets."""
        if not polled:
            return None
        batch = self._decide(limits)
        self.inputs.read_votes_again()
        self._export_progress()
        if not batch.messages:
            return None
        return Output(Transaction(batch.messages, batch.sources, self.checkpoints()), batch)

    def _single_stage(self, wait: int) -> bool:
        """Park when the edge asks and every log partition is held with nothing undecided;
        parked, only keep the membership (votes that come are read again later) and say when
        the group moves. True: parked (`single_stage`)."""
        stage = self.stage
        assert stage is not None
        if not stage.parked("gather"):
            if stage.asking and self.pending.settle() and self._caught_up():
                self.parked_as = self.consumer.group_metadata()  # taken on its own thread
                self.parked_at = {p: self.inputs.votes_position(p) for p in self.parts}
                stage.park("gather")
            return stage.parked("gather")
        polled = group_poll(self.consumer, timeout_ms=wait)
        self.metrics.role_partitions.labels("gather").set(len(self.parts))
        came = False
        for tp, records in polled.items():
            if records:  # another replica's shards vote: read them again once unparked
                self.consumer.seek(tp, records[0].offset)
                came = True
        whole = self.assignment.owned() == set(range(self.settings.cluster.log_partitions))
        if came or self.assignment.rebalancing or not whole or moved(self.consumer, self.parked_as):
            stage.moved("gather")
        return True

    def warmed(self) -> bool:
        """Its first assignment restored: ready (`runtime.role.Warming`)."""
        return self._warmed

    def holds_all(self) -> bool:
        """Whether it could park: every log partition held, none restoring or stopped (set on
        its own thread each round; the edge reads it as a hint, checked again)."""
        return self.parkable

    def _whole(self) -> bool:
        """Every log partition held, none restoring or stopped."""
        every = range(self.settings.cluster.log_partitions)
        whole = len(self.parts) == len(every) and not self.follow.follower.restores.pending()
        return whole and not any(self.inputs.is_stopped(p) for p in every)

    def _caught_up(self) -> bool:
        """`_whole`, its group settled on every log partition, nothing undecided held, and
        the log read up to its last stable offset."""
        every = set(range(self.settings.cluster.log_partitions))
        if not self._whole() or self.assignment.rebalancing or self.assignment.owned() != every:
            return False
        if any(part.join.records or part.join.votes for part in self.parts.values()):
            return False
        fingerprints = self.settings.cluster.fingerprints
        return read_to_end(self.inputs.reader, [TopicPartition(fingerprints, p) for p in every])

    def follow_single_stage(self) -> None:
        """After single-stage transactions: read the log on past what they decided."""
        reader, fingerprints = self.inputs.reader, self.settings.cluster.fingerprints
        for p, part in self.parts.items():
            tp = TopicPartition(fingerprints, p)
            reader.seek(tp, max(reader.position(tp), part.join.next))

    def log_position(self, partition: int) -> int:
        """Where its log reader stands on log `partition` (`parked.ParkedRole`)."""
        tp = TopicPartition(self.settings.cluster.fingerprints, partition)
        return int(self.inputs.reader.position(tp))

    def decide_in_place(
        self, partition: int, offset: int, fb: FingerprintBatch, votes: list[Votes]
    ) -> tuple[list[Decision], list[FirstDecisions]]:
        """The single-stage decision on a log record not read from the log
        (`parked.ParkedGather`)."""
        part = self.parts[partition]
        decided = part.gatherer.decide_and_record(fb, votes)
        part.join.decided(offset)
        return decided

    def parked_checkpoints(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """`checkpoints` at the votes positions it parked at (`parked.ParkedGather`)."""
        return self.checkpoints(self.parked_at)

    def checkpoints(
        self, positions: dict[int, int] | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """Each owned log partition's votes commit, its checkpoint in the metadata; parked,
        with the votes positions it parked at (its consumer is its own thread's)."""
        votes = self.settings.cluster.votes
        joins = {p: part.join for p, part in self.parts.items()}
        if positions is None:
            positions = {p: self.inputs.votes_position(p) for p in self.parts}
        resume = {p: self.inputs.payload_checkpoint(p) for p in self.parts}
        return {
            TopicPartition(votes, p): OffsetAndMetadata(commit.offset, commit.metadata, -1)
            for p, commit in deciding.commits(joins, positions, resume).items()
        }

    def committed(self, carried: Outcomes, at: float) -> None:
        carried.account(self.metrics, at)

    def rebuild(self) -> None:
        """Every owned partition ran ahead of the commit: restored again from its changelog
        (an input whose output was refused is then decided again and dead-lettered)."""
        log.info("rebuilding log partitions %s", sorted(self.parts))
        self.follow.clear()

    def close(self) -> None:
        self.follow.close()
        self.inputs.close()

    def _decide(self, limits: Limits) -> Outcomes:
        batch = Outcomes(self.settings, self.rejections, self.handover)

        def decide(p: int, ready: Joined[Envelope]) -> bool:
            try:
                done = self.parts[p].decide(
                    ready, lambda: self.inputs.payloads_gone(p, ready.offset)
                )
            except PayloadMismatch as exc:
                self.inputs.halt(Stop(self.settings.cluster.payloads, p, ready.offset, str(exc)))
                return False
            if done is None:
                return False  # its payloads are not read yet
            if done.passages is None:  # deleted by retention: decided (the state), not published
                self._lost_payloads(p, ready.offset, len(done.decisions))
                batch.add_record(p, ready.offset, [], [], done.firsts)
            else:
                batch.add_record(p, ready.offset, done.decisions, done.passages, done.firsts)
            return True

        joins = {p: part.join for p, part in self.parts.items()}
        deciding.assemble(joins, limits.records, limits.bytes, lambda: batch.size, decide)
        return batch

    def _lost_payloads(self, p: int, offset: int, documents: int) -> None:
        self.metrics.records_lost.labels("gather").inc()
        log.error(
            "gather: log partition %d, record %d: its payloads were deleted by retention "
            "before this role read them; its %d documents are decided but get no output",
            p,
            offset,
            documents,
        )

    def waiting_for(self) -> str | None:
        """`runtime.stall.Waits`: the oldest undecided record of a log partition (a stopped
        one is said by its stop), and what it waits for."""
        for p, part in sorted(self.parts.items()):
            if not part.join.records or self.inputs.is_stopped(p):
                continue
            offset, shards = part.join.records[0].offset, part.join.waiting_for()
            if shards:
                return f"the votes of shards {shards} on log partition {p}, record {offset}"
            if part.waits_for_payload():
                return f"the payloads of log partition {p}, record {offset}"
            return f"the decision of log partition {p}, record {offset}"
        return None

    def _export_progress(self) -> None:
        """Per log partition: undecided records, the oldest one's age, the shard it waits for."""
        c, now_ms = self.settings.cluster, time.time() * 1000
        for p, part in self.parts.items():
            position = self.inputs.log_position(p)
            end = self.inputs.reader.highwater(TopicPartition(c.fingerprints, p))
            stopped = self.inputs.is_stopped(p)
            found = deciding.progress(part.join, end, position, stopped, now_ms)
            self.metrics.role_lag.labels("gather", str(p)).set(found.lag)
            self.metrics.oldest_undecided.labels(str(p)).set(found.oldest_age_s)
            if found.waiting_for is not None:
                self.metrics.waiting_for_shard.labels(str(p)).set(found.waiting_for)
            else:
                forget_series(self.metrics.waiting_for_shard, str(p))
        held = sum(part.held_bytes for part in self.parts.values())
        self.metrics.gather_buffered_bytes.set(held)
