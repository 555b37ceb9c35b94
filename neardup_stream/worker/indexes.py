"""The indexes of the input partitions this worker owns, and their restores.

`PartitionIndexes` maps an owned input partition to its complete `Deduplicator`. After each
poll `follow()` brings it in line with the assignment (`runtime.follower`, the rule every
role follows): indexes of partitions gone are dropped and their restores cancelled;
partitions gained (or whose index was dropped after a failed batch) are restored in the
background, one restore per partition (paused until complete), and installed when complete. `ready` is
set once every owned partition has its index (the /healthz answer).

A restore that met another pipeline's records (`restore.OtherPipeline`) is final: the worker
logs that error once, drops every index, keeps every owned partition paused and stays
unready (it decides nothing) until it is stopped and given its own changelog.
"""

from __future__ import annotations

import functools
import logging
import threading

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from neardup_stream.deduplicator import Deduplicator
from neardup_stream.worker import changelog, clients, topics
from neardup_stream.worker.metrics import Metrics, index_gauges
from neardup_stream.worker.partitions import COMMITTED_TIMEOUT_MS, Assignment
from neardup_stream.worker.restore import OtherPipeline, restore_index
from neardup_stream.worker.runtime.follower import Follower
from neardup_stream.worker.runtime.replay import Unreadable
from neardup_stream.worker.runtime.restore import PauseTopic, RestoreFn, Restores
from neardup_stream.worker.settings import Settings

log = logging.getLogger(__name__)


class PartitionIndexes(dict[int, Deduplicator]):
    """Owned input partition -> its complete index; the `follower.Holder` of the worker."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        consumer: KafkaConsumer,
        assignment: Assignment,
        ready: threading.Event,
        stop: threading.Event,
        changelog_partitions: int,
    ) -> None:
        super().__init__()
        self.settings, self.metrics = settings, metrics
        self.consumer, self.assignment = consumer, assignment
        self.ready = ready
        self._changelog_partitions = changelog_partitions
        restores: Restores[Deduplicator] = Restores(
            "worker",
            stop,
            metrics,
            lambda: clients.make_reader(settings),
            PauseTopic(consumer, settings.topics.input),
        )
        self.follower = Follower(
            assignment, restores, self, stop, source=changelog.topic_of(settings)
        )
        self.refused: OtherPipeline | None = None  # set for good: this worker decides nothing

    def drop(self, partitions: set[int]) -> None:
        """Forget indexes that ran ahead of what Kafka committed; `follow` restores them."""
        for p in partitions & set(self):
            del self[p]

    def follow(self) -> None:
        """Drop indexes of partitions gone, pause and restore the ones gained."""
        followed = self.follower.follow()
        if followed is None:
            return  # revoked, not yet reassigned: what stays is not known yet
        if self.refused is not None:
            self.drop(set(self))
            self.follower.cancel_all()
            topic = self.settings.topics.input
            self.consumer.pause(*[TopicPartition(topic, p) for p in followed.assigned])
        restored = self.assignment.seen_assignment and not followed.assigned - set(self)
        if restored != self.ready.is_set():
            (self.ready.set if restored else self.ready.clear)()
            self.metrics.ready.set(int(restored))

    def close(self) -> None:
        """Stop the restores in progress; nothing of them is used."""
        self.follower.close()

    # the `follower.Holder` of the worker

    def held(self) -> set[int]:
        return set(self)

    def stopped(self) -> frozenset[int]:
        return frozenset()  # corrupt changelog records are skipped (`restore.restore_index`)

    def release(self, partition: int) -> None:
        self.pop(partition, None)

    def restore(self, partition: int) -> RestoreFn[Deduplicator] | None:
        """Restore `partition` from the changelog (grown first if the input grew)."""
        if self.refused is not None:
            return None
        s, topic = self.settings, self.settings.topics.input
        name = changelog.topic_of(s)
        if partition >= self._changelog_partitions:  # input partitions added at runtime
            wanted = max(self.assignment.owned() | {partition}) + 1
            try:
                topics.grow_changelog_for(s, wanted)
            except KafkaError as exc:  # transient: a later `follow` tries again
                self.follower.retry_later(s.worker.retry_backoff_max_s)
                log.warning("could not grow changelog %s yet: %r", name, exc)
                return None
            self._changelog_partitions = wanted
        # read_committed: waits until no transaction holds its offsets
        committed = self.consumer.committed(
            TopicPartition(topic, partition), timeout_ms=COMMITTED_TIMEOUT_MS
        )
        return functools.partial(
            restore_index,
            topic=name,
            partition=partition,
            config=s.dedup,
            pipeline=changelog.pipeline_of(s),
            metrics=self.metrics,
            snapshot_dir=s.worker.snapshot_dir,
            committed=committed,
        )

    def install(self, partition: int, state: Deduplicator) -> None:
        self[partition] = state
        index_gauges(self.metrics, self)

    def restore_stopped(self, partition: int, where: Unreadable) -> None:
        log.error("restoring partition %d stopped at %s; retrying", partition, where)
        self.follower.retry_later()

    def restore_failed(self, partition: int, error: BaseException | None) -> None:
        if isinstance(error, OtherPipeline):
            if self.refused is None:
                log.error("refusing the changelog: %s", error)
            self.refused = error
            return
        log.error("restoring partition %d failed; retrying", partition, exc_info=error)
