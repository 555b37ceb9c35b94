"""The gather role: owning partition p of the votes topic means deciding log partition p.

It reads the fingerprint log partition, its payloads partition (the only role that does:
`PayloadJoin` matches each log record with its payload record) and the votes of all S
shards for it; a log record is decided, with `Gatherer`, once every shard has voted on it
and its payloads are read, in log order (`VoteJoin`). One transaction per batch (capped in
records and bytes, halved after each consecutive failure) publishes the decisions and
pass-throughs, the first decisions (gather changelog, partition p, split under the message
limit) and the checkpoint: the next log offset to decide and where to resume reading
payloads, in the metadata of the committed offset of votes partition p, which is the first
votes record still needed. A log partition it gains is rebuilt from its gather changelog
(retention follows the dedup window) on a restore thread, while the other partitions go on,
and resumes at the checkpoint; a failed transaction rebuilds every owned partition that
way. Lost partitions (membership expired) drop their state.

Nothing is skipped: an unreadable fingerprint or votes record, or changelog record, stops
its log partition there (`RoleHealth`); a checkpoint older than the log start is reported
as lost (a payload checkpoint older than the payloads' log start too). A log record whose
payloads were deleted (read up to the high watermark after it, not found) is decided, so
the state matches the shards', but publishes nothing; it is logged and counted lost. The reader pauses a partition whose undecided records (or payloads read ahead,
unless the oldest record waits for its own) exceed its byte budget; votes on records not
read yet beyond theirs are dropped and read again later.
Metrics: latency from the input record times, batch time, lag and the oldest undecided
record per log partition, and the shard it waits for.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import Joined, Pending, VoteJoin
from neardup_stream.sharded.votes import Votes
from worker import clients
from worker.cluster import checkpoint, gathering
from worker.cluster.envelope import Envelope
from worker.cluster.handover import Handover
from worker.cluster.health import RoleHealth, Stop, forget_series
from worker.cluster.outcomes import Outcomes
from worker.cluster.payloads import PayloadCheckpoint, PayloadJoin, PayloadRecord
from worker.metrics import Metrics
from worker.partitions import Assignment
from worker.rejections import Rejections
from worker.runtime import following
from worker.runtime.publisher import Transaction
from worker.runtime.replay import ROLE_POLICY, each, replay
from worker.runtime.restore import PauseTopic, Restored, Restores
from worker.runtime.role import role_settings
from worker.runtime.runner import Limits, Output
from worker.settings import Settings

log = logging.getLogger(__name__)
BUFFER_BYTES = 64 << 20  # undecided fingerprint-log records held per log partition
VOTES_AHEAD_BYTES = 16 << 20  # votes on records not read yet, per log partition
TXN_BYTES = 32 << 20  # outputs per gather transaction (halved after each failure)
SWEEP_USED = 64  # used payload offsets in a checkpoint above which stale payloads are swept


class Blocked(NamedTuple):
    """The oldest record of a log partition, voted on but without its payloads read: they
    are below `end`, the payloads' high watermark after it was committed, or deleted."""

    offset: int
    end: int


