"""The gather following its assignment: which log partitions it holds, restored how.

`GatherFollow` is the gather's `runtime.follower.Holder`: `follow` drops the log partitions no longer assigned (or lost) and restores
the ones gained: each from its gather changelog (first decisions; retention follows the
dedup window) on a restore thread, while the other partitions go on, and takes it on at its
checkpoint (the metadata of the committed offset of votes partition p: the next log offset
to decide and where to resume reading payloads). A checkpoint older than the log start is
reported as lost (a payload checkpoint older than the payloads' log start too). A partition
stopped at its changelog is not restored again while assigned; one stopped in the
fingerprint log or votes keeps its state but reads nothing more. `clear` lets every
partition go, so each is restored again (after a failed transaction).
"""

from __future__ import annotations

import logging
import threading

from kafka import TopicPartition

from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import VoteJoin
from neardup_stream.worker import clients
from neardup_stream.worker.cluster import checkpoint
from neardup_stream.worker.cluster.gather.reading import GatherInputs, paused
from neardup_stream.worker.cluster.gather.state import LogPartition, RestoredLog
from neardup_stream.worker.cluster.log_record import Envelope
from neardup_stream.worker.cluster.payloads import PayloadCheckpoint, PayloadJoin
from neardup_stream.worker.metrics import Metrics
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS, Assignment
from neardup_stream.worker.runtime.follower import Follower
from neardup_stream.worker.runtime.health import RoleHealth, Stop, forget_series
from neardup_stream.worker.runtime.replay import Unreadable
from neardup_stream.worker.runtime.restore import PauseTopic, RestoreFn, Restores, changelog_restore
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)


class GatherFollow:
    """The log partitions the gather holds in `inputs.parts` (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        health: RoleHealth,
        inputs: GatherInputs,
        assignment: Assignment,
    ) -> None:
        self.settings, self.metrics = settings, metrics
        self.health, self.inputs = health, inputs
        self._payloads_from: dict[int, PayloadCheckpoint] = {}  # of restores under way
        restores: Restores[RestoredLog] = Restores(
            "gather",
            stop,
            metrics,
            lambda: clients.make_reader(inputs.role),
            PauseTopic(inputs.consumer, settings.cluster.votes),  # its votes: read once restored
        )
        self.follower = Follower(
            assignment,
            restores,
            self,
            stop,
            restoring="log partitions",
            source=settings.cluster.gather_changelog,
        )

    def close(self) -> None:
        self.follower.close()

    def clear(self) -> None:
        """Every partition ran ahead of the commit: each is restored again."""
        self.inputs.parts.clear()

    def follow(self) -> set[int] | None:
        """Drop partitions no longer assigned (or lost); restore gained ones in the
        background and take them on once restored. Returns the partitions taken on; None
        while a rebalance is under way (nothing is decided until it ends)."""
        followed = self.follower.follow()
        if followed is None:
            return None
        gained = followed.gained
        c, parts, reader = self.settings.cluster, self.inputs.parts, self.inputs.reader
        if gained or set(parts) != {tp.partition for tp in reader.assignment()}:
            logs = self.inputs.logs()
            reader.assign([TopicPartition(t, p) for p in sorted(parts) for t in logs])
            for p in gained:
                reader.seek(TopicPartition(c.fingerprints, p), parts[p].join.next)
                reader.seek(TopicPartition(c.payloads, p), parts[p].payloads.position)
        return gained

    # the `follower.Holder` of the gather: its log partitions, restored from their changelogs

    def held(self) -> set[int]:
        return set(self.inputs.parts)

    def stopped(self) -> set[int]:
        """Log partitions stopped at an unreadable gather-changelog record."""
        return self.health.stopped_in(self.settings.cluster.gather_changelog)

    def release(self, p: int) -> None:
        self.inputs.parts.pop(p, None)
        self._release(p)

    def restore(self, p: int) -> RestoreFn[RestoredLog]:
        """Log partition `p`'s first decisions from its changelog; it resumes at the
        checkpoint in the metadata of its committed votes offset."""
        self._release(p)
        meta = checkpoint.read_metadata(
            self.inputs.consumer, TopicPartition(self.settings.cluster.votes, p)
        )
        start = checkpoint.decode(meta).get(p, 0)
        self._payloads_from[p] = checkpoint.decode_payloads(meta).get(p, PayloadCheckpoint(0))

        return changelog_restore(
            TopicPartition(self.settings.cluster.gather_changelog, p),
            lambda: Gatherer(self.settings.dedup),
            lambda gatherer, data: gatherer.apply(FirstDecisions.unpack(data)),
            lambda gatherer: RestoredLog(gatherer.swept(), start),
            self.metrics,
        )

    def install(self, p: int, restored: RestoredLog) -> None:
        self._take_on(p, restored.gatherer, restored.start)

    def restore_stopped(self, p: int, where: Unreadable) -> None:
        self.health.stop(Stop(where.topic, p, where.offset, where.reason))

    def restore_failed(self, p: int, error: BaseException | None) -> None:
        log.error("restoring log partition %d failed; retrying", p, exc_info=error)

    def _take_on(self, p: int, gatherer: Gatherer, start: int) -> None:
        """A restored partition: decide from its checkpoint (or the log start, if later)."""
        c, consumer = self.settings.cluster, self.inputs.consumer
        log_tp, votes_tp = TopicPartition(c.fingerprints, p), TopicPartition(c.votes, p)
        payloads_tp = TopicPartition(c.payloads, p)
        # the broker's answers first: one that fails changes nothing (no loss reported twice)
        starts = self.inputs.reader.beginning_offsets([log_tp, payloads_tp])
        committed = consumer.committed(votes_tp, timeout_ms=COMMITTED_TIMEOUT_MS)
        log_start = starts.get(log_tp, 0)
        if self.health.lost(c.fingerprints, p, start, log_start):
            start = log_start
        resume = self._payloads_from.pop(p, PayloadCheckpoint(0))
        payloads_start = starts.get(payloads_tp, 0)
        if self.health.lost(c.payloads, p, resume.start, payloads_start):
            resume = PayloadCheckpoint(payloads_start)
        ahead = self.settings.cluster.gather_buffer_bytes // 4  # votes on records not read yet
        join: VoteJoin[Envelope] = VoteJoin(
            self.settings.dedup.home_shards, start, ahead_budget=ahead
        )
        self.inputs.parts[p] = LogPartition(join, gatherer, PayloadJoin(resume))
        if committed is None:
            consumer.seek_to_beginning(votes_tp)
        else:
            consumer.seek(votes_tp, committed)
        log.info("log partition %d: resuming at offset %d", p, start)

    def _release(self, p: int) -> None:
        """Forget a partition's stops and series (it left, or is rebuilt from scratch)."""
        c = self.settings.cluster
        for topic in (c.fingerprints, c.payloads, c.votes, c.gather_changelog):
            self.health.release(topic, p)
        paused(self.inputs.consumer, TopicPartition(c.votes, p), False)
        for gauge in (self.metrics.oldest_undecided, self.metrics.waiting_for_shard):
            forget_series(gauge, str(p))
        forget_series(self.metrics.role_lag, "gather", str(p))
