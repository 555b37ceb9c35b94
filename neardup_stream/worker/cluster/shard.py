"""The shard role: owning partition s of the shards topic means owning shard s.

It reads the fingerprint log in order; each owned shard votes on every record and stores its
home documents, all of them through one merged probe table (`ShardState`). In one
transaction per batch it publishes the votes (votes topic, partition = log partition, key =
log offset), its changes (shard changelog, partition s: what it stored, and its watermark)
and its position in the fingerprint log (the metadata of its committed offset on the shards
topic). The votes of all owned shards on one log record go in one votes record
(`votes.pack_records`), so a replica sends one per log record whatever the number of shards
it holds. A shard it gains is rebuilt from its changelog (its retention follows the dedup
window), on a restore thread while the other shards go on voting (`runtime.follower`; the
role is its `Holder`), and resumes at that position. A `runtime.role.Role`: the runner
publishes and applies the failure policy; when a transaction fails, every owned shard is
rebuilt that way, since their state ran ahead of what committed, and the next transactions
are smaller (halved per consecutive failure).

Nothing is skipped: a fingerprint record no shard can read stops its log partition there
(paused, no position moved past it), an unreadable changelog record stops its shard (it
never votes from a state with a hole); both through `RoleHealth`. A position older than the
log start is reported as lost. Lost partitions (membership expired) drop their state.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from kafka import OffsetAndMetadata, TopicPartition
from kafka.structs import ConsumerGroupMetadata

from neardup_stream.sharded.changes import ShardChange
from neardup_stream.sharded.fingerprints import FingerprintBatch
from neardup_stream.sharded.voter import ShardVoter
from neardup_stream.sharded.votes import pack_records
from neardup_stream.worker import clients
from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.shard_state import RestoredShard, ShardState, ShardVotes
from neardup_stream.worker.cluster.single_stage import SingleStage, moved, read_to_end, settled
from neardup_stream.worker.codec import OutMessage
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import Assignment, behind, generation_of
from neardup_stream.worker.rejections import Rejections
from neardup_stream.worker.runtime.broker_gone import group_poll
from neardup_stream.worker.runtime.follower import Follower
from neardup_stream.worker.runtime.health import RoleHealth, Stop, forget_series
from neardup_stream.worker.runtime.overlap import PendingCommit
from neardup_stream.worker.runtime.publisher import Transaction
from neardup_stream.worker.runtime.replay import Unreadable
from neardup_stream.worker.runtime.restore import RestoreFn, Restores, changelog_restore
from neardup_stream.worker.runtime.role import Limits, Output, role_settings
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)


class ShardRole:
    """Votes of the shards this replica owns (see the module docstring)."""

    name = "shard"
    max_bytes = 0  # not capped in bytes: a batch is `cluster.max_records` log records

    def __init__(self, settings: Settings, metrics: Metrics, stop: threading.Event) -> None:
        self.settings, self.metrics = settings, metrics
        self.role = role_settings(settings, "shards")
        self.consumer = clients.make_consumer(self.role)
        self.reader = clients.make_reader(self.role)
        self.health = RoleHealth("shard", metrics)
        self.rejections: Rejections | None = None  # votes answer for no input
        self.owned = ShardState(settings.dedup)  # one merged probe table for all owned shards
        self.stage: SingleStage | None = None  # set by the replica: parks for single stage
        self.parked_as: ConsumerGroupMetadata | None = None  # its group metadata when parked
        self.parkable = False  # every shard held, none restoring or stopped (`holds_all`)
        self.settled = False  # assigned, nothing restoring (`single_stage.settled`)
        self._warmed = False  # settled once since start (`runtime.role.Warming`)
        self._lags: dict[int, int] = {}  # log partition -> records behind its end, this round
        self.by_age = settings.dedup.max_age_seconds is not None  # watermarks matter
        self.votes_limit = settings.worker.output_max_message_bytes // 2
        c = settings.cluster
        self.max_records = c.max_records
        self.log_partitions = [TopicPartition(c.fingerprints, p) for p in range(c.log_partitions)]
        # settled before a revoke or a park (`runtime.overlap`)
        self.pending: PendingCommit[None] = PendingCommit()
        self.assignment = Assignment(
            c.shards, metrics, self.pending.before_revoke, generation=generation_of(self.consumer)
        )
        self._lost_upto: dict[int, int] = {}  # per log partition: losses reported below this
        restores: Restores[RestoredShard] = Restores(
            "shard", stop, metrics, lambda: clients.make_reader(self.role)
        )
        self.follower = Follower(
            self.assignment, restores, self, stop, restoring="shards", source=c.shard_changelog
        )

    def start(self) -> None:
        self.consumer.subscribe([self.settings.cluster.shards], listener=self.assignment)
        self.reader.assign(self.log_partitions)

    def poll(self, limits: Limits) -> dict[TopicPartition, list[Any]]:
        """Keep the membership, follow the assignment, then read the fingerprint log."""
        # No records on the shards topic: this poll only keeps the membership. It does not
        # wait while shards vote (the wait is the log reader's, which answers as soon as a
        # record commits), and waits the whole timeout while a rebalance is under way (or
        # nothing is owned): kafka-python completes a rejoin only within its polls. A rejoin
        # starts within a non-waiting poll (its revocation sets `rebalancing`), and
        # kafka-python 3.0.12 awaits the JoinGroup already sent on the next poll instead of
        # sending another. (0 ms polls throughout, without that switch, were seen never to
        # complete a rejoin.)
        wait = self.settings.worker.poll_timeout_ms
        self._lags = {}  # a round that reads no log waits for nothing (`waiting_for`)
        if self.stage is not None and self._single_stage(wait):
            return {}  # parked: the edge votes for the shards
        short = self.owned and not self.assignment.rebalancing
        group_poll(self.consumer, timeout_ms=0 if short else wait)
        followed = self.follower.follow()
        self.parkable = followed is not None and self._whole()
        self.settled = settled(self.assignment, self.follower.restores, followed is not None)
        self._warmed = self._warmed or self.settled
        if followed is None:  # a rebalance is under way: no shard votes until it ends
            return {}
        if followed.gained:
            self._seek_log()  # back to where the least advanced shard is
        self.metrics.role_partitions.labels("shard").set(len(self.owned))
        if not self.owned:
            return {}
        polled = self.reader.poll(timeout_ms=wait, max_records=limits.records)
        self._export_lag()
        return polled

    def step(self, polled: dict[TopicPartition, list[Any]], limits: Limits) -> Output[None] | None:
        """The owned shards' votes and changes, and each shard's log position."""
        if not polled:
            return None
        messages = self._vote(polled)
        return Output(Transaction(messages, [None] * len(messages), self.checkpoints()), None)

    def _single_stage(self, wait: int) -> bool:
        """Park when the edge asks and every shard is held and caught up; parked, only keep
        the membership, and say when the group moves. True: parked (`single_stage`)."""
        stage = self.stage
        assert stage is not None
        if not stage.parked("shard"):
            if stage.asking and self.pending.settle() and self._caught_up():
                self.parked_as = self.consumer.group_metadata()  # taken on its own thread
                stage.park("shard")
            return stage.parked("shard")
        group_poll(self.consumer, timeout_ms=wait)  # nothing is read on the shards topic
        self.metrics.role_partitions.labels("shard").set(len(self.owned))
        whole = self.assignment.owned() == set(range(self.settings.dedup.home_shards))
        if self.assignment.rebalancing or not whole or moved(self.consumer, self.parked_as):
            stage.moved("shard")
        return True

    def warmed(self) -> bool:
        """Its first assignment restored: ready (`runtime.role.Warming`)."""
        return self._warmed

    def holds_all(self) -> bool:
        """Whether it could park: every shard held, none restoring, no log partition stopped
        (set on its own thread each round; the edge reads it as a hint, checked again)."""
        return self.parkable

    def _whole(self) -> bool:
        """Every shard held, none restoring, no log partition stopped."""
        stopped = any(self.health.is_stopped(tp.topic, tp.partition) for tp in self.log_partitions)
        whole = len(self.owned) == self.settings.dedup.home_shards
        return whole and not stopped and not self.follower.restores.pending()

    def _caught_up(self) -> bool:
        """`_whole`, its group settled on every shard, and the log read up to its last stable
        offset (each record read was voted on and committed: the caller settled the commit
        in flight, if any)."""
        every = set(range(self.settings.dedup.home_shards))
        if not self._whole() or self.assignment.rebalancing or self.assignment.owned() != every:
            return False
        return read_to_end(self.reader, self.log_partitions)

    def follow_single_stage(self) -> None:
        """After single-stage transactions: read the log on past what they decided."""
        for tp in self.log_partitions:
            self.reader.seek(tp, max(self.reader.position(tp), self.owned.resume_at(tp.partition)))

    def log_position(self, partition: int) -> int:
        """Where its log reader stands on log `partition` (`parked.ParkedRole`)."""
        return int(
            self.reader.position(TopicPartition(self.settings.cluster.fingerprints, partition))
        )

    def vote_in_place(self, partition: int, offset: int, fb: FingerprintBatch) -> list[ShardVotes]:
        """The single-stage vote on a log record not read from the log (`parked.ParkedShard`)."""
        return self.owned.vote(partition, offset, fb)

    def checkpoints(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """Each owned shard's offset on the shards topic, its checkpoint in the metadata."""
        shards = self.settings.cluster.shards
        return {
            TopicPartition(shards, s): OffsetAndMetadata(
                0, checkpoint.encode(self.owned.next(s)), -1
            )
            for s in self.owned
        }

    def committed(self, carried: None, at: float) -> None:
        m = self.metrics
        m.index_documents.set(self.owned.documents())
        m.index_entries.set(self.owned.index_entries())
        m.index_bytes.set(self.owned.index_bytes())
        m.domain_engines.set(self.owned.domain_engines())

    def rebuild(self) -> None:
        """Every owned shard ran ahead of the commit: restored again from its changelog."""
        log.info("rebuilding shards %s", sorted(self.owned))
        self.owned.clear()

    def close(self) -> None:
        self.follower.close()
        self.reader.close()
        self.consumer.close()

    # the `follower.Holder` of the shard role: its shards, restored from their changelogs

    def held(self) -> set[int]:
        return set(self.owned)

    def stopped(self) -> set[int]:
        """Shards stopped at an unreadable shard-changelog record."""
        return self.health.stopped_in(self.settings.cluster.shard_changelog)

    def release(self, s: int) -> None:
        self.owned.drop(s)
        self.health.release(self.settings.cluster.shard_changelog, s)
        forget_series(self.metrics.role_lag, "shard", str(s))

    def restore(self, s: int) -> RestoreFn[RestoredShard]:
        """Shard `s` rebuilt from its changelog; it resumes at its committed log position."""
        start = checkpoint.read(self.consumer, TopicPartition(self.settings.cluster.shards, s))

        return changelog_restore(
            TopicPartition(self.settings.cluster.shard_changelog, s),
            lambda: ShardVoter(self.settings.dedup, s),
            lambda voter, data: voter.apply(ShardChange.unpack(data)),
            lambda voter: RestoredShard(voter, start),
            self.metrics,
        )

    def install(self, s: int, shard: RestoredShard) -> None:
        log.info("shard %d: %d documents, resuming at %s", s, len(shard.voter), shard.next)
        self.owned.add(shard)

    def restore_stopped(self, s: int, where: Unreadable) -> None:
        self.health.stop(Stop(where.topic, s, where.offset, where.reason))

    def restore_failed(self, s: int, error: BaseException | None) -> None:
        log.error("restoring shard %d failed; retrying", s, exc_info=error)

    def _seek_log(self) -> None:
        """Back to where the least advanced shard is, reporting records deleted before it."""
        if not self.owned:
            return
        starts = self.reader.beginning_offsets(self.log_partitions)
        for tp in self.log_partitions:
            # A stopped log partition is read again: a new shard meets the record too.
            self.health.release(tp.topic, tp.partition)
            self.reader.resume(tp)
            at = self.owned.resume_at(tp.partition)
            log_start = starts.get(tp, 0)
            if at < log_start:  # each deleted offset is reported once, whichever shard met it
                reported = self._lost_upto.get(tp.partition, 0)
                self.health.lost(tp.topic, tp.partition, max(at, reported), log_start)
                self._lost_upto[tp.partition] = max(reported, log_start)
                self.owned.skip_to(tp.partition, log_start)
            self.reader.seek(tp, max(at, log_start))

    def _vote(self, polled: dict) -> list[OutMessage]:
        c, config_id = self.settings.cluster, self.settings.dedup.fingerprint_id
        messages: list[OutMessage] = []
        for tp in sorted(polled, key=lambda t: t.partition):
            for rec in polled[tp]:
                if self.health.is_stopped(tp.topic, tp.partition):
                    break
                try:
                    env = Envelope.unpack(
                        rec.value, config_id, self.settings.topics.input, rec.offset, tp.partition
                    )
                except ValueError as exc:  # the gather stops there too
                    held = [TopicPartition(self.settings.cluster.shards, s) for s in self.owned]
                    checkpoint.check_overtaken(self.consumer, held, rec)
                    self.reader.pause(tp)
                    self.health.stop(Stop(tp.topic, tp.partition, rec.offset, str(exc)))
                    break
                key = str(rec.offset).encode()
                voted = self.owned.vote(tp.partition, rec.offset, env.fingerprints)
                messages += self.changelog(rec.offset, voted)
                # the votes of every held shard in one record (more only past the limit)
                for value in pack_records([v.votes for v in voted], self.votes_limit):
                    messages.append(OutMessage(c.votes, key, value, partition=tp.partition))
        return messages

    def changelog(self, offset: int, voted: list[ShardVotes]) -> list[OutMessage]:
        """The shard changelog records of the shards' votes on log record `offset`."""
        key, topic = str(offset).encode(), self.settings.cluster.shard_changelog
        limit = self.settings.worker.output_max_message_bytes // 2
        return [
            OutMessage(topic, key, part, partition=v.shard)
            for v in voted
            for ch in v.changes
            if ch.records or self.by_age  # else an empty change changes nothing
            for part in ch.pack_parts(limit)
        ]

    def waiting_for(self) -> str | None:
        """`runtime.stall.Waits`: fingerprint-log records behind the end of a partition its
        reader read this round (None while parked in single stage, rebalancing or owning no
        shard: then it reads no log)."""
        return behind(self.settings.cluster.fingerprints, self._lags)

    def _export_lag(self) -> None:
        """Per owned shard: fingerprint-log records it has not voted on, over all partitions.

        The reader's position counts past transaction markers (a caught-up shard shows 0);
        on a stopped log partition it ran ahead, so the shard's own position counts there.
        """
        behind = dict.fromkeys(self.owned, 0)
        for tp in self.log_partitions:
            end = self.reader.highwater(tp)
            if end is None:
                continue
            try:
                at = self.reader.position(tp)
            except Exception:  # not positioned yet after a seek
                continue
            stopped = self.health.is_stopped(tp.topic, tp.partition)
            if not stopped:  # (a stopped partition is said by its stop)
                self._lags[tp.partition] = max(0, end - at)
            for s in self.owned:
                mine = self.owned.next(s).get(tp.partition, 0)
                behind[s] += max(0, end - (mine if stopped or mine < at else at))
        for s, n in behind.items():
            self.metrics.role_lag.labels("shard", str(s)).set(n)