class RestoredLog(NamedTuple):
    """A log partition's first decisions, restored, and its checkpoint."""

    gatherer: Gatherer
    start: int


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
        self.settings, self.metrics, self._stop = settings, metrics, stop
        # Inputs a previous generation decided: decided and indexed again, not published.
        self.handover = handover or Handover("", {})
        self.role = role_settings(settings, "gather")
        self.consumer = clients.make_consumer(self.role)
        self.reader = clients.make_reader(settings)
        self.health = RoleHealth("gather", metrics)
        self.assignment = Assignment(settings.cluster.votes, metrics, lambda: None)
        self.owned: dict[int, VoteJoin[Envelope]] = {}
        self.gatherers: dict[int, Gatherer] = {}
        self.payloads: dict[int, PayloadJoin] = {}
        self._payloads_from: dict[int, PayloadCheckpoint] = {}  # of restores under way
        self._blocked: dict[int, Blocked] = {}  # per log partition
        self._watermarks: KafkaConsumer | None = None  # read_uncommitted, for `_blocked`
        self.rejections = Rejections(settings.topics.dlq)
        self.max_records = settings.worker.max_batch
        self._restores: Restores[RestoredLog] = Restores(
            "gather",
            stop,
            metrics,
            lambda: clients.make_reader(settings),
            PauseTopic(self.consumer, settings.cluster.votes),  # its votes: read once restored
        )

    def start(self) -> None:
        self.consumer.subscribe([self.settings.cluster.votes], listener=self.assignment)

    def poll(self, limits: Limits) -> None:
        """Read votes, follow the assignment, read the fingerprint log into the joins."""
        w = self.settings.worker
        polled = self.consumer.poll(timeout_ms=w.poll_timeout_ms, max_records=w.max_batch)
        owned, dropped = self.assignment.take()
        fresh = self._follow(owned, dropped)
        self.metrics.role_partitions.labels("gather").set(len(self.owned))
        for tp, recs in polled.items():
            if tp.partition in fresh or tp.partition not in self.owned:
                continue  # fetched before its rewind: read again
            for rec in recs:
                self._add_votes(tp.partition, rec.offset, rec.key, rec.value)
        self._read_log()

    def step(self, polled: None, limits: Limits) -> Output[Outcomes] | None:
        """Decide what the joins hold, within `limits`; the checkpoints ride in the offsets."""
        batch = self._decide(limits)
        self._read_votes_again()
        self._export_progress()
        if not batch.messages:
            return None
        votes = self.settings.cluster.votes
        positions = {p: self.consumer.position(TopicPartition(votes, p)) for p in self.owned}
        resume = {p: self._payload_checkpoint(p) for p in self.owned}
        offsets = {
            TopicPartition(votes, p): OffsetAndMetadata(commit.offset, commit.metadata, -1)
            for p, commit in gathering.commits(self.owned, positions, resume).items()
        }
        return Output(Transaction(batch.messages, batch.sources, offsets), batch)

    def committed(self, carried: Outcomes) -> None:
        carried.account(self.metrics)

    def rebuild(self) -> None:
        """Every owned partition ran ahead of the commit: restored again from its changelog
        (an input whose output was refused is then decided again and dead-lettered)."""
        log.info("rebuilding log partitions %s", sorted(self.owned))
        self.owned.clear()

    def close(self) -> None:
        self._restores.close()
        self.reader.close()
        if self._watermarks is not None:
            self._watermarks.close()
        self.consumer.close()

    def _follow(self, assigned: set[int], dropped: set[int]) -> set[int]:
        """Drop partitions no longer assigned (or lost); restore gained ones in the
        background (the other partitions go on meanwhile) and take them on once restored.

        A partition stopped at its changelog is not rebuilt again while assigned; one stopped
        in the fingerprint log or votes keeps its state (and checkpoint) but reads nothing
        more; when rebuilt after a failure it meets the record again.
        """
        c = self.settings.cluster
        stopped = self._stopped_changelogs()
        gone = following.leaving(
            set(self.owned), self._restores.pending(), assigned, dropped, stopped
        )
        for p in gone.release:
            self.owned.pop(p, None)
            self.gatherers.pop(p, None)
            self.payloads.pop(p, None)
            self._release(p)
        for p in gone.cancel:
            self._restores.cancel(p)
        gained = set()
        for done in self._restores.finished():
            p, restored = done.partition, done.state
            if done.stopped is not None:
                self.health.stop(
                    Stop(c.gather_changelog, p, done.stopped.offset, done.stopped.reason)
                )
                continue
            if restored is None:  # a failed restore: started again below
                log.error("restoring log partition %d failed; retrying", p, exc_info=done.error)
                self._stop.wait(1.0)
                continue
            self._take_on(p, restored.gatherer, restored.start)
            gained.add(p)
        pending, stopped = self._restores.pending(), self._stopped_changelogs()
        for p in following.to_restore(assigned, set(self.owned), pending, stopped):
            self._release(p)
            votes_tp = TopicPartition(c.votes, p)
            meta = checkpoint.read_metadata(self.consumer, votes_tp)
            start = checkpoint.decode(meta).get(p, 0)
            self._payloads_from[p] = checkpoint.decode_payloads(meta).get(p, PayloadCheckpoint(0))
            self._restores.start(p, functools.partial(self._restore, p, start))
        if gained or set(self.owned) != {tp.partition for tp in self.reader.assignment()}:
            tps = [TopicPartition(t, p) for p in sorted(self.owned) for t in self._logs()]
            self.reader.assign(tps)
            for p in gained:
                self.reader.seek(TopicPartition(c.fingerprints, p), self.owned[p].next)
                self.reader.seek(TopicPartition(c.payloads, p), self.payloads[p].position)
        return gained

    def _logs(self) -> tuple[str, str]:
        c = self.settings.cluster
        return c.fingerprints, c.payloads

    def _restore(
        self, p: int, start: int, reader: KafkaConsumer, should_stop: Callable[[], bool]
    ) -> Restored[RestoredLog]:
        """Log partition `p`'s first decisions from its changelog (on the restore thread)."""
        gatherer = Gatherer(self.settings.dedup)
        tp = TopicPartition(self.settings.cluster.gather_changelog, p)
        apply = each(lambda data: gatherer.apply(FirstDecisions.unpack(data)))
        done = replay(reader, {tp: None}, apply, ROLE_POLICY, should_stop, self.metrics)
        stopped = done.stopped.get(p)
        return Restored(None if stopped else RestoredLog(gatherer, start), stopped)

    def _take_on(self, p: int, gatherer: Gatherer, start: int) -> None:
        """A restored partition: decide from its checkpoint (or the log start, if later)."""
        c = self.settings.cluster
        log_tp, votes_tp = TopicPartition(c.fingerprints, p), TopicPartition(c.votes, p)
        payloads_tp = TopicPartition(c.payloads, p)
        starts = self.reader.beginning_offsets([log_tp, payloads_tp])
        log_start = starts.get(log_tp, 0)
        if self.health.lost(c.fingerprints, p, start, log_start):
            start = log_start
        resume = self._payloads_from.pop(p, PayloadCheckpoint(0))
        payloads_start = starts.get(payloads_tp, 0)
        if self.health.lost(c.payloads, p, resume.start, payloads_start):
            resume = PayloadCheckpoint(payloads_start)
        self.payloads[p] = PayloadJoin(resume)
        self._blocked.pop(p, None)
        self.owned[p] = VoteJoin(
            self.settings.dedup.home_shards, start, ahead_budget=VOTES_AHEAD_BYTES
        )
        self.gatherers[p] = gatherer
        committed = self.consumer.committed(votes_tp)
        if committed is None:
            self.consumer.seek_to_beginning(votes_tp)
        else:
            self.consumer.seek(votes_tp, committed)
        log.info("log partition %d: resuming at offset %d", p, start)

    def _stopped_changelogs(self) -> set[int]:
        topic = self.settings.cluster.gather_changelog
        return {s.partition for s in self.health.stopped() if s.topic == topic}

    def _is_stopped(self, p: int) -> bool:
        c = self.settings.cluster
        return any(self.health.is_stopped(t, p) for t in (c.fingerprints, c.payloads, c.votes))

    def _release(self, p: int) -> None:
        """Forget a partition's stops and series (it left, or is rebuilt from scratch)."""
        c = self.settings.cluster
        for topic in (c.fingerprints, c.payloads, c.votes, c.gather_changelog):
            self.health.release(topic, p)
        _paused(self.consumer, TopicPartition(c.votes, p), False)
        for gauge in (self.metrics.oldest_undecided, self.metrics.waiting_for_shard):
            forget_series(gauge, str(p))
        forget_series(self.metrics.role_lag, "gather", str(p))

    def _add_votes(self, partition: int, at: int, key: bytes | None, value: bytes) -> None:
        if self._is_stopped(partition):
            return
        try:
            offset, votes = int(key or b""), Votes.unpack(value)
        except ValueError as exc:
            self._halt(Stop(self.settings.cluster.votes, partition, at, f"unreadable votes: {exc}"))
            return
        self.owned[partition].add_votes(offset, votes, at, len(value) + len(key or b""))

    def _halt(self, stop: Stop) -> None:
        """Stop a log partition: its state and checkpoint stay, nothing more is read for it
        (the records before the stop are still decided once their votes are in)."""
        c = self.settings.cluster
        self.health.stop(stop)
        _paused(self.consumer, TopicPartition(c.votes, stop.partition), True)
        for topic in self._logs():
            _paused(self.reader, TopicPartition(topic, stop.partition), True)

    def _read_log(self) -> None:
        c = self.settings.cluster
        for p, join in self.owned.items():  # a full buffer pauses its partition's reader
            stopped = self._is_stopped(p)
            tp = TopicPartition(c.fingerprints, p)
            _paused(self.reader, tp, join.record_bytes >= BUFFER_BYTES or stopped)
            full = self.payloads[p].held_bytes >= BUFFER_BYTES and not self._waits_for_payload(p)
            _paused(self.reader, TopicPartition(c.payloads, p), full or stopped)
        if not self.owned:
            return
        polled = self.reader.poll(timeout_ms=0, max_records=500)
        config_id, topic = self.settings.dedup.fingerprint_id, self.settings.topics.input
        for tp, recs in polled.items():
            target, payloads = self.owned.get(tp.partition), self.payloads.get(tp.partition)
            for rec in recs:
                if target is None or payloads is None or self._is_stopped(tp.partition):
                    break
                try:
                    if tp.topic == c.payloads:
                        record = PayloadRecord.unpack(rec.value, topic)
                        payloads.add(rec.offset, record, len(rec.value))
                        continue
                    env = Envelope.unpack(rec.value, config_id, topic, rec.offset)
                except ValueError as exc:  # the shards stop there too (fingerprint log)
                    self._halt(Stop(tp.topic, tp.partition, rec.offset, str(exc)))
                    break
                target.add_record(Pending(rec.offset, env, rec.timestamp, len(rec.value)))

    def _waits_for_payload(self, p: int) -> bool:
        """Whether the oldest undecided record of log partition `p` waits for its payloads."""
        records = self.owned[p].records
        return bool(records) and records[0].payload.join_key not in self.payloads[p].held

    def _payloads_gone(self, p: int, offset: int) -> bool:
        """Whether the payloads of log record `offset` were deleted (by retention): the edge
        appended them before committing the record, so they lie below the payloads' high
        watermark taken once the record was read; read up to there, they were not found.
        (The reader starts at the lowest payload offset still needed, so none is skipped.)"""
        tp = TopicPartition(self.settings.cluster.payloads, p)
        try:
            at = self.reader.position(tp)
        except Exception:  # not positioned yet after a seek
            return False
        if at < (self.reader.highwater(tp) or 0):
            return False  # still reading what was fetched: no need to ask the broker
        blocked = self._blocked.get(p)
        if blocked is None or blocked.offset != offset:
            self._blocked[p] = blocked = Blocked(offset, self._high_watermark(tp))
        return at >= blocked.end

    def _high_watermark(self, tp: TopicPartition) -> int:
        """The end of `tp`, records of open transactions included (the reader, being
        read_committed, sees the last stable offset)."""
        if self._watermarks is None:
            self._watermarks = KafkaConsumer(
                **clients.common_config(self.settings.kafka),
                group_id=None,
                enable_auto_commit=False,
            )
        return int(self._watermarks.end_offsets([tp])[tp])

    def _payload_checkpoint(self, p: int) -> PayloadCheckpoint:
        """Where log partition `p` resumes reading payloads. When many used offsets pile up
        behind a held payload (one whose log record retention deleted, of an input partition
        that sent nothing since), and the log was read up to its high watermark taken now
        (so every held payload's log record was read), the payloads of no undecided record
        are dropped."""
        join, records = self.payloads[p], self.owned[p].records
        at = join.checkpoint()
        if len(at.used) <= SWEEP_USED:
            return at
        tp = TopicPartition(self.settings.cluster.fingerprints, p)
        try:
            caught_up = self.reader.position(tp) >= self._high_watermark(tp)
        except Exception:  # not positioned yet after a seek: sweep another time
            return at
        if caught_up and join.keep_only({r.payload.join_key for r in records}):
            at = join.checkpoint()
        return at

    def _read_votes_again(self) -> None:
        """Seek back to votes dropped over their budget, once the records caught up."""
        for p, join in self.owned.items():
            at = join.rewind()
            if at is not None:
                self.consumer.seek(TopicPartition(self.settings.cluster.votes, p), at)

    def _decide(self, limits: Limits) -> Outcomes:
        batch = Outcomes(self.settings, self.rejections, self.handover)

        def decide(p: int, ready: Joined[Envelope]) -> bool:
            env = ready.payload
            passages = self.payloads[p].take(env.join_key)
            if passages is None and not self._payloads_gone(p, ready.offset):
                return False  # its payloads are not read yet
            if passages is not None and [x.source for x in passages] != env.sources:
                why = f"payloads of log record {ready.offset} are for other inputs"
                self._halt(Stop(self.settings.cluster.payloads, p, ready.offset, why))
                return False
            decisions, firsts = self.gatherers[p].decide_and_record(env.fingerprints, ready.votes)
            if passages is None:  # deleted by retention: decided (the state), not published
                self._lost_payloads(p, ready.offset, len(decisions))
                batch.add_record(p, ready.offset, [], [], firsts)
            else:
                batch.add_record(p, ready.offset, decisions, passages, firsts)
            return True

        gathering.assemble(self.owned, limits.records, limits.bytes, lambda: batch.size, decide)
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

    def _export_progress(self) -> None:
        """Per log partition: undecided records, the oldest one's age, the shard it waits for."""
        c, now_ms = self.settings.cluster, time.time() * 1000
        for p, join in self.owned.items():
            tp = TopicPartition(c.fingerprints, p)
            try:
                position: int | None = self.reader.position(tp)
            except Exception:  # not positioned yet after a seek
                position = None
            end = self.reader.highwater(tp)
            found = gathering.progress(join, end, position, self._is_stopped(p), now_ms)
            self.metrics.role_lag.labels("gather", str(p)).set(found.lag)
            self.metrics.oldest_undecided.labels(str(p)).set(found.oldest_age_s)
            if found.waiting_for is not None:
                self.metrics.waiting_for_shard.labels(str(p)).set(found.waiting_for)
            else:
                forget_series(self.metrics.waiting_for_shard, str(p))
        held = sum(j.held_bytes + self.payloads[p].held_bytes for p, j in self.owned.items())
        self.metrics.gather_buffered_bytes.set(held)


def _paused(consumer: KafkaConsumer, tp: TopicPartition, paused: bool) -> None:
    """Pause or resume `tp` if `consumer` is assigned it (else there is nothing to do)."""
    if tp not in consumer.assignment():
        return
    if paused:
        consumer.pause(tp)
    else:
        consumer.resume(tp)
