"""The gather following its assignment: which log partitions it holds, restored how.

`GatherFollow.follow` drops the log partitions no longer assigned (or lost) and restores
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

import functools
import logging
import threading
from collections.abc import Callable

from kafka import KafkaConsumer, TopicPartition

from neardup_stream.sharded.changes import FirstDecisions
from neardup_stream.sharded.gather import Gatherer
from neardup_stream.sharded.join import VoteJoin
from worker import clients
from worker.cluster import checkpoint
from worker.cluster.envelope import Envelope
from worker.cluster.gather_inputs import GatherInputs, paused
from worker.cluster.gather_state import LogPartition, RestoredLog
from worker.cluster.payloads import PayloadCheckpoint, PayloadJoin
from worker.metrics import Metrics
from worker.runtime import following
from worker.runtime.health import RoleHealth, Stop, forget_series
from worker.runtime.replay import ROLE_POLICY, each, replay
from worker.runtime.restore import PauseTopic, Restored, Restores
from worker.settings import Settings

log = logging.getLogger(__name__)
VOTES_AHEAD_BYTES = 16 << 20  # votes on records not read yet, per log partition


class GatherFollow:
    """The log partitions the gather holds in `inputs.parts` (see the module docstring)."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        stop: threading.Event,
        health: RoleHealth,
        inputs: GatherInputs,
    ) -> None:
        self.settings, self.metrics, self._stop = settings, metrics, stop
        self.health, self.inputs = health, inputs
        self._payloads_from: dict[int, PayloadCheckpoint] = {}  # of restores under way
        self._restores: Restores[RestoredLog] = Restores(
            "gather",
            stop,
            metrics,
            lambda: clients.make_reader(settings),
            PauseTopic(inputs.consumer, settings.cluster.votes),  # its votes: read once restored
        )

    def close(self) -> None:
        self._restores.close()

    def clear(self) -> None:
        """Every partition ran ahead of the commit: each is restored again."""
        self.inputs.parts.clear()

    def follow(self, assigned: set[int], dropped: set[int]) -> set[int]:
        """Drop partitions no longer assigned (or lost); restore gained ones in the
        background and take them on once restored. Returns the partitions taken on."""
        c, parts, reader = self.settings.cluster, self.inputs.parts, self.inputs.reader
        stopped = self._stopped_changelogs()
        gone = following.leaving(set(parts), self._restores.pending(), assigned, dropped, stopped)
        for p in gone.release:
            parts.pop(p, None)
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
        for p in following.to_restore(assigned, set(parts), pending, stopped):
            self._release(p)
            votes_tp = TopicPartition(c.votes, p)
            meta = checkpoint.read_metadata(self.inputs.consumer, votes_tp)
            start = checkpoint.decode(meta).get(p, 0)
            self._payloads_from[p] = checkpoint.decode_payloads(meta).get(p, PayloadCheckpoint(0))
            self._restores.start(p, functools.partial(self._restore, p, start))
        if gained or set(parts) != {tp.partition for tp in reader.assignment()}:
            logs = self.inputs.logs()
            reader.assign([TopicPartition(t, p) for p in sorted(parts) for t in logs])
            for p in gained:
                reader.seek(TopicPartition(c.fingerprints, p), parts[p].join.next)
                reader.seek(TopicPartition(c.payloads, p), parts[p].payloads.position)
        return gained

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
        c, consumer = self.settings.cluster, self.inputs.consumer
        log_tp, votes_tp = TopicPartition(c.fingerprints, p), TopicPartition(c.votes, p)
        payloads_tp = TopicPartition(c.payloads, p)
        starts = self.inputs.reader.beginning_offsets([log_tp, payloads_tp])
        log_start = starts.get(log_tp, 0)
        if self.health.lost(c.fingerprints, p, start, log_start):
            start = log_start
        resume = self._payloads_from.pop(p, PayloadCheckpoint(0))
        payloads_start = starts.get(payloads_tp, 0)
        if self.health.lost(c.payloads, p, resume.start, payloads_start):
            resume = PayloadCheckpoint(payloads_start)
        join: VoteJoin[Envelope] = VoteJoin(
            self.settings.dedup.home_shards, start, ahead_budget=VOTES_AHEAD_BYTES
        )
        self.inputs.parts[p] = LogPartition(join, gatherer, PayloadJoin(resume))
        committed = consumer.committed(votes_tp)
        if committed is None:
            consumer.seek_to_beginning(votes_tp)
        else:
            consumer.seek(votes_tp, committed)
        log.info("log partition %d: resuming at offset %d", p, start)

    def _stopped_changelogs(self) -> set[int]:
        topic = self.settings.cluster.gather_changelog
        return {s.partition for s in self.health.stopped() if s.topic == topic}

    def _release(self, p: int) -> None:
        """Forget a partition's stops and series (it left, or is rebuilt from scratch)."""
        c = self.settings.cluster
        for topic in (c.fingerprints, c.payloads, c.votes, c.gather_changelog):
            self.health.release(topic, p)
        paused(self.inputs.consumer, TopicPartition(c.votes, p), False)
        for gauge in (self.metrics.oldest_undecided, self.metrics.waiting_for_shard):
            forget_series(gauge, str(p))
        forget_series(self.metrics.role_lag, "gather", str(p))
